//! The engine's per-session limits: what one connection (a stdio process, a legacy HTTP session)
//! may make the server hold. Each limit has a default and one refusal, named on its field.

/// How much one session may make the server keep.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionLimits {
    /// The most `resources/subscribe` URIs one legacy session holds (default 1,000). One more
    /// is refused with `-32602 "A session holds at most N resource subscriptions"`.
    pub max_subscriptions: usize,
    /// The longest URI `resources/subscribe` accepts, in bytes (default 2,048; `-32602` beyond).
    pub max_subscription_uri: usize,
    /// The largest `initialize` params kept for a session's life, in bytes of JSON (default
    /// 16 KiB): `clientInfo` and `capabilities` are stored, so a larger `initialize` is refused
    /// with `-32602 "initialize params exceed N bytes"` and no session is opened. The same cap
    /// applies to every request's `_meta`, which is kept while the request runs (a task's for
    /// the task's life): `-32602 "_meta exceeds N bytes; …"`.
    pub max_initialize_params: usize,
    /// How many unsolicited notifications (list changes, resource updates) wait for a
    /// session's reader (default 256). When the reader does not keep up, newer ones are dropped
    /// and a warning is logged: a client that stopped reading cannot grow the server's memory.
    pub unsolicited_queue: usize,
    /// The most requests one session runs at once (default 256). Transports stop reading when
    /// it is reached (stdio) or answer 503 (HTTP); the engine itself never queues beyond it.
    pub max_in_flight: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_subscriptions: 1_000,
            max_subscription_uri: 2_048,
            max_initialize_params: 16 * 1024,
            unsolicited_queue: 256,
            max_in_flight: 256,
        }
    }
}
