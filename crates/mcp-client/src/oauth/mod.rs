//! OAuth 2.1 for MCP clients (feature `oauth`): what a client does when a protected MCP server
//! answers 401 or 403.
//!
//! On a 401 the client discovers the protected resource metadata (RFC 9728: the URL in
//! `WWW-Authenticate`, else the path-based then the root well-known URI), checks that it covers
//! the server, discovers the authorization server's metadata (RFC 8414 then OpenID discovery,
//! in the spec's order) and checks its `issuer` by exact string comparison, picks the scopes
//! (the challenge's, else the resource's `scopes_supported`, else none; plus `offline_access`
//! when the server offers it), identifies itself (pre-registered credentials, a Client ID
//! Metadata Document, or dynamic registration), runs the authorization code flow with PKCE
//! (S256) and a `resource` indicator, validates `state` and, per RFC 9207, `iss`, and redeems
//! the code with the token endpoint's authentication method. A 403 `insufficient_scope` asks
//! again for the union of the scopes held and those challenged.
//!
//! Credentials and tokens are bound to the issuer that issued them: when the protected
//! resource moves to another authorization server, the client registers again there and never
//! sends the old server's client id. Nothing here logs or formats a secret or a token.
//!
//! The crate does the protocol; three small traits connect it to the world:
//! [`HttpFetch`] (plain HTTP requests, redirects not followed; the HTTP transport provides
//! one), [`Authorizer`] (send the user to the authorization URL and bring back the redirect;
//! [`HeadlessAuthorizer`] follows the server's immediate redirect, for tests and automation),
//! and [`TokenStore`] (where credentials and tokens live; [`MemoryTokenStore`] by default).

mod dpop;
mod grant;
mod jwt;
mod metadata;
mod text;

use std::fmt;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

pub use grant::{
    AssertionSource, CallbackAssertion, ClientAuth, ClientAuthMethod, EnterpriseGrant,
    EnvAssertion, FileAssertion, MachineGrant, StaticAssertion,
};
pub use jwt::{SigningKey, jwk_thumbprint};
pub use metadata::{
    AuthorizationServerMetadata, ClientCredentials, ProtectedResourceMetadata, Tokens,
};
use metadata::{RegistrationResponse, TokenResponse};
use text::{RawUrl, bearer_params, form, parse_form, resource_covers};

use crate::transport::BoxFuture;

/// One HTTP request made during authorization. Its `Debug` output shows no header value and
/// no body: they may hold a client secret or a code.
#[derive(Clone)]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The absolute URL.
    pub url: String,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url.split('?').next().unwrap_or_default())
            .field("headers", &names)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// Its response. Its `Debug` output shows no body: it may hold a token.
#[derive(Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `Location` may carry an authorization code, `Set-Cookie` a session, and
        // `Authorization` a credential: their values are never printed.
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let secret = ["location", "set-cookie", "authorization"]
                    .iter()
                    .any(|s| name.eq_ignore_ascii_case(s));
                (
                    name.as_str(),
                    if secret { "[redacted]" } else { value.as_str() },
                )
            })
            .collect();
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &headers)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// Whether `url` may carry OAuth traffic: `https://`, or `http://` to a loopback host
/// (`localhost`, `127.0.0.0/8`, `[::1]`), where nothing crosses a network.
pub fn is_secure_endpoint(url: &str) -> bool {
    let Some(parsed) = RawUrl::parse(url) else {
        return false;
    };
    if parsed.scheme.eq_ignore_ascii_case("https") {
        return true;
    }
    let host = match parsed.authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => parsed.authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The default of [`OAuthConfig::fetch_timeout`]: 30 s.
pub const DEFAULT_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Every fetch of an [`OAuth`] goes through this: endpoints that are neither `https` nor
/// loopback are refused before anything is sent, and each fetch has a deadline.
struct Guarded {
    inner: Arc<dyn HttpFetch>,
    timeout: std::time::Duration,
}

impl HttpFetch for Guarded {
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        Box::pin(async move {
            let shown = request.url.split('?').next().unwrap_or_default().to_owned();
            if !is_secure_endpoint(&request.url) {
                return Err(format!(
                    "{shown} is not https (only loopback hosts may use http://); nothing was sent"
                ));
            }
            match tokio::time::timeout(self.timeout, self.inner.fetch(request)).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "{shown} did not answer within {} ms (OAuthConfig::fetch_timeout)",
                    self.timeout.as_millis()
                )),
            }
        })
    }
}

