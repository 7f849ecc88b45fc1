//! Redis stores for a fleet of MCP server instances: [`RedisTaskStore`]
//! ([`TaskStore`](mcp_server_core::tasks::TaskStore)), [`RedisEventStore`]
//! ([`EventStore`](mcp_server_core::events::EventStore)), [`RedisSeenStore`]
//! ([`SeenStore`](mcp_state_seal::SeenStore), the replay guard), [`RedisRates`]
//! ([`RateStore`](mcp_server_core::policy::RateStore), rate limits shared by the fleet),
//! [`RedisSessionStore`] and [`RedisBus`] (a fleet's 2025-11-25 sessions and the messages
//! between its instances, [`mcp_server_core::fleet`]), all from one [`RedisStores`].
//!
//! Package `keel-mcp-store-redis` on crates.io: `cargo add keel-mcp-store-redis`,
//! then `use mcp_store_redis::…`.
//!
//! - **Keys** all start with the configured prefix (default `mcp`), and every key has a TTL:
//!   tasks their protocol TTL (capped by [`RedisConfig::max_task_retention`]), seen-state ids
//!   their state's expiry, SSE history the retention of its stream.
//! - **Across instances**: every change of a task is published on `{prefix}:task-changed`;
//!   each instance's [`TaskStore::watch`](mcp_server_core::tasks::TaskStore::watch) feed wakes
//!   on it, so a `tasks/update` or `tasks/cancel` that reached one instance wakes the worker
//!   running on another. A task whose worker died keeps its lapsed lease in
//!   `{prefix}:task-leases` until the sweep marks it `failed`: each instance's engine sweeps
//!   on a timer, and one instance of the fleet at a time does the work (the lock
//!   `{prefix}:task-sweep`, [`RedisConfig::task_sweep_interval`]). A running task costs one
//!   small script call per lease renewal (the lease is a field of its own), not a rewrite of
//!   its record.
//! - **Failures**: every command has a deadline ([`RedisConfig::command_timeout`], 2 s);
//!   a lost connection is retried by the connection manager a bounded number of times
//!   ([`RedisConfig::reconnect_attempts`]), and beyond that each operation fails with an
//!   error naming Redis, never hangs. The seen-store fails closed (a state is refused when
//!   Redis cannot answer).
//! - **Access**: a password or an ACL user in the URL (`redis://fleet:secret@host:6379/0`);
//!   `rediss://` for TLS with feature `tls` (the platform's certificate store, or a private CA
//!   named by [`RedisConfig::tls_root_certificate`]). Whoever can write to these keys is
//!   inside the fleet's trust boundary for what is not sealed: `docs/scale-out.md` says what
//!   each key holds.
//! - **Replay guard across a crash**: a used state is *claimed* by the instance processing it
//!   and *done* once that request answered. Each instance refreshes a liveness key
//!   (`{prefix}:alive:{id}`, [`RedisConfig::liveness_ttl`], 30 s); a state whose claimer was
//!   silent that long before it finished may be taken over once by another instance (a load
//!   balancer re-sending the request). So a state is processed at least once when an instance
//!   dies, and twice only if its first instance was silent for the whole liveness TTL while
//!   its request still ran (a stall of Redis or of the process that long); an instance whose
//!   heartbeat fails or lags claims nothing until it succeeds again. See [`RedisSeenStore`].
//!
//! Tasks and the replay guard of every instance of a fleet on one Redis:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_server_core::Server;
//! use mcp_server_core::tasks::TaskConfig;
//! use mcp_store_redis::{RedisConfig, RedisStores};
//!
//! let stores = RedisStores::connect(RedisConfig::new("redis://127.0.0.1:6379/0").prefix("bistro"))
//!     .await?;
//! let server = Server::new("bistro").tasks(TaskConfig::new().store(stores.task_store()));
//! // The sealing boundary's replay guard: `stores.seen_store()`; resumable SSE streams of
//! // 2025-11-25 sessions: `stores.event_store()`.
//! # drop(server);
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod events;
mod fleet;
mod rates;
mod seen;
mod tasks;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use events::RedisEventStore;
pub use fleet::{RedisBus, RedisSessionStore};
pub use rates::RedisRates;
pub use seen::RedisSeenStore;
pub use tasks::RedisTaskStore;

