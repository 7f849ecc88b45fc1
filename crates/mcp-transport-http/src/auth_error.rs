//! [`AuthError`], why a token or its DPoP proof was refused: what the bearer check
//! (`auth.rs`) and the DPoP proof check (`dpop.rs`) both answer.

use std::fmt;

/// Why a token was refused. The text never contains the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    Missing,
    /// The token is not valid (expired, forged, revoked, issued for another resource...).
    InvalidToken(String),
    /// The token is valid but lacks a scope this server needs (space-separated).
    InsufficientScope(String),
    /// The token is DPoP-bound and the request's proof is missing or wrong (RFC 9449 §7).
    InvalidDpopProof(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Missing => f.write_str("authentication required"),
            AuthError::InvalidToken(why) => write!(f, "invalid token: {why}"),
            AuthError::InsufficientScope(scope) => {
                write!(f, "insufficient scope: {scope} is required")
            }
            AuthError::InvalidDpopProof(why) => write!(f, "invalid DPoP proof: {why}"),
        }
    }
}
