//! Wire types of the Model Context Protocol (MCP), for both protocol eras:
//! the stateless **2026-07-28** revision and the legacy **2025-11-25** one.
//!
//! Package `keel-mcp-types` on crates.io: `cargo add keel-mcp-types`,
//! then `use mcp_types::…`.
//!
//! Every request, result and notification of both official JSON Schemas is a typed Rust value
//! with serde. The types are a superset of the two revisions: a field that exists in only one
//! revision is an `Option` that stays absent in the other. Unknown fields, unknown capability
//! sub-keys and `_meta` entries land in `extra` maps and survive a decode/encode round trip, so
//! nothing a peer sent is silently dropped.
//!
//! The layers, bottom to top:
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope ([`JsonRpcMessage`]), decoded once with the params
//!   kept as raw JSON until a method-specific type claims them, and validated with errors that
//!   name the problem ([`MessageError`]).
//! - [`messages`]: the typed unions per direction ([`ClientRequest`], [`ServerRequest`],
//!   [`ClientNotification`], [`ServerNotification`]) and the result decoding by method
//!   ([`ServerResult`], [`ClientResult`]).
//! - The per-feature modules: [`tools`], [`prompts`], [`resources`], [`completion`],
//!   [`elicitation`], [`sampling`], [`roots`], [`mrtr`] (multi-round-trip requests),
//!   [`discover`], [`subscriptions`], [`lifecycle`], [`logging`], [`notifications`], [`tasks`] (2025-11-25), and the 2026-07-28
//!   extensions in [`ext`] ([`ext::tasks`]).
//! - [`meta`] (reserved `_meta` keys), [`error`] (error codes), [`version`] and [`methods`]
//!   (which method exists in which revision).
//!
//! ```
//! use mcp_types::{ClientRequest, JsonRpcMessage};
//!
//! let line = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
//!     "name":"echo","arguments":{"text":"hi"},
//!     "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!              "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
//! let JsonRpcMessage::Request(request) = JsonRpcMessage::from_str(line)? else { unreachable!() };
//! let ClientRequest::CallTool(call) = ClientRequest::from_request(&request)? else { unreachable!() };
//! assert_eq!(call.name, "echo");
//! assert_eq!(call.meta.as_ref().and_then(|m| m.protocol_version.as_deref()), Some("2026-07-28"));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without the `std` feature the crate needs only `core` and `alloc`.
#![cfg_attr(not(feature = "std"), no_std)]
// Messages are decoded once and moved rarely; boxing the larger variants would cost an
// allocation per message to save a memcpy.
#![allow(clippy::large_enum_variant)]

extern crate alloc;

/// What the standard prelude gives a `std` crate, for a `no_std` build; every module imports
/// it, so both builds read the same.
mod prelude {
    pub(crate) use alloc::borrow::ToOwned;
    pub(crate) use alloc::boxed::Box;
    pub(crate) use alloc::format;
    pub(crate) use alloc::string::{String, ToString};
    pub(crate) use alloc::vec;
    pub(crate) use alloc::vec::Vec;
}

pub mod capabilities;
pub mod common;
pub mod completion;
pub mod content;
mod de;
pub mod discover;
pub mod elicitation;
pub mod error;
pub mod ext;
pub mod frame;
mod future;
mod id;
mod identity;
mod intern;
pub mod jsonrpc;
mod level;
pub mod lifecycle;
pub mod log_safe;
pub mod logging;
pub mod messages;
pub mod meta;
pub mod methods;
pub mod mrtr;
pub mod notifications;
pub mod param_header;
pub mod prompts;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod subscriptions;
pub mod tasks;
mod tool_definition;
pub mod tools;
pub mod version;

pub use capabilities::{ClientCapabilities, ServerCapabilities};
pub use content::{ContentBlock, Role};
pub use error::{ErrorCode, ErrorObject};
pub use future::BoxFuture;
pub use jsonrpc::{
    JsonRpcError, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse,
    MessageError, RequestId,
};
pub use log_safe::{LogSafe, LogSafeId};
pub use messages::{
    ClientNotification, ClientRequest, ClientResult, ParamsError, ServerNotification,
    ServerRequest, ServerResult,
};
pub use meta::Meta;
pub use mrtr::{InputRequest, InputRequiredResult, InputResponse, Outcome, ResultType};
pub use version::ProtocolVersion;

/// A JSON object: the type of `params`, `arguments`, `_meta` and every `extra` map.
pub type JsonObject = serde_json::Map<alloc::string::String, serde_json::Value>;
