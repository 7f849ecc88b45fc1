//! Listening: the accept loop of every way of serving (plain TCP here, TLS in `tls.rs` through
//! [`Handshake`]), the connection cap, the readiness path, the drain at shutdown, and
//! [`shutdown_signal`].

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::body::McpBody;
use super::config::{HEADER_READ_TIMEOUT, SHUTDOWN_GRACE};
use super::endpoint::Endpoint;
use super::reply::plain;

/// One request's future as hyper holds it while the request is served.
type InFlight =
    std::pin::Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

/// How often a draining server looks whether its connections and tasks are done.
const DRAIN_POLL: Duration = Duration::from_millis(20);

const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(50);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The accept loop and the drain of every way of serving (plain TCP, TLS): the connection
/// cap before anything else (a TLS handshake included, review W7), the peer address in
/// each request, readiness, drain and closing sessions at shutdown.
pub(crate) async fn serve_accepted<H: Handshake>(
    endpoint: Arc<Endpoint>,
    listener: TcpListener,
    path: &str,
    shutdown: impl Future<Output = ()> + Send,
    handshake: H,
) -> std::io::Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let path: Arc<str> = Arc::from(path);
    let connections = Arc::new(Semaphore::new(endpoint.config.max_connections));
    let mut backoff = ACCEPT_BACKOFF_MIN;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    backoff = ACCEPT_BACKOFF_MIN;
                    crate::net::accepted(&accepted.0);
                    accepted
                }
                Err(e) => {
                    // Out of descriptors fails again at once: wait instead of spinning.
                    tracing::warn!(error = %e, retry_in = ?backoff, "accept failed");
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = &mut shutdown => break,
                    }
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tokio::spawn(H::refuse(stream));
            continue;
        };
        let served = endpoint.clone();
        let path = path.clone();
        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
            let endpoint = served.clone();
            let path = path.clone();
            // Boxed: hyper keeps room for one in-flight request future per connection for as
            // long as the connection lives, so an unboxed one (several KiB) would be held by
            // every idle keep-alive connection and every open SSE stream (issue #35).
            let served: InFlight = Box::pin(async move {
                let mut response = route_path(&endpoint, request, &path, peer.ip()).await;
                if endpoint.is_draining() {
                    // hyper closes the connection once this response is written.
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, Infallible>(response)
            });
            served
        });
        let watcher = graceful.watcher();
        let handshake = handshake.clone();
        let mut draining = endpoint.draining.subscribe();
        tokio::spawn(async move {
            // The connection's place is held through its handshake too; a handshake still
            // under way when the drain begins is abandoned rather than waited for.
            let io = tokio::select! {
                io = handshake.handshake(stream, peer) => io,
                _ = draining.wait_for(|d| *d) => None,
            };
            let Some(io) = io else {
                drop(permit);
                return;
            };
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(io), service);
            if let Err(e) = watcher.watch(connection).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drain(&endpoint, listener, &connections).await;
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests were still in flight after the shutdown grace period");
    }
    Ok(())
}

/// The drain once the accept loop stopped: the listener closes, and the endpoint waits, up to
/// its drain grace, for its open connections to close, the requests running here to end (a
/// 2025-11-25 call whose client cut its stream runs on, detached, and its result goes to the
/// SSE history for the client to resume) and the task bodies running here to end; then the
/// service shuts down and the legacy sessions close.
async fn drain(endpoint: &Endpoint, listener: TcpListener, connections: &Semaphore) {
    // Session GET streams end now: their clients reconnect, and are refused or routed to
    // another instance, instead of holding the drain for its whole grace.
    endpoint.draining.send_replace(true);
    drop(listener);
    let max = endpoint.config.max_connections;
    let open = || max - connections.available_permits();
    tracing::info!(
        connections = open(),
        grace = ?endpoint.config.drain_grace,
        "draining: no longer accepting connections"
    );
    // Done when no connection is open, no request and no task body runs here (neither can
    // move to another instance: a detached call waiting for the answer to its question would
    // leave the answer nobody to reach, issue #48); the grace bounds the wait.
    let deadline = tokio::time::Instant::now() + endpoint.config.drain_grace;
    loop {
        if open() == 0 && endpoint.requests_running() == 0 && endpoint.service.running_tasks() == 0
        {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::info!(
                connections = open(),
                requests = endpoint.requests_running(),
                tasks = endpoint.service.running_tasks(),
                "drain grace over: closing the remaining connections"
            );
            break;
        }
        tokio::time::sleep(DRAIN_POLL).await;
    }
    endpoint.service.shutdown();
    endpoint.sessions.close_all();
}

