//! The client against a real `McpServer` in memory: the seed flows in both eras, with one set
//! of callbacks, and the intermediate rounds invisible to the caller.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mcp_client::MemoryTransport;
use mcp_client::{Client, ClientError, Mode, RequestInfo};
use mcp_server_core::Service;
use mcp_server_core::registry::{
    Accepted, ElicitationResult, McpServer, PromptDef, Resolution, Resolver, ResourceTemplateDef,
    ToolDef,
};
use mcp_types::elicitation::{ElicitAction, ElicitRequestParams, ElicitResult, ElicitValue};
use mcp_types::roots::{ListRootsResult, Root};
use mcp_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp_types::{ErrorObject, JsonObject};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Deserialize, JsonSchema)]
struct Region {
    region: String,
}

#[derive(Clone, Deserialize, JsonSchema)]
struct Audience {
    audience: String,
}

fn server() -> Service {
    let region = Resolver::new("region", |_| async {
        Resolution::<Region>::elicit("Which region should the database live in?")
    });
    let provision = ToolDef::new("provision")
        .description("Provision a database. Asks which region to put it in.")
        .resolve::<Accepted<Region>>("region", region)
        .handler_resolved(|_ctx, args: JsonObject, mut r| async move {
            let Accepted(Region { region }) = r.take::<Accepted<Region>>("region")?;
            let name = args
                .get("name")
                .and_then(|v| v.as_str())
                .unwrap_or("db")
                .to_owned();
            Ok::<_, String>(format!("Provisioned '{name}' in {region}."))
        });
    let plan = Resolver::new("plan", |_| async {
        Resolution::<CreateMessageResult>::sample(CreateMessageRequestParams::new(vec![], 50))
    });
    let roots = Resolver::new("roots", |_| async {
        Resolution::<ListRootsResult>::list_roots()
    });
    let trip = ToolDef::new("plan_trip")
        .resolve::<CreateMessageResult>("plan", plan)
        .resolve::<ListRootsResult>("roots", roots)
        .handler_resolved(|_ctx, _args: JsonObject, mut r| async move {
            let plan = r.take::<CreateMessageResult>("plan")?;
            let roots = r.take::<ListRootsResult>("roots")?;
            Ok::<_, String>(format!("{} via {}", plan.model, roots.roots[0].uri))
        });
    let ask = Resolver::new("audience", |_| async {
        Resolution::<Audience>::elicit("Who is the briefing for?")
    });
    let briefing = PromptDef::new("briefing")
        .resolve::<Accepted<Audience>>("audience", ask)
        .handler(|_c, _a, mut r| async move {
            let Accepted(Audience { audience }) = r.take::<Accepted<Audience>>("audience")?;
            Ok::<_, String>(format!("Write a briefing for {audience}."))
        });
    let unlock = Resolver::new("unlock", |_| async {
        Resolution::<Region>::elicit("Unlock?")
    });
    let vault = ResourceTemplateDef::new("vault://{item}", "vault")
        .resolve::<ElicitationResult<Region>>("ok", unlock)
        .handler(
            |_c, _uri, vars: BTreeMap<String, String>, mut r| async move {
                Ok::<_, String>(match r.take::<ElicitationResult<Region>>("ok")? {
                    ElicitationResult::Accepted(_) => format!("{} opened", vars["item"]),
                    _ => "locked".to_owned(),
                })
            },
        );
    McpServer::new("Provisioner")
        .tool(provision)
        .tool(trip)
        .prompt(briefing)
        .resource(vault)
        .into_service()
        .unwrap()
}

/// One set of callbacks, counting what each era asked.
fn client_builder(asked: Arc<Mutex<Vec<String>>>) -> mcp_client::ClientBuilder {
    let a1 = asked.clone();
    let a2 = asked.clone();
    let a3 = asked;
    Client::builder()
        .elicitation(move |info: RequestInfo, params: ElicitRequestParams| {
            a1.lock().unwrap().push(format!("elicit {} {}", info.key, params.message()));
            async move {
                let field = if params.message().contains("briefing") { "audience" } else { "region" };
                Ok(ElicitResult::accept(BTreeMap::from([(field.to_owned(), ElicitValue::String("eu-west-1".into()))])))
            }
        })
        .sampling(move |info, _params| {
            a2.lock().unwrap().push(format!("sample {}", info.key));
            async {
                Ok(serde_json::from_value(json!({"role": "assistant", "content": {"type": "text", "text": "go"}, "model": "m1"})).unwrap())
            }
        })
        .roots(move |info| {
            a3.lock().unwrap().push(format!("roots {}", info.key));
            async { Ok(ListRootsResult { roots: vec![Root::new("file:///trips", None)], meta: None, extra: JsonObject::new() }) }
        })
}

