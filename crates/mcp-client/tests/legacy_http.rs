//! The client over HTTP against the answers of the servers most people run: the SDK lines
//! before 2026-07-28 (the TypeScript SDK v1 and the Python SDK 1.x in their stateful modes), a
//! 2024-11-05 SSE-only endpoint, a proxy's error page. A hand-written HTTP/1.1 server answers
//! each request as the test says, and records what it saw.
//!
//! - The `server/discover` probe: each row names an answer and what the client must end up
//!   with (a 2026-07-28 connection, a 2025-11-25 session, or the server's refusal), and the
//!   methods the server saw, in order.
//! - A lost session said with 400 (the TypeScript SDK v1's README) is started again, as a 404.
//! - A `307` to the same origin is followed (Python SDK 1.x: `/mcp/` to `/mcp`); one to another
//!   origin is not, and says why.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, ClientError, Mode};
use mcp_transport_http::HttpTransport;
use mcp_types::version::Era;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One canned HTTP answer: status line, content type (empty for none), body; `{id}` in the
/// body is replaced by the request's id.
#[derive(Clone, Copy)]
struct Answer {
    status: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const fn json(status: &'static str, body: &'static str) -> Answer {
    Answer {
        status,
        content_type: "application/json",
        body,
    }
}

const fn bare(status: &'static str) -> Answer {
    Answer {
        status,
        content_type: "",
        body: "",
    }
}

const DISCOVERED: Answer = json(
    "200 OK",
    r#"{"jsonrpc":"2.0","id":{id},"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}}"#,
);
const INITIALIZED: Answer = json(
    "200 OK",
    r#"{"jsonrpc":"2.0","id":{id},"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}"#,
);
const TOOLS: Answer = json(
    "200 OK",
    r#"{"jsonrpc":"2.0","id":{id},"result":{"tools":[]}}"#,
);
/// What a stateful TypeScript SDK v1 server (its README's shape) answers a request without a
/// session it knows: the probe, or any request once it restarted.
const TS_V1_NO_SESSION: Answer = json(
    "400 Bad Request",
    r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
);
/// What a stateful Python SDK 1.x server answers the probe.
const PY_V1_NO_SESSION: Answer = json(
    "400 Bad Request",
    r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: Missing session ID"}}"#,
);

/// One request the fake server saw.
#[derive(Debug, Clone)]
struct Seen {
    verb: String,
    path: String,
    method: String,
    session: Option<String>,
}

/// Decides the answer to a request (and the extra header lines to send with it), given what the
/// server saw before it.
type Handler = Arc<dyn Fn(&Seen, &[Seen]) -> (Answer, String) + Send + Sync>;

/// A fake server on 127.0.0.1: its URL base (`http://127.0.0.1:PORT`) and what it saw.
struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    async fn start(handler: Handler) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn(serve(listener, handler, seen.clone()));
        Fake { base, seen, task }
    }

    fn methods(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.verb == "POST")
            .map(|s| s.method.clone())
            .collect()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one HTTP/1.1 request; `None` at end of stream.
async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(Seen, Value)> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut words = line.split(' ');
    let verb = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let (mut length, mut session) = (0usize, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(value.trim().to_owned());
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let method = body["method"].as_str().unwrap_or("").to_owned();
    let seen = Seen {
        verb,
        path,
        method,
        session,
    };
    Some((seen, body))
}

