//! Resolver behaviour on `McpServer`: dependent questions in the minimum number of rounds,
//! batching, question pinning, validation of answers, capability refusals, and every mistake
//! caught when the server is built.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::TestClient;
use mcp_server_core::Service;
use mcp_server_core::registry::{
    Accepted, BuildError, ElicitationResult, Json, McpServer, PromptDef, Ready, Resolution,
    Resolver, ToolDef, ToolOutcome,
};
use mcp_types::InputRequiredResult;
use mcp_types::mrtr::Outcome;
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp_types::tools::CallToolResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

type Args = serde_json::Map<String, Value>;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Color {
    color: String,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Size {
    size: u32,
}

/// Three questions, each depending on the one before.
fn chain(log: Arc<Mutex<Vec<String>>>) -> Service {
    let l1 = log.clone();
    let name = Resolver::new("ask_name", move |_| {
        l1.lock().unwrap().push("ask_name".into());
        async { Resolution::<Name>::elicit("Your name?") }
    });
    let l2 = log.clone();
    let color = Resolver::new("ask_color", move |input| {
        l2.lock().unwrap().push("ask_color".into());
        async move {
            match input.resolved::<Accepted<Name>>("ask_name") {
                Ok(Accepted(Name { name })) => {
                    Resolution::<Color>::elicit(format!("{name}, your favourite colour?"))
                }
                Err(e) => Resolution::reject(e),
            }
        }
    })
    .depends_on(["ask_name"]);
    let l3 = log.clone();
    let size = Resolver::new("ask_size", move |input| {
        l3.lock().unwrap().push("ask_size".into());
        async move {
            match input.resolved::<Accepted<Color>>("ask_color") {
                Ok(Accepted(Color { color })) => {
                    Resolution::<Size>::elicit(format!("How big, in {color}?"))
                }
                Err(e) => Resolution::reject(e),
            }
        }
    })
    .depends_on(["ask_color"]);
    let l4 = log.clone();
    let tool = ToolDef::new("order")
        .resolve::<Accepted<Name>>("name", name)
        .resolve::<Accepted<Color>>("color", color)
        .resolve::<Accepted<Size>>("size", size)
        .handler_resolved(move |_ctx, _args: Args, mut r| {
            l4.lock().unwrap().push("body".into());
            async move {
                let Accepted(n) = r.take::<Accepted<Name>>("name")?;
                let Accepted(c) = r.take::<Accepted<Color>>("color")?;
                let Accepted(s) = r.take::<Accepted<Size>>("size")?;
                Ok::<_, String>(format!("{} ordered a {} {}", n.name, s.size, c.color))
            }
        });
    McpServer::new("Shop").tool(tool).into_service().unwrap()
}

fn caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

async fn call(c: &mut TestClient, params: Value) -> Value {
    c.modern("tools/call", params, caps()).await
}

#[tokio::test]
async fn three_dependent_questions_take_three_rounds_and_nothing_is_asked_twice() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut c = TestClient::new(&chain(log.clone()));
    let r1 = call(&mut c, json!({"name": "order"})).await;
    assert_eq!(
        r1["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["ask_name"]
    );
    let r2 = call(
        &mut c,
        json!({"name": "order", "requestState": r1["result"]["requestState"],
        "inputResponses": {"ask_name": {"action": "accept", "content": {"name": "Ada"}}}}),
    )
    .await;
    assert_eq!(
        r2["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["ask_color"]
    );
    assert_eq!(
        r2["result"]["inputRequests"]["ask_color"]["params"]["message"],
        "Ada, your favourite colour?"
    );
    // Each retry carries only the latest round's answers: the name lives in the sealed state.
    let r3 = call(
        &mut c,
        json!({"name": "order", "requestState": r2["result"]["requestState"],
        "inputResponses": {"ask_color": {"action": "accept", "content": {"color": "red"}}}}),
    )
    .await;
    assert_eq!(
        r3["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["ask_size"]
    );
    let done = call(
        &mut c,
        json!({"name": "order", "requestState": r3["result"]["requestState"],
        "inputResponses": {"ask_size": {"action": "accept", "content": {"size": 3}}}}),
    )
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada ordered a 3 red");
    // Resolvers re-run each round (cheaply), the body runs once, at the end.
    let log = log.lock().unwrap().clone();
    assert_eq!(log.iter().filter(|e| *e == "body").count(), 1);
    assert_eq!(log.last().unwrap(), "body");
    assert_eq!(log.iter().filter(|e| *e == "ask_name").count(), 4);
    assert_eq!(log.iter().filter(|e| *e == "ask_size").count(), 2);
}

#[tokio::test]
async fn a_missing_answer_is_asked_again_and_extra_keys_are_ignored() {
    let mut c = TestClient::new(&chain(Arc::default()));
    let r1 = call(&mut c, json!({"name": "order"})).await;
    let state = r1["result"]["requestState"].clone();
    let again = call(&mut c, json!({"name": "order", "requestState": state, "inputResponses": {"other": {"action": "decline"}}})).await;
    assert_eq!(
        again["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["ask_name"]
    );
    let extra = call(&mut c, json!({"name": "order", "requestState": state, "inputResponses": {
        "ask_name": {"action": "accept", "content": {"name": "Bo"}}, "ghost": {"action": "accept", "content": {}}}})).await;
    assert_eq!(
        extra["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["ask_color"]
    );
    // An answer without the state that asked the question is not consumed: asked again.
    let stateless = call(&mut c, json!({"name": "order", "inputResponses": {"ask_name": {"action": "accept", "content": {"name": "Bo"}}}})).await;
    assert_eq!(
        stateless["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["ask_name"]
    );
}

#[tokio::test]
async fn wrongly_shaped_answers_are_never_accepted() {
    let mut c = TestClient::new(&chain(Arc::default()));
    let state = call(&mut c, json!({"name": "order"})).await["result"]["requestState"].clone();
    let ask = |answer: Value| json!({"name": "order", "requestState": state, "inputResponses": {"ask_name": answer}});
    let no_content = call(&mut c, ask(json!({"action": "accept"}))).await;
    assert_eq!(no_content["result"]["isError"], true);
    assert_eq!(
        no_content["result"]["content"][0]["text"],
        "Error executing tool order: Resolver 'ask_name' received an accepted elicitation with no content"
    );
    let wrong_kind = call(&mut c, ask(json!({"roots": []}))).await;
    assert_eq!(
        wrong_kind["result"]["content"][0]["text"],
        "Error executing tool order: Resolver 'ask_name' received a response of the wrong kind"
    );
    let wrong_content = call(
        &mut c,
        ask(json!({"action": "accept", "content": {"name": 12345}})),
    )
    .await;
    assert_eq!(wrong_content["result"]["isError"], true);
    assert_eq!(
        wrong_content["result"]["content"][0]["text"],
        "Error executing tool order: Resolver 'ask_name' received an accepted elicitation whose content does not match the requested schema: field 'name' must be a string"
    );
    let missing_field = call(&mut c, ask(json!({"action": "accept", "content": {}}))).await;
    assert!(
        missing_field["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("field 'name' is required")
    );
    let not_an_object = call(&mut c, ask(json!(12345))).await;
    assert_eq!(not_an_object["error"]["code"], -32602);
}

#[tokio::test]
async fn a_reworded_question_is_asked_again_and_a_stale_answer_is_not_consumed() {
    let wording = Arc::new(Mutex::new("Proceed?".to_owned()));
    let w = wording.clone();
    let ask = Resolver::new("confirm", move |_| {
        let message = w.lock().unwrap().clone();
        async move { Resolution::<Name>::elicit(message) }
    });
    let tool = ToolDef::new("go")
        .resolve::<Accepted<Name>>("who", ask)
        .handler_resolved(|_c, _a: Args, mut r| async move {
            let Accepted(n) = r.take::<Accepted<Name>>("who")?;
            Ok::<_, String>(n.name)
        });
    let mut c = TestClient::new(&McpServer::new("s").tool(tool).into_service().unwrap());
    let r1 = call(&mut c, json!({"name": "go"})).await;
    *wording.lock().unwrap() = "Proceed, really?".to_owned();
    let r2 = call(
        &mut c,
        json!({"name": "go", "requestState": r1["result"]["requestState"],
        "inputResponses": {"confirm": {"action": "accept", "content": {"name": "yes"}}}}),
    )
    .await;
    assert_eq!(r2["result"]["resultType"], "input_required");
    assert_eq!(
        r2["result"]["inputRequests"]["confirm"]["params"]["message"],
        "Proceed, really?"
    );
    let r3 = call(
        &mut c,
        json!({"name": "go", "requestState": r2["result"]["requestState"],
        "inputResponses": {"confirm": {"action": "accept", "content": {"name": "yes, really"}}}}),
    )
    .await;
    assert_eq!(r3["result"]["content"][0]["text"], "yes, really");
}

fn planner() -> Service {
    let sample = Resolver::new("plan", |input| async move {
        let city: String = input.argument("city").unwrap_or_default();
        let message = mcp_types::sampling::SamplingMessage {
            role: mcp_types::Role::User,
            content: mcp_types::content::OneOrMany::One(mcp_types::content::SamplingContent::Text(
                mcp_types::content::TextContent::new(format!("Plan a day in {city}")),
            )),
            meta: None,
            extra: Default::default(),
        };
        Resolution::<CreateMessageResult>::sample(CreateMessageRequestParams::new(
            vec![message],
            100,
        ))
    })
    .reads(["city"]);
    let roots = Resolver::new("roots", |_| async {
        Resolution::<ListRootsResult>::list_roots()
    });
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Trip {
        city: String,
    }
    let tool = ToolDef::new("plan_trip")
        .arguments::<Trip>()
        .resolve::<CreateMessageResult>("plan", sample)
        .resolve::<ListRootsResult>("roots", roots)
        .handler_resolved(|_c, _a: Trip, mut r| async move {
            let plan = r.take::<CreateMessageResult>("plan")?;
            let roots = r.take::<ListRootsResult>("roots")?;
            let text = match &plan.content {
                mcp_types::content::OneOrMany::One(mcp_types::content::SamplingContent::Text(
                    t,
                )) => t.text.clone(),
                _ => String::new(),
            };
            Ok::<_, String>(format!("{text} (saved to {})", roots.roots[0].uri))
        });
    McpServer::new("Trips").tool(tool).into_service().unwrap()
}

#[tokio::test]
async fn independent_questions_are_batched_in_one_round() {
    let mut c = TestClient::new(&planner());
    let r1 = call(
        &mut c,
        json!({"name": "plan_trip", "arguments": {"city": "Lisbon"}}),
    )
    .await;
    let requests = r1["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["plan", "roots"]);
    assert_eq!(requests["roots"], json!({"method": "roots/list"}));
    assert_eq!(
        requests["plan"]["params"]["messages"][0]["content"]["text"],
        "Plan a day in Lisbon"
    );
    let done = call(&mut c, json!({"name": "plan_trip", "arguments": {"city": "Lisbon"}, "requestState": r1["result"]["requestState"],
        "inputResponses": {
            "plan": {"role": "assistant", "content": {"type": "text", "text": "Tram 28, then pastéis"}, "model": "m", "stopReason": "endTurn"},
            "roots": {"roots": [{"uri": "file:///trips", "name": "trips"}]}}})).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Tram 28, then pastéis (saved to file:///trips)"
    );
}

#[tokio::test]
async fn sampling_and_roots_need_their_capabilities_on_both_eras() {
    let mut c = TestClient::new(&planner());
    let r = c
        .modern(
            "tools/call",
            json!({"name": "plan_trip", "arguments": {"city": "x"}}),
            json!({"roots": {}}),
        )
        .await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {}}})
    );
    let r = c
        .modern(
            "tools/call",
            json!({"name": "plan_trip", "arguments": {"city": "x"}}),
            json!({"sampling": {}}),
        )
        .await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"roots": {}}})
    );
    let mut legacy = TestClient::new(&planner());
    legacy
        .initialize("2025-11-25", json!({"sampling": {}}))
        .await;
    let messages = legacy
        .exchange_with("tools/call", json!({"name": "plan_trip", "arguments": {"city": "x"}}), |_| {
            Some(json!({"result": {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}}))
        })
        .await;
    assert_eq!(
        messages.last().unwrap()["error"]["data"],
        json!({"requiredCapabilities": {"roots": {}}})
    );
}

