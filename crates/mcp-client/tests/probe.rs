//! The `server/discover` probe over HTTP, against every kind of answer a server gives it: a
//! hand-written HTTP/1.1 server answers the probe as the case says, and a 2025-11-25
//! `initialize` as a legacy server does. Each row names what the client must end up with: a
//! 2026-07-28 connection, a 2025-11-25 session, or the server's refusal, and the methods the
//! server saw, in order. The legacy rows are the answers of the servers most people run
//! (the TypeScript SDK v1 and the Python SDK 1.x in their stateful modes, a 2024-11-05 SSE-only
//! endpoint, a proxy's error page).

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

const DISCOVERED: Answer = Answer {
    status: "200 OK",
    content_type: "application/json",
    body: r#"{"jsonrpc":"2.0","id":{id},"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}}"#,
};

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
            Answer {
                status: "400 Bad Request",
                content_type: "application/json",
                body: r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
            },
        ),
        legacy(
            "Python SDK 1.x: 400, JSON-RPC -32600, id \"server-error\"",
            Answer {
                status: "400 Bad Request",
                content_type: "application/json",
                body: r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: Missing session ID"}}"#,
            },
        ),
        legacy(
            "a stateless legacy server: 200, -32601 for our id",
            Answer {
                status: "200 OK",
                content_type: "application/json",
                body: r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32601,"message":"Method not found"}}"#,
            },
        ),
        legacy(
            "404 with a JSON-RPC -32601, id null",
            Answer {
                status: "404 Not Found",
                content_type: "application/json",
                body: r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}"#,
            },
        ),
        legacy(
            "400 with no body",
            Answer {
                status: "400 Bad Request",
                content_type: "",
                body: "",
            },
        ),
        legacy(
            "404 with no body",
            Answer {
                status: "404 Not Found",
                content_type: "",
                body: "",
            },
        ),
        legacy(
            "405: a 2024-11-05 SSE-only endpoint refuses POST",
            Answer {
                status: "405 Method Not Allowed",
                content_type: "",
                body: "",
            },
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
            Answer {
                status: "406 Not Acceptable",
                content_type: "application/json",
                body: r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Acceptable: Client must accept text/event-stream"}}"#,
            },
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
                Answer {
                    status: "400 Bad Request",
                    content_type: "application/json",
                    body: r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}"#,
                },
                DISCOVERED,
            ],
            outcome: Outcome::Modern,
            seen: &["server/discover", "server/discover"],
        },
        Case {
            name: "-32020: a modern server's refusal is not a reason to fall back",
            probes: [
                Answer {
                    status: "400 Bad Request",
                    content_type: "application/json",
                    body: r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32020,"message":"Header mismatch"}}"#,
                },
                DISCOVERED,
            ],
            outcome: Outcome::Refused(-32020),
            seen: &["server/discover"],
        },
        Case {
            name: "-32021 with id null: still a modern refusal",
            probes: [
                Answer {
                    status: "400 Bad Request",
                    content_type: "application/json",
                    body: r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32021,"message":"Missing required client capability"}}"#,
                },
                DISCOVERED,
            ],
            outcome: Outcome::Refused(-32021),
            seen: &["server/discover"],
        },
    ]
}

/// What the fake server saw.
#[derive(Default)]
struct Seen {
    methods: Vec<String>,
    probes: usize,
}

/// Reads one HTTP/1.1 request: method and JSON body (if any). `None` at end of stream.
async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, Option<Value>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let verb = line.split(' ').next()?.to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some((verb, serde_json::from_slice(&body).ok()))
}

async fn write_answer(stream: &mut BufReader<TcpStream>, answer: Answer, id: &Value, extra: &str) {
    let body = answer.body.replace("{id}", &id.to_string());
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

const INITIALIZED: Answer = Answer {
    status: "200 OK",
    content_type: "application/json",
    body: r#"{"jsonrpc":"2.0","id":{id},"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}"#,
};

async fn serve(listener: TcpListener, probes: [Answer; 2], seen: Arc<Mutex<Seen>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let seen = seen.clone();
        tokio::spawn(async move {
            let mut stream = BufReader::new(stream);
            while let Some((verb, body)) = read_request(&mut stream).await {
                let empty = Answer {
                    status: "202 Accepted",
                    content_type: "",
                    body: "",
                };
                if verb != "POST" {
                    // No GET stream, and a DELETE of the session is accepted.
                    let status = if verb == "DELETE" {
                        "200 OK"
                    } else {
                        "405 Method Not Allowed"
                    };
                    let answer = Answer { status, ..empty };
                    write_answer(&mut stream, answer, &Value::Null, "").await;
                    continue;
                }
                let body = body.unwrap_or(Value::Null);
                let method = body["method"].as_str().unwrap_or("").to_owned();
                let id = body["id"].clone();
                let answer = {
                    let mut seen = seen.lock().unwrap();
                    seen.methods.push(method.clone());
                    match method.as_str() {
                        "initialize" => INITIALIZED,
                        m if m.starts_with("notifications/") => empty,
                        // The probe, or (pinned to 2026-07-28) any other request.
                        _ => {
                            seen.probes += 1;
                            probes[(seen.probes - 1).min(1)]
                        }
                    }
                };
                let extra = if method == "initialize" {
                    "mcp-session-id: legacy-session-1\r\n"
                } else {
                    ""
                };
                write_answer(&mut stream, answer, &id, extra).await;
            }
        });
    }
}

async fn run(case: &Case) -> (Result<Client, ClientError>, Vec<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = tokio::spawn(serve(listener, case.probes, seen.clone()));
    let client = tokio::time::timeout(
        Duration::from_secs(20),
        Client::builder()
            .mode(Mode::Auto)
            .connect(HttpTransport::new(&url).unwrap()),
    )
    .await
    .unwrap_or_else(|_| panic!("{}: connecting hung", case.name));
    let methods = seen.lock().unwrap().methods.clone();
    if let Ok(client) = &client {
        client.close().await;
    }
    server.abort();
    (client, methods)
}

#[tokio::test]
async fn every_answer_to_the_probe_leads_where_the_revision_says() {
    let mut failures = Vec::new();
    for case in cases() {
        let (client, methods) = run(&case).await;
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
        if outcome != case.outcome {
            failures.push(format!(
                "{}: got {outcome:?}, want {:?}",
                case.name, case.outcome
            ));
        }
        let seen: Vec<&str> = methods.iter().map(String::as_str).collect();
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
async fn a_legacy_refusal_of_a_later_request_is_the_servers_error_not_the_transports() {
    // After the fallback, a 2025-11-25 server refusing a request with a JSON-RPC error that
    // names no id (TypeScript SDK v1 once it has forgotten the session) reaches the caller as
    // that error, with its code and message.
    let case = legacy(
        "TypeScript SDK v1",
        Answer {
            status: "400 Bad Request",
            content_type: "application/json",
            body: r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
        },
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = tokio::spawn(serve(listener, case.probes, seen.clone()));
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(HttpTransport::new(&url).unwrap())
        .await
        .unwrap();
    // Pinned to 2026-07-28, a tools/list reaches the legacy server without a session.
    let error = client.list_tools(None).await.unwrap_err();
    server.abort();
    let ClientError::Server(e) = error else {
        panic!("not the server's error: {error:?}");
    };
    assert_eq!(e.code.0, -32000);
    assert_eq!(e.message, "Bad Request: No valid session ID provided");
}
