//! The extensions API (SEP-2133) on the wire of both eras: what a server without an extension
//! answers is byte for byte what it answered before the API existed, a client that does not
//! declare an extension sees the same bytes as from a server without it, and one that declares
//! it sees the extension's capability, methods and fields.

mod common;

use std::time::Duration;

use common::{TestClient, envelope};
use mcp_server_core::registry::{McpServer, ResourceDef, ToolDef};
use mcp_server_core::{Extension, ExtensionIdError, Service};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Booking {
    /// The day, `YYYY-MM-DD`.
    date: String,
    /// How many guests.
    party: u32,
}

fn book_table() -> ToolDef {
    ToolDef::new("book_table")
        .description("Book a table.")
        .arguments::<Booking>()
        .handler(|_ctx, b: Booking| async move {
            format!("Booked a table for {} on {}.", b.party, b.date)
        })
}

fn menu() -> ResourceDef {
    ResourceDef::new("test://menu", "menu")
        .mime_type("text/plain")
        .handler(|_ctx| async { Ok::<_, String>("Soup of the day".to_owned()) })
}

/// The reference server, without any extension.
fn plain() -> McpServer {
    McpServer::new("bistro")
        .version("1.0")
        .tool(book_table())
        .resource(menu())
}

const EXT: &str = "com.example/stamps";

/// An extension with every kind of binding: settings, a method, a field on a listed tool, a
/// tool and a resource listed only to a client that declared it; advertised only to them.
fn stamps() -> Extension {
    Extension::new(EXT)
        .unwrap()
        .settings(json!({"inks": ["red"]}).as_object().unwrap().clone())
        .advertise_to_declaring_clients_only()
        .request("stamps/count", |ctx, params| async move {
            let declared = ctx.extension(EXT).cloned();
            Ok(json!({"count": 3, "asked": params, "declared": declared})
                .as_object()
                .unwrap()
                .clone())
        })
        .tool_meta("book_table", "com.example/stamp", json!({"ink": "red"}))
        .tool_for_declaring_clients_only("stamp_it")
        .resource_for_declaring_clients_only("test://stamp-pad")
}

fn stamp_it() -> ToolDef {
    ToolDef::new("stamp_it")
        .description("Stamp.")
        .handler(|_ctx, _args: serde_json::Map<String, Value>| async { "stamped".to_owned() })
}

fn pad() -> ResourceDef {
    ResourceDef::new("test://stamp-pad", "pad")
        .handler(|_ctx| async { Ok::<_, String>("ink".to_owned()) })
}

fn with_stamps() -> Service {
    plain()
        .tool(stamp_it())
        .resource(pad())
        .extension(stamps())
        .into_service()
        .unwrap()
}

/// Sends one request and returns the response's bytes as the server wrote them.
async fn raw(c: &mut TestClient, method: &str, params: Value) -> String {
    let id = c.next_id();
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    assert!(c.conn.send_raw(request.to_string().into_bytes()));
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), c.conn.recv())
            .await
            .expect("the server did not answer within 10 s")
            .expect("the connection closed");
        let text = message.to_string();
        let value: Value = serde_json::from_str(&text).unwrap();
        if value.get("method").is_none() && value["id"] == json!(id) {
            return text;
        }
    }
}

fn modern_params(mut params: Value, caps: &Value) -> Value {
    params["_meta"] = envelope(caps.clone());
    params
}

/// What a 2026-07-28 client declaring `caps` reads: discover, both lists, a call, a read.
async fn modern_transcript(service: &Service, caps: Value) -> Vec<String> {
    let mut c = TestClient::new(service);
    let mut out = Vec::new();
    for (method, params) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("resources/list", json!({})),
        (
            "tools/call",
            json!({"name": "book_table", "arguments": {"date": "2026-12-24", "party": 4}}),
        ),
        ("resources/read", json!({"uri": "test://menu"})),
    ] {
        out.push(raw(&mut c, method, modern_params(params, &caps)).await);
    }
    out
}

/// What a 2025-11-25 session declaring `caps` reads: initialize, both lists, a call, a read.
async fn legacy_transcript(service: &Service, caps: Value) -> Vec<String> {
    let mut c = TestClient::new(service);
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "legacy", "version": "1"}});
    let mut out = vec![raw(&mut c, "initialize", init).await];
    c.notify("notifications/initialized", json!({}));
    for (method, params) in [
        ("tools/list", json!({})),
        ("resources/list", json!({})),
        (
            "tools/call",
            json!({"name": "book_table", "arguments": {"date": "2026-12-24", "party": 4}}),
        ),
        ("resources/read", json!({"uri": "test://menu"})),
    ] {
        out.push(raw(&mut c, method, params).await);
    }
    out
}

