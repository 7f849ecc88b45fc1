//! A Model Context Protocol gateway kit: servers mounted under prefixes and served as one.
//!
//! Package `keel-mcp-proxy` on crates.io: `cargo add keel-mcp-proxy`, then
//! `use mcp_proxy::…` (or `mcp::proxy` with the facade's `proxy` feature).
//!
//! - [`Gateway`]: mounts, each under a prefix (`weather` + `_` + `forecast` =
//!   `weather_forecast`; `""` keeps the names). Two mounts that expose one name are refused
//!   when the gateway is built ([`GatewayError::Collision`]).
//! - What it mounts ([`IntoUpstream`]): an `McpServer`, a `Server` or a `Service` of this
//!   process, driven in process with the caller's principal, so its own resolvers, policy
//!   layers and tasks see who calls; or a [`Proxy`]: a server run as a child process over
//!   stdio ([`Proxy::stdio`]) or behind a Streamable HTTP URL ([`Proxy::http`], with a bearer
//!   token or headers), connected lazily, and again after it was lost.
//! - Failure stays local: every wait on an upstream has a deadline ([`Proxy::call_timeout`],
//!   [`Proxy::connect_timeout`], [`Gateway::local_timeout`]), every list a page cap and a tool
//!   cap. An upstream that is down, slow or misbehaving costs only its own tools: a call to
//!   one of them answers a tool error (`isError`) naming the upstream, `tools/list` answers
//!   with the others (and logs which upstream is missing), and the upstream's tools come back
//!   when it answers again (announced with `notifications/tools/list_changed`). An upstream's
//!   own JSON-RPC error passes through, its `Unknown tool: x` naming the qualified tool.
//! - Cancellation reaches the upstream: a caller that cancels (or goes away) drops the
//!   forwarded call, which cancels it in process, sends `notifications/cancelled` over stdio,
//!   and closes the HTTP stream.
//!
//! Not passed through yet (later versions of this crate): prompts, resources and resource
//! templates, completions; an upstream's `InputRequiredResult` (a call that asks for input
//! answers a tool error naming the upstream) and 2025-11-25 live questions; progress and log
//! notifications of remote upstreams (those of in-process ones are); Tasks (the Tasks
//! extension is not declared upstream); `subscriptions/listen` and resource subscriptions; an
//! upstream's own `notifications/tools/list_changed` (its tools are read again only after it
//! was lost). Tools an upstream adds after the build get no per-tool facts (`Mcp-Param-*`
//! checks, `tool_layer` policy). The catalog is one for every caller: the gateway lists each
//! upstream as nobody (an in-process server whose policy refuses an anonymous `tools/list`
//! is missing), and an in-process server's layers see the caller's principal but not its
//! token's scopes (`RequireScopes` there refuses: `RequestContext` does not carry them).
//!
//! Two servers of this process, mounted under `a` and `b`:
//!
//! ```
//! use mcp_client::{Client, MemoryTransport};
//! use mcp_proxy::Gateway;
//! use mcp_server_core::registry::{McpServer, ToolDef};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! fn echo(server: &'static str) -> McpServer {
//!     McpServer::new(server).tool(
//!         ToolDef::new("echo").handler(move |_ctx, args: serde_json::Value| async move {
//!             format!("{server} says {}", args["text"])
//!         }),
//!     )
//! }
//! let service = Gateway::new("hub")
//!     .mount("a", echo("A"))
//!     .mount("b", echo("B"))
//!     .into_service()
//!     .await?;
//!
//! let client = Client::builder().connect(MemoryTransport::new(&service)).await?;
//! let names: Vec<String> = client.list_all_tools().await?.into_iter().map(|t| t.name).collect();
//! assert_eq!(names, ["a_echo", "b_echo"]);
//! let result = client.call_tool("b_echo", json!({"text": "hi"})).await?;
//! assert_eq!(result.content[0].as_text(), Some("B says \"hi\""));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod call;
mod catalog;
mod envelope;
mod error;
mod failure;
mod gateway;
mod namespace;
mod shared;
mod upstream;

pub use error::{GatewayError, ProxyError};
pub use gateway::{DEFAULT_PAGE_SIZE, Gateway, GatewayServer};
pub use namespace::{MAX_PREFIX, SEPARATORS};
pub use upstream::remote::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LIST_PAGES,
    DEFAULT_MAX_TOOLS, Proxy, RECONNECT_CAP, RECONNECT_START,
};
pub use upstream::{IntoUpstream, Upstream};

pub use mcp_client::Mode;