/// How long one Redis command may take unless configured.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a lost connection is retried before operations fail, unless configured.
pub const DEFAULT_RECONNECT_ATTEMPTS: usize = 3;
/// The longest a task is kept unless configured (a task without a TTL included).
pub const DEFAULT_MAX_TASK_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
/// How many tasks the fleet holds at once unless configured.
pub const DEFAULT_MAX_TASKS: usize = 100_000;
/// How many live tasks one owner holds across the fleet unless configured.
pub const DEFAULT_MAX_TASKS_PER_OWNER: usize = 1_000;
/// How often the fleet sweeps expired tasks and lapsed task leases unless configured.
pub const DEFAULT_TASK_SWEEP_INTERVAL: Duration = Duration::from_secs(1);
/// The most events kept per SSE stream unless configured.
pub const DEFAULT_MAX_EVENTS_PER_STREAM: usize = 1_000;
/// The most SSE streams kept per session unless configured; a new one evicts the session's
/// oldest ended stream (else its oldest stream).
pub const DEFAULT_MAX_STREAMS_PER_SESSION: usize = 100;
/// The largest SSE event kept unless configured (its JSON text); a larger one is not
/// recorded ([`EventStoreError::TooLarge`](mcp_server_core::events::EventStoreError::TooLarge)).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1024 * 1024;
/// How long an SSE stream's history is kept after its last event unless configured.
pub const DEFAULT_EVENT_RETENTION: Duration = Duration::from_secs(30 * 60);
/// How long an instance's liveness key outlives its last heartbeat unless configured: the
/// silence after which another instance may take over the states it claimed (review W12:
/// it was 1.5 s, which a Redis or scheduler hiccup could exceed while the owner still ran).
pub const DEFAULT_LIVENESS_TTL: Duration = Duration::from_secs(30);
/// How often an instance refreshes its liveness key unless configured.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);
/// How long a second use of a state claimed by another instance waits for that instance's
/// liveness to lapse unless configured (a little above the liveness TTL, so that a request a
/// load balancer re-sends after a crash is served once the dead instance's liveness lapsed).
pub const DEFAULT_TAKEOVER_WAIT: Duration = Duration::from_secs(35);

/// Where Redis is and how the stores use it.
#[derive(Clone)]
pub struct RedisConfig {
    url: String,
    prefix: String,
    command_timeout: Duration,
    reconnect_attempts: usize,
    max_task_retention: Duration,
    max_tasks: usize,
    max_tasks_per_owner: usize,
    task_sweep_interval: Duration,
    max_events_per_stream: usize,
    max_streams_per_session: usize,
    max_event_bytes: usize,
    event_retention: Duration,
    liveness_ttl: Duration,
    heartbeat_interval: Duration,
    takeover_wait: Duration,
    /// The CA `rediss://` trusts instead of the platform's store (PEM).
    root_certificate: Option<Vec<u8>>,
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may carry a password: only its scheme is shown.
        f.debug_struct("RedisConfig")
            .field("url", &self.url.split("://").next().unwrap_or("redis"))
            .field("prefix", &self.prefix)
            .field("command_timeout", &self.command_timeout)
            .finish_non_exhaustive()
    }
}

