//! An upstream in another process: a [`Proxy`] says how to reach it (a child over stdio, a URL
//! over HTTP, or any client transport) and under which limits; a [`RemoteLink`] holds the one
//! [`Client`] the gateway keeps to it, connects lazily within a deadline, and after a lost
//! connection connects again, waiting 1 s, then 2 s... up to 30 s between failed attempts.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{Client, ClientBuilder, ClientError, Mode, Transport};
use mcp_types::BoxFuture;
use mcp_types::lifecycle::Implementation;
use mcp_types::version::Era;
use serde_json::value::RawValue;
use tokio::time::Instant;

#[cfg(feature = "http")]
use crate::error::ProxyError;
use crate::failure::UpstreamFailure;

/// The default wait for an upstream's answer to a call or a list page.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default wait for a connection (and its negotiation) to an upstream.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of requests in flight to one upstream at once.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// The default number of tools taken from one upstream.
pub const DEFAULT_MAX_TOOLS: usize = 10_000;
/// The default number of `tools/list` pages read from one upstream.
pub const DEFAULT_MAX_LIST_PAGES: usize = 100;
/// The first wait before connecting again to an upstream that could not be reached.
pub const RECONNECT_START: Duration = Duration::from_secs(1);
/// The longest wait before connecting again.
pub const RECONNECT_CAP: Duration = Duration::from_secs(30);
/// How long closing a lost connection may take.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

type Connect =
    Arc<dyn Fn(ClientBuilder) -> BoxFuture<'static, Result<Client, ClientError>> + Send + Sync>;

/// How to reach an upstream server that runs elsewhere, and the limits the gateway keeps with
/// it. Mount it with [`Gateway::mount`](crate::Gateway::mount).
#[derive(Clone)]
pub struct Proxy {
    connect: Connect,
    /// What it is, for a root mount's name in errors and logs (`HTTP {url}`, `stdio {program}`).
    pub(crate) described: String,
    pub(crate) call_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_in_flight: usize,
    pub(crate) max_tools: usize,
    pub(crate) max_list_pages: usize,
    max_message_size: Option<usize>,
    mode: Mode,
    #[cfg(feature = "stdio")]
    stdio: Option<StdioCommand>,
    #[cfg(feature = "http")]
    http: Option<HttpTarget>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the headers: they may hold credentials.
        f.debug_struct("Proxy")
            .field("upstream", &self.described)
            .field("call_timeout", &self.call_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "stdio")]
#[derive(Clone)]
struct StdioCommand {
    program: std::ffi::OsString,
    args: Vec<std::ffi::OsString>,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    cwd: Option<std::path::PathBuf>,
}

#[cfg(feature = "http")]
#[derive(Clone)]
struct HttpTarget {
    url: String,
    headers: Vec<(String, String)>,
    #[cfg(feature = "oauth")]
    oauth: Option<Arc<mcp_client::oauth::OAuth>>,
}

impl Proxy {
    fn with(connect: Connect, described: String) -> Proxy {
        Proxy {
            connect,
            described,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_tools: DEFAULT_MAX_TOOLS,
            max_list_pages: DEFAULT_MAX_LIST_PAGES,
            max_message_size: None,
            mode: Mode::Auto,
            #[cfg(feature = "stdio")]
            stdio: None,
            #[cfg(feature = "http")]
            http: None,
        }
    }

    /// An upstream reached through any client transport: `make` is called for each
    /// connection (the first, and each one after a lost connection).
    pub fn transport<T, F>(make: F) -> Proxy
    where
        T: Transport,
        F: Fn() -> Result<T, String> + Send + Sync + 'static,
    {
        let connect: Connect = Arc::new(move |builder: ClientBuilder| {
            let transport = make();
            Box::pin(async move {
                builder
                    .connect(transport.map_err(ClientError::Transport)?)
                    .await
            })
        });
        Proxy::with(connect, "a custom transport".into())
    }

