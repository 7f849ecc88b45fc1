//! A hostile server puts terminal escapes (OSC 52 clipboard writes, window titles, screen
//! clears, C1 controls, bidirectional overrides, line separators) in every string it can.
//! None of it reaches `mcp-term`'s stdout or stderr, on every path its text takes there:
//! errors, task failures, HTTP bodies, result blocks, round traces and pending reasons. And a
//! URL it asks to open is read as a browser reads it, and never opened without a person.

mod out;

use out::Out;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

mod fake;

use fake::{Answer, Fake, one_tool, path_with, recording_opener, url_consent};

/// Writes "aGk=" to the clipboard, retitles the window, clears the screen.
const ESC: &str = "\u{1b}]52;c;aGk=\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2J";
/// The same in C1 form, a right-to-left override and a line separator.
const C1: &str = "\u{9d}0;pwned\u{9c}\u{9b}2J\u{202e}\u{2028}";

impl Out {
    /// Nothing a terminal would act on, in either stream.
    fn assert_clean(&self) {
        for (name, text) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let bad: Vec<char> = text
                .chars()
                .filter(|&c| {
                    (c.is_control() && c != '\n')
                        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
                })
                .collect();
            assert!(bad.is_empty(), "{name} holds {bad:?}: {text:?}");
        }
    }
}

fn term(args: &[&str], url: &str) -> Out {
    term_with(args, url, &[])
}

fn term_with(args: &[&str], url: &str, env: &[(&str, &str)]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-term"))
        .args(args)
        .args(["--era", "2026-07-28", "--timeout", "20", url])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("mcp-term runs");
    Out::from(out)
}

fn method(request: &Value) -> &str {
    request["method"].as_str().unwrap_or("")
}

#[test]
fn a_servers_error_message_reaches_stderr_without_its_escapes() {
    let server = Fake::start(|request| match method(request) {
        "tools/list" => one_tool("t"),
        _ => Answer::Error(json!({"code": -32000, "message": format!("{ESC}done{C1}\nfake line")})),
    });
    let out = term(&["call", "t"], &server.url);
    out.assert_clean();
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "mcp-term: the server answered with error -32000: done fake line\n\
         {\"error\":{\"code\":5,\"kind\":\"protocol\",\"message\":\"the server answered with error -32000: done fake line\"}}\n"
    );
}

#[test]
fn a_prompt_message_role_with_escapes_is_refused_without_them() {
    let server = Fake::start(|request| match method(request) {
        "prompts/list" => {
            Answer::Result(json!({"resultType": "complete", "prompts": [{"name": "p"}]}))
        }
        _ => Answer::Result(json!({"resultType": "complete", "messages": [
            {"role": format!("{ESC}user{C1}"), "content": {"type": "text", "text": "hi"}}]})),
    });
    let out = term(&["prompt", "p"], &server.url);
    out.assert_clean();
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    let message = out.error()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("unknown variant `user`, expected `user` or `assistant`"),
        "{message}"
    );
    assert_eq!(
        out.stderr.lines().next(),
        Some(&*format!("mcp-term: {message}"))
    );
}

