//! Tools: `tools/list` and `tools/call`.

use crate::prelude::*;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::common::CacheScope;
use crate::content::ContentBlock;
use crate::meta::Meta;
use crate::mrtr::{InputResponses, ResultType};
use crate::tasks::TaskMetadata;

pub use crate::tool_definition::{Tool, ToolAnnotations, ToolExecution};

/// The result of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListToolsResult {
    /// The tools of this page, in a deterministic order.
    pub tools: Vec<Tool>,
    /// The cursor of the next page; absent on the last one.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
    /// Freshness in milliseconds (2026-07-28).
    #[serde(rename = "ttlMs", default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (2026-07-28).
    #[serde(
        rename = "cacheScope",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_scope: Option<CacheScope>,
    /// `resultType` (2026-07-28).
    #[serde(
        rename = "resultType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub result_type: Option<ResultType>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Answers to the previous round's `inputRequests`, under the same keys (2026-07-28).
    #[serde(
        rename = "inputResponses",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, echoed byte for byte (2026-07-28). A string on the
    /// wire; any other JSON type is kept as sent so the sealing boundary can reject it with the
    /// one fixed error. `null` counts as absent.
    #[serde(
        rename = "requestState",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub request_state: Option<serde_json::Value>,
    /// Task augmentation (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `_meta`: the per-request envelope on 2026-07-28.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::de::deserialize_with_extra!(CallToolRequestParams, "the params of tools/call", { name: "name" => required, arguments: "arguments" => optional, input_responses: "inputResponses" => optional, request_state: "requestState" => optional, task: "task" => optional, meta: "_meta" => optional });

/// The complete result of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<ContentBlock>,
    /// Structured content, conforming to the tool's `outputSchema` when it has one.
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool failed: execution and input-validation failures are results, not
    /// protocol errors.
    #[serde(rename = "isError", default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `resultType` (2026-07-28).
    #[serde(
        rename = "resultType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub result_type: Option<ResultType>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            ..Default::default()
        }
    }

    /// A failed result (`isError: true`) with one text block.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            is_error: Some(true),
            ..Default::default()
        }
    }
}
