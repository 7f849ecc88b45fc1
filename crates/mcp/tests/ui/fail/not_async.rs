#[mcp::tool]
fn sync_tool(text: String) -> String {
    text
}

fn main() {}
