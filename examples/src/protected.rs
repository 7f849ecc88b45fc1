//! A protected server: every request needs a bearer token for this resource with the `mcp:tools`
//! scope, the caller's identity reaches the tools, and a round's state only works for the user
//! it was minted for.
//!
//! The [`DemoTokens`] verifier knows three fixed tokens; a real deployment verifies a JWT or
//! asks its authorization server instead.

use mcp::client::BoxFuture;
use mcp::http::{AuthError, ProtectedResource, TokenVerifier, VerifiedToken};
use mcp::seal::Principal;
use mcp::{Accepted, Context, McpServer, Resolution};
use schemars::JsonSchema;
use serde::Deserialize;

/// The authorization server the demo tokens claim to come from.
pub const ISSUER: &str = "https://auth.example.com";
/// The scope every request needs.
pub const SCOPE: &str = "mcp:tools";

/// Demo tokens: `alice-token` and `bob-token` for this resource, `elsewhere-token` issued for
/// another resource, `read-only-token` without the scope; and `dpop-alice.{jkt}` and
/// `dpop-bob.{jkt}`, bound to the key whose RFC 7638 thumbprint is `jkt` (a real verifier reads
/// the binding from the token's `cnf.jkt` claim; here the token text carries it), so each
/// request must carry a DPoP proof signed by that key.
pub struct DemoTokens {
    resource: String,
}

impl DemoTokens {
    /// Tokens for the resource `resource`.
    pub fn new(resource: impl Into<String>) -> Self {
        DemoTokens {
            resource: resource.into(),
        }
    }
}

impl TokenVerifier for DemoTokens {
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let user = |subject: &str| {
            VerifiedToken::new(
                Principal::new("demo-console")
                    .issuer(ISSUER)
                    .subject(subject),
            )
        };
        let verdict = match token {
            "alice-token" => Ok(user("alice").audience(&self.resource).scopes(SCOPE)),
            "bob-token" => Ok(user("bob").audience(&self.resource).scopes(SCOPE)),
            "elsewhere-token" => Ok(user("alice")
                .audience("https://other.example.com/mcp")
                .scopes(SCOPE)),
            "read-only-token" => Ok(user("alice").audience(&self.resource).scopes("mcp:read")),
            _ => match token.split_once('.') {
                Some(("dpop-alice", jkt)) if !jkt.is_empty() => Ok(user("alice")
                    .audience(&self.resource)
                    .scopes(SCOPE)
                    .dpop_bound(jkt)),
                Some(("dpop-bob", jkt)) if !jkt.is_empty() => Ok(user("bob")
                    .audience(&self.resource)
                    .scopes(SCOPE)
                    .dpop_bound(jkt)),
                _ => Err(AuthError::InvalidToken("unknown token".into())),
            },
        };
        Box::pin(async move { verdict })
    }
}

/// The resource description for the endpoint at `resource`.
pub fn resource(resource: &str) -> ProtectedResource {
    ProtectedResource::new(resource)
        .authorization_server(ISSUER)
        .scopes_supported([SCOPE])
        .required_scopes([SCOPE])
        .resource_name("Protected demo")
}

/// The answer to "Deploy …?".
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Go ahead.
    pub ok: bool,
}

/// Always asks.
#[mcp::resolver]
pub async fn confirm_deploy(service: &str) -> Resolution<Confirm> {
    Resolution::elicit(format!("Deploy {service} to production?"))
}

/// Deploy a service, after confirmation, as the calling user.
#[mcp::tool]
pub async fn deploy(
    /// The service to deploy.
    service: String,
    #[resolve(confirm_deploy)] confirm: Accepted<Confirm>,
    ctx: &Context,
) -> String {
    let who = ctx
        .principal()
        .and_then(|p| p.subject.clone())
        .unwrap_or_else(|| "nobody".into());
    if confirm.0.ok {
        format!("{who} deployed {service}.")
    } else {
        format!("{who} kept {service} as it is.")
    }
}

/// The protected server's tools.
pub fn server() -> McpServer {
    McpServer::new("Protected").tool(deploy)
}