/// Serves one request of [`serve_with_shutdown`](crate::McpHttpService::serve_with_shutdown): the readiness
/// path, the endpoint (and its metadata), 404 elsewhere. The path is decided here, at once,
/// so the future returned holds the request once.
fn route_path<'a>(
    endpoint: &'a Endpoint,
    request: Request<hyper::body::Incoming>,
    path: &str,
    peer: std::net::IpAddr,
) -> impl Future<Output = Response<McpBody>> + Send + 'a {
    let requested = request.uri().path();
    let answered = if endpoint.config.readiness_path.as_deref() == Some(requested) {
        Some(
            if request.method() != Method::GET && request.method() != Method::HEAD {
                let mut refused = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
                refused
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
                refused
            } else if endpoint.is_draining() {
                plain(StatusCode::SERVICE_UNAVAILABLE, "draining")
            } else {
                plain(StatusCode::OK, "ready")
            },
        )
    } else {
        let served = requested == path
            || endpoint
                .config
                .protected
                .as_ref()
                .is_some_and(|p| requested == p.metadata_path());
        (!served).then(|| plain(StatusCode::NOT_FOUND, "Not Found"))
    };
    // The endpoint's own future, with no level around it: a level here would copy it once
    // more on every request.
    endpoint.handle_or(request, Some(peer), answered)
}

/// Resolves when the process is asked to stop: SIGTERM (what `kill`, systemd and container
/// runtimes send) or SIGINT (Ctrl-C). Pass it to
/// [`McpHttpService::serve_with_shutdown`](crate::McpHttpService::serve_with_shutdown) for a
/// drain on either.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
                    () = interrupt => tracing::info!("SIGINT: shutting down"),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    interrupt.await;
}

/// How an accepted connection becomes one HTTP is served on: as it is, or after a TLS
/// handshake.
pub(crate) trait Handshake: Clone + Send + Sync + 'static {
    /// The stream HTTP runs on.
    type Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static;

    /// The stream for `stream`, or `None` (logged) when the connection is to be dropped.
    fn handshake(
        &self,
        stream: tokio::net::TcpStream,
        peer: std::net::SocketAddr,
    ) -> impl Future<Output = Option<Self::Io>> + Send;

    /// What a connection past the cap gets before it is closed.
    fn refuse(stream: tokio::net::TcpStream) -> impl Future<Output = ()> + Send {
        refuse_connection(stream)
    }
}

/// Plain TCP: HTTP on the accepted stream itself.
#[derive(Clone, Copy)]
pub(crate) struct Plain;

impl Handshake for Plain {
    type Io = tokio::net::TcpStream;

    async fn handshake(
        &self,
        stream: tokio::net::TcpStream,
        _peer: std::net::SocketAddr,
    ) -> Option<Self::Io> {
        Some(stream)
    }
}

/// The answer of a connection beyond the cap: one 503, then close (bounded in time).
async fn refuse_connection(stream: tokio::net::TcpStream) {
    const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\ncontent-length: 20\r\nconnection: close\r\n\r\nToo many connections";
    let write = async {
        let mut rest = REFUSAL;
        while !rest.is_empty() {
            if stream.writable().await.is_err() {
                return;
            }
            match stream.try_write(rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}
