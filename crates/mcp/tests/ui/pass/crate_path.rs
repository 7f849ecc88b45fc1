// A crate that re-exports `mcp` under another path points the macros at it.
mod facade {
    pub use ::mcp;
}

#[mcp::tool]
#[mcp(crate = facade::mcp)]
async fn echo(text: String) -> String {
    text
}

#[mcp::resolver(crate = crate::facade::mcp)]
async fn nothing() -> mcp::Resolution<String> {
    mcp::Resolution::ready(String::new())
}

fn main() {
    let _ = mcp::McpServer::new("re-exported").tool(echo).build();
}