impl RedisConfig {
    /// The stores on the Redis at `url` (`redis://127.0.0.1:6379/0`), with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            prefix: "mcp".into(),
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            reconnect_attempts: DEFAULT_RECONNECT_ATTEMPTS,
            max_task_retention: DEFAULT_MAX_TASK_RETENTION,
            max_tasks: DEFAULT_MAX_TASKS,
            max_tasks_per_owner: DEFAULT_MAX_TASKS_PER_OWNER,
            task_sweep_interval: DEFAULT_TASK_SWEEP_INTERVAL,
            max_events_per_stream: DEFAULT_MAX_EVENTS_PER_STREAM,
            max_streams_per_session: DEFAULT_MAX_STREAMS_PER_SESSION,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            event_retention: DEFAULT_EVENT_RETENTION,
            liveness_ttl: DEFAULT_LIVENESS_TTL,
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            takeover_wait: DEFAULT_TAKEOVER_WAIT,
            root_certificate: None,
        }
    }

    /// Trusts the certificate authority in `pem` (instead of the platform's certificate store)
    /// for a `rediss://` URL: a Redis with a certificate from a private CA. Needs feature
    /// `tls`; [`RedisStores::connect`] says so without it.
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificate = Some(pem.into());
        self
    }

    /// The prefix of every key and channel (default `mcp`): one per fleet sharing a Redis.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The deadline of one command (default [`DEFAULT_COMMAND_TIMEOUT`]).
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// How often a lost connection is retried before operations fail (default
    /// [`DEFAULT_RECONNECT_ATTEMPTS`]).
    pub fn reconnect_attempts(mut self, attempts: usize) -> Self {
        self.reconnect_attempts = attempts;
        self
    }

    /// The longest a task is kept (default [`DEFAULT_MAX_TASK_RETENTION`]); a task's own TTL
    /// applies when it is shorter.
    pub fn max_task_retention(mut self, retention: Duration) -> Self {
        self.max_task_retention = retention;
        self
    }

    /// How many tasks the fleet holds (default [`DEFAULT_MAX_TASKS`]); one more is refused
    /// with `StoreError::Full`.
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks.max(1);
        self
    }

    /// How many live tasks one owner (an authenticated principal) holds across the fleet
    /// (default [`DEFAULT_MAX_TASKS_PER_OWNER`]): one more is refused with
    /// `StoreError::OwnerFull`, so one client cannot take the fleet's whole cap (review W9).
    /// Tasks count until they expire, finished or not; tasks without an owner count against
    /// [`max_tasks`](Self::max_tasks) only.
    pub fn max_tasks_per_owner(mut self, tasks: usize) -> Self {
        self.max_tasks_per_owner = tasks.max(1);
        self
    }

    /// How often the fleet sweeps (default [`DEFAULT_TASK_SWEEP_INTERVAL`], at least 10 ms):
    /// every instance's engine calls the sweep on its own timer
    /// ([`TaskConfig::sweep_interval`](mcp_server_core::tasks::TaskConfig::sweep_interval),
    /// keep the two equal), and the first to take the lock `{prefix}:task-sweep` (held for
    /// nine tenths of this, never given back) sweeps while the others skip. A task whose worker
    /// died ends `failed` about this long after its lease lapsed.
    pub fn task_sweep_interval(mut self, every: Duration) -> Self {
        self.task_sweep_interval = every.max(Duration::from_millis(10));
        self
    }

    /// The most events kept per SSE stream (default [`DEFAULT_MAX_EVENTS_PER_STREAM`]).
    pub fn max_events_per_stream(mut self, events: usize) -> Self {
        self.max_events_per_stream = events.max(1);
        self
    }

    /// The most SSE streams kept per session (default [`DEFAULT_MAX_STREAMS_PER_SESSION`], at
    /// least 1). A session's next stream evicts its oldest ended stream, else its oldest
    /// stream; resuming an evicted stream is `410 Gone`. Other sessions are never touched.
    pub fn max_streams_per_session(mut self, streams: usize) -> Self {
        self.max_streams_per_session = streams.max(1);
        self
    }

    /// The largest SSE event recorded, as JSON text (default [`DEFAULT_MAX_EVENT_BYTES`], at
    /// least 1 KiB); a larger one is refused with
    /// [`EventStoreError::TooLarge`](mcp_server_core::events::EventStoreError::TooLarge)
    /// (the HTTP transport then delivers it live only, and refuses to resume its stream).
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes.max(1024);
        self
    }

    /// How long an SSE stream's history is kept after its last event (default
    /// [`DEFAULT_EVENT_RETENTION`]).
    pub fn event_retention(mut self, retention: Duration) -> Self {
        self.event_retention = retention;
        self
    }

    /// How long an instance counts as alive after its last heartbeat (default
    /// [`DEFAULT_LIVENESS_TTL`], at least 100 ms). This is the at-least-once window of the
    /// replay guard: a state this instance claimed can be taken over by another instance (and
    /// run a second time) only once this has passed without a heartbeat while its request
    /// still ran, so it must exceed the heartbeat interval by a wide margin (a Redis or
    /// scheduler stall longer than the difference makes a live instance look dead). A request
    /// re-sent after a crash waits about this long for the takeover.
    pub fn liveness_ttl(mut self, ttl: Duration) -> Self {
        self.liveness_ttl = ttl.max(Duration::from_millis(100));
        self
    }

    /// How often the liveness key is refreshed (default [`DEFAULT_HEARTBEAT_INTERVAL`], at
    /// least 10 ms); each refresh must answer within this interval. While the latest refresh
    /// failed, or none succeeded for three intervals, this instance refuses every state.
    pub fn heartbeat_interval(mut self, every: Duration) -> Self {
        self.heartbeat_interval = every.max(Duration::from_millis(10));
        self
    }

    /// How long a second use of a state that another instance claimed and did not finish waits
    /// for that instance's liveness to lapse (default [`DEFAULT_TAKEOVER_WAIT`]); when the
    /// owner is still alive then, the state is refused as a replay. Set it a little above the
    /// liveness TTL (and below the load balancer's read timeout) to serve a request re-sent
    /// after a crash; below the liveness TTL, such a request is refused instead (at most once,
    /// and a replay holds its request for less time).
    pub fn takeover_wait(mut self, wait: Duration) -> Self {
        self.takeover_wait = wait;
        self
    }
}