#[test]
fn content_types_and_uris_of_a_result_are_printed_without_escapes() {
    let server = Fake::start(|request| match method(request) {
        "tools/list" => one_tool("t"),
        _ => Answer::Result(json!({"resultType": "complete", "content": [
            {"type": "image", "data": "AAAA", "mimeType": format!("image/png{ESC}{C1}")},
            {"type": "audio", "data": "AA", "mimeType": format!("{ESC}audio/wav\nfake line")},
            {"type": "resource_link", "uri": format!("file:///a{ESC}"), "name": "a"},
            {"type": "resource", "resource": {"uri": format!("file:///b{C1}"), "blob": "AA"}},
            {"type": "text", "text": format!("text{ESC}\nsecond{C1} line")}]})),
    });
    let out = term(&["call", "t"], &server.url);
    out.assert_clean();
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            "[image image/png, 4 base64 characters]\n\
             [audio audio/wav fake line, 2 base64 characters]\n\
             link: file:///a\n\
             [embedded resource file:///b]\n\
             text\nsecond line\n"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn a_binary_resources_type_and_uri_are_printed_without_escapes() {
    let server = Fake::start(|_| {
        Answer::Result(json!({"resultType": "complete", "contents": [
            {"uri": format!("file:///x{ESC}"), "mimeType": format!("{C1}application/zip{ESC}"), "blob": "AAAA"}]}))
    });
    let out = term(&["read", "file:///x"], &server.url);
    out.assert_clean();
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            "[binary application/zip from file:///x; use --out FILE]\n"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn round_keys_and_methods_are_traced_without_escapes() {
    let server = Fake::start(|request| match method(request) {
        "tools/list" => one_tool("t"),
        _ => Answer::Result(json!({"resultType": "input_required", "inputRequests": {
            format!("k{ESC}"): {"method": format!("x/{C1}evil"), "params": {}}}})),
    });
    let out = term(&["call", "t", "--trace-rounds"], &server.url);
    out.assert_clean();
    assert_eq!(out.code, 11, "{}", out.stderr);
    let mut lines = out.stderr.lines();
    assert_eq!(
        lines.next(),
        Some("round 1: keys [k] methods [x/evil] no state")
    );
    assert_eq!(lines.next(), Some("mcp-term: k: Method not found"));
}

#[test]
fn a_pending_reason_names_the_key_without_escapes_and_the_file_keeps_it() {
    let key = format!("confirm{ESC}{C1}");
    let asked = key.clone();
    let server = Fake::start(move |request| match method(request) {
        "tools/list" => one_tool("t"),
        _ => Answer::Result(json!({"resultType": "input_required", "inputRequests": {
            asked.clone(): {"method": "elicitation/create", "params": {"message": "Sure?",
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}}})),
    });
    let out = term(&["call", "t", "--elicit", "fail"], &server.url);
    out.assert_clean();
    assert_eq!(out.code, 10, "{}", out.stderr);
    assert_eq!(
        out.stderr.lines().next(),
        Some(
            "mcp-term: input required: confirm: no answer for required field(s) ok (save the JSON above and finish with: mcp-term resume FILE --answers ANSWERS.json)"
        )
    );
    // The pending file is data for `resume`: the key is kept exactly, escaped as JSON.
    let pending: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(pending["unanswered"][0], Value::String(key));
    assert!(
        out.stdout
            .contains(r#""confirm\u001b]52;c;aGk=\u0007\u001b]0;pwned\u0007\u001b[2J\u009d0;pwned\u009c\u009b2J\u202e\u2028""#),
        "{}",
        out.stdout
    );
}

#[test]
fn a_failed_tasks_messages_are_printed_without_escapes() {
    let server = Fake::start(|request| {
        let task = json!({"taskId": "t1", "createdAt": "2026-09-01T12:00:00Z",
            "lastUpdatedAt": "2026-09-01T12:00:00Z", "ttlMs": 60000, "pollIntervalMs": 50});
        let mut task = task.as_object().unwrap().clone();
        match method(request) {
            "tools/list" => one_tool("t"),
            "tools/call" => {
                task.insert("resultType".into(), json!("task"));
                task.insert("status".into(), json!("working"));
                Answer::Result(Value::Object(task))
            }
            _ => {
                task.insert("resultType".into(), json!("complete"));
                task.insert("status".into(), json!("failed"));
                task.insert("statusMessage".into(), json!(format!("{ESC}it broke{C1}")));
                task.insert(
                    "error".into(),
                    json!({"code": -32603, "message": format!("{C1}disk full{ESC}")}),
                );
                Answer::Result(Value::Object(task))
            }
        }
    });
    let out = term(&["call", "t"], &server.url);
    out.assert_clean();
    assert_eq!(out.code, 5, "{}", out.stderr);
    let mut lines = out.stderr.lines();
    assert_eq!(lines.next(), Some("task failed: it broke"));
    assert_eq!(
        lines.next(),
        Some("mcp-term: the server answered with error -32603: disk full")
    );
}

/// Review W18: a task whose TTL is unlimited (`null`) and that is `working` forever is followed for
/// `--task-wait` seconds, then cancelled, and `mcp-term` fails with a timeout. Before, it
/// polled forever.
#[test]
fn a_task_working_forever_is_cancelled_after_the_task_wait() {
    let methods = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = methods.clone();
    let server = Fake::start(move |request| {
        seen.lock().unwrap().push(method(request).to_owned());
        let task = json!({"taskId": "t1", "createdAt": "2026-09-01T12:00:00Z",
            "lastUpdatedAt": "2026-09-01T12:00:00Z", "ttlMs": null,
            "pollIntervalMs": 100, "status": "working"});
        let mut task = task.as_object().unwrap().clone();
        match method(request) {
            "tools/list" => one_tool("t"),
            "tools/call" => {
                task.insert("resultType".into(), json!("task"));
                Answer::Result(Value::Object(task))
            }
            "tasks/cancel" => {
                task.insert("status".into(), json!("cancelled"));
                Answer::Result(Value::Object(task))
            }
            _ => {
                task.insert("resultType".into(), json!("complete"));
                Answer::Result(Value::Object(task))
            }
        }
    });
    let started = std::time::Instant::now();
    let out = term(&["call", "t", "--task-wait", "1"], &server.url);
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(out.code, 4, "{}", out.stderr);
    let error = out.error();
    assert_eq!(error["error"]["kind"], "timeout", "{}", out.stderr);
    assert_eq!(
        error["error"]["message"],
        "task 't1' had not ended after 1 s, so it was cancelled (--task-wait, or the task's TTL when shorter)"
    );
    let methods = methods.lock().unwrap();
    assert!(
        methods.iter().filter(|m| *m == "tasks/get").count() >= 2,
        "{methods:?}"
    );
    assert_eq!(
        methods.last().map(String::as_str),
        Some("tasks/cancel"),
        "{methods:?}"
    );
}

#[test]
fn an_http_error_body_is_quoted_without_escapes() {
    let server = Fake::start(|_| {
        Answer::Raw(
            500,
            "text/html",
            format!("<h1>{ESC}Oops{C1}</h1>\n<p>later</p>"),
        )
    });
    let out = term(&["tools"], &server.url);
    out.assert_clean();
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert_eq!(
        out.error()["error"]["message"],
        "transport error: HTTP 500 Internal Server Error: <h1>Oops</h1> <p>later</p>"
    );
}

#[test]
fn json_output_keeps_the_data_and_escapes_what_a_terminal_acts_on() {
    let server = Fake::start(|request| match method(request) {
        "tools/list" => one_tool("t"),
        _ => Answer::Result(json!({"resultType": "complete", "content": [
            {"type": "text", "text": format!("a{C1}b\u{7f}")}]})),
    });
    let out = term(&["call", "t", "--format", "json"], &server.url);
    out.assert_clean();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains(r#""text": "a\u009d0;pwned\u009c\u009b2J\u202e\u2028b\u007f""#),
        "{}",
        out.stdout
    );
    let parsed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        parsed["result"]["content"][0]["text"],
        Value::String(format!("a{C1}b\u{7f}"))
    );
    let human = term(&["call", "t"], &server.url);
    human.assert_clean();
    assert_eq!(human.stdout, "ab\n");
}

fn answers_file(name: &str, contents: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-term-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn a_url_accepted_in_an_answers_file_is_never_opened() {
    let server = Fake::start(url_consent("https://evil.example\\@bank.example/login"));
    let opener = recording_opener("answers");
    let accept = answers_file("url-accept.json", r#"{"_url": "accept"}"#);
    let out = term_with(
        &[
            "call",
            "pay",
            "--open",
            "--answers",
            accept.to_str().unwrap(),
        ],
        &server.url,
        &[("PATH", &path_with(&opener))],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "the person answered accept\n"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr,
        "  open this URL yourself: https://evil.example/@bank.example/login\n  \
         (--open opens only what a person accepted on the terminal, not an answer from --answers)\n"
    );
    assert!(!opener.join("opened.txt").exists(), "nothing was opened");
}

#[test]
fn a_url_the_rules_refuse_is_declined_whoever_answers() {
    let accept = answers_file("url-accept-refused.json", r#"{"_url": "accept"}"#);
    for (url, why) in [
        (
            "https://bank.example@evil.example/login",
            "it has a user name or password before the host (user@host), a classic disguise",
        ),
        (
            "http://bank.example/login",
            "it is plain http to bank.example, which anyone on the network can read or change; only https (or http to this machine) is opened",
        ),
        (
            "file:///etc/passwd",
            "its scheme is file:, and only https (or http to this machine) is opened",
        ),
    ] {
        let server = Fake::start(url_consent(url));
        for args in [
            &["call", "pay", "--answers", accept.to_str().unwrap()][..],
            &["call", "pay"],
        ] {
            let out = term(args, &server.url);
            assert_eq!(
                (out.code, out.stdout.as_str()),
                (0, "the person answered decline\n"),
                "{url}: {}",
                out.stderr
            );
            assert_eq!(
                out.stderr,
                format!("  declined a URL request ({why}): {url}\n")
            );
        }
    }
}
