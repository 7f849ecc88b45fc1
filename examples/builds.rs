//! The Builds server: `run_build` runs as a task and asks for confirmation halfway.
//!
//! ```sh
//! cargo run --example builds                          # stdio
//! cargo run --example builds -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```
//!
//! `--auth` (HTTP) asks for the `protected` example's demo bearer tokens (`alice-token`,
//! `bob-token`), so each user's tasks are their own and count against their own share of the
//! task store (`cargo xtask attack --only task-flood`).

use mcp_examples::cli::Listen;
use mcp_examples::{builds, protected};

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--auth") {
        return mcp_examples::cli::run(builds::server()).await;
    }
    let rest = args.into_iter().filter(|a| a != "--auth");
    let Ok(Listen::Http(addr)) = Listen::parse(rest) else {
        return Err("--auth needs --http ADDR".into());
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    eprintln!("serving MCP at {url}");
    mcp::http::endpoint(builds::server())?
        .bearer_auth(protected::DemoTokens::new(&url), protected::resource(&url))
        .serve_with_shutdown(listener, "/mcp", async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