/// The Redis client `config` names: TLS for `rediss://` (feature `tls`), with its own CA when
/// one is configured.
fn client(config: &RedisConfig) -> Result<redis::Client, RedisStoreError> {
    let url_error = |e: redis::RedisError| RedisStoreError(format!("Redis URL: {e}"));
    let tls = config.url.starts_with("rediss://") || config.root_certificate.is_some();
    if tls && !cfg!(feature = "tls") {
        return Err(RedisStoreError(
            "rediss:// and a TLS root certificate need feature `tls` of keel-mcp-store-redis \
             (keel-mcp: features `redis` and `tls`)"
                .into(),
        ));
    }
    #[cfg(feature = "tls")]
    if let Some(pem) = &config.root_certificate {
        if !config.url.starts_with("rediss://") {
            return Err(RedisStoreError(
                "a TLS root certificate is configured for a URL without TLS: use rediss://".into(),
            ));
        }
        let certificates = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem.clone()),
        };
        return redis::Client::build_with_tls(config.url.as_str(), certificates).map_err(url_error);
    }
    redis::Client::open(config.url.as_str()).map_err(url_error)
}

/// Why the stores could not start.
#[derive(Debug)]
pub struct RedisStoreError(String);

impl fmt::Display for RedisStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RedisStoreError {}

/// Wake-up feeds of readers waiting in this process, by (session, stream).
pub(crate) type Feeds =
    std::sync::Mutex<std::collections::HashMap<(String, String), tokio::sync::watch::Sender<u64>>>;

/// What every store of one [`RedisStores`] shares.
pub(crate) struct Shared {
    pub(crate) client: redis::Client,
    pub(crate) manager: ConnectionManager,
    pub(crate) config: RedisConfig,
    /// Readers of SSE history waiting in this process, for every event store of these stores.
    pub(crate) sse_feeds: Arc<Feeds>,
}

impl Shared {
    pub(crate) fn key(&self, parts: &[&str]) -> String {
        let mut key = self.config.prefix.clone();
        for part in parts {
            key.push(':');
            key.push_str(part);
        }
        key
    }

    /// Runs `cmd` under the command deadline; an error names Redis and what failed.
    pub(crate) async fn run<T: redis::FromRedisValue>(
        &self,
        what: &str,
        cmd: &redis::Cmd,
    ) -> Result<T, String> {
        self.run_within(what, cmd, self.config.command_timeout)
            .await
    }

