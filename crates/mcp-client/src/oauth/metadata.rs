//! The documents OAuth discovery reads: protected resource metadata (RFC 9728), authorization
//! server metadata (RFC 8414 and OpenID Connect discovery), client registration (RFC 7591) and
//! token responses (RFC 6749).

use serde::{Deserialize, Serialize};

/// Protected resource metadata (RFC 9728): which authorization servers guard a resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier, used verbatim as the `resource` parameter.
    pub resource: String,
    /// Issuers of the authorization servers that protect it; the first is used.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource understands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How tokens may be presented (`header`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

/// Authorization server metadata (RFC 8414; OpenID discovery documents have the same fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier; must equal the URL it was discovered from, as a string.
    pub issuer: String,
    /// Where the user authorizes.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are redeemed.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591), when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods; MCP requires `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// Client ID Metadata Documents: a URL may serve as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// A client's identity at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCredentials {
    /// The issuer these credentials belong to; they are never sent anywhere else.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`; chosen from the server's list
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

impl ClientCredentials {
    /// Credentials registered out of band with the authorization server `issuer`.
    pub fn pre_registered(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> Self {
        ClientCredentials {
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret,
            token_endpoint_auth_method: None,
        }
    }
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .finish()
    }
}

/// Tokens from one authorization server for one resource.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Sent as `Authorization: Bearer`.
    pub access_token: String,
    /// Redeemed for a new access token when the old one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// The scopes requested for these tokens (space-separated), kept for step-up unions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The resource the tokens were issued for.
    pub resource: String,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("scope", &self.scope)
            .field("resource", &self.resource)
            .finish()
    }
}

/// What a token endpoint returns.
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    pub(crate) access_token: String,
    #[serde(default)]
    pub(crate) token_type: Option<String>,
    #[serde(default)]
    pub(crate) refresh_token: Option<String>,
    #[serde(default)]
    pub(crate) scope: Option<String>,
}

/// What a registration endpoint returns.
#[derive(Deserialize)]
pub(crate) struct RegistrationResponse {
    pub(crate) client_id: String,
    #[serde(default)]
    pub(crate) client_secret: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_method: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_responses_hide_what_may_be_secret() {
        let request = crate::oauth::HttpRequest {
            method: "POST",
            url: "http://as/token?x=code-123".into(),
            headers: vec![("Authorization".into(), "Basic c2VjcmV0".into())],
            body: b"client_secret=s3cret".to_vec(),
        };
        let response = crate::oauth::HttpResponse {
            status: 200,
            headers: vec![],
            body: br#"{"access_token":"t0ken"}"#.to_vec(),
        };
        let shown = format!("{request:?} {response:?}");
        for secret in ["c2VjcmV0", "s3cret", "code-123", "t0ken"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let c = ClientCredentials::pre_registered("https://as", "id", Some("s3cret".into()));
        let t = Tokens {
            access_token: "t0ken".into(),
            refresh_token: Some("r3fresh".into()),
            scope: None,
            resource: "https://rs/mcp".into(),
        };
        let shown = format!("{c:?} {t:?}");
        for secret in ["s3cret", "t0ken", "r3fresh"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}

/// The authorization server currently in use.
#[derive(Clone)]
pub(crate) struct Current {
    pub(crate) issuer: String,
    pub(crate) metadata: AuthorizationServerMetadata,
    pub(crate) resource: String,
}
