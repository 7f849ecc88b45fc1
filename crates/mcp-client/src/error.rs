//! Everything a client call can fail with, one variant per cause.

use std::fmt;
use std::time::Duration;

use mcp_types::ErrorObject;

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// The transport failed or the connection is gone.
    Transport(String),
    /// The server did not answer in time, nor report progress, within the request timeout
    /// ([`ClientBuilder::request_timeout`](crate::ClientBuilder::request_timeout) or
    /// [`CallOptions::timeout`](crate::CallOptions::timeout)); the request was cancelled.
    Timeout {
        /// The method.
        method: String,
        /// How long the client waited since the request, or its last progress notification.
        after: Duration,
    },
    /// The request kept reporting progress but had not been answered when its maximum total
    /// time ran out ([`ClientBuilder::max_total_timeout`](crate::ClientBuilder::max_total_timeout)
    /// or [`CallOptions::max_total_timeout`](crate::CallOptions::max_total_timeout)); the
    /// request was cancelled.
    TotalTimeout {
        /// The method.
        method: String,
        /// The maximum total time.
        after: Duration,
    },
    /// The connection failed the request and the client did not send it again, because it
    /// is not known to be safe to repeat (only lists, `resources/read`, `prompts/get` and
    /// `tools/call` of a tool annotated `readOnlyHint` or `idempotentHint` are). A request
    /// safe to repeat whose re-sends ran out fails with [`ClientError::Transport`] instead.
    Interrupted {
        /// The method.
        method: String,
        /// Whether the server may have run it: `false` when it certainly did not (the server
        /// lost the session before reading it, or refused it with `503`), so sending it again
        /// is up to the caller.
        may_have_run: bool,
        /// What failed.
        why: String,
    },
    /// A task had not ended when the client stopped following it (its TTL or
    /// [`ClientBuilder::max_task_wait`](crate::ClientBuilder::max_task_wait), whichever is
    /// shorter); the client cancelled it.
    TaskTimeout {
        /// The task's id.
        task_id: String,
        /// How long the client followed it.
        after: Duration,
    },
    /// The server answered with a JSON-RPC error.
    Server(ErrorObject),
    /// The server's answer is not what the method returns.
    InvalidResponse(String),
    /// The call cannot be sent as asked (tool arguments that are not a JSON object...);
    /// nothing was sent.
    InvalidRequest(String),
    /// The result has a `resultType` this client does not know (the spec calls it invalid).
    UnrecognizedResultType(String),
    /// The server kept answering `input_required` past the round cap.
    RoundsExceeded {
        /// The cap.
        max_rounds: u32,
    },
    /// The server asked for something this client has no callback for; nothing was retried.
    MissingCallback {
        /// `elicitation`, `sampling` or `roots`.
        capability: &'static str,
        /// The `inputRequests` key (2026-07-28) or request id (2025-11-25).
        key: String,
    },
    /// The server asked for something this client never declared the capability for (URL
    /// elicitation when only form mode was declared...); no callback ran, nothing was retried.
    UndeclaredCapability {
        /// `elicitation (form mode)`, `elicitation (URL mode)`, `sampling`, `sampling with tools`
        /// or `roots`.
        capability: &'static str,
        /// The `inputRequests` key.
        key: String,
    },
    /// One round asked more questions than the client answers at once
    /// ([`ClientBuilder::max_input_requests`](crate::ClientBuilder::max_input_requests)); no
    /// callback ran, nothing was retried.
    TooManyInputRequests {
        /// How many the server asked.
        count: usize,
        /// The cap.
        max: usize,
    },
    /// The server asked with a method that is not an input request; nothing was retried.
    UnsupportedInputRequest {
        /// The method.
        method: String,
        /// The `inputRequests` key.
        key: String,
    },
    /// A callback refused to answer; nothing was retried.
    Callback(ErrorObject),
    /// The server serves no protocol version this client speaks.
    NoCommonVersion {
        /// The versions the server named.
        supported: Vec<String>,
    },
    /// The call was cancelled.
    Cancelled,
    /// A skill file the server sent does not match its skill's entry (size, digest, or for a
    /// `SKILL.md` its frontmatter), or is not one of the files the entry lists; the content
    /// was not used.
    SkillVerification {
        /// The file's URI.
        uri: String,
        /// What did not match.
        reason: String,
    },
    /// What `read_app` read is not an MCP App (`ui://`, `text/html;profile=mcp-app`).
    NotAnApp {
        /// The URI read.
        uri: String,
        /// Why it is not one.
        reason: String,
    },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Transport(why) => write!(f, "transport error: {why}"),
            ClientError::Timeout { method, after } => {
                write!(
                    f,
                    "the server did not answer '{method}' within {} ms",
                    after.as_millis()
                )
            }
            ClientError::TotalTimeout { method, after } => write!(
                f,
                "the server had not answered '{method}' when its maximum total time of {} ms ran out (progress resets only the request timeout)",
                after.as_millis()
            ),
            ClientError::Interrupted {
                method,
                may_have_run: true,
                why,
            } => write!(
                f,
                "'{method}' was interrupted: {why}; it may or may not have run on the server"
            ),
            ClientError::Interrupted {
                method,
                may_have_run: false,
                why,
            } => write!(f, "'{method}' did not run: {why}"),
            ClientError::TaskTimeout { task_id, after } => write!(
                f,
                "task '{task_id}' had not ended after {} ms of following it, so it was cancelled (the task's TTL or the client's task wait, whichever is shorter)",
                after.as_millis()
            ),
            ClientError::Server(e) => write!(
                f,
                "the server answered with error {}: {}",
                e.code.0, e.message
            ),
            ClientError::InvalidResponse(why) => write!(f, "invalid response: {why}"),
            ClientError::InvalidRequest(why) => write!(f, "invalid request: {why}"),
            ClientError::UnrecognizedResultType(t) => {
                write!(
                    f,
                    "the server answered with resultType '{t}', which this client does not know"
                )
            }
            ClientError::RoundsExceeded { max_rounds } => write!(
                f,
                "the server returned InputRequiredResult for more than {max_rounds} rounds; raise max_rounds on the Client, or drive the loop yourself with client.session()"
            ),
            ClientError::MissingCallback { capability, key } => write!(
                f,
                "the server asked for {capability} (input request '{key}') but this client has no {capability} callback"
            ),
            ClientError::UndeclaredCapability { capability, key } => write!(
                f,
                "the server asked for {capability} (input request '{key}'), a capability this client did not declare"
            ),
            ClientError::TooManyInputRequests { count, max } => write!(
                f,
                "the server asked {count} questions in one round; this client answers at most {max} (ClientBuilder::max_input_requests)"
            ),
            ClientError::UnsupportedInputRequest { method, key } => {
                write!(
                    f,
                    "the server asked for '{method}' (input request '{key}'), which is not an input request method"
                )
            }
            ClientError::Callback(e) => write!(f, "a callback refused: {}", e.message),
            ClientError::NoCommonVersion { supported } => {
                write!(
                    f,
                    "the server serves none of this client's protocol versions (it named {supported:?})"
                )
            }
            ClientError::Cancelled => f.write_str("the call was cancelled"),
            ClientError::SkillVerification { uri, reason } => {
                write!(f, "skill file {uri} refused: {reason}")
            }
            ClientError::NotAnApp { uri, reason } => {
                write!(f, "{uri} is not an MCP App: {reason}")
            }
        }
    }
}

impl std::error::Error for ClientError {}