#[tokio::test]
async fn on_a_legacy_session_each_question_is_a_live_request() {
    let mut c = TestClient::new(&planner());
    c.initialize("2025-11-25", caps()).await;
    let mut methods = Vec::new();
    let messages = c
        .exchange_with("tools/call", json!({"name": "plan_trip", "arguments": {"city": "Porto"}}), |request| {
            methods.push(request["method"].as_str().unwrap().to_owned());
            Some(match request["method"].as_str().unwrap() {
                "sampling/createMessage" => json!({"result": {"role": "assistant", "content": {"type": "text", "text": "Ribeira"}, "model": "m"}}),
                _ => json!({"result": {"roots": [{"uri": "file:///p"}]}}),
            })
        })
        .await;
    assert_eq!(methods, ["sampling/createMessage", "roots/list"]);
    assert_eq!(
        messages.last().unwrap()["result"]["content"][0]["text"],
        "Ribeira (saved to file:///p)"
    );
}

#[tokio::test]
async fn a_forged_or_foreign_state_gets_the_one_error() {
    let mut c = TestClient::new(&chain(Arc::default()));
    let forged = r#"{"v":1,"outcomes":{"ask_name":{"q":"x","r":{"action":"accept","content":{"name":"Eve"}}}},"asked":{}}"#;
    let r = call(&mut c, json!({"name": "order", "requestState": forged})).await;
    assert_eq!(r["error"]["message"], "Invalid or expired requestState");
    // Another instance has another ephemeral key.
    let mut other = TestClient::new(&chain(Arc::default()));
    let foreign =
        call(&mut other, json!({"name": "order"})).await["result"]["requestState"].clone();
    let r = call(&mut c, json!({"name": "order", "requestState": foreign})).await;
    assert_eq!(r["error"]["message"], "Invalid or expired requestState");
}

