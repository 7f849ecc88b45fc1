//! A server protected by OAuth bearer tokens (demo tokens `alice-token` and `bob-token`; DPoP-bound
//! demo tokens `dpop-alice.{jkt}` and `dpop-bob.{jkt}`). HTTP only: a stdio server is as trusted
//! as the process that started it.
//!
//! ```sh
//! cargo run --example protected -- --http 127.0.0.1:8000
//! curl -i -X POST http://127.0.0.1:8000/mcp          # 401, WWW-Authenticate names the metadata
//! curl http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp
//! ```
//!
//! `--tls CA.pem` serves `https://` instead, with a certificate for 127.0.0.1 and `localhost`
//! from a certificate authority made at start and written to `CA.pem` (give that file to the
//! client: `cargo run --example client -- https://127.0.0.1:8000/mcp --ca CA.pem`).
//! `--replay-redis redis://127.0.0.1:6379/` remembers the DPoP proofs it accepted in Redis, so
//! instances sharing that Redis refuse a proof any of them has seen (review W8); give them one
//! `--resource https://mcp.example.com/mcp`, the public URL they serve behind a load balancer
//! (what DPoP proofs and tokens name), instead of each its own listening address.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use mcp::redis::{RedisConfig, RedisStores};
use mcp_examples::protected;

const USAGE: &str =
    "usage: protected --http ADDR [--tls CA.pem] [--replay-redis URL] [--resource URL]";

struct Args {
    addr: SocketAddr,
    tls: Option<PathBuf>,
    replay_redis: Option<String>,
    resource: Option<String>,
}

fn args() -> Result<Args, String> {
    let (mut addr, mut tls, mut replay_redis, mut resource) = (None, None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--http" => {
                let text = value("--http")?;
                let parsed = text
                    .parse()
                    .map_err(|e| format!("--http {text}: not an IP address and port ({e})"))?;
                addr = Some(parsed);
            }
            "--tls" => tls = Some(PathBuf::from(value("--tls")?)),
            "--replay-redis" => replay_redis = Some(value("--replay-redis")?),
            "--resource" => resource = Some(value("--resource")?),
            "--stdio" => return Err("a protected server needs --http ADDR".into()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let addr = addr.ok_or("a protected server needs --http ADDR")?;
    Ok(Args {
        addr,
        tls,
        replay_redis,
        resource,
    })
}

/// A certificate authority made now (written to `ca_out`) and a certificate it signed for
/// 127.0.0.1 and `localhost`: the server's PEM chain and key.
fn certificate(ca_out: &std::path::Path) -> Result<(String, String), String> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let fail = |e: rcgen::Error| format!("making the demo certificate: {e}");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().map_err(fail)?;
    let ca = ca_params.self_signed(&ca_key).map_err(fail)?;
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).map_err(fail)?;
    params
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let key = KeyPair::generate().map_err(fail)?;
    let cert = params.signed_by(&key, &ca, &ca_key).map_err(fail)?;
    std::fs::write(ca_out, ca.pem()).map_err(|e| format!("{}: {e}", ca_out.display()))?;
    Ok((cert.pem(), key.serialize_pem()))
}

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let args = match args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    // The certificate authority's file exists before the port accepts connections.
    let tls = match &args.tls {
        Some(ca_out) => {
            let (chain, key) = certificate(ca_out)?;
            Some(mcp::http::server_config(chain.as_bytes(), key.as_bytes())?)
        }
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let scheme = if args.tls.is_some() { "https" } else { "http" };
    let url = match args.resource {
        Some(url) => url,
        None => format!("{scheme}://{}/mcp", listener.local_addr()?),
    };
    let mut endpoint = mcp::http::endpoint(protected::server())?
        .bearer_auth(protected::DemoTokens::new(&url), protected::resource(&url));
    if let Some(redis) = args.replay_redis {
        let stores = RedisStores::connect(RedisConfig::new(redis).prefix("protected"))
            .await
            .map_err(|e| format!("--replay-redis: {e}"))?;
        endpoint = endpoint.dpop_replay_store(Arc::new(stores.seen_store()));
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    eprintln!("serving MCP at {url}");
    match tls {
        Some(config) => {
            endpoint
                .serve_tls_with_shutdown(listener, "/mcp", config, shutdown)
                .await?;
        }
        None => {
            endpoint
                .serve_with_shutdown(listener, "/mcp", shutdown)
                .await?
        }
    }
    Ok(())
}
