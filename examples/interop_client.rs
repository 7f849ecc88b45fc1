//! The interop client: drives an interop server (`examples/interop_server.rs` or its Python twin
//! `examples/python/interop_server.py`) through every flow with our `Client`, checking the
//! exact texts. One line per flow; exit status 1 on any mismatch.
//!
//! ```text
//! interop-client --era 2026-07-28 --url http://127.0.0.1:8000/mcp
//! interop-client --era 2025-11-25 -- python examples/python/interop_server.py --stdio
//! ```
//!
//! `--era 2026-07-28` pins the stateless revision (no probe); `--era 2025-11-25` runs the
//! legacy `initialize` handshake. `--probe` connects in `Mode::Auto` instead (a
//! `server/discover` probe, `initialize` on a legacy answer) and still requires `--era`'s
//! version to be the one negotiated. `--apps` declares MCP Apps and adds a flow that reads the
//! app of the server's `show_dashboard` tool (the Python twin serves it with the SDK's `Apps`).

use std::collections::{BTreeMap, VecDeque};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::ClientBuilderExt;
use mcp::client::{CallOptions, Client, ClientError, Mode, RequestInfo};
use mcp::types::elicitation::{ElicitRequestParams, ElicitResult};
use mcp::types::mrtr::{InputRequest, InputResponse, InputResponses, Outcome};
use mcp::types::roots::{ListRootsResult, Root};
use mcp::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp::types::tools::CallToolResult;
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// Where the server is.
enum Target {
    Url(String),
    Command(Vec<String>),
}

/// What a flow got that differs from what it expected.
type Failure = String;

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), Failure> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// The answers the callbacks give (set by each flow) and what the callbacks saw.
#[derive(Default)]
struct Script {
    answers: VecDeque<ElicitResult>,
    asked: Vec<String>,
    schemas: Vec<Value>,
    sampled: Vec<String>,
    rooted: usize,
}

type Shared = Arc<Mutex<Script>>;

fn reset(script: &Shared, answers: Vec<ElicitResult>) {
    *script.lock().unwrap() = Script {
        answers: answers.into(),
        ..Script::default()
    };
}

fn answer(value: Value) -> ElicitResult {
    serde_json::from_value(value).expect("a well-formed ElicitResult")
}

fn accept(content: Value) -> ElicitResult {
    answer(json!({"action": "accept", "content": content}))
}

/// The required names and the property types of an elicitation schema.
fn fields(schema: &Value) -> (Vec<String>, BTreeMap<String, String>) {
    let mut required: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    required.sort();
    let types = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v["type"].as_str().unwrap_or("?").to_owned()))
        .collect();
    (required, types)
}

fn fields_of(pairs: &[(&str, &str)]) -> (Vec<String>, BTreeMap<String, String>) {
    let mut required: Vec<String> = pairs.iter().map(|(k, _)| k.to_string()).collect();
    required.sort();
    let types = pairs
        .iter()
        .map(|(k, t)| (k.to_string(), t.to_string()))
        .collect();
    (required, types)
}

fn text(result: Result<CallToolResult, ClientError>) -> Result<String, Failure> {
    let result = result.map_err(|e| format!("call failed: {e}"))?;
    if result.is_error == Some(true) {
        return Err(format!("tool error: {:?}", result.content));
    }
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(str::to_owned)
        .ok_or_else(|| format!("no text content in {:?}", result.content))
}

