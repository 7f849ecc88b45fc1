//! Choosing the era: `server/discover` and the stateless 2026-07-28 revision when the server
//! speaks it, else the 2025-11-25 `initialize` handshake.

use mcp_types::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
use std::time::Duration;

use mcp_types::discover::DiscoverResult;
use mcp_types::error::ErrorCode;
use mcp_types::lifecycle::{InitializeRequestParams, InitializeResult};
use mcp_types::meta::Meta;
use mcp_types::methods;
use mcp_types::version::{Era, ProtocolVersion};
use mcp_types::{ClientNotification, JsonObject};

use crate::error::ClientError;

use crate::{Client, Mode, Negotiated};

impl Client {
    pub(crate) async fn negotiate(
        &self,
        mode: Mode,
        discover_timeout: Duration,
    ) -> Result<(), ClientError> {
        match mode {
            Mode::Legacy => self.initialize().await,
            Mode::Pinned(version) => {
                self.set(Negotiated {
                    era: Era::Modern,
                    protocol_version: version,
                    server_info: None,
                    capabilities: None,
                    instructions: None,
                });
                Ok(())
            }
            Mode::Auto => {
                let mut version = ProtocolVersion::LATEST_MODERN.as_str().to_owned();
                for attempt in 0..2 {
                    let mut meta = Meta::request(&version, self.inner.capabilities.clone());
                    meta.client_info = Some(self.inner.info.clone());
                    let params = mcp_types::common::RequestParams {
                        meta: Some(meta),
                        extra: JsonObject::new(),
                    };
                    let probe: Result<DiscoverResult, ClientError> = self
                        .typed(methods::SERVER_DISCOVER, &params, Some(discover_timeout))
                        .await;
                    match probe {
                        Ok(discover) => {
                            let mutual = MODERN_VERSIONS
                                .iter()
                                .rev()
                                .find(|v| discover.supported_versions.iter().any(|s| s == *v));
                            let Some(mutual) = mutual else {
                                return self.initialize().await;
                            };
                            self.set(Negotiated {
                                era: Era::Modern,
                                protocol_version: (*mutual).to_owned(),
                                server_info: discover
                                    .meta
                                    .as_ref()
                                    .and_then(|m| m.server_info.as_deref().cloned()),
                                capabilities: Some(discover.capabilities),
                                instructions: discover.instructions,
                            });
                            return Ok(());
                        }
                        Err(error) => match after_probe(&error) {
                            Probe::Unsupported(supported) => {
                                match MODERN_VERSIONS
                                    .iter()
                                    .rev()
                                    .find(|v| supported.iter().any(|s| s == *v))
                                {
                                    Some(v) if attempt == 0 => version = (*v).to_owned(),
                                    _ if supported.iter().any(|s| {
                                        ProtocolVersion::parse(s)
                                            .is_some_and(ProtocolVersion::is_modern)
                                    }) || supported
                                        .iter()
                                        .all(|s| !LEGACY_VERSIONS.contains(&s.as_str()))
                                        && !supported.is_empty() =>
                                    {
                                        return Err(ClientError::NoCommonVersion { supported });
                                    }
                                    _ => return self.initialize().await,
                                }
                            }
                            Probe::Legacy => {
                                return match self.initialize().await {
                                    // The fallback never reached a server either: the probe's
                                    // transport failure is the one to report (nothing
                                    // listens, a name that does not resolve).
                                    Err(ClientError::Interrupted {
                                        may_have_run: false,
                                        ..
                                    }) if matches!(error, ClientError::Transport(_)) => Err(error),
                                    other => other,
                                };
                            }
                            Probe::Refused => return Err(error),
                        },
                    }
                }
                self.initialize().await
            }
        }
    }

    pub(crate) async fn initialize(&self) -> Result<(), ClientError> {
        let params = InitializeRequestParams {
            protocol_version: ProtocolVersion::LATEST_LEGACY.as_str().to_owned(),
            capabilities: self.inner.capabilities.clone(),
            client_info: (*self.inner.info).clone(),
            meta: None,
            extra: JsonObject::new(),
        };
        let result: InitializeResult = self.typed(methods::INITIALIZE, &params, None).await?;
        if !LEGACY_VERSIONS.contains(&result.protocol_version.as_str()) {
            return Err(ClientError::InvalidResponse(format!(
                "Unsupported protocol version from the server: {}",
                result.protocol_version
            )));
        }
        self.set(Negotiated {
            era: Era::Legacy,
            protocol_version: result.protocol_version,
            server_info: Some(result.server_info),
            capabilities: Some(result.capabilities),
            instructions: result.instructions,
        });
        self.notify(ClientNotification::Initialized(None)).await
    }

    pub(crate) fn set(&self, negotiated: Negotiated) {
        if let Ok(mut n) = self.inner.negotiated.lock() {
            *n = Some(negotiated);
        }
    }
}

