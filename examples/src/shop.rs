//! A shop with per-tool policy and sealed state (issue #34, `docs/policy.md`,
//! `docs/handles.md`): the basket travels as a sealed handle that only its owner can use, so
//! the server keeps no session; `checkout` needs the `shop.checkout` scope (a token without it
//! gets the 403 step-up challenge) and is limited to 3 calls a minute per user; every call is
//! audited (`mcp::audit` events: who, what, how it ended, never the basket).
//!
//! The [`ShopTokens`] verifier knows fixed demo tokens: `alice-browse` and `bob-browse` with
//! `shop.browse`, `alice-full` and `bob-full` with `shop.browse shop.checkout`.

use std::time::Duration;

use mcp::client::BoxFuture;
use mcp::http::{AuthError, ProtectedResource, TokenVerifier, VerifiedToken};
use mcp::policy::{Audit, ConcurrencyLimit, Rate, RateLimit, RateStore, Timeout};
use mcp::seal::Principal;
use mcp::{Context, Handle, HandleKind, McpServer, Refusal};
use serde::{Deserialize, Serialize};

/// The authorization server the demo tokens claim to come from.
pub const ISSUER: &str = "https://auth.shop.example";
/// What every request needs.
pub const BROWSE: &str = "shop.browse";
/// What `checkout` needs.
pub const CHECKOUT: &str = "shop.checkout";

/// What the shop sells.
const PRODUCTS: [&str; 4] = ["green tea", "oolong", "lemon cake", "teapot"];

/// Demo tokens (see the module's documentation).
pub struct ShopTokens {
    resource: String,
}

impl ShopTokens {
    /// Tokens for the resource `resource`.
    pub fn new(resource: impl Into<String>) -> Self {
        ShopTokens {
            resource: resource.into(),
        }
    }
}

impl TokenVerifier for ShopTokens {
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let verdict = match token.split_once('-') {
            Some((user @ ("alice" | "bob"), grant @ ("browse" | "full"))) => {
                let scopes = if grant == "full" {
                    format!("{BROWSE} {CHECKOUT}")
                } else {
                    BROWSE.to_owned()
                };
                Ok(
                    VerifiedToken::new(Principal::new("shop-app").issuer(ISSUER).subject(user))
                        .audience(&self.resource)
                        .scopes(&scopes),
                )
            }
            _ => Err(AuthError::InvalidToken("unknown token".into())),
        };
        Box::pin(async move { verdict })
    }
}

/// The resource description for the endpoint at `resource`.
pub fn resource(resource: &str) -> ProtectedResource {
    ProtectedResource::new(resource)
        .authorization_server(ISSUER)
        .scopes_supported([BROWSE, CHECKOUT])
        .required_scopes([BROWSE])
        .resource_name("Tea shop")
}

/// A basket: what the handle seals.
#[derive(Serialize, Deserialize)]
pub struct Basket {
    items: Vec<String>,
}

impl HandleKind for Basket {
    const KIND: &'static str = "basket";
}

/// List what the shop sells.
#[mcp::tool(read_only)]
pub async fn browse() -> String {
    PRODUCTS.join(", ")
}

/// Put an item in a basket (a new one when none is given); returns the basket's handle.
#[mcp::tool]
pub async fn add_to_basket(
    /// One of the products `browse` lists.
    item: String,
    /// The basket to add to, as returned by an earlier `add_to_basket`.
    basket: Option<Handle<Basket>>,
    ctx: &Context,
) -> Result<String, Refusal> {
    if !PRODUCTS.contains(&item.as_str()) {
        return Err(Refusal(mcp::types::ErrorObject::invalid_params(format!(
            "'{item}' is not sold here; `browse` lists what is"
        ))));
    }
    let mut basket = match basket {
        Some(handle) => handle.open(ctx).await?,
        None => Basket { items: Vec::new() },
    };
    if basket.items.len() >= 20 {
        return Err(Refusal(mcp::types::ErrorObject::invalid_params(
            "a basket holds at most 20 items",
        )));
    }
    basket.items.push(item);
    Ok(ctx.seal_handle(&basket)?.as_str().to_owned())
}

/// Say what a basket holds.
#[mcp::tool(read_only)]
pub async fn view_basket(
    /// The basket's handle.
    basket: Handle<Basket>,
    ctx: &Context,
) -> Result<String, Refusal> {
    Ok(basket.open(ctx).await?.items.join(", "))
}

/// Buy what a basket holds, as the calling user.
#[mcp::tool(scopes = ["shop.checkout"])]
pub async fn checkout(
    /// The basket's handle.
    basket: Handle<Basket>,
    ctx: &Context,
) -> Result<String, Refusal> {
    let basket = basket.open(ctx).await?;
    let who = ctx
        .principal()
        .and_then(|p| p.subject.clone())
        .unwrap_or_else(|| "nobody".into());
    Ok(format!("{who} bought {}.", basket.items.join(", ")))
}

/// The shop: its tools and their policy. `rates` shares the checkout limit (e.g.
/// `mcp::redis::RedisRates` for a fleet); `None` keeps it in this process.
pub fn server(rates: Option<std::sync::Arc<dyn RateStore>>) -> McpServer {
    let mut limit = RateLimit::per_principal("checkout", Rate::new(3, Duration::from_secs(60)));
    if let Some(rates) = rates {
        limit = limit.shared_store(rates);
    }
    McpServer::new("Tea shop")
        .tool(browse)
        .tool(add_to_basket)
        .tool(view_basket)
        .tool(checkout)
        .layer(Audit::to_tracing())
        .method_layer("tools/call", Timeout::new(Duration::from_secs(10)))
        .tool_layer("checkout", ConcurrencyLimit::new(16))
        .tool_layer("checkout", limit)
}
