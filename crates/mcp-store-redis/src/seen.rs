//! The replay guard's seen-store on Redis: `SET key 1 NX PXAT expiry`, fail closed.

use std::fmt;
use std::sync::Arc;

use mcp_state_seal::{SeenFuture, SeenStore};

use crate::Shared;

/// Remembers used request-state ids in Redis until each state's own expiry, so a state is
/// accepted once across the whole fleet. When Redis cannot answer, the state is refused.
#[derive(Clone)]
pub struct RedisSeenStore {
    shared: Arc<Shared>,
}

impl fmt::Debug for RedisSeenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSeenStore")
            .field("prefix", &self.shared.config.prefix)
            .finish()
    }
}

impl RedisSeenStore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RedisSeenStore { shared }
    }
}

impl SeenStore for RedisSeenStore {
    fn first_use<'a>(&'a self, jti: &'a str, expires_at: f64) -> SeenFuture<'a> {
        Box::pin(async move {
            // A millisecond past the expiry, and never in the past (PXAT then deletes at once).
            let now_ms = mcp_server_core::tasks::system_now_ms();
            let at_ms = ((expires_at * 1000.0).ceil().max(0.0) as u64).max(now_ms + 1000);
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.shared.key(&["seen", jti]))
                .arg(1)
                .arg("NX")
                .arg("PXAT")
                .arg(at_ms);
            match self
                .shared
                .run::<Option<String>>("SET NX (replay guard)", &cmd)
                .await
            {
                Ok(set) => set.is_some(),
                Err(e) => {
                    tracing::warn!(error = %e, "replay guard refuses a state: Redis did not answer");
                    false
                }
            }
        })
    }
}