impl HttpResponse {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Makes plain HTTP requests for discovery, registration and token calls. It must not follow
/// redirects.
pub trait HttpFetch: Send + Sync + 'static {
    /// Sends `request`; `Err` only when no response arrived.
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>>;
}

/// The interactive part: show the user the authorization page and bring back where the
/// authorization server redirected the browser.
pub trait Authorizer: Send + Sync + 'static {
    /// Sends the user to `authorization_url` and returns the full redirect URL (the one
    /// starting with `redirect_uri`, carrying `code`, `state` and maybe `iss`).
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>>;
}

/// An [`Authorizer`] for automation and tests: it requests the authorization URL itself and
/// takes the `Location` of the server's immediate redirect. It works only with authorization
/// servers that grant without a login page (test servers, pre-approved clients).
pub struct HeadlessAuthorizer {
    fetch: Arc<dyn HttpFetch>,
}

impl HeadlessAuthorizer {
    /// Uses `fetch` for the authorization request.
    pub fn new(fetch: Arc<dyn HttpFetch>) -> Self {
        HeadlessAuthorizer { fetch }
    }
}

impl Authorizer for HeadlessAuthorizer {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        _redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            let response = self
                .fetch
                .fetch(HttpRequest {
                    method: "GET",
                    url: authorization_url.to_owned(),
                    headers: Vec::new(),
                    body: Vec::new(),
                })
                .await
                .map_err(OAuthError::Http)?;
            match (response.status, response.header("location")) {
                (300..=399, Some(location)) => Ok(location.to_owned()),
                (status, _) => Err(OAuthError::Authorization(format!(
                    "the authorization endpoint answered HTTP {status} without a redirect; a person has to sign in (use an interactive Authorizer)"
                ))),
            }
        })
    }
}

/// The [`Authorizer`] of a machine client: there is no one to ask.
struct NoBrowser;

impl Authorizer for NoBrowser {
    fn authorize<'a>(
        &'a self,
        _authorization_url: &'a str,
        _redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async {
            Err(OAuthError::Authorization(
                "a machine client has no user to send to an authorization page".into(),
            ))
        })
    }
}

/// Where client credentials and tokens are kept, keyed by the issuer of the authorization
/// server that issued them.
pub trait TokenStore: Send + Sync + 'static {
    /// The client registered with `issuer`.
    fn client(&self, issuer: &str) -> Option<ClientCredentials>;
    /// Remembers a registration.
    fn save_client(&self, credentials: ClientCredentials);
    /// Tokens from `issuer`.
    fn tokens(&self, issuer: &str) -> Option<Tokens>;
    /// Remembers tokens from `issuer`.
    fn save_tokens(&self, issuer: &str, tokens: Tokens);
    /// Forgets the tokens from `issuer` (refused, or the resource moved).
    fn forget_tokens(&self, issuer: &str);
}

/// A [`TokenStore`] in memory: nothing survives the process.
#[derive(Default)]
pub struct MemoryTokenStore {
    clients: Mutex<Vec<ClientCredentials>>,
    tokens: Mutex<Vec<(String, Tokens)>>,
}