/// What the reference server answered a 2026-07-28 client before the extensions API existed
/// (captured from the parent commit).
const BEFORE_MODERN: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true}},"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bistro","version":"1.0"}}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"book_table","description":"Book a table.","inputSchema":{"properties":{"date":{"description":"The day, `YYYY-MM-DD`.","type":"string"},"party":{"description":"How many guests.","format":"uint32","minimum":0,"type":"integer"}},"required":["date","party"],"title":"Booking","type":"object"}}],"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bistro","version":"1.0"}}}}"#,
    r#"{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"test://menu","name":"menu","mimeType":"text/plain"}],"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bistro","version":"1.0"}}}}"#,
    r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Booked a table for 4 on 2026-12-24."}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bistro","version":"1.0"}}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"result":{"contents":[{"uri":"test://menu","mimeType":"text/plain","text":"Soup of the day"}],"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bistro","version":"1.0"}}}}"#,
];
/// The same for a 2025-11-25 session.
const BEFORE_LEGACY: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true}},"serverInfo":{"name":"bistro","version":"1.0"}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"book_table","description":"Book a table.","inputSchema":{"properties":{"date":{"description":"The day, `YYYY-MM-DD`.","type":"string"},"party":{"description":"How many guests.","format":"uint32","minimum":0,"type":"integer"}},"required":["date","party"],"title":"Booking","type":"object"}}]}}"#,
    r#"{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"test://menu","name":"menu","mimeType":"text/plain"}]}}"#,
    r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Booked a table for 4 on 2026-12-24."}]}}"#,
    r#"{"jsonrpc":"2.0","id":5,"result":{"contents":[{"uri":"test://menu","mimeType":"text/plain","text":"Soup of the day"}]}}"#,
];

#[tokio::test]
async fn a_server_without_extensions_answers_the_bytes_it_answered_before() {
    let service = plain().into_service().unwrap();
    let modern = modern_transcript(&service, json!({})).await;
    let legacy = legacy_transcript(&service, json!({})).await;
    if std::env::var_os("PRINT_TRANSCRIPTS").is_some() {
        println!("{modern:#?}\n{legacy:#?}");
    }
    assert_eq!(modern, BEFORE_MODERN);
    assert_eq!(legacy, BEFORE_LEGACY);
}

/// The golden bytes above say only that nothing changed; the official schema of each
/// revision says they were right: every result validates against its definition.
#[test]
fn the_golden_transcripts_are_valid_results_of_their_revision() {
    let schemas = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/schemas");
    for (file, transcript, definitions) in [
        (
            "2026-07-28.schema.json",
            BEFORE_MODERN,
            [
                "DiscoverResult",
                "ListToolsResult",
                "ListResourcesResult",
                "CallToolResult",
                "ReadResourceResult",
            ],
        ),
        (
            "2025-11-25.schema.json",
            BEFORE_LEGACY,
            [
                "InitializeResult",
                "ListToolsResult",
                "ListResourcesResult",
                "CallToolResult",
                "ReadResourceResult",
            ],
        ),
    ] {
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(schemas.join(file)).unwrap()).unwrap();
        let url = format!("urn:mcp:{file}");
        let mut compiler = boon::Compiler::new();
        compiler.add_resource(&url, schema).unwrap();
        let mut compiled = boon::Schemas::new();
        assert_eq!(transcript.len(), definitions.len());
        for (message, definition) in transcript.iter().zip(definitions) {
            let message: Value = serde_json::from_str(message).unwrap();
            let index = compiler
                .compile(&format!("{url}#/$defs/{definition}"), &mut compiled)
                .unwrap();
            if let Err(e) = compiled.validate(&message["result"], index) {
                panic!("{file} {definition}: {e:#}\n  {message}");
            }
            // And the check can fail: the same result without its required part is refused.
            let mut broken = message["result"].clone();
            let required = match definition {
                "DiscoverResult" => "supportedVersions",
                "InitializeResult" => "protocolVersion",
                "ListToolsResult" => "tools",
                "ListResourcesResult" => "resources",
                "CallToolResult" => "content",
                _ => "contents",
            };
            broken.as_object_mut().unwrap().remove(required);
            assert!(
                compiled.validate(&broken, index).is_err(),
                "{file} {definition} accepted a result without {required}"
            );
        }
    }
}

/// The client's declaration of the `stamps` extension.
fn declaring() -> Value {
    json!({"extensions": {EXT: {}}})
}

