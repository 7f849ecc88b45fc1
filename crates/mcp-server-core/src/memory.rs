//! An in-memory transport: a connection to a [`Service`] over channels, framed like stdio
//! (one message per send). Tests and in-process clients use it.

use mcp_types::JsonRpcMessage;
use tokio::sync::mpsc;

use crate::service::Service;
use crate::transport::TransportContext;

/// The client end of an in-memory connection.
#[derive(Debug)]
pub struct MemoryConnection {
    to_server: mpsc::UnboundedSender<Vec<u8>>,
    from_server: mpsc::UnboundedReceiver<JsonRpcMessage>,
}

impl MemoryConnection {
    /// Opens a connection to `service`; the session lives until this end is dropped.
    pub fn connect(service: &Service, transport: TransportContext) -> Self {
        let (to_server, mut incoming) = mpsc::unbounded_channel::<Vec<u8>>();
        let (out, from_server) = mpsc::unbounded_channel();
        let (session, mut unsolicited) = service.connect(transport);
        let forward = out.clone();
        tokio::spawn(async move {
            while let Some(message) = unsolicited.recv().await {
                if forward.send(message).is_err() {
                    return;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(bytes) = incoming.recv().await {
                let Some(mut stream) = session.handle_bytes(&bytes) else {
                    continue;
                };
                let out = out.clone();
                tokio::spawn(async move {
                    while let Some(message) = stream.next().await {
                        if out.send(message).is_err() {
                            return;
                        }
                    }
                });
            }
            session.close();
        });
        MemoryConnection {
            to_server,
            from_server,
        }
    }

    /// A sender that outlives borrows of the connection (for transports that read and write
    /// from different tasks).
    pub fn sender(&self) -> impl Fn(&JsonRpcMessage) -> bool + Send + Sync + 'static + use<> {
        let to_server = self.to_server.clone();
        move |message| to_server.send(message.to_string().into_bytes()).is_ok()
    }

    /// Sends raw bytes, exactly as a stdio line would carry them.
    pub fn send_raw(&self, bytes: impl Into<Vec<u8>>) -> bool {
        self.to_server.send(bytes.into()).is_ok()
    }

    /// Sends a message.
    pub fn send(&self, message: &JsonRpcMessage) -> bool {
        self.send_raw(message.to_string())
    }

    /// The next message from the server, or `None` once the connection is gone.
    pub async fn recv(&mut self) -> Option<JsonRpcMessage> {
        self.from_server.recv().await
    }
}
