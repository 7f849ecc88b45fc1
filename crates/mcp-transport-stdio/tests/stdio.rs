//! stdio end to end with real child processes. This binary is its own child: with
//! `MCP_STDIO_CHILD` set it serves (or misbehaves) on stdin/stdout instead of testing.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use mcp_client::{Client, ClientError, Mode};
use mcp_server_core::registry::{Accepted, McpServer, Resolution, Resolver, ToolDef};
use mcp_transport_stdio::{StdioTransport, serve, serve_io};
use mcp_types::JsonObject;
use mcp_types::elicitation::{ElicitResult, ElicitValue};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Clone, Deserialize, JsonSchema)]
struct Region {
    region: String,
}

fn provisioner() -> mcp_server_core::Service {
    let ask = Resolver::new("region", |_| async {
        Resolution::<Region>::elicit("Which region should the database live in?")
    });
    let tool = ToolDef::new("provision")
        .resolve::<Accepted<Region>>("region", ask)
        .handler_resolved(|_ctx, args: JsonObject, mut r| async move {
            let Accepted(Region { region }) = r.take::<Accepted<Region>>("region")?;
            Ok::<_, String>(format!(
                "Provisioned '{}' in {region}.",
                args.get("name").and_then(|v| v.as_str()).unwrap_or("db")
            ))
        });
    McpServer::new("Provisioner")
        .tool(tool)
        .into_service()
        .unwrap()
}

fn child(role: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command.env("MCP_STDIO_CHILD", role);
    command
}

fn client() -> mcp_client::ClientBuilder {
    Client::builder().elicitation(|_info, _params| async {
        Ok(ElicitResult::accept(BTreeMap::from([(
            "region".to_owned(),
            ElicitValue::String("eu-west-1".into()),
        )])))
    })
}

async fn flows_work_in_both_eras() {
    for (mode, version) in [(Mode::Auto, "2026-07-28"), (Mode::Legacy, "2025-11-25")] {
        let transport = StdioTransport::spawn(child("serve")).unwrap();
        let client = client().mode(mode).connect(transport).await.unwrap();
        assert_eq!(client.protocol_version().as_deref(), Some(version));
        let result = client
            .call_tool("provision", json!({"name": "orders"}))
            .await
            .unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("Provisioned 'orders' in eu-west-1.")
        );
        client.close().await;
    }
}

async fn a_dead_child_is_a_typed_error_naming_its_exit() {
    let transport = StdioTransport::spawn(child("exit-3")).unwrap();
    let e = client().connect(transport).await.unwrap_err();
    let ClientError::Transport(reason) = &e else {
        panic!("expected a transport error, got {e:?}")
    };
    assert!(reason.contains("exit status: 3"), "{reason}");
}

async fn noise_on_stdout_is_skipped() {
    let transport = StdioTransport::spawn(child("noisy")).unwrap();
    let client = client().connect(transport).await.unwrap();
    let result = client
        .call_tool("provision", json!({"name": "a"}))
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("Provisioned 'a' in eu-west-1.")
    );
}

/// One byte that is not UTF-8 refuses its line, not the connection.
async fn a_non_utf8_line_on_stdout_is_refused_and_the_stream_goes_on() {
    let transport = StdioTransport::spawn(child("binary-noise")).unwrap();
    let client = client().connect(transport).await.unwrap();
    let result = client
        .call_tool("provision", json!({"name": "b"}))
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("Provisioned 'b' in eu-west-1.")
    );
}

async fn eof_ends_the_server_after_answering_what_is_in_flight() {
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    let server = tokio::spawn(serve_io(provisioner(), server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client_side);
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    client_write
        .write_all(format!("{request}\n{{not json\n").as_bytes())
        .await
        .unwrap();
    client_write.shutdown().await.unwrap();
    drop(client_write);
    let mut lines = BufReader::new(client_read).lines();
    let mut answers = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        answers.push(serde_json::from_str::<serde_json::Value>(&line).unwrap());
    }
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answers.len(), 2);
    let by_id: Vec<_> = answers.iter().map(|a| a.get("id").cloned()).collect();
    assert!(by_id.contains(&Some(json!(1))));
    assert!(answers.iter().any(|a| a["error"]["code"] == -32700));
}

/// `serve` reads stdin and writes stdout through the reactor when both are pipes; with stdout
/// sent to a file it falls back to tokio's blocking stdio, and still answers.
async fn stdout_to_a_file_still_serves() {
    let path = std::env::temp_dir().join(format!("mcp-stdio-out-{}.jsonl", std::process::id()));
    let out = std::fs::File::create(&path).unwrap();
    let mut server = child("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(out)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(60), server.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let written = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let answer: serde_json::Value = serde_json::from_str(written.trim()).unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"]["tools"][0]["name"], "provision");
}

