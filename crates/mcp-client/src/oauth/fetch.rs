//! The HTTP the OAuth flows make: requests and responses (their `Debug` hides what may be
//! secret), the [`HttpFetch`] trait that sends them, and the guard every fetch goes through.

use std::fmt;
use std::sync::Arc;

use super::text::RawUrl;
use crate::transport::BoxFuture;

/// One HTTP request made during authorization. Its `Debug` output shows no header value and
/// no body: they may hold a client secret or a code.
#[derive(Clone)]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The absolute URL.
    pub url: String,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url.split('?').next().unwrap_or_default())
            .field("headers", &names)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// Its response. Its `Debug` output shows no body: it may hold a token.
#[derive(Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `Location` may carry an authorization code, `Set-Cookie` a session, and
        // `Authorization` a credential: their values are never printed.
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let secret = ["location", "set-cookie", "authorization"]
                    .iter()
                    .any(|s| name.eq_ignore_ascii_case(s));
                (
                    name.as_str(),
                    if secret { "[redacted]" } else { value.as_str() },
                )
            })
            .collect();
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &headers)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// Whether `url` may carry OAuth traffic: `https://`, or `http://` to a loopback host
/// (`localhost`, `127.0.0.0/8`, `[::1]`), where nothing crosses a network.
pub fn is_secure_endpoint(url: &str) -> bool {
    let Some(parsed) = RawUrl::parse(url) else {
        return false;
    };
    if parsed.scheme.eq_ignore_ascii_case("https") {
        return true;
    }
    let host = match parsed.authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => parsed.authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The default of [`OAuthConfig::fetch_timeout`](super::OAuthConfig::fetch_timeout): 30 s.
pub const DEFAULT_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Every fetch of an [`OAuth`](super::OAuth) goes through this: endpoints that are neither `https` nor
/// loopback are refused before anything is sent, and each fetch has a deadline.
pub(super) struct Guarded {
    pub(super) inner: Arc<dyn HttpFetch>,
    pub(super) timeout: std::time::Duration,
}

impl HttpFetch for Guarded {
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        Box::pin(async move {
            let shown = request.url.split('?').next().unwrap_or_default().to_owned();
            if !is_secure_endpoint(&request.url) {
                return Err(format!(
                    "{shown} is not https (only loopback hosts may use http://); nothing was sent"
                ));
            }
            match tokio::time::timeout(self.timeout, self.inner.fetch(request)).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "{shown} did not answer within {} ms (OAuthConfig::fetch_timeout)",
                    self.timeout.as_millis()
                )),
            }
        })
    }
}

impl HttpResponse {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Makes plain HTTP requests for discovery, registration and token calls. It must not follow
/// redirects.
pub trait HttpFetch: Send + Sync + 'static {
    /// Sends `request`; `Err` only when no response arrived.
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>>;
}
