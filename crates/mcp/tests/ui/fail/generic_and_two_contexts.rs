use mcp::Context;

#[mcp::tool]
async fn generic<T>(a: &Context, b: &Context) -> String {
    let _ = (a, b);
    String::new()
}

fn main() {}
