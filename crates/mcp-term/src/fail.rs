//! How the `mcp-term` binary fails: an exit code, a kind and a message for each failure.

use mcp::client::ClientError;
use mcp::types::ErrorCode;

use mcp_term::code;

/// A failure with its exit code; printed as one JSON line on stderr.
pub(crate) struct Fail {
    pub(crate) code: i32,
    pub(crate) kind: &'static str,
    pub(crate) message: String,
}

pub(crate) fn fail(code: i32, kind: &'static str, message: impl Into<String>) -> Fail {
    Fail {
        code,
        kind,
        message: message.into(),
    }
}

pub(crate) fn usage(message: impl Into<String>) -> Fail {
    fail(code::USAGE, "usage", message)
}

pub(crate) fn client_fail(e: ClientError) -> Fail {
    match &e {
        ClientError::Transport(why) if why.contains("invalid peer certificate") => {
            let hint = if why.contains("UnknownIssuer") {
                "the server's certificate was refused: no trusted CA signed it (if a private CA did, trust that CA with --ca FILE)"
            } else {
                "the server's certificate was refused"
            };
            fail(code::TRANSPORT, "tls", format!("{e}; {hint}"))
        }
        ClientError::Transport(why) if is_auth_failure(why) => {
            fail(code::AUTH, "auth", e.to_string())
        }
        ClientError::Transport(_) => fail(code::TRANSPORT, "transport", e.to_string()),
        ClientError::Timeout { .. } | ClientError::TotalTimeout { .. } => {
            fail(code::TRANSPORT, "timeout", e.to_string())
        }
        // Whether a call the connection failed may have run: a script retries only `not_run`.
        ClientError::Interrupted {
            may_have_run: true, ..
        } => fail(code::TRANSPORT, "interrupted", e.to_string()),
        ClientError::Interrupted {
            may_have_run: false,
            ..
        } => fail(code::TRANSPORT, "not_run", e.to_string()),
        ClientError::TaskTimeout { task_id, after } => fail(
            code::TRANSPORT,
            "timeout",
            format!(
                "task '{task_id}' had not ended after {} s, so it was cancelled (--task-wait, or the task's TTL when shorter)",
                after.as_secs()
            ),
        ),
        ClientError::RoundsExceeded { .. } => fail(code::MAX_ROUNDS, "max_rounds", e.to_string()),
        ClientError::Server(obj) if obj.code == ErrorCode::LEGACY_RESOURCE_NOT_FOUND => {
            fail(code::NOT_FOUND, "not_found", e.to_string())
        }
        ClientError::Server(obj) if obj.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            fail(
                code::PROTOCOL,
                "missing_capability",
                format!(
                    "{e}; the server needs {} (see --elicit-modes, --sampling, --root)",
                    obj.data.as_ref().map(|d| d.to_string()).unwrap_or_default()
                ),
            )
        }
        _ => fail(code::PROTOCOL, "protocol", e.to_string()),
    }
}

/// Whether a transport failure is an authorization failure: a 401, or one of the OAuth
/// client's own failures (its messages: discovery, registration, the authorization response,
/// the token request, a scope never granted).
fn is_auth_failure(why: &str) -> bool {
    const OAUTH: [&str; 5] = [
        "client registration failed",
        "the token request failed",
        "the protected resource metadata is for",
        "the server still requires scope",
        "the authorization response",
    ];
    why.contains("401")
        || why.to_ascii_lowercase().contains("authoriz")
        || OAUTH.iter().any(|m| why.contains(m))
}
