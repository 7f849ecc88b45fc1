#[mcp::tool]
async fn ask(#[resolve] answer: String, #[mcp(colour = 1)] other: String) -> String {
    answer + &other
}

fn main() {}
