//! Sealed state handles through the facade, as users write them: a tool seals a basket into a
//! handle, a later tool takes `Handle<Basket>` and opens it. A handle opens for its owner only,
//! in both eras; every refusal is `-32602 "Invalid or expired handle"`; a single-use handle
//! opens once; the value never travels in the clear.

use std::time::Duration;

use mcp::seal::{MemorySeenStore, Principal};
use mcp::{
    Context, Handle, HandleKind, McpServer, MemoryConnection, Refusal, RequestStateSecurity,
};
use mcp::{Service, TransportContext};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Serialize, Deserialize)]
struct Basket {
    items: Vec<String>,
}

impl HandleKind for Basket {
    const KIND: &'static str = "basket";
}

#[derive(Serialize, Deserialize)]
struct Voucher {
    percent: u32,
}

impl HandleKind for Voucher {
    const KIND: &'static str = "voucher";
    const SINGLE_USE: bool = true;
}

/// Start a basket with one item.
#[mcp::tool]
async fn start_basket(item: String, ctx: &Context) -> Result<String, Refusal> {
    let basket = ctx.seal_handle(&Basket { items: vec![item] })?;
    Ok(basket.as_str().to_owned())
}

/// Buy what a basket holds.
#[mcp::tool]
async fn checkout(basket: Handle<Basket>, ctx: &Context) -> Result<String, Refusal> {
    let basket = basket.open(ctx).await?;
    Ok(format!("bought {}", basket.items.join(", ")))
}

/// Issue a voucher, good once.
#[mcp::tool]
async fn issue_voucher(ctx: &Context) -> Result<String, Refusal> {
    Ok(ctx
        .seal_handle(&Voucher { percent: 10 })?
        .as_str()
        .to_owned())
}

/// Redeem a voucher.
#[mcp::tool]
async fn redeem(voucher: Handle<Voucher>, ctx: &Context) -> Result<String, Refusal> {
    let voucher = voucher.open(ctx).await?;
    Ok(format!("{}% off", voucher.percent))
}

fn shop(security: RequestStateSecurity) -> Service {
    McpServer::new("shop")
        .request_state_security(security)
        .tool(start_basket)
        .tool(checkout)
        .tool(issue_voucher)
        .tool(redeem)
        .into_service()
        .unwrap()
}

fn as_user(service: &Service, user: &str) -> MemoryConnection {
    MemoryConnection::connect(
        service,
        TransportContext {
            principal: Some(Principal::new("shop-app").subject(user)),
            ..TransportContext::default()
        },
    )
}

async fn ask(conn: &mut MemoryConnection, id: u64, method: &str, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    conn.send_raw(request.to_string());
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), conn.recv())
            .await
            .expect("the server answered within 10 s")
            .expect("the connection is open")
            .to_value();
        if message.get("method").is_none() && message["id"] == json!(id) {
            return message;
        }
    }
}

/// A `tools/call` on 2026-07-28.
async fn call(conn: &mut MemoryConnection, id: u64, tool: &str, arguments: Value) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let params = json!({"name": tool, "arguments": arguments, "_meta": meta});
    ask(conn, id, "tools/call", params).await
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a text result: {reply}"))
}

#[track_caller]
fn assert_invalid_handle(reply: &Value) {
    assert_eq!(
        reply["error"],
        json!({"code": -32602, "message": "Invalid or expired handle"}),
        "{reply}"
    );
}

#[tokio::test]
async fn a_basket_handle_opens_for_its_owner_and_nobody_else() {
    let service = shop(RequestStateSecurity::ephemeral());
    let mut alice = as_user(&service, "alice");
    let handle =
        text(&call(&mut alice, 1, "start_basket", json!({"item": "green tea"})).await).to_owned();
    assert!(
        !handle.contains("green"),
        "the basket is readable: {handle}"
    );

    let bought = call(&mut alice, 2, "checkout", json!({"basket": handle})).await;
    assert_eq!(text(&bought), "bought green tea");

    let mut bob = as_user(&service, "bob");
    assert_invalid_handle(&call(&mut bob, 1, "checkout", json!({"basket": handle})).await);

    let mut altered = handle.clone();
    altered.insert(altered.len() / 2, 'x');
    assert_invalid_handle(&call(&mut alice, 3, "checkout", json!({"basket": altered})).await);
    assert_invalid_handle(&call(&mut alice, 4, "checkout", json!({"basket": "basket-42"})).await);

    // Another server (another key, another audience) never opens it.
    let other = McpServer::new("other-shop")
        .tool(checkout)
        .into_service()
        .unwrap();
    let mut alice_elsewhere = as_user(&other, "alice");
    assert_invalid_handle(
        &call(
            &mut alice_elsewhere,
            1,
            "checkout",
            json!({"basket": handle}),
        )
        .await,
    );
}

#[tokio::test]
async fn a_handle_crosses_eras_and_its_schema_is_an_opaque_string() {
    let service = shop(RequestStateSecurity::ephemeral());
    let mut alice = as_user(&service, "alice");
    let handle =
        text(&call(&mut alice, 1, "start_basket", json!({"item": "oolong"})).await).to_owned();

    // The same user on a 2025-11-25 session.
    let mut legacy = as_user(&service, "alice");
    let init = ask(
        &mut legacy,
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    assert!(init.get("result").is_some(), "{init}");
    legacy.send_raw(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    let bought = ask(
        &mut legacy,
        2,
        "tools/call",
        json!({"name": "checkout", "arguments": {"basket": handle}}),
    )
    .await;
    assert_eq!(text(&bought), "bought oolong");

    let tools = ask(&mut legacy, 3, "tools/list", json!({})).await;
    let checkout = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "checkout")
        .unwrap();
    assert_eq!(
        checkout["inputSchema"]["properties"]["basket"],
        json!({"type": "string", "description": "A handle to a basket: an opaque value this server returned earlier; pass it back exactly as received."})
    );
}

#[tokio::test]
async fn a_single_use_handle_opens_once_and_needs_the_replay_guard() {
    let guarded = shop(RequestStateSecurity::ephemeral().replay_guard(MemorySeenStore::default()));
    let mut alice = as_user(&guarded, "alice");
    let voucher = text(&call(&mut alice, 1, "issue_voucher", json!({})).await).to_owned();
    let redeemed = call(&mut alice, 2, "redeem", json!({"voucher": voucher})).await;
    assert_eq!(text(&redeemed), "10% off");
    assert_invalid_handle(&call(&mut alice, 3, "redeem", json!({"voucher": voucher})).await);

    // A basket handle is not a voucher, even on the same server.
    let basket =
        text(&call(&mut alice, 4, "start_basket", json!({"item": "tea"})).await).to_owned();
    assert_invalid_handle(&call(&mut alice, 5, "redeem", json!({"voucher": basket})).await);

    // Without a replay guard a single-use handle cannot be sealed: an internal error, logged.
    let unguarded = shop(RequestStateSecurity::ephemeral());
    let mut alice = as_user(&unguarded, "alice");
    let refused = call(&mut alice, 1, "issue_voucher", json!({})).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
}
