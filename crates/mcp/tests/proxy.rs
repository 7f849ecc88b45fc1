//! The gateway kit through the facade (feature `proxy`): a server written with `#[mcp::tool]`
//! mounted under a prefix, the built gateway served as any `IntoService`, called by name.
#![cfg(feature = "proxy")]

use mcp::client::{Client, MemoryTransport};
use mcp::proxy::{Gateway, GatewayError};
use mcp::{IntoService, McpServer};
use serde_json::json;

/// Adds two numbers.
#[mcp::tool]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

#[tokio::test]
async fn a_mounted_server_answers_under_its_prefix_through_the_facade() {
    let gateway = Gateway::new("hub")
        .mount("math", McpServer::new("math").tool(add))
        .build()
        .await
        .unwrap();
    assert_eq!(gateway.tools(), ["math_add"]);
    let service = IntoService::into_service(gateway).unwrap();
    let client = Client::builder()
        .connect(MemoryTransport::new(&service))
        .await
        .unwrap();
    let result = client
        .call_tool("math_add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("42"));

    let e = Gateway::new("hub")
        .mount("math", McpServer::new("math").tool(add))
        .mount("", McpServer::new("other").tool(add))
        .mount("", McpServer::new("again").tool(add))
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(&e, GatewayError::Collision { name, .. } if name == "add"),
        "{e:?}"
    );
}
