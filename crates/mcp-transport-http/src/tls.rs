//! TLS for the server (feature `tls`): the endpoint served over rustls (ring), for those who
//! terminate TLS in-process rather than in a proxy.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::Service;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};

use crate::server::{HEADER_READ_TIMEOUT, Handshake, McpHttpService};

/// How long a TLS handshake may take before the connection is dropped.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = HEADER_READ_TIMEOUT;

/// A rustls server configuration (ring, TLS 1.2 and 1.3, HTTP/1.1) from a PEM certificate
/// chain (the server's certificate first) and a PEM private key (PKCS#8, PKCS#1 or SEC1).
pub fn server_config(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, String> {
    let chain = CertificateDer::pem_slice_iter(cert_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("reading the certificate chain: {e}"))?;
    if chain.is_empty() {
        return Err("the certificate chain holds no certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| format!("reading the private key: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key do not make a TLS identity: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves `service` at `https://{addr}/mcp` with the PEM certificate chain and key until the
/// process ends.
pub async fn serve_tls(
    service: Service,
    addr: impl tokio::net::ToSocketAddrs,
    cert_chain_pem: &[u8],
    key_pem: &[u8],
) -> std::io::Result<()> {
    let config = server_config(cert_chain_pem, key_pem).map_err(std::io::Error::other)?;
    let listener = TcpListener::bind(addr).await?;
    McpHttpService::new(service)
        .serve_tls_with_shutdown(listener, "/mcp", config, std::future::pending())
        .await
}

impl McpHttpService {
    /// [`serve_with_shutdown`](Self::serve_with_shutdown) over TLS, with everything it does:
    /// the connection cap (`max_connections`) taken before the handshake, the readiness
    /// path, the drain, closing legacy sessions at shutdown (review W7). Each accepted
    /// connection completes its handshake within [`TLS_HANDSHAKE_TIMEOUT`] or is dropped; a
    /// connection past the cap is closed without a handshake.
    pub async fn serve_tls_with_shutdown(
        self,
        listener: TcpListener,
        path: &str,
        config: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let tls = Tls(tokio_rustls::TlsAcceptor::from(config));
        self.serve_accepted(listener, path, shutdown, tls).await
    }
}

/// The TLS handshake of an accepted connection.
#[derive(Clone)]
struct Tls(tokio_rustls::TlsAcceptor);

impl Handshake for Tls {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;

    async fn handshake(&self, stream: TcpStream, peer: SocketAddr) -> Option<Self::Io> {
        match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, self.0.accept(stream)).await {
            Ok(Ok(tls)) => Some(tls),
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                None
            }
        }
    }

    /// A plain-text 503 means nothing to a TLS client: the connection is closed.
    async fn refuse(stream: TcpStream) {
        drop(stream);
    }
}
