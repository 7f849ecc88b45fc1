//! What the instances of a fleet say to each other about 2025-11-25 sessions, and how a
//! session's record is kept in the shared store: both sealed with the fleet's keys when the
//! server has them (security review X10).

use std::time::Duration;

use mcp_server_core::fleet::{self, Fleet, FleetError, FleetItem, SessionRecord};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The largest client answer (a JSON-RPC response or error) one instance of a fleet hands to
/// another over the bus: 1 MiB, room for an elicitation, a list of roots or a sampled message
/// with an image.
pub(crate) const MAX_FORWARDED_ANSWER: usize = 1024 * 1024;

/// A message about one session on the fleet's bus: a client's answer handed to the instance
/// that asked, a cancellation for whichever instance runs the request, the session's record
/// after a change, or its end.
#[derive(Serialize, Deserialize)]
pub(super) struct SessionMessage {
    pub(super) from: String,
    pub(super) session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) record: Option<SessionRecord>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) closed: bool,
    /// The session's record changed in the store: an instance holding the session reads it
    /// again. The record itself never goes on the bus (up to ~2 MiB, once per instance, for
    /// each 2 KB subscribe: security review X2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) changed: bool,
}

/// The longest request id a cancellation names on the bus, as JSON: a longer one is no id
/// this server issued a question or ran a request under worth a fleet-wide message.
const MAX_CANCELLED_ID: usize = 1024;

/// A `notifications/cancelled` reduced to what the other instances act on: the request's id.
/// `None` when it names none, or an id past [`MAX_CANCELLED_ID`].
pub(super) fn cancellation_of(n: &mcp_types::JsonRpcNotification) -> Option<Box<RawValue>> {
    #[derive(serde::Deserialize)]
    struct Cancelled<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: &'a RawValue,
    }
    let params = n.params.as_deref()?;
    let cancelled: Cancelled<'_> = serde_json::from_str(params.get()).ok()?;
    let id = cancelled.request_id.get();
    if id.len() > MAX_CANCELLED_ID {
        return None;
    }
    RawValue::from_string(format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
    ))
    .ok()
}

impl SessionMessage {
    pub(super) fn new(fleet: &Fleet, session: &str) -> Self {
        SessionMessage {
            from: fleet.member().to_owned(),
            session: session.to_owned(),
            message: None,
            record: None,
            closed: false,
            changed: false,
        }
    }

    /// The message as `channel` carries it: sealed with the fleet's keys when it has them
    /// (security review X10); `None` (logged) when it cannot be.
    pub(super) fn sealed(&self, fleet: &Fleet, channel: &str) -> Option<Vec<u8>> {
        let plain = serde_json::to_vec(self).ok()?;
        match fleet.seal(FleetItem::BusMessage(channel), &plain) {
            // Listeners drop larger ones; an answer within `MAX_FORWARDED_ANSWER` never is.
            Ok(sealed) if sealed.len() > fleet::MAX_BUS_MESSAGE => {
                tracing::warn!(
                    size = sealed.len(),
                    "a session message too large for the bus was not sent"
                );
                None
            }
            Ok(sealed) => Some(sealed),
            Err(e) => {
                tracing::warn!(error = %e, "a session message was not sent");
                None
            }
        }
    }
}

/// Session `id`'s record in the fleet's store as [`Fleet::seal`] keeps it.
pub(super) fn sealed_record(
    fleet: &Fleet,
    id: &str,
    record: &SessionRecord,
) -> Result<Vec<u8>, FleetError> {
    fleet.seal(FleetItem::SessionRecord(id), &record.encode())
}

/// What the fleet's store holds of session `id`: `Ok(None)` for none, an error of the store,
/// or the record opened (an error for one not sealed as this session's with the fleet's keys:
/// security review X10). A record sealed under a key being rotated out is sealed again under
/// the current one, so that a session outlives the rotation (a write in flight on another
/// instance may land first or be overwritten by this one; both hold the session as it was).
pub(super) async fn stored_record(
    fleet: &Fleet,
    id: &str,
    idle: Duration,
) -> Result<Option<Result<SessionRecord, FleetError>>, FleetError> {
    let Some(stored) = fleet.sessions().get(id, idle).await? else {
        return Ok(None);
    };
    let plain = match fleet.open(FleetItem::SessionRecord(id), &stored).await {
        Ok(plain) => plain,
        Err(e) => return Ok(Some(Err(e))),
    };
    let record = SessionRecord::decode(&plain);
    if let Ok(record) = &record
        && !record.ended
        && !fleet.sealed_with_current_key(&stored)
    {
        match sealed_record(fleet, id, record) {
            Ok(again) => {
                if let Err(e) = fleet.sessions().put(id, &again, idle).await {
                    tracing::warn!(error = %e, "a session record was not sealed again under the current key");
                }
            }
            Err(e) => tracing::warn!(error = %e, "a session record was not sealed again"),
        }
    }
    Ok(Some(record))
}
