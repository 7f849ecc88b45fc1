struct Files;

impl Files {
    #[mcp::tool]
    async fn list(&self) -> String {
        String::new()
    }
}

fn main() {}
