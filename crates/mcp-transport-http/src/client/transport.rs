//! [`HttpTransport`]: building one (URL, headers, limits, roots, OAuth), and the
//! `mcp_client::Transport` it implements; sending is `send.rs`'s.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri};
use mcp_client::{BoxFuture, LocalFailure, Transport};
use mcp_types::{JsonRpcMessage, RequestId};
use tokio::sync::mpsc;

use super::state::{DEFAULT_MAX_MESSAGE, DEFAULT_MAX_RETRY, INCOMING_QUEUE, Limits, Link, State};
use crate::headers;
use crate::oauth::Auth;

/// A client connection to a Streamable HTTP endpoint.
pub struct HttpTransport {
    link: Link,
    /// The roots servers are verified against (feature `tls`).
    #[cfg(feature = "tls")]
    roots: rustls::RootCertStore,
    rx: tokio::sync::Mutex<mpsc::Receiver<JsonRpcMessage>>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.link.url)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// A transport to `url` (e.g. `https://mcp.example.com/mcp` or
    /// `http://127.0.0.1:8000/mcp`). With the `tls` feature, `https://` servers are verified
    /// against Mozilla's root certificates (see [`add_root_pem`](Self::add_root_pem) and
    /// `native_roots`); without it only `http://` is accepted.
    pub fn new(url: &str) -> Result<Self, String> {
        let url: Uri = url
            .parse()
            .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        match url.scheme_str() {
            Some("http") => {}
            #[cfg(feature = "tls")]
            Some("https") => {}
            #[cfg(not(feature = "tls"))]
            Some("https") => {
                return Err(
                    "https:// needs the `tls` feature of mcp-transport-http (on by default in `mcp`)"
                        .into(),
                );
            }
            _ => return Err(format!("{url} is not an http:// or https:// URL")),
        }
        #[cfg(feature = "tls")]
        let roots = crate::net::mozilla_roots();
        #[cfg(feature = "tls")]
        let client = crate::net::client(crate::net::tls_config(roots.clone())?);
        #[cfg(not(feature = "tls"))]
        let client = crate::net::client();
        let (tx, rx) = mpsc::channel(INCOMING_QUEUE);
        Ok(HttpTransport {
            link: Link {
                url,
                client,
                extra_headers: HeaderMap::new(),
                auth: Auth::default(),
                state: Arc::new(State::new(Limits {
                    max_message: DEFAULT_MAX_MESSAGE,
                    max_retry: DEFAULT_MAX_RETRY,
                })),
                tx,
            },
            #[cfg(feature = "tls")]
            roots,
            rx: tokio::sync::Mutex::new(rx),
        })
    }

    /// Adds a header to every request (e.g. `Authorization: Bearer …`).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, String> {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
        let value = HeaderValue::from_str(value).map_err(|e| e.to_string())?;
        self.link.extra_headers.insert(name, value);
        Ok(self)
    }

    /// The largest JSON response body or SSE event accepted from the server (default
    /// [`DEFAULT_MAX_MESSAGE`], 16 MiB). A larger answer fails its request with "the server's
    /// answer is larger than the N-byte limit"; a larger SSE event abandons the stream.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        if let Some(state) = Arc::get_mut(&mut self.link.state) {
            state.limits.max_message = bytes;
        }
        self
    }

    /// The longest reconnection delay an SSE `retry:` field may ask for (default
    /// [`DEFAULT_MAX_RETRY`], one minute); longer ones are cut to it, shorter than
    /// [`MIN_RETRY`](crate::MIN_RETRY) raised to that.
    pub fn max_retry_delay(mut self, delay: Duration) -> Self {
        if let Some(state) = Arc::get_mut(&mut self.link.state) {
            state.limits.max_retry = delay;
        }
        self
    }

    /// Also trusts the CA certificates in `pem` (one or more `-----BEGIN CERTIFICATE-----`
    /// blocks) for `https://` servers: a private CA, or a test one.
    #[cfg(feature = "tls")]
    pub fn add_root_pem(mut self, pem: &[u8]) -> Result<Self, String> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("reading a root certificate: {e}"))?;
            self.roots
                .add(cert)
                .map_err(|e| format!("a root certificate was refused: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err("no certificate found in the PEM text".into());
        }
        self.link.client = crate::net::client(crate::net::tls_config(self.roots.clone())?);
        Ok(self)
    }

    /// Verifies `https://` servers against the platform's certificate store (and
    /// `SSL_CERT_FILE` when set) instead of Mozilla's roots.
    #[cfg(feature = "native-roots")]
    pub fn native_roots(mut self) -> Result<Self, String> {
        let found = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(format!(
                "no usable certificate in the platform store ({} errors)",
                found.errors.len()
            ));
        }
        self.roots = roots;
        self.link.client = crate::net::client(crate::net::tls_config(self.roots.clone())?);
        Ok(self)
    }

    /// A bearer token on every request.
    pub fn bearer(self, token: &str) -> Result<Self, String> {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// Authorizes with OAuth when the server answers 401, and asks for more scope on a 403
    /// `insufficient_scope` (once per request each); the token then goes on every request.
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: Arc<mcp_client::oauth::OAuth>) -> Self {
        self.link.auth = Auth::new(oauth);
        self
    }

    /// Plain HTTP requests for OAuth discovery, registration and tokens over this transport's
    /// connection pool (`https://` with the `tls` feature; redirects are not followed; bodies
    /// capped at [`crate::DEFAULT_MAX_FETCH_BODY`], each fetch bounded by
    /// [`crate::DEFAULT_FETCH_TIMEOUT`]).
    #[cfg(feature = "oauth")]
    pub fn fetcher(&self) -> Arc<dyn mcp_client::oauth::HttpFetch> {
        Arc::new(crate::oauth::HyperFetch::new(self.link.client.clone()))
    }

    #[cfg(all(test, feature = "oauth"))]
    pub(crate) fn http_client(&self) -> crate::net::HttpClient {
        self.link.client.clone()
    }
}

