//! Core tasks of 2025-11-25 (experimental; moved to the `io.modelcontextprotocol/tasks`
//! extension in 2026-07-28). Kept so legacy peers can be read and answered.

use crate::prelude::*;

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::meta::Meta;
use crate::mrtr::ResultType;

/// `task` on a request: asks for task augmentation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// Requested retention in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The state of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for input.
    InputRequired,
    /// Done (terminal).
    Completed,
    /// Failed (terminal).
    Failed,
    /// Cancelled (terminal).
    Cancelled,
}

/// A task. Also the result of `tasks/get` and `tasks/cancel`, and the params of
/// `notifications/tasks/status` (each is a task plus `_meta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The task id.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The state.
    pub status: TaskStatus,
    /// A message about the state.
    #[serde(
        rename = "statusMessage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    #[serde(rename = "createdAt")]
    pub created_at: String,
    /// ISO 8601 time of the last update.
    #[serde(rename = "lastUpdatedAt")]
    pub last_updated_at: String,
    /// Retention in milliseconds; `null` means unlimited.
    #[serde(default)]
    pub ttl: Option<i64>,
    /// Suggested polling interval in milliseconds.
    #[serde(
        rename = "pollInterval",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub poll_interval: Option<i64>,
    /// `resultType`, when a modern peer adds one.
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

/// Params of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskIdParams {
    /// The task id.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

// Read without the derive's `flatten`, which buffers the whole object before reading it: a
// `tasks/get` poll reads these params twice (the request's type, then the extension's).
crate::de::deserialize_with_extra!(TaskIdParams, "struct TaskIdParams", { task_id: "taskId" => required, meta: "_meta" => optional });

/// The result of a task-augmented request: the task that was created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The task.
    pub task: Task,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `tasks/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListTasksResult {
    /// The tasks of this page.
    pub tasks: Vec<Task>,
    /// The cursor of the next page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}
