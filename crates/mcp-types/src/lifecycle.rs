//! Identity and the legacy handshake: `Implementation`, `initialize` (2025-11-25 only).

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::content::Icon;
use crate::meta::Meta;

/// The name and version of a client or server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Implementation {
    /// The programmatic name.
    pub name: String,
    /// The version.
    pub version: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// A website.
    #[serde(
        rename = "websiteUrl",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub website_url: Option<String>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::de::deserialize_with_extra!(Implementation, "an implementation (name and version)", { name: "name" => required, version: "version" => required, title: "title" => optional, description: "description" => optional, icons: "icons" => optional, website_url: "websiteUrl" => optional });

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: None,
            website_url: None,
            extra: JsonObject::new(),
        }
    }
}

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