fn builder(script: &Shared) -> mcp::client::ClientBuilder {
    let (s1, s2, s3) = (script.clone(), script.clone(), script.clone());
    Client::builder()
        .request_timeout(Duration::from_secs(30))
        .elicitation(move |_info: RequestInfo, params: ElicitRequestParams| {
            let mut script = s1.lock().unwrap();
            script.asked.push(params.message().to_owned());
            let schema = serde_json::to_value(&params)
                .map(|p| p["requestedSchema"].clone())
                .unwrap_or_default();
            script.schemas.push(schema);
            let reply = script
                .answers
                .pop_front()
                .unwrap_or_else(ElicitResult::cancel);
            async move { Ok(reply) }
        })
        .sampling(
            move |_info: RequestInfo, params: CreateMessageRequestParams| {
                let first = serde_json::to_value(&params.messages)
                    .map(|m| m[0]["content"]["text"].as_str().unwrap_or("?").to_owned())
                    .unwrap_or_default();
                s2.lock().unwrap().sampled.push(first);
                async {
                    Ok(serde_json::from_value::<CreateMessageResult>(json!({
                        "role": "assistant",
                        "content": {"type": "text", "text": "Tram 28, then the castle"},
                        "model": "interop-model",
                        "stopReason": "endTurn"
                    }))
                    .expect("a well-formed CreateMessageResult"))
                }
            },
        )
        .roots(move |_info: RequestInfo| {
            s3.lock().unwrap().rooted += 1;
            async {
                Ok(ListRootsResult {
                    roots: vec![Root::new("file:///trips", Some("trips".into()))],
                    meta: None,
                    extra: Default::default(),
                })
            }
        })
}

// ---------------------------------------------------------------------------------------------
// The flows.

async fn delete_empty(client: &Client, script: &Shared) -> Result<(), Failure> {
    reset(script, vec![]);
    let got = text(
        client
            .call_tool("delete_folder", json!({"path": "/tmp/empty"}))
            .await,
    )?;
    expect("questions", script.lock().unwrap().asked.clone(), vec![])?;
    expect("text", got.as_str(), "deleted /tmp/empty")
}

async fn delete_project(
    client: &Client,
    script: &Shared,
    reply: ElicitResult,
    want: &str,
) -> Result<(), Failure> {
    reset(script, vec![reply]);
    let got = text(
        client
            .call_tool("delete_folder", json!({"path": "/tmp/project"}))
            .await,
    )?;
    let s = script.lock().unwrap();
    expect(
        "questions",
        s.asked.clone(),
        vec!["/tmp/project has 2 file(s). Delete anyway?".to_owned()],
    )?;
    expect(
        "schema",
        fields(&s.schemas[0]),
        fields_of(&[("ok", "boolean")]),
    )?;
    expect("text", got.as_str(), want)
}

async fn plan_trip(client: &Client, script: &Shared, era: &str) -> Result<(), Failure> {
    let args = json!({"city": "Lisbon"});
    if era == MODERN {
        // Both questions come back in the first round, side by side.
        let first = client
            .session()
            .call_tool("plan_trip", args.clone(), CallOptions::default())
            .await
            .map_err(|e| format!("first leg failed: {e}"))?;
        let Outcome::InputRequired(round) = first else {
            return Err("the first round is not input_required".into());
        };
        let mut methods: Vec<String> = round
            .input_requests
            .unwrap_or_default()
            .values()
            .map(|r| r.method().to_owned())
            .collect();
        methods.sort();
        expect(
            "methods of the first round",
            methods,
            vec!["roots/list".to_owned(), "sampling/createMessage".to_owned()],
        )?;
    }
    reset(script, vec![]);
    let got = text(client.call_tool("plan_trip", args).await)?;
    let s = script.lock().unwrap();
    expect(
        "sampled",
        s.sampled.clone(),
        vec!["Plan a day in Lisbon".to_owned()],
    )?;
    expect("roots asked", s.rooted, 1)?;
    expect(
        "text",
        got.as_str(),
        "Tram 28, then the castle (saved to file:///trips)",
    )
}

async fn briefing(client: &Client, script: &Shared) -> Result<(), Failure> {
    reset(script, vec![accept(json!({"audience": "the board"}))]);
    let result = client
        .get_prompt("briefing", BTreeMap::new())
        .await
        .map_err(|e| format!("prompts/get failed: {e}"))?;
    let s = script.lock().unwrap();
    expect(
        "questions",
        s.asked.clone(),
        vec!["Who is the briefing for?".to_owned()],
    )?;
    expect(
        "schema",
        fields(&s.schemas[0]),
        fields_of(&[("audience", "string")]),
    )?;
    let messages = serde_json::to_value(&result.messages).unwrap_or_default();
    expect(
        "messages",
        messages,
        json!([{"role": "user", "content": {"type": "text", "text": "Write a briefing for the board."}}]),
    )
}

