//! Extensions on the client (SEP-2133): declaring one ([`ClientBuilder::extension`]), reading
//! what the server advertised ([`Client::server_extension`]); and MCP Apps
//! (`io.modelcontextprotocol/ui`, SEP-1865) on top: [`ClientBuilder::apps`] declares the
//! extension, [`Client::tool_app`] reads a tool's link and [`Client::read_app`] fetches the app.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_types::JsonObject;
use mcp_types::ext::apps::{self as wire, UiResourceMeta, UiToolMeta};
use mcp_types::tools::Tool;

use super::{Client, ClientBuilder};
use crate::error::ClientError;

/// An app a server serves, as fetched by [`Client::read_app`].
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    /// The app's `ui://` URI.
    pub uri: String,
    /// The HTML document.
    pub html: String,
    /// How the host should render it: CSP origins, permissions, border (its `_meta.ui`).
    pub meta: UiResourceMeta,
}

impl ClientBuilder {
    /// Declares extension `id` with `settings`: in every 2026-07-28 request's
    /// `clientCapabilities.extensions` and in the 2025-11-25 `initialize`. A server treats the
    /// client as one without the extension unless it is declared.
    pub fn extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.declared
            .extensions
            .get_or_insert_with(Default::default)
            .insert(id.into(), settings);
        self
    }

    /// Declares MCP Apps (default off): `{"mimeTypes": ["text/html;profile=mcp-app"]}` under
    /// `io.modelcontextprotocol/ui`. A server then shows the client its apps and the tools'
    /// links to them.
    pub fn apps(self, enabled: bool) -> Self {
        if enabled {
            self.extension(wire::EXTENSION_ID, wire::client_settings())
        } else {
            let mut this = self;
            if let Some(extensions) = &mut this.declared.extensions {
                extensions.remove(wire::EXTENSION_ID);
            }
            this
        }
    }
}

fn not_an_app(uri: &str, reason: impl Into<String>) -> ClientError {
    ClientError::NotAnApp {
        uri: uri.to_owned(),
        reason: reason.into(),
    }
}

impl Client {
    /// The settings the server advertised for extension `id` (in `server/discover` or the
    /// `initialize` result), or `None` when it did not advertise it.
    pub fn server_extension(&self, id: &str) -> Option<JsonObject> {
        self.negotiated()?.capabilities?.extensions?.remove(id)
    }

    /// Whether this client declares extension `id`.
    pub fn declares_extension(&self, id: &str) -> bool {
        self.capabilities().supports_extension(id)
    }

    /// The app `tool` is linked to (its `_meta.ui`), if it has a `ui://` one.
    pub fn tool_app(tool: &Tool) -> Option<UiToolMeta> {
        UiToolMeta::of(tool.meta.as_ref()).filter(|ui| {
            ui.resource_uri
                .as_deref()
                .is_some_and(|u| u.starts_with(wire::SCHEME))
        })
    }

    /// Reads the app at `uri` with `resources/read` and checks it is one: a `ui://` URI,
    /// contents for that URI with the MIME type `text/html;profile=mcp-app`, text or a base64
    /// blob of UTF-8. Anything else is refused with [`ClientError::NotAnApp`].
    pub async fn read_app(&self, uri: &str) -> Result<App, ClientError> {
        if !uri.starts_with(wire::SCHEME) {
            return Err(not_an_app(uri, "an app's URI starts with ui://"));
        }
        let result = self.read_resource(uri).await?;
        let contents = result
            .contents
            .iter()
            .find(|c| c.uri == uri)
            .ok_or_else(|| not_an_app(uri, "resources/read returned no contents for this URI"))?;
        if contents.mime_type.as_deref() != Some(wire::MIME_TYPE) {
            return Err(not_an_app(
                uri,
                format!(
                    "the MIME type is {}, not {}",
                    contents.mime_type.as_deref().unwrap_or("absent"),
                    wire::MIME_TYPE
                ),
            ));
        }
        let html = match (&contents.text, &contents.blob) {
            (Some(text), _) => text.clone(),
            (None, Some(blob)) => {
                let bytes = STANDARD
                    .decode(blob)
                    .map_err(|e| not_an_app(uri, format!("the blob is not base64: {e}")))?;
                String::from_utf8(bytes).map_err(|_| not_an_app(uri, "the HTML is not UTF-8"))?
            }
            (None, None) => return Err(not_an_app(uri, "the contents have neither text nor blob")),
        };
        let meta = match contents
            .meta
            .as_ref()
            .and_then(|m| m.extra.get(wire::META_KEY))
        {
            None => UiResourceMeta::default(),
            Some(ui) => serde_json::from_value(ui.clone())
                .map_err(|e| not_an_app(uri, format!("its _meta.ui is malformed: {e}")))?,
        };
        Ok(App {
            uri: uri.to_owned(),
            html,
            meta,
        })
    }
}
