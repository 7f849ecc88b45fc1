//! The Model Context Protocol client.
//!
//! Package `keel-mcp-client` on crates.io: `cargo add keel-mcp-client`,
//! then `use mcp_client::…`.
//!
//! - [`Client`]: callbacks for elicitation, sampling and roots that serve both eras, era
//!   detection ([`Mode::Auto`] probes with `server/discover` and falls back to `initialize`),
//!   and the automatic multi-round-trip loop in `call_tool`, `get_prompt` and `read_resource`.
//! - [`Session`]: one leg at a time, for applications that drive the loop themselves.
//! - [`cache`]: the response cache that honours the server's `ttlMs` and `cacheScope`.
//! - [`Transport`]: what any transport implements; `MemoryTransport` (feature
//!   `memory`) connects to an in-process server.
//!
//! Calling a tool whose server may ask the user something, in either era: the callback answers
//! a 2025-11-25 server's live request and a 2026-07-28 server's `inputRequests` alike.
//!
//! ```no_run
//! # async fn demo(transport: impl mcp_client::Transport) -> Result<(), mcp_client::ClientError> {
//! use mcp_client::Client;
//! use mcp_types::elicitation::ElicitResult;
//!
//! let client = Client::builder()
//!     .elicitation(|_info, params| async move {
//!         println!("the server asks: {}", params.message());
//!         Ok(ElicitResult::decline())
//!     })
//!     .connect(transport) // mcp_transport_stdio::StdioTransport, mcp_transport_http::HttpTransport
//!     .await?;
//! for tool in client.list_all_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("delete_folder", serde_json::json!({"path": "/tmp/x"})).await?;
//! println!("{result:?}");
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod cache;
mod callbacks;
mod client;
mod error;
#[cfg(feature = "memory")]
mod memory;
#[cfg(feature = "oauth")]
pub mod oauth;
mod trace;
mod transport;
pub use trace::{CLIENT_SPAN, call_span};

pub use cache::{CacheMode, CacheStore, MemoryCache};
pub use callbacks::RequestInfo;
/// The poll limits of the client's task loop.
pub use client::skills::{LoadedSkill, MAX_SKILL_PAGES, SkillFileContent};
pub use client::tasks::{
    DEFAULT_MAX_TASK_WAIT, DEFAULT_POLL_INTERVAL, MAX_POLL_INTERVAL, MAX_TASK_QUESTIONS,
    MIN_POLL_INTERVAL,
};
pub use client::{
    App, BACKOFF_CAP, BACKOFF_START, CallOptions, CallOutcome, Client, ClientBuilder,
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_INPUT_REQUESTS, DEFAULT_MAX_ROUNDS,
    DEFAULT_MAX_SERVER_REQUESTS, DEFAULT_MAX_TOTAL_TIMEOUT, DEFAULT_REQUEST_TIMEOUT,
    DISCOVER_TIMEOUT, HasMetaMut, LEGACY_VERSIONS, MAX_RESENDS, MAX_RETRY_AFTER, MODERN_VERSIONS,
    Mode, Negotiated, RESEND_BACKOFF_CAP, RESEND_BACKOFF_START, Session, TaskCall, TaskHandle,
    ToolLeg,
};
pub use error::ClientError;
#[cfg(feature = "memory")]
pub use memory::MemoryTransport;
pub use transport::{BoxFuture, Delivery, LocalFailure, Transport};