impl TokenStore for MemoryTokenStore {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        let clients = self.clients.lock().ok()?;
        clients.iter().find(|c| c.issuer == issuer).cloned()
    }

    fn save_client(&self, credentials: ClientCredentials) {
        if let Ok(mut clients) = self.clients.lock() {
            clients.retain(|c| c.issuer != credentials.issuer);
            clients.push(credentials);
        }
    }

    fn tokens(&self, issuer: &str) -> Option<Tokens> {
        let tokens = self.tokens.lock().ok()?;
        tokens
            .iter()
            .find(|(i, _)| i == issuer)
            .map(|(_, t)| t.clone())
    }

    fn save_tokens(&self, issuer: &str, tokens: Tokens) {
        if let Ok(mut all) = self.tokens.lock() {
            all.retain(|(i, _)| i != issuer);
            all.push((issuer.to_owned(), tokens));
        }
    }

    fn forget_tokens(&self, issuer: &str) {
        if let Ok(mut all) = self.tokens.lock() {
            all.retain(|(i, _)| i != issuer);
        }
    }
}

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
    /// bound to ([`OAuth::bound_to_issuer`]); nothing was sent to it.
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

/// How this client presents itself to authorization servers.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// Where the authorization server sends the browser back.
    pub redirect_uri: String,
    /// The name shown on consent pages and sent at registration.
    pub client_name: String,
    /// A Client ID Metadata Document URL, used as the `client_id` where the authorization
    /// server supports it.
    pub client_metadata_url: Option<String>,
    /// Credentials registered out of band, each bound to its issuer.
    pub pre_registered: Vec<ClientCredentials>,
    /// `application_type` sent at dynamic registration: `native` or `web`.
    pub application_type: String,
    /// Ask for `offline_access` (refresh tokens) when the server offers it.
    pub offline_access: bool,
    /// How long one discovery, registration or token request may take, from sending to the
    /// end of the answer (default [`DEFAULT_FETCH_TIMEOUT`]); past it the flow fails with
    /// "… did not answer within N ms".
    pub fetch_timeout: std::time::Duration,
}

impl OAuthConfig {
    /// A native client that receives the redirect at `redirect_uri`.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        OAuthConfig {
            redirect_uri: redirect_uri.into(),
            client_name: "mcp-rs client".into(),
            client_metadata_url: None,
            pre_registered: Vec::new(),
            application_type: "native".into(),
            offline_access: true,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }
}

/// The authorization server currently in use.
#[derive(Clone)]
struct Current {
    issuer: String,
    metadata: AuthorizationServerMetadata,
    resource: String,
}

/// The OAuth side of one MCP connection. Cheap to share: the transport holds it in an `Arc`.
pub struct OAuth {
    config: OAuthConfig,
    fetch: Arc<dyn HttpFetch>,
    authorizer: Arc<dyn Authorizer>,
    store: Arc<dyn TokenStore>,
    current: Mutex<Option<Current>>,
    /// A grant without a browser, used instead of the authorization code flow.
    machine: Option<MachineGrant>,
    /// The authorization servers the machine grant's credential may go to.
    machine_issuers: grant::IssuerBinding,
    /// DPoP (RFC 9449), when on.
    dpop: Option<dpop::Dpop>,
    /// Serialises flows: concurrent 401s share one authorization.
    flow: tokio::sync::Mutex<()>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// An OAuth client with an in-memory store.
    pub fn new(
        config: OAuthConfig,
        fetch: Arc<dyn HttpFetch>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        Self::with_store(
            config,
            fetch,
            authorizer,
            Arc::new(MemoryTokenStore::default()),
        )
    }

    /// An OAuth client keeping credentials and tokens in `store`.
    pub fn with_store(
        config: OAuthConfig,
        fetch: Arc<dyn HttpFetch>,
        authorizer: Arc<dyn Authorizer>,
        store: Arc<dyn TokenStore>,
    ) -> Self {
        let fetch = Arc::new(Guarded {
            inner: fetch,
            timeout: config.fetch_timeout,
        });
        OAuth {
            config,
            fetch,
            authorizer,
            store,
            current: Mutex::new(None),
            machine: None,
            machine_issuers: grant::IssuerBinding::default(),
            dpop: None,
            flow: tokio::sync::Mutex::new(()),
        }
    }