#[tokio::test]
async fn a_hand_built_round_is_sealed_by_the_same_boundary() {
    let tool = ToolDef::new("poll").handler(|ctx, _a: Args| async move {
        let outcome: ToolOutcome = match ctx.request_state() {
            Some("step-2") => Outcome::Complete(CallToolResult::text("done")),
            Some(_) => Outcome::InputRequired(InputRequiredResult::state_only("step-2")),
            None => Outcome::InputRequired(InputRequiredResult::state_only("step-1")),
        };
        outcome
    });
    let mut c = TestClient::new(&McpServer::new("p").tool(tool).into_service().unwrap());
    let r1 = call(&mut c, json!({"name": "poll"})).await;
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(s1.starts_with("v1.") && !s1.contains("step"));
    let r2 = call(&mut c, json!({"name": "poll", "requestState": s1})).await;
    let r3 = call(
        &mut c,
        json!({"name": "poll", "requestState": r2["result"]["requestState"]}),
    )
    .await;
    assert_eq!(r3["result"]["content"][0]["text"], "done");
}

#[derive(Serialize, JsonSchema)]
struct Total {
    total: u32,
}

#[tokio::test]
async fn tool_errors_structured_output_pagination_and_completion() {
    let failing =
        ToolDef::new("fail").handler(|_c, _a: Args| async { Err::<String, _>("the disk is full") });
    let sum = ToolDef::new("sum")
        .output::<Total>()
        .handler(|_c, a: Args| async move {
            Json(Total {
                total: a.values().filter_map(Value::as_u64).sum::<u64>() as u32,
            })
        });
    let prompt = PromptDef::new("greet")
        .argument("who", Some("Who to greet"), true)
        .complete("who", |prefix| {
            ["Ada", "Alan", "Grace"]
                .iter()
                .filter(|n| n.starts_with(prefix))
                .map(|s| s.to_string())
                .collect()
        })
        .handler(|_c, args: BTreeMap<String, String>, _r| async move {
            format!("Hello, {}!", args["who"])
        });
    let service = McpServer::new("misc")
        .page_size(1)
        .tool(failing)
        .tool(sum)
        .prompt(prompt)
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    let r = c
        .modern("tools/call", json!({"name": "fail"}), json!({}))
        .await;
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["content"][0]["text"], "the disk is full");
    let r = c
        .modern(
            "tools/call",
            json!({"name": "sum", "arguments": {"a": 2, "b": 3}}),
            json!({}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"total": 5}));
    assert_eq!(r["result"]["content"][0]["text"], r#"{"total":5}"#);

    let page1 = c.modern("tools/list", json!({}), json!({})).await;
    assert_eq!(page1["result"]["tools"].as_array().unwrap().len(), 1);
    assert_eq!(page1["result"]["tools"][0]["name"], "fail");
    let page2 = c
        .modern(
            "tools/list",
            json!({"cursor": page1["result"]["nextCursor"]}),
            json!({}),
        )
        .await;
    assert_eq!(page2["result"]["tools"][0]["name"], "sum");
    assert_eq!(
        page2["result"]["tools"][0]["outputSchema"]["properties"]["total"]["type"],
        "integer"
    );
    assert!(page2["result"].get("nextCursor").is_none());
    let bad = c
        .modern("tools/list", json!({"cursor": "zzz"}), json!({}))
        .await;
    assert_eq!(bad["error"]["code"], -32602);

    let r = c.modern("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "A"}}), json!({})).await;
    assert_eq!(
        r["result"]["completion"],
        json!({"values": ["Ada", "Alan"], "total": 2, "hasMore": false})
    );
    let r = c
        .modern("prompts/get", json!({"name": "greet"}), json!({}))
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32602, "message": "Missing required argument 'who' for prompt 'greet'"})
    );
    let r = c
        .modern(
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "Grace"}}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Hello, Grace!"
    );
}

