//! A scripted server over HTTP, for what a hostile server sends and the example servers never
//! would: each POSTed JSON-RPC request goes to a function, and its answer goes back as it is
//! (a result, an error, or any status and body). It serves 2026-07-28 requests, so the tests
//! run `mcp-term` with `--era 2026-07-28`. Each test file uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use serde_json::{Value, json};

/// What the scripted server answers one request with.
pub(crate) enum Answer {
    /// `{"jsonrpc": "2.0", "id": …, "result": …}`.
    Result(Value),
    /// `{"jsonrpc": "2.0", "id": …, "error": …}`.
    Error(Value),
    /// This status, content type and body, whatever the request.
    Raw(u16, &'static str, String),
}

/// The server, listening on a port the system chose; it lives as long as the test process.
pub(crate) struct Fake {
    pub(crate) url: String,
}

type Script = Arc<dyn Fn(&Value) -> Answer + Send + Sync>;

impl Fake {
    pub(crate) fn start(script: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let script: Script = Arc::new(script);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = script.clone();
                std::thread::spawn(move || serve(stream, &script));
            }
        });
        Fake { url }
    }
}

/// One request per connection (`Connection: close`): the head, a `Content-Length` body, the
/// answer.
fn serve(stream: TcpStream, script: &Script) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (status, content_type, text) = if !request_line.starts_with("POST ") {
        (405, "text/plain", String::new())
    } else {
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match request.get("id").cloned() {
            None => (202, "text/plain", String::new()),
            Some(id) => match script(&request) {
                Answer::Result(result) => (
                    200,
                    "application/json",
                    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
                ),
                Answer::Error(error) => (
                    200,
                    "application/json",
                    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string(),
                ),
                Answer::Raw(status, content_type, body) => (status, content_type, body),
            },
        }
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} Scripted\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.flush();
}

/// A tool list of one tool taking any arguments.
pub(crate) fn one_tool(name: &str) -> Answer {
    Answer::Result(json!({"resultType": "complete", "tools": [
        {"name": name, "inputSchema": {"type": "object"}}]}))
}

/// A server whose tool `pay` asks, in a 2026-07-28 round, for consent to open `url` (key
/// `pay`), then answers with the action it received: `the person answered accept`.
pub(crate) fn url_consent(url: &str) -> impl Fn(&Value) -> Answer + Send + Sync + 'static {
    let url = url.to_owned();
    move |request| match request["method"].as_str() {
        Some("tools/list") => one_tool("pay"),
        _ => match request["params"]["inputResponses"]["pay"]["action"].as_str() {
            None => Answer::Result(json!({"resultType": "input_required", "inputRequests": {
                "pay": {"method": "elicitation/create", "params": {"mode": "url",
                    "message": "Sign in to pay.", "url": url, "elicitationId": "e1"}}}})),
            Some(action) => Answer::Result(json!({"resultType": "complete", "content": [
                {"type": "text", "text": format!("the person answered {action}")}]})),
        },
    }
}

/// A directory holding a fake `xdg-open` (and `open`) that writes its arguments, one a line,
/// to `opened.txt` beside it: put it first on `PATH` to see what would have been opened.
pub(crate) fn recording_opener(name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("mcp-term-opener-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(dir.join("opened.txt"));
    for program in ["xdg-open", "open"] {
        let path = dir.join(program);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
                dir.join("opened.txt").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `PATH` with `dir` first.
pub(crate) fn path_with(dir: &std::path::Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}
