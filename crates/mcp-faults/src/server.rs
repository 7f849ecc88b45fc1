//! The server behind the proxy: [`TestServer`]'s tools count what they did in [`Counters`]
//! (shared by every instance), and [`Upstream`] serves it over HTTP and restarts it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_server_core::tasks::TaskSupport;
use mcp_server_core::{CacheHints, Service};
use mcp_transport_http::McpHttpService;
use mcp_types::JsonObject;
use mcp_types::tools::ToolAnnotations;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How long `hang` waits for its cancellation before giving up (a test never waits longer).
pub const HANG_LIMIT: Duration = Duration::from_secs(30);

/// What the tools did, by tool name, across every server instance.
#[derive(Debug, Default)]
pub struct Counters {
    executed: Mutex<HashMap<String, usize>>,
    cancelled: Mutex<HashMap<String, usize>>,
    /// Runs going on now, and the most at once, by tool.
    running: Mutex<HashMap<String, (usize, usize)>>,
    changed: Notify,
}

impl Counters {
    /// How many times `tool` ran (its side effect happened).
    pub fn executed(&self, tool: &str) -> usize {
        lock(&self.executed).get(tool).copied().unwrap_or(0)
    }

    /// How many times a running `tool` saw its request cancelled.
    pub fn cancelled(&self, tool: &str) -> usize {
        lock(&self.cancelled).get(tool).copied().unwrap_or(0)
    }

    /// The most runs of `tool` there were at once.
    pub fn max_running(&self, tool: &str) -> usize {
        lock(&self.running).get(tool).map_or(0, |r| r.1)
    }

    /// Waits until `tool` saw `count` cancellations, or `within` passed; whether it did.
    pub async fn wait_cancelled(&self, tool: &str, count: usize, within: Duration) -> bool {
        self.wait_for(|| self.cancelled(tool) >= count, within)
            .await
    }

    /// Waits until `tool` has run `count` times (its side effect happened: the call is in the
    /// server's hands), or `within` passed; whether it did. What a test waits for before it
    /// interrupts a call, rather than a guess of how long the call takes to arrive.
    pub async fn wait_executed(&self, tool: &str, count: usize, within: Duration) -> bool {
        self.wait_for(|| self.executed(tool) >= count, within).await
    }

