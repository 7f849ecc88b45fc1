// Resolvers that depend on each other compile: a proc macro sees one function at a time, so the
// cycle is found when the server is built, and the `BuildError` names it in one sentence.
use mcp::{McpServer, Ready, Resolution};

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

fn main() {
    let error = McpServer::new("s").tool(loops).into_service().err().expect("a cycle");
    assert_eq!(
        error.to_string(),
        "tool 'loops': resolvers depend on each other in a cycle: 'first' -> 'second' -> \
         'first'; remove one of these `#[resolve(...)]` parameters"
    );
}
