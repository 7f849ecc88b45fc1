//! An in-memory connection to an `mcp-server-core` service: the client and the server in one
//! process, framed like stdio.

use mcp_server_core::{MemoryConnection, Service, TransportContext};
use mcp_types::JsonRpcMessage;
use tokio::sync::Mutex;

use crate::transport::{BoxFuture, Transport};

/// The [`Transport`] of an in-memory connection.
#[derive(Debug)]
pub struct MemoryTransport {
    connection: Mutex<MemoryConnection>,
    to_server: tokio::sync::mpsc::UnboundedSender<JsonRpcMessage>,
}

impl MemoryTransport {
    /// Connects to `service`.
    pub fn new(service: &Service) -> Self {
        Self::with_context(service, TransportContext::default())
    }

    /// Connects to `service` as the given (e.g. authenticated) peer.
    pub fn with_context(service: &Service, context: TransportContext) -> Self {
        let connection = MemoryConnection::connect(service, context);
        // Writes go through a channel so `send` never waits on the reader's lock.
        let writer = connection.sender();
        let (to_server, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<JsonRpcMessage>();
        tokio::spawn(async move {
            while let Some(message) = outgoing.recv().await {
                if !writer(&message) {
                    return;
                }
            }
        });
        MemoryTransport {
            connection: Mutex::new(connection),
            to_server,
        }
    }
}

impl Transport for MemoryTransport {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        let sent = self
            .to_server
            .send(message)
            .map_err(|_| "the in-memory server is gone".to_owned());
        Box::pin(async move { sent })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.connection.lock().await.recv().await })
    }
}