    /// An OAuth client for a machine with no user: it gets its tokens with `grant` (client
    /// credentials, the JWT bearer grant, or enterprise-managed authorization) after the same
    /// discovery, resource indicator and scope selection as the interactive flow.
    ///
    /// The MCP server names the authorization server, so a hostile one could name its own and
    /// collect the credential. A machine client therefore sends nothing until its credential is
    /// bound to the issuer it was issued for with [`OAuth::bound_to_issuer`]; unbound, every
    /// authorization fails with [`OAuthError::UnboundIssuer`].
    pub fn machine(grant: MachineGrant, fetch: Arc<dyn HttpFetch>) -> Self {
        Self::machine_with_store(grant, fetch, Arc::new(MemoryTokenStore::default()))
    }

    /// [`OAuth::machine`] keeping tokens in `store`.
    pub fn machine_with_store(
        grant: MachineGrant,
        fetch: Arc<dyn HttpFetch>,
        store: Arc<dyn TokenStore>,
    ) -> Self {
        let mut oauth = Self::with_store(
            OAuthConfig::new("urn:ietf:wg:oauth:2.0:oob"),
            fetch,
            Arc::new(NoBrowser),
            store,
        );
        oauth.machine = Some(grant);
        oauth
    }

    /// The access token for `current` and `scope`: the machine grant, else a login.
    async fn obtain(&self, current: &Current, scope: Option<String>) -> Result<String, OAuthError> {
        match &self.machine {
            Some(grant) => self.machine_grant(grant, current, scope).await,
            None => {
                let scope = self.with_offline_access(&current.metadata, scope);
                self.authorize(current, scope).await
            }
        }
    }

    /// The access token to send, if the client holds one.
    pub fn access_token(&self) -> Option<String> {
        let current = self.current.lock().ok()?.clone()?;
        self.store.tokens(&current.issuer).map(|t| t.access_token)
    }