impl Transport for HttpTransport {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(super::send::send(&self.link, message))
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.rx.lock().await.recv().await })
    }

    fn error(&self) -> Option<String> {
        self.link.state.error.lock().ok().and_then(|e| e.clone())
    }

    fn local_failure(&self, id: &RequestId) -> Option<LocalFailure> {
        let mut failures = self.link.state.failures.lock().ok()?;
        let at = failures.iter().position(|(failed, _)| failed == id)?;
        failures.remove(at).map(|(_, why)| why)
    }

    fn server_identity(&self) -> Option<String> {
        Some(self.link.url.to_string())
    }

    fn principal(&self) -> Option<String> {
        // The credential this transport presents: the OAuth token, else an Authorization
        // header it was given. Only its digest leaves here.
        let credential = self.link.auth.token().or_else(|| {
            self.link
                .extra_headers
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })?;
        let digest = ring::digest::digest(&ring::digest::SHA256, credential.as_bytes());
        Some(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Ok(mut f) = self.link.state.in_flight.lock() {
                f.drain().for_each(|(_, h)| h.abort());
            }
            if let Some(listener) = self
                .link
                .state
                .listener
                .lock()
                .ok()
                .and_then(|mut l| l.take())
            {
                listener.abort();
            }
            let session = self
                .link
                .state
                .session_id
                .lock()
                .ok()
                .and_then(|mut s| s.take());
            if let Some(session) = session
                && let Ok(request) = Request::builder()
                    .method(Method::DELETE)
                    .uri(self.link.url.clone())
                    .header(headers::SESSION_ID, session)
                    .body(Full::new(Bytes::new()))
            {
                let _ = self.link.client.request(request).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::state::MAX_FAILURES;

    #[tokio::test]
    async fn failed_requests_leave_no_in_flight_entry_and_failures_stay_bounded() {
        let port = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Nothing listens there any more: every request fails before reaching a server.
        let transport = HttpTransport::new(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
        let count = MAX_FAILURES as i64 + 50;
        for i in 0..count {
            let request =
                mcp_types::JsonRpcRequest::new(i, "ping", &serde_json::json!({})).unwrap();
            transport
                .send(JsonRpcMessage::Request(request))
                .await
                .unwrap();
        }
        for _ in 0..count {
            let message = transport.receive().await.unwrap();
            assert!(matches!(message, JsonRpcMessage::Error(_)), "{message}");
        }
        // Each task has sent its error; wait for all of them to end.
        while !transport.link.state.in_flight.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            transport.link.state.failures.lock().unwrap().len(),
            MAX_FAILURES
        );
        assert!(
            transport
                .local_failure(&RequestId::Number(count - 1))
                .unwrap()
                .why
                .starts_with("HTTP request failed")
        );
        assert_eq!(transport.local_failure(&RequestId::Number(0)), None);
    }
}
