#[mcp::tool]
async fn pair((a, b): (u8, u8)) -> String {
    format!("{a}{b}")
}

fn main() {}
