//! The library behind the `mcp-term` binary: the form engine ([`form`]: schema to fields to
//! validated answers, no terminal in it), the line renderer ([`prompt`]), URLs as a browser
//! reads them ([`browser`]), the answer sources ([`answers`]), the one entry point for every
//! question ([`responder`]), the round loop ([`rounds`]), tool-argument coercion ([`args`]),
//! `@name` config files ([`config`]) and what may reach the terminal ([`text`]).
//!
//! Package `keel-mcp-term` on crates.io (`cargo install keel-mcp-term`; the command is
//! `mcp-term`).
//!
//! The pieces are usable alone; `args` builds a tool's arguments from `k=v` the way the command
//! line does, each value read by the tool's input schema:
//!
//! ```
//! let schema = serde_json::json!({"type": "object", "properties": {
//!     "zip": {"type": "string"}, "guests": {"type": "integer"}
//! }});
//! let pairs = ["zip=01234".to_owned(), "guests=4".to_owned()];
//! let arguments = mcp_term::args::build(None, &pairs, schema.as_object().unwrap())?;
//! assert_eq!(serde_json::Value::Object(arguments), serde_json::json!({"zip": "01234", "guests": 4}));
//! assert_eq!(mcp_term::args::suggest("gusts", ["zip", "guests"]), Some("guests"));
//! # Ok::<(), String>(())
//! ```
#![forbid(unsafe_code)]

pub mod answers;
pub mod apps;
pub mod args;
pub mod auth;
pub mod browser;
pub mod config;
pub mod form;
pub mod prompt;
pub mod responder;
pub mod rounds;
pub mod text;

/// The exit codes, as documented in `docs/mcp-term.md`.
pub mod code {
    /// The call succeeded.
    pub const OK: i32 = 0;
    /// The tool answered with `isError: true`.
    pub const TOOL_ERROR: i32 = 1;
    /// A mistake on the command line, in an answer or in a file; also a workspace config
    /// entry or a pending file's command that nobody confirmed (kind `untrusted`).
    pub const USAGE: i32 = 2;
    /// Authorization failed.
    pub const AUTH: i32 = 3;
    /// The server could not be reached or the connection failed.
    pub const TRANSPORT: i32 = 4;
    /// A JSON-RPC error or a malformed answer from the server.
    pub const PROTOCOL: i32 = 5;
    /// No such tool, prompt, resource or `@name`.
    pub const NOT_FOUND: i32 = 6;
    /// A question nobody answered: the pending request is on stdout.
    pub const INPUT_REQUIRED: i32 = 10;
    /// A question was refused (sampling declined, roots not offered), which ends a
    /// 2026-07-28 call.
    pub const REFUSED: i32 = 11;
    /// The server kept asking past `--max-rounds`.
    pub const MAX_ROUNDS: i32 = 12;
    /// Interrupted with Ctrl-C.
    pub const INTERRUPTED: i32 = 130;
}