#[derive(Clone, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Address {
    street: String,
}

#[derive(Clone, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Shipping {
    address: Address,
}

fn build_error(server: McpServer) -> String {
    match server.build() {
        Ok(_) => panic!("the server was built"),
        Err(BuildError(message)) => message,
    }
}

#[test]
fn mistakes_are_caught_when_the_server_is_built() {
    let ask = || {
        Resolver::new("ask", |_| async {
            Resolution::<Shipping>::elicit("Where?")
        })
    };
    let non_flat = ToolDef::new("ship")
        .resolve::<Accepted<Shipping>>("to", ask())
        .handler(|_c, _a: Args| async { "x" });
    assert_eq!(
        build_error(McpServer::new("s").tool(non_flat)),
        r##"tool 'ship': parameter 'to': Elicitation schema field 'address' rendered as {"$ref":"#/$defs/Address"}, which is not a valid PrimitiveSchemaDefinition"##
    );

    let a = Resolver::new("a", |_| async { Resolution::ready(1u8) }).depends_on(["b"]);
    let b = Resolver::new("b", |_| async { Resolution::ready(2u8) }).depends_on(["a"]);
    let cyclic = ToolDef::new("loop")
        .resolve::<Ready<u8>>("x", a)
        .resolve::<Ready<u8>>("y", b)
        .handler(|_c, _a: Args| async { "x" });
    assert_eq!(
        build_error(McpServer::new("s").tool(cyclic)),
        "tool 'loop': resolvers depend on each other in a cycle: 'a' -> 'b' -> 'a'; remove one \
         of these `#[resolve(...)]` parameters"
    );
    // A resolver that only waits on a cycle is not part of it: `a` waits for `b`, and `b` and
    // `c` wait for each other.
    let a = Resolver::new("a", |_| async { Resolution::ready(1u8) }).depends_on(["b"]);
    let b = Resolver::new("b", |_| async { Resolution::ready(2u8) }).depends_on(["c"]);
    let c = Resolver::new("c", |_| async { Resolution::ready(3u8) }).depends_on(["b"]);
    let tail = ToolDef::new("tail")
        .resolve::<Ready<u8>>("x", a)
        .resolve::<Ready<u8>>("y", b)
        .resolve::<Ready<u8>>("z", c)
        .handler(|_c, _a: Args| async { "x" });
    assert_eq!(
        build_error(McpServer::new("s").tool(tail)),
        "tool 'tail': resolvers depend on each other in a cycle: 'b' -> 'c' -> 'b'; remove one \
         of these `#[resolve(...)]` parameters"
    );

    let unknown_dep = ToolDef::new("t")
        .resolve::<Ready<u8>>(
            "x",
            Resolver::new("a", |_| async { Resolution::ready(1u8) }).depends_on(["nope"]),
        )
        .handler(|_c, _a: Args| async { "x" });
    assert_eq!(
        build_error(McpServer::new("s").tool(unknown_dep)),
        "tool 't': resolver 'a' depends on 'nope', which is not a resolver of it"
    );

    let reads_missing = ToolDef::new("t")
        .resolve::<Ready<u8>>(
            "x",
            Resolver::new("a", |_| async { Resolution::ready(1u8) }).reads(["pth"]),
        )
        .handler(|_c, _a: Args| async { "x" });
    assert_eq!(
        build_error(McpServer::new("s").tool(reads_missing)),
        "tool 't': resolver 'a' reads argument 'pth', which is not an argument of it"
    );

    let both = ToolDef::new("t")
        .resolve::<Ready<u8>>(
            "x",
            Resolver::new("a", |_| async { Resolution::ready(1u8) }),
        )
        .handler(|_c, _a: Args| async { Outcome::Complete(CallToolResult::text("x")) });
    assert!(
        build_error(McpServer::new("s").tool(both)).starts_with(
            "tool 't' combines resolvers with a hand-built InputRequiredResult return"
        )
    );

    assert_eq!(
        build_error(McpServer::new("s").tool(ToolDef::new("t"))),
        "tool 't' has no handler"
    );
    // A header annotation conforming clients would refuse (the tool would vanish from their
    // lists) stops the build instead.
    let nullable_header = ToolDef::new("route")
        .input_schema(
            serde_json::json!({"type": "object", "properties": {
                "region": {"type": ["string", "null"], "x-mcp-header": "Region"}}})
            .as_object()
            .unwrap()
            .clone(),
        )
        .handler(|_c, _a: Args| async { "x" });
    assert_eq!(
        build_error(McpServer::new("s").tool(nullable_header)),
        "tool 'route': x-mcp-header \"Region\" annotates a property that is not a string, \
         integer or boolean"
    );
    let dup = || ToolDef::new("t").handler(|_c, _a: Args| async { "x" });
    assert_eq!(
        build_error(McpServer::new("s").tool(dup()).tool(dup())),
        "two tools are named 't'"
    );
}

