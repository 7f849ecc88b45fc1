//! TLS for the server (feature `tls`): the endpoint served over rustls (ring), for those who
//! terminate TLS in-process rather than in a proxy.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::{Request, Response, StatusCode};
use mcp_server_core::Service;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

use crate::{HEADER_READ_TIMEOUT, McpBody, McpHttpService, SHUTDOWN_GRACE};

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
    /// [`serve_with_shutdown`](Self::serve_with_shutdown) over TLS: each accepted connection
    /// completes its handshake within [`TLS_HANDSHAKE_TIMEOUT`] or is dropped.
    pub async fn serve_tls_with_shutdown(
        self,
        listener: TcpListener,
        path: &str,
        config: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let path: Arc<str> = Arc::from(path);
        let metadata: Option<Arc<str>> = self.metadata_path().map(Arc::from);
        let mut backoff = Duration::from_millis(50);
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => {
                        backoff = Duration::from_millis(50);
                        accepted
                    }
                    Err(e) => {
                        // Out of file descriptors fails again at once: wait before retrying.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            crate::net::accepted(&stream);
            let endpoint = self.clone();
            let path = path.clone();
            let metadata = metadata.clone();
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let endpoint = endpoint.clone();
                    let served = request.uri().path() == &*path
                        || metadata.as_deref() == Some(request.uri().path());
                    async move {
                        if !served {
                            let mut response = Response::new(McpBody::full("Not Found"));
                            *response.status_mut() = StatusCode::NOT_FOUND;
                            return Ok::<_, Infallible>(response);
                        }
                        Ok(endpoint.handle(request).await)
                    }
                });
            let acceptor = acceptor.clone();
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let tls = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                    .await
                {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        return tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    }
                    Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
                };
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service);
                if let Err(e) = watcher.watch(connection).await {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
            });
        }
        drop(listener);
        self.service().shutdown();
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("requests were still in flight after the shutdown grace period");
        }
        Ok(())
    }
}
