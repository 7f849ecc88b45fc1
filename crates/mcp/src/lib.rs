//! A Rust SDK for the Model Context Protocol.
//!
//! Package `keel-mcp` on crates.io: `cargo add keel-mcp`,
//! then `use mcp::…`.
//!
//! One server speaks the stateless **2026-07-28** revision and the legacy **2025-11-25** one
//! on the same endpoint. A tool asks its user a question with one annotated parameter: a
//! 2026-07-28 client gets an `InputRequiredResult` whose `requestState` is sealed (nobody can
//! forge, replay or read it), a 2025-11-25 session gets a live request mid-call, and the tool's
//! body cannot tell the difference.
//!
//! ```
//! use mcp::{ElicitationResult, McpServer, Resolution};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Clone, Deserialize, JsonSchema)]
//! struct Confirm {
//!     ok: bool,
//! }
//!
//! /// Ask only when the folder is not empty. `path` is the tool's own argument, by name.
//! #[mcp::resolver]
//! async fn confirm_delete(path: &str) -> Resolution<Confirm> {
//!     match path {
//!         "/tmp/empty" => Resolution::ready(Confirm { ok: true }),
//!         _ => Resolution::elicit(format!("{path} has 2 file(s). Delete anyway?")),
//!     }
//! }
//!
//! /// Delete a folder, asking for confirmation when it is not empty.
//! #[mcp::tool]
//! async fn delete_folder(path: String, #[resolve(confirm_delete)] confirm: ElicitationResult<Confirm>) -> String {
//!     match confirm {
//!         ElicitationResult::Accepted(Confirm { ok: true }) => format!("deleted {path}"),
//!         ElicitationResult::Accepted(_) => "kept the folder".into(),
//!         ElicitationResult::Declined => "declined: folder not deleted".into(),
//!         ElicitationResult::Cancelled => "cancelled: folder not deleted".into(),
//!     }
//! }
//!
//! let service = McpServer::new("Files").tool(delete_folder).into_service()?;
//! # Ok::<(), mcp::BuildError>(())
//! ```
//!
//! Skills (the `io.modelcontextprotocol/skills` extension): a server offers a directory of
//! skills, each a `SKILL.md` and its files, with [`McpServer::skills_dir`]; a client lists them
//! with `list_all_skills` and loads one with `load_skill`, which verifies every byte it reads
//! against the listing (see the skills guide in `docs/skills.md`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp::{ClientBuilderExt, McpServer};
//!
//! let service = McpServer::new("skills")
//!     .skills_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/skills"))
//!     .into_service()?;
//! let client = mcp::client::Client::builder().in_memory(&service).await?;
//! let skills = client.list_all_skills().await?;
//! let loaded = client.load_skill(&skills[0]).await?;
//! assert_eq!(loaded.frontmatter["name"], "pdf-processing");
//! # Ok(())
//! # }
//! ```
//!
//! # The macros' options
//!
//! Every key the attribute macros take (an unknown key is a compile error that lists these).
//!
//! | key | on | what it sets |
//! |---|---|---|
//! | `name = "…"` | tool, prompt, resource, resolver | the name on the wire (a resolver's is its `inputRequests` key); default: the function's name |
//! | `title = "…"` | tool, prompt, resource | the display title |
//! | `description = "…"` | tool, prompt, resource | the description; default: the function's doc comment |
//! | `read_only`, `destructive`, `idempotent`, `open_world` | tool | the annotations `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint` (`= false` to say so explicitly) |
//! | `icon = "…"` | tool, prompt, resource | an icon's URL (repeat the key for several) |
//! | `output = T` | tool | the `outputSchema`, from `T`'s JSON Schema; default: a `-> Json<T>` (or `Result<Json<T>, E>`) return gives `T`'s, when `T` derives `JsonSchema` and is an object |
//! | `task = "optional" \| "required" \| "forbidden"` | tool | whether a client may (or must) run the tool as a task (`docs/tasks.md`); default `"forbidden"` |
//! | `ui = "ui://…"` | tool | the MCP App the tool's result is shown in (`docs/apps.md`) |
//! | `scopes = ["…"]` | tool, prompt, resource | the OAuth scopes a caller's token must grant (`docs/policy.md`) |
//! | `mime_type = "…"` | resource | the resource's MIME type |
//! | `crate = path` | tool, prompt, resource, resolver | where this crate is, for a facade that re-exports it; default `::mcp` |
//!
//! A resource's URI (or URI template, with `{variables}`) comes first: `#[mcp::resource("notes://{id}")]`.
//!
//! On a parameter:
//!
//! | form | what it does |
//! |---|---|
//! | `#[resolve(f)]` | fills the parameter with resolver `f`'s value (`T`, `Accepted<T>`, `ElicitationResult<T>` or `Ready<T>` of its `Resolution<T>`); it is not part of the input schema |
//! | `#[mcp(default = expr)]` | a tool argument's value when the client leaves it out |
//! | `#[mcp(header = "Name")]` | a tool argument the client also sends as the HTTP header `Mcp-Param-Name` |
//! | `#[mcp(description = "…")]` | a parameter's description (default: its doc comment) |
//! | `ctx: &Context` or `ctx: Context` | the request's context: progress, logs, the caller, the era |
//! | `notes: State<Notes>` | the server's application state of type `Notes`, given with [`McpServer::with_state`] |
//!
//! Features: `server`, `macros` and `client` (all default).
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use mcp_types as types;

