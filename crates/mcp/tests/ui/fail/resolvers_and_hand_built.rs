use mcp::{Ready, Resolution, ToolOutcome};

#[mcp::resolver]
async fn value() -> Resolution<u8> {
    Resolution::ready(1)
}

#[mcp::tool]
async fn both(#[resolve(value)] v: Ready<u8>) -> ToolOutcome {
    mcp::Outcome::Complete(mcp::types::tools::CallToolResult::text(v.0.to_string()))
}

fn main() {}
