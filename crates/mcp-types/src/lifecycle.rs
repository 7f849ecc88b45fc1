//! Identity and the legacy handshake: `Implementation`, `initialize` (2025-11-25 only).

use crate::prelude::*;

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::capabilities::{ClientCapabilities, ServerCapabilities};
pub use crate::identity::Implementation;
use crate::meta::Meta;

/// Params of the legacy `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitializeRequestParams {
    /// The version the client offers.
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
    /// What the client can do, for the whole session.
    pub capabilities: ClientCapabilities,
    /// The client's identity.
    #[serde(rename = "clientInfo")]
    pub client_info: Implementation,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of the legacy `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitializeResult {
    /// The negotiated version.
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// The server's identity.
    #[serde(rename = "serverInfo")]
    pub server_info: Implementation,
    /// Hints for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}
