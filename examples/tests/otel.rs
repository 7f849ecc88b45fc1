//! OpenTelemetry end to end (issue #32): an OTLP/HTTP receiver on loopback, decoding what it
//! receives with the protocol's own protobuf definitions, gets the spans and metrics of real
//! flows: this test's client (its own service, `test-client`) against example servers in
//! their own processes (`OTEL_EXPORTER_OTLP_ENDPOINT` set), over HTTP and stdio, in both eras.
//! It asserts the semantic conventions' names, kinds and attributes, and that the trace
//! crosses the process boundary through `_meta`: a three-round resolver flow, a task with its
//! polls, a legacy question asked mid-call and an error are each one trace.
//!
//! `MCP_WRITE_WATERFALL=1` also draws the resolver flow's spans as
//! `docs/observability/waterfall.svg`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcp::ClientBuilderExt;
use mcp::client::{Client, Mode};
use mcp::types::elicitation::{ElicitRequestParams, ElicitResult, ElicitValue};
use mcp_examples::otlp::{
    CLIENT, INTERNAL, Received, SERVER, STATUS_ERROR, Span, metrics, receiver, spans,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn example(name: &str) -> PathBuf {
    let mut dir = std::env::current_exe().expect("the test binary has a path");
    dir.pop();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join("examples").join(name);
    assert!(path.exists(), "{} is not built", path.display());
    path
}

/// An example server over HTTP exporting to `otlp` as `service`; its URL.
async fn http_server(name: &str, otlp: &str, service: &str) -> (Child, String) {
    let mut child = Command::new(example(name))
        .args(["--http", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
        .env("OTEL_SERVICE_NAME", service)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().expect("its address");
    let url = line.strip_prefix("serving MCP at ").unwrap().to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// Stops a server the way an operator does (SIGTERM: it drains, flushes its telemetry and
/// exits), by its own PID.
async fn stop(mut child: Child) {
    let pid = child.id().expect("running").to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the server exits after SIGTERM")
        .unwrap();
}

/// Answers the interop server's three questions and the build's deployment question.
fn answers(_info: mcp::client::RequestInfo, params: ElicitRequestParams) -> ElicitResult {
    let message = params.message().to_owned();
    let (key, value) = if message == "Your name?" {
        ("name", ElicitValue::String("Ada".into()))
    } else if message.ends_with("your favourite colour?") {
        ("color", ElicitValue::String("teal".into()))
    } else if message.starts_with("How big") {
        ("size", ElicitValue::Number(3.into()))
    } else if message.starts_with("Which region") {
        ("region", ElicitValue::String("eu".into()))
    } else {
        ("deploy", ElicitValue::Bool(true))
    };
    ElicitResult::accept([(key.to_owned(), value)].into_iter().collect())
}

fn client(mode: Mode) -> mcp::client::ClientBuilder {
    Client::builder()
        .mode(mode)
        .elicitation(|info, params| async move { Ok(answers(info, params)) })
}

fn result_text(result: &mcp::types::tools::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_per_flow_across_processes_with_the_conventions_names() {
    let received = Received::default();
    let otlp = receiver(received.clone()).await;
    let otel = mcp::otel::Otel::to_endpoint(&otlp, "test-client").unwrap();
    otel.set_global_subscriber().unwrap();

    // HTTP, 2026-07-28: the three-round resolver flow, and an error.
    let (interop, url) = http_server("interop-server", &otlp, "interop-http").await;
    let modern = client(Mode::Pinned("2026-07-28".into()))
        .connect_http(&url)
        .await
        .unwrap();
    let ordered = modern.call_tool("order", json!({})).await.unwrap();
    assert_eq!(result_text(&ordered), "Ada ordered size 3 in teal.");
    let unknown = modern.call_tool("nope", json!({})).await;
    assert!(unknown.is_err(), "{unknown:?}");
    // Names no tool has, as many and as long as a peer likes (security review X6): none
    // becomes a metric's value, and a span keeps 256 bytes of each.
    let registered: Vec<String> = modern
        .list_tools(None)
        .await
        .unwrap()
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    for n in 0..INVENTED_NAMES {
        let invented = format!("invented-{n}-{}", "x".repeat(4096));
        let refused = modern.call_tool(&invented, json!({})).await;
        assert!(refused.is_err(), "{refused:?}");
    }
    plain_methods(&modern).await;
    modern.close().await;
    // A client that finds the era itself: `server/discover`.
    let probing = client(Mode::Auto).connect_http(&url).await.unwrap();
    probing.close().await;
    // HTTP, 2025-11-25: a question asked mid-call, answered by the client.
    let legacy = client(Mode::Legacy).connect_http(&url).await.unwrap();
    plain_methods(&legacy).await;
    let provisioned = legacy
        .call_tool("provision", json!({"name": "db"}))
        .await
        .unwrap();
    assert_eq!(result_text(&provisioned), "Provisioned 'db' in eu.");
    legacy.close().await;
    stop(interop).await;

    // A task (the builds example), polled to its end.
    let (builds, url) = http_server("builds", &otlp, "builds-http").await;
    let tasks = client(Mode::Pinned("2026-07-28".into()))
        .tasks(true)
        .connect_http(&url)
        .await
        .unwrap();
    let built = tasks
        .call_tool("run_build", json!({"project": "api"}))
        .await
        .unwrap();
    assert!(result_text(&built).contains("deployed"), "{built:?}");
    tasks.close().await;
    stop(builds).await;

    // stdio, 2026-07-28: the same flow through a process this client started.
    let mut command = Command::new(example("interop-server"));
    command
        .arg("--stdio")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
        .env("OTEL_SERVICE_NAME", "interop-stdio");
    let stdio = client(Mode::Pinned("2026-07-28".into()))
        .connect_stdio(command)
        .await
        .unwrap();
    let ordered = stdio.call_tool("order", json!({})).await.unwrap();
    assert_eq!(result_text(&ordered), "Ada ordered size 3 in teal.");
    stdio.close().await;

    otel.flush().await.unwrap();
    // The stdio server flushes when its stdin closes; give it a moment to deliver.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !spans(&received)
        .iter()
        .any(|s| s.service == "interop-stdio")
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans = spans(&received);
    check_resolver_flow(&spans, "interop-http");
    check_resolver_flow(&spans, "interop-stdio");
    check_error(&spans);
    check_legacy_question(&spans);
    check_task(&spans);
    check_every_method(&spans);
    check_metrics(&received, &registered);
    check_invented_names(&spans);
    if std::env::var_os("MCP_WRITE_WATERFALL").is_some() {
        write_waterfall(&spans, "interop-http");
    }
    otel.shutdown().await;
}

/// The methods every server serves without a question, sent one by one.
const PLAIN_METHODS: [&str; 4] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

async fn plain_methods(client: &Client) {
    client.list_tools(None).await.expect("tools/list");
    client.list_prompts(None).await.expect("prompts/list");
    client.list_resources(None).await.expect("resources/list");
    client
        .list_resource_templates(None)
        .await
        .expect("resources/templates/list");
}

/// Every method this test's clients sent, in each era it was sent in: a client span and the
/// server span it parents, both named and filled as the conventions say.
fn check_every_method(spans: &[Span]) {
    let mut sent: Vec<(&str, &str)> = Vec::new();
    for era in ["2026-07-28", "2025-11-25"] {
        sent.extend(PLAIN_METHODS.iter().map(|m| (*m, era)));
        sent.push(("tools/call", era));
    }
    sent.push(("initialize", "2025-11-25"));
    sent.push(("server/discover", ""));
    for (method, era) in sent {
        let served: Vec<&Span> = spans
            .iter()
            .filter(|s| {
                s.service == "interop-http"
                    && s.kind == SERVER
                    && s.attributes.get("mcp.method.name").map(String::as_str) == Some(method)
                    && (era.is_empty()
                        || s.attributes.get("mcp.protocol.version").map(String::as_str)
                            == Some(era))
            })
            .collect();
        assert!(!served.is_empty(), "no server span for {method} at {era}");
        for served in served {
            let client = spans
                .iter()
                .find(|c| c.id == served.parent)
                .unwrap_or_else(|| panic!("{method} at {era}: no parent for {served:#?}"));
            assert_eq!(client.service, "test-client", "{method}");
            assert_eq!(client.kind, CLIENT, "{method}");
            assert_eq!(client.trace, served.trace, "{method}");
            // The same name, unless the server cut a long name of a tool it does not know
            // (the client named its own call in full).
            if served.name.len() == format!("{method} ").len() + 256 {
                assert!(client.name.starts_with(&served.name), "{method}");
            } else {
                assert_eq!(client.name, served.name, "{method}");
            }
            assert!(
                served.name == method || served.name.starts_with(&format!("{method} ")),
                "{method}: named {}",
                served.name
            );
            assert_eq!(client.attributes["mcp.method.name"], method);
            assert_eq!(served.attributes["network.transport"], "tcp", "{method}");
            assert_eq!(
                served.attributes["jsonrpc.request.id"], client.attributes["jsonrpc.request.id"],
                "{method}"
            );
        }
    }
    let piped = of(spans, "interop-stdio", "tools/call order", SERVER);
    assert!(
        piped
            .iter()
            .all(|s| s.attributes["network.transport"] == "pipe"),
        "{piped:#?}"
    );
}

fn of<'a>(spans: &'a [Span], service: &str, name: &str, kind: i32) -> Vec<&'a Span> {
    let mut found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.service == service && s.name == name && s.kind == kind)
        .collect();
    found.sort_by_key(|s| s.start);
    found
}

/// Four requests (three `input_required` rounds and the answer), each a client span under one
/// `mcp.call` span, each answered by a server span whose parent is that client span.
fn check_resolver_flow(spans: &[Span], server: &str) {
    let calls = of(spans, "test-client", "tools/call order", INTERNAL);
    let servers = of(spans, server, "tools/call order", SERVER);
    assert_eq!(servers.len(), 4, "{server}: {servers:#?}");
    let trace = &servers[0].trace;
    let call = calls
        .iter()
        .find(|c| &c.trace == trace)
        .unwrap_or_else(|| panic!("{server}: no client call span in trace {trace}"));
    assert_eq!(call.attributes["gen_ai.tool.name"], "order");
    assert_eq!(call.attributes["mcp.rounds"], "4");
    let clients: Vec<&Span> = of(spans, "test-client", "tools/call order", CLIENT)
        .into_iter()
        .filter(|c| &c.trace == trace)
        .collect();
    assert_eq!(clients.len(), 4, "{server}");
    for (round, (client, served)) in clients.iter().zip(&servers).enumerate() {
        assert_eq!(client.parent, call.id, "a round is a child of the call");
        assert_eq!(
            served.trace, *trace,
            "one trace across the process boundary"
        );
        assert_eq!(
            served.parent, client.id,
            "the server continues the client's span"
        );
        for (key, value) in [
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "order"),
            ("gen_ai.operation.name", "execute_tool"),
            ("mcp.protocol.version", "2026-07-28"),
        ] {
            assert_eq!(
                served.attributes.get(key).map(String::as_str),
                Some(value),
                "{key}"
            );
            assert_eq!(
                client.attributes.get(key).map(String::as_str),
                Some(value),
                "{key}"
            );
        }
        assert_eq!(served.attributes["mcp.round"], (round + 1).to_string());
        let outcome = if round < 3 {
            "input_required"
        } else {
            "complete"
        };
        assert_eq!(served.attributes["mcp.outcome"], outcome);
        assert_eq!(
            served.attributes["jsonrpc.request.id"],
            client.attributes["jsonrpc.request.id"]
        );
    }
}

/// An unknown tool: the server's span records the code but is not a server error (an invalid
/// params is the client's mistake); the client's span is an error.
fn check_error(spans: &[Span]) {
    let served = of(spans, "interop-http", "tools/call nope", SERVER);
    let [served] = served.as_slice() else {
        panic!("{served:#?}")
    };
    assert_eq!(served.attributes["error.type"], "-32602");
    assert_eq!(served.attributes["rpc.response.status_code"], "-32602");
    assert_ne!(served.status, STATUS_ERROR);
    let client = of(spans, "test-client", "tools/call nope", CLIENT);
    let client = client
        .iter()
        .find(|c| c.id == served.parent)
        .expect("its client span");
    assert_eq!(client.status, STATUS_ERROR);
    assert_eq!(client.attributes["error.type"], "-32602");
}

/// 2025-11-25: the server's question mid-call is answered in a client span whose parent is
/// the server's `tools/call` span: the trace goes client → server → client.
fn check_legacy_question(spans: &[Span]) {
    let served = of(spans, "interop-http", "tools/call provision", SERVER);
    let served = served
        .iter()
        .find(|s| s.attributes["mcp.protocol.version"] == "2025-11-25")
        .expect("the legacy call's server span");
    let asked = of(spans, "test-client", "elicitation/create", SERVER);
    let asked = asked
        .iter()
        .find(|a| a.trace == served.trace)
        .expect("the question's span in the call's trace");
    assert_eq!(asked.parent, served.id);
    let client = spans
        .iter()
        .find(|s| s.id == served.parent)
        .expect("the call's client span");
    assert_eq!(client.service, "test-client");
}

/// A task: the call that created it and every poll are one trace, each poll answered by the
/// server in that trace.
fn check_task(spans: &[Span]) {
    let call = of(spans, "test-client", "tools/call run_build", INTERNAL);
    let [call] = call.as_slice() else {
        panic!("{call:#?}")
    };
    let polls: Vec<&Span> = of(spans, "builds-http", "tasks/get", SERVER)
        .into_iter()
        .filter(|s| s.trace == call.trace)
        .collect();
    assert!(!polls.is_empty(), "the polls are in the call's trace");
    let created = of(spans, "builds-http", "tools/call run_build", SERVER);
    assert!(created.iter().any(|s| s.trace == call.trace));
}

/// How many tools that do not exist the test calls by name.
const INVENTED_NAMES: usize = 40;

/// The invented names' spans: each request has its span, with its name cut to 256 bytes.
fn check_invented_names(spans: &[Span]) {
    let invented: Vec<_> = spans
        .iter()
        .filter(|s| {
            s.service == "interop-http"
                && s.kind == SERVER
                && s.attributes
                    .get("gen_ai.tool.name")
                    .is_some_and(|n| n.starts_with("invented-"))
        })
        .collect();
    assert_eq!(invented.len(), INVENTED_NAMES);
    for span in invented {
        let name = &span.attributes["gen_ai.tool.name"];
        assert_eq!(name.len(), 256, "{name:.300}");
        assert_eq!(span.name, format!("tools/call {name}"));
    }
}

fn check_metrics(received: &Received, registered: &[String]) {
    let metrics = metrics(received);
    let server = &metrics["mcp.server.operation.duration"];
    // Every tool name a series carries is a registered tool's, or `_OTHER` for the names
    // nobody registered (security review X6): the 41 unknown names made no series of their own.
    let named: std::collections::BTreeSet<&str> = server
        .iter()
        .filter(|(service, _)| service == "interop-http")
        .filter_map(|(_, point)| point.get("gen_ai.tool.name").map(String::as_str))
        .collect();
    let shown: Vec<String> = named.iter().map(|n| format!("{n:.40}")).collect();
    assert!(named.contains("_OTHER"), "{shown:?}");
    assert!(named.contains("order"), "{shown:?}");
    for name in &named {
        assert!(
            *name == "_OTHER" || registered.iter().any(|r| r == name),
            "a metric labelled with a tool that is not registered: {name:.80}"
        );
    }
    assert!(
        server
            .iter()
            .any(|(service, point)| service == "interop-http"
                && point.get("mcp.method.name").map(String::as_str) == Some("tools/call")
                && point.get("gen_ai.tool.name").map(String::as_str) == Some("order")),
        "{server:#?}"
    );
    assert!(
        server
            .iter()
            .any(|(_, p)| p.get("error.type").map(String::as_str) == Some("-32602"))
    );
    let client = &metrics["mcp.client.operation.duration"];
    assert!(
        client
            .iter()
            .any(|(service, point)| service == "test-client"
                && point.get("mcp.method.name").map(String::as_str) == Some("tools/call"))
    );
    let sessions = &metrics["mcp.server.session.duration"];
    assert!(
        sessions
            .iter()
            .any(|(service, point)| service == "interop-http"
                && point.get("mcp.protocol.version").map(String::as_str) == Some("2025-11-25")
                && point.get("network.transport").map(String::as_str) == Some("tcp")),
        "{sessions:#?}"
    );
    let sessions = &metrics["mcp.client.session.duration"];
    assert!(
        sessions
            .iter()
            .any(|(service, point)| service == "test-client"
                && point.get("mcp.protocol.version").map(String::as_str) == Some("2025-11-25"))
    );
    let rounds = &metrics["mcp.server.request.round"];
    assert!(rounds.iter().any(|(service, _)| service == "interop-http"));
    let tasks = &metrics["mcp.server.tasks"];
    assert!(tasks.iter().any(|(service, point)| service == "builds-http"
        && point.get("mcp.task.status").map(String::as_str) == Some("completed")));
}

/// The resolver flow's spans as a waterfall: one bar per span, indented by depth.
fn write_waterfall(spans: &[Span], server: &str) {
    let first = of(spans, server, "tools/call order", SERVER)[0]
        .trace
        .clone();
    let mut flow: Vec<&Span> = spans.iter().filter(|s| s.trace == first).collect();
    flow.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let begin = flow.iter().map(|s| s.start).min().unwrap();
    let finish = flow.iter().map(|s| s.end).max().unwrap();
    let depth = |span: &Span| {
        let mut depth = 0;
        let mut parent = span.parent.clone();
        while let Some(p) = flow.iter().find(|s| s.id == parent) {
            depth += 1;
            parent = p.parent.clone();
        }
        depth
    };
    let (width, row, label) = (900.0, 26.0, 330.0);
    let scale = (width - label - 20.0) / (finish - begin).max(1) as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" font-family=\"monospace\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"18\" font-weight=\"bold\">One trace: a three-round tools/call, client (blue) and server (orange), {:.1} ms</text>\n",
        (flow.len() as f64 + 2.0) * row,
        (finish - begin) as f64 / 1e6
    );
    for (i, span) in flow.iter().enumerate() {
        let y = (i as f64 + 1.0) * row + 8.0;
        let x = label + (span.start - begin) as f64 * scale;
        let w = ((span.end - span.start) as f64 * scale).max(2.0);
        let colour = if span.service == "test-client" {
            "#4477aa"
        } else {
            "#ee7733"
        };
        let kind = match span.kind {
            SERVER => "server",
            CLIENT => "client",
            _ => "internal",
        };
        svg.push_str(&format!(
            "<text x=\"{}\" y=\"{}\">{} ({kind})</text>\n<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"16\" fill=\"{colour}\"/>\n",
            10 + depth(span) * 12,
            y + 12.0,
            span.name,
            y
        ));
    }
    svg.push_str("</svg>\n");
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/observability/waterfall.svg");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, svg).unwrap();
}
