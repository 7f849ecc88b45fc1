//! A tool's definition: what `tools/list` offers and what a sampling request may hand the
//! model. [`crate::tools`] re-exports it; it lives apart so that sampling, which the
//! multi-round-trip types of `tools/call` carry, does not import the module that imports them.

use crate::prelude::*;

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::content::Icon;
use crate::meta::Meta;

/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The programmatic name, unique within the server.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema (object root) for the arguments.
    #[serde(rename = "inputSchema")]
    pub input_schema: JsonObject,
    /// A JSON Schema for `structuredContent`.
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Task support (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Hints about a tool's behaviour. Untrusted unless the server is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(
        rename = "readOnlyHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(
        rename = "destructiveHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub destructive_hint: Option<bool>,
    /// Calling the tool twice with the same arguments has no extra effect.
    #[serde(
        rename = "idempotentHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(
        rename = "openWorldHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub open_world_hint: Option<bool>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// How a tool runs with tasks (2025-11-25 only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolExecution {
    /// `forbidden`, `optional` or `required`.
    #[serde(
        rename = "taskSupport",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub task_support: Option<String>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}
