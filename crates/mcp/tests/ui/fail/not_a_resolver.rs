async fn plain() -> mcp::Resolution<String> {
    mcp::Resolution::ready(String::new())
}

#[mcp::tool]
async fn uses(#[resolve(plain)] value: mcp::Ready<String>) -> String {
    value.0
}

fn main() {}
