//! DPoP on `OAuth`: turning it on, and the proof each request carries.

use super::jwt::SigningKey;
use super::{HttpRequest, HttpResponse, OAuth, OAuthError};
use std::sync::atomic::Ordering;

use crate::oauth::dpop::{Dpop, asks_for_nonce, origin};

impl OAuth {
    /// Uses DPoP with `key` (RFC 9449): token requests carry proofs, and DPoP tokens are
    /// presented with the `DPoP` scheme and a proof per request. [`SigningKey::generate_es256`]
    /// makes a fresh key.
    pub fn with_dpop(mut self, key: SigningKey) -> Self {
        self.dpop = Some(Dpop::new(key));
        self
    }

    /// The thumbprint (`jkt`) of the DPoP key, if DPoP is on.
    pub fn dpop_thumbprint(&self) -> Option<String> {
        self.dpop.as_ref().map(|d| d.key.thumbprint())
    }

    /// Whether the token held is DPoP-bound: send it as `Authorization: DPoP` with
    /// [`OAuth::dpop_proof`].
    pub fn is_dpop_bound(&self) -> bool {
        self.dpop
            .as_ref()
            .is_some_and(|d| d.bound.load(Ordering::Relaxed))
    }

    /// A fresh DPoP proof for a request to the MCP server carrying `access_token`, when the
    /// token is DPoP-bound.
    pub fn dpop_proof(&self, method: &str, url: &str, access_token: &str) -> Option<String> {
        let dpop = self.dpop.as_ref()?;
        if !dpop.bound.load(Ordering::Relaxed) {
            return None;
        }
        match dpop.proof(method, url, Some(access_token)) {
            Ok(proof) => Some(proof),
            Err(e) => {
                tracing::warn!(error = %e, "could not sign a DPoP proof");
                None
            }
        }
    }

    /// Handles a response from the MCP server at `url` that may carry a `DPoP-Nonce`: true
    /// when it is a `use_dpop_nonce` challenge with a new nonce, so the request is worth
    /// sending again.
    pub fn dpop_nonce_challenge(
        &self,
        url: &str,
        www_authenticate: Option<&str>,
        dpop_nonce: Option<&str>,
    ) -> bool {
        let (Some(dpop), Some(nonce), Some(origin)) = (&self.dpop, dpop_nonce, origin(url)) else {
            return false;
        };
        let changed = dpop.remember(origin, nonce);
        changed && www_authenticate.is_some_and(|h| h.contains("use_dpop_nonce"))
    }

    /// Records whether the token endpoint issued a DPoP token; `Err` for a type this client
    /// cannot present.
    pub(super) fn accept_token_type(
        &self,
        endpoint: &str,
        token_type: Option<&str>,
    ) -> Result<(), OAuthError> {
        let dpop = token_type.is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
        match (token_type, &self.dpop) {
            (None, _) => {}
            (Some(t), _) if t.eq_ignore_ascii_case("bearer") => {}
            (Some(_), Some(_)) if dpop => {}
            (Some(kind), _) => {
                return Err(OAuthError::Token(format!(
                    "{endpoint} issued a {kind} token; only Bearer{} tokens are supported",
                    if self.dpop.is_some() { " and DPoP" } else { "" }
                )));
            }
        }
        if let Some(d) = &self.dpop {
            d.bound.store(dpop, Ordering::Relaxed);
        }
        Ok(())
    }

    /// POSTs a token request, with a DPoP proof when DPoP is on, retrying once with the
    /// nonce of a `use_dpop_nonce` answer.
    pub(super) async fn token_post(
        &self,
        request: HttpRequest,
    ) -> Result<HttpResponse, OAuthError> {
        let Some(dpop) = &self.dpop else {
            return self.fetch.fetch(request).await.map_err(OAuthError::Http);
        };
        let mut retried = false;
        loop {
            let mut signed = request.clone();
            signed
                .headers
                .push(("DPoP".into(), dpop.proof("POST", &request.url, None)?));
            let response = self.fetch.fetch(signed).await.map_err(OAuthError::Http)?;
            let fresh = match (response.header("dpop-nonce"), origin(&request.url)) {
                (Some(nonce), Some(origin)) => dpop.remember(origin, nonce),
                _ => false,
            };
            if response.status == 400 && asks_for_nonce(&response) && fresh && !retried {
                retried = true;
                continue;
            }
            return Ok(response);
        }
    }
}