type Case = (&'static str, fn() -> Pin<Box<dyn Future<Output = ()>>>);

/// Which cases to run, from the arguments `cargo test -- …` passes on, as the standard
/// harness reads them: names containing any filter (or equal to one with `--exact`), none
/// matching a `--skip`; `--list` lists them. Options of the standard harness that do not
/// choose tests (`--nocapture`, `--test-threads`, …) are accepted and change nothing here.
#[derive(Debug, Default, PartialEq)]
struct Selection {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
}

impl Selection {
    fn from_args(args: impl IntoIterator<Item = String>) -> Self {
        let mut selection = Self::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--exact" => selection.exact = true,
                "--list" => selection.list = true,
                "--skip" => selection.skip.extend(args.next()),
                // Options that take a value as the next argument.
                "--test-threads" | "--format" | "--color" | "--logfile" | "-Z" => {
                    args.next();
                }
                flag if flag.starts_with('-') => {}
                filter => selection.filters.push(filter.to_owned()),
            }
        }
        selection
    }

    fn runs(&self, name: &str) -> bool {
        let matches = |pattern: &String| {
            if self.exact {
                name == pattern
            } else {
                name.contains(pattern.as_str())
            }
        };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skip.iter().any(matches)
    }
}

/// Runs as one of the cases below (this harness has no `#[test]`).
fn selection_reads_arguments_as_the_standard_harness_does() {
    let of = |args: &[&str]| Selection::from_args(args.iter().map(|a| (*a).to_owned()));
    let all = of(&["--nocapture", "--test-threads", "1"]);
    assert!(all.runs("flows_work_in_both_eras") && !all.list);
    let some = of(&["eof", "noise", "--skip", "binary"]);
    assert!(some.runs("eof_ends_the_server_after_answering_what_is_in_flight"));
    assert!(some.runs("noise_on_stdout_is_skipped"));
    assert!(!some.runs("flows_work_in_both_eras"));
    let exact = of(&["--exact", "noise"]);
    assert!(!exact.runs("noise_on_stdout_is_skipped"));
    assert!(of(&["--exact", "noise_on_stdout_is_skipped"]).runs("noise_on_stdout_is_skipped"));
    assert!(!of(&["--skip", "flows"]).runs("flows_work_in_both_eras"));
    assert!(of(&["--list"]).list);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    match std::env::var("MCP_STDIO_CHILD").as_deref() {
        Ok("serve") => return runtime.block_on(serve(provisioner())).unwrap(),
        Ok("noisy") => {
            println!("hello from a server that prints");
            return runtime.block_on(serve(provisioner())).unwrap();
        }
        Ok("binary-noise") => {
            use std::io::Write;
            std::io::stdout().write_all(b"\xff\xfe not text\n").unwrap();
            std::io::stdout().flush().unwrap();
            return runtime.block_on(serve(provisioner())).unwrap();
        }
        Ok("exit-3") => std::process::exit(3),
        _ => {}
    }
    let cases: [Case; 7] = [
        (
            "selection_reads_arguments_as_the_standard_harness_does",
            || Box::pin(async { selection_reads_arguments_as_the_standard_harness_does() }),
        ),
        ("flows_work_in_both_eras", || {
            Box::pin(flows_work_in_both_eras())
        }),
        ("a_dead_child_is_a_typed_error_naming_its_exit", || {
            Box::pin(a_dead_child_is_a_typed_error_naming_its_exit())
        }),
        ("noise_on_stdout_is_skipped", || {
            Box::pin(noise_on_stdout_is_skipped())
        }),
        (
            "a_non_utf8_line_on_stdout_is_refused_and_the_stream_goes_on",
            || Box::pin(a_non_utf8_line_on_stdout_is_refused_and_the_stream_goes_on()),
        ),
        (
            "eof_ends_the_server_after_answering_what_is_in_flight",
            || Box::pin(eof_ends_the_server_after_answering_what_is_in_flight()),
        ),
        ("stdout_to_a_file_still_serves", || {
            Box::pin(stdout_to_a_file_still_serves())
        }),
    ];
    let selection = Selection::from_args(std::env::args().skip(1));
    if selection.list {
        for (name, _) in cases.iter().filter(|(name, _)| selection.runs(name)) {
            println!("{name}: test");
        }
        return;
    }
    let (mut passed, mut failed, mut filtered) = (0, 0, 0);
    for (name, case) in cases {
        if !selection.runs(name) {
            filtered += 1;
            continue;
        }
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(case())));
        match outcome {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!("stdio: {passed} passed, {failed} failed, {filtered} filtered out");
    if failed > 0 {
        std::process::exit(1);
    }
}
