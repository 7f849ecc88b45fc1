//! What the proxy does wrong, and to which requests: a [`Fault`] under a [`Rule`] that picks
//! requests by HTTP method, JSON-RPC method and tool, for a number of times.

use std::time::Duration;

/// One way the network misbehaves for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Closes the connection without forwarding the request: it never reached the server.
    ResetBeforeForward,
    /// Forwards the request, reads the server's whole answer, then closes the client's
    /// connection without a byte of it: the server did the work, the client never hears.
    ResetAfterForward,
    /// Forwards the request and passes the response head and its first `events` SSE events
    /// (a JSON body: none of it), then closes the connection.
    DropMidStream {
        /// Complete SSE events passed on before the drop.
        events: usize,
    },
    /// Forwards the request and passes the response head and its first `events` SSE events,
    /// then sends nothing more and never closes (until the proxy stops).
    Stall {
        /// Complete SSE events passed on before the stall.
        events: usize,
    },
    /// Answers `404 Session not found` without forwarding (what a restarted server says to
    /// a session id it never issued).
    SessionNotFound,
    /// Answers this HTTP status without forwarding, with `Retry-After: seconds` when given
    /// (a gateway's `502`, an overloaded server's `503`).
    Status {
        /// The status code.
        code: u16,
        /// The `Retry-After` header's seconds.
        retry_after: Option<u64>,
    },
    /// Forwards the request and answers with the server's body cut to `bytes` (a complete
    /// HTTP message whose JSON is not).
    TruncateBody {
        /// How many bytes of the body are kept.
        bytes: usize,
    },
    /// Waits this long, then forwards normally.
    Delay(Duration),
}

/// Which requests a [`Fault`] applies to, and how many times.
#[derive(Debug, Clone)]
pub struct Rule {
    pub(crate) http_method: Option<String>,
    pub(crate) rpc_method: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) fault: Fault,
    pub(crate) times: usize,
}

impl Rule {
    /// `fault` for the next POST carrying JSON-RPC `method` (once; see [`times`](Self::times)).
    pub fn post(method: &str, fault: Fault) -> Rule {
        Rule {
            http_method: Some("POST".into()),
            rpc_method: Some(method.into()),
            tool: None,
            fault,
            times: 1,
        }
    }

    /// `fault` for the next `tools/call` of `tool`.
    pub fn tool(tool: &str, fault: Fault) -> Rule {
        Rule {
            tool: Some(tool.into()),
            ..Rule::post("tools/call", fault)
        }
    }

    /// `fault` for the next GET (a session's standalone stream, or a stream resumed with
    /// `Last-Event-ID`).
    pub fn get(fault: Fault) -> Rule {
        Rule {
            http_method: Some("GET".into()),
            rpc_method: None,
            tool: None,
            fault,
            times: 1,
        }
    }

    /// `fault` for the next request of any kind.
    pub fn any(fault: Fault) -> Rule {
        Rule {
            http_method: None,
            rpc_method: None,
            tool: None,
            fault,
            times: 1,
        }
    }

    /// Applies to this many matching requests instead of one (`usize::MAX`: every one).
    pub fn times(mut self, times: usize) -> Rule {
        self.times = times;
        self
    }

    pub(crate) fn matches(&self, seen: &Seen) -> bool {
        self.times > 0
            && self
                .http_method
                .as_deref()
                .is_none_or(|m| m == seen.http_method)
            && self
                .rpc_method
                .as_ref()
                .is_none_or(|m| seen.rpc_method.as_ref() == Some(m))
            && self
                .tool
                .as_ref()
                .is_none_or(|t| seen.tool.as_ref() == Some(t))
    }
}

/// A request the proxy saw, and what it did to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `POST`, `GET`, `DELETE`...
    pub http_method: String,
    /// The JSON-RPC method of a POSTed request or notification.
    pub rpc_method: Option<String>,
    /// The tool of a `tools/call`.
    pub tool: Option<String>,
    /// The `Mcp-Session-Id` it carried.
    pub session: Option<String>,
    /// The `Last-Event-ID` it carried.
    pub last_event_id: Option<String>,
    /// The fault applied, if any.
    pub fault: Option<Fault>,
}