#[tokio::test]
async fn a_client_that_does_not_declare_sees_the_bytes_of_a_server_without_the_extension() {
    // The server with the extension also has a tool and a resource only declaring clients are
    // shown: to the others it is the reference server, byte for byte.
    let with = with_stamps();
    let reference = plain().into_service().unwrap();
    for caps in [json!({}), json!({"extensions": {"com.example/other": {}}})] {
        assert_eq!(
            modern_transcript(&with, caps.clone()).await,
            modern_transcript(&reference, caps.clone()).await
        );
        assert_eq!(
            legacy_transcript(&with, caps.clone()).await,
            legacy_transcript(&reference, caps).await
        );
    }
    // Equal to the reference server, which the test above holds to the bytes before the
    // extension existed: asserting those bytes here again would test nothing more.
}

#[tokio::test]
async fn a_declaring_client_sees_the_capability_the_fields_and_the_hidden_items() {
    let service = with_stamps();
    for legacy in [false, true] {
        let mut c = TestClient::new(&service);
        let send = |params: Value| {
            if legacy {
                params
            } else {
                modern_params(params, &declaring())
            }
        };
        let caps_reply = if legacy {
            let init = json!({"protocolVersion": "2025-11-25", "capabilities": declaring(), "clientInfo": {"name": "legacy", "version": "1"}});
            let r: Value = serde_json::from_str(&raw(&mut c, "initialize", init).await).unwrap();
            c.notify("notifications/initialized", json!({}));
            r["result"]["capabilities"].clone()
        } else {
            let r: Value =
                serde_json::from_str(&raw(&mut c, "server/discover", send(json!({}))).await)
                    .unwrap();
            r["result"]["capabilities"].clone()
        };
        assert_eq!(caps_reply["extensions"], json!({EXT: {"inks": ["red"]}}));

        let tools: Value =
            serde_json::from_str(&raw(&mut c, "tools/list", send(json!({}))).await).unwrap();
        let tools = &tools["result"]["tools"];
        assert_eq!(tools[0]["name"], "book_table");
        assert_eq!(
            tools[0]["_meta"],
            json!({"com.example/stamp": {"ink": "red"}})
        );
        assert_eq!(tools[1]["name"], "stamp_it");
        assert_eq!(tools[1].get("_meta"), None);

        let resources: Value =
            serde_json::from_str(&raw(&mut c, "resources/list", send(json!({}))).await).unwrap();
        let uris: Vec<&str> = resources["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["test://menu", "test://stamp-pad"]);

        let count: Value =
            serde_json::from_str(&raw(&mut c, "stamps/count", send(json!({"page": 2}))).await)
                .unwrap();
        let result = &count["result"];
        assert_eq!(result["count"], 3);
        assert_eq!(result["asked"], json!({"page": 2}));
        assert_eq!(result["declared"], json!({}));
        if legacy {
            assert_eq!(result.get("resultType"), None);
        } else {
            assert_eq!(result["resultType"], "complete");
        }
    }
}

#[tokio::test]
async fn methods_that_require_the_declaration_refuse_other_clients_in_each_era() {
    let service = McpServer::new("bistro")
        .version("1.0")
        .extension(stamps().methods_require_declaration())
        .tool(book_table())
        .tool(stamp_it())
        .resource(pad())
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    let refused = raw(&mut c, "stamps/count", modern_params(json!({}), &json!({}))).await;
    assert_eq!(
        refused,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"stamps/count needs the com.example/stamps extension: declare it in this request's clientCapabilities.extensions","data":{"requiredCapabilities":{"extensions":{"com.example/stamps":{}}}}}}"#
    );
    let served: Value = serde_json::from_str(
        &raw(
            &mut c,
            "stamps/count",
            modern_params(json!({}), &declaring()),
        )
        .await,
    )
    .unwrap();
    assert_eq!(served["result"]["count"], 3);

    let mut legacy = TestClient::new(&service);
    legacy.initialize("2025-11-25", json!({})).await;
    let refused = raw(&mut legacy, "stamps/count", json!({})).await;
    assert_eq!(
        refused,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found","data":"stamps/count"}}"#
    );
}

#[tokio::test]
async fn accepted_settings_decide_the_negotiation() {
    let picky = stamps().accepts(|settings| {
        settings
            .get("inks")
            .and_then(Value::as_array)
            .is_some_and(|inks| inks.contains(&json!("red")))
    });
    let service = plain()
        .tool(stamp_it())
        .resource(pad())
        .extension(picky)
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    for (caps, listed) in [
        (json!({"extensions": {EXT: {}}}), 1),
        (json!({"extensions": {EXT: {"inks": ["blue"]}}}), 1),
        (json!({"extensions": {EXT: {"inks": ["blue", "red"]}}}), 2),
    ] {
        let r: Value =
            serde_json::from_str(&raw(&mut c, "tools/list", modern_params(json!({}), &caps)).await)
                .unwrap();
        assert_eq!(
            r["result"]["tools"].as_array().unwrap().len(),
            listed,
            "{caps}"
        );
    }
}

