//! What a task that can run again keeps (its replay), and how a re-run body is built: the
//! types `engine.rs`, `body.rs` and `rerun.rs` share.

use std::collections::BTreeMap;
use std::sync::Mutex;

use mcp_types::JsonObject;
use mcp_types::capabilities::ClientCapabilities;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fleet::StoredPrincipal;

/// How many times a task's body runs at most (the first run and the re-runs): a body that
/// takes its worker down every time stops after this many.
pub const MAX_TASK_RUNS: u32 = 3;

/// What running a task again needs, as the store keeps it (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Replay {
    pub(crate) tool: String,
    pub(crate) arguments: JsonObject,
    pub(crate) protocol_version: String,
    pub(crate) capabilities: ClientCapabilities,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) principal: Option<StoredPrincipal>,
    /// The answers the body received, by question key (`q1`, …).
    #[serde(default)]
    pub(crate) answered: BTreeMap<String, Value>,
    /// What each question the body asked was (its digest, by question key): a re-run's
    /// question is answered from `answered`, or left standing, only when it is the same
    /// question, never because it is the n-th (security review X8). A replay kept before
    /// this has none, and its re-run asks again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) asked: BTreeMap<String, String>,
    /// How many times the body has started.
    pub(crate) runs: u32,
}

/// The most bytes a task's replay may take, encoded (64 KiB). A call whose replay would be
/// larger (its declared arguments, the client's capabilities as the re-run needs them) keeps
/// none: its task fails "worker lost" if its worker dies, as any task that cannot run again.
/// An answer that would take a kept replay past it is not kept: a re-run asks it again
/// (security review X1).
pub const MAX_REPLAY_BYTES: usize = 64 * 1024;

impl Replay {
    /// The replay encoded, or `None` past [`MAX_REPLAY_BYTES`].
    pub(crate) fn encode_bounded(&self) -> Option<Vec<u8>> {
        let encoded = self.encode();
        (encoded.len() <= MAX_REPLAY_BYTES).then_some(encoded)
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, String> {
        std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
            .map_err(|e| format!("an unreadable task replay: {e}"))
    }
}

/// The replay a running body keeps up to date (answers), when its task can run again.
#[derive(Debug)]
pub(crate) struct Kept {
    pub(crate) replay: Mutex<Replay>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(arguments: JsonObject) -> Replay {
        Replay {
            tool: "t".into(),
            arguments,
            protocol_version: "2026-07-28".into(),
            capabilities: ClientCapabilities::default(),
            principal: None,
            answered: BTreeMap::new(),
            asked: BTreeMap::new(),
            runs: 1,
        }
    }

    #[test]
    fn a_replay_past_its_cap_is_not_encoded() {
        let mut arguments = JsonObject::new();
        arguments.insert(
            "a".into(),
            Value::String("x".repeat(MAX_REPLAY_BYTES - 200)),
        );
        let fits = replay(arguments.clone())
            .encode_bounded()
            .expect("under the cap");
        assert!(fits.len() <= MAX_REPLAY_BYTES);
        arguments.insert("b".into(), Value::String("x".repeat(400)));
        assert_eq!(replay(arguments).encode_bounded(), None);
    }
}
