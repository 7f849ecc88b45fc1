//! Test support shared by the HTTP server tests: an endpoint served on a loopback port until
//! told to stop.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use mcp_transport_http::McpHttpService;
use tokio::net::TcpListener;

/// A server running on `127.0.0.1:port`, serving `/mcp`.
pub struct Running {
    pub url: String,
    pub port: u16,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub done: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves `endpoint` on a free loopback port until [`Running::shutdown`] (or a drain).
pub async fn start(endpoint: McpHttpService) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", async {
        let _ = stopped.await;
    }));
    Running {
        url: format!("http://127.0.0.1:{port}/mcp"),
        port,
        stop: Some(stop),
        done,
    }
}

impl Running {
    /// Stops the server; it must finish well within the 30 s shutdown grace.
    pub async fn shutdown(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), self.done)
            .await
            .expect("shutdown waited for the grace period")
            .unwrap()
            .unwrap();
    }
}
