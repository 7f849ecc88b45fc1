//! The tea shop (`examples/src/shop.rs`): sealed basket handles, a checkout that needs the
//! `shop.checkout` scope and is rate-limited per user, and an audit log on stderr.
//!
//! ```sh
//! cargo run --example shop -- --http 127.0.0.1:8000
//! # demo tokens: alice-browse, bob-browse (shop.browse); alice-full, bob-full (+ shop.checkout)
//! ```
//!
//! `--redis redis://127.0.0.1:6379/` keeps the checkout limit's buckets in Redis, so every
//! instance on that Redis spends from one limit per user.

use std::net::SocketAddr;
use std::sync::Arc;

use mcp::redis::{RedisConfig, RedisStores};
use mcp_examples::shop;

const USAGE: &str = "usage: shop --http ADDR [--redis URL]";

fn args() -> Result<(SocketAddr, Option<String>), String> {
    let (mut addr, mut redis) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--http" => {
                let text = value("--http")?;
                addr = Some(
                    text.parse()
                        .map_err(|e| format!("--http {text}: not an IP address and port ({e})"))?,
                );
            }
            "--redis" => redis = Some(value("--redis")?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok((addr.ok_or("the shop needs --http ADDR")?, redis))
}

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let (addr, redis) = match args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    // The audit log: `mcp::audit` events on stderr, one line each.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,mcp::audit=info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let rates = match redis {
        Some(url) => {
            let stores = RedisStores::connect(RedisConfig::new(url).prefix("shop"))
                .await
                .map_err(|e| format!("--redis: {e}"))?;
            Some(Arc::new(stores.rate_store()) as Arc<dyn mcp::policy::RateStore>)
        }
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let endpoint = mcp::http::endpoint(shop::server(rates))?
        .bearer_auth(shop::ShopTokens::new(&url), shop::resource(&url));
    eprintln!("serving MCP at {url}");
    endpoint
        .serve_with_shutdown(listener, "/mcp", async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
