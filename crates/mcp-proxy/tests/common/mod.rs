//! What the gateway's integration tests share: a bound on every test, a client of the
//! gateway in process, the tools it lists, the text of a result, a listener on the gateway's list changes, and a
//! capture of what the gateway logs.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, MemoryTransport, Mode};
use mcp_server_core::{ResponseStream, Service, TransportContext};
use mcp_types::subscriptions::{SubscriptionFilter, SubscriptionsListenRequestParams};
use mcp_types::tools::CallToolResult;
use mcp_types::{JsonRpcMessage, JsonRpcRequest, Meta, RequestId};

/// Runs `what`, failing the test after 30 s.
pub async fn within<T>(what: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), what)
        .await
        .expect("the test finished in time")
}

/// A client of `service` in process, in `mode`.
pub async fn connect(service: &Service, mode: Mode) -> Client {
    Client::builder()
        .mode(mode)
        .connect(MemoryTransport::new(service))
        .await
        .unwrap()
}

/// The names of every tool `client` lists, in order.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name).collect()
}

/// The result's one text block, and whether it is an error.
pub fn text(result: &CallToolResult) -> (&str, bool) {
    (
        result.content[0].as_text().unwrap_or("(not text)"),
        result.is_error == Some(true),
    )
}

/// A `subscriptions/listen` stream on `service` for tool list changes.
pub fn listen_for_tool_changes(service: &Service) -> ResponseStream {
    let params = SubscriptionsListenRequestParams {
        notifications: SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        },
        meta: Some(Meta::request("2026-07-28", Default::default())),
        extra: Default::default(),
    };
    let request = JsonRpcRequest {
        id: RequestId::Number(1),
        method: "subscriptions/listen".into(),
        params: Some(mcp_types::jsonrpc::to_raw(&params).unwrap()),
        extra: Default::default(),
    };
    service.handle_modern(request, TransportContext::default())
}

/// Waits for the next `notifications/tools/list_changed` on `stream`.
pub async fn next_tools_change(stream: &mut ResponseStream) {
    loop {
        match stream.next().await {
            Some(JsonRpcMessage::Notification(n))
                if n.method == "notifications/tools/list_changed" =>
            {
                return;
            }
            Some(_) => continue,
            None => panic!("the listen stream ended"),
        }
    }
}

/// What the gateway logs while the returned guard lives (on this thread).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    pub fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