#[cfg(feature = "server")]
pub use mcp_state_seal as seal;
#[cfg(feature = "server")]
pub use mcp_state_seal::RequestStateSecurity;

#[cfg(feature = "otel")]
pub mod otel;

/// A fleet of instances with nothing sticky: [`Fleet`](fleet::Fleet), the
/// [`SessionStore`](fleet::SessionStore) and [`Bus`](fleet::Bus) traits and their in-memory
/// forms (`mcp::redis` has the Redis ones); see `docs/scale-out.md`.
#[cfg(feature = "server")]
pub use mcp_server_core::fleet;
/// Layers around requests (timeout, concurrency and rate limits, audit, scopes): see
/// `docs/policy.md`.
#[cfg(feature = "server")]
pub use mcp_server_core::policy;
#[cfg(feature = "server")]
pub use mcp_server_core::registry::{
    Accepted, AppDef, BuildError, Context, ElicitModel, ElicitationResult, FromResolved,
    IntoPromptDef, IntoPromptResult, IntoReadResult, IntoResourceDef, IntoToolDef, IntoToolResult,
    Json, McpServer, NotFound, PromptDef, Ready, Refusal, Resolution, ResolvedValues, Resolver,
    ResolverInput, ResourceDef, ResourceTemplateDef, SkillsLimits, ToolDef, ToolOutcome, ToolReply,
    UiPermissions, UiVisibility,
};
/// The Tasks extension on the server: [`TaskSupport`](tasks::TaskSupport), the
/// [`TaskConfig`](tasks::TaskConfig) and the [`TaskStore`](tasks::TaskStore) trait.
#[cfg(feature = "server")]
pub use mcp_server_core::tasks;
#[cfg(feature = "server")]
pub use mcp_server_core::{
    CacheHints, CancellationToken, ChangeNotifier, Extension, ExtensionIdError, Handle, HandleKind,
    MemoryConnection, PeerError, RequestContext, ResponseStream, Server, Service, Session, State,
    TransportContext, client_group,
};
#[cfg(feature = "server")]
pub use mcp_types::mrtr::Outcome;

#[cfg(feature = "macros")]
pub use mcp_server_macros::{prompt, resolver, resource, tool, tools};

/// The client: [`client::Client`], its builder, the manual [`client::Session`], and the
/// [`client::Transport`] trait.
#[cfg(feature = "client")]
pub mod client {
    pub use mcp_client::*;
}

/// The gateway kit (feature `proxy`): [`proxy::Gateway`] mounts servers of this process and
/// [`proxy::Proxy`] upstreams (a child over stdio, a Streamable HTTP URL) under prefixes and
/// serves their tools as one, each upstream's failures kept to its own tools.
#[cfg(feature = "proxy")]
pub mod proxy {
    pub use mcp_proxy::*;
}

/// Anything that can become a running [`Service`]: an [`McpServer`], a low-level [`Server`],
/// a service, or a built gateway (feature `proxy`).
#[cfg(feature = "server")]
pub trait IntoService {
    /// Builds the service (an `McpServer` checks its definitions here).
    fn into_service(self) -> Result<Service, BuildError>;
}

#[cfg(feature = "server")]
impl IntoService for McpServer {
    fn into_service(self) -> Result<Service, BuildError> {
        McpServer::into_service(self)
    }
}

#[cfg(feature = "server")]
impl IntoService for Server {
    fn into_service(self) -> Result<Service, BuildError> {
        Ok(Server::into_service(self))
    }
}

#[cfg(feature = "server")]
impl IntoService for Service {
    fn into_service(self) -> Result<Service, BuildError> {
        Ok(self)
    }
}

#[cfg(feature = "proxy")]
impl IntoService for mcp_proxy::GatewayServer {
    fn into_service(self) -> Result<Service, BuildError> {
        Ok(mcp_proxy::GatewayServer::into_service(self))
    }
}

/// The error of the `serve` functions.
pub type ServeError = Box<dyn std::error::Error + Send + Sync>;

/// stdio: serve on stdin/stdout, or spawn a server process as a client.
#[cfg(feature = "stdio")]
pub mod stdio {
    pub use mcp_transport_stdio::*;

    /// Serves `server` on stdin/stdout until stdin closes (log to stderr, never stdout).
    ///
    /// A whole stdio server, as a client such as Claude Desktop spawns it:
    ///
    /// ```no_run
    /// /// Adds two numbers.
    /// #[mcp::tool]
    /// async fn add(a: i64, b: i64) -> String {
    ///     (a + b).to_string()
    /// }
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), mcp::ServeError> {
    ///     mcp::stdio::serve(mcp::McpServer::new("Adder").tool(add)).await
    /// }
    /// ```
    pub async fn serve(server: impl super::IntoService) -> Result<(), super::ServeError> {
        mcp_transport_stdio::serve(server.into_service()?).await?;
        Ok(())
    }
}

