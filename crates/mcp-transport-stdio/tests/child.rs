//! A stdio server that misbehaves as a process: one that dies fails every pending call at
//! once, with its exit status and its last lines on stderr; one that stops reading its stdin
//! cannot hold a call past its timeout.

use std::future::Future;
use std::time::{Duration, Instant};

use mcp_client::{Client, ClientError, Mode};
use mcp_transport_stdio::StdioTransport;
use serde_json::json;
use tokio::process::Command;

async fn within<T>(limit: Duration, test: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, test)
        .await
        .expect("the test ran past its deadline")
}

fn shell(script: &str) -> StdioTransport {
    let mut command = Command::new("sh");
    command.arg("-c").arg(script);
    StdioTransport::spawn(command).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dying_server_fails_every_pending_call_at_once_with_its_status_and_last_words() {
    within(Duration::from_secs(20), async {
        // Reads one request, says why it gives up, and exits 3.
        let script = "read line; echo starting >&2; echo 'fatal: the database is gone' >&2; exit 3";
        let client = Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .request_timeout(Duration::from_secs(30))
            .connect(shell(script))
            .await
            .unwrap();
        let started = Instant::now();
        let (a, b, c) = tokio::join!(
            client.list_tools(None),
            client.call_tool("charge", json!({})),
            client.read_resource("file:///x"),
        );
        assert!(
            // Far under what waiting would take (the 30 s timeout, the 30 s server), and
            // loose enough for spawning `sh` on a loaded machine (audit section 4).
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let expected = ClientError::Transport(
            "the server process exited with exit status: 3; its last lines on stderr: \
             starting / fatal: the database is gone"
                .into(),
        );
        assert_eq!(a.unwrap_err(), expected);
        assert_eq!(b.unwrap_err(), expected);
        assert_eq!(c.unwrap_err(), expected);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_cannot_hold_a_call_past_its_timeout() {
    within(Duration::from_secs(20), async {
        let client = Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .request_timeout(Duration::from_millis(500))
            .connect(shell("sleep 30"))
            .await
            .unwrap();
        // More than a pipe holds: the write blocks until the server reads, which it never does.
        let big = "x".repeat(1024 * 1024);
        let started = Instant::now();
        let error = client
            .call_tool("echo", json!({"text": big}))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            ClientError::Timeout {
                method: "tools/call".into(),
                after: Duration::from_millis(500)
            }
        );
        assert!(
            // Far under what waiting would take (the 30 s timeout, the 30 s server), and
            // loose enough for spawning `sh` on a loaded machine (audit section 4).
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    })
    .await;
}
