//! The client and the Tasks extension, against a real `McpServer` in memory: `call_tool`
//! follows a task to its end (answering its questions with the callbacks), and the manual
//! `TaskHandle` polls, answers and cancels.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::MemoryTransport;
use mcp_client::{CallOptions, Client, ClientError, TaskCall, ToolLeg};
use mcp_server_core::Service;
use mcp_server_core::registry::{
    ElicitationResult, McpServer, Resolution, Resolver, ToolDef, ToolReply,
};
use mcp_server_core::tasks::{TaskConfig, TaskSupport};
use mcp_types::ErrorObject;
use mcp_types::elicitation::{ElicitRequestParams, ElicitResult, ElicitValue};
use mcp_types::ext::tasks::{TaskPayload, TaskStatus};
use mcp_types::mrtr::{InputResponse, InputResponses};
use mcp_types::tools::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Deserialize, JsonSchema)]
struct Go {
    go: bool,
}

#[derive(Clone, Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn server() -> Service {
    let build = ToolDef::new("build")
        .arguments::<NoArgs>()
        .task(TaskSupport::Optional)
        .handler(|ctx, _: NoArgs| async move {
            ctx.progress(1.0, Some(2.0), Some("compiled; waiting for approval"))
                .await;
            match ctx.elicit::<Go>("Ship it?").await {
                Ok(ElicitationResult::Accepted(Go { go: true })) => {
                    ctx.progress(2.0, Some(2.0), Some("shipped")).await;
                    ToolReply::Result(CallToolResult::text("shipped"))
                }
                Ok(_) => ToolReply::Result(CallToolResult::text("not shipped")),
                Err(e) => ToolReply::Error(e),
            }
        });
    let hang = ToolDef::new("hang")
        .arguments::<NoArgs>()
        .task(TaskSupport::Required)
        .handler(|ctx, _: NoArgs| async move {
            ctx.cancellation().cancelled().await;
            "stopped"
        });
    let broken = ToolDef::new("broken")
        .arguments::<NoArgs>()
        .task(TaskSupport::Required)
        .handler(|_ctx, _: NoArgs| async move {
            ToolReply::Error(ErrorObject::internal("the disk is full"))
        });
    let greet = ToolDef::new("greet")
        .arguments::<NoArgs>()
        .task(TaskSupport::Required)
        .resolve::<mcp_server_core::registry::Accepted<Name>>(
            "who",
            Resolver::new("who", |_| async {
                Resolution::<Name>::elicit("Who are you?")
            }),
        )
        .handler_resolved(|_ctx, _: NoArgs, mut r| async move {
            let name = r
                .take::<mcp_server_core::registry::Accepted<Name>>("who")?
                .0
                .name;
            Ok::<_, String>(format!("Hello, {name}!"))
        });
    McpServer::new("builds")
        .tool(build)
        .tool(hang)
        .tool(broken)
        .tool(greet)
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(20)))
        .into_service()
        .unwrap()
}

fn accept(field: &str, value: ElicitValue) -> ElicitResult {
    ElicitResult::accept(BTreeMap::from([(field.to_owned(), value)]))
}

async fn client(service: &Service, seen: Arc<Mutex<Vec<String>>>) -> Client {
    let asked = seen.clone();
    Client::builder()
        .tasks(true)
        .elicitation(move |info, params: ElicitRequestParams| {
            asked
                .lock()
                .unwrap()
                .push(format!("{} {}", info.key, params.message()));
            async move {
                Ok(if params.message() == "Who are you?" {
                    accept("name", ElicitValue::String("Ada".into()))
                } else {
                    accept("go", ElicitValue::Bool(true))
                })
            }
        })
        .on_task_status(move |task| {
            seen.lock().unwrap().push(format!(
                "{} {}",
                task.task.status.as_str(),
                task.task.status_message.clone().unwrap_or_default()
            ));
        })
        .connect(MemoryTransport::new(service))
        .await
        .unwrap()
}

#[tokio::test]
async fn call_tool_follows_a_task_answering_its_question_and_shows_its_progress() {
    let service = server();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = client(&service, seen.clone()).await;
    let result = client.call_tool("build", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("shipped"));
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.contains(&"q1 Ship it?".to_owned()),
        "the callback answered the task's question: {seen:?}"
    );
    assert_eq!(
        seen.iter().filter(|s| s.as_str() == "q1 Ship it?").count(),
        1,
        "each key is answered once: {seen:?}"
    );
    assert!(
        seen.contains(&"input_required compiled; waiting for approval".to_owned()),
        "{seen:?}"
    );
    assert_eq!(seen.last().map(String::as_str), Some("completed shipped"));
}

#[tokio::test]
async fn mrtr_rounds_come_before_the_task_and_its_error_is_the_calls() {
    let service = server();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = client(&service, seen.clone()).await;
    let greeting = client.call_tool("greet", json!({})).await.unwrap();
    assert_eq!(greeting.content[0].as_text(), Some("Hello, Ada!"));
    assert_eq!(
        seen.lock().unwrap()[0],
        "who Who are you?",
        "asked on the tools/call"
    );

    match client.call_tool("broken", json!({})).await {
        Err(ClientError::Server(e)) => {
            assert_eq!(e.code.0, -32603);
            assert_eq!(e.message, "the disk is full");
        }
        other => panic!("expected the task's error, got {other:?}"),
    }
}