/// What a `server/discover` probe that failed says of the server.
#[derive(Debug, PartialEq)]
enum Probe {
    /// `-32022`: a 2026-07-28 server that serves other versions, these.
    Unsupported(Vec<String>),
    /// A server of the legacy era: `initialize`.
    Legacy,
    /// A 2026-07-28 server refused the probe itself, or the probe never reached a server:
    /// the error is the caller's.
    Refused,
}

/// The negotiation table: what each way a probe can fail means, by the revision's
/// backward-compatibility rules (a recognised 2026-07-28 error means a modern server, which is
/// never answered with `initialize`; any other answer, or none, means a legacy one; the
/// fallback is keyed to no single code). How each answer reaches here:
///
/// | the server answered | on stdio | on HTTP | verdict |
/// | --- | --- | --- | --- |
/// | `-32022` with `data.supported` | `Server` | `Server` (400) | [`Probe::Unsupported`] |
/// | `-32020`, `-32021` | `Server` | `Server` (400) | [`Probe::Refused`] |
/// | any other JSON-RPC error (`-32601`, `-32602`, `-32600`, `-32000`…), with our id or, on a 4xx, any other (`null`, `"server-error"`) | `Server` | `Server` | [`Probe::Legacy`] |
/// | nothing in time | `Timeout` | `Timeout` | [`Probe::Legacy`] |
/// | a result that is not a `DiscoverResult` | `InvalidResponse` | `InvalidResponse` | [`Probe::Legacy`] |
/// | 400, 404, 405 (a 2024-11-05 SSE-only endpoint), any status with no body, or one that is not JSON-RPC | | `Transport` | [`Probe::Legacy`] |
/// | a connection that broke or was refused, `429`, `503` | | `Interrupted` | [`Probe::Refused`] |
///
/// A `Transport` failure that is not an HTTP answer (a TLS refusal, an answer over the size
/// limit) fails `initialize` the same way, and that is the error the caller gets; when the
/// probe gave up reaching the server at all (nothing listens: `Transport` after its re-sends)
/// and `initialize` does not reach it either, the caller gets the probe's error.
fn after_probe(error: &ClientError) -> Probe {
    match error {
        ClientError::Server(e) if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
            Probe::Unsupported(
                e.unsupported_protocol_version_data()
                    .map(|d| d.supported)
                    .unwrap_or_default(),
            )
        }
        ClientError::Server(e)
            if e.code == ErrorCode::HEADER_MISMATCH
                || e.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY =>
        {
            Probe::Refused
        }
        ClientError::Server(_)
        | ClientError::Timeout { .. }
        | ClientError::InvalidResponse(_)
        | ClientError::Transport(_) => Probe::Legacy,
        _ => Probe::Refused,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_types::ErrorObject;
    use serde_json::json;

    use super::*;

    fn server(code: i64, message: &str) -> ClientError {
        ClientError::Server(ErrorObject::new(ErrorCode(code), message))
    }

    #[test]
    fn every_kind_of_answer_to_the_probe_has_one_verdict() {
        let unsupported = ClientError::Server(
            ErrorObject::new(ErrorCode(-32022), "Unsupported protocol version")
                .with_data(json!({"supported": ["2026-07-28"], "requested": "2027-01-01"})),
        );
        let rows: Vec<(ClientError, Probe)> = vec![
            (
                unsupported,
                Probe::Unsupported(vec!["2026-07-28".to_owned()]),
            ),
            (server(-32022, "no data"), Probe::Unsupported(vec![])),
            (server(-32020, "header mismatch"), Probe::Refused),
            (server(-32021, "missing capability"), Probe::Refused),
            // TypeScript SDK v1, stateful: 400, id null.
            (
                server(-32000, "Bad Request: No valid session ID provided"),
                Probe::Legacy,
            ),
            // Python SDK 1.x, stateful: 400, id "server-error".
            (
                server(-32600, "Bad Request: Missing session ID"),
                Probe::Legacy,
            ),
            (server(-32601, "Method not found"), Probe::Legacy),
            (server(-32602, "Invalid params"), Probe::Legacy),
            (
                ClientError::Timeout {
                    method: "server/discover".into(),
                    after: Duration::from_secs(10),
                },
                Probe::Legacy,
            ),
            (
                ClientError::InvalidResponse("'server/discover' result: missing field".into()),
                Probe::Legacy,
            ),
            (
                ClientError::Transport("HTTP 405 Method Not Allowed".into()),
                Probe::Legacy,
            ),
            (
                ClientError::Transport("HTTP 400 Bad Request: <html>".into()),
                Probe::Legacy,
            ),
            (
                ClientError::Interrupted {
                    method: "server/discover".into(),
                    may_have_run: false,
                    why: "HTTP request failed: connection refused".into(),
                },
                Probe::Refused,
            ),
            (ClientError::Cancelled, Probe::Refused),
        ];
        for (error, verdict) in rows {
            assert_eq!(after_probe(&error), verdict, "{error}");
        }
    }
}
