//! Why authorization failed.

use std::fmt;

/// Why authorization failed. No variant carries a secret or a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthError {
    /// An HTTP request got no response.
    Http(String),
    /// No usable metadata was found.
    Discovery(String),
    /// The protected resource metadata names a resource that does not cover this server.
    ResourceMismatch {
        /// The metadata's `resource`.
        resource: String,
        /// The MCP endpoint.
        server: String,
    },
    /// The authorization server metadata names another issuer than the URL it came from.
    IssuerMismatch {
        /// The authorization server URL from the resource metadata.
        expected: String,
        /// The metadata's `issuer`.
        found: String,
    },
    /// The authorization response failed RFC 9207 validation; the code was not redeemed.
    Iss {
        /// The issuer recorded from the metadata.
        expected: String,
        /// The `iss` in the response, if any.
        found: Option<String>,
    },
    /// The authorization response's `state` does not match the request's.
    StateMismatch,
    /// The authorization server refused, or its response was unusable.
    Authorization(String),
    /// Registration failed, or there is no way to identify this client.
    Registration(String),
    /// The token endpoint refused.
    Token(String),
    /// A 403 asked for scopes already requested: asking again cannot help.
    ScopeNotGranted(String),
    /// The MCP server names an authorization server this machine client's credential is not
    /// bound to ([`OAuth::bound_to_issuer`](super::OAuth::bound_to_issuer)); nothing was sent to it.
    UnboundIssuer {
        /// The issuer the MCP server named (its resource metadata, or its origin when it has
        /// none), or the `issuer` of that server's metadata.
        named: String,
        /// The issuers the credential is bound to; empty when it was never bound.
        bound: Vec<String>,
    },
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthError::Http(why) => write!(f, "authorization request failed: {why}"),
            OAuthError::Discovery(why) => write!(f, "authorization discovery failed: {why}"),
            OAuthError::ResourceMismatch { resource, server } => write!(
                f,
                "the protected resource metadata is for {resource}, which does not cover {server}; refusing to authorize"
            ),
            OAuthError::IssuerMismatch { expected, found } => write!(
                f,
                "the authorization server metadata for {expected} names the issuer {found}; refusing to use it"
            ),
            OAuthError::Iss {
                expected,
                found: Some(found),
            } => write!(
                f,
                "the authorization response came from issuer {found}, not {expected}; the code was not redeemed"
            ),
            OAuthError::Iss {
                expected,
                found: None,
            } => write!(
                f,
                "the authorization response from {expected} lacks the iss parameter its metadata promises; the code was not redeemed"
            ),
            OAuthError::StateMismatch => {
                f.write_str("the authorization response's state does not match the request")
            }
            OAuthError::Authorization(why) => write!(f, "authorization failed: {why}"),
            OAuthError::Registration(why) => write!(f, "client registration failed: {why}"),
            OAuthError::Token(why) => write!(f, "the token request failed: {why}"),
            OAuthError::ScopeNotGranted(scope) => write!(
                f,
                "the server still requires scope '{scope}' after it was requested; giving up"
            ),
            OAuthError::UnboundIssuer { named, bound } if bound.is_empty() => write!(
                f,
                "the MCP server names the authorization server {named}, but this machine \
                 credential is bound to no authorization server (bind it with \
                 OAuth::bound_to_issuer to the issuer it was issued for); nothing was sent"
            ),
            OAuthError::UnboundIssuer { named, bound } => write!(
                f,
                "the MCP server names the authorization server {named}, but this machine \
                 credential is bound to {}; nothing was sent",
                bound.join(" or ")
            ),
        }
    }
}

impl std::error::Error for OAuthError {}