    /// A server run as a child process spoken to over stdio: `program` with `args`. The child
    /// is spawned when the gateway first needs it and spawned again after it exits.
    #[cfg(feature = "stdio")]
    pub fn stdio<I, S>(program: impl Into<std::ffi::OsString>, args: I) -> Proxy
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString>,
    {
        let command = StdioCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
        };
        let described = format!("stdio {:?}", command.program);
        let mut proxy = Proxy::with(stdio_connect(command.clone(), None), described);
        proxy.stdio = Some(command);
        proxy
    }

    /// Sets an environment variable of the child (stdio upstreams; ignored otherwise).
    #[cfg(feature = "stdio")]
    pub fn env(
        mut self,
        key: impl Into<std::ffi::OsString>,
        value: impl Into<std::ffi::OsString>,
    ) -> Proxy {
        if let Some(command) = &mut self.stdio {
            command.env.push((key.into(), value.into()));
        }
        self.rebuild();
        self
    }

    /// Sets the child's working directory (stdio upstreams; ignored otherwise).
    #[cfg(feature = "stdio")]
    pub fn current_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Proxy {
        if let Some(command) = &mut self.stdio {
            command.cwd = Some(dir.into());
        }
        self.rebuild();
        self
    }

    /// A server behind a Streamable HTTP URL.
    #[cfg(feature = "http")]
    pub fn http(url: &str) -> Result<Proxy, ProxyError> {
        mcp_transport_http::HttpTransport::new(url).map_err(ProxyError)?;
        let target = HttpTarget {
            url: url.to_owned(),
            headers: Vec::new(),
            #[cfg(feature = "oauth")]
            oauth: None,
        };
        let mut proxy = Proxy::with(http_connect(target.clone(), None), format!("HTTP {url}"));
        proxy.http = Some(target);
        Ok(proxy)
    }

    /// Sends `Authorization: Bearer {token}` to the upstream (HTTP upstreams).
    #[cfg(feature = "http")]
    pub fn bearer(self, token: &str) -> Result<Proxy, ProxyError> {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// Sends this header with every request to the upstream (HTTP upstreams).
    #[cfg(feature = "http")]
    pub fn header(mut self, name: &str, value: &str) -> Result<Proxy, ProxyError> {
        let Some(target) = &mut self.http else {
            return Err(ProxyError(format!(
                "header {name:?} is for an HTTP upstream, and this one is {}",
                self.described
            )));
        };
        // Checked now, so that a connection later cannot fail on it.
        mcp_transport_http::HttpTransport::new(&target.url)
            .and_then(|t| t.header(name, value))
            .map_err(|e| ProxyError(format!("header {name:?}: {e}")))?;
        target.headers.push((name.to_owned(), value.to_owned()));
        self.rebuild();
        Ok(self)
    }

    /// Authorizes with OAuth when the upstream answers 401 (HTTP upstreams).
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: Arc<mcp_client::oauth::OAuth>) -> Proxy {
        if let Some(target) = &mut self.http {
            target.oauth = Some(oauth);
        }
        self.rebuild();
        self
    }

    /// How long a call (or a list page) may wait for the upstream's answer (default 60 s).
    pub fn call_timeout(mut self, timeout: Duration) -> Proxy {
        self.call_timeout = timeout;
        self
    }

    /// How long connecting to the upstream may take (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Proxy {
        self.connect_timeout = timeout;
        self
    }

    /// The largest message accepted from the upstream, in bytes (HTTP: a body or an SSE
    /// event; stdio: a line). The transports' own defaults otherwise (16 MiB, 4 MiB).
    pub fn max_message_size(mut self, bytes: usize) -> Proxy {
        self.max_message_size = Some(bytes);
        self.rebuild();
        self
    }

    /// How many requests may be in flight to the upstream at once (default 64); more wait,
    /// within their deadline.
    pub fn max_in_flight(mut self, max: usize) -> Proxy {
        self.max_in_flight = max.max(1);
        self
    }

    /// How many tools are taken from the upstream (default 10,000); the rest are left out,
    /// with a warning.
    pub fn max_tools(mut self, max: usize) -> Proxy {
        self.max_tools = max;
        self
    }

    /// How many `tools/list` pages are read from the upstream (default 100).
    pub fn max_list_pages(mut self, max: usize) -> Proxy {
        self.max_list_pages = max.max(1);
        self
    }

    /// How the era is chosen (default [`Mode::Auto`]: 2026-07-28 when the upstream speaks it).
    pub fn mode(mut self, mode: Mode) -> Proxy {
        self.mode = mode;
        self
    }

    /// Makes `connect` again from the described command or URL, after a setting changed.
    fn rebuild(&mut self) {
        #[cfg(feature = "stdio")]
        if let Some(command) = self.stdio.clone() {
            self.connect = stdio_connect(command, self.max_message_size);
        }
        #[cfg(feature = "http")]
        if let Some(target) = self.http.clone() {
            self.connect = http_connect(target, self.max_message_size);
        }
    }
}

