//! The HTTP transport's side of OAuth: which token goes on a request, and what a 401 or a 403
//! `insufficient_scope` does (authorize, or ask for more scope, once per request each). Without
//! the `oauth` feature nothing is ever retried.

#[cfg(feature = "oauth")]
use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::{HeaderName, HeaderValue};

/// What to do with a refused request.
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) enum Retry {
    /// Send it again (with the new token).
    Again,
    /// Give up with this reason.
    Fail(String),
    /// Not an authorization matter: handle the response as it is.
    Deliver,
}

/// The authorization of one transport.
#[derive(Clone, Default)]
pub(crate) struct Auth {
    #[cfg(feature = "oauth")]
    oauth: Option<Arc<mcp_client::oauth::OAuth>>,
}

/// How often a request has been retried for authorization.
#[derive(Default)]
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) struct Attempts {
    authorized: bool,
    stepped_up: bool,
    nonce: bool,
}

impl Auth {
    #[cfg(feature = "oauth")]
    pub(crate) fn new(oauth: Arc<mcp_client::oauth::OAuth>) -> Self {
        Auth { oauth: Some(oauth) }
    }

    /// The access token currently held, if any.
    pub(crate) fn token(&self) -> Option<String> {
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth {
            return oauth.access_token();
        }
        None
    }

    /// The headers that present `token` on a `method` request to `url`: `Authorization:
    /// Bearer …`, or for a DPoP-bound token `Authorization: DPoP …` and a fresh `DPoP` proof.
    pub(crate) fn headers(
        &self,
        token: Option<&str>,
        method: &str,
        url: &str,
    ) -> Vec<(HeaderName, HeaderValue)> {
        let Some(token) = token else {
            return Vec::new();
        };
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth
            && oauth.is_dpop_bound()
        {
            let proof = oauth.dpop_proof(method, url, token);
            let scheme = HeaderValue::from_str(&format!("DPoP {token}")).ok();
            let proof = proof.and_then(|p| HeaderValue::from_str(&p).ok());
            return match (scheme, proof) {
                (Some(mut scheme), Some(mut proof)) => {
                    scheme.set_sensitive(true);
                    proof.set_sensitive(true);
                    vec![
                        (hyper::header::AUTHORIZATION, scheme),
                        (HeaderName::from_static("dpop"), proof),
                    ]
                }
                _ => Vec::new(),
            };
        }
        let _ = (method, url);
        Self::bearer(Some(token))
            .map(|v| vec![(hyper::header::AUTHORIZATION, v)])
            .unwrap_or_default()
    }

    /// `Authorization: Bearer {token}`, marked sensitive.
    pub(crate) fn bearer(token: Option<&str>) -> Option<HeaderValue> {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", token?)).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// Decides what a response with `status` means for a request sent with `sent` (the token,
    /// if any) to `url`.
    pub(crate) async fn refused(
        &self,
        url: &str,
        status: StatusCode,
        www_authenticate: Option<&str>,
        dpop_nonce: Option<&str>,
        sent: Option<&str>,
        attempts: &mut Attempts,
    ) -> Retry {
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth {
            // RFC 9449 §9: a DPoP-Nonce challenge is answered once with the new nonce.
            if oauth.dpop_nonce_challenge(url, www_authenticate, dpop_nonce)
                && status == StatusCode::UNAUTHORIZED
                && !attempts.nonce
            {
                attempts.nonce = true;
                return Retry::Again;
            }
            if status == StatusCode::UNAUTHORIZED && !attempts.authorized {
                attempts.authorized = true;
                return match oauth.unauthorized(url, www_authenticate, sent).await {
                    Ok(_) => Retry::Again,
                    Err(e) => Retry::Fail(e.to_string()),
                };
            }
            let insufficient = www_authenticate.is_some_and(|h| h.contains("insufficient_scope"));
            if status == StatusCode::FORBIDDEN && insufficient && !attempts.stepped_up {
                attempts.stepped_up = true;
                return match oauth
                    .insufficient_scope(url, www_authenticate.unwrap_or_default())
                    .await
                {
                    Ok(_) => Retry::Again,
                    Err(e) => Retry::Fail(e.to_string()),
                };
            }
        }
        let _ = (url, status, www_authenticate, dpop_nonce, sent, attempts);
        Retry::Deliver
    }
}

/// The largest OAuth response body (metadata, registration, token) the transport's OAuth fetcher reads: 1 MiB.
pub const DEFAULT_MAX_FETCH_BODY: usize = 1024 * 1024;
/// How long one OAuth fetch may take, from sending the request to the end of its body.
pub const DEFAULT_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`mcp_client::oauth::HttpFetch`] on the transport's hyper client (`https://` with the `tls`
/// feature): redirects returned as they are, bodies capped at [`DEFAULT_MAX_FETCH_BODY`], each
/// fetch bounded by [`DEFAULT_FETCH_TIMEOUT`].
#[cfg(feature = "oauth")]
pub(crate) struct HyperFetch {
    client: crate::net::HttpClient,
    max_body: usize,
    timeout: std::time::Duration,
}

