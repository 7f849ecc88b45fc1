//! Bearer authentication: a [`TokenVerifier`] turns an `Authorization: Bearer` token into the
//! authenticated principal (which reaches handlers and the sealing boundary, so state issued to
//! one user fails for another), or a 401 with `WWW-Authenticate`.

use std::fmt;

use mcp_server_core::seal::Principal;

use mcp_client::BoxFuture;

/// Why a token was refused. The text never contains the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    Missing,
    /// The token is not valid (expired, forged, revoked...).
    InvalidToken(String),
    /// The token is valid but lacks a scope this server needs.
    InsufficientScope(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Missing => f.write_str("authentication required"),
            AuthError::InvalidToken(why) => write!(f, "invalid token: {why}"),
            AuthError::InsufficientScope(scope) => {
                write!(f, "insufficient scope: {scope} is required")
            }
        }
    }
}

/// Verifies bearer tokens for a protected MCP server.
pub trait TokenVerifier: Send + Sync + 'static {
    /// The principal the token authenticates (client id, issuer, subject), or why not.
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<Principal, AuthError>>;
}

/// The `WWW-Authenticate` value for a refusal.
pub(crate) fn challenge(error: &AuthError, resource_metadata: Option<&str>) -> String {
    let mut parts = vec!["Bearer".to_owned()];
    let mut params = Vec::new();
    if let Some(url) = resource_metadata {
        params.push(format!("resource_metadata=\"{url}\""));
    }
    match error {
        AuthError::Missing => {}
        AuthError::InvalidToken(_) => params.push("error=\"invalid_token\"".to_owned()),
        AuthError::InsufficientScope(scope) => {
            params.push("error=\"insufficient_scope\"".to_owned());
            params.push(format!("scope=\"{scope}\""));
        }
    }
    if !params.is_empty() {
        parts.push(params.join(", "));
    }
    parts.join(" ")
}
