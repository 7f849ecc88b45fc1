use mcp::{Ready, Resolution, ToolOutcome};

#[mcp::resolver]
async fn value() -> Resolution<u8> {
    Resolution::ready(1)
}

#[mcp::tool]
async fn both(#[resolve(value)] v: Ready<u8>) -> ToolOutcome {
    let _ = v;
    unimplemented!()
}

fn main() {}
