//! Grants without a browser: client credentials (RFC 6749 §4.4, SEP-1046), the JWT bearer
//! grant (RFC 7523 §2.1) for workload identity federation (SEP-1933), and enterprise-managed
//! authorization (SEP-990): an RFC 8693 token exchange of an enterprise ID token for an
//! identity assertion authorization grant (ID-JAG) at the enterprise IdP, then the JWT bearer
//! grant at the MCP server's authorization server.
//!
//! Discovery, the resource indicator and the scope are those of the interactive flow; only
//! the token request differs.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::jwt::{SigningKey, now};
use super::metadata::TokenResponse;
use super::text::{form, form_encode};
use super::{Current, HttpRequest, OAuth, OAuthError, Tokens, random_token};
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
    fn apply(
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
pub trait AssertionSource: Send + Sync + 'static {
    /// The assertion to present to the authorization server `audience`.
    fn assertion<'a>(&'a self, audience: &'a str) -> BoxFuture<'a, Result<String, OAuthError>>;
}

/// An assertion read from a file at each use (Kubernetes projected service account tokens,
/// `AZURE_FEDERATED_TOKEN_FILE`, GitHub's token written to disk). At most 64 KiB.
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
/// manager).
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

/// How a client without a user gets its tokens.
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

impl OAuth {
    /// Obtains a token for `current` with this client's machine grant.
    pub(super) async fn machine_grant(
        &self,
        grant: &MachineGrant,
        current: &Current,
        scope: Option<String>,
    ) -> Result<String, OAuthError> {
        let issuer = current.issuer.as_str();
        let resource = (!current.resource.is_empty()).then(|| current.resource.clone());
        let mut body: Vec<(&'static str, String)> = Vec::new();
        let client = match grant {
            MachineGrant::ClientCredentials(client) => {
                body.push(("grant_type", "client_credentials".into()));
                client
            }
            MachineGrant::JwtBearer { client, assertion } => {
                body.push(("grant_type", JWT_BEARER.into()));
                body.push(("assertion", assertion.assertion(issuer).await?));
                client
            }
            MachineGrant::Enterprise(enterprise) => {
                let id_jag = self
                    .exchange_for_id_jag(enterprise, current, scope.as_deref())
                    .await?;
                body.push(("grant_type", JWT_BEARER.into()));
                body.push(("assertion", id_jag));
                &enterprise.client
            }
        };
        if let Some(scope) = &scope {
            body.push(("scope", scope.clone()));
        }
        if let Some(resource) = resource {
            body.push(("resource", resource));
        }
        let endpoint = current.metadata.token_endpoint.clone();
        let tokens = self.post_token(&endpoint, issuer, client, body).await?;
        let access = tokens.access_token.clone();
        self.store.save_tokens(
            issuer,
            Tokens {
                access_token: tokens.access_token,
                refresh_token: tokens.refresh_token,
                scope: scope.or(tokens.scope),
                resource: current.resource.clone(),
            },
        );
        Ok(access)
    }

    /// RFC 8693 at the enterprise IdP: the ID token for an ID-JAG whose audience is the MCP
    /// server's authorization server and whose resource is the MCP server.
    async fn exchange_for_id_jag(
        &self,
        enterprise: &EnterpriseGrant,
        current: &Current,
        scope: Option<&str>,
    ) -> Result<String, OAuthError> {
        let endpoint = &enterprise.idp_token_endpoint;
        let mut body: Vec<(&'static str, String)> = vec![
            ("grant_type", TOKEN_EXCHANGE.into()),
            ("requested_token_type", ID_JAG_TYPE.into()),
            ("audience", current.issuer.clone()),
            ("resource", current.resource.clone()),
            (
                "subject_token",
                enterprise.id_token.assertion(endpoint).await?,
            ),
            ("subject_token_type", ID_TOKEN_TYPE.into()),
        ];
        if let Some(scope) = scope {
            body.push(("scope", scope.to_owned()));
        }
        let idp = super::text::RawUrl::parse(endpoint)
            .map(|u| u.origin())
            .unwrap_or_default();
        let response = self
            .post_token_raw(endpoint, &idp, &enterprise.idp_client, body)
            .await?;
        let issued = response
            .get("issued_token_type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if issued != ID_JAG_TYPE {
            return Err(OAuthError::Token(format!(
                "{endpoint} issued a token of type '{issued}', not an ID-JAG"
            )));
        }
        response
            .get("access_token")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| OAuthError::Token(format!("{endpoint} returned no access_token")))
    }

    /// A token request that must return an access token.
    async fn post_token(
        &self,
        endpoint: &str,
        audience: &str,
        client: &ClientAuth,
        body: Vec<(&'static str, String)>,
    ) -> Result<TokenResponse, OAuthError> {
        let value = self
            .post_token_raw(endpoint, audience, client, body)
            .await?;
        let tokens: TokenResponse = serde_json::from_value(value)
            .map_err(|e| OAuthError::Token(format!("{endpoint}: unusable reply ({e})")))?;
        self.accept_token_type(endpoint, tokens.token_type.as_deref())?;
        Ok(tokens)
    }

    /// POSTs a token request with `client`'s authentication; the JSON of a 200 reply, or the
    /// server's `error` as an [`OAuthError::Token`].
    async fn post_token_raw(
        &self,
        endpoint: &str,
        audience: &str,
        client: &ClientAuth,
        mut body: Vec<(&'static str, String)>,
    ) -> Result<Value, OAuthError> {
        let mut headers = vec![
            (
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            ),
            ("Accept".to_owned(), "application/json".to_owned()),
        ];
        client.apply(audience, &mut headers, &mut body)?;
        let pairs: Vec<(&str, &str)> = body.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let response = self
            .token_post(HttpRequest {
                method: "POST",
                url: endpoint.to_owned(),
                headers,
                body: form(&pairs).into_bytes(),
            })
            .await?;
        let value = serde_json::from_slice::<Value>(&response.body).ok();
        if response.status != 200 {
            let field = |name: &str| {
                value
                    .as_ref()
                    .and_then(|v| v.get(name))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let (error, description) = (field("error"), field("error_description"));
            return Err(OAuthError::Token(
                format!(
                    "{endpoint} answered HTTP {} {error} {description}",
                    response.status
                )
                .trim_end()
                .to_owned(),
            ));
        }
        value.ok_or_else(|| OAuthError::Token(format!("{endpoint}: the reply is not JSON")))
    }
}
