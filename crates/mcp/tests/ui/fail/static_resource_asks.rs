use mcp::{Ready, Resolution};

#[mcp::resolver]
async fn value() -> Resolution<u8> {
    Resolution::ready(1)
}

#[mcp::resource("file:///readme")]
async fn readme(#[resolve(value)] v: Ready<u8>) -> String {
    v.0.to_string()
}

fn main() {}
