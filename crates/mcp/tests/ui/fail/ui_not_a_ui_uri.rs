#[mcp::tool(ui = "https://bistro.example/booking")]
async fn book_table(date: String) -> String {
    date
}

fn main() {}
