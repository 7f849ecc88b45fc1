//! What an upstream's failure becomes for the caller: a result the model reads (`isError`,
//! naming the upstream) when the upstream could not be reached or misbehaved, or the
//! upstream's own JSON-RPC error, passed on, when it refused the call.

use mcp_client::ClientError;
use mcp_types::ErrorObject;
use mcp_types::tools::CallToolResult;

use crate::namespace::Namespace;

/// Why a call to an upstream did not produce its answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum UpstreamFailure {
    /// The client failed (transport, timeout, an answer that is not MCP...) or the upstream
    /// answered with a JSON-RPC error ([`ClientError::Server`]).
    Client(ClientError),
    /// The upstream could not be connected to (now, or at its last attempt).
    Unavailable(String),
    /// The upstream did not answer within the gateway's deadline.
    Deadline(std::time::Duration),
    /// The upstream answered something the gateway does not pass on in this version.
    NotPassedThrough(String),
}

impl UpstreamFailure {
    /// Whether the upstream's connection should be dropped and opened again before its next
    /// call: the transport failed, or the upstream could not be reached at all.
    pub(crate) fn is_connection_lost(&self) -> bool {
        matches!(
            self,
            UpstreamFailure::Unavailable(_)
                | UpstreamFailure::Client(ClientError::Transport(_))
                | UpstreamFailure::Client(ClientError::Interrupted { .. })
        )
    }

    /// The answer for the caller: an upstream's JSON-RPC error passes through (its
    /// `Unknown tool: x` naming the qualified tool); everything else is a tool error result
    /// naming the upstream.
    pub(crate) fn answer(&self, ns: &Namespace) -> Result<CallToolResult, ErrorObject> {
        let upstream = ns.label();
        let text = match self {
            UpstreamFailure::Client(ClientError::Server(e)) => {
                let mut e = e.clone();
                e.message = ns.rewrite_message(&e.message);
                return Err(e);
            }
            UpstreamFailure::Client(ClientError::Timeout { after, .. }) => format!(
                "upstream '{upstream}' did not answer within {} ms",
                after.as_millis()
            ),
            UpstreamFailure::Client(ClientError::TotalTimeout { after, .. }) => format!(
                "upstream '{upstream}' did not finish within {} ms",
                after.as_millis()
            ),
            UpstreamFailure::Deadline(after) => format!(
                "upstream '{upstream}' did not answer within {} ms",
                after.as_millis()
            ),
            UpstreamFailure::Client(ClientError::Interrupted {
                may_have_run, why, ..
            }) => {
                let ran = if *may_have_run {
                    "it may have run"
                } else {
                    "it did not run"
                };
                format!("upstream '{upstream}' lost the call ({ran}): {why}")
            }
            UpstreamFailure::Client(ClientError::Transport(why)) => {
                format!("upstream '{upstream}' failed: {why}")
            }
            UpstreamFailure::Client(ClientError::InvalidResponse(why)) => {
                format!("upstream '{upstream}' answered something that is not MCP: {why}")
            }
            UpstreamFailure::Client(ClientError::UnrecognizedResultType(kind)) => {
                format!("upstream '{upstream}' answered an unknown resultType {kind:?}")
            }
            UpstreamFailure::Client(other) => format!("upstream '{upstream}' failed: {other}"),
            UpstreamFailure::Unavailable(why) => {
                format!("upstream '{upstream}' is unavailable: {why}")
            }
            UpstreamFailure::NotPassedThrough(what) => {
                format!("upstream '{upstream}' {what}, which this gateway does not pass through")
            }
        };
        Ok(CallToolResult::error(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::error::ErrorCode;
    use std::time::Duration;

    fn text_of(failure: UpstreamFailure) -> String {
        let ns = Namespace::new("a", '_').unwrap();
        let result = failure.answer(&ns).unwrap();
        assert_eq!(result.is_error, Some(true));
        result.content[0].as_text().unwrap().to_owned()
    }

    #[test]
    fn each_client_failure_is_a_tool_error_naming_the_upstream() {
        let cases = [
            (
                UpstreamFailure::Client(ClientError::Transport("connection refused".into())),
                "upstream 'a' failed: connection refused",
            ),
            (
                UpstreamFailure::Client(ClientError::Timeout {
                    method: "tools/call".into(),
                    after: Duration::from_millis(300),
                }),
                "upstream 'a' did not answer within 300 ms",
            ),
            (
                UpstreamFailure::Client(ClientError::TotalTimeout {
                    method: "tools/call".into(),
                    after: Duration::from_secs(2),
                }),
                "upstream 'a' did not finish within 2000 ms",
            ),
            (
                UpstreamFailure::Client(ClientError::Interrupted {
                    method: "tools/call".into(),
                    may_have_run: true,
                    why: "reset".into(),
                }),
                "upstream 'a' lost the call (it may have run): reset",
            ),
            (
                UpstreamFailure::Client(ClientError::InvalidResponse("eof".into())),
                "upstream 'a' answered something that is not MCP: eof",
            ),
            (
                UpstreamFailure::Client(ClientError::UnrecognizedResultType("odd".into())),
                "upstream 'a' answered an unknown resultType \"odd\"",
            ),
            (
                UpstreamFailure::Unavailable("connection refused".into()),
                "upstream 'a' is unavailable: connection refused",
            ),
            (
                UpstreamFailure::Deadline(Duration::from_millis(250)),
                "upstream 'a' did not answer within 250 ms",
            ),
            (
                UpstreamFailure::NotPassedThrough("asked for input (inputRequests)".into()),
                "upstream 'a' asked for input (inputRequests), which this gateway does not pass through",
            ),
        ];
        for (failure, expected) in cases {
            assert_eq!(text_of(failure), expected);
        }
    }

    #[test]
    fn an_upstream_error_passes_through_with_its_tool_name_qualified() {
        let ns = Namespace::new("a", '_').unwrap();
        let e = UpstreamFailure::Client(ClientError::Server(ErrorObject::invalid_params(
            "Unknown tool: zz",
        )))
        .answer(&ns)
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(e.message, "Unknown tool: a_zz");
        let other = UpstreamFailure::Client(ClientError::Server(ErrorObject::new(
            ErrorCode(-32001),
            "quota",
        )))
        .answer(&ns)
        .unwrap_err();
        assert_eq!(
            (other.code, other.message.as_str()),
            (ErrorCode(-32001), "quota")
        );
    }

    #[test]
    fn only_transport_failures_drop_the_connection() {
        assert!(UpstreamFailure::Unavailable("x".into()).is_connection_lost());
        assert!(UpstreamFailure::Client(ClientError::Transport("x".into())).is_connection_lost());
        assert!(!UpstreamFailure::Deadline(Duration::from_secs(1)).is_connection_lost());
        assert!(
            !UpstreamFailure::Client(ClientError::Server(ErrorObject::internal("x")))
                .is_connection_lost()
        );
    }
}
