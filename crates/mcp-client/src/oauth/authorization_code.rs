//! The authorization code flow: this client's identity at the issuer (pre-registered, a
//! metadata document, or dynamic registration), then PKCE (S256), `state` and `iss` checked,
//! and the code redeemed.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;

use super::error::OAuthError;
use super::fetch::{HttpRequest, is_secure_endpoint};
use super::metadata::{ClientCredentials, RegistrationResponse};
use super::random::random_token;
use super::text::{RawUrl, form, parse_form};
use super::{Current, OAuth};

impl OAuth {
    /// This client's identity at `current`'s issuer: pre-registered, a metadata document,
    /// remembered, or registered now.
    pub(super) async fn client(&self, current: &Current) -> Result<ClientCredentials, OAuthError> {
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
    pub(super) async fn authorize(
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
}
