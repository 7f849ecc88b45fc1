//! DPoP (RFC 9449): sender-constrained tokens. With a DPoP key ([`OAuth::with_dpop`](crate::oauth::OAuth::with_dpop)) every
//! token request carries a proof (`htm`, `htu`, `iat`, `jti`, the public key in the header);
//! when the authorization server answers with a `DPoP` token, every request to the MCP server
//! carries `Authorization: DPoP <token>` and a fresh proof with `ath`, the token's hash. A
//! `use_dpop_nonce` answer from either server is retried once with the nonce it supplied.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::jwt::{SigningKey, now};
use super::random::random_token;
use super::text::RawUrl;
use super::{HttpResponse, OAuthError};

/// How many servers' nonces are remembered; the oldest is forgotten first.
const MAX_NONCES: usize = 32;
/// The longest nonce kept (RFC 9449 nonces are short opaque strings).
const MAX_NONCE_LEN: usize = 512;

/// A DPoP key and the nonces servers gave it.
pub(super) struct Dpop {
    pub(super) key: SigningKey,
    /// `(origin, nonce)`, newest last.
    nonces: Mutex<Vec<(String, String)>>,
    /// Whether the token held was issued as a DPoP token.
    pub(super) bound: AtomicBool,
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

    pub(super) fn remember(&self, origin: String, nonce: &str) -> bool {
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
    pub(super) fn proof(
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

pub(super) fn origin(url: &str) -> Option<String> {
    RawUrl::parse(url).map(|u| u.origin())
}

/// Whether a token endpoint's error body is `use_dpop_nonce`.
pub(super) fn asks_for_nonce(response: &HttpResponse) -> bool {
    serde_json::from_slice::<Value>(&response.body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
        .is_some_and(|e| e == "use_dpop_nonce")
}
