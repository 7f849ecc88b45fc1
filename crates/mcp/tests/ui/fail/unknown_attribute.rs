#[mcp::tool(colour = "red", title = 7)]
async fn paint(text: String) -> String {
    text
}

fn main() {}