async fn serve(listener: TcpListener, handler: Handler, seen: Arc<Mutex<Vec<Seen>>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let (handler, seen) = (handler.clone(), seen.clone());
        tokio::spawn(async move {
            let mut stream = BufReader::new(stream);
            while let Some((request, body)) = read_request(&mut stream).await {
                let (answer, extra) = if request.verb == "POST" {
                    let mut seen = seen.lock().unwrap();
                    let answer = handler(&request, &seen);
                    seen.push(request);
                    answer
                } else {
                    // No GET stream; a DELETE of the session is accepted.
                    seen.lock().unwrap().push(request.clone());
                    let status = if request.verb == "DELETE" {
                        "200 OK"
                    } else {
                        "405 Method Not Allowed"
                    };
                    (bare(status), String::new())
                };
                let body = answer.body.replace("{id}", &body["id"].to_string());
                let content_type = if answer.content_type.is_empty() {
                    String::new()
                } else {
                    format!("content-type: {}\r\n", answer.content_type)
                };
                let head = format!(
                    "HTTP/1.1 {}\r\n{content_type}{extra}content-length: {}\r\n\r\n",
                    answer.status,
                    body.len()
                );
                let out = stream.get_mut();
                let _ = out.write_all(head.as_bytes()).await;
                let _ = out.write_all(body.as_bytes()).await;
            }
        });
    }
}

/// A 2025-11-25 server: `initialize` mints session `s<N>` (N counting initializes), and the
/// other requests answer `other`. The probe (or any request before a session) answers `probe`,
/// and its second time `again`.
fn legacy_server(probe: [Answer; 2]) -> Handler {
    Arc::new(move |request, before| {
        let initializes = before.iter().filter(|s| s.method == "initialize").count();
        match request.method.as_str() {
            "initialize" => (
                INITIALIZED,
                format!("mcp-session-id: s{}\r\n", initializes + 1),
            ),
            m if m.starts_with("notifications/") => (bare("202 Accepted"), String::new()),
            "tools/list" if request.session.is_some() => (TOOLS, String::new()),
            _ => {
                let probes = before.iter().filter(|s| s.method == request.method).count();
                (probe[probes.min(1)], String::new())
            }
        }
    })
}

/// What the client ends up with.
#[derive(Debug, PartialEq)]
enum Outcome {
    Modern,
    Legacy,
    /// The connection failed with the server's JSON-RPC error of this code.
    Refused(i64),
}

struct Case {
    name: &'static str,
    /// The answers to the first and (if the client probes again) second probe.
    probes: [Answer; 2],
    outcome: Outcome,
    /// The methods the server saw, in order.
    seen: &'static [&'static str],
}

const LEGACY_SEEN: &[&str] = &["server/discover", "initialize", "notifications/initialized"];

fn legacy(name: &'static str, answer: Answer) -> Case {
    Case {
        name,
        probes: [answer, answer],
        outcome: Outcome::Legacy,
        seen: LEGACY_SEEN,
    }
}

fn cases() -> Vec<Case> {
    vec![
        legacy(
            "TypeScript SDK v1: 400, JSON-RPC -32000, id null",
            TS_V1_NO_SESSION,
        ),
        legacy(
            "Python SDK 1.x: 400, JSON-RPC -32600, id \"server-error\"",
            PY_V1_NO_SESSION,
        ),
        legacy(
            "a stateless legacy server: 200, -32601 for our id",
            json(
                "200 OK",
                r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32601,"message":"Method not found"}}"#,
            ),
        ),
        legacy(
            "404 with a JSON-RPC -32601, id null",
            json(
                "404 Not Found",
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}"#,
            ),
        ),
        legacy("400 with no body", bare("400 Bad Request")),
        legacy("404 with no body", bare("404 Not Found")),
        legacy(
            "405: a 2024-11-05 SSE-only endpoint refuses POST",
            bare("405 Method Not Allowed"),
        ),
        legacy(
            "400 with a text body",
            Answer {
                status: "400 Bad Request",
                content_type: "text/plain",
                body: "Bad Request: Mcp-Session-Id header is required",
            },
        ),
        legacy(
            "400 with an HTML page",
            Answer {
                status: "400 Bad Request",
                content_type: "text/html",
                body: "<html><body><h1>400 Bad Request</h1></body></html>",
            },
        ),
        legacy(
            "406 with a JSON-RPC error, id null",
            json(
                "406 Not Acceptable",
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Acceptable: Client must accept text/event-stream"}}"#,
            ),
        ),
        Case {
            name: "a modern server",
            probes: [DISCOVERED, DISCOVERED],
            outcome: Outcome::Modern,
            seen: &["server/discover"],
        },
        Case {
            name: "-32022 naming a version we speak: probe again with it",
            probes: [
                json(
                    "400 Bad Request",
                    r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}"#,
                ),
                DISCOVERED,
            ],
            outcome: Outcome::Modern,
            seen: &["server/discover", "server/discover"],
        },
        Case {
            name: "-32020: a modern server's refusal is not a reason to fall back",
            probes: [
                json(
                    "400 Bad Request",
                    r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32020,"message":"Header mismatch"}}"#,
                ),
                DISCOVERED,
            ],
            outcome: Outcome::Refused(-32020),
            seen: &["server/discover"],
        },
        Case {
            name: "-32021 with id null: still a modern refusal",
            probes: [
                json(
                    "400 Bad Request",
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32021,"message":"Missing required client capability"}}"#,
                ),
                DISCOVERED,
            ],
            outcome: Outcome::Refused(-32021),
            seen: &["server/discover"],
        },
    ]
}

