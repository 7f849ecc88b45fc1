//! Values of the Tasks extension built with the Rust API validate against the extension's
//! official JSON Schema (`fixtures/schemas/ext-tasks.draft.schema.json`, see the fixtures
//! README); every definition the extension itself adds must be covered by at least one value.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use mcp_types::elicitation::{ElicitRequestFormParams, ElicitRequestParams, ElicitationSchema};
use mcp_types::ext::tasks::{
    CreateTaskResult, DetailedTask, GetTaskResult, Task, TaskAck, TaskPayload,
    TaskStatusNotificationParams, TaskSubscription, UpdateTaskParams,
};
use mcp_types::lifecycle::Implementation;
use mcp_types::meta::Meta;
use mcp_types::mrtr::InputRequest;
use mcp_types::tasks::{TaskIdParams, TaskStatus};
use mcp_types::{
    ClientCapabilities, ClientRequest, ErrorObject, JsonObject, JsonRpcMessage, JsonRpcNotification,
};
use serde_json::{Value, json};

/// The definitions the extension adds (the rest of the file is the core it refers to).
const EXTENSION_DEFS: [&str; 20] = [
    "CancelTaskRequest",
    "CancelTaskResult",
    "CancelledTask",
    "CompletedTask",
    "CreateTaskResult",
    "DetailedTask",
    "FailedTask",
    "GetTaskRequest",
    "GetTaskResult",
    "InputRequiredTask",
    "Task",
    "TaskStatusNotificationParams",
    "TaskStatusNotification",
    "TaskStatus",
    "TaskSubscriptionAcknowledgedNotifications",
    "TaskSubscriptionNotifications",
    "TasksExtensionCapability",
    "UpdateTaskRequest",
    "UpdateTaskResult",
    "WorkingTask",
];

fn meta() -> Option<Meta> {
    let caps = ClientCapabilities::default().with_extension(mcp_types::ext::tasks::EXTENSION_ID);
    let mut meta = Meta::request("2026-07-28", caps);
    meta.client_info = Some(std::sync::Arc::new(Implementation::new(
        "rs-client",
        "0.1.0",
    )));
    Some(meta)
}

fn base(status: TaskStatus) -> Task {
    let mut task = Task::new("tsk-1", status, "2026-09-01T12:00:00Z", Some(300_000));
    task.poll_interval_ms = Some(500);
    task.status_message = Some("compiling".into());
    task
}

fn form() -> InputRequest {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"]
    }))
    .unwrap();
    InputRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams {
        mode: Some("form".into()),
        message: "Deploy now?".into(),
        requested_schema: schema,
        task: None,
        meta: None,
        extra: JsonObject::new(),
    }))
}

fn payloads() -> Vec<(&'static str, TaskPayload)> {
    let mut result = JsonObject::new();
    result.insert("content".into(), json!([{"type":"text","text":"done"}]));
    result.insert("isError".into(), json!(false));
    vec![
        ("WorkingTask", TaskPayload::Working),
        (
            "InputRequiredTask",
            TaskPayload::InputRequired(BTreeMap::from([("q1".to_owned(), form())])),
        ),
        ("CompletedTask", TaskPayload::Completed(result)),
        (
            "FailedTask",
            TaskPayload::Failed(ErrorObject::internal("the build machine went away")),
        ),
        ("CancelledTask", TaskPayload::Cancelled),
    ]
}

