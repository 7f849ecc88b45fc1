//! What one transport shares with the tasks of its requests: its [`State`] (session, version,
//! requests in flight, tool annotations, failures), its [`Limits`], and the [`Link`] every
//! request is sent with.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::Uri;
use hyper::header::HeaderMap;
use mcp_client::LocalFailure;
use mcp_types::{JsonRpcMessage, RequestId};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::net::HttpClient;
use crate::oauth::Auth;
use mcp_types::param_header::ParamHeader;

pub(super) struct State {
    pub(super) session_id: Mutex<Option<String>>,
    pub(super) legacy_version: Mutex<Option<String>>,
    pub(super) in_flight: Mutex<HashMap<RequestId, AbortHandle>>,
    pub(super) tool_headers: Mutex<HashMap<String, Vec<ParamHeader>>>,
    pub(super) error: Mutex<Option<String>>,
    /// Requests answered with an error made up here (never reached the server, or its reply
    /// was not MCP), and why: the newest [`MAX_FAILURES`], for callers that ask.
    pub(super) failures: Mutex<VecDeque<(RequestId, LocalFailure)>>,
    /// The standalone GET stream of a 2025-11-25 session (server-initiated messages).
    pub(super) listener: Mutex<Option<AbortHandle>>,
    pub(super) limits: Limits,
    /// The `initialize` this transport sent, replayed to start a new session when the server
    /// lost the old one (404 on its `Mcp-Session-Id`).
    pub(super) initialize: Mutex<Option<Bytes>>,
    /// One session recovery at a time.
    pub(super) recovering: tokio::sync::Mutex<()>,
}

impl State {
    pub(super) fn new(limits: Limits) -> Self {
        State {
            session_id: Mutex::new(None),
            legacy_version: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            tool_headers: Mutex::new(HashMap::new()),
            error: Mutex::new(None),
            failures: Mutex::new(VecDeque::new()),
            listener: Mutex::new(None),
            limits,
            initialize: Mutex::new(None),
            recovering: tokio::sync::Mutex::new(()),
        }
    }

    /// Remembers why a request failed here; the oldest reason goes when the list is full (its
    /// caller has long stopped waiting).
    pub(super) fn record_failure(&self, id: &RequestId, failure: LocalFailure) {
        if let Ok(mut failures) = self.failures.lock() {
            if failures.len() >= MAX_FAILURES {
                failures.pop_front();
            }
            failures.push_back((id.clone(), failure));
        }
    }
}

/// How many locally made-up failures are kept for [`Transport::local_failure`].
pub(super) const MAX_FAILURES: usize = 256;

/// The default of [`HttpTransport::max_message_size`](crate::HttpTransport::max_message_size): 16 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// The default of [`HttpTransport::max_retry_delay`](crate::HttpTransport::max_retry_delay): one minute.
pub const DEFAULT_MAX_RETRY: Duration = Duration::from_secs(60);
/// How many messages from the server (answers, notifications, its requests) wait for the
/// client's reader at most. When it is behind, the response bodies and SSE streams they come
/// from wait (TCP pushes back on the server) instead of the queue growing with whatever a
/// server sends.
pub const INCOMING_QUEUE: usize = 256;
/// The shortest reconnection delay honoured, whatever `retry:` says.
pub const MIN_RETRY: Duration = Duration::from_millis(100);

/// What a transport accepts from a server.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// The largest JSON response body or SSE event.
    pub(super) max_message: usize,
    /// The longest reconnection delay a `retry:` field may ask for.
    pub(super) max_retry: Duration,
}

impl Limits {
    /// The delay `retry: {ms}` asks for, within [`MIN_RETRY`] and the maximum.
    pub(super) fn retry_delay(&self, ms: u64) -> Duration {
        Duration::from_millis(ms).clamp(MIN_RETRY, self.max_retry.max(MIN_RETRY))
    }
}

/// Removes a request's abort handle when its task ends, whichever way it ends.
pub(super) struct InFlightGuard {
    pub(super) state: Arc<State>,
    pub(super) id: Option<RequestId>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if let Some(id) = &self.id
            && let Ok(mut f) = self.state.in_flight.lock()
        {
            f.remove(id);
        }
    }
}

/// What every request of a transport is sent with; each request's task holds a clone.
#[derive(Clone)]
pub(super) struct Link {
    pub(super) url: Uri,
    pub(super) client: HttpClient,
    /// Headers added to every request (`HttpTransport::header`).
    pub(super) extra_headers: HeaderMap,
    /// Authorization on 401/403 (feature `oauth`).
    pub(super) auth: Auth,
    pub(super) state: Arc<State>,
    /// The client's reader: answers and server messages go here.
    pub(super) tx: mpsc::Sender<JsonRpcMessage>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_is_clamped() {
        let limits = Limits {
            max_message: DEFAULT_MAX_MESSAGE,
            max_retry: DEFAULT_MAX_RETRY,
        };
        assert_eq!(limits.retry_delay(u64::MAX), DEFAULT_MAX_RETRY);
        assert_eq!(limits.retry_delay(0), MIN_RETRY);
        assert_eq!(limits.retry_delay(1500), Duration::from_millis(1500));
    }
}