#[tokio::test]
async fn the_same_callbacks_serve_both_eras_and_the_rounds_are_invisible() {
    let service = server();
    for mode in [Mode::Auto, Mode::Legacy] {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let client = client_builder(asked.clone())
            .mode(mode.clone())
            .connect(MemoryTransport::new(&service))
            .await
            .unwrap();
        let expected_version = if mode == Mode::Auto {
            "2026-07-28"
        } else {
            "2025-11-25"
        };
        assert_eq!(client.protocol_version().as_deref(), Some(expected_version));

        let result = client
            .call_tool("provision", json!({"name": "orders"}))
            .await
            .unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("Provisioned 'orders' in eu-west-1."),
            "{mode:?}"
        );
        let trip = client.call_tool("plan_trip", json!({})).await.unwrap();
        assert_eq!(trip.content[0].as_text(), Some("m1 via file:///trips"));
        let prompt = client
            .get_prompt("briefing", BTreeMap::new())
            .await
            .unwrap();
        assert_eq!(
            prompt.messages[0].content.as_text(),
            Some("Write a briefing for eu-west-1.")
        );
        let read = client.read_resource("vault://keys").await.unwrap();
        assert_eq!(read.contents[0].text.as_deref(), Some("keys opened"));
        // Each question under its resolver's key, in both eras (a 2025-11-25 request carries
        // it in `_meta`); sampling and roots of one round may come in either order.
        let mut asked = asked.lock().unwrap().clone();
        asked.sort();
        assert_eq!(
            asked,
            [
                "elicit audience Who is the briefing for?",
                "elicit region Which region should the database live in?",
                "elicit unlock Unlock?",
                "roots roots",
                "sample plan",
            ],
            "{mode:?}"
        );
    }
}

#[tokio::test]
async fn a_client_without_a_callback_declares_nothing_and_gets_missing_capability() {
    let client = Client::builder()
        .connect(MemoryTransport::new(&server()))
        .await
        .unwrap();
    let e = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap_err();
    let ClientError::Server(error) = e else {
        panic!("expected a server error, got {e:?}")
    };
    assert_eq!(error.code.0, -32021);
    assert_eq!(
        error.data,
        Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))
    );
}

#[tokio::test]
async fn a_refusing_callback_ends_the_call_without_a_retry() {
    let client = Client::builder()
        .elicitation(|_info, _params| async {
            Err(ErrorObject::new(
                mcp_types::ErrorCode::INVALID_REQUEST,
                "Elicitation not supported",
            ))
        })
        .connect(MemoryTransport::new(&server()))
        .await
        .unwrap();
    let e = client.call_tool("provision", json!({})).await.unwrap_err();
    assert_eq!(
        e,
        ClientError::Callback(ErrorObject::new(
            mcp_types::ErrorCode::INVALID_REQUEST,
            "Elicitation not supported"
        ))
    );
    let legacy = Client::builder()
        .mode(Mode::Legacy)
        .elicitation(|_info, _params| async {
            Ok(ElicitResult {
                action: ElicitAction::Decline,
                content: None,
                meta: None,
                extra: JsonObject::new(),
            })
        })
        .connect(MemoryTransport::new(&server()))
        .await
        .unwrap();
    let r = legacy.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        r.content[0].as_text(),
        Some(
            "Error executing tool provision: Resolver for parameter 'region' could not resolve: elicitation was decline"
        )
    );
}

#[tokio::test]
async fn lists_follow_cursors() {
    let client = Client::builder()
        .connect(MemoryTransport::new(&server()))
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["provision", "plan_trip"]
    );
    assert_eq!(client.list_all_prompts().await.unwrap()[0].name, "briefing");
    assert_eq!(
        client.list_all_resource_templates().await.unwrap()[0].uri_template,
        "vault://{item}"
    );
    assert!(client.list_all_resources().await.unwrap().is_empty());
}
