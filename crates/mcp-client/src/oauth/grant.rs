//! Grants without a browser: client credentials (RFC 6749 §4.4, SEP-1046), the JWT bearer
//! grant (RFC 7523 §2.1) for workload identity federation (SEP-1933), and enterprise-managed
//! authorization (SEP-990): an RFC 8693 token exchange of an enterprise ID token for an
//! identity assertion authorization grant (ID-JAG) at the enterprise IdP, then the JWT bearer
//! grant at the MCP server's authorization server.
//!
//! Discovery, the resource indicator and the scope are those of the interactive flow; only
//! the token request differs, and where it may go: a machine credential is bound to the
//! issuers it was configured for ([`OAuth::bound_to_issuer`](crate::oauth::OAuth::bound_to_issuer)), because the MCP server, not the
//! client, names the authorization server.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::OAuthError;
use super::jwt::{SigningKey, now};
use super::random::random_token;
use super::text::form_encode;
use crate::transport::BoxFuture;

/// `grant_type` of the JWT bearer grant (RFC 7523).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of token exchange (RFC 8693).
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub(crate) const CLIENT_ASSERTION_JWT: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The token type of an OpenID Connect ID token (RFC 8693 §3).
pub(crate) const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an identity assertion authorization grant.
pub(crate) const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// How long a client assertion this client signs is valid, in seconds.
const ASSERTION_LIFETIME: u64 = 300;
/// The largest assertion read from a file or the environment.
const MAX_ASSERTION_BYTES: usize = 64 * 1024;

/// How a client authenticates at a token endpoint.
pub enum ClientAuthMethod {
    /// `client_secret_basic`: the id and secret in `Authorization: Basic`.
    SecretBasic(String),
    /// `client_secret_post`: the id and secret in the form body.
    SecretPost(String),
    /// `private_key_jwt` (RFC 7523 §2.2): a signed assertion, `iss` and `sub` the client id,
    /// `aud` the authorization server's issuer.
    PrivateKeyJwt(SigningKey),
    /// A public client: the id in the form body, nothing else.
    None,
}

impl fmt::Debug for ClientAuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientAuthMethod::SecretBasic(_) => f.write_str("SecretBasic(<redacted>)"),
            ClientAuthMethod::SecretPost(_) => f.write_str("SecretPost(<redacted>)"),
            ClientAuthMethod::PrivateKeyJwt(key) => {
                f.debug_tuple("PrivateKeyJwt").field(key).finish()
            }
            ClientAuthMethod::None => f.write_str("None"),
        }
    }
}

/// A client's identity at one token endpoint.
#[derive(Debug)]
pub struct ClientAuth {
    /// The client id.
    pub client_id: String,
    /// How it proves it.
    pub method: ClientAuthMethod,
}

impl ClientAuth {
    /// `client_secret_basic`.
    pub fn secret_basic(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        ClientAuth {
            client_id: client_id.into(),
            method: ClientAuthMethod::SecretBasic(secret.into()),
        }
    }

    /// `private_key_jwt` with `key`.
    pub fn private_key_jwt(client_id: impl Into<String>, key: SigningKey) -> Self {
        ClientAuth {
            client_id: client_id.into(),
            method: ClientAuthMethod::PrivateKeyJwt(key),
        }
    }

    /// A public client.
    pub fn public(client_id: impl Into<String>) -> Self {
        ClientAuth {
            client_id: client_id.into(),
            method: ClientAuthMethod::None,
        }
    }

    /// Adds this client's authentication to a token request for the authorization server
    /// `audience`.
    pub(super) fn apply(
        &self,
        audience: &str,
        headers: &mut Vec<(String, String)>,
        body: &mut Vec<(&'static str, String)>,
    ) -> Result<(), OAuthError> {
        match &self.method {
            ClientAuthMethod::SecretBasic(secret) => {
                let pair = format!("{}:{}", form_encode(&self.client_id), form_encode(secret));
                headers.push((
                    "Authorization".into(),
                    format!("Basic {}", STANDARD.encode(pair)),
                ));
            }
            ClientAuthMethod::SecretPost(secret) => {
                body.push(("client_id", self.client_id.clone()));
                body.push(("client_secret", secret.clone()));
            }
            ClientAuthMethod::PrivateKeyJwt(key) => {
                let iat = now();
                let claims = json!({
                    "iss": self.client_id,
                    "sub": self.client_id,
                    "aud": audience,
                    "iat": iat,
                    "exp": iat + ASSERTION_LIFETIME,
                    "jti": random_token(16)?,
                });
                body.push(("client_id", self.client_id.clone()));
                body.push(("client_assertion_type", CLIENT_ASSERTION_JWT.into()));
                body.push(("client_assertion", key.sign("JWT", &[], &claims)?));
            }
            ClientAuthMethod::None => body.push(("client_id", self.client_id.clone())),
        }
        Ok(())
    }
}

/// Where an assertion (a workload's platform-issued JWT, an enterprise ID token) comes from.
/// It is asked afresh for every token request, so a rotating source stays current.
///
/// The audience is the issuer of the authorization server the assertion is about to be sent
/// to (for an enterprise grant's ID token, the IdP's token endpoint). It is asked only after
/// that issuer passed the machine client's binding ([`OAuth::bound_to_issuer`](crate::oauth::OAuth::bound_to_issuer)). A source that
/// ignores the audience and returns a token issued for one authorization server
/// ([`FileAssertion`], [`EnvAssertion`], [`StaticAssertion`], a platform token minted for a
/// fixed audience) must only be used with a grant bound to that server's issuer: whoever
/// receives the token can present it there.
pub trait AssertionSource: Send + Sync + 'static {
    /// The assertion to present to the authorization server `audience`.
    fn assertion<'a>(&'a self, audience: &'a str) -> BoxFuture<'a, Result<String, OAuthError>>;
}

