//! DPoP (RFC 9449): sender-constrained tokens. With a DPoP key ([`OAuth::with_dpop`]) every
//! token request carries a proof (`htm`, `htu`, `iat`, `jti`, the public key in the header);
//! when the authorization server answers with a `DPoP` token, every request to the MCP server
//! carries `Authorization: DPoP <token>` and a fresh proof with `ath`, the token's hash. A
//! `use_dpop_nonce` answer from either server is retried once with the nonce it supplied.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::authorization_code::random_token;
use super::jwt::{SigningKey, now};
use super::text::RawUrl;
use super::{HttpRequest, HttpResponse, OAuth, OAuthError};

/// How many servers' nonces are remembered; the oldest is forgotten first.
const MAX_NONCES: usize = 32;
/// The longest nonce kept (RFC 9449 nonces are short opaque strings).
const MAX_NONCE_LEN: usize = 512;

/// A DPoP key and the nonces servers gave it.
pub(super) struct Dpop {
    key: SigningKey,
    /// `(origin, nonce)`, newest last.
    nonces: Mutex<Vec<(String, String)>>,
    /// Whether the token held was issued as a DPoP token.
    bound: AtomicBool,
}

impl Dpop {
    pub(super) fn new(key: SigningKey) -> Self {
        Dpop {
            key,
            nonces: Mutex::new(Vec::new()),
            bound: AtomicBool::new(false),
        }
    }

    fn nonce(&self, origin: &str) -> Option<String> {
        let nonces = self.nonces.lock().ok()?;
        nonces
            .iter()
            .find(|(o, _)| o == origin)
            .map(|(_, n)| n.clone())
    }

    fn remember(&self, origin: String, nonce: &str) -> bool {
        let nonce = nonce.trim();
        if nonce.is_empty() || nonce.len() > MAX_NONCE_LEN || !nonce.is_ascii() {
            return false;
        }
        let Ok(mut nonces) = self.nonces.lock() else {
            return false;
        };
        let changed = !nonces.iter().any(|(o, n)| *o == origin && n == nonce);
        nonces.retain(|(o, _)| *o != origin);
        if nonces.len() >= MAX_NONCES {
            nonces.remove(0);
        }
        nonces.push((origin, nonce.to_owned()));
        changed
    }

    /// A proof for `method` on `url` (its query and fragment dropped), with `ath` when the
    /// request carries `access_token`.
    fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, OAuthError> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let mut claims = json!({
            "jti": random_token(16)?,
            "htm": method,
            "htu": htu,
            "iat": now(),
        });
        if let Some(nonce) = origin(url).and_then(|o| self.nonce(&o)) {
            claims["nonce"] = Value::String(nonce);
        }
        if let Some(token) = access_token {
            claims["ath"] = Value::String(URL_SAFE_NO_PAD.encode(ring::digest::digest(
                &ring::digest::SHA256,
                token.as_bytes(),
            )));
        }
        self.key
            .sign("dpop+jwt", &[("jwk", self.key.public_jwk())], &claims)
    }
}

fn origin(url: &str) -> Option<String> {
    RawUrl::parse(url).map(|u| u.origin())
}

/// Whether a token endpoint's error body is `use_dpop_nonce`.
fn asks_for_nonce(response: &HttpResponse) -> bool {
    serde_json::from_slice::<Value>(&response.body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
        .is_some_and(|e| e == "use_dpop_nonce")
}

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
