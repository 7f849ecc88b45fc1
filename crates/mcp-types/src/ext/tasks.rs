//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the 2026-07-28 wire.
//!
//! A server may answer a `tools/call` whose request declared the extension (in
//! `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`) with a flat
//! [`CreateTaskResult`] (`resultType: "task"`). The client then polls `tasks/get`
//! ([`GetTaskResult`], a [`DetailedTask`] carrying `inputRequests`, `result` or `error` by
//! status), answers input with `tasks/update` ([`UpdateTaskParams`]) and stops the task with
//! `tasks/cancel`; both answer the empty [`TaskAck`]. `tasks/result` and `tasks/list` do not exist
//! in this revision.
//!
//! These are not the 2025-11-25 core tasks of [`crate::tasks`] (nested `{task:{…}}`, `ttl`,
//! `pollInterval`): the two shapes never mix on one wire.
//!
//! ```
//! use mcp_types::ext::tasks::{CreateTaskResult, DetailedTask, Task, TaskPayload};
//! use mcp_types::tasks::TaskStatus;
//!
//! let task = Task::new("t-1", TaskStatus::Working, "2026-09-01T12:00:00Z", Some(60_000));
//! let created = serde_json::to_value(CreateTaskResult::new(task.clone()))?;
//! assert_eq!(created["resultType"], "task");
//! assert_eq!(created["ttlMs"], 60_000);
//!
//! let done = DetailedTask::new(task, TaskPayload::Completed(serde_json::Map::new()));
//! let wire = serde_json::to_value(&done)?;
//! assert_eq!(wire["status"], "completed");
//! assert!(wire["result"].is_object());
//! # Ok::<(), serde_json::Error>(())
//! ```

use crate::prelude::*;

use alloc::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::JsonObject;
use crate::error::ErrorObject;
use crate::meta::Meta;
use crate::mrtr::{InputRequests, ResultType};
pub use crate::tasks::TaskStatus;

/// The extension identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";
/// The `resultType` of a [`CreateTaskResult`].
pub const RESULT_TYPE_TASK: &str = "task";
pub use crate::methods::TASKS_UPDATE;
/// `notifications/tasks`: a task's status, sent on a `subscriptions/listen` stream.
pub const NOTIFICATION_TASKS: &str = "notifications/tasks";

impl TaskStatus {
    /// Whether the status is final (`completed`, `failed`, `cancelled`): a task in it never
    /// changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// The base fields every task shape carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The id the server minted (unguessable; it may act as a bearer handle).
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The status.
    pub status: TaskStatus,
    /// Free text about the status (should be present on `failed`).
    #[serde(
        rename = "statusMessage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    #[serde(rename = "createdAt")]
    pub created_at: String,
    /// ISO 8601 time of the last change.
    #[serde(rename = "lastUpdatedAt")]
    pub last_updated_at: String,
    /// Retention from creation in milliseconds; `null` means unlimited. Always serialized (the
    /// schema requires the member).
    #[serde(rename = "ttlMs", deserialize_with = "nullable")]
    pub ttl_ms: Option<u64>,
    /// The suggested polling interval in milliseconds.
    #[serde(
        rename = "pollIntervalMs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub poll_interval_ms: Option<u64>,
}

/// A required member that may be `null` (serde's `Option` would also accept it missing).
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(d)
}

impl Task {
    /// A task created (and last updated) at `created_at`, with no message or poll interval.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        ttl_ms: Option<u64>,
    ) -> Self {
        let created_at = created_at.into();
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            last_updated_at: created_at.clone(),
            created_at,
            ttl_ms,
            poll_interval_ms: None,
        }
    }
}

/// What a task carries besides its base fields, by status.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskPayload {
    /// `working`: nothing more.
    Working,
    /// `input_required`: every request still outstanding, by key.
    InputRequired(InputRequests),
    /// `completed`: the original method's result (for `tools/call`, the `CallToolResult`, also
    /// when it has `isError: true`).
    Completed(JsonObject),
    /// `failed`: the JSON-RPC error the request ended with.
    Failed(ErrorObject),
    /// `cancelled`: nothing more.
    Cancelled,
}