async fn vault(client: &Client, script: &Shared) -> Result<(), Failure> {
    reset(script, vec![accept(json!({"ok": true}))]);
    let result = client
        .read_resource("vault://keys")
        .await
        .map_err(|e| format!("resources/read failed: {e}"))?;
    expect(
        "questions",
        script.lock().unwrap().asked.clone(),
        vec!["Unlock keys?".to_owned()],
    )?;
    expect("contents", result.contents.len(), 1)?;
    let contents = &result.contents[0];
    expect("uri", contents.uri.as_str(), "vault://keys")?;
    expect(
        "mimeType",
        contents.mime_type.as_deref(),
        Some("text/plain"),
    )?;
    expect("text", contents.text.as_deref(), Some("the keys secret"))
}

async fn provision(client: &Client, script: &Shared, era: &str) -> Result<(), Failure> {
    let args = json!({"name": "orders"});
    if era == MODERN {
        // The hand-built round: key "region", the form question, and a requestState.
        let first = client
            .session()
            .call_tool("provision", args.clone(), CallOptions::default())
            .await
            .map_err(|e| format!("first leg failed: {e}"))?;
        let Outcome::InputRequired(round) = first else {
            return Err("the first round is not input_required".into());
        };
        let requests = round.input_requests.unwrap_or_default();
        expect(
            "keys",
            requests.keys().cloned().collect::<Vec<_>>(),
            vec!["region".to_owned()],
        )?;
        let Some(InputRequest::Elicit(question)) = requests.get("region") else {
            return Err(format!("not an elicitation: {requests:?}"));
        };
        expect(
            "question",
            question.message(),
            "Which region should the database live in?",
        )?;
        if round.request_state.as_deref().is_none_or(str::is_empty) {
            return Err("no requestState in the hand-built round".into());
        }
    }
    reset(script, vec![accept(json!({"region": "eu-west-1"}))]);
    let got = text(client.call_tool("provision", args).await)?;
    let s = script.lock().unwrap();
    expect(
        "questions",
        s.asked.clone(),
        vec!["Which region should the database live in?".to_owned()],
    )?;
    expect(
        "schema",
        fields(&s.schemas[0]),
        fields_of(&[("region", "string")]),
    )?;
    expect("text", got.as_str(), "Provisioned 'orders' in eu-west-1.")
}

const ORDER_QUESTIONS: [&str; 3] = [
    "Your name?",
    "Ada, your favourite colour?",
    "How big, in green?",
];

fn order_answers() -> Vec<ElicitResult> {
    vec![
        accept(json!({"name": "Ada"})),
        accept(json!({"color": "green"})),
        accept(json!({"size": 3})),
    ]
}

