//! The token endpoint: redeeming a grant with the client's authentication method, refreshing,
//! and keeping what it answers in the token store.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::error::OAuthError;
use super::fetch::HttpRequest;
use super::metadata::{ClientCredentials, TokenResponse, Tokens};
use super::text::{self, form};
use super::{Current, OAuth};

impl OAuth {
    pub(super) async fn refresh(
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
    pub(super) async fn token_request(
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
        Ok(self.keep_tokens(&current.issuer, current, tokens, scope))
    }

    /// Keeps the tokens `issuer` issued for `current`'s resource (the scope asked for when
    /// the reply names none) and answers the access token to send now.
    pub(super) fn keep_tokens(
        &self,
        issuer: &str,
        current: &Current,
        tokens: TokenResponse,
        scope: Option<String>,
    ) -> String {
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
        access
    }
}
