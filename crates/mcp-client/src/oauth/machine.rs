//! The machine grants on `OAuth`: binding the credential to its issuer, and getting tokens
//! without a user.

use super::metadata::TokenResponse;
use super::text::form;
use super::{Current, HttpRequest, OAuth, OAuthError};
use serde_json::Value;

use crate::oauth::grant::{ID_JAG_TYPE, ID_TOKEN_TYPE, JWT_BEARER, TOKEN_EXCHANGE};
use crate::oauth::{ClientAuth, EnterpriseGrant, MachineGrant};

impl OAuth {
    /// Binds this machine client's credential to the authorization server `issuer`: the
    /// client secret, the signed client assertion, the workload's assertion and the enterprise
    /// ID token go only to the authorization server with that issuer identifier. Call it once
    /// per issuer the credential may be used with; of several authorization servers in the
    /// resource metadata, the first one bound is used. An MCP server whose resource metadata
    /// (or, without any, its origin) names no bound authorization server gets
    /// [`OAuthError::UnboundIssuer`] before anything is sent or an assertion is read.
    /// Authorization server metadata naming another `issuer` than the one it was found for is
    /// refused as for every client ([`OAuthError::IssuerMismatch`]), and the grant checks the
    /// metadata's `issuer` against the binding once more before it sends anything.
    ///
    /// The comparison is exact, as for every issuer in this crate: `https://as.example` and
    /// `https://as.example/` are different issuers. Use the `issuer` of the authorization
    /// server's metadata. An interactive client ignores this: its credentials are already
    /// kept per issuer, and its user sees where the browser goes.
    pub fn bound_to_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.machine_issuers.issuers.push(issuer.into());
        self
    }

    /// **Dangerous:** lets this machine client send its credential to whichever authorization
    /// server the MCP server names. A hostile MCP server (or whoever controls its resource
    /// metadata) then names its own authorization server and receives the client secret, or
    /// the workload's token issued for your real authorization server, and replays it there
    /// to act as this client. Use it only where the MCP server is as trusted as the credential
    /// and the issuer cannot be known in advance (a test harness that starts its authorization
    /// server on a port it picks). Otherwise use [`OAuth::bound_to_issuer`].
    pub fn danger_send_credentials_to_any_issuer(mut self) -> Self {
        self.machine_issuers.any = true;
        self
    }

    /// Whether this client may send its credential to the authorization server `named`.
    /// Always for an interactive client; for a machine client, only to an issuer it is bound
    /// to, unless it opted out.
    pub(super) fn machine_may_use(&self, named: &str) -> Result<(), OAuthError> {
        let binding = &self.machine_issuers;
        if self.machine.is_none() || binding.any || binding.issuers.iter().any(|i| i == named) {
            return Ok(());
        }
        Err(OAuthError::UnboundIssuer {
            named: named.to_owned(),
            bound: binding.issuers.clone(),
        })
    }

    /// Obtains a token for `current` with this client's machine grant.
    pub(super) async fn machine_grant(
        &self,
        grant: &MachineGrant,
        current: &Current,
        scope: Option<String>,
    ) -> Result<String, OAuthError> {
        // Before an assertion is read, an ID-JAG asked for, or a token request sent: the
        // issuer the resource metadata named, and the one its metadata document claims.
        self.machine_may_use(&current.issuer)?;
        self.machine_may_use(&current.metadata.issuer)?;
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
        Ok(self.keep_tokens(issuer, current, tokens, scope))
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