#[test]
fn building_refuses_bindings_to_what_is_not_registered_and_bad_identifiers() {
    let err = plain().extension(stamps()).build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the extension com.example/stamps binds the tool 'stamp_it', which is not registered"
    );
    let err = plain()
        .tool(stamp_it())
        .extension(stamps())
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the extension com.example/stamps binds the resource 'test://stamp-pad', which is not registered"
    );
    let err: ExtensionIdError = Extension::new("stamps").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("`stamps` is not an extension identifier")
    );
}

#[tokio::test]
async fn an_extension_replaced_by_one_with_its_identifier_takes_its_methods_along() {
    let second = Extension::new(EXT)
        .unwrap()
        .request("stamps/other", |_ctx, _params| async {
            Ok(serde_json::Map::new())
        });
    let service = mcp_server_core::Server::new("bistro")
        .with_extension(stamps())
        .with_extension(second)
        .into_service();
    let mut c = TestClient::new(&service);
    let gone = raw(
        &mut c,
        "stamps/count",
        modern_params(json!({}), &declaring()),
    )
    .await;
    assert_eq!(
        gone,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found","data":"stamps/count"}}"#
    );
    let kept: Value = serde_json::from_str(
        &raw(
            &mut c,
            "stamps/other",
            modern_params(json!({}), &declaring()),
        )
        .await,
    )
    .unwrap();
    assert_eq!(kept["result"]["resultType"], "complete");
}

/// One 2026-07-28 request declaring `caps`, its response parsed.
async fn ask(c: &mut TestClient, method: &str, params: Value, caps: &Value) -> Value {
    serde_json::from_str(&raw(c, method, modern_params(params, caps)).await).unwrap()
}

#[derive(serde::Deserialize)]
struct CountParams {
    ink: String,
}

#[derive(serde::Serialize)]
struct CountResult {
    ink: String,
    caller: Option<String>,
}

#[tokio::test]
async fn typed_methods_decode_their_params_and_see_the_caller() {
    let counted = Extension::new(EXT).unwrap().typed_request(
        "stamps/count",
        |ctx, params: CountParams| async move {
            Ok(CountResult {
                ink: params.ink,
                caller: ctx.principal().map(|p| p.client_id.clone()),
            })
        },
    );
    let service = mcp_server_core::Server::new("bistro")
        .with_extension(counted)
        .into_service();
    let transport = mcp_server_core::TransportContext {
        principal: Some(mcp_state_seal::Principal::new("client-a")),
        ..mcp_server_core::TransportContext::default()
    };
    let mut c = TestClient::with_transport(&service, transport);
    let answered: Value = ask(&mut c, "stamps/count", json!({"ink": "red"}), &declaring()).await;
    assert_eq!(answered["result"]["ink"], "red");
    assert_eq!(answered["result"]["caller"], "client-a");
    assert_eq!(answered["result"]["resultType"], "complete");

    let refused: Value = ask(&mut c, "stamps/count", json!({"ink": 7}), &declaring()).await;
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(
        refused["error"]["message"],
        "invalid params for 'stamps/count': invalid type: integer `7`, expected a string"
    );
}

/// The Tasks extension's methods are ordinary extension methods: an extension with its
/// identifier replaces them, as it would a third party's.
#[tokio::test]
async fn the_tasks_methods_are_the_tasks_extensions_and_go_with_it() {
    let tasks_id = mcp_types::ext::tasks::EXTENSION_ID;
    let caps = json!({"extensions": {tasks_id: {}}});
    let with_tasks = mcp_server_core::Server::new("bistro")
        .tasks(mcp_server_core::tasks::TaskConfig::new())
        .into_service();
    let mut c = TestClient::new(&with_tasks);
    let unknown: Value = ask(&mut c, "tasks/get", json!({"taskId": "nope"}), &caps).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    let replaced = mcp_server_core::Server::new("bistro")
        .tasks(mcp_server_core::tasks::TaskConfig::new())
        .with_extension(Extension::new(tasks_id).unwrap().request(
            "tasks/get",
            |_ctx, params| async move {
                Ok(json!({"mine": params["taskId"]})
                    .as_object()
                    .unwrap()
                    .clone())
            },
        ))
        .into_service();
    let mut c = TestClient::new(&replaced);
    let answered: Value = ask(&mut c, "tasks/get", json!({"taskId": "nope"}), &caps).await;
    assert_eq!(answered["result"]["mine"], "nope", "{answered}");
    let gone: Value = ask(&mut c, "tasks/cancel", json!({"taskId": "nope"}), &caps).await;
    assert_eq!(gone["error"]["code"], -32601, "{gone}");
}
