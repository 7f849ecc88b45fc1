//! Socket settings every connection of this crate gets, accepted or opened.
//!
//! MCP traffic is small messages that must arrive now: an SSE event carrying an elicitation or
//! a tool result, a short POST answering it. With Nagle's algorithm on, a small write waits for
//! the peer to acknowledge the previous one, and a peer that delays its ACK (Linux does, up to
//! 40 ms) stalls the stream. So every socket sets `TCP_NODELAY`.

use hyper_util::client::legacy::connect::HttpConnector;
use tokio::net::TcpStream;

/// Configures a socket the server accepted. Failing to set the option is not fatal (the
/// connection still works, only slower), so it is logged and the connection served.
pub(crate) fn accepted(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY on an accepted connection");
    }
}

/// The connector of every client this crate builds (the MCP transport and the OAuth fetcher):
/// `TCP_NODELAY` on each connection it opens.
pub(crate) fn connector() -> HttpConnector {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_service::Service;

    #[tokio::test]
    async fn accepted_sockets_disable_nagle() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        assert!(!stream.nodelay().unwrap(), "sockets start with Nagle on");
        accepted(&stream);
        assert!(stream.nodelay().unwrap());
    }

    #[tokio::test]
    async fn client_connections_disable_nagle() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri: hyper::Uri = format!("http://{}/mcp", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        let mut connector = connector();
        let io = connector.call(uri).await.unwrap();
        assert!(io.inner().nodelay().unwrap());
    }
}
