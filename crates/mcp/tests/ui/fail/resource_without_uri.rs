#[mcp::resource(name = "x")]
async fn nowhere() -> String {
    String::new()
}

fn main() {}