    async fn wait_for(&self, done: impl Fn() -> bool, within: Duration) -> bool {
        let waiting = async {
            loop {
                let changed = self.changed.notified();
                if done() {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(within, waiting).await.is_ok()
    }

    fn ran(&self, tool: &str) -> usize {
        let mut executed = lock(&self.executed);
        let count = executed.entry(tool.to_owned()).or_default();
        *count += 1;
        let count = *count;
        drop(executed);
        self.changed.notify_waiters();
        count
    }

    /// Counts a run of `tool` as going on until the returned guard drops.
    fn start(self: &Arc<Self>, tool: &'static str) -> Running {
        let mut running = lock(&self.running);
        let (now, most) = running.entry(tool.to_owned()).or_default();
        *now += 1;
        *most = (*most).max(*now);
        Running {
            counters: self.clone(),
            tool,
        }
    }

    fn saw_cancel(&self, tool: &str) {
        *lock(&self.cancelled).entry(tool.to_owned()).or_default() += 1;
        self.changed.notify_waiters();
    }
}

/// A run of a tool going on.
struct Running {
    counters: Arc<Counters>,
    tool: &'static str,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some((now, _)) = lock(&self.counters.running).get_mut(self.tool) {
            *now -= 1;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A server whose tools count their runs:
///
/// | tool | annotations | does |
/// | --- | --- | --- |
/// | `charge` | none (side effects) | counts a charge at once; then `steps` progress reports `step_ms` apart |
/// | `lookup` | `readOnlyHint` | counts, then the same progress as `charge`; answers `value of {key}` |
/// | `set` | `idempotentHint` | counts; answers `set {key}` |
/// | `hang` | `readOnlyHint` | waits for its cancellation (at most [`HANG_LIMIT`]) and counts it |
/// | `hang_task` | `readOnlyHint`, a task when the client declares the extension | the same, as a task |
///
/// `charge` answers `charged #{n}`, `n` its count so far.
#[derive(Clone, Default)]
pub struct TestServer {
    counters: Arc<Counters>,
    cache: Option<CacheHints>,
}

impl TestServer {
    /// A server with fresh counters.
    pub fn new() -> TestServer {
        TestServer::default()
    }

    /// Puts these caching hints (`ttlMs`, `cacheScope`) on its 2026-07-28 lists and reads
    /// (default `ttlMs: 0`, private).
    pub fn cache_hints(mut self, hints: CacheHints) -> TestServer {
        self.cache = Some(hints);
        self
    }

    /// The counters every instance of this server shares.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// A new instance (no sessions, no state but the counters).
    pub fn service(&self) -> Service {
        let counters = self.counters.clone();
        let charge = ToolDef::new("charge")
            .description("Charges a card: never to be repeated.")
            .handler(move |ctx, args: JsonObject| {
                let counters = counters.clone();
                async move {
                    let n = counters.ran("charge");
                    steps(&ctx, &args).await;
                    format!("charged #{n}")
                }
            });
        let counters = self.counters.clone();
        let lookup = ToolDef::new("lookup")
            .description("Reads a value.")
            .annotations(ToolAnnotations {
                read_only_hint: Some(true),
                ..ToolAnnotations::default()
            })
            .handler(move |ctx, args: JsonObject| {
                let counters = counters.clone();
                async move {
                    counters.ran("lookup");
                    let _running = counters.start("lookup");
                    steps(&ctx, &args).await;
                    let key = args.get("key").and_then(|k| k.as_str()).unwrap_or("");
                    format!("value of {key}")
                }
            });
        let counters = self.counters.clone();
        let set = ToolDef::new("set")
            .description("Sets a value: the same call twice changes nothing more.")
            .annotations(ToolAnnotations {
                idempotent_hint: Some(true),
                read_only_hint: Some(false),
                ..ToolAnnotations::default()
            })
            .handler(move |_ctx, args: JsonObject| {
                let counters = counters.clone();
                async move {
                    counters.ran("set");
                    let key = args.get("key").and_then(|k| k.as_str()).unwrap_or("");
                    format!("set {key}")
                }
            });
        let hang = hang_tool("hang", &self.counters);
        McpServer::new("Faults")
            .tool(charge)
            .tool(lookup)
            .tool(set)
            .tool(hang)
            .tool(hang_tool("hang_task", &self.counters).task(TaskSupport::Optional))
            .build()
            .expect("the test server builds")
            .cache_hints(self.cache.unwrap_or_default())
            .into_service()
    }
}

/// A tool that waits for its cancellation, counting its runs and the cancellations it saw.
fn hang_tool(name: &'static str, counters: &Arc<Counters>) -> ToolDef {
    let counters = counters.clone();
    ToolDef::new(name)
        .description("Waits until cancelled.")
        .annotations(ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        })
        .handler(move |ctx, _args: JsonObject| {
            let counters = counters.clone();
            async move {
                counters.ran(name);
                // The server may stop a cancelled handler by dropping it, or let it see its
                // token: either counts once.
                let mut unfinished = Unfinished {
                    counters: counters.clone(),
                    name,
                };
                let cancelled =
                    tokio::time::timeout(HANG_LIMIT, ctx.cancellation().cancelled()).await;
                if cancelled.is_err() {
                    unfinished.name = "";
                }
                "never cancelled".to_owned()
            }
        })
}

/// Counts a cancellation of tool `name` when dropped (an empty name: the tool ended on its own).
struct Unfinished {
    counters: Arc<Counters>,
    name: &'static str,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.name.is_empty() {
            self.counters.saw_cancel(self.name);
        }
    }
}

/// `steps` progress reports, `step_ms` apart (both from the arguments; none by default).
async fn steps(ctx: &mcp_server_core::RequestContext, args: &JsonObject) {
    let count = args.get("steps").and_then(|s| s.as_u64()).unwrap_or(0);
    let pause = args.get("step_ms").and_then(|s| s.as_u64()).unwrap_or(0);
    for step in 1..=count {
        tokio::time::sleep(Duration::from_millis(pause)).await;
        #[allow(clippy::cast_precision_loss)]
        ctx.progress(step as f64, Some(count as f64), None).await;
    }
}

/// A [`TestServer`] served over HTTP on a loopback port, restartable.
pub struct Upstream {
    server: TestServer,
    addr: Arc<Mutex<SocketAddr>>,
    running: Mutex<Option<Instance>>,
}

struct Instance {
    stop: tokio::sync::oneshot::Sender<()>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Upstream {
    /// Serves an instance of `server`.
    pub async fn start(server: TestServer) -> Upstream {
        let (addr, instance) = serve(&server).await;
        Upstream {
            server,
            addr: Arc::new(Mutex::new(addr)),
            running: Mutex::new(Some(instance)),
        }
    }

    /// Where the current instance listens (updated by [`restart`](Self::restart)).
    pub fn addr_slot(&self) -> Arc<Mutex<SocketAddr>> {
        self.addr.clone()
    }

    /// Stops the current instance (its open streams end within 100 ms) and starts a new one,
    /// which knows none of the old sessions.
    pub async fn restart(&self) {
        self.restart_then(|| {}).await;
    }

    /// Starts a new instance and points the proxy at it, runs `before_stop`, then stops the
    /// old one. The new instance is listening before anything the old one served is cut, so
    /// a request sent again after the cut always meets the new instance: how many times a
    /// client sends it does not depend on how long the old instance takes to stop.
    pub async fn restart_then(&self, before_stop: impl FnOnce()) {
        let (addr, instance) = serve(&self.server).await;
        *lock(&self.addr) = addr;
        let old = lock(&self.running).replace(instance);
        before_stop();
        if let Some(old) = old {
            let _ = old.stop.send(());
            let _ = tokio::time::timeout(Duration::from_secs(5), old.done).await;
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(instance) = lock(&self.running).take() {
            let _ = instance.stop.send(());
            instance.done.abort();
        }
    }
}

async fn serve(server: &TestServer) -> (SocketAddr, Instance) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("the server binds a loopback port");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let endpoint = McpHttpService::new(server.service()).drain_grace(Duration::from_millis(100));
    let done = tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", async {
        let _ = stopped.await;
    }));
    (addr, Instance { stop, done })
}
