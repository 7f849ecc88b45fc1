use mcp::{Ready, Resolution};

#[mcp::resolver]
async fn number() -> Resolution<u8> {
    Resolution::ready(1)
}

#[mcp::tool]
async fn show(#[resolve(number)] text: Ready<String>) -> String {
    text.0
}

fn main() {}
