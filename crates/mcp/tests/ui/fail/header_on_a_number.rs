#[mcp::tool]
async fn route(#[mcp(header = "Bad Name")] region: String, #[mcp(header = "Ratio")] ratio: f64) -> String {
    format!("{region}{ratio}")
}

fn main() {}