/// An assertion read from a file at each use (Kubernetes projected service account tokens,
/// `AZURE_FEDERATED_TOKEN_FILE`, GitHub's token written to disk). At most 64 KiB.
///
/// It ignores the audience: the file holds a token for the audience the platform minted it
/// for. Use it only with a grant bound to that authorization server
/// ([`OAuth::bound_to_issuer`](crate::oauth::OAuth::bound_to_issuer)).
#[derive(Debug, Clone)]
pub struct FileAssertion(pub PathBuf);

impl AssertionSource for FileAssertion {
    fn assertion<'a>(&'a self, _audience: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            let shown = self.0.display();
            let bytes = std::fs::read(&self.0)
                .map_err(|e| OAuthError::Token(format!("reading the assertion {shown}: {e}")))?;
            checked_assertion(bytes, &format!("the file {shown}"))
        })
    }
}

/// An assertion in an environment variable, read at each use. At most 64 KiB.
///
/// It ignores the audience, like [`FileAssertion`]: use it only with a grant bound to the
/// authorization server the token was issued for ([`OAuth::bound_to_issuer`](crate::oauth::OAuth::bound_to_issuer)).
#[derive(Debug, Clone)]
pub struct EnvAssertion(pub String);

impl AssertionSource for EnvAssertion {
    fn assertion<'a>(&'a self, _audience: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            let value = std::env::var(&self.0).map_err(|_| {
                OAuthError::Token(format!("the environment variable {} is not set", self.0))
            })?;
            checked_assertion(value.into_bytes(), &format!("${}", self.0))
        })
    }
}

/// A fixed assertion. Its `Debug` output hides it.
///
/// It ignores the audience, like [`FileAssertion`]: use it only with a grant bound to the
/// authorization server the token was issued for ([`OAuth::bound_to_issuer`](crate::oauth::OAuth::bound_to_issuer)).
#[derive(Clone)]
pub struct StaticAssertion(pub String);

impl fmt::Debug for StaticAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StaticAssertion(<redacted>)")
    }
}

impl AssertionSource for StaticAssertion {
    fn assertion<'a>(&'a self, _audience: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
        let value = self.0.clone();
        Box::pin(async move { Ok(value) })
    }
}

/// An assertion from a callback given the audience (a cloud metadata endpoint, a secrets
/// manager). A callback that can mint a token for the audience it is given limits what a
/// wrong authorization server could do with it; one that cannot should refuse any other.
pub struct CallbackAssertion<F>(pub F);

impl<F> fmt::Debug for CallbackAssertion<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallbackAssertion(..)")
    }
}

impl<F, Fut> AssertionSource for CallbackAssertion<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, OAuthError>> + Send + 'static,
{
    fn assertion<'a>(&'a self, audience: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin((self.0)(audience.to_owned()))
    }
}

fn checked_assertion(bytes: Vec<u8>, from: &str) -> Result<String, OAuthError> {
    if bytes.len() > MAX_ASSERTION_BYTES {
        return Err(OAuthError::Token(format!(
            "the assertion in {from} is larger than {MAX_ASSERTION_BYTES} bytes"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| OAuthError::Token(format!("the assertion in {from} is not UTF-8")))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(OAuthError::Token(format!(
            "the assertion in {from} is empty"
        )));
    }
    Ok(text.to_owned())
}

/// Enterprise-managed authorization (SEP-990): where the enterprise IdP exchanges the user's
/// ID token for an ID-JAG.
#[derive(Debug)]
pub struct EnterpriseGrant {
    /// The IdP's token endpoint.
    pub idp_token_endpoint: String,
    /// This client at the IdP.
    pub idp_client: ClientAuth,
    /// The user's ID token from the enterprise IdP.
    pub id_token: Arc<dyn AssertionSource>,
    /// This client at the MCP server's authorization server.
    pub client: ClientAuth,
}

impl fmt::Debug for dyn AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AssertionSource(..)")
    }
}

/// How a client without a user gets its tokens. Give it to [`OAuth::machine`](crate::oauth::OAuth::machine) and bind it to
/// its authorization server with [`OAuth::bound_to_issuer`](crate::oauth::OAuth::bound_to_issuer).
#[derive(Debug)]
pub enum MachineGrant {
    /// The client credentials grant.
    ClientCredentials(ClientAuth),
    /// The JWT bearer grant with an assertion from `assertion` (workload identity
    /// federation: the platform's JWT for this workload).
    JwtBearer {
        /// This client at the authorization server (often [`ClientAuth::public`]).
        client: ClientAuth,
        /// The assertion.
        assertion: Arc<dyn AssertionSource>,
    },
    /// Enterprise-managed authorization.
    Enterprise(EnterpriseGrant),
}

/// The authorization servers a machine grant's credential may be sent to.
#[derive(Debug, Clone, Default)]
pub(super) struct IssuerBinding {
    /// Issuers, compared as exact strings like every issuer here (RFC 8414 §3.3, RFC 9207).
    pub(super) issuers: Vec<String>,
    /// [`OAuth::danger_send_credentials_to_any_issuer`](crate::oauth::OAuth::danger_send_credentials_to_any_issuer): whichever the MCP server names.
    pub(super) any: bool,
}
