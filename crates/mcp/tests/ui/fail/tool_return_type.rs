#[mcp::tool]
async fn count() -> u8 {
    1
}

fn main() {
    let _ = mcp::McpServer::new("s").tool(count);
}
