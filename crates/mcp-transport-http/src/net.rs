//! Socket settings every connection of this crate gets, accepted or opened.
//!
//! MCP traffic is small messages that must arrive now: an SSE event carrying an elicitation or
//! a tool result, a short POST answering it. With Nagle's algorithm on, a small write waits for
//! the peer to acknowledge the previous one, and a peer that delays its ACK (Linux does, up to
//! 40 ms) stalls the stream. So every socket sets `TCP_NODELAY`.
//!
//! With the `tls` feature the client connector is rustls (ring) over that same TCP connector,
//! speaking `http://` and `https://`.

#[cfg(feature = "client")]
use bytes::Bytes;
#[cfg(feature = "client")]
use http_body_util::Full;
#[cfg(feature = "client")]
use hyper_util::client::legacy::Client as HyperClient;
#[cfg(feature = "client")]
use hyper_util::client::legacy::connect::HttpConnector;
#[cfg(feature = "client")]
use hyper_util::rt::TokioExecutor;
use tokio::net::TcpStream;

/// The connector of the MCP transport and the OAuth fetcher.
#[cfg(all(feature = "client", feature = "tls"))]
pub(crate) type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
/// The connector of the MCP transport and the OAuth fetcher.
#[cfg(all(feature = "client", not(feature = "tls")))]
pub(crate) type Connector = HttpConnector;
/// The hyper client of the MCP transport and the OAuth fetcher.
#[cfg(feature = "client")]
pub(crate) type HttpClient = HyperClient<Connector, Full<Bytes>>;

/// A client on [`connector`]: plain HTTP only.
#[cfg(all(feature = "client", not(feature = "tls")))]
pub(crate) fn client() -> HttpClient {
    HyperClient::builder(TokioExecutor::new()).build(connector())
}

/// A client speaking `http://` and `https://`, verifying servers with `tls`, over
/// [`connector`] (so TLS sockets have `TCP_NODELAY` too).
#[cfg(all(feature = "client", feature = "tls"))]
pub(crate) fn client(tls: rustls::ClientConfig) -> HttpClient {
    HyperClient::builder(TokioExecutor::new()).build(tls_connector(tls))
}

/// rustls over [`connector`], for `http://` and `https://` URLs.
#[cfg(all(feature = "client", feature = "tls"))]
fn tls_connector(tls: rustls::ClientConfig) -> Connector {
    let mut tcp = connector();
    tcp.enforce_http(false);
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp)
}

/// The rustls client configuration for `roots`: ring, TLS 1.2 and 1.3, no client certificate.
#[cfg(all(feature = "client", feature = "tls"))]
pub(crate) fn tls_config(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig, String> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Mozilla's root certificates (`webpki-roots`), the default trust store.
#[cfg(all(feature = "client", feature = "tls"))]
pub(crate) fn mozilla_roots() -> rustls::RootCertStore {
    rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// An error and every error below it, joined by ": ", so a refused certificate reads
/// "client error (Connect): invalid peer certificate: certificate expired: …" rather than
/// "client error (Connect)".
#[cfg(feature = "client")]
pub(crate) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// Configures a socket the server accepted. Failing to set the option is not fatal (the
/// connection still works, only slower), so it is logged and the connection served.
pub(crate) fn accepted(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY on an accepted connection");
    }
}

/// The connector of every client this crate builds (the MCP transport and the OAuth fetcher):
/// `TCP_NODELAY` on each connection it opens.
#[cfg(feature = "client")]
pub(crate) fn connector() -> HttpConnector {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "client")]
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

    #[cfg(all(feature = "client", feature = "tls"))]
    #[tokio::test]
    async fn the_tls_connector_opens_its_sockets_with_nagle_off() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri: hyper::Uri = format!("http://{}/mcp", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        let mut https = tls_connector(tls_config(mozilla_roots()).unwrap());
        let stream = https.call(uri).await.unwrap();
        let hyper_rustls::MaybeHttpsStream::Http(io) = stream else {
            panic!("an http:// URL is not TLS")
        };
        assert!(io.inner().nodelay().unwrap());
    }

    #[cfg(feature = "client")]
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
