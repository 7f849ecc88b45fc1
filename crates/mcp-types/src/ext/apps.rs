//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): a tool that brings its own interface.
//!
//! The server offers an HTML app as a resource under `ui://…` with the MIME type
//! [`MIME_TYPE`], and links tools to it with `_meta.ui` ([`UiToolMeta`]); the host renders the
//! app in a sandboxed frame under the CSP the resource's `_meta.ui` ([`UiResourceMeta`])
//! declares, and the app talks to the host over `postMessage` JSON-RPC. The host declares the
//! extension with the MIME types it renders: `{"mimeTypes": ["text/html;profile=mcp-app"]}`
//! ([`client_settings`]).

use crate::prelude::*;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;

/// The extension identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an HTML app.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The URI scheme of app resources.
pub const SCHEME: &str = "ui://";
/// The `_meta` key of a tool's link and of a resource's rendering settings.
pub const META_KEY: &str = "ui";
/// The flat `_meta` key of a tool's link that hosts written before `_meta.ui` read
/// (`_meta["ui/resourceUri"]`, the app's URI as a string). A server writes both.
pub const LEGACY_RESOURCE_URI_KEY: &str = "ui/resourceUri";
/// The client settings key listing the MIME types the host renders.
pub const MIME_TYPES: &str = "mimeTypes";

/// The settings a host declares: it renders [`MIME_TYPE`].
pub fn client_settings() -> JsonObject {
    let mut settings = JsonObject::new();
    settings.insert(MIME_TYPES.to_owned(), Value::from(vec![MIME_TYPE]));
    settings
}

/// Whether a client's declared settings name [`MIME_TYPE`] among its `mimeTypes`.
pub fn renders_html(settings: &JsonObject) -> bool {
    settings
        .get(MIME_TYPES)
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// Who may call a linked tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The model (the agent) sees and calls it.
    Model,
    /// The app calls it through the host, from this server's connection only.
    App,
}

/// A tool's `_meta.ui`: the app that renders its results and who may call it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UiToolMeta {
    /// The `ui://` resource of the app.
    #[serde(
        rename = "resourceUri",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_uri: Option<String>,
    /// Who may call the tool (absent: `["model", "app"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<Visibility>>,
    /// Fields this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UiToolMeta {
    /// Reads a tool's `_meta.ui`, if it has one of the right shape; a tool linked only by the
    /// older flat `_meta["ui/resourceUri"]` ([`LEGACY_RESOURCE_URI_KEY`]) reads as the same
    /// link.
    pub fn of(meta: Option<&crate::meta::Meta>) -> Option<Self> {
        let meta = meta?;
        let ui: Option<Self> = meta
            .extra
            .get(META_KEY)
            .and_then(|ui| serde_json::from_value(ui.clone()).ok());
        let flat = meta
            .extra
            .get(LEGACY_RESOURCE_URI_KEY)
            .and_then(Value::as_str);
        match (ui, flat) {
            (Some(ui), _) if ui.resource_uri.is_some() => Some(ui),
            (ui, Some(uri)) => Some(Self {
                resource_uri: Some(uri.to_owned()),
                ..ui.unwrap_or_default()
            }),
            (ui, None) => ui,
        }
    }

    /// Whether the model may see and call the tool (the default when `visibility` is absent).
    pub fn model_visible(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.contains(&Visibility::Model))
    }
}

/// The origins an app may reach, mapped by the host onto its Content Security Policy. Each
/// list absent or empty allows none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiCsp {
    /// Origins for `fetch`, XHR and WebSocket (`connect-src`).
    #[serde(
        rename = "connectDomains",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub connect_domains: Option<Vec<String>>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(
        rename = "resourceDomains",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_domains: Option<Vec<String>>,
    /// Origins for nested frames (`frame-src`).
    #[serde(
        rename = "frameDomains",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub frame_domains: Option<Vec<String>>,
    /// Allowed base URIs (`base-uri`).
    #[serde(
        rename = "baseUriDomains",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub base_uri_domains: Option<Vec<String>>,
}

/// The browser permissions an app asks for; a host may grant them (the frame's `allow`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UiPermissions {
    /// The camera.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<JsonObject>,
    /// The microphone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<JsonObject>,
    /// The location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<JsonObject>,
    /// Writing to the clipboard.
    #[serde(
        rename = "clipboardWrite",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub clipboard_write: Option<JsonObject>,
}

/// An app resource's `_meta.ui`: how the host renders it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UiResourceMeta {
    /// The origins the app may reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiCsp>,
    /// The browser permissions it asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiPermissions>,
    /// A dedicated sandbox origin (its format is the host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host should draw a border and background around it.
    #[serde(
        rename = "prefersBorder",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub prefers_border: Option<bool>,
    /// Fields this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UiResourceMeta {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == UiResourceMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_meta_reads_the_link_and_the_visibility() {
        let meta: crate::meta::Meta = serde_json::from_value(
            json!({"ui": {"resourceUri": "ui://a/b", "visibility": ["app"]}}),
        )
        .unwrap();
        let ui = UiToolMeta::of(Some(&meta)).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://a/b"));
        assert!(!ui.model_visible());
        assert!(UiToolMeta::default().model_visible());
        assert_eq!(
            serde_json::to_value(&ui).unwrap(),
            json!({"resourceUri": "ui://a/b", "visibility": ["app"]})
        );
    }

    #[test]
    fn a_link_under_the_older_flat_key_reads_as_the_same_link() {
        let read = |meta: serde_json::Value| {
            let meta: crate::meta::Meta = serde_json::from_value(meta).unwrap();
            UiToolMeta::of(Some(&meta))
        };
        let flat = read(json!({"ui/resourceUri": "ui://a/b"})).unwrap();
        assert_eq!(flat.resource_uri.as_deref(), Some("ui://a/b"));
        assert!(flat.model_visible());
        // The visibility of `_meta.ui` stays when only the flat key names the app.
        let both = read(json!({"ui/resourceUri": "ui://a/b", "ui": {"visibility": ["app"]}}));
        assert_eq!(
            both.as_ref().unwrap().resource_uri.as_deref(),
            Some("ui://a/b")
        );
        assert!(!both.unwrap().model_visible());
        // `_meta.ui.resourceUri` wins when the two disagree.
        let newer =
            read(json!({"ui/resourceUri": "ui://old/x", "ui": {"resourceUri": "ui://a/b"}}));
        assert_eq!(newer.unwrap().resource_uri.as_deref(), Some("ui://a/b"));
        assert_eq!(read(json!({"ui/resourceUri": 7})), None);
    }

    #[test]
    fn resource_meta_writes_the_spec_names() {
        let meta = UiResourceMeta {
            csp: Some(UiCsp {
                connect_domains: Some(vec!["https://api.example.com".into()]),
                ..Default::default()
            }),
            permissions: Some(UiPermissions {
                clipboard_write: Some(JsonObject::new()),
                ..Default::default()
            }),
            prefers_border: Some(true),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"csp": {"connectDomains": ["https://api.example.com"]}, "permissions": {"clipboardWrite": {}}, "prefersBorder": true})
        );
    }

    #[test]
    fn a_host_renders_html_when_it_lists_the_mime_type() {
        assert!(renders_html(&client_settings()));
        assert!(!renders_html(&JsonObject::new()));
        let other = json!({"mimeTypes": ["text/html"]});
        assert!(!renders_html(other.as_object().unwrap()));
    }
}
