//! Client and server capabilities.
//!
//! On 2026-07-28 the client declares its capabilities on every request (in `_meta`) and the
//! server returns its own from `server/discover`; on 2025-11-25 both are exchanged once by
//! `initialize`. Unknown capability sub-keys are kept in `extra`.

use crate::prelude::*;

use alloc::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// What a client can do for a server.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<BTreeMap<String, JsonObject>>,
    /// The client can list its roots (deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client can sample an LLM for the server (deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// The client can elicit input from its user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Task-augmented requests (2025-11-25 only; the shape is kept as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<JsonObject>,
    /// MCP extensions by identifier (2026-07-28), each with its settings object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, JsonObject>>,
    /// Capabilities this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::de::deserialize_with_extra!(ClientCapabilities, "client capabilities", { experimental: "experimental" => optional, roots: "roots" => optional, sampling: "sampling" => optional, elicitation: "elicitation" => optional, tasks: "tasks" => optional, extensions: "extensions" => optional });

/// `roots` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RootsCapability {
    /// The client notifies when its roots change (2025-11-25 only).
    #[serde(
        rename = "listChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub list_changed: Option<bool>,
    /// Sub-keys this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::de::deserialize_with_extra!(RootsCapability, "the roots capability", { list_changed: "listChanged" => optional });

/// `sampling` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SamplingCapability {
    /// The client supports `includeContext` other than `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// The client supports `tools` and `toolChoice` in sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Sub-keys this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::de::deserialize_with_extra!(SamplingCapability, "the sampling capability", { context: "context" => optional, tools: "tools" => optional });

/// `elicitation` capability. `{}` alone means form mode only.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ElicitationCapability {
    /// Form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Sub-keys this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::de::deserialize_with_extra!(ElicitationCapability, "the elicitation capability", { form: "form" => optional, url: "url" => optional });

impl ElicitationCapability {
    /// Whether form mode is declared: `form` present, or neither mode named (`{}`).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || (self.form.is_none() && self.url.is_none())
    }

    /// Whether URL mode is declared.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

impl ClientCapabilities {
    /// Whether form-mode elicitation is declared.
    pub fn supports_form_elicitation(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_form)
    }

    /// Whether URL-mode elicitation is declared.
    pub fn supports_url_elicitation(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_url)
    }

    /// Whether sampling is declared.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether sampling with `tools`/`toolChoice` is declared.
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Whether `roots/list` is declared.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }

    /// Whether the extension `id` is declared.
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }

    /// Declares the extension `id` with an empty settings object (e.g.
    /// [`crate::ext::tasks::EXTENSION_ID`]).
    pub fn with_extension(mut self, id: impl Into<String>) -> Self {
        self.extensions
            .get_or_insert_with(Default::default)
            .insert(id.into(), JsonObject::new());
        self
    }

    /// Capabilities declaring form-mode elicitation only: `{"elicitation":{"form":{}}}`.
    pub fn form_elicitation() -> Self {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Capabilities declaring URL-mode elicitation only: `{"elicitation":{"url":{}}}`.
    pub fn url_elicitation() -> Self {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                url: Some(JsonObject::new()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Capabilities declaring sampling: `{"sampling":{}}`, with `tools` when `with_tools`.
    pub fn sampling(with_tools: bool) -> Self {
        ClientCapabilities {
            sampling: Some(SamplingCapability {
                tools: with_tools.then(JsonObject::new),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Capabilities declaring roots: `{"roots":{}}`.
    pub fn roots() -> Self {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            ..Default::default()
        }
    }
}

/// What a server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<BTreeMap<String, JsonObject>>,
    /// The server sends log messages (deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// The server answers `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// The server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// The server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Task-augmented requests (2025-11-25 only; the shape is kept as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<JsonObject>,
    /// MCP extensions by identifier (2026-07-28), each with its settings object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, JsonObject>>,
    /// Capabilities this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `prompts` and `tools` capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListChangedCapability {
    /// The server notifies when the list changes.
    #[serde(
        rename = "listChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub list_changed: Option<bool>,
    /// Sub-keys this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `resources` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourcesCapability {
    /// The server supports subscriptions to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server notifies when the resource list changes.
    #[serde(
        rename = "listChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub list_changed: Option<bool>,
    /// Sub-keys this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_elicitation_object_means_form_only() {
        let caps: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
        assert!(caps.supports_form_elicitation());
        assert!(!caps.supports_url_elicitation());
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).unwrap();
        assert!(!caps.supports_form_elicitation());
        assert!(caps.supports_url_elicitation());
    }

    #[test]
    fn unknown_capability_sub_keys_survive() {
        let input = json!({"roots": {"listChanged": true, "x-vendor": 1}, "future": {"a": [1]}});
        let caps: ClientCapabilities = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(serde_json::to_value(&caps).unwrap(), input);
    }

    #[test]
    fn required_capability_objects_have_the_spec_shape() {
        assert_eq!(
            serde_json::to_value(ClientCapabilities::form_elicitation()).unwrap(),
            json!({"elicitation": {"form": {}}})
        );
        assert_eq!(
            serde_json::to_value(ClientCapabilities::sampling(true)).unwrap(),
            json!({"sampling": {"tools": {}}})
        );
        assert_eq!(
            serde_json::to_value(ClientCapabilities::roots()).unwrap(),
            json!({"roots": {}})
        );
    }
}
