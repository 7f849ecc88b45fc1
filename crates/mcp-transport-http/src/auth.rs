//! Protecting an MCP endpoint with OAuth bearer tokens.
//!
//! A [`TokenVerifier`] turns an `Authorization: Bearer` token into a [`VerifiedToken`]: the
//! authenticated principal (client id, issuer, subject), the audiences the token was issued
//! for, and its scopes. The endpoint then checks, failing closed, that the token's audience
//! names this resource (RFC 8707) and that it carries the [`ProtectedResource`]'s required
//! scopes. The principal reaches handlers and the sealing boundary, so state issued to one
//! user fails for another. Refusals answer 401 or 403 with `WWW-Authenticate` naming the
//! protected resource metadata (RFC 9728), which the endpoint also serves.

use mcp_server_core::seal::Principal;
use serde_json::{Value, json};

use crate::BoxFuture;
pub use crate::auth_error::AuthError;
use crate::dpop::{DpopReplay, check_proof};

/// What a verifier learned from a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    /// Who the request runs as.
    pub principal: Principal,
    /// The `aud` of the token: the resources it was issued for.
    pub audience: Vec<String>,
    /// The scopes it grants.
    pub scopes: Vec<String>,
    /// For a DPoP-bound token (RFC 9449), the thumbprint of its key (`cnf.jkt`): the request
    /// must then carry a proof signed by that key.
    pub dpop_jkt: Option<String>,
}

impl VerifiedToken {
    /// A token for `principal`, with no audience or scope yet.
    pub fn new(principal: Principal) -> Self {
        VerifiedToken {
            principal,
            audience: Vec::new(),
            scopes: Vec::new(),
            dpop_jkt: None,
        }
    }

    /// Marks the token as bound to the DPoP key whose RFC 7638 thumbprint is `jkt` (the
    /// token's `cnf.jkt`).
    #[must_use]
    pub fn dpop_bound(mut self, jkt: impl Into<String>) -> Self {
        self.dpop_jkt = Some(jkt.into());
        self
    }

    /// Adds an audience (a resource the token was issued for).
    #[must_use]
    pub fn audience(mut self, resource: impl Into<String>) -> Self {
        self.audience.push(resource.into());
        self
    }

    /// Sets the scopes, from a space-separated `scope` claim.
    #[must_use]
    pub fn scopes(mut self, scope: &str) -> Self {
        self.scopes = scope.split_whitespace().map(str::to_owned).collect();
        self
    }
}

/// Verifies bearer tokens for a protected MCP server (a JWT library, an introspection call...).
/// It reports what the token says; the endpoint decides whether that is enough.
pub trait TokenVerifier: Send + Sync + 'static {
    /// What `token` says, or why it is not valid (expired, bad signature, unknown).
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<VerifiedToken, AuthError>>;
}

/// This MCP server as an OAuth protected resource (RFC 9728).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResource {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    resource_name: Option<String>,
}

impl ProtectedResource {
    /// The resource identifier: this endpoint's canonical URL, e.g.
    /// `https://mcp.example.com/mcp`. Tokens must name it in their audience.
    pub fn new(resource: impl Into<String>) -> Self {
        ProtectedResource {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
        }
    }

