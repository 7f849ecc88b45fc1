//! Briefing: a prompt that asks its user before it renders.

use mcp::{McpServer, Resolution};
use schemars::JsonSchema;
use serde::Deserialize;

/// Who the briefing is for.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Audience {
    /// The people who will read the briefing.
    pub audience: String,
}

/// Always asks: the prompt has no argument that could answer it.
#[mcp::resolver]
pub async fn ask_audience() -> Resolution<Audience> {
    Resolution::elicit("Who is the briefing for?")
}

/// Draft a briefing tuned to its audience.
#[mcp::prompt]
pub async fn briefing(#[resolve(ask_audience)] audience: Audience) -> String {
    format!("Write a briefing for {}.", audience.audience)
}

/// The Briefing server.
pub fn server() -> McpServer {
    McpServer::new("Briefing").prompt(briefing)
}
