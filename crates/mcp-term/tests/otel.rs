//! `mcp-term --otel`: the command's client spans reach an OTLP/HTTP receiver, and the server's
//! spans (here, exported by this test's process) continue their trace through `_meta`.

#![cfg(feature = "otel")]

use std::time::Duration;

use mcp_examples::otlp::{CLIENT, INTERNAL, Received, SERVER, receiver, spans};
use tokio::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otel_exports_the_commands_spans_and_the_server_continues_the_trace() {
    let received = Received::default();
    let otlp = receiver(received.clone()).await;
    let otel = mcp::otel::Otel::to_endpoint(&otlp, "files-server").unwrap();
    otel.set_global_subscriber().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let endpoint = mcp::http::endpoint(mcp_examples::files::server()).unwrap();
    tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", std::future::pending()));

    // The example's folders live in this process: the legacy call goes first and keeps the
    // folder (`ok=no`), so that both eras find it full and ask.
    for (era, answer, said) in [
        ("2025-11-25", "ok=no", "kept the folder\n"),
        ("2026-07-28", "ok=yes", "deleted /tmp/project\n"),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-term"))
            .args([
                "call",
                "delete_folder",
                "path=/tmp/project",
                "--answer",
                answer,
                "--era",
                era,
                "--otel",
                &url,
            ])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
            .env("OTEL_SERVICE_NAME", "mcp-term")
            .kill_on_drop(true)
            .output()
            .await
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).as_ref()
            ),
            (Some(0), said),
            "{era}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    otel.flush().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let spans = loop {
        let spans = spans(&received);
        let served = spans
            .iter()
            .filter(|s| s.service == "files-server" && s.name == "tools/call delete_folder")
            .count();
        if served >= 3 || tokio::time::Instant::now() > deadline {
            break spans;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // 2026-07-28: the call (one span over its rounds), two rounds, each answered by the
    // server in the call's trace as the child of the round's request.
    let rounds: Vec<_> = spans
        .iter()
        .filter(|s| {
            s.service == "mcp-term"
                && s.kind == CLIENT
                && s.name == "tools/call delete_folder"
                && s.attributes["mcp.protocol.version"] == "2026-07-28"
        })
        .collect();
    assert_eq!(rounds.len(), 2, "{spans:#?}");
    let call = spans
        .iter()
        .find(|s| s.id == rounds[0].parent)
        .expect("the call's span");
    assert_eq!(
        (call.service.as_str(), call.kind, call.name.as_str()),
        ("mcp-term", INTERNAL, "tools/call delete_folder")
    );
    assert_eq!(
        rounds[1].parent, call.id,
        "both rounds are children of the call"
    );
    let calls = [call];
    for round in &rounds {
        assert_eq!(round.name, "tools/call delete_folder");
        assert_eq!(round.attributes["mcp.protocol.version"], "2026-07-28");
        let served: Vec<_> = spans
            .iter()
            .filter(|s| s.service == "files-server" && s.kind == SERVER && s.parent == round.id)
            .collect();
        assert_eq!(served.len(), 1, "{round:#?}");
        assert_eq!(served[0].trace, calls[0].trace);
        assert_eq!(served[0].name, "tools/call delete_folder");
    }
    // 2025-11-25: one request, the server's span its child, and the question the server
    // asked mid-call answered by mcp-term in a span that is the server span's child.
    let legacy = spans
        .iter()
        .find(|s| {
            s.service == "files-server"
                && s.name == "tools/call delete_folder"
                && s.attributes["mcp.protocol.version"] == "2025-11-25"
        })
        .expect("the legacy call's server span");
    let sender = spans
        .iter()
        .find(|s| s.id == legacy.parent)
        .expect("the span of mcp-term's request");
    assert_eq!((sender.service.as_str(), sender.kind), ("mcp-term", CLIENT));
    let answered = spans
        .iter()
        .find(|s| s.service == "mcp-term" && s.name == "elicitation/create")
        .expect("the span of mcp-term's answer to the legacy question");
    assert_eq!(
        (answered.kind, &answered.trace, &answered.parent),
        (SERVER, &legacy.trace, &legacy.id)
    );
    assert_eq!(answered.attributes["mcp.method.name"], "elicitation/create");
    otel.shutdown().await;
}
