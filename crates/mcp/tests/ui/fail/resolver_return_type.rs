#[mcp::resolver]
async fn answer() -> String {
    "42".into()
}

fn main() {}
