//! A server protected by OAuth bearer tokens (demo tokens `alice-token` and `bob-token`).
//! HTTP only: a stdio server is as trusted as the process that started it.
//!
//! ```sh
//! cargo run --example protected -- --http 127.0.0.1:8000
//! curl -i -X POST http://127.0.0.1:8000/mcp          # 401, WWW-Authenticate names the metadata
//! curl http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp
//! ```

use mcp_examples::cli::Listen;
use mcp_examples::protected;

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let Listen::Http(addr) = Listen::from_env() else {
        return Err("a protected server needs --http ADDR".into());
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    eprintln!("serving MCP at {url}");
    mcp::http::endpoint(protected::server())?
        .bearer_auth(protected::DemoTokens::new(&url), protected::resource(&url))
        .serve_with_shutdown(listener, "/mcp", async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