/// Redis stores shared by a fleet of instances (feature `redis`): see `docs/scale-out.md`.
#[cfg(feature = "redis")]
pub mod redis {
    pub use mcp_store_redis::*;
}

/// Streamable HTTP: serve the endpoint, mount it in axum, or connect as a client.
#[cfg(feature = "http")]
pub mod http {
    pub use mcp_transport_http::*;

    /// Serves `server` at `http://{addr}/mcp` until the process ends.
    ///
    /// Both eras answer on that one endpoint: 2026-07-28 requests statelessly, 2025-11-25
    /// clients in sessions (`Mcp-Session-Id`).
    ///
    /// ```no_run
    /// /// Adds two numbers.
    /// #[mcp::tool]
    /// async fn add(a: i64, b: i64) -> String {
    ///     (a + b).to_string()
    /// }
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), mcp::ServeError> {
    ///     mcp::http::serve(mcp::McpServer::new("Adder").tool(add), "127.0.0.1:8080").await
    /// }
    /// ```
    pub async fn serve(
        server: impl super::IntoService,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> Result<(), super::ServeError> {
        mcp_transport_http::serve(server.into_service()?, addr).await?;
        Ok(())
    }

    /// Serves `server` at `https://{addr}/mcp` until the process ends, with a PEM certificate
    /// chain (the server's certificate first) and its PEM private key (feature `tls`).
    #[cfg(feature = "tls")]
    pub async fn serve_tls(
        server: impl super::IntoService,
        addr: impl tokio::net::ToSocketAddrs,
        cert_chain_pem: &[u8],
        key_pem: &[u8],
    ) -> Result<(), super::ServeError> {
        mcp_transport_http::serve_tls(server.into_service()?, addr, cert_chain_pem, key_pem)
            .await?;
        Ok(())
    }

    /// The endpoint as a hyper/`tower` service, to mount in an existing application.
    pub fn endpoint(server: impl super::IntoService) -> Result<McpHttpService, super::BuildError> {
        Ok(McpHttpService::new(server.into_service()?))
    }
}

/// Connecting a [`client::ClientBuilder`] over the transports this crate has.
#[cfg(feature = "client")]
pub trait ClientBuilderExt: Sized {
    /// Connects to a Streamable HTTP endpoint.
    #[cfg(feature = "http")]
    fn connect_http(
        self,
        url: &str,
    ) -> impl std::future::Future<Output = Result<mcp_client::Client, mcp_client::ClientError>> + Send;

    /// Spawns a server process and connects over its stdio.
    #[cfg(feature = "stdio")]
    fn connect_stdio(
        self,
        command: tokio::process::Command,
    ) -> impl std::future::Future<Output = Result<mcp_client::Client, mcp_client::ClientError>> + Send;

    /// Connects to a server in this process.
    #[cfg(feature = "server")]
    fn in_memory(
        self,
        service: &Service,
    ) -> impl std::future::Future<Output = Result<mcp_client::Client, mcp_client::ClientError>> + Send;
}

#[cfg(feature = "client")]
impl ClientBuilderExt for mcp_client::ClientBuilder {
    #[cfg(feature = "http")]
    async fn connect_http(self, url: &str) -> Result<mcp_client::Client, mcp_client::ClientError> {
        let transport = mcp_transport_http::HttpTransport::new(url)
            .map_err(mcp_client::ClientError::Transport)?;
        self.connect(transport).await
    }

    #[cfg(feature = "stdio")]
    async fn connect_stdio(
        self,
        command: tokio::process::Command,
    ) -> Result<mcp_client::Client, mcp_client::ClientError> {
        let transport = mcp_transport_stdio::StdioTransport::spawn(command)
            .map_err(|e| mcp_client::ClientError::Transport(e.to_string()))?;
        self.connect(transport).await
    }

    #[cfg(feature = "server")]
    async fn in_memory(
        self,
        service: &Service,
    ) -> Result<mcp_client::Client, mcp_client::ClientError> {
        self.connect(mcp_client::MemoryTransport::new(service))
            .await
    }
}

#[cfg(feature = "server")]
pub use schemars;
#[cfg(feature = "server")]
pub use serde;

/// What the macros' generated code refers to. Not a public API.
#[cfg(feature = "server")]
#[doc(hidden)]
pub mod __private {
    pub use mcp_server_core::State;
    pub use mcp_server_core::registry::derive;
    pub use mcp_server_core::registry::{
        Accepted, Context, McpServer, PromptDef, Resolution, ResolvedValues, Resolver,
        ResolverInput, ResourceDef, ResourceTemplateDef, ToolDef,
    };
    pub use mcp_server_core::tasks::TaskSupport;
    pub use mcp_types::content::Icon;
    pub use mcp_types::tools::ToolAnnotations;
    pub use schemars;
    pub use serde;
}
