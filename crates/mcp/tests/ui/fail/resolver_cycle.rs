use mcp::{Ready, Resolution};

#[mcp::resolver]
async fn first(#[resolve(second)] _s: Ready<u8>) -> Resolution<u8> {
    Resolution::ready(1)
}

#[mcp::resolver]
async fn second(#[resolve(first)] _f: Ready<u8>) -> Resolution<u8> {
    Resolution::ready(2)
}

#[mcp::tool]
async fn loops(#[resolve(first)] value: Ready<u8>) -> String {
    value.0.to_string()
}

fn main() {}