    /// Adds an authorization server (its issuer URL) whose tokens this server accepts.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes clients may ask for (`scopes_supported`).
    #[must_use]
    pub fn scopes_supported<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        scopes: I,
    ) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes every request needs; named in the 401 challenge, and a token without them gets
    /// 403 `insufficient_scope`.
    #[must_use]
    pub fn required_scopes<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        scopes: I,
    ) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A human-readable name for consent pages.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The resource identifier.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    fn split(&self) -> (&str, &str) {
        let after_scheme = self.resource.find("://").map_or(0, |i| i + 3);
        let path_start = self.resource[after_scheme..]
            .find(['/', '?', '#'])
            .map_or(self.resource.len(), |i| after_scheme + i);
        let path = self.resource[path_start..]
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .trim_end_matches('/');
        (&self.resource[..path_start], path)
    }

    /// Where the metadata is served: `/.well-known/oauth-protected-resource` followed by the
    /// resource's path (RFC 9728 §3.1).
    pub fn metadata_path(&self) -> String {
        format!("/.well-known/oauth-protected-resource{}", self.split().1)
    }

    /// The metadata's full URL, as named in `WWW-Authenticate`.
    pub fn metadata_url(&self) -> String {
        format!("{}{}", self.split().0, self.metadata_path())
    }

    /// The metadata document.
    pub fn document(&self) -> Value {
        let mut document = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            document["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Some(name) = &self.resource_name {
            document["resource_name"] = json!(name);
        }
        document
    }

    /// Checks what the endpoint requires of a verified token: this resource in its audience,
    /// the required scopes among its scopes.
    pub(crate) fn admit(&self, token: &VerifiedToken) -> Result<(), AuthError> {
        if !token.audience.iter().any(|a| a == &self.resource) {
            return Err(AuthError::InvalidToken(
                "the token was not issued for this resource".into(),
            ));
        }
        let missing: Vec<&str> = self
            .required_scopes
            .iter()
            .filter(|s| !token.scopes.contains(s))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(AuthError::InsufficientScope(self.required_scopes.join(" ")))
        }
    }

    /// The `WWW-Authenticate` value for a refusal.
    pub(crate) fn challenge(&self, error: &AuthError) -> String {
        let mut params = vec![format!("resource_metadata=\"{}\"", self.metadata_url())];
        match error {
            AuthError::Missing => {
                if !self.required_scopes.is_empty() {
                    params.push(format!("scope=\"{}\"", self.required_scopes.join(" ")));
                }
            }
            AuthError::InvalidToken(why) => {
                params.push("error=\"invalid_token\"".to_owned());
                params.push(format!("error_description=\"{}\"", quoted(why)));
            }
            AuthError::InsufficientScope(scope) => {
                params.push("error=\"insufficient_scope\"".to_owned());
                params.push(format!("scope=\"{}\"", quoted(scope)));
            }
            AuthError::InvalidDpopProof(why) => {
                params.push("error=\"invalid_dpop_proof\"".to_owned());
                params.push(format!("error_description=\"{}\"", quoted(why)));
                return format!("DPoP algs=\"ES256 RS256\", {}", params.join(", "));
            }
        }
        format!("Bearer {}", params.join(", "))
    }
}

/// The `error_description` of every token a verifier refuses, whatever its reason.
const VERIFIER_REFUSAL: &str = "the access token is not valid";

/// What a client is told when the token verifier refuses the DPoP binding (its reason is logged).
const VERIFIER_DPOP_REFUSAL: &str = "the DPoP proof was refused";

/// What a client is told of a verifier's refusal: fixed texts, and a scope list only when it
/// is one (RFC 6749 scope tokens), else this resource's required scopes. The verifier's own
/// words may name internal hosts or leak why a token failed: they go to the log at debug.
fn normalize_verifier_error(error: AuthError, protected: &ProtectedResource) -> AuthError {
    tracing::debug!(reason = %error, "the verifier refused a token");
    match error {
        AuthError::Missing => AuthError::Missing,
        AuthError::InvalidToken(_) => AuthError::InvalidToken(VERIFIER_REFUSAL.to_owned()),
        AuthError::InvalidDpopProof(_) => {
            AuthError::InvalidDpopProof(VERIFIER_DPOP_REFUSAL.to_owned())
        }
        AuthError::InsufficientScope(scope) => {
            let token_char =
                |c: char| c == '!' || ('#'..='[').contains(&c) || (']'..='~').contains(&c);
            let is_scope_list = !scope.trim().is_empty()
                && scope.len() <= 1024
                && scope
                    .split(' ')
                    .all(|t| !t.is_empty() && t.chars().all(token_char));
            if is_scope_list {
                AuthError::InsufficientScope(scope)
            } else {
                AuthError::InsufficientScope(protected.required_scopes.join(" "))
            }
        }
    }
}

