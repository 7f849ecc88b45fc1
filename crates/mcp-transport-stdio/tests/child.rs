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

/// A server that writes faster than its client reads cannot grow the client's memory: the
/// transport stops reading the server's stdout once `INCOMING_QUEUE` messages wait, so the
/// server's writes wait too (before, every line was queued at once and the flood finished).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_flooding_stdout_waits_for_the_client_instead_of_filling_its_memory() {
    use mcp_client::Transport;
    within(Duration::from_secs(30), async {
        let dir = std::env::temp_dir().join(format!("mcp-stdio-flood-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let finished = dir.join("finished");
        let _ = std::fs::remove_file(&finished);
        // 20,000 valid notifications (about 1.7 MB: far more than a pipe, the reader's buffer
        // and the queue hold), then a mark that the flood is over.
        let line = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
        let count = 20_000;
        let script = format!(
            "yes '{line}' | head -n {count}; touch '{}'; sleep 30",
            finished.display()
        );
        let transport = shell(&script);
        // The client reads nothing for a while: the flood must not be able to finish.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            !finished.exists(),
            "the server wrote all {count} messages while nobody read them: they were queued"
        );
        // Reading lets it go on, and every message arrives, in order, none lost.
        for n in 0..count {
            let message = transport.receive().await.expect("the stream ended early");
            assert!(
                matches!(&message, mcp_types::JsonRpcMessage::Notification(n) if n.method == "notifications/message"),
                "message {n}: {message}"
            );
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !finished.exists() {
            assert!(Instant::now() < deadline, "the flood never finished");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        transport.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
