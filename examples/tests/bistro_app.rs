//! The Bistro's booking app (`examples/src/bistro_app.rs`): the macro's `ui = ...` links
//! `book_table` to the app for a host that declares MCP Apps, and the tool still answers text.

use std::time::Duration;

use mcp::{MemoryConnection, TransportContext};
use mcp_examples::bistro_app;
use serde_json::{Value, json};

async fn ask(
    conn: &mut MemoryConnection,
    id: i64,
    method: &str,
    params: Value,
    caps: Value,
) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}
    });
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    assert!(conn.send_raw(request.to_string()));
    let reply = tokio::time::timeout(Duration::from_secs(10), conn.recv())
        .await
        .expect("the server answers within 10 s")
        .expect("the connection stays open");
    serde_json::from_str(&reply.to_string()).unwrap()
}

#[tokio::test]
async fn the_macro_links_book_table_to_the_booking_app_for_hosts_only() {
    let service = bistro_app::server().into_service().unwrap();
    let mut conn = MemoryConnection::connect(&service, TransportContext::default());
    let host = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    let tools = ask(&mut conn, 1, "tools/list", json!({}), host.clone()).await;
    assert_eq!(
        tools["result"]["tools"][0]["_meta"],
        json!({"ui": {"resourceUri": "ui://bistro/booking"}, "ui/resourceUri": "ui://bistro/booking"})
    );
    let app = ask(
        &mut conn,
        2,
        "resources/read",
        json!({"uri": bistro_app::BOOKING_APP}),
        host,
    )
    .await;
    let contents = &app["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(contents["text"], bistro_app::BOOKING_HTML);
    assert_eq!(contents["_meta"], json!({"ui": {"prefersBorder": true}}));

    let plain = ask(&mut conn, 3, "tools/list", json!({}), json!({})).await;
    assert_eq!(plain["result"]["tools"][0].get("_meta"), None);
    let call = json!({"name": "book_table", "arguments": {"date": "2026-12-24", "party_size": 4}});
    let done = ask(&mut conn, 4, "tools/call", call, json!({})).await;
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": "Booked a table for 4 on 2026-12-24."}])
    );
    let call = json!({"name": "book_table", "arguments": {"date": "2026-12-24", "party_size": 40}});
    let refused = ask(&mut conn, 5, "tools/call", call, json!({})).await;
    assert_eq!(refused["result"]["isError"], true);
    assert_eq!(
        refused["result"]["content"][0]["text"],
        "A table seats 1 to 12 people; 40 cannot be booked."
    );
}