async fn order(client: &Client, script: &Shared, era: &str) -> Result<(), Failure> {
    if era == MODERN {
        // Drive the rounds by hand to count them: one question per round, three rounds.
        let mut answers = order_answers().into_iter();
        let mut options = CallOptions::default();
        let mut rounds = 0;
        let result = loop {
            let outcome = client
                .session()
                .call_tool("order", json!({}), options.clone())
                .await
                .map_err(|e| format!("leg {} failed: {e}", rounds + 1))?;
            let round = match outcome {
                Outcome::Complete(result) => break result,
                Outcome::InputRequired(round) => round,
            };
            let requests = round.input_requests.unwrap_or_default();
            if requests.len() != 1 || rounds >= ORDER_QUESTIONS.len() {
                return Err(format!("round {} asked {requests:?}", rounds + 1));
            }
            let (key, request) = requests.into_iter().next().expect("one request");
            let InputRequest::Elicit(question) = request else {
                return Err(format!("not an elicitation: {request:?}"));
            };
            expect(
                &format!("question {}", rounds + 1),
                question.message(),
                ORDER_QUESTIONS[rounds],
            )?;
            let reply = answers.next().expect("an answer per question");
            let responses = InputResponses::from([(key, InputResponse::Elicit(reply))]);
            options = CallOptions::resume(Some(responses), round.request_state);
            rounds += 1;
        };
        expect("rounds", rounds, 3)?;
        expect(
            "text (manual loop)",
            text(Ok(result))?.as_str(),
            "Ada ordered size 3 in green.",
        )?;
    }
    reset(script, order_answers());
    let got = text(client.call_tool("order", json!({})).await)?;
    expect(
        "questions",
        script.lock().unwrap().asked.clone(),
        ORDER_QUESTIONS.map(str::to_owned).to_vec(),
    )?;
    expect("text", got.as_str(), "Ada ordered size 3 in green.")
}

const FLOWS: [&str; 10] = [
    "a. delete_folder /tmp/empty (no question)",
    "a. delete_folder accept",
    "a. delete_folder accept ok=false",
    "a. delete_folder decline",
    "a. delete_folder cancel",
    "b. plan_trip (sampling + roots in one round)",
    "c. prompt briefing",
    "c. resource vault://{item}",
    "d. provision (hand-built state)",
    "e. order (three rounds)",
];

const APPS_FLOW: &str = "f. MCP Apps: the tool's app, read with its MIME type and _meta.ui";
const DASHBOARD_URI: &str = "ui://interop/dashboard";
const DASHBOARD_HTML: &str =
    "<!doctype html><html><body><h1>Orders</h1><p>3 open orders</p></body></html>";

/// `--apps`: the server's `show_dashboard` tool is linked to its app, which reads back as one.
async fn apps(client: &Client) -> Result<(), Failure> {
    let tools = client.list_all_tools().await.map_err(|e| e.to_string())?;
    let tool = tools
        .iter()
        .find(|t| t.name == "show_dashboard")
        .ok_or("show_dashboard is not listed")?;
    let link = Client::tool_app(tool).ok_or("show_dashboard has no app")?;
    expect(
        "resourceUri",
        link.resource_uri.as_deref(),
        Some(DASHBOARD_URI),
    )?;
    expect("model visible", link.model_visible(), true)?;
    let app = client
        .read_app(DASHBOARD_URI)
        .await
        .map_err(|e| e.to_string())?;
    expect("html", app.html.as_str(), DASHBOARD_HTML)?;
    let csp = app.meta.csp.clone().unwrap_or_default();
    expect(
        "connectDomains",
        csp.connect_domains,
        Some(vec!["https://api.example.com".to_owned()]),
    )?;
    expect("prefersBorder", app.meta.prefers_border, Some(true))?;
    let done = text(client.call_tool("show_dashboard", json!({})).await)?;
    expect("text", done.as_str(), "Dashboard: 3 open orders.")
}

async fn flow(index: usize, client: &Client, script: &Shared, era: &str) -> Result<(), Failure> {
    match index {
        0 => delete_empty(client, script).await,
        1 => {
            let reply = accept(json!({"ok": true}));
            delete_project(client, script, reply, "deleted /tmp/project").await
        }
        2 => {
            let reply = accept(json!({"ok": false}));
            delete_project(client, script, reply, "kept the folder").await
        }
        3 => {
            let reply = ElicitResult::decline();
            delete_project(client, script, reply, "declined: folder not deleted").await
        }
        4 => {
            let reply = ElicitResult::cancel();
            delete_project(client, script, reply, "cancelled: folder not deleted").await
        }
        5 => plan_trip(client, script, era).await,
        6 => briefing(client, script).await,
        7 => vault(client, script).await,
        8 => provision(client, script, era).await,
        _ => order(client, script, era).await,
    }
}