/// Authenticates a `method` request with `headers`: the token from `Authorization: Bearer`
/// or `Authorization: DPoP`, what `verifier` says of it, this resource's audience and scopes,
/// and for a DPoP-bound token the `DPoP` proof.
pub(crate) async fn authenticate(
    verifier: &dyn TokenVerifier,
    protected: &ProtectedResource,
    replay: &DpopReplay,
    method: &str,
    headers: &hyper::HeaderMap,
) -> Result<VerifiedToken, AuthError> {
    let authorization = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let (scheme, token) = authorization
        .split_once(' ')
        .map(|(scheme, token)| (scheme, token.trim()))
        .unwrap_or_default();
    let dpop_scheme = scheme.eq_ignore_ascii_case("dpop");
    if !(dpop_scheme || scheme.eq_ignore_ascii_case("bearer")) || token.is_empty() {
        return Err(AuthError::Missing);
    }
    let verified = match verifier.verify(token).await {
        Ok(verified) => verified,
        // The verifier's own words may name internal hosts: they stay in the log.
        // Every variant is normalized (review W21), not only `InvalidToken`.
        Err(e) => return Err(normalize_verifier_error(e, protected)),
    };
    protected.admit(&verified)?;
    match (&verified.dpop_jkt, dpop_scheme) {
        (Some(jkt), true) => {
            let mut proofs = headers.get_all("dpop").iter();
            let proof = proofs.next().and_then(|v| v.to_str().ok());
            if proofs.next().is_some() {
                return Err(AuthError::InvalidDpopProof(
                    "more than one DPoP header".into(),
                ));
            }
            let fresh = check_proof(proof, method, &protected.resource, token, jkt)?;
            replay.first_use(jkt, &fresh.jti, fresh.expires_at).await?;
        }
        (Some(_), false) => {
            return Err(AuthError::InvalidDpopProof(
                "a DPoP-bound token must be sent with the DPoP scheme".into(),
            ));
        }
        (None, true) => {
            return Err(AuthError::InvalidToken(
                "the token is not DPoP-bound; send it as a Bearer token".into(),
            ));
        }
        (None, false) => {}
    }
    Ok(verified)
}

/// Text safe inside a quoted-string: no quotes, backslashes or control characters.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() && *c != '"' && *c != '\\')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_lives_under_the_resource_path() {
        let r = ProtectedResource::new("https://mcp.example.com/mcp")
            .authorization_server("https://auth.example.com")
            .scopes_supported(["mcp:read", "mcp:write"])
            .required_scopes(["mcp:read"]);
        assert_eq!(
            r.metadata_path(),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            r.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            r.document(),
            json!({"resource": "https://mcp.example.com/mcp", "authorization_servers": ["https://auth.example.com"],
                   "bearer_methods_supported": ["header"], "scopes_supported": ["mcp:read", "mcp:write"]})
        );
        let root = ProtectedResource::new("http://127.0.0.1:8000");
        assert_eq!(
            root.metadata_url(),
            "http://127.0.0.1:8000/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn audience_and_scopes_are_checked_and_challenged() {
        let r = ProtectedResource::new("https://mcp.example.com/mcp").required_scopes(["mcp:read"]);
        let alice = Principal::new("client-a");
        let good = VerifiedToken::new(alice.clone())
            .audience("https://mcp.example.com/mcp")
            .scopes("mcp:read mcp:write");
        assert_eq!(r.admit(&good), Ok(()));
        let other = VerifiedToken::new(alice.clone())
            .audience("https://other.example.com/mcp")
            .scopes("mcp:read");
        let refused = r.admit(&other).unwrap_err();
        assert_eq!(
            r.challenge(&refused),
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\", error_description=\"the token was not issued for this resource\""
        );
        let narrow = VerifiedToken::new(alice)
            .audience("https://mcp.example.com/mcp")
            .scopes("mcp:write");
        assert_eq!(
            r.admit(&narrow),
            Err(AuthError::InsufficientScope("mcp:read".into()))
        );
        assert_eq!(
            r.challenge(&AuthError::Missing),
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:read\""
        );
    }
}
