//! Discovery: the protected resource metadata (RFC 9728) and the authorization server's
//! metadata (RFC 8414, then OpenID discovery), fetched as the spec orders them.

use serde_json::Value;

use super::OAuth;
use super::error::OAuthError;
use super::fetch::HttpRequest;
use super::metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};
use super::text::RawUrl;

impl OAuth {
    pub(super) async fn get_json(&self, url: &str) -> Result<Option<Value>, OAuthError> {
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
    pub(super) async fn protected_resource(
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
    pub(super) async fn authorization_server(
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
}
