// Methods of a `#[mcp::tools]` block share one value of the type.
use mcp::{Context, McpServer, Ready, Resolution};

struct Counter {
    hits: std::sync::atomic::AtomicU64,
}

#[mcp::resolver]
async fn step() -> Resolution<u64> {
    Resolution::ready(1)
}

#[mcp::tools]
impl Counter {
    /// Adds one.
    #[tool(name = "hit")]
    async fn hit(&self, #[resolve(step)] step: Ready<u64>, ctx: &Context) -> String {
        let _ = ctx.era();
        let n = self.hits.fetch_add(step.0, std::sync::atomic::Ordering::SeqCst);
        format!("{n}")
    }

    /// Says how many.
    #[prompt]
    async fn how_many(&self) -> String {
        format!("{:?}", self.hits)
    }

    /// The count as a resource.
    #[resource("counter://now")]
    async fn now(&self) -> String {
        String::new()
    }

    /// Not an MCP item: left alone.
    fn helper(&self) -> u64 {
        0
    }
}

fn main() {
    let counter = Counter { hits: 0.into() };
    let _ = counter.helper();
    let _ = McpServer::new("counter").register(counter).build();
}