impl TaskPayload {
    /// The status this payload belongs to.
    pub fn status(&self) -> TaskStatus {
        match self {
            TaskPayload::Working => TaskStatus::Working,
            TaskPayload::InputRequired(_) => TaskStatus::InputRequired,
            TaskPayload::Completed(_) => TaskStatus::Completed,
            TaskPayload::Failed(_) => TaskStatus::Failed,
            TaskPayload::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// A task with the payload of its status: what `tasks/get` returns and `notifications/tasks`
/// carries. The payload always matches `task.status` (the constructor sets it; decoding checks it).
#[derive(Debug, Clone, PartialEq)]
pub struct DetailedTask {
    /// The base fields.
    pub task: Task,
    /// The payload of the status.
    pub payload: TaskPayload,
}

impl DetailedTask {
    /// A task with `payload`; `task.status` is set from the payload.
    pub fn new(mut task: Task, payload: TaskPayload) -> Self {
        task.status = payload.status();
        DetailedTask { task, payload }
    }
}

#[derive(Serialize, Deserialize)]
struct DetailedWire {
    #[serde(flatten)]
    task: Task,
    #[serde(
        rename = "inputRequests",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    input_requests: Option<InputRequests>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject>,
}

impl DetailedWire {
    fn from_detailed(d: &DetailedTask) -> Self {
        let mut wire = DetailedWire {
            task: d.task.clone(),
            input_requests: None,
            result: None,
            error: None,
        };
        wire.task.status = d.payload.status();
        match &d.payload {
            TaskPayload::InputRequired(r) => wire.input_requests = Some(r.clone()),
            TaskPayload::Completed(r) => wire.result = Some(r.clone()),
            TaskPayload::Failed(e) => wire.error = Some(e.clone()),
            TaskPayload::Working | TaskPayload::Cancelled => {}
        }
        wire
    }

    fn into_detailed(self) -> Result<DetailedTask, String> {
        let status = self.task.status;
        let payload = match (status, self.input_requests, self.result, self.error) {
            (TaskStatus::Working, None, None, None) => TaskPayload::Working,
            (TaskStatus::Cancelled, None, None, None) => TaskPayload::Cancelled,
            (TaskStatus::InputRequired, Some(r), None, None) => TaskPayload::InputRequired(r),
            (TaskStatus::Completed, None, Some(r), None) => TaskPayload::Completed(r),
            (TaskStatus::Failed, None, None, Some(e)) => TaskPayload::Failed(e),
            (status, ..) => {
                return Err(format!(
                    "a '{}' task must carry {} and nothing else of inputRequests, result and error",
                    status.as_str(),
                    match status {
                        TaskStatus::InputRequired => "inputRequests",
                        TaskStatus::Completed => "result",
                        TaskStatus::Failed => "error",
                        _ => "none",
                    }
                ));
            }
        };
        Ok(DetailedTask {
            task: self.task,
            payload,
        })
    }
}

impl Serialize for DetailedTask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DetailedWire::from_detailed(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for DetailedTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DetailedWire::deserialize(d)?
            .into_detailed()
            .map_err(D::Error::custom)
    }
}

fn expect_result_type<E: serde::de::Error>(got: &ResultType, want: &str) -> Result<(), E> {
    if got.as_str() == want {
        Ok(())
    } else {
        Err(E::custom(format!(
            "resultType must be '{want}', not '{}'",
            got.as_str()
        )))
    }
}

/// The answer to a `tools/call` that became a task: flat, `resultType: "task"`. It never
/// carries `result`, `error`, `inputRequests` or `requestState`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTaskResult {
    /// The task as created.
    pub task: Task,
    /// `_meta`.
    pub meta: Option<Meta>,
}

impl CreateTaskResult {
    /// The result for a task just created.
    pub fn new(task: Task) -> Self {
        CreateTaskResult { task, meta: None }
    }
}

#[derive(Serialize, Deserialize)]
struct CreateWire {
    #[serde(rename = "resultType")]
    result_type: ResultType,
    #[serde(flatten)]
    task: Task,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

impl Serialize for CreateTaskResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        CreateWire {
            result_type: ResultType::Other(RESULT_TYPE_TASK.into()),
            task: self.task.clone(),
            meta: self.meta.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for CreateTaskResult {
    /// Strict: `resultType` must be `task`, so this never swallows another result shape.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = CreateWire::deserialize(d)?;
        expect_result_type(&wire.result_type, RESULT_TYPE_TASK)?;
        Ok(CreateTaskResult {
            task: wire.task,
            meta: wire.meta,
        })
    }
}

/// The result of `tasks/get`: the [`DetailedTask`] with `resultType: "complete"`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetTaskResult {
    /// The task and its payload.
    pub task: DetailedTask,
    /// `_meta`.
    pub meta: Option<Meta>,
}

#[derive(Serialize, Deserialize)]
struct GetWire {
    #[serde(rename = "resultType")]
    result_type: ResultType,
    #[serde(flatten)]
    task: DetailedWire,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

/// [`DetailedWire`] borrowed, for a task whose status already is its payload's (as
/// [`DetailedTask::new`] makes it): the same members in the same order, nothing copied.
#[derive(Serialize)]
struct DetailedRef<'a> {
    #[serde(flatten)]
    task: &'a Task,
    #[serde(rename = "inputRequests", skip_serializing_if = "Option::is_none")]
    input_requests: Option<&'a InputRequests>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

impl<'a> DetailedRef<'a> {
    fn of(d: &'a DetailedTask) -> Option<Self> {
        let mut wire = DetailedRef {
            task: &d.task,
            input_requests: None,
            result: None,
            error: None,
        };
        match &d.payload {
            TaskPayload::InputRequired(r) => wire.input_requests = Some(r),
            TaskPayload::Completed(r) => wire.result = Some(r),
            TaskPayload::Failed(e) => wire.error = Some(e),
            TaskPayload::Working | TaskPayload::Cancelled => {}
        }
        (d.task.status == d.payload.status()).then_some(wire)
    }
}

/// [`GetWire`] borrowed (see [`DetailedRef`]): a poll's answer is written without copying
/// the task, its result or `_meta` first.
#[derive(Serialize)]
struct GetRef<'a> {
    #[serde(rename = "resultType")]
    result_type: ResultType,
    #[serde(flatten)]
    task: DetailedRef<'a>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a Meta>,
}

impl Serialize for GetTaskResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match DetailedRef::of(&self.task) {
            Some(task) => GetRef {
                result_type: ResultType::Complete,
                task,
                meta: self.meta.as_ref(),
            }
            .serialize(s),
            // A task built with another status than its payload's is written with its
            // payload's, as decoding would read it.
            None => GetWire {
                result_type: ResultType::Complete,
                task: DetailedWire::from_detailed(&self.task),
                meta: self.meta.clone(),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for GetTaskResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = GetWire::deserialize(d)?;
        expect_result_type(&wire.result_type, "complete")?;
        Ok(GetTaskResult {
            task: wire.task.into_detailed().map_err(D::Error::custom)?,
            meta: wire.meta,
        })
    }
}

/// The empty acknowledgement `tasks/update` and `tasks/cancel` answer:
/// `{"resultType":"complete"}`, optionally with `_meta`, and nothing else.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskAck {
    /// `_meta`.
    pub meta: Option<Meta>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AckWire {
    #[serde(rename = "resultType")]
    result_type: ResultType,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

impl Serialize for TaskAck {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        AckWire {
            result_type: ResultType::Complete,
            meta: self.meta.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for TaskAck {
    /// Strict: `resultType` must be `complete` and no task member may be present.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = AckWire::deserialize(d)?;
        expect_result_type(&wire.result_type, "complete")?;
        Ok(TaskAck { meta: wire.meta })
    }
}

/// Params of `tasks/update`. `inputResponses` is kept as raw JSON on purpose: keys the server
/// never issued (or already answered) are ignored without error, whatever their value, so only
/// the values of outstanding keys are ever parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateTaskParams {
    /// The task id.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// Answers by input-request key (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`).
    #[serde(rename = "inputResponses")]
    pub input_responses: BTreeMap<String, Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `notifications/tasks`: the [`DetailedTask`] exactly as `tasks/get` would return it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStatusNotificationParams {
    /// The task and its payload.
    pub task: DetailedTask,
    /// `_meta`.
    pub meta: Option<Meta>,
}

#[derive(Serialize, Deserialize)]
struct NotificationWire {
    #[serde(flatten)]
    task: DetailedWire,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

impl Serialize for TaskStatusNotificationParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        NotificationWire {
            task: DetailedWire::from_detailed(&self.task),
            meta: self.meta.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for TaskStatusNotificationParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = NotificationWire::deserialize(d)?;
        Ok(TaskStatusNotificationParams {
            task: wire.task.into_detailed().map_err(D::Error::custom)?,
            meta: wire.meta,
        })
    }
}

/// The `taskIds` member the extension adds to a `subscriptions/listen` filter and to its
/// acknowledgement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskSubscription {
    /// The tasks to watch.
    #[serde(rename = "taskIds", default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

/// The extension's capability object: empty (no settings are defined).
pub fn capability() -> JsonObject {
    JsonObject::new()
}

/// Whether a result of a request (as raw JSON) is a [`CreateTaskResult`], by its `resultType`.
pub fn is_task_result(result: &serde_json::value::RawValue) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "resultType", default)]
        result_type: Option<ResultType>,
    }
    serde_json::from_str::<Probe>(result.get())
        .ok()
        .and_then(|p| p.result_type)
        .is_some_and(|t| t.as_str() == RESULT_TYPE_TASK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task() -> Task {
        Task::new("t", TaskStatus::Working, "2026-09-01T12:00:00Z", None)
    }

    /// A poll's answer is written borrowed; its bytes are those of the copied wire form, for
    /// every payload, with and without `_meta`, and a task whose status is not its payload's
    /// is still written with its payload's.
    #[test]
    fn a_get_result_is_written_as_its_wire_form_without_copies() {
        let payloads = [
            TaskPayload::Working,
            TaskPayload::Cancelled,
            TaskPayload::Completed(
                json!({"content": [], "isError": false})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            TaskPayload::Failed(ErrorObject::internal("boom")),
            TaskPayload::InputRequired(
                serde_json::from_value(json!({
                    "q": {"method": "roots/list", "params": {}}
                }))
                .unwrap(),
            ),
        ];
        for payload in payloads {
            for meta in [None, Some(Meta::default())] {
                let mut task = DetailedTask::new(task(), payload.clone());
                task.task.status_message = Some("half way".into());
                let result = GetTaskResult {
                    task,
                    meta: meta.clone(),
                };
                let copied = serde_json::to_string(&GetWire {
                    result_type: ResultType::Complete,
                    task: DetailedWire::from_detailed(&result.task),
                    meta,
                })
                .unwrap();
                assert_eq!(serde_json::to_string(&result).unwrap(), copied);
            }
        }
        let mut stale = GetTaskResult {
            task: DetailedTask::new(task(), TaskPayload::Cancelled),
            meta: None,
        };
        stale.task.task.status = TaskStatus::Working;
        let wire = serde_json::to_value(&stale).unwrap();
        assert_eq!(wire["status"], "cancelled");
    }

    #[test]
    fn ttl_null_is_serialized_and_required() {
        let wire = serde_json::to_value(task()).unwrap();
        assert_eq!(wire["ttlMs"], Value::Null);
        assert!(wire.as_object().unwrap().contains_key("ttlMs"));
        let mut missing = wire.clone();
        missing.as_object_mut().unwrap().remove("ttlMs");
        assert!(serde_json::from_value::<Task>(missing).is_err());
    }

    #[test]
    fn create_result_is_flat_and_strict() {
        let wire = serde_json::to_value(CreateTaskResult::new(task())).unwrap();
        assert_eq!(wire["resultType"], "task");
        assert_eq!(wire["taskId"], "t");
        assert!(wire.get("task").is_none());
        let mut complete = wire.clone();
        complete["resultType"] = json!("complete");
        let e = serde_json::from_value::<CreateTaskResult>(complete).unwrap_err();
        assert!(
            e.to_string()
                .contains("resultType must be 'task', not 'complete'"),
            "{e}"
        );
    }

    #[test]
    fn a_payload_that_does_not_match_the_status_is_rejected() {
        let mut wire =
            serde_json::to_value(DetailedTask::new(task(), TaskPayload::Working)).unwrap();
        wire["result"] = json!({});
        let e = serde_json::from_value::<DetailedTask>(wire).unwrap_err();
        assert!(
            e.to_string().contains("a 'working' task must carry none"),
            "{e}"
        );
        let failed = json!({"taskId":"t","status":"failed","createdAt":"x","lastUpdatedAt":"x",
            "ttlMs":null,"error":{"code":-32603,"message":"boom"}});
        let d: DetailedTask = serde_json::from_value(failed).unwrap();
        assert!(matches!(d.payload, TaskPayload::Failed(ref e) if e.message == "boom"));
    }

    #[test]
    fn the_ack_refuses_task_members() {
        assert_eq!(
            serde_json::to_value(TaskAck::default()).unwrap(),
            json!({"resultType":"complete"})
        );
        assert!(
            serde_json::from_value::<TaskAck>(json!({"resultType":"complete","taskId":"t"}))
                .is_err()
        );
        assert!(serde_json::from_value::<TaskAck>(json!({"resultType":"task"})).is_err());
    }

    #[test]
    fn update_params_keep_unknown_answers_raw() {
        let p: UpdateTaskParams = serde_json::from_value(
            json!({"taskId":"t","inputResponses":{"unknown-key":{"ignored":true}}}),
        )
        .unwrap();
        assert_eq!(p.input_responses["unknown-key"], json!({"ignored":true}));
    }
}