/// Connects by spawning `command` (each connection a new child).
#[cfg(feature = "stdio")]
fn stdio_connect(command: StdioCommand, max_line: Option<usize>) -> Connect {
    Arc::new(move |builder: ClientBuilder| {
        let mut child = tokio::process::Command::new(&command.program);
        child.args(&command.args);
        child.envs(command.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &command.cwd {
            child.current_dir(dir);
        }
        let mut options = mcp_transport_stdio::StdioOptions::default();
        if let Some(bytes) = max_line {
            options = options.max_line(bytes);
        }
        let spawned = mcp_transport_stdio::StdioTransport::spawn_with(child, options)
            .map_err(|e| ClientError::Transport(format!("could not start the server: {e}")));
        Box::pin(async move { builder.connect(spawned?).await })
    })
}

/// Connects with a new HTTP transport to `target`.
#[cfg(feature = "http")]
fn http_connect(target: HttpTarget, max: Option<usize>) -> Connect {
    Arc::new(move |builder: ClientBuilder| {
        let transport = http_transport(&target, max).map_err(ClientError::Transport);
        Box::pin(async move { builder.connect(transport?).await })
    })
}

#[cfg(feature = "http")]
fn http_transport(
    target: &HttpTarget,
    max: Option<usize>,
) -> Result<mcp_transport_http::HttpTransport, String> {
    let mut transport = mcp_transport_http::HttpTransport::new(&target.url)?;
    for (name, value) in &target.headers {
        transport = transport.header(name, value)?;
    }
    if let Some(bytes) = max {
        transport = transport.max_message_size(bytes);
    }
    #[cfg(feature = "oauth")]
    if let Some(oauth) = &target.oauth {
        transport = transport.oauth(oauth.clone());
    }
    Ok(transport)
}

/// The gateway's connection to one remote upstream.
pub(crate) struct RemoteLink {
    proxy: Proxy,
    gateway: Implementation,
    conn: tokio::sync::Mutex<Conn>,
}

#[derive(Default)]
struct Conn {
    /// The client, and which connection it is (counted from 1).
    client: Option<(u64, Client)>,
    connections: u64,
    /// Why the last attempt failed, and when the next may be made.
    down: Option<Down>,
}

struct Down {
    why: String,
    retry_at: Instant,
    backoff: Duration,
}

impl RemoteLink {
    /// A link that connects to `proxy` as the client `gateway` when first used.
    pub(crate) fn new(proxy: Proxy, gateway: Implementation) -> RemoteLink {
        RemoteLink {
            proxy,
            gateway,
            conn: tokio::sync::Mutex::new(Conn::default()),
        }
    }

    /// Whether an attempt to connect may be made now (connected, or its wait over).
    pub(crate) fn may_try(&self) -> bool {
        match self.conn.try_lock() {
            Ok(conn) => conn
                .down
                .as_ref()
                .is_none_or(|d| Instant::now() >= d.retry_at),
            Err(_) => true,
        }
    }

    /// The client, connecting first when there is none (within the connect timeout).
    async fn client(&self) -> Result<(u64, Client), UpstreamFailure> {
        let wait = self.proxy.connect_timeout;
        // Whoever holds the lock connects within `wait`; waiting behind it is bounded too.
        let Ok(mut conn) = tokio::time::timeout(wait * 2, self.conn.lock()).await else {
            return Err(UpstreamFailure::Deadline(wait * 2));
        };
        if let Some((n, client)) = &conn.client {
            return Ok((*n, client.clone()));
        }
        if let Some(down) = &conn.down
            && Instant::now() < down.retry_at
        {
            return Err(UpstreamFailure::Unavailable(down.why.clone()));
        }
        let builder = Client::builder()
            .mode(self.proxy.mode.clone())
            .no_cache()
            .max_in_flight(self.proxy.max_in_flight)
            .request_timeout(self.proxy.call_timeout)
            .client_info(self.gateway.name.clone(), self.gateway.version.clone());
        let why = match tokio::time::timeout(wait, (self.proxy.connect)(builder)).await {
            Ok(Ok(client)) => {
                conn.connections += 1;
                let n = conn.connections;
                conn.client = Some((n, client.clone()));
                conn.down = None;
                return Ok((n, client));
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no connection within {} ms", wait.as_millis()),
        };
        let backoff = conn
            .down
            .as_ref()
            .map_or(RECONNECT_START, |d| (d.backoff * 2).min(RECONNECT_CAP));
        conn.down = Some(Down {
            why: why.clone(),
            retry_at: Instant::now() + backoff,
            backoff,
        });
        Err(UpstreamFailure::Unavailable(why))
    }

    /// Forgets connection `n` after it failed, so that the next request connects again.
    async fn lost(&self, n: u64) {
        let wait = self.proxy.connect_timeout * 2;
        // Whoever holds the lock is connecting (bounded); a new connection replaces this one.
        let Ok(mut conn) = tokio::time::timeout(wait, self.conn.lock()).await else {
            return;
        };
        if conn
            .client
            .as_ref()
            .is_some_and(|(current, _)| *current == n)
            && let Some((_, old)) = conn.client.take()
        {
            // Closed in the background, within a bound: a child process is ended, an HTTP
            // session deleted. Calls still holding it fail as the connection did.
            tokio::spawn(async move {
                let _ = tokio::time::timeout(CLOSE_WAIT, old.close()).await;
            });
        }
    }

    /// Sends `method` with the params `params(era, version)` builds for the negotiated era,
    /// and waits for the answer within the call timeout.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: impl FnOnce(Era, &str) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> Result<Box<RawValue>, UpstreamFailure> {
        let (n, client) = self.client().await?;
        let negotiated = client.negotiated();
        let (era, version) = negotiated
            .as_ref()
            .map_or((Era::Modern, ""), |n| (n.era, n.protocol_version.as_str()));
        let params = params(era, version)
            .map_err(|e| UpstreamFailure::Client(ClientError::InvalidRequest(e.to_string())))?;
        let timeout = self.proxy.call_timeout;
        // The client bounds the wait itself; this bounds everything around it.
        let outer = timeout + Duration::from_millis(250);
        let answer =
            tokio::time::timeout(outer, client.request(method, Some(params), Some(timeout)))
                .await
                .unwrap_or(Err(ClientError::Timeout {
                    method: method.to_owned(),
                    after: outer,
                }))
                .map_err(UpstreamFailure::Client);
        if let Err(failure) = &answer
            && failure.is_connection_lost()
        {
            self.lost(n).await;
        }
        answer
    }
}
