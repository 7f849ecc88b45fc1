//! stdio upstreams with real child processes. This binary is its own child: with
//! `MCP_PROXY_CHILD=serve` it serves a small server on stdin/stdout instead of testing.
mod common;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use common::{connect, text, tool_names, within};
use mcp_client::{Client, ClientError, MemoryTransport, Mode};
use mcp_proxy::{Gateway, Proxy};
use mcp_server_core::Service;
use mcp_server_core::registry::{McpServer, ToolDef};
use serde_json::{Value, json};

/// The child's server: `echo`, `die` (the process exits with status 3 mid-call), and `hang`
/// (waits for its cancellation; when it is cancelled, writes the file `MCP_PROXY_MARK` names).
fn child_server() -> Service {
    let echo = ToolDef::new("echo").handler(|_ctx, args: Value| async move {
        format!("echo: {}", args["text"].as_str().unwrap_or(""))
    });
    let die = ToolDef::new("die").handler(|_ctx, _args: Value| async move {
        std::process::exit(3);
        #[allow(unreachable_code)]
        "unreachable"
    });
    let hang = ToolDef::new("hang").handler(|ctx, _args: Value| async move {
        let mark = Mark(std::env::var_os("MCP_PROXY_MARK").map(PathBuf::from));
        let _ = tokio::time::timeout(Duration::from_secs(20), ctx.cancellation().cancelled()).await;
        drop(mark);
        "cancelled or timed out"
    });
    McpServer::new("child")
        .tool(echo)
        .tool(die)
        .tool(hang)
        .into_service()
        .unwrap()
}

/// Writes its file when dropped: the server stops a cancelled handler by dropping it, or lets
/// it see its token; either way this runs.
struct Mark(Option<PathBuf>);

impl Drop for Mark {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::write(path, b"cancelled");
        }
    }
}

fn child() -> Proxy {
    Proxy::stdio(std::env::current_exe().unwrap(), Vec::<String>::new())
        .env("MCP_PROXY_CHILD", "serve")
        .connect_timeout(Duration::from_secs(10))
}

async fn list_and_call_through_a_child_in_both_eras() {
    for upstream_mode in [Mode::Auto, Mode::Legacy] {
        let gateway = Gateway::new("hub")
            .mount("s", child().mode(upstream_mode))
            .into_service()
            .await
            .unwrap();
        for mode in [Mode::Auto, Mode::Legacy] {
            let client = connect(&gateway, mode).await;
            let names = tool_names(&client).await;
            assert_eq!(names, ["s_echo", "s_die", "s_hang"]);
            let result = client
                .call_tool("s_echo", json!({"text": "hi"}))
                .await
                .unwrap();
            assert_eq!(text(&result), ("echo: hi", false));
        }
    }
}

async fn a_child_that_exits_mid_call_is_named_and_spawned_again() {
    let gateway = Gateway::new("hub")
        .mount("s", child())
        .into_service()
        .await
        .unwrap();
    let client = connect(&gateway, Mode::Auto).await;
    let died = client.call_tool("s_die", json!({})).await.unwrap();
    assert_eq!(
        text(&died),
        (
            "upstream 's' failed: the server process exited with exit status: 3",
            true
        )
    );
    let again = client
        .call_tool("s_echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(text(&again), ("echo: back", false));
}

async fn a_caller_that_gives_up_cancels_the_call_in_the_child() {
    let mark = std::env::temp_dir().join(format!("mcp-proxy-cancel-{}", std::process::id()));
    let _ = std::fs::remove_file(&mark);
    let gateway = Gateway::new("hub")
        .mount("s", child().env("MCP_PROXY_MARK", &mark))
        .into_service()
        .await
        .unwrap();
    let client = Client::builder()
        .request_timeout(Duration::from_millis(500))
        .connect(MemoryTransport::new(&gateway))
        .await
        .unwrap();
    let e = client.call_tool("s_hang", json!({})).await.unwrap_err();
    assert!(matches!(e, ClientError::Timeout { .. }), "{e:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !mark.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the child's hang saw no cancellation"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read(&mark).unwrap(), b"cancelled");
    let _ = std::fs::remove_file(&mark);
}

type Case = (&'static str, fn() -> Pin<Box<dyn Future<Output = ()>>>);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if std::env::var("MCP_PROXY_CHILD").as_deref() == Ok("serve") {
        return runtime
            .block_on(mcp_transport_stdio::serve(child_server()))
            .unwrap();
    }
    let cases: [Case; 3] = [
        ("list_and_call_through_a_child_in_both_eras", || {
            Box::pin(within(list_and_call_through_a_child_in_both_eras()))
        }),
        (
            "a_child_that_exits_mid_call_is_named_and_spawned_again",
            || {
                Box::pin(within(
                    a_child_that_exits_mid_call_is_named_and_spawned_again(),
                ))
            },
        ),
        (
            "a_caller_that_gives_up_cancels_the_call_in_the_child",
            || {
                Box::pin(within(
                    a_caller_that_gives_up_cancels_the_call_in_the_child(),
                ))
            },
        ),
    ];
    // What the standard harness reads of its arguments: `--list`, and names to filter by
    // (a case runs when its name contains one of them; every case without any).
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let selected =
        |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
    if args.iter().any(|a| a == "--list") {
        for (name, _) in cases.iter().filter(|(name, _)| selected(name)) {
            println!("{name}: test");
        }
        return;
    }
    let (mut passed, mut failed) = (0, 0);
    for (name, case) in cases {
        if !selected(name) {
            continue;
        }
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(case())));
        if outcome.is_ok() {
            println!("test {name} ... ok");
            passed += 1;
        } else {
            println!("test {name} ... FAILED");
            failed += 1;
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed",
        if failed == 0 { "ok" } else { "FAILED" }
    );
    if failed > 0 {
        std::process::exit(101);
    }
}
