//! What a client is set up with and reports: the era mode, the defaults and limits, what it
//! negotiated, and the options of one call.

use std::time::Duration;

use mcp_types::capabilities::ServerCapabilities;
use mcp_types::lifecycle::Implementation;
use mcp_types::mrtr::InputResponses;
use mcp_types::version::Era;

/// How the client picks the protocol era.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Probe with `server/discover`; fall back to `initialize` on any non-modern answer.
    #[default]
    Auto,
    /// Always `initialize` (2025-11-25).
    Legacy,
    /// Speak this stateless version without probing.
    Pinned(String),
}

/// The first legacy round's wait for a state-only `input_required`, doubling to the cap.
pub const BACKOFF_START: Duration = Duration::from_millis(50);
/// The longest wait between state-only rounds.
pub const BACKOFF_CAP: Duration = Duration::from_millis(250);
/// How many retries of one call the automatic loop sends unless configured.
pub const DEFAULT_MAX_ROUNDS: u32 = 10;
/// How long a request waits for its answer, or for its next progress notification, unless
/// configured.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest a request waits in all, however often its progress resets the timeout,
/// unless configured.
pub const DEFAULT_MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(3600);
/// How many times a request that is safe to repeat is sent again after the connection failed
/// it (a lost session, a reset, a `502`/`503`, a stream that ended early).
pub const MAX_RESENDS: u32 = 3;
/// The wait before the first re-send, doubling up to [`RESEND_BACKOFF_CAP`] (a server's
/// `Retry-After` replaces it).
pub const RESEND_BACKOFF_START: Duration = Duration::from_millis(100);
/// The longest wait between re-sends the client picks itself.
pub const RESEND_BACKOFF_CAP: Duration = Duration::from_secs(2);
/// How many requests one client has on the wire at once unless configured; more wait their
/// turn, first come first served.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
/// The longest `Retry-After` the client waits for; a longer one fails the request.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long the `server/discover` probe waits before assuming a legacy server.
pub const DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// How many server-to-client requests (2025-11-25) are served at once unless configured.
pub const DEFAULT_MAX_SERVER_REQUESTS: usize = 16;
/// How many `inputRequests` one round may carry unless configured.
pub const DEFAULT_MAX_INPUT_REQUESTS: usize = 32;

/// What the client negotiated with the server.
#[derive(Debug, Clone)]
pub struct Negotiated {
    /// Modern or legacy.
    pub era: Era,
    /// The protocol version in use.
    pub protocol_version: String,
    /// The server's identity, when it told.
    pub server_info: Option<Implementation>,
    /// The server's capabilities, when it told.
    pub capabilities: Option<ServerCapabilities>,
    /// The server's instructions, when it gave some.
    pub instructions: Option<String>,
}

/// Options of one call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Answers to send with the first request (resuming a persisted flow).
    pub input_responses: Option<InputResponses>,
    /// The `requestState` to echo on the first request (resuming a persisted flow).
    pub request_state: Option<String>,
    /// Ask for `notifications/progress` (delivered to the client's progress handler).
    pub progress: bool,
    /// A timeout for this call's requests instead of the client's: how long each waits for
    /// its answer or its next progress notification.
    pub timeout: Option<Duration>,
    /// The longest each of this call's requests waits in all, progress or not, instead of
    /// the client's [`max_total_timeout`](crate::ClientBuilder::max_total_timeout).
    pub max_total_timeout: Option<Duration>,
    /// When the server makes this call a task (feature of
    /// [`ClientBuilder::tasks`](crate::ClientBuilder::tasks)), leave the task running if the
    /// call is dropped or gives up waiting, instead of sending `tasks/cancel`.
    pub leave_task_running: bool,
    /// When the server makes this call a task, the longest the call follows it, instead of
    /// the client's [`max_task_wait`](crate::ClientBuilder::max_task_wait) (the task's TTL
    /// still bounds it when shorter); past it the call fails with
    /// [`ClientError::TaskTimeout`](crate::ClientError::TaskTimeout).
    pub max_task_wait: Option<Duration>,
}

impl CallOptions {
    /// Resumes a flow: the first request carries these answers and this state.
    pub fn resume(input_responses: Option<InputResponses>, request_state: Option<String>) -> Self {
        CallOptions {
            input_responses,
            request_state,
            ..CallOptions::default()
        }
    }
}

/// How long [`TaskHandle::wait`](crate::TaskHandle::wait) (and so `call_tool`) follows a task by default, whatever TTL
/// the server names: a server that answers `working` forever cannot keep a caller waiting
/// forever.
pub const DEFAULT_MAX_TASK_WAIT: Duration = Duration::from_secs(3600);
