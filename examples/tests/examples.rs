//! Runs the example programs as a user would and checks what they print, and drives the
//! example servers over stdio and HTTP with our client, in separate processes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use mcp::ClientBuilderExt;
use mcp::client::{CallOptions, Client, ClientError, Mode};
use mcp::types::elicitation::{ElicitResult, ElicitValue};
use mcp::types::mrtr::{InputResponse, InputResponses};
use mcp::{Outcome, types::tools::CallToolResult};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// `target/<profile>/examples/<name>`, refused when missing or older than its sources.
pub(crate) fn example(name: &str) -> PathBuf {
    mcp_faults::built::example(name)
}

async fn output_of(name: &str, args: &[&str]) -> String {
    let output = Command::new(example(name))
        .args(args)
        .output()
        .await
        .expect("the example starts");
    assert!(
        output.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn text(result: &CallToolResult) -> String {
    mcp_examples::cli::text(result)
}

fn accept(fields: &[(&str, ElicitValue)]) -> ElicitResult {
    ElicitResult::accept(
        fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

#[tokio::test]
async fn the_readme_demo_prints_the_question_and_the_booking() {
    let out = output_of("demo", &[]).await;
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "book_table(date=2025-12-25, party_size=2)",
            "  ? No tables for 2 on 2025-12-25. Would you like to try another date?",
            "  > yes, 2025-12-27",
            "  = Booked a table for 2 on 2025-12-27.",
            "pay_deposit(booking_id=B-1225)",
            "  ? A 20 EUR deposit confirms your booking.",
            "  Open this link to continue: https://pay.example.com/deposit/B-1225",
            "  = Complete the payment in your browser.",
        ]
    );
}

#[tokio::test]
async fn the_skills_example_lists_then_loads_and_reads_verified_files() {
    let out = output_of("skills", &[]).await;
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        lines[..4],
        [
            "- pdf-processing: Extract text from PDF files, fill their forms and merge them. Use when the user works with PDF documents or forms.",
            "- release-notes: Write release notes from a list of merged changes, grouped by what users notice first. Use when preparing a release.",
            "",
            "loaded skill://pdf-processing/SKILL.md (580 bytes verified)",
        ]
    );
    assert_eq!(lines[4], "# PDF processing");
    let forms = lines
        .iter()
        .position(|l| l.starts_with("skill://pdf-processing/references/FORMS.md (sha256:"))
        .unwrap_or_else(|| panic!("no FORMS.md line in:\n{out}"));
    assert_eq!(lines[forms + 1], "# Filling PDF forms");
}

#[tokio::test]
async fn the_client_examples_reach_the_provisioner() {
    assert_eq!(
        output_of("client", &[]).await,
        "server asks: Which region should the database live in?\nProvisioned 'orders' in eu-west-1.\n"
    );
    assert_eq!(
        output_of("manual_loop", &[]).await,
        "server asks: Which region should the database live in?\nretrying with 1 answer(s)\nProvisioned 'orders' in eu-west-1.\n"
    );
    let resumed = output_of("resume", &[]).await;
    let lines: Vec<&str> = resumed.lines().collect();
    assert_eq!(lines.len(), 3, "{resumed}");
    assert!(lines[0].ends_with("server asks: Which region should the database live in?"));
    assert!(lines[2].ends_with("] Provisioned 'orders' in eu-west-1."));
    let pid = |line: &str| {
        line.split(']')
            .next()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .to_owned()
    };
    assert_ne!(pid(lines[0]), pid(lines[2]), "two processes: {resumed}");
}

/// `cargo run --example client -- https://… --ca ca.pem` against a Provisioner served over TLS
/// in this process, with a certificate from a test CA made here; without `--ca` the same
/// server is refused, and the error names the cause.
#[tokio::test]
async fn the_client_example_reaches_a_provisioner_over_tls() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();

    let config =
        mcp::http::server_config(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    let server = mcp_examples::provisioner::server(mcp::RequestStateSecurity::ephemeral()).unwrap();
    let endpoint = mcp::http::endpoint(server).unwrap();
    tokio::spawn(endpoint.serve_tls_with_shutdown(
        listener,
        "/mcp",
        config,
        std::future::pending(),
    ));
    let ca_path = std::env::temp_dir().join(format!("mcp-test-ca-{}.pem", std::process::id()));
    std::fs::write(&ca_path, ca.pem()).unwrap();
    let out = output_of("client", &[&url, "--ca", ca_path.to_str().unwrap()]).await;
    let refused = Command::new(example("client"))
        .arg(&url)
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_file(&ca_path);
    assert_eq!(
        out,
        "server asks: Which region should the database live in?\nProvisioned 'orders' in eu-west-1.\n"
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("invalid peer certificate: UnknownIssuer"),
        "{stderr}"
    );
}

async fn stdio_client(name: &str, builder: mcp::client::ClientBuilder) -> Client {
    let mut command = Command::new(example(name));
    command.arg("--stdio");
    builder.connect_stdio(command).await.expect("connects")
}

/// As in the seed, an accepted deletion removes the folder: asking again counts 0 files and
/// deletes without a question, in both eras.
#[tokio::test]
async fn files_deletes_so_a_second_call_does_not_ask() {
    for mode in [Mode::Pinned("2026-07-28".into()), Mode::Legacy] {
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = asked.clone();
        let client = stdio_client(
            "files",
            Client::builder()
                .mode(mode.clone())
                .elicitation(move |_info, params| {
                    seen.lock().unwrap().push(params.message().to_owned());
                    async { Ok(accept(&[("ok", ElicitValue::Bool(true))])) }
                }),
        )
        .await;
        for _ in 0..2 {
            let result = client
                .call_tool("delete_folder", json!({"path": "/tmp/project"}))
                .await
                .unwrap();
            assert_eq!(text(&result), "deleted /tmp/project", "{mode:?}");
        }
        assert_eq!(
            *asked.lock().unwrap(),
            ["/tmp/project has 2 file(s). Delete anyway?"],
            "{mode:?}: only the first call asks"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn files_over_stdio_asks_only_for_a_folder_with_files() {
    for (answer, expected) in [
        (
            accept(&[("ok", ElicitValue::Bool(true))]),
            "deleted /tmp/project",
        ),
        (
            accept(&[("ok", ElicitValue::Bool(false))]),
            "kept the folder",
        ),
        (ElicitResult::decline(), "declined: folder not deleted"),
        (
            serde_json::from_value(json!({"action": "cancel"})).unwrap(),
            "cancelled: folder not deleted",
        ),
    ] {
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = asked.clone();
        let client = stdio_client(
            "files",
            Client::builder().elicitation(move |_info, params| {
                seen.lock().unwrap().push(params.message().to_owned());
                let answer = answer.clone();
                async move { Ok(answer) }
            }),
        )
        .await;
        let result = client
            .call_tool("delete_folder", json!({"path": "/tmp/project"}))
            .await
            .unwrap();
        assert_eq!(text(&result), expected);
        let empty = client
            .call_tool("delete_folder", json!({"path": "/tmp/empty"}))
            .await
            .unwrap();
        assert_eq!(text(&empty), "deleted /tmp/empty");
        assert_eq!(
            *asked.lock().unwrap(),
            ["/tmp/project has 2 file(s). Delete anyway?"]
        );
        let tools = client.list_all_tools().await.unwrap();
        let schema = serde_json::to_value(&tools[0].input_schema).unwrap();
        assert_eq!(schema["required"], json!(["path"]));
        assert!(schema["properties"].get("confirm").is_none(), "{schema}");
        client.close().await;
    }
}

#[tokio::test]
async fn briefing_and_bistro_over_stdio_in_both_eras() {
    for mode in [Mode::Auto, Mode::Legacy] {
        let client = stdio_client(
            "briefing",
            Client::builder()
                .mode(mode.clone())
                .elicitation(|_i, params| async move {
                    assert_eq!(params.message(), "Who is the briefing for?");
                    Ok(accept(&[(
                        "audience",
                        ElicitValue::String("the board".into()),
                    )]))
                }),
        )
        .await;
        let prompt = client
            .get_prompt("briefing", BTreeMap::new())
            .await
            .unwrap();
        let message = serde_json::to_value(&prompt.messages).unwrap();
        assert_eq!(
            message,
            json!([{"role": "user", "content": {"type": "text", "text": "Write a briefing for the board."}}])
        );
        client.close().await;
    }
    let client = stdio_client(
        "bistro",
        Client::builder()
            .mode(Mode::Legacy)
            .elicitation(|_i, _p| async {
                Ok(accept(&[
                    ("accept_alternative", ElicitValue::Bool(true)),
                    ("date", ElicitValue::String("2025-12-27".into())),
                ]))
            }),
    )
    .await;
    let booked = client
        .call_tool("book_table", json!({"date": "2025-12-25", "party_size": 2}))
        .await
        .unwrap();
    assert_eq!(text(&booked), "Booked a table for 2 on 2025-12-27.");
    let confirmed = client
        .call_tool("confirm_deposit", json!({"booking_id": "B-1"}))
        .await
        .unwrap();
    assert_eq!(text(&confirmed), "Deposit received for booking B-1.");
    client.close().await;
}

fn region(value: &str) -> InputResponses {
    InputResponses::from([(
        "region".to_owned(),
        InputResponse::Elicit(accept(&[("region", ElicitValue::String(value.into()))])),
    )])
}

#[tokio::test]
async fn the_provisioner_seals_its_hand_built_state() {
    let client = stdio_client(
        "provisioner",
        Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .elicitation(|_i, _p| async { Ok(ElicitResult::decline()) }),
    )
    .await;
    let session = client.session();
    let args = json!({"name": "orders"});
    let Outcome::InputRequired(round) = session
        .call_tool("provision", args.clone(), CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("the first leg asks");
    };
    let state = round.request_state.clone().unwrap();
    assert_ne!(state, "provision-v1", "the state is sealed on the wire");
    assert!(state.starts_with("v1."), "{state}");
    let done = session
        .call_tool(
            "provision",
            args.clone(),
            CallOptions::resume(Some(region("eu-west-1")), Some(state.clone())),
        )
        .await
        .unwrap();
    let Outcome::Complete(done) = done else {
        panic!("the retry completes")
    };
    assert_eq!(text(&done), "Provisioned 'orders' in eu-west-1.");
    // The plaintext state a client might guess is not accepted.
    let forged = session
        .call_tool(
            "provision",
            args,
            CallOptions::resume(Some(region("eu-west-1")), Some("provision-v1".into())),
        )
        .await
        .unwrap_err();
    let ClientError::Server(error) = forged else {
        panic!("{forged:?}")
    };
    assert_eq!(
        (error.code.0, error.message.as_str()),
        (-32602, "Invalid or expired requestState")
    );
    client.close().await;
}

#[tokio::test]
async fn the_deployer_mints_kms1_tokens() {
    let client = stdio_client(
        "deployer",
        Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .elicitation(|_i, params| async move {
                assert_eq!(params.message(), "Deploy api to production?");
                Ok(accept(&[("ok", ElicitValue::Bool(true))]))
            }),
    )
    .await;
    let Outcome::InputRequired(round) = client
        .session()
        .call_tool("deploy", json!({"service": "api"}), CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("the deployer asks first");
    };
    let token = round.request_state.unwrap();
    let hex = token.strip_prefix("kms1.").expect("the codec's prefix");
    assert!(
        hex.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{token}"
    );
    let result = client
        .call_tool("deploy", json!({"service": "api"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "Deployed api.");
    client.close().await;
}

/// Starts `fleet --http 127.0.0.1:0` and returns the child and its URL.
async fn fleet_instance(keys: &str) -> (Child, String) {
    http_instance("fleet", &[("MCP_STATE_KEYS", keys)]).await
}

/// Starts the example `name` with `--http 127.0.0.1:0` and returns the child and its URL.
async fn http_instance(name: &str, env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(example(name))
        .args(["--http", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines
        .next_line()
        .await
        .unwrap()
        .expect("the example prints its address");
    let url = line
        .strip_prefix("serving MCP at ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_owned();
    (child, url)
}

async fn modern(url: &str) -> Client {
    Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .elicitation(|_i, _p| async { Ok(ElicitResult::decline()) })
        .connect_http(url)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_fleet_instance_finishes_the_round_another_started_across_a_rotation() {
    const OLD: &str = "old-secret-old-secret-old-secret-0001";
    const NEW: &str = "new-secret-new-secret-new-secret-0002";
    let confirm = || {
        InputResponses::from([(
            "confirm_restart".to_owned(),
            InputResponse::Elicit(accept(&[("ok", ElicitValue::Bool(true))])),
        )])
    };
    let args = json!({"service": "api"});
    // Phase 1 and 2 side by side: [OLD, NEW] seals with OLD, [NEW, OLD] accepts it.
    let (_a, url_a) = fleet_instance(&format!("{OLD},{NEW}")).await;
    let (_b, url_b) = fleet_instance(&format!("{NEW},{OLD}")).await;
    let (_c, url_c) = fleet_instance(NEW).await;
    let a = modern(&url_a).await;
    let Outcome::InputRequired(round) = a
        .session()
        .call_tool("restart", args.clone(), CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("instance A asks");
    };
    let state = round.request_state.unwrap();
    let b = modern(&url_b).await;
    let Outcome::Complete(done) = b
        .session()
        .call_tool(
            "restart",
            args.clone(),
            CallOptions::resume(Some(confirm()), Some(state.clone())),
        )
        .await
        .unwrap()
    else {
        panic!("instance B finishes A's round");
    };
    assert_eq!(text(&done), "Restarted api.");
    // Phase 3 dropped OLD: a round sealed under it is refused.
    let c = modern(&url_c).await;
    let refused = c
        .session()
        .call_tool(
            "restart",
            args,
            CallOptions::resume(Some(confirm()), Some(state)),
        )
        .await
        .unwrap_err();
    let ClientError::Server(error) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(error.message, "Invalid or expired requestState");
}

#[tokio::test]
async fn every_server_example_rejects_a_bad_command_line() {
    let output = Command::new(example("files"))
        .arg("--port")
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("unknown argument `--port`\nusage: "),
        "{stderr}"
    );
    let output = Command::new(example("fleet"))
        .env_remove("MCP_STATE_KEYS")
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("set MCP_STATE_KEYS to the fleet's shared secrets")
    );
}

/// One HTTP/1.1 exchange over a fresh connection: the status, the headers (lowercased names)
/// and the body.
async fn raw_http(
    url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    // A compressed body is not text; the head always is.
    let response = String::from_utf8_lossy(&bytes);
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn the_protected_example_refuses_missing_foreign_and_narrow_tokens_and_keeps_users_apart() {
    let (_server, url) = http_instance("protected", &[]).await;
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp");
    let metadata = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let mcp = |token: Option<&'static str>| {
        let mut h = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ];
        if let Some(token) = token {
            h.push(("Authorization", token));
        }
        h
    };
    for (token, status, challenge) in [
        (
            None,
            401,
            format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp:tools\""),
        ),
        (
            Some("Bearer elsewhere-token"),
            401,
            format!(
                "Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\", error_description=\"the token was not issued for this resource\""
            ),
        ),
        (
            Some("Bearer read-only-token"),
            403,
            format!(
                "Bearer resource_metadata=\"{metadata}\", error=\"insufficient_scope\", scope=\"mcp:tools\""
            ),
        ),
    ] {
        let (got, headers, _) = raw_http(&url, "POST", "/mcp", &mcp(token), list).await;
        assert_eq!(
            (got, header(&headers, "www-authenticate")),
            (status, Some(challenge.as_str())),
            "{token:?}"
        );
    }
    let (status, _, body) =
        raw_http(&url, "POST", "/mcp", &mcp(Some("Bearer alice-token")), list).await;
    assert_eq!(status, 200, "{body}");
    let (status, headers, document) = raw_http(
        &url,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        "",
    )
    .await;
    assert_eq!(
        (status, header(&headers, "content-type")),
        (200, Some("application/json"))
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&document).unwrap(),
        json!({"resource": url, "authorization_servers": ["https://auth.example.com"],
               "bearer_methods_supported": ["header"], "scopes_supported": ["mcp:tools"],
               "resource_name": "Protected demo"})
    );

    // A round Alice started cannot be finished by Bob, and the tool sees who calls.
    let connect = |token: &'static str| {
        let url = url.clone();
        async move {
            let transport = mcp::http::HttpTransport::new(&url)
                .unwrap()
                .bearer(token)
                .unwrap();
            Client::builder()
                .mode(Mode::Pinned("2026-07-28".into()))
                .elicitation(|_i, _p| async { Ok(accept(&[("ok", ElicitValue::Bool(true))])) })
                .connect(transport)
                .await
                .unwrap()
        }
    };
    let (alice, bob) = (connect("alice-token").await, connect("bob-token").await);
    let args = json!({"service": "api"});
    let Outcome::InputRequired(round) = alice
        .session()
        .call_tool("deploy", args.clone(), CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("the first leg asks");
    };
    let answers = InputResponses::from([(
        "confirm_deploy".to_owned(),
        InputResponse::Elicit(accept(&[("ok", ElicitValue::Bool(true))])),
    )]);
    let stolen = bob
        .session()
        .call_tool(
            "deploy",
            args.clone(),
            CallOptions::resume(Some(answers.clone()), round.request_state.clone()),
        )
        .await
        .unwrap_err();
    let ClientError::Server(error) = stolen else {
        panic!("{stolen:?}")
    };
    assert_eq!(
        (error.code.0, error.message.as_str()),
        (-32602, "Invalid or expired requestState")
    );
    let Outcome::Complete(done) = alice
        .session()
        .call_tool(
            "deploy",
            args,
            CallOptions::resume(Some(answers), round.request_state),
        )
        .await
        .unwrap()
    else {
        panic!("Alice finishes her own round");
    };
    assert_eq!(text(&done), "alice deployed api.");
    let bobs = bob
        .call_tool("deploy", json!({"service": "db"}))
        .await
        .unwrap();
    assert_eq!(text(&bobs), "bob deployed db.");
}

#[tokio::test]
async fn the_builds_client_follows_a_task_and_answers_its_question() {
    let out = output_of("builds-client", &[]).await;
    assert!(
        out.contains("server asks: orders built and passed its tests. Deploy it now?\n"),
        "{out}"
    );
    assert!(
        out.contains("task completed: orders: deploying\n"),
        "the last status is shown: {out}"
    );
    assert!(out.ends_with("orders built and deployed.\n"), "{out}");
}

/// One JSON-RPC request of the tasks flow on a fresh HTTP connection (closed after it).
async fn task_http(
    url: &str,
    id: u32,
    method: &str,
    name: &str,
    params: &str,
) -> serde_json::Value {
    let caps = r#"{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{caps}}}}}}}"#
    );
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    let (status, _, response) = raw_http(url, "POST", "/mcp", &headers, &body).await;
    assert_eq!(status, 200, "{method}: {response}");
    serde_json::from_str(&response).unwrap()
}

#[tokio::test]
async fn a_build_task_outlives_the_http_request_that_created_it() {
    let (_server, url) = http_instance("builds", &[]).await;
    let created = task_http(
        &url,
        1,
        "tools/call",
        "run_build",
        r#""name":"run_build","arguments":{"project":"api"}"#,
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let task = format!(r#""taskId":"{id}""#);
    // The creating request (and its connection) ended; the build goes on and asks.
    let mut asking = None;
    for n in 0..500 {
        let got = task_http(&url, 10 + n, "tasks/get", &id, &task).await;
        if got["result"]["status"] == "input_required" {
            asking = Some(got);
            break;
        }
        assert_eq!(got["result"]["status"], "working", "{got}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let asking = asking.expect("the build reaches its question");
    let (key, question) = asking["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(
        question["params"]["message"],
        "api built and passed its tests. Deploy it now?"
    );
    let answer = format!(
        r#"{task},"inputResponses":{{"{key}":{{"action":"accept","content":{{"deploy":true}}}}}}"#
    );
    let ack = task_http(&url, 2, "tasks/update", &id, &answer).await;
    assert_eq!(
        ack["result"],
        json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo":
            {"name": "builds", "version": env!("CARGO_PKG_VERSION")}}})
    );
    for n in 0..500 {
        let got = task_http(&url, 600 + n, "tasks/get", &id, &task).await;
        if got["result"]["status"] == "completed" {
            assert_eq!(
                got["result"]["result"]["content"][0]["text"],
                "api built and deployed."
            );
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the build never completed");
}

/// The endpoint behind tower-http's layers in axum (`tower-stack`): a legacy session's live
/// elicitation and a 2026-07-28 two-round flow both pass through trace, CORS, timeout,
/// concurrency limit and compression; a browser's preflight is answered; JSON answers are
/// gzipped for a client that asks.
#[tokio::test]
async fn the_endpoint_works_behind_a_tower_http_stack() {
    let (_server, url) = http_instance("tower-stack", &[]).await;

    let legacy = Client::builder()
        .mode(Mode::Legacy)
        .elicitation(|_info, _params| async {
            Ok(accept(&[
                ("accept_alternative", ElicitValue::Bool(true)),
                ("date", ElicitValue::String("2025-12-27".into())),
            ]))
        })
        .connect_http(&url)
        .await
        .unwrap();
    let booked = legacy
        .call_tool("book_table", json!({"date": "2025-12-25", "party_size": 2}))
        .await
        .unwrap();
    assert_eq!(text(&booked), "Booked a table for 2 on 2025-12-27.");
    legacy.close().await;

    let rounds = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = rounds.clone();
    let modern = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .elicitation(move |_info, _params| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok(accept(&[("ok", ElicitValue::Bool(true))])) }
        })
        .connect_http(&url)
        .await
        .unwrap();
    let deleted = modern
        .call_tool("delete_folder", json!({"path": "/tmp/project"}))
        .await
        .unwrap();
    assert_eq!(text(&deleted), "deleted /tmp/project");
    assert_eq!(rounds.load(std::sync::atomic::Ordering::SeqCst), 1);
    modern.close().await;

    let (status, headers, _) = raw_http(
        &url,
        "OPTIONS",
        "/mcp",
        &[
            ("Origin", "http://localhost:5173"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "content-type,mcp-protocol-version,mcp-method,mcp-name",
            ),
        ],
        "",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    assert!(
        header(&headers, "access-control-allow-headers").is_some_and(|h| h.contains("mcp-name")),
        "{headers:?}"
    );

    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (status, headers, _) = raw_http(
        &url,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Accept-Encoding", "gzip"),
            ("Origin", "http://localhost:5173"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        list,
    )
    .await;
    assert_eq!(status, 200, "{headers:?}");
    assert_eq!(header(&headers, "content-encoding"), Some("gzip"));
    assert_eq!(
        header(&headers, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );
}

/// Out of file descriptors, `accept` fails again at once; the server backs off (50 ms,
/// doubling to 1 s) instead of spinning on it. The traced server runs with 64 descriptors,
/// 100 connections exhaust them, and its warnings are counted for 1.5 s: a spinning loop
/// logs thousands, the backoff a handful. The connections that did get in are still served.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn out_of_descriptors_the_accept_loop_backs_off() {
    let mut child = Command::new("prlimit")
        .arg("--nofile=64:64")
        .arg("--")
        .arg(example("traced"))
        .args(["--http", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("prlimit (util-linux) starts the example");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().expect("the address line");
    let url = first
        .strip_prefix("serving MCP at ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut held = Vec::new();
    for _ in 0..100 {
        if let Ok(stream) = tokio::net::TcpStream::connect(authority).await {
            held.push(stream);
        }
    }
    let mut failures = 0;
    let window = tokio::time::sleep(std::time::Duration::from_millis(1500));
    tokio::pin!(window);
    loop {
        tokio::select! {
            () = &mut window => break,
            line = lines.next_line() => match line {
                Ok(Some(line)) if line.contains("accept failed") => failures += 1,
                Ok(Some(_)) => {}
                _ => break,
            },
        }
    }
    assert!(
        (1..=20).contains(&failures),
        "{failures} accept failures logged in 1.5 s (a spinning loop logs thousands; none means the limit was never reached)"
    );
    drop(held);
    child.kill().await.unwrap();
}

/// A `tools/call` to the shop as `token`: the status, the `WWW-Authenticate` challenge, and
/// the JSON-RPC answer (`Null` when the body is not one).
async fn shop_call(
    url: &str,
    token: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> (u16, Option<String>, serde_json::Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let authorization = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
        ("Authorization", authorization.as_str()),
    ];
    let (status, headers, body) = raw_http(url, "POST", "/mcp", &headers, &body.to_string()).await;
    let challenge = header(&headers, "www-authenticate").map(str::to_owned);
    (
        status,
        challenge,
        serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
    )
}

fn shop_text(answer: &serde_json::Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a text result: {answer}"))
        .to_owned()
}

/// Issue #34's example: a basket handle only its owner can use, the checkout's scope step-up
/// challenge, its per-user rate limit, and an audit line per call that names the user and the
/// outcome and never the basket.
#[tokio::test]
async fn the_shop_seals_baskets_challenges_for_checkout_limits_it_and_audits() {
    let mut child = Command::new(example("shop"))
        .args(["--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = stderr.next_line().await.unwrap().unwrap();
    let url = first.strip_prefix("serving MCP at ").unwrap().to_owned();

    let (_, _, one) = shop_call(
        &url,
        "alice-browse",
        "add_to_basket",
        json!({"item": "green tea"}),
    )
    .await;
    let basket = shop_text(&one);
    assert!(
        !basket.contains("green"),
        "the basket travels sealed: {basket}"
    );
    let (_, _, two) = shop_call(
        &url,
        "alice-browse",
        "add_to_basket",
        json!({"item": "lemon cake", "basket": basket}),
    )
    .await;
    let basket = shop_text(&two);
    let (_, _, seen) = shop_call(
        &url,
        "alice-browse",
        "view_basket",
        json!({"basket": basket}),
    )
    .await;
    assert_eq!(shop_text(&seen), "green tea, lemon cake");

    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp");
    let (status, challenge, _) =
        shop_call(&url, "alice-browse", "checkout", json!({"basket": basket})).await;
    assert_eq!(status, 403);
    assert_eq!(
        challenge.unwrap(),
        format!(
            "Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\", error=\"insufficient_scope\", scope=\"shop.checkout\""
        )
    );
    let (_, _, bought) = shop_call(&url, "alice-full", "checkout", json!({"basket": basket})).await;
    assert_eq!(shop_text(&bought), "alice bought green tea, lemon cake.");
    let (_, _, stolen) = shop_call(&url, "bob-full", "checkout", json!({"basket": basket})).await;
    assert_eq!(
        stolen["error"],
        json!({"code": -32602, "message": "Invalid or expired handle"})
    );
    // Three checkouts a minute for Alice; Bob's refused try spent his own bucket.
    for _ in 0..2 {
        let (_, _, again) =
            shop_call(&url, "alice-full", "checkout", json!({"basket": basket})).await;
        assert_eq!(shop_text(&again), "alice bought green tea, lemon cake.");
    }
    let (_, _, limited) =
        shop_call(&url, "alice-full", "checkout", json!({"basket": basket})).await;
    assert_eq!(limited["error"]["code"], -32029, "{limited}");
    assert_eq!(limited["error"]["data"]["limit"], "rate");

    // The audit log: one line per call that reached the server (the 403 did not), naming the
    // user and the outcome, never the basket.
    let mut audit = Vec::new();
    while audit.len() < 8 {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), stderr.next_line())
            .await
            .expect("an audit line within 10 s")
            .unwrap()
            .expect("stderr is open");
        assert!(!line.contains(&basket) && !line.contains("green"), "{line}");
        if line.contains("mcp::audit") {
            audit.push(line);
        }
    }
    let last = audit.last().unwrap();
    for field in [
        "method=\"tools/call\"",
        "target=\"checkout\"",
        "subject=\"alice\"",
        "outcome=error -32029",
    ] {
        assert!(last.contains(field), "{field} in {last}");
    }
    assert!(
        audit[4].contains("subject=\"bob\"") && audit[4].contains("outcome=error -32602"),
        "{}",
        audit[4]
    );
}