/// A resolver that sends the user to a page, with or without naming the elicitation.
fn pay(named: bool) -> Service {
    let ask = Resolver::new("pay", move |_| async move {
        let question =
            Resolution::<()>::elicit_url("Pay the deposit.", "https://pay.example.com/d/1");
        if named {
            question.with_elicitation_id("deposit-1")
        } else {
            question
        }
    });
    let tool = ToolDef::new("deposit")
        .resolve::<ElicitationResult<()>>("paid", ask)
        .handler_resolved(|_ctx, _args: Args, mut r| async move {
            Ok::<_, String>(match r.take::<ElicitationResult<()>>("paid")? {
                ElicitationResult::Accepted(_) => "opened".to_owned(),
                _ => "not opened".to_owned(),
            })
        });
    McpServer::new("pay").tool(tool).into_service().unwrap()
}

#[tokio::test]
async fn a_url_question_has_an_elicitation_id_on_legacy_sessions_only() {
    for named in [true, false] {
        let mut c = TestClient::new(&pay(named));
        c.initialize("2025-11-25", url_caps()).await;
        let mut asked = Vec::new();
        let messages = c
            .exchange_with("tools/call", json!({"name": "deposit"}), |request| {
                asked.push(request["params"].clone());
                Some(json!({"result": {"action": "accept"}}))
            })
            .await;
        assert_eq!(
            messages.last().unwrap()["result"]["content"][0]["text"],
            "opened"
        );
        let id = asked[0]["elicitationId"].as_str().unwrap().to_owned();
        if named {
            assert_eq!(id, "deposit-1");
        } else {
            assert!(
                id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{id}"
            );
        }
        // The live question carries its resolver's key, the name a 2026-07-28 client sees.
        assert_eq!(
            asked[0],
            json!({"mode": "url", "message": "Pay the deposit.", "url": "https://pay.example.com/d/1", "elicitationId": id,
                   "_meta": {"rs.keel/inputKey": "pay"}})
        );
        let mut modern = TestClient::new(&pay(named));
        let round = modern
            .modern("tools/call", json!({"name": "deposit"}), url_caps())
            .await;
        assert_eq!(
            round["result"]["inputRequests"]["pay"],
            json!({"method": "elicitation/create", "params": {"mode": "url", "message": "Pay the deposit.", "url": "https://pay.example.com/d/1"}})
        );
    }
}

fn url_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}
