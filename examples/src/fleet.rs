//! fleet: every instance shares the request-state keys, so a round started on one instance
//! can finish on any other, and keys rotate without dropping a round in flight.
//!
//! Rotation in three deployments, each one rolled out to every instance:
//!
//! 1. `[OLD, NEW]`: everyone can verify NEW before anyone seals with it;
//! 2. `[NEW, OLD]`: seal with NEW, still accept rounds sealed with OLD;
//! 3. `[NEW]`: after the state's lifetime (ten minutes by default), drop OLD.

use mcp::{Accepted, McpServer, RequestStateSecurity, Resolution};
use schemars::JsonSchema;
use serde::Deserialize;

/// The environment variable holding the ring: secrets separated by commas, the sealing one
/// first, each at least 32 bytes (`openssl rand -base64 32` makes a good one).
pub const KEYS_VAR: &str = "MCP_STATE_KEYS";

/// The answer to "Restart …?".
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Go ahead with the restart.
    pub ok: bool,
}

/// Always asks before restarting.
#[mcp::resolver]
pub async fn confirm_restart(service: &str) -> Resolution<Confirm> {
    Resolution::elicit(format!("Restart {service} on every instance?"))
}

/// Restart a service across the fleet, after confirmation.
#[mcp::tool]
pub async fn restart(
    /// The service to restart.
    service: String,
    #[resolve(confirm_restart)] confirm: Accepted<Confirm>,
) -> String {
    if confirm.0.ok {
        format!("Restarted {service}.")
    } else {
        format!("{service} keeps running.")
    }
}

/// Parses the ring from the text of [`KEYS_VAR`].
pub fn security_from(keys: &str) -> Result<RequestStateSecurity, String> {
    let secrets: Vec<&str> = keys.split(',').map(str::trim).collect();
    RequestStateSecurity::keys(secrets).map_err(|e| format!("{KEYS_VAR}: {e}"))
}

/// The fleet server over the shared ring.
pub fn server(security: RequestStateSecurity) -> McpServer {
    McpServer::new("fleet")
        .tool(restart)
        .request_state_security(security)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_comes_from_the_environment_text() {
        assert!(
            security_from(
                "a-secret-of-at-least-32-bytes-long!!, another-secret-of-32-bytes-or-more"
            )
            .is_ok()
        );
        let short = security_from("short").err().unwrap();
        assert!(short.starts_with("MCP_STATE_KEYS: "), "{short}");
    }
}
