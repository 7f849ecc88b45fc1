//! A 2025-11-25 client whose session the server lost (404 on its `Mcp-Session-Id`: the session
//! expired, or its instance restarted) starts a new session, reports the request that met the
//! 404 as not run (it is not safe to repeat), and goes on on the new session.

use std::time::Duration;

use mcp_client::{Client, ClientError, Mode};
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_transport_http::{HttpTransport, McpHttpService};
use mcp_types::JsonObject;
use tokio::net::TcpListener;

fn service() -> mcp_server_core::Service {
    let echo = ToolDef::new("echo").handler(|_ctx, a: JsonObject| async move {
        a.get("text")
            .and_then(|t| t.as_str())
            .unwrap_or("")
            .to_owned()
    });
    McpServer::new("Recover").tool(echo).into_service().unwrap()
}

/// Serves a fresh endpoint (no sessions) on `addr` until `stop` fires.
fn serve(
    listener: TcpListener,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let endpoint = McpHttpService::new(service()).drain_grace(Duration::from_millis(100));
    tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", async {
        let _ = stop.await;
    }))
}

#[tokio::test]
async fn a_lost_session_is_replaced_and_the_request_that_met_the_404_is_reported_lost() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/mcp");
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let first_instance = serve(listener, stopped);

    let client = Client::builder()
        .mode(Mode::Legacy)
        .connect(HttpTransport::new(&url).unwrap())
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    let first = client
        .call_tool("echo", serde_json::json!({"text": "one"}))
        .await
        .unwrap();
    assert_eq!(first.content[0].as_text(), Some("one"));

    // The instance restarts: the new one, on the same address, never heard of the session.
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(20), first_instance)
        .await
        .expect("the first instance did not stop")
        .unwrap()
        .unwrap();
    let listener = TcpListener::bind(addr).await.unwrap();
    let (_keep, never) = tokio::sync::oneshot::channel();
    let _second_instance = serve(listener, never);

    // `echo` carries no readOnlyHint or idempotentHint: the client does not send it again,
    // and says it did not run.
    let lost = client
        .call_tool("echo", serde_json::json!({"text": "two"}))
        .await
        .unwrap_err();
    assert_eq!(
        lost,
        ClientError::Interrupted {
            method: "tools/call".into(),
            may_have_run: false,
            why: "the server lost this client's session (404 Session not found) before \
                  processing this request; a new session was started; the client did not \
                  send it again, as it is not known to be safe to repeat"
                .into(),
        }
    );
    // The same client goes on, on the new session.
    let again = client
        .call_tool("echo", serde_json::json!({"text": "three"}))
        .await
        .unwrap();
    assert_eq!(again.content[0].as_text(), Some("three"));
}
