//! Sending a person to the authorization page: the [`Authorizer`] trait, the headless one for
//! automation, and the machine client's, which has no one to send.

use std::sync::Arc;

use super::error::OAuthError;
use super::fetch::{HttpFetch, HttpRequest};
use crate::transport::BoxFuture;

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
pub(super) struct NoBrowser;

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