async fn connect(url: &str, mode: Mode) -> Result<Client, ClientError> {
    tokio::time::timeout(
        Duration::from_secs(20),
        Client::builder()
            .mode(mode)
            .connect(HttpTransport::new(url).unwrap()),
    )
    .await
    .expect("connecting hung")
}

#[tokio::test]
async fn every_answer_to_the_probe_leads_where_the_revision_says() {
    let mut failures = Vec::new();
    for case in cases() {
        let fake = Fake::start(legacy_server(case.probes)).await;
        let client = connect(&format!("{}/mcp", fake.base), Mode::Auto).await;
        let outcome = match &client {
            Ok(c) if c.era() == Some(Era::Modern) => Outcome::Modern,
            Ok(c) if c.era() == Some(Era::Legacy) => {
                assert_eq!(
                    c.protocol_version().as_deref(),
                    Some("2025-11-25"),
                    "{}",
                    case.name
                );
                Outcome::Legacy
            }
            Ok(_) => panic!("{}: connected without an era", case.name),
            Err(ClientError::Server(e)) => Outcome::Refused(e.code.0),
            Err(e) => panic!("{}: failed with {e:?}", case.name),
        };
        if let Ok(client) = client {
            client.close().await;
        }
        if outcome != case.outcome {
            failures.push(format!(
                "{}: got {outcome:?}, want {:?}",
                case.name, case.outcome
            ));
        }
        let seen = fake.methods();
        if seen != case.seen {
            failures.push(format!(
                "{}: the server saw {seen:?}, want {:?}",
                case.name, case.seen
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn a_legacy_refusal_of_a_request_is_the_servers_error_not_the_transports() {
    // Pinned to 2026-07-28 against a 2025-11-25 server, a tools/list carries no session: the
    // server's JSON-RPC error (id null) reaches the caller with its code and message.
    let fake = Fake::start(legacy_server([TS_V1_NO_SESSION; 2])).await;
    let client = connect(
        &format!("{}/mcp", fake.base),
        Mode::Pinned("2026-07-28".into()),
    )
    .await
    .unwrap();
    let error = client.list_tools(None).await.unwrap_err();
    let ClientError::Server(e) = error else {
        panic!("not the server's error: {error:?}");
    };
    assert_eq!(e.code.0, -32000);
    assert_eq!(e.message, "Bad Request: No valid session ID provided");
}

#[tokio::test]
async fn a_session_lost_with_a_400_is_started_again() {
    // The TypeScript SDK v1's README server, restarted: every request of the old session gets
    // 400 "No valid session ID provided" (not 404). The client starts a new session and sends
    // the list again in it.
    let restarted = Arc::new(Mutex::new(false));
    let flag = restarted.clone();
    let inner = legacy_server([TS_V1_NO_SESSION; 2]);
    let fake = Fake::start(Arc::new(move |request, before| {
        if *flag.lock().unwrap() && request.session.as_deref() == Some("s1") {
            return (TS_V1_NO_SESSION, String::new());
        }
        inner(request, before)
    }))
    .await;
    let client = connect(&format!("{}/mcp", fake.base), Mode::Auto)
        .await
        .unwrap();
    assert!(client.list_tools(None).await.is_ok());
    *restarted.lock().unwrap() = true;
    let listed = client.list_tools(None).await;
    assert!(listed.is_ok(), "{listed:?}");
    let seen = fake.seen.lock().unwrap().clone();
    let posts: Vec<(String, Option<String>)> = seen
        .iter()
        .filter(|s| s.verb == "POST")
        .map(|s| (s.method.clone(), s.session.clone()))
        .collect();
    let s = |m: &str, session: Option<&str>| (m.to_owned(), session.map(str::to_owned));
    assert_eq!(
        posts,
        vec![
            s("server/discover", None),
            s("initialize", None),
            s("notifications/initialized", Some("s1")),
            s("tools/list", Some("s1")),
            s("tools/list", Some("s1")),
            s("initialize", None),
            s("notifications/initialized", Some("s2")),
            s("tools/list", Some("s2")),
        ]
    );
    client.close().await;
}

#[tokio::test]
async fn a_400_that_is_not_about_the_session_starts_no_new_one() {
    let fake = Fake::start(Arc::new(|request, before| {
        if request.method == "tools/call" {
            let refusal = json(
                "400 Bad Request",
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid arguments for tool"}}"#,
            );
            return (refusal, String::new());
        }
        legacy_server([TS_V1_NO_SESSION; 2])(request, before)
    }))
    .await;
    let client = connect(&format!("{}/mcp", fake.base), Mode::Auto)
        .await
        .unwrap();
    let error = client
        .call_tool("add", serde_json::json!({"a": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Server(e) if e.code.0 == -32602 && e.message == "Invalid arguments for tool"),
        "{error:?}"
    );
    let initializes = fake.methods().iter().filter(|m| *m == "initialize").count();
    assert_eq!(initializes, 1);
}

#[tokio::test]
async fn a_redirect_to_the_same_origin_is_followed_and_to_another_is_not() {
    // Python SDK 1.x: POST /mcp/ answers 307 with Location /mcp; the endpoint is /mcp.
    let inner = legacy_server([PY_V1_NO_SESSION; 2]);
    let fake = Fake::start(Arc::new(move |request, before| {
        if request.path == "/mcp/" {
            return (
                bare("307 Temporary Redirect"),
                "location: /mcp\r\n".to_owned(),
            );
        }
        inner(request, before)
    }))
    .await;
    let client = connect(&format!("{}/mcp/", fake.base), Mode::Auto)
        .await
        .unwrap();
    assert_eq!(client.era(), Some(Era::Legacy));
    assert!(client.list_tools(None).await.is_ok());
    let paths: Vec<String> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.verb == "POST")
        .map(|s| format!("{} {}", s.path, s.method))
        .collect();
    assert_eq!(
        paths[..4],
        [
            "/mcp/ server/discover",
            "/mcp server/discover",
            "/mcp/ initialize",
            "/mcp initialize"
        ]
    );
    client.close().await;

    // To another origin (another port): not followed, and the error says why.
    let elsewhere = Fake::start(legacy_server([PY_V1_NO_SESSION; 2])).await;
    let location = format!("location: {}/mcp\r\n", elsewhere.base);
    let redirecting = Fake::start(Arc::new(move |_, _| {
        (bare("308 Permanent Redirect"), location.clone())
    }))
    .await;
    let Err(error) = connect(&format!("{}/mcp", redirecting.base), Mode::Auto).await else {
        panic!("a redirect to another origin was followed");
    };
    let text = error.to_string();
    assert!(
        text.contains("HTTP 308 Permanent Redirect: a redirect to another origin")
            && text.contains(&elsewhere.base),
        "{text}"
    );
    assert!(elsewhere.methods().is_empty());
}