async fn connect(
    target: &Target,
    era: &str,
    probe: bool,
    with_apps: bool,
    script: &Shared,
) -> Result<Client, ClientError> {
    let mode = if probe {
        Mode::Auto
    } else if era == LEGACY {
        Mode::Legacy
    } else {
        Mode::Pinned(era.to_owned())
    };
    let builder = builder(script).mode(mode).apps(with_apps);
    match target {
        Target::Url(url) => builder.connect_http(url).await,
        Target::Command(command) => {
            let mut cmd = tokio::process::Command::new(&command[0]);
            cmd.args(&command[1..]);
            builder.connect_stdio(cmd).await
        }
    }
}

/// The target, the era, whether to find the era with a `server/discover` probe, and whether to
/// declare MCP Apps and run its flow.
fn parse_args() -> Result<(Target, String, bool, bool), String> {
    let mut era = MODERN.to_owned();
    let mut probe = false;
    let mut with_apps = false;
    let mut url = None;
    let mut command = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--era" => era = args.next().ok_or("--era needs a version")?,
            "--url" => url = Some(args.next().ok_or("--url needs a URL")?),
            "--probe" => probe = true,
            "--apps" => with_apps = true,
            "--" => {
                command.extend(args.by_ref());
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if era != MODERN && era != LEGACY {
        return Err(format!("--era must be {MODERN} or {LEGACY}, not {era}"));
    }
    let target = match (url, command.is_empty()) {
        (Some(url), true) => Target::Url(url),
        (None, false) => Target::Command(command),
        _ => return Err("give exactly one of --url URL or -- COMMAND ARGS...".into()),
    };
    Ok((target, era, probe, with_apps))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (target, era, probe, with_apps) = match parse_args() {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!(
                "{message}\nusage: interop-client [--era {MODERN}|{LEGACY}] [--probe] [--apps] (--url URL | -- COMMAND ARGS...)"
            );
            return ExitCode::from(2);
        }
    };
    // With OTEL_EXPORTER_OTLP_ENDPOINT set, every request's span is exported and its trace
    // context travels in `_meta` (`cargo xtask interop`'s OpenTelemetry cells).
    let otel = mcp_examples::cli::observe();
    let code = drive(target, era, probe, with_apps).await;
    if let Some(otel) = otel {
        otel.shutdown().await;
    }
    code
}

async fn drive(target: Target, era: String, probe: bool, with_apps: bool) -> ExitCode {
    let script = Shared::default();
    let client = match connect(&target, &era, probe, with_apps, &script).await {
        Ok(client) => client,
        Err(e) => {
            println!("FAIL  connect: {e}");
            return ExitCode::FAILURE;
        }
    };
    let negotiated = client.protocol_version();
    if negotiated.as_deref() != Some(era.as_str()) {
        println!("FAIL  negotiated version: got {negotiated:?}, want {era}");
        client.close().await;
        return ExitCode::FAILURE;
    }
    let mut failures = 0;
    for (index, name) in FLOWS.iter().enumerate() {
        let outcome =
            tokio::time::timeout(Duration::from_secs(60), flow(index, &client, &script, &era))
                .await
                .unwrap_or_else(|_| Err("timed out after 60 s".into()));
        match outcome {
            Ok(()) => println!("ok    {name}"),
            Err(failure) => {
                failures += 1;
                println!("FAIL  {name}: {failure}");
            }
        }
    }
    let mut total = FLOWS.len();
    if with_apps {
        total += 1;
        let outcome = tokio::time::timeout(Duration::from_secs(60), apps(&client))
            .await
            .unwrap_or_else(|_| Err("timed out after 60 s".into()));
        match outcome {
            Ok(()) => println!("ok    {APPS_FLOW}"),
            Err(failure) => {
                failures += 1;
                println!("FAIL  {APPS_FLOW}: {failure}");
            }
        }
    }
    client.close().await;
    println!(
        "rust client, era {era}: {} passed, {failures} failed",
        total - failures
    );
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