    /// Handles a 401 from `server` (the MCP endpoint): discovers, authorizes and returns a
    /// new access token. `refused` is the token the server refused (`None` when none was
    /// sent), so that concurrent requests refused with the same token authorize once.
    pub async fn unauthorized(
        &self,
        server: &str,
        www_authenticate: Option<&str>,
        refused: Option<&str>,
    ) -> Result<String, OAuthError> {
        let _flow = self.flow.lock().await;
        if let Some(token) = self.access_token()
            && Some(token.as_str()) != refused
        {
            return Ok(token);
        }
        let challenge = www_authenticate.map(bearer_params).unwrap_or_default();
        let param = |name: &str| {
            challenge
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        // Always fresh: the resource may have moved to another authorization server.
        let prm = self
            .protected_resource(server, param("resource_metadata").as_deref())
            .await?;
        let (issuer, metadata, resource) = match prm {
            Some(prm) => {
                if !resource_covers(&prm.resource, server) {
                    return Err(OAuthError::ResourceMismatch {
                        resource: prm.resource,
                        server: server.to_owned(),
                    });
                }
                // The first listed; for a machine client, the first its credential is bound to.
                let issuer = prm
                    .authorization_servers
                    .iter()
                    .find(|named| self.machine_may_use(named).is_ok())
                    .or(prm.authorization_servers.first())
                    .cloned()
                    .ok_or_else(|| {
                        OAuthError::Discovery(
                            "the protected resource metadata names no authorization server".into(),
                        )
                    })?;
                // Before anything reaches it, even a metadata request.
                self.machine_may_use(&issuer)?;
                let metadata = self.authorization_server(&issuer).await?.ok_or_else(|| {
                    OAuthError::Discovery(format!(
                        "no authorization server metadata found for {issuer}"
                    ))
                })?;
                let scope = param("scope").or_else(|| {
                    prm.scopes_supported
                        .as_ref()
                        .filter(|s| !s.is_empty())
                        .map(|s| s.join(" "))
                });
                (issuer, metadata, Some((prm.resource, scope)))
            }
            None => {
                // 2025-03-26 servers: the MCP server's origin is the authorization server.
                let origin = RawUrl::parse(server).map(|u| u.origin()).ok_or_else(|| {
                    OAuthError::Discovery(format!("not an http(s) URL: {server}"))
                })?;
                self.machine_may_use(&origin)?;
                let metadata = match self.authorization_server(&origin).await? {
                    Some(metadata) => metadata,
                    None => AuthorizationServerMetadata {
                        issuer: origin.clone(),
                        authorization_endpoint: format!("{origin}/authorize"),
                        token_endpoint: format!("{origin}/token"),
                        registration_endpoint: Some(format!("{origin}/register")),
                        scopes_supported: None,
                        token_endpoint_auth_methods_supported: None,
                        // The 2025-03-26 default endpoints imply PKCE with S256.
                        code_challenge_methods_supported: Some(vec!["S256".into()]),
                        authorization_response_iss_parameter_supported: false,
                        client_id_metadata_document_supported: false,
                    },
                };
                (origin, metadata, None)
            }
        };
        let (resource, scope) = match resource {
            Some((resource, scope)) => (Some(resource), scope),
            None => (None, param("scope")),
        };
        let previous = self.current.lock().ok().and_then(|c| c.clone());
        if let Some(previous) = &previous
            && previous.issuer != issuer
        {
            tracing::debug!(from = %previous.issuer, to = %issuer, "the resource moved to another authorization server");
            self.store.forget_tokens(&previous.issuer);
        }
        let current = Current {
            issuer: issuer.clone(),
            metadata,
            resource: resource.clone().unwrap_or_default(),
        };
        if let Ok(mut slot) = self.current.lock() {
            *slot = Some(current.clone());
        }
        // A refresh token from this issuer, for this resource, comes before a new login.
        if let Some(tokens) = self.store.tokens(&issuer) {
            self.store.forget_tokens(&issuer);
            if let Some(refresh) = tokens
                .refresh_token
                .filter(|_| tokens.resource == current.resource)
                && let Ok(token) = self
                    .refresh(&current, &refresh, tokens.scope.as_deref())
                    .await
            {
                return Ok(token);
            }
        }
        self.obtain(&current, scope).await
    }

    /// Handles a 403 `insufficient_scope`: asks again for the scopes held plus the challenged
    /// ones, once per challenge. Errors when the challenge adds nothing.
    pub async fn insufficient_scope(
        &self,
        server: &str,
        www_authenticate: &str,
    ) -> Result<String, OAuthError> {
        let _flow = self.flow.lock().await;
        let challenge = bearer_params(www_authenticate);
        let wanted = challenge
            .iter()
            .find(|(n, _)| n == "scope")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let current = self
            .current
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .ok_or_else(|| {
                OAuthError::Authorization(format!(
                    "{server} requires scope '{wanted}' but this client never authorized"
                ))
            })?;
        let held = self
            .store
            .tokens(&current.issuer)
            .and_then(|t| t.scope)
            .unwrap_or_default();
        let mut scopes: Vec<&str> = held.split_whitespace().collect();
        let before = scopes.len();
        for s in wanted.split_whitespace() {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        if scopes.len() == before {
            return Err(OAuthError::ScopeNotGranted(wanted));
        }
        let scope = Some(scopes.join(" "));
        match &self.machine {
            Some(grant) => self.machine_grant(grant, &current, scope).await,
            None => self.authorize(&current, scope).await,
        }
    }

    /// Adds `offline_access` when configured and offered, never otherwise.
    fn with_offline_access(
        &self,
        metadata: &AuthorizationServerMetadata,
        scope: Option<String>,
    ) -> Option<String> {
        let offered = metadata
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        match scope {
            Some(scope)
                if self.config.offline_access
                    && offered
                    && !scope.split_whitespace().any(|s| s == "offline_access") =>
            {
                Some(format!("{scope} offline_access"))
            }
            None if self.config.offline_access && offered => Some("offline_access".into()),
            scope => scope,
        }
    }

    async fn get_json(&self, url: &str) -> Result<Option<Value>, OAuthError> {
        let response = self
            .fetch
            .fetch(HttpRequest {
                method: "GET",
                url: url.to_owned(),
                headers: vec![("Accept".into(), "application/json".into())],
                body: Vec::new(),
            })
            .await
            .map_err(OAuthError::Http)?;
        if response.status != 200 {
            tracing::debug!(%url, status = response.status, "no metadata here");
            return Ok(None);
        }
        serde_json::from_slice(&response.body)
            .map(Some)
            .map_err(|e| OAuthError::Discovery(format!("{url} is not JSON: {e}")))
    }

    /// RFC 9728 discovery: the challenge's URL alone, else path-based then root.
    async fn protected_resource(
        &self,
        server: &str,
        from_challenge: Option<&str>,
    ) -> Result<Option<ProtectedResourceMetadata>, OAuthError> {
        let candidates = match from_challenge {
            Some(url) => vec![url.to_owned()],
            None => {
                let url = RawUrl::parse(server).ok_or_else(|| {
                    OAuthError::Discovery(format!("not an http(s) URL: {server}"))
                })?;
                let root = format!("{}/.well-known/oauth-protected-resource", url.origin());
                match url.trimmed_path() {
                    "" => vec![root],
                    path => vec![format!("{root}{path}"), root],
                }
            }
        };
        for url in candidates {
            if let Some(document) = self.get_json(&url).await? {
                return serde_json::from_value(document).map(Some).map_err(|e| {
                    OAuthError::Discovery(format!("{url} is not protected resource metadata: {e}"))
                });
            }
        }
        Ok(None)
    }

    /// RFC 8414 / OpenID discovery in the spec's order; the `issuer` must equal `issuer`.
    async fn authorization_server(
        &self,
        issuer: &str,
    ) -> Result<Option<AuthorizationServerMetadata>, OAuthError> {
        let url = RawUrl::parse(issuer)
            .ok_or_else(|| OAuthError::Discovery(format!("not an http(s) issuer: {issuer}")))?;
        let origin = url.origin();
        let candidates = match url.trimmed_path() {
            "" => vec![
                format!("{origin}/.well-known/oauth-authorization-server"),
                format!("{origin}/.well-known/openid-configuration"),
            ],
            path => vec![
                format!("{origin}/.well-known/oauth-authorization-server{path}"),
                format!("{origin}/.well-known/openid-configuration{path}"),
                format!("{origin}{path}/.well-known/openid-configuration"),
            ],
        };
        for candidate in candidates {
            let Some(document) = self.get_json(&candidate).await? else {
                continue;
            };
            let metadata: AuthorizationServerMetadata =
                serde_json::from_value(document).map_err(|e| {
                    OAuthError::Discovery(format!(
                        "{candidate} is not authorization server metadata: {e}"
                    ))
                })?;
            if metadata.issuer != issuer {
                return Err(OAuthError::IssuerMismatch {
                    expected: issuer.to_owned(),
                    found: metadata.issuer,
                });
            }
            return Ok(Some(metadata));
        }
        Ok(None)
    }

    /// This client's identity at `current`'s issuer: pre-registered, a metadata document,
    /// remembered, or registered now.
    async fn client(&self, current: &Current) -> Result<ClientCredentials, OAuthError> {
        if let Some(pre) = self
            .config
            .pre_registered
            .iter()
            .find(|c| c.issuer == current.issuer)
        {
            return Ok(pre.clone());
        }
        if current.metadata.client_id_metadata_document_supported
            && let Some(url) = &self.config.client_metadata_url
        {
            return Ok(ClientCredentials {
                issuer: current.issuer.clone(),
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: Some("none".into()),
            });
        }
        if let Some(known) = self.store.client(&current.issuer) {
            return Ok(known);
        }
        let Some(endpoint) = &current.metadata.registration_endpoint else {
            return Err(OAuthError::Registration(format!(
                "{} offers no dynamic registration and this client has no credentials for it",
                current.issuer
            )));
        };
        let method = current
            .metadata
            .token_endpoint_auth_methods_supported
            .as_ref()
            .and_then(|methods| {
                methods.iter().find(|m| {
                    matches!(
                        m.as_str(),
                        "client_secret_basic" | "client_secret_post" | "none"
                    )
                })
            })
            .cloned()
            .unwrap_or_else(|| "client_secret_basic".into());
        let body = json!({
            "client_name": self.config.client_name,
            "redirect_uris": [self.config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.config.application_type,
        });
        let response = self
            .fetch
            .fetch(HttpRequest {
                method: "POST",
                url: endpoint.clone(),
                headers: vec![
                    ("Content-Type".into(), "application/json".into()),
                    ("Accept".into(), "application/json".into()),
                ],
                body: body.to_string().into_bytes(),
            })
            .await
            .map_err(OAuthError::Http)?;
        if !(200..300).contains(&response.status) {
            return Err(OAuthError::Registration(format!(
                "{endpoint} answered HTTP {}",
                response.status
            )));
        }
        let registered: RegistrationResponse = serde_json::from_slice(&response.body)
            .map_err(|e| OAuthError::Registration(format!("{endpoint}: unusable reply ({e})")))?;
        let credentials = ClientCredentials {
            issuer: current.issuer.clone(),
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            token_endpoint_auth_method: registered.token_endpoint_auth_method.or(Some(method)),
        };
        self.store.save_client(credentials.clone());
        Ok(credentials)
    }

    /// The authorization code flow with PKCE; returns the new access token.
    async fn authorize(
        &self,
        current: &Current,
        scope: Option<String>,
    ) -> Result<String, OAuthError> {
        let s256 = current
            .metadata
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
        if !s256 {
            return Err(OAuthError::Authorization(format!(
                "{} does not list S256 in code_challenge_methods_supported; the MCP \
                 authorization spec requires PKCE with S256, so this client will not authorize",
                current.issuer
            )));
        }
        let endpoint = &current.metadata.authorization_endpoint;
        if !is_secure_endpoint(endpoint) {
            return Err(OAuthError::Authorization(format!(
                "the authorization endpoint {endpoint} is not https (only loopback hosts may use \
                 http://); the user was not sent there"
            )));
        }
        let client = self.client(current).await?;
        let verifier = random_token(32)?;
        let challenge = URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            verifier.as_bytes(),
        ));
        let state = random_token(16)?;
        let mut query = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", self.config.redirect_uri.as_str()),
            ("state", state.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ];
        if let Some(scope) = &scope {
            query.push(("scope", scope));
        }
        if !current.resource.is_empty() {
            query.push(("resource", &current.resource));
        }
        let endpoint = &current.metadata.authorization_endpoint;
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{separator}{}", form(&query));
        let redirect = self
            .authorizer
            .authorize(&url, &self.config.redirect_uri)
            .await?;
        let params = RawUrl::parse(&redirect)
            .and_then(|u| u.query.map(str::to_owned))
            .and_then(|q| parse_form(&q))
            .ok_or_else(|| {
                OAuthError::Authorization("the redirect carries no readable query".into())
            })?;
        let get = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        if get("state").as_deref() != Some(state.as_str()) {
            return Err(OAuthError::StateMismatch);
        }
        // RFC 9207, before anything else is done with the response.
        let expected = &current.metadata.issuer;
        match get("iss") {
            Some(iss) if &iss != expected => {
                return Err(OAuthError::Iss {
                    expected: expected.clone(),
                    found: Some(iss),
                });
            }
            None if current
                .metadata
                .authorization_response_iss_parameter_supported =>
            {
                return Err(OAuthError::Iss {
                    expected: expected.clone(),
                    found: None,
                });
            }
            _ => {}
        }
        if let Some(error) = get("error") {
            let description = get("error_description").unwrap_or_default();
            return Err(OAuthError::Authorization(format!(
                "the authorization server answered {error} {description}"
            )));
        }
        let code = get("code")
            .ok_or_else(|| OAuthError::Authorization("the redirect carries no code".into()))?;
        let mut body = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.clone()),
            ("code_verifier", verifier),
        ];
        if !current.resource.is_empty() {
            body.push(("resource", current.resource.clone()));
        }
        self.token_request(current, &client, body, scope).await
    }

    async fn refresh(
        &self,
        current: &Current,
        refresh_token: &str,
        scope: Option<&str>,
    ) -> Result<String, OAuthError> {
        let client = self.client(current).await?;
        let mut body = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.to_owned()),
        ];
        if !current.resource.is_empty() {
            body.push(("resource", current.resource.clone()));
        }
        self.token_request(current, &client, body, scope.map(str::to_owned))
            .await
    }

    /// A token endpoint call with the client's authentication method; stores the tokens.
    async fn token_request(
        &self,
        current: &Current,
        client: &ClientCredentials,
        mut body: Vec<(&str, String)>,
        scope: Option<String>,
    ) -> Result<String, OAuthError> {
        let supported = current
            .metadata
            .token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_default();
        let method = match (&client.token_endpoint_auth_method, &client.client_secret) {
            (Some(method), _) => method.clone(),
            (None, None) => "none".into(),
            (None, Some(_)) => ["client_secret_basic", "client_secret_post"]
                .into_iter()
                .find(|m| supported.is_empty() || supported.iter().any(|s| s == m))
                .unwrap_or("client_secret_basic")
                .to_owned(),
        };
        let mut headers = vec![
            (
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            ),
            ("Accept".to_owned(), "application/json".to_owned()),
        ];
        match (method.as_str(), &client.client_secret) {
            ("client_secret_basic", Some(secret)) => {
                let pair = format!(
                    "{}:{}",
                    text::form_encode(&client.client_id),
                    text::form_encode(secret)
                );
                headers.push((
                    "Authorization".to_owned(),
                    format!("Basic {}", STANDARD.encode(pair)),
                ));
            }
            ("client_secret_post", Some(secret)) => {
                body.push(("client_id", client.client_id.clone()));
                body.push(("client_secret", secret.clone()));
            }
            _ => body.push(("client_id", client.client_id.clone())),
        }
        let pairs: Vec<(&str, &str)> = body.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let endpoint = &current.metadata.token_endpoint;
        let response = self
            .token_post(HttpRequest {
                method: "POST",
                url: endpoint.clone(),
                headers,
                body: form(&pairs).into_bytes(),
            })
            .await?;
        if response.status != 200 {
            let error = serde_json::from_slice::<Value>(&response.body)
                .ok()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            return Err(OAuthError::Token(format!(
                "{endpoint} answered HTTP {} {error}",
                response.status
            )));
        }
        let tokens: TokenResponse = serde_json::from_slice(&response.body)
            .map_err(|e| OAuthError::Token(format!("{endpoint}: unusable reply ({e})")))?;
        self.accept_token_type(endpoint, tokens.token_type.as_deref())?;
        let access = tokens.access_token.clone();
        self.store.save_tokens(
            &current.issuer,
            Tokens {
                access_token: tokens.access_token,
                refresh_token: tokens.refresh_token,
                scope: scope.or(tokens.scope),
                resource: current.resource.clone(),
            },
        );
        Ok(access)
    }
}

/// `bytes` random bytes, base64url: a PKCE verifier (32 bytes, 43 characters) or a state.
fn random_token(bytes: usize) -> Result<String, OAuthError> {
    use ring::rand::SecureRandom;
    let mut buffer = vec![0u8; bytes];
    ring::rand::SystemRandom::new()
        .fill(&mut buffer)
        .map_err(|_| OAuthError::Authorization("the system random generator failed".into()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}
