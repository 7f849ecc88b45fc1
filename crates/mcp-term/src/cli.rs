//! The command line of the `mcp-term` binary: the verbs and the options every verb shares.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use mcp_term::responder::{Policy, SamplingMode};

/// A terminal MCP client: list, call, read; answers elicitation, sampling and roots.
///
/// Target: `-- CMD ARGS…` (stdio), an `http(s)://` URL, or `@name` from an mcpServers config.
#[derive(Debug, Parser)]
#[command(name = "mcp-term", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) verb: Verb,
    #[command(flatten)]
    pub(crate) opts: Opts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Human,
    Json,
    Ndjson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Era {
    Auto,
    #[value(name = "2026-07-28")]
    Modern,
    #[value(name = "2025-11-25")]
    Legacy,
}

#[derive(Debug, clap::Args)]
pub(crate) struct Opts {
    /// The server: a URL or @name (also accepted as a positional argument).
    #[arg(short = 's', long, global = true)]
    pub(crate) server: Option<String>,
    /// An mcpServers config file searched first for @name.
    #[arg(long, global = true)]
    pub(crate) config: Option<PathBuf>,
    /// An HTTP header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", global = true)]
    pub(crate) headers: Vec<String>,
    /// Send `Authorization: Bearer $VAR`.
    #[arg(long, global = true, value_name = "VAR")]
    pub(crate) bearer_env: Option<String>,
    /// Authorize with OAuth when the server answers 401: on a terminal you sign in and paste the redirect; without one the authorization server must grant without a login page.
    #[arg(long, global = true)]
    pub(crate) oauth: bool,
    /// An environment variable for a stdio server, K=V (repeatable).
    #[arg(long = "env", global = true, value_name = "K=V")]
    pub(crate) envs: Vec<String>,
    /// The working directory of a stdio server.
    #[arg(long, global = true)]
    pub(crate) cwd: Option<PathBuf>,
    /// Which protocol era to speak.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub(crate) era: Era,
    /// Answer a form field, `field=value` or `field:=JSON` (repeatable).
    #[arg(long = "answer", global = true, value_name = "FIELD=VALUE")]
    pub(crate) answer: Vec<String>,
    /// A JSON file of answers (per field, per inputRequests key, per round).
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) answers: Option<PathBuf>,
    /// Accept a form whose required fields all have defaults, without asking.
    #[arg(long, global = true)]
    pub(crate) accept_defaults: bool,
    /// What to do with a question no answer covers (default: prompt on a terminal, fail without).
    #[arg(long, global = true, value_enum)]
    pub(crate) elicit: Option<Policy>,
    /// Which elicitation modes to advertise: form, url, both or none.
    #[arg(long, global = true, default_value = "both")]
    pub(crate) elicit_modes: String,
    /// Prompt on stdin/stderr even when they are not a terminal.
    #[arg(long, global = true)]
    pub(crate) tty: bool,
    /// Use a workspace config entry (./.mcp.json, ./.vscode/mcp.json) that runs a command or reads environment variables without asking.
    #[arg(long, global = true)]
    pub(crate) trust_workspace: bool,
    /// Open in the browser a URL-mode page a person accepted on the terminal (never one accepted by --answers), and the OAuth sign-in page once shown.
    #[arg(long, global = true)]
    pub(crate) open: bool,
    /// Answer sampling: prompt, decline, fixed:TEXT or exec:CMD (not advertised unless given).
    #[arg(long, global = true)]
    pub(crate) sampling: Option<SamplingMode>,
    /// A root directory to offer (repeatable; roots are not advertised unless given).
    #[arg(long = "root", global = true, value_name = "DIR")]
    pub(crate) roots: Vec<PathBuf>,
    /// Say on stderr when an answer came from the client's cache (a result the server let
    /// it keep, `ttlMs`) instead of the server: within one process, so with `batch`.
    #[arg(short = 'v', long, global = true)]
    pub(crate) verbose: bool,
    /// Print each round's keys, methods and the size and SHA-256 of its state on stderr.
    #[arg(long, global = true)]
    pub(crate) trace_rounds: bool,
    /// Export this run's client spans and metrics (OpenTelemetry's MCP conventions) with
    /// OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default http://127.0.0.1:4318), as
    /// OTEL_SERVICE_NAME (default mcp-term); the trace continues in the server through `_meta`.
    #[cfg(feature = "otel")]
    #[arg(long, global = true)]
    pub(crate) otel: bool,
    /// The most rounds one call may take.
    #[arg(long, global = true, default_value_t = 10)]
    pub(crate) max_rounds: u32,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value = "human")]
    pub(crate) format: Format,
    /// Log messages at or above this level are printed on stderr.
    #[arg(long, global = true, default_value = "info")]
    pub(crate) log_level: String,
    /// Seconds each request may take.
    #[arg(long, global = true, default_value_t = 60)]
    pub(crate) timeout: u64,
    /// Seconds to follow a task before cancelling it (a server may answer `working` forever
    /// and name no lifetime); the task's own TTL, when shorter, applies instead.
    #[arg(long, global = true, default_value_t = 3600, value_name = "SECS")]
    pub(crate) task_wait: u64,
    /// Do not declare the Tasks extension (a server then runs long tools inline).
    #[arg(long, global = true)]
    pub(crate) no_tasks: bool,
    /// Declare MCP Apps (io.modelcontextprotocol/ui) and write the HTML app of a tool that has one into DIR, to open in a browser (`tools` then names each tool's app).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) save_ui: Option<PathBuf>,
    /// Also trust the CA certificates in this PEM file for https:// servers (a private CA).
    #[arg(long, global = true, value_name = "PEM")]
    pub(crate) ca: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Verb {
    /// The era negotiated, server info, capabilities, instructions, and what this client advertised.
    Info { rest: Vec<String> },
    /// List the tools.
    Tools {
        /// Print each tool's input schema.
        #[arg(long)]
        schema: bool,
        rest: Vec<String>,
    },
    /// Call a tool: NAME k=v k:=JSON …
    Call {
        name: String,
        /// Arguments `k=v` (coerced by the input schema) or `k:=JSON`, and the target.
        params: Vec<String>,
        /// A JSON object of arguments, `@file`, or `-` for stdin.
        #[arg(long)]
        args: Option<String>,
    },
    /// List the prompts.
    Prompts { rest: Vec<String> },
    /// Get a prompt: NAME k=v …
    Prompt { name: String, params: Vec<String> },
    /// List the resources.
    Resources { rest: Vec<String> },
    /// List the resource templates.
    Templates { rest: Vec<String> },
    /// Read a resource.
    Read {
        uri: String,
        rest: Vec<String>,
        /// Write the contents to this file.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Finish a flow that stopped with exit 10, from its pending file (a stdio server is named again: resume FILE -- CMD ARGS).
    Resume { file: PathBuf, rest: Vec<String> },
    /// The configured servers and where each comes from.
    Servers { rest: Vec<String> },
    /// Run the verbs of FILE (`-`: stdin) over one connection, one per line as typed after
    /// `mcp-term` (`tools`, `call NAME k=v`, …; `#` starts a comment), stopping at the first
    /// that fails with its exit code.
    Batch { file: PathBuf, rest: Vec<String> },
}

/// One line of a `batch` file: a verb and its arguments, without the options every verb
/// shares (those are the batch's, given once on its command line).
#[derive(Debug, Parser)]
#[command(name = "batch line", no_binary_name = true)]
pub(crate) struct BatchLine {
    #[command(subcommand)]
    pub(crate) verb: Verb,
}

impl Verb {
    /// The positional arguments, where a target given among them is looked for.
    pub(crate) fn rest_mut(&mut self) -> &mut Vec<String> {
        match self {
            Verb::Info { rest }
            | Verb::Tools { rest, .. }
            | Verb::Prompts { rest }
            | Verb::Resources { rest }
            | Verb::Templates { rest }
            | Verb::Read { rest, .. }
            | Verb::Resume { rest, .. }
            | Verb::Batch { rest, .. }
            | Verb::Servers { rest } => rest,
            Verb::Call { params, .. } | Verb::Prompt { params, .. } => params,
        }
    }
}
