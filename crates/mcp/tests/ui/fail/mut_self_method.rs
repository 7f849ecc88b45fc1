struct Store;

#[mcp::tools]
impl Store {
    #[tool]
    async fn change(&mut self, value: String) -> String {
        value
    }
}

fn main() {}
