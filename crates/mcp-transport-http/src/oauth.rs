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

/// [`mcp_client::oauth::HttpFetch`] on the transport's hyper client: http:// only, redirects
/// returned as they are.
#[cfg(feature = "oauth")]
pub(crate) struct HyperFetch {
    client: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        http_body_util::Full<bytes::Bytes>,
    >,
}

#[cfg(feature = "oauth")]
impl HyperFetch {
    pub(crate) fn new(
        client: hyper_util::client::legacy::Client<
            hyper_util::client::legacy::connect::HttpConnector,
            http_body_util::Full<bytes::Bytes>,
        >,
    ) -> Self {
        HyperFetch { client }
    }
}

#[cfg(feature = "oauth")]
impl mcp_client::oauth::HttpFetch for HyperFetch {
    fn fetch(
        &self,
        request: mcp_client::oauth::HttpRequest,
    ) -> mcp_client::BoxFuture<'_, Result<mcp_client::oauth::HttpResponse, String>> {
        use http_body_util::BodyExt;
        Box::pin(async move {
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
                .map_err(|e| format!("{}: {e}", request.url))?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("{}: {e}", request.url))?
                .to_bytes()
                .to_vec();
            Ok(mcp_client::oauth::HttpResponse {
                status,
                headers,
                body,
            })
        })
    }
}
