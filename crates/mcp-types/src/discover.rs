//! `server/discover` (2026-07-28): versions, capabilities and instructions, without a handshake.

use crate::prelude::*;

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::capabilities::ServerCapabilities;
use crate::common::CacheScope;
use crate::meta::Meta;
use crate::mrtr::ResultType;

/// The result of `server/discover`. The server's identity is in `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiscoverResult {
    /// The versions the server serves.
    #[serde(rename = "supportedVersions")]
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Hints for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Freshness in milliseconds.
    #[serde(rename = "ttlMs", default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope.
    #[serde(
        rename = "cacheScope",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_scope: Option<CacheScope>,
    /// `resultType`.
    #[serde(
        rename = "resultType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub result_type: Option<ResultType>,
    /// `_meta`, with `serverInfo`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent (a legacy body `serverInfo` lands here).
    #[serde(flatten)]
    pub extra: JsonObject,
}
