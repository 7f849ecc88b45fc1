//! fleet: instances that share their request-state keys (and, with Redis, their tasks and
//! replay guard), so any instance finishes a round or a task another one started. Run three
//! behind nginx (`examples/fleet/nginx.conf`, `docs/scale-out.md`):
//!
//! ```sh
//! export MCP_STATE_KEYS="$(openssl rand -base64 32)"
//! export MCP_REDIS_URL=redis://127.0.0.1:6379/   # optional: tasks and replay guard shared
//! cargo run --example fleet -- --http 127.0.0.1:8001 &
//! cargo run --example fleet -- --http 127.0.0.1:8002 &
//! cargo run --example fleet -- --http 127.0.0.1:8003 &
//! ```
//!
//! To rotate, deploy `MCP_STATE_KEYS=OLD,NEW`, then `NEW,OLD`, then (after ten minutes) `NEW`,
//! each by a rolling restart: SIGTERM drains an instance (see `docs/scale-out.md`).
//! `MCP_DRAIN_GRACE_MS` sets the drain grace (default 5000); `MCP_INSTANCE=i1` names this
//! instance in the fleet (unique per instance; a random name otherwise). With
//! `MCP_REDIS_URL`, 2025-11-25 sessions live in Redis too: any instance serves any request.
//! `MCP_TRUSTED_PROXIES=127.0.0.1` (addresses or prefixes, comma-separated) names the proxy in
//! front (the fleet's nginx): the client it names in `X-Forwarded-For` is who per-client
//! limits count. Redis with TLS and an ACL user: `MCP_REDIS_URL=rediss://fleet:PASSWORD@host:6380/`,
//! and `MCP_REDIS_CA=/path/ca.pem` when its certificate is from a private CA.

use std::sync::Arc;
use std::time::Duration;

use mcp::redis::{RedisConfig, RedisStores};
use mcp::tasks::TaskStore;
use mcp_examples::cli::Listen;
use mcp_examples::fleet;

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let keys = std::env::var(fleet::KEYS_VAR).map_err(|_| {
        format!(
            "set {} to the fleet's shared secrets (comma-separated, sealing key first, 32 bytes or more each)",
            fleet::KEYS_VAR
        )
    })?;
    let mut security = fleet::security_from(&keys)?;
    let mut tasks: Option<Arc<dyn TaskStore>> = None;
    let mut shared = None;
    let mut events = None;
    let mut rates: Option<Arc<dyn mcp::policy::RateStore>> = None;
    // This instance's name in the fleet: it names the questions it asks legacy clients, so
    // that an answer reaching another instance finds its way back.
    let instance = match std::env::var("MCP_INSTANCE") {
        Ok(name) => name,
        Err(_) => format!(
            "i-{}",
            &mcp::seal::random_hex_id().map_err(|e| e.to_string())?[..8]
        ),
    };
    if let Ok(url) = std::env::var("MCP_REDIS_URL") {
        let prefix = std::env::var("MCP_REDIS_PREFIX").unwrap_or_else(|_| "fleet".into());
        // A replay-guard window of 5 s instead of 30 s: a round that nginx re-sends after
        // `cargo xtask fleet` kills an instance is taken over within its clients' 30 s
        // deadline, at the price of a double run if an instance stalls 5 s mid-round (see
        // "At least once, not exactly once" in docs/scale-out.md).
        let mut config = RedisConfig::new(url)
            .prefix(prefix)
            .liveness_ttl(Duration::from_secs(5))
            .takeover_wait(Duration::from_secs(6));
        if let Ok(path) = std::env::var("MCP_REDIS_CA") {
            let pem = std::fs::read(&path).map_err(|e| format!("MCP_REDIS_CA={path}: {e}"))?;
            config = config.tls_root_certificate(pem);
        }
        let stores = RedisStores::connect(config)
            .await
            .map_err(|e| format!("MCP_REDIS_URL: {e}"))?;
        security = security.replay_guard(stores.seen_store());
        tasks = Some(Arc::new(stores.task_store()));
        // `lookup`'s rate limit, one bucket per caller for the whole fleet.
        rates = Some(Arc::new(stores.rate_store()));
        // 2025-11-25 sessions in Redis, and the bus between instances: nginx needs no
        // stickiness, and a session outlives the instance that opened it.
        let fleet = stores.fleet(instance.clone());
        // The member name (instance and process) that the failures this process causes by
        // dying name: `cargo xtask fleet` reads it here to attribute them to their cause.
        eprintln!("fleet member {}", fleet.member());
        shared = Some(fleet);
        // Their SSE history too: a stream cut on one instance resumes on any other.
        events = Some(Arc::new(stores.event_store()));
    }
    let grace = match std::env::var("MCP_DRAIN_GRACE_MS") {
        Ok(ms) => Duration::from_millis(
            ms.parse()
                .map_err(|e| format!("MCP_DRAIN_GRACE_MS={ms}: {e}"))?,
        ),
        Err(_) => mcp::http::DEFAULT_DRAIN_GRACE,
    };
    let server = fleet::server(security, tasks, shared, rates);
    match Listen::from_env() {
        Listen::Stdio => mcp::stdio::serve(server).await,
        Listen::Http(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            eprintln!("serving MCP at http://{}/mcp", listener.local_addr()?);
            let mut endpoint = mcp::http::endpoint(server)?.drain_grace(grace);
            // Behind nginx every connection is nginx's: told to trust it, the instance counts
            // the client nginx names in X-Forwarded-For (per-client session and stream
            // shares, anonymous rate limits), not nginx as one client for everybody.
            if let Ok(list) = std::env::var("MCP_TRUSTED_PROXIES") {
                let proxies = list
                    .split(',')
                    .filter(|p| !p.trim().is_empty())
                    .map(str::parse)
                    .collect::<Result<Vec<mcp::http::ProxyRange>, _>>()
                    .map_err(|e| format!("MCP_TRUSTED_PROXIES={list}: {e}"))?;
                endpoint = endpoint.trusted_proxies(proxies);
            }
            if let Some(events) = events {
                endpoint = endpoint.event_store(events);
            }
            endpoint
                .serve_with_shutdown(listener, "/mcp", mcp::http::shutdown_signal())
                .await?;
            eprintln!("drained; exiting");
            Ok(())
        }
    }
}
