//! What a server keeps where others can write (a task store, a fleet's session store and its
//! bus), sealed with the server's state keys: encrypted, authenticated, and bound to the item
//! it is (its handle kind), so that whoever can write there without the keys cannot write
//! anything the server believes, nor move one item's bytes to another (security review X10).
//! The task replays and answers and the fleet's records and messages all go through here.

use std::time::Duration;

use mcp_state_seal::{HandleSpec, SealError, SealingBoundary};

/// One kept item: the handle kind it is sealed as, how long it stays valid, and what it is
/// called in a log line (never its content).
pub(crate) struct Kept<'a> {
    pub(crate) kind: &'a str,
    pub(crate) ttl: Duration,
    pub(crate) what: &'a str,
}

impl Kept<'_> {
    fn spec(&self) -> HandleSpec<'_> {
        HandleSpec::new(self.kind).ttl(self.ttl)
    }

    /// `text` sealed as this item.
    pub(crate) fn seal(&self, sealer: &SealingBoundary, text: &str) -> Result<String, SealError> {
        sealer
            .seal_handle(&self.spec(), text, None)
            .inspect_err(|e| {
                tracing::warn!(item = self.what, error = %e, "a kept item could not be sealed");
            })
    }

    /// `token` opened as this item: `None` when it was not sealed as this item with these
    /// keys (written by someone without them, copied from another item, or expired), logged
    /// at `warn` with the reason.
    pub(crate) async fn open(&self, sealer: &SealingBoundary, token: &str) -> Option<String> {
        match sealer.open_handle(&self.spec(), token, None).await {
            Ok(text) => Some(text),
            Err(e) => {
                tracing::warn!(
                    item = self.what,
                    reason = e.reason().as_str(),
                    "a kept item not sealed with this server's keys was refused"
                );
                None
            }
        }
    }
}