#[tokio::test]
async fn the_manual_handle_polls_answers_and_cancels() {
    let service = server();
    let client = client(&service, Arc::new(Mutex::new(Vec::new()))).await;
    let TaskCall::Running(task) = client.call_tool_as_task("build", json!({})).await.unwrap()
    else {
        panic!("build runs as a task");
    };
    assert_eq!(task.created().status, TaskStatus::Working);
    let key = loop {
        let status = task.status().await.unwrap();
        if let TaskPayload::InputRequired(requests) = status.payload {
            break requests.into_keys().next().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let mut answer = InputResponses::new();
    answer.insert(
        key,
        InputResponse::Elicit(accept("go", ElicitValue::Bool(false))),
    );
    task.answer(answer).await.unwrap();
    let result = task.wait().await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("not shipped"));

    let TaskCall::Running(hang) = client.call_tool_as_task("hang", json!({})).await.unwrap() else {
        panic!("hang runs as a task");
    };
    hang.cancel().await.unwrap();
    assert!(matches!(hang.wait().await, Err(ClientError::Cancelled)));
    // Cancelling a finished task is acknowledged, not an error.
    hang.cancel().await.unwrap();
}

#[tokio::test]
async fn without_tasks_a_task_only_tool_is_refused() {
    let service = server();
    let client = Client::builder()
        .connect(MemoryTransport::new(&service))
        .await
        .unwrap();
    match client.call_tool("hang", json!({})).await {
        Err(ClientError::Server(e)) => assert_eq!(e.code.0, -32021),
        other => panic!("expected -32021, got {other:?}"),
    }
    assert!(matches!(
        client.call_tool_as_task("hang", json!({})).await,
        Err(ClientError::InvalidRequest(_))
    ));
}

#[tokio::test]
async fn a_leg_hands_the_task_back_and_a_second_client_attaches_to_it() {
    let service = server();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let first = client(&service, asked.clone()).await;
    // The leg neither follows the task nor asks the callbacks: the caller drives it.
    let ToolLeg::Task(task) = first
        .session()
        .call_tool_leg("build", json!({}), CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("build runs as a task");
    };
    let key = loop {
        if let TaskPayload::InputRequired(requests) = task.status().await.unwrap().payload {
            break requests.into_keys().next().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(asked.lock().unwrap().is_empty(), "no callback ran");

    // Another client (as another process would) carries on from the task as last seen.
    let second = client(&service, Arc::new(Mutex::new(Vec::new()))).await;
    let last_seen = task.status().await.unwrap().task;
    let attached = second.attach_task(last_seen, None).unwrap();
    assert_eq!(attached.id(), task.id());
    let mut answer = InputResponses::new();
    answer.insert(
        key,
        InputResponse::Elicit(accept("go", ElicitValue::Bool(false))),
    );
    attached.answer(answer).await.unwrap();
    let result = attached.wait().await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("not shipped"));

    // Without the extension the same tool runs inline (and its question has no back-channel
    // on 2026-07-28), and attaching is refused.
    let plain = Client::builder()
        .connect(MemoryTransport::new(&service))
        .await
        .unwrap();
    match plain
        .session()
        .call_tool_leg("build", json!({}), CallOptions::default())
        .await
    {
        Err(ClientError::Server(e)) => assert_eq!(e.code.0, -32600),
        other => panic!("expected the inline body's error, got {other:?}"),
    }
    assert!(matches!(
        plain.attach_task(task.created().clone(), None),
        Err(ClientError::InvalidRequest(_))
    ));
}

/// Review W18: a server whose task stays `working` forever and names no TTL no longer keeps
/// `call_tool` polling forever: the client's own bound on a task's wait ends it, and the task
/// it gave up on is cancelled.
#[tokio::test]
async fn a_task_that_never_ends_and_has_no_ttl_stops_at_the_clients_bound() {
    let (stopped, mut saw_stop) = tokio::sync::mpsc::unbounded_channel();
    let hang = ToolDef::new("hang")
        .arguments::<NoArgs>()
        .task(TaskSupport::Required)
        .handler(move |ctx, _: NoArgs| {
            let stopped = stopped.clone();
            async move {
                ctx.cancellation().cancelled().await;
                let _ = stopped.send(());
                "stopped"
            }
        });
    let service = McpServer::new("forever")
        .tool(hang)
        .tasks(
            TaskConfig::new()
                .ttl(None)
                .poll_interval(Duration::from_millis(50)),
        )
        .into_service()
        .unwrap();
    let client = Client::builder()
        .tasks(true)
        .max_task_wait(Duration::from_millis(300))
        .connect(MemoryTransport::new(&service))
        .await
        .unwrap();
    let outcome =
        tokio::time::timeout(Duration::from_secs(10), client.call_tool("hang", json!({})))
            .await
            .expect("call_tool still polls after 10 s");
    match outcome {
        Err(e @ ClientError::TaskTimeout { .. }) => {
            let ClientError::TaskTimeout { task_id, after } = &e else {
                unreachable!()
            };
            assert!(!task_id.is_empty());
            assert_eq!(*after, Duration::from_millis(300));
            assert_eq!(
                e.to_string(),
                format!(
                    "task '{task_id}' had not ended after 300 ms of following it, so it was cancelled (the task's TTL or the client's task wait, whichever is shorter)"
                )
            );
        }
        other => panic!("expected the task-wait timeout, got {other:?}"),
    }
    tokio::time::timeout(Duration::from_secs(10), saw_stop.recv())
        .await
        .expect("the abandoned task was not cancelled");
}
