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

mod authorization_code;
mod authorizer;
mod discovery;
mod dpop;
mod dpop_proofs;
mod error;
mod fetch;
mod grant;
mod jwt;
mod machine;
mod metadata;
mod random;
mod store;
mod text;
mod token_endpoint;

use std::fmt;
use std::sync::{Arc, Mutex};

pub use authorizer::{Authorizer, HeadlessAuthorizer};
pub use error::OAuthError;
pub use fetch::{DEFAULT_FETCH_TIMEOUT, HttpFetch, HttpRequest, HttpResponse, is_secure_endpoint};
pub use grant::{
    AssertionSource, CallbackAssertion, ClientAuth, ClientAuthMethod, EnterpriseGrant,
    EnvAssertion, FileAssertion, MachineGrant, StaticAssertion,
};
pub use jwt::SigningKey;
pub use mcp_state_seal::jwk_thumbprint;
pub use metadata::{
    AuthorizationServerMetadata, ClientCredentials, ProtectedResourceMetadata, Tokens,
};
pub use store::{MemoryTokenStore, TokenStore};

use authorizer::NoBrowser;
use fetch::Guarded;
use metadata::Current;
use text::{RawUrl, bearer_params, resource_covers};

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
}
