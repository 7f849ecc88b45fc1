//! A server reports the version of the crate that defines its annotated items (this test
//! crate's, which trybuild names), unless told otherwise.

use mcp::McpServer;

#[mcp::tool]
async fn hello() -> String {
    "hello".into()
}

fn main() {
    let ours = McpServer::new("v").tool(hello).into_service().unwrap();
    assert_eq!(ours.server_info().version, env!("CARGO_PKG_VERSION"));
    let bare = McpServer::new("v").into_service().unwrap();
    assert_ne!(bare.server_info().version, ours.server_info().version);
    let set = McpServer::new("v").version("9.9.9").tool(hello).into_service().unwrap();
    assert_eq!(set.server_info().version, "9.9.9");
}