#[cfg(feature = "oauth")]
impl HyperFetch {
    pub(crate) fn new(client: crate::net::HttpClient) -> Self {
        HyperFetch {
            client,
            max_body: DEFAULT_MAX_FETCH_BODY,
            timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }

    #[cfg(test)]
    fn limits(mut self, max_body: usize, timeout: std::time::Duration) -> Self {
        self.max_body = max_body;
        self.timeout = timeout;
        self
    }

    async fn fetch_now(
        &self,
        request: mcp_client::oauth::HttpRequest,
    ) -> Result<mcp_client::oauth::HttpResponse, String> {
        use http_body_util::BodyExt;
        let mut builder = hyper::Request::builder()
            .method(request.method)
            .uri(request.url.as_str());
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let outgoing = builder
            .body(http_body_util::Full::new(bytes::Bytes::from(request.body)))
            .map_err(|e| format!("{}: {e}", request.url))?;
        let response = self
            .client
            .request(outgoing)
            .await
            .map_err(|e| format!("{}: {}", request.url, crate::net::describe(&e)))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let limit = self.max_body;
        let body = http_body_util::Limited::new(response.into_body(), limit)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    format!(
                        "{}: the answer is larger than the {limit}-byte limit for OAuth responses",
                        request.url
                    )
                } else {
                    format!("{}: {e}", request.url)
                }
            })?
            .to_bytes()
            .to_vec();
        Ok(mcp_client::oauth::HttpResponse {
            status,
            headers,
            body,
        })
    }
}

#[cfg(feature = "oauth")]
impl mcp_client::oauth::HttpFetch for HyperFetch {
    fn fetch(
        &self,
        request: mcp_client::oauth::HttpRequest,
    ) -> mcp_client::BoxFuture<'_, Result<mcp_client::oauth::HttpResponse, String>> {
        Box::pin(async move {
            let url = request.url.clone();
            match tokio::time::timeout(self.timeout, self.fetch_now(request)).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "{url}: no complete answer within {} s",
                    self.timeout.as_secs_f64()
                )),
            }
        })
    }
}

#[cfg(all(test, feature = "oauth"))]
mod tests {
    use super::*;
    use mcp_client::oauth::{HttpFetch, HttpRequest};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that sends `head` and then `body_len` bytes (or stalls, for `None`).
    async fn server(body_len: Option<usize>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/.well-known/oauth-authorization-server",
            listener.local_addr().unwrap()
        );
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            match body_len {
                Some(n) => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {n}\r\n\r\n"
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&vec![b' '; n]).await;
                }
                None => {
                    let _ = socket
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{")
                        .await;
                }
            }
            let _ = socket.read(&mut buf).await;
        });
        url
    }

    fn get(url: &str) -> HttpRequest {
        HttpRequest {
            method: "GET",
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    #[tokio::test]
    async fn an_oauth_body_over_the_limit_is_refused() {
        let url = server(Some(5000)).await;
        let fetch = HyperFetch::new(crate::HttpTransport::new(&url).unwrap().http_client())
            .limits(4096, DEFAULT_FETCH_TIMEOUT);
        let e = fetch.fetch(get(&url)).await.unwrap_err();
        assert_eq!(
            e,
            format!("{url}: the answer is larger than the 4096-byte limit for OAuth responses")
        );
    }

    #[tokio::test]
    async fn an_oauth_server_that_stalls_is_given_up_at_the_timeout() {
        let url = server(None).await;
        let fetch = HyperFetch::new(crate::HttpTransport::new(&url).unwrap().http_client()).limits(
            DEFAULT_MAX_FETCH_BODY,
            std::time::Duration::from_millis(200),
        );
        let e = fetch.fetch(get(&url)).await.unwrap_err();
        assert_eq!(e, format!("{url}: no complete answer within 0.2 s"));
    }
}
