//! Params of the notifications shared by both eras: progress, cancellation, and the empty
//! params of list-changed and `initialized`.

use crate::prelude::*;

use serde::{Deserialize, Serialize};
use serde_json::Number;

use crate::JsonObject;
use crate::jsonrpc::RequestId;
use crate::meta::Meta;

/// A progress token: a string or an integer, like a request id.
pub type ProgressToken = RequestId;

/// Params of a notification that carries nothing but `_meta` (list-changed, `initialized`).
pub type NotificationParams = crate::common::RequestParams;

/// Params of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressParams {
    /// The token from the request's `_meta.progressToken`.
    #[serde(rename = "progressToken")]
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification, may be fractional.
    pub progress: Number,
    /// The total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelledParams {
    /// The request to cancel (required on 2026-07-28, optional on 2025-11-25).
    #[serde(rename = "requestId", default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}