    /// Runs `cmd` under the deadline `within`.
    pub(crate) async fn run_within<T: redis::FromRedisValue>(
        &self,
        what: &str,
        cmd: &redis::Cmd,
        within: Duration,
    ) -> Result<T, String> {
        let mut connection = self.manager.clone();
        match tokio::time::timeout(within, cmd.query_async(&mut connection)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(format!("Redis {what}: {e}")),
            Err(_) => Err(format!("Redis {what}: no answer within {within:?}")),
        }
    }

    /// Runs a script invocation under the command deadline.
    pub(crate) async fn script<T: redis::FromRedisValue>(
        &self,
        what: &str,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T, String> {
        let mut connection = self.manager.clone();
        match tokio::time::timeout(
            self.config.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await
        {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(format!("Redis {what}: {e}")),
            Err(_) => Err(format!(
                "Redis {what}: no answer within {:?}",
                self.config.command_timeout
            )),
        }
    }
}

/// A connection to the fleet's Redis and the stores on it.
#[derive(Clone)]
pub struct RedisStores {
    shared: Arc<Shared>,
}

impl fmt::Debug for RedisStores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStores")
            .field("config", &self.shared.config)
            .finish()
    }
}

impl RedisStores {
    /// Connects (within the command deadline) and checks that Redis answers `PING`.
    pub async fn connect(config: RedisConfig) -> Result<Self, RedisStoreError> {
        let client = client(&config)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.command_timeout))
            .set_response_timeout(Some(config.command_timeout))
            .set_number_of_retries(config.reconnect_attempts)
            .set_max_delay(Duration::from_millis(500));
        let manager = tokio::time::timeout(
            config.command_timeout * 2,
            client.get_connection_manager_with_config(manager_config),
        )
        .await
        .map_err(|_| {
            RedisStoreError(format!(
                "Redis did not accept a connection within {:?}",
                config.command_timeout * 2
            ))
        })?
        .map_err(|e| RedisStoreError(format!("cannot connect to Redis: {e}")))?;
        let shared = Arc::new(Shared {
            client,
            manager,
            config,
            sse_feeds: Arc::default(),
        });
        let pong: String = shared
            .run("PING", &redis::cmd("PING"))
            .await
            .map_err(RedisStoreError)?;
        if pong != "PONG" {
            return Err(RedisStoreError(format!(
                "Redis answered PING with {pong:?}"
            )));
        }
        Ok(RedisStores { shared })
    }

    /// The task store (one per process: it runs the change-feed subscriber).
    pub fn task_store(&self) -> RedisTaskStore {
        RedisTaskStore::new(self.shared.clone())
    }

    /// The SSE event history.
    pub fn event_store(&self) -> RedisEventStore {
        RedisEventStore::new(self.shared.clone())
    }

    /// Rate-limit buckets shared by every instance on this Redis, for
    /// [`RateLimit::shared_store`](mcp_server_core::policy::RateLimit::shared_store) or
    /// [`RateLimit::store`](mcp_server_core::policy::RateLimit::store).
    pub fn rate_store(&self) -> RedisRates {
        RedisRates::new(self.shared.clone())
    }

    /// The fleet's shared 2025-11-25 sessions, for
    /// [`Fleet::new`](mcp_server_core::fleet::Fleet::new).
    pub fn session_store(&self) -> RedisSessionStore {
        RedisSessionStore::new(self.shared.clone())
    }

    /// The fleet's bus (Redis pub/sub), for [`Fleet::new`](mcp_server_core::fleet::Fleet::new).
    pub fn bus(&self) -> RedisBus {
        RedisBus::new(self.shared.clone())
    }

    /// This instance's place in the fleet on this Redis: named `instance`, its sessions in
    /// [`RedisStores::session_store`], its bus [`RedisStores::bus`].
    pub fn fleet(&self, instance: impl Into<String>) -> mcp_server_core::fleet::Fleet {
        mcp_server_core::fleet::Fleet::new(instance, self.session_store(), self.bus())
    }

    /// The replay guard's seen-store: one per process (it is the instance whose liveness a
    /// claim records, and runs its heartbeat).
    pub fn seen_store(&self) -> RedisSeenStore {
        RedisSeenStore::new(self.shared.clone())
    }
}
