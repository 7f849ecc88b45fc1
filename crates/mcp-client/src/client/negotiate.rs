//! Choosing the era: `server/discover` and the stateless 2026-07-28 revision when the server
//! speaks it, else the 2025-11-25 `initialize` handshake.

use std::time::Duration;

use mcp_types::discover::DiscoverResult;
use mcp_types::error::ErrorCode;
use mcp_types::lifecycle::{InitializeRequestParams, InitializeResult};
use mcp_types::meta::Meta;
use mcp_types::methods;
use mcp_types::version::{Era, ProtocolVersion};
use mcp_types::{ClientNotification, JsonObject};

use crate::error::ClientError;

use super::*;

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
                        Err(ClientError::Server(e))
                            if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
                        {
                            let supported = e
                                .unsupported_protocol_version_data()
                                .map(|d| d.supported)
                                .unwrap_or_default();
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
                        // Any other answer, or none in time: not a modern server.
                        Err(
                            ClientError::Server(_)
                            | ClientError::Timeout { .. }
                            | ClientError::InvalidResponse(_),
                        ) => return self.initialize().await,
                        Err(other) => return Err(other),
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
