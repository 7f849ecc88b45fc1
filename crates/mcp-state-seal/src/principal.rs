//! Who a `requestState` was minted for. The `p` claim is a salted hash of the
//! principal, so state minted for one user does not verify for another, and the
//! token does not reveal who the user is.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};

use crate::b64url;
use crate::error::{BindPrincipalError, SealError};
use crate::pywrite::write_str;

const LABEL: &[u8] = b"mcp/request-state/principal:";
const SALT_LEN: usize = 8;
const TAG_LEN: usize = 16;
/// `salt ‖ tag`, base64url without padding: 32 characters.
pub(crate) const CLAIM_LEN: usize = 32;

/// The authenticated identity a request runs as: the OAuth client, the token
/// issuer and the subject, as the Python SDK's `authenticated_principal` reads
/// them from the validated access token.
///
/// ```
/// use mcp_state_seal::Principal;
///
/// let alice = Principal::new("client-a").issuer("https://issuer.example").subject("alice");
/// assert_eq!(alice.to_json(), r#"["client-a","https://issuer.example","alice"]"#);
/// assert_eq!(Principal::new("client-a").to_json(), r#"["client-a",null,null]"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The OAuth client id.
    pub client_id: String,
    /// The `iss` claim of the access token, when the verifier supplies it.
    pub issuer: Option<String>,
    /// The subject (user) of the access token, when the verifier supplies it.
    pub subject: Option<String>,
}

impl Principal {
    /// A principal known by its client id only.
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            issuer: None,
            subject: None,
        }
    }

    /// Sets the token issuer.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Sets the subject.
    #[must_use]
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// The string that is hashed: compact JSON `[client_id, issuer, subject]`,
    /// `null` where missing, ASCII-escaped like Python's `json.dumps`.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(self.client_id.len() + 32);
        self.write_json(&mut out);
        crate::canonical::ascii_to_string(out)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        write_str(out, &self.client_id);
        for part in [&self.issuer, &self.subject] {
            out.push(b',');
            match part {
                Some(s) => write_str(out, s),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b']');
    }

    /// The `p` claim for this principal: `base64url(salt[8] ‖ SHA-256("mcp/request-state/principal:" ‖ salt ‖ json)[..16])`
    /// with a fresh random salt, so two claims for one principal differ.
    pub(crate) fn claim(&self, rng: &SystemRandom) -> Result<[u8; CLAIM_LEN], SealError> {
        let mut raw = [0u8; SALT_LEN + TAG_LEN];
        rng.fill(&mut raw[..SALT_LEN])
            .map_err(|_| SealError::Random)?;
        let mut salt = [0u8; SALT_LEN];
        salt.copy_from_slice(&raw[..SALT_LEN]);
        raw[SALT_LEN..].copy_from_slice(&self.tag(&salt));
        let mut text = [0u8; CLAIM_LEN];
        // 24 bytes always encode to exactly 32 characters.
        let _ = base64::Engine::encode_slice(&b64url::ENGINE, raw, &mut text);
        Ok(text)
    }

    /// Whether `claim` was minted for this principal. Compares in constant time.
    pub fn matches_claim(&self, claim: &str) -> bool {
        let Some(raw) = b64url::decode_canonical_small::<{ SALT_LEN + TAG_LEN }>(claim) else {
            return false;
        };
        let mut salt = [0u8; SALT_LEN];
        salt.copy_from_slice(&raw[..SALT_LEN]);
        let expected = self.tag(&salt);
        let diff = raw[SALT_LEN..]
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }

    fn tag(&self, salt: &[u8; SALT_LEN]) -> [u8; TAG_LEN] {
        let mut json = Vec::with_capacity(self.client_id.len() + 32);
        self.write_json(&mut json);
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(LABEL);
        ctx.update(salt);
        ctx.update(&json);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&ctx.finish().as_ref()[..TAG_LEN]);
        tag
    }
}

/// What a principal binding sees of the request: the method, the principal the
/// server authenticated (if any), and the server's own request context.
///
/// The server layer builds it; a deployment whose authentication ends in front
/// of the server (a gateway that forwards the user in a header) downcasts
/// [`context`](Self::context) to the type its server documents and reads the
/// identity from there.
#[derive(Clone, Copy)]
pub struct PrincipalSource<'a> {
    method: &'a str,
    authenticated: Option<&'a Principal>,
    context: Option<&'a (dyn Any + Send + Sync)>,
}

impl<'a> PrincipalSource<'a> {
    /// The source for a request to `method`, run as `authenticated`.
    pub fn new(method: &'a str, authenticated: Option<&'a Principal>) -> Self {
        Self {
            method,
            authenticated,
            context: None,
        }
    }

    /// Attaches the server's request context for custom bindings to inspect.
    #[must_use]
    pub fn with_context(mut self, context: &'a (dyn Any + Send + Sync)) -> Self {
        self.context = Some(context);
        self
    }

    /// The JSON-RPC method of the request.
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The principal the server authenticated, `None` on unauthenticated
    /// transports (stdio, HTTP without auth).
    pub fn authenticated(&self) -> Option<&'a Principal> {
        self.authenticated
    }

    /// The server's request context, if the server layer attached one.
    pub fn context(&self) -> Option<&'a (dyn Any + Send + Sync)> {
        self.context
    }

    /// The context as a `T`, if it is one.
    pub fn context_as<T: Any>(&self) -> Option<&'a T> {
        self.context.and_then(|c| c.downcast_ref::<T>())
    }
}

impl fmt::Debug for PrincipalSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrincipalSource")
            .field("method", &self.method)
            .field("authenticated", &self.authenticated)
            .field("context", &self.context.map(|_| "..."))
            .finish()
    }
}

/// The signature of a principal binding hook.
pub(crate) type BindPrincipalFn =
    dyn Fn(&PrincipalSource<'_>) -> Result<Option<Principal>, BindPrincipalError> + Send + Sync;

/// How the principal of a request is found: the server's authenticated
/// principal, or the deployment's own hook.
#[derive(Clone, Default)]
pub(crate) enum PrincipalBinding {
    #[default]
    Authenticated,
    Custom(Arc<BindPrincipalFn>),
}

impl PrincipalBinding {
    pub(crate) fn resolve(
        &self,
        source: &PrincipalSource<'_>,
    ) -> Result<Option<Principal>, BindPrincipalError> {
        match self {
            Self::Authenticated => Ok(source.authenticated.cloned()),
            Self::Custom(hook) => hook(source),
        }
    }
}

impl fmt::Debug for PrincipalBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Authenticated => "authenticated",
            Self::Custom(_) => "custom",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_salted_and_verify() {
        let rng = SystemRandom::new();
        let alice = Principal::new("c").subject("alice");
        let a = alice.claim(&rng).unwrap();
        let b = alice.claim(&rng).unwrap();
        assert_ne!(a, b);
        for claim in [a, b] {
            let claim = std::str::from_utf8(&claim).unwrap();
            assert_eq!(claim.len(), CLAIM_LEN);
            assert!(alice.matches_claim(claim));
            assert!(!Principal::new("c").subject("bob").matches_claim(claim));
            assert!(!alice.matches_claim(&claim[..31]));
            assert!(!alice.matches_claim(&format!("{claim}A")));
        }
    }

    #[test]
    fn non_ascii_principals_are_escaped() {
        let p = Principal::new("clé").issuer("https://i/").subject("😀");
        assert_eq!(p.to_json(), r#"["cl\u00e9","https://i/","\ud83d\ude00"]"#);
    }
}
