//! The command line of every example server: `--stdio` (the default) or `--http ADDR`.

use std::net::SocketAddr;

use mcp::IntoService;

/// Where an example server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// On stdin/stdout: the way desktop clients start a server.
    Stdio,
    /// Streamable HTTP at `http://ADDR/mcp`.
    Http(SocketAddr),
}

impl Listen {
    /// Parses `--stdio` or `--http ADDR` (also `--http=ADDR`); no argument means stdio.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut listen = Listen::Stdio;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let addr = match arg.as_str() {
                "--stdio" => {
                    listen = Listen::Stdio;
                    continue;
                }
                "--http" => args
                    .next()
                    .ok_or("--http needs an address, for example --http 127.0.0.1:8000")?,
                other => match other.strip_prefix("--http=") {
                    Some(addr) => addr.to_owned(),
                    None => return Err(format!("unknown argument `{other}`")),
                },
            };
            let addr = addr
                .parse()
                .map_err(|e| format!("--http {addr}: not an IP address and port ({e})"))?;
            listen = Listen::Http(addr);
        }
        Ok(listen)
    }

    /// Reads the process's own arguments; prints usage and exits on a mistake.
    pub fn from_env() -> Self {
        match Self::parse(std::env::args().skip(1)) {
            Ok(listen) => listen,
            Err(message) => {
                let program = std::env::args().next().unwrap_or_else(|| "server".into());
                eprintln!("{message}\nusage: {program} [--stdio | --http ADDR]");
                std::process::exit(2);
            }
        }
    }
}

/// Serves `server` where the command line says, until stdin closes (stdio) or, over HTTP,
/// SIGTERM or Ctrl-C (then it drains: see `McpHttpService::serve_with_shutdown`).
pub async fn run(server: impl IntoService) -> Result<(), mcp::ServeError> {
    let otel = observe();
    let served = serve(server).await;
    if let Some(otel) = otel {
        otel.shutdown().await;
    }
    served
}

/// OpenTelemetry when the standard variables name an OTLP endpoint
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`; `OTEL_SERVICE_NAME`, else the program's name): the
/// request spans and metrics go there (`docs/observability.md`).
pub fn observe() -> Option<mcp::otel::Otel> {
    let program = std::env::args()
        .next()
        .and_then(|p| {
            std::path::Path::new(&p)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "mcp-example".into());
    match mcp::otel::Otel::from_env(&program) {
        Ok(Some(otel)) => match otel.set_global_subscriber() {
            Ok(()) => Some(otel),
            Err(e) => {
                eprintln!("OpenTelemetry is off: {e}");
                None
            }
        },
        Ok(None) => None,
        Err(e) => {
            eprintln!("OpenTelemetry is off: {e}");
            None
        }
    }
}

async fn serve(server: impl IntoService) -> Result<(), mcp::ServeError> {
    match Listen::from_env() {
        Listen::Stdio => mcp::stdio::serve(server).await,
        Listen::Http(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            eprintln!("serving MCP at http://{}/mcp", listener.local_addr()?);
            mcp::http::endpoint(server)?
                .serve_with_shutdown(listener, "/mcp", mcp::http::shutdown_signal())
                .await?;
            Ok(())
        }
    }
}

/// Serves `server` over Streamable HTTP on a free loopback port, in this process, and returns
/// its URL. The demo and the client examples use it when no server URL is given.
pub async fn serve_in_background(server: impl IntoService) -> Result<String, mcp::ServeError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let endpoint = mcp::http::endpoint(server)?;
    tokio::spawn(async move {
        if let Err(e) = endpoint
            .serve_with_shutdown(listener, "/mcp", std::future::pending())
            .await
        {
            eprintln!("the example server stopped: {e}");
        }
    });
    Ok(url)
}

/// The text blocks of a tool result, one per line.
pub fn text(result: &mcp::types::tools::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Listen, String> {
        Listen::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_both_transports() {
        assert_eq!(parse(&[]), Ok(Listen::Stdio));
        assert_eq!(parse(&["--stdio"]), Ok(Listen::Stdio));
        assert_eq!(
            parse(&["--http", "127.0.0.1:8000"]),
            Ok(Listen::Http("127.0.0.1:8000".parse().unwrap()))
        );
        assert_eq!(
            parse(&["--http=[::1]:9"]),
            Ok(Listen::Http("[::1]:9".parse().unwrap()))
        );
        assert_eq!(
            parse(&["--http"]),
            Err("--http needs an address, for example --http 127.0.0.1:8000".into())
        );
        assert_eq!(parse(&["--port"]), Err("unknown argument `--port`".into()));
        assert!(
            parse(&["--http", "localhost"])
                .unwrap_err()
                .starts_with("--http localhost: not an IP address and port")
        );
    }
}