fn cases() -> Vec<(&'static str, Value)> {
    let v = |x: &dyn erased::Ser| x.value();
    let mut cases: Vec<(&'static str, Value)> = Vec::new();
    let id = TaskIdParams {
        task_id: "tsk-1".into(),
        meta: meta(),
        extra: JsonObject::new(),
    };
    let request = |r: ClientRequest| JsonRpcMessage::Request(r.to_request(1).unwrap()).to_value();
    cases.push((
        "GetTaskRequest",
        request(ClientRequest::GetTask(id.clone())),
    ));
    cases.push(("CancelTaskRequest", request(ClientRequest::CancelTask(id))));
    let update = UpdateTaskParams {
        task_id: "tsk-1".into(),
        input_responses: BTreeMap::from([(
            "q1".to_owned(),
            json!({"action":"accept","content":{"confirm":true}}),
        )]),
        meta: meta(),
        extra: JsonObject::new(),
    };
    cases.push((
        "UpdateTaskRequest",
        request(ClientRequest::UpdateTask(update)),
    ));
    cases.push(("CancelTaskResult", v(&TaskAck::default())));
    cases.push(("UpdateTaskResult", v(&TaskAck::default())));
    for status in [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ] {
        cases.push(("TaskStatus", v(&status)));
        cases.push(("Task", v(&base(status))));
        cases.push(("CreateTaskResult", v(&CreateTaskResult::new(base(status)))));
    }
    let mut unlimited = base(TaskStatus::Working);
    unlimited.ttl_ms = None;
    cases.push(("Task", v(&unlimited)));
    for (def, payload) in payloads() {
        let detailed = DetailedTask::new(base(TaskStatus::Working), payload);
        cases.push((def, v(&detailed)));
        cases.push(("DetailedTask", v(&detailed)));
        cases.push((
            "GetTaskResult",
            v(&GetTaskResult {
                task: detailed.clone(),
                meta: None,
            }),
        ));
        let params = TaskStatusNotificationParams {
            task: detailed,
            meta: None,
        };
        cases.push(("TaskStatusNotificationParams", v(&params)));
        let notification = JsonRpcNotification {
            method: mcp_types::ext::tasks::NOTIFICATION_TASKS.into(),
            params: Some(mcp_types::jsonrpc::to_raw(&params).unwrap()),
            extra: Default::default(),
        };
        cases.push((
            "TaskStatusNotification",
            JsonRpcMessage::Notification(notification).to_value(),
        ));
    }
    let subscription = TaskSubscription {
        task_ids: Some(vec!["tsk-1".into()]),
    };
    cases.push(("TaskSubscriptionNotifications", v(&subscription)));
    cases.push((
        "TaskSubscriptionAcknowledgedNotifications",
        v(&subscription),
    ));
    cases.push((
        "TasksExtensionCapability",
        v(&mcp_types::ext::tasks::capability()),
    ));
    cases
}

mod erased {
    pub(crate) trait Ser {
        fn value(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn value(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap()
        }
    }
}

fn compile() -> (boon::Compiler, &'static str) {
    let path = common::fixtures_dir().join("schemas/ext-tasks.draft.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource("urn:ext-tasks", schema).unwrap();
    (compiler, "urn:ext-tasks")
}

#[test]
fn task_values_validate_against_the_extension_schema() {
    let (mut compiler, url) = compile();
    let mut schemas = boon::Schemas::new();
    let mut covered = BTreeSet::new();
    let mut failures = Vec::new();
    for (def, value) in cases() {
        let index = compiler
            .compile(&format!("{url}#/$defs/{def}"), &mut schemas)
            .unwrap();
        match schemas.validate(&value, index) {
            Ok(()) => {
                covered.insert(def);
            }
            Err(e) => failures.push(format!("{def}: {e:#}\n  value: {value}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let missing: Vec<_> = EXTENSION_DEFS
        .iter()
        .filter(|d| !covered.contains(*d))
        .collect();
    assert!(missing.is_empty(), "definitions with no value: {missing:?}");
}

#[test]
fn the_extension_schema_catches_wrong_shapes() {
    let (mut compiler, url) = compile();
    let mut schemas = boon::Schemas::new();
    let mut check = |def: &str, value: Value| {
        let index = compiler
            .compile(&format!("{url}#/$defs/{def}"), &mut schemas)
            .unwrap();
        schemas.validate(&value, index).is_err()
    };
    // A task without ttlMs (the legacy shape omits it), and a completed task without result.
    let mut no_ttl = serde_json::to_value(base(TaskStatus::Working)).unwrap();
    no_ttl.as_object_mut().unwrap().remove("ttlMs");
    assert!(check("Task", no_ttl));
    assert!(check(
        "CompletedTask",
        json!({"taskId":"t","status":"completed","createdAt":"x","lastUpdatedAt":"x","ttlMs":null})
    ));
    assert!(check(
        "CreateTaskResult",
        json!({"resultType":"complete","taskId":"t","status":"working","createdAt":"x","lastUpdatedAt":"x","ttlMs":null})
    ));
}
