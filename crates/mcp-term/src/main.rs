//! `mcp-term`: a terminal MCP client that answers elicitation properly. See
//! `docs/mcp-term.md` for the guide.
//!
//! Exit codes: 0 ok, 1 the tool returned `isError`, 2 usage, 3 authorization, 4 transport,
//! 5 JSON-RPC or protocol error, 6 not found (tool, prompt, resource, `@name`), 10 input
//! required (a question nobody answered; the pending request is on stdout), 11 a question
//! was refused (sampling declined), 12 `--max-rounds` exceeded, 130 interrupted.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use mcp::ClientBuilderExt;
use mcp::client::{Client, ClientBuilder, ClientError, Mode};
use mcp::types::ErrorCode;
use mcp::types::elicitation::ElicitResult;
use mcp::types::logging::LoggingLevel;
use mcp::types::mrtr::{InputRequest, InputResponse, InputResponses};
use serde_json::{Value, json};

use mcp_term::answers::{CliAnswer, Sources};
use mcp_term::config::{self, Scope, ServerSpec};
use mcp_term::responder::{Policy, Responder, SamplingMode};
use mcp_term::rounds::{Call, Driver, Finished, Pending};
use mcp_term::{args, prompt, text};

use mcp_term::code;

/// A terminal MCP client: list, call, read; answers elicitation, sampling and roots.
///
/// Target: `-- CMD ARGS…` (stdio), an `http(s)://` URL, or `@name` from an mcpServers config.
#[derive(Debug, Parser)]
#[command(name = "mcp-term", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
    #[command(flatten)]
    opts: Opts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Human,
    Json,
    Ndjson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Era {
    Auto,
    #[value(name = "2026-07-28")]
    Modern,
    #[value(name = "2025-11-25")]
    Legacy,
}

#[derive(Debug, clap::Args)]
struct Opts {
    /// The server: a URL or @name (also accepted as a positional argument).
    #[arg(short = 's', long, global = true)]
    server: Option<String>,
    /// An mcpServers config file searched first for @name.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// An HTTP header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", global = true)]
    headers: Vec<String>,
    /// Send `Authorization: Bearer $VAR`.
    #[arg(long, global = true, value_name = "VAR")]
    bearer_env: Option<String>,
    /// Authorize with OAuth when the server answers 401: on a terminal you sign in and paste the redirect; without one the authorization server must grant without a login page.
    #[arg(long, global = true)]
    oauth: bool,
    /// An environment variable for a stdio server, K=V (repeatable).
    #[arg(long = "env", global = true, value_name = "K=V")]
    envs: Vec<String>,
    /// The working directory of a stdio server.
    #[arg(long, global = true)]
    cwd: Option<PathBuf>,
    /// Which protocol era to speak.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    era: Era,
    /// Answer a form field, `field=value` or `field:=JSON` (repeatable).
    #[arg(long = "answer", global = true, value_name = "FIELD=VALUE")]
    answer: Vec<String>,
    /// A JSON file of answers (per field, per inputRequests key, per round).
    #[arg(long, global = true, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// Accept a form whose required fields all have defaults, without asking.
    #[arg(long, global = true)]
    accept_defaults: bool,
    /// What to do with a question no answer covers (default: prompt on a terminal, fail without).
    #[arg(long, global = true, value_enum)]
    elicit: Option<Policy>,
    /// Which elicitation modes to advertise: form, url, both or none.
    #[arg(long, global = true, default_value = "both")]
    elicit_modes: String,
    /// Prompt on stdin/stderr even when they are not a terminal.
    #[arg(long, global = true)]
    tty: bool,
    /// Use a workspace config entry (./.mcp.json, ./.vscode/mcp.json) that runs a command or reads environment variables without asking.
    #[arg(long, global = true)]
    trust_workspace: bool,
    /// Open in the browser a URL-mode page a person accepted on the terminal (never one accepted by --answers), and the OAuth sign-in page once shown.
    #[arg(long, global = true)]
    open: bool,
    /// Answer sampling: prompt, decline, fixed:TEXT or exec:CMD (not advertised unless given).
    #[arg(long, global = true)]
    sampling: Option<SamplingMode>,
    /// A root directory to offer (repeatable; roots are not advertised unless given).
    #[arg(long = "root", global = true, value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// Print each round's keys, methods and the size and SHA-256 of its state on stderr.
    #[arg(long, global = true)]
    trace_rounds: bool,
    /// The most rounds one call may take.
    #[arg(long, global = true, default_value_t = 10)]
    max_rounds: u32,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value = "human")]
    format: Format,
    /// Log messages at or above this level are printed on stderr.
    #[arg(long, global = true, default_value = "info")]
    log_level: String,
    /// Seconds each request may take.
    #[arg(long, global = true, default_value_t = 60)]
    timeout: u64,
    /// Seconds to follow a task before cancelling it (a server may answer `working` forever
    /// and name no lifetime); the task's own TTL, when shorter, applies instead.
    #[arg(long, global = true, default_value_t = 3600, value_name = "SECS")]
    task_wait: u64,
    /// Do not declare the Tasks extension (a server then runs long tools inline).
    #[arg(long, global = true)]
    no_tasks: bool,
    /// Also trust the CA certificates in this PEM file for https:// servers (a private CA).
    #[arg(long, global = true, value_name = "PEM")]
    ca: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Verb {
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
}

/// A failure with its exit code; printed as one JSON line on stderr.
struct Fail {
    code: i32,
    kind: &'static str,
    message: String,
}

fn fail(code: i32, kind: &'static str, message: impl Into<String>) -> Fail {
    Fail {
        code,
        kind,
        message: message.into(),
    }
}

fn usage(message: impl Into<String>) -> Fail {
    fail(code::USAGE, "usage", message)
}

fn client_fail(e: ClientError) -> Fail {
    match &e {
        ClientError::Transport(why) if why.contains("invalid peer certificate") => {
            let hint = if why.contains("UnknownIssuer") {
                "the server's certificate was refused: no trusted CA signed it (if a private CA did, trust that CA with --ca FILE)"
            } else {
                "the server's certificate was refused"
            };
            fail(code::TRANSPORT, "tls", format!("{e}; {hint}"))
        }
        ClientError::Transport(why) if is_auth_failure(why) => {
            fail(code::AUTH, "auth", e.to_string())
        }
        ClientError::Transport(_) => fail(code::TRANSPORT, "transport", e.to_string()),
        ClientError::Timeout { .. } => fail(code::TRANSPORT, "timeout", e.to_string()),
        ClientError::TaskTimeout { task_id, after } => fail(
            code::TRANSPORT,
            "timeout",
            format!(
                "task '{task_id}' had not ended after {} s, so it was cancelled (--task-wait, or the task's TTL when shorter)",
                after.as_secs()
            ),
        ),
        ClientError::RoundsExceeded { .. } => fail(code::MAX_ROUNDS, "max_rounds", e.to_string()),
        ClientError::Server(obj) if obj.code == ErrorCode::LEGACY_RESOURCE_NOT_FOUND => {
            fail(code::NOT_FOUND, "not_found", e.to_string())
        }
        ClientError::Server(obj) if obj.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            fail(
                code::PROTOCOL,
                "missing_capability",
                format!(
                    "{e}; the server needs {} (see --elicit-modes, --sampling, --root)",
                    obj.data.as_ref().map(|d| d.to_string()).unwrap_or_default()
                ),
            )
        }
        _ => fail(code::PROTOCOL, "protocol", e.to_string()),
    }
}

/// Whether a transport failure is an authorization failure: a 401, or one of the OAuth
/// client's own failures (its messages: discovery, registration, the authorization response,
/// the token request, a scope never granted).
fn is_auth_failure(why: &str) -> bool {
    const OAUTH: [&str; 5] = [
        "client registration failed",
        "the token request failed",
        "the protected resource metadata is for",
        "the server still requires scope",
        "the authorization response",
    ];
    why.contains("401")
        || why.to_ascii_lowercase().contains("authoriz")
        || OAUTH.iter().any(|m| why.contains(m))
}

/// The target as parsed from the command line.
#[derive(Debug, Clone)]
enum Target {
    Stdio(Vec<String>),
    Url(String),
    Named(String),
}

fn is_target(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://") || s.starts_with('@')
}

fn main() {
    let mut argv: Vec<String> = std::env::args().collect();
    let command = match argv.iter().position(|a| a == "--") {
        Some(i) => {
            let tail = argv.split_off(i);
            tail[1..].to_vec()
        }
        None => Vec::new(),
    };
    let cli = Cli::parse_from(argv);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "{}",
                json!({"error": {"code": code::USAGE, "kind": "runtime", "message": e.to_string()}})
            );
            std::process::exit(code::USAGE);
        }
    };
    let exit = runtime.block_on(async {
        tokio::select! {
            exit = run(cli, command) => exit,
            _ = tokio::signal::ctrl_c() => Err(fail(code::INTERRUPTED, "interrupted", interrupted().await)),
        }
    });
    let code = match exit {
        Ok(code) => code,
        Err(f) => {
            // The one sink of every failure: a message may quote a server's error, a task's
            // failure, an HTTP body or an authorization server's description.
            let message = text::sanitize_line(&f.message);
            eprintln!("mcp-term: {message}");
            eprintln!(
                "{}",
                text::json_line(
                    &json!({"error": {"code": f.code, "kind": f.kind, "message": message}})
                )
            );
            f.code
        }
    };
    runtime.shutdown_timeout(Duration::from_millis(200));
    std::process::exit(code);
}

/// After Ctrl-C: a task being followed is cancelled (within 5 s), so it does not run on.
async fn interrupted() -> String {
    let Some(task) = mcp_term::rounds::running_task() else {
        return "interrupted (Ctrl-C); nothing more was sent".into();
    };
    match tokio::time::timeout(Duration::from_secs(5), task.cancel()).await {
        Ok(Ok(())) => "interrupted (Ctrl-C); the task was cancelled".into(),
        Ok(Err(e)) => format!("interrupted (Ctrl-C); cancelling the task failed: {e}"),
        Err(_) => "interrupted (Ctrl-C); the server did not acknowledge the task's cancellation within 5 s".into(),
    }
}

fn split_target(
    rest: &mut Vec<String>,
    opts: &Opts,
    command: &[String],
) -> Result<Option<Target>, Fail> {
    let mut found: Vec<String> = Vec::new();
    rest.retain(|a| {
        if is_target(a) {
            found.push(a.clone());
            false
        } else {
            true
        }
    });
    if let Some(s) = &opts.server {
        found.insert(0, s.clone());
    }
    if !command.is_empty() {
        if !found.is_empty() {
            return Err(usage("give one target: a URL, @name, or -- CMD ARGS"));
        }
        return Ok(Some(Target::Stdio(command.to_vec())));
    }
    match found.len() {
        0 => Ok(None),
        1 => {
            let t = found.remove(0);
            Ok(Some(match t.strip_prefix('@') {
                Some(name) => Target::Named(name.to_owned()),
                None => Target::Url(t),
            }))
        }
        _ => Err(usage(format!("more than one target: {}", found.join(", ")))),
    }
}

fn config_files(opts: &Opts) -> Vec<config::Source> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    config::candidates(opts.config.as_deref(), &cwd, home.as_deref())
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether a person is there to ask: stdin and stderr are a terminal, or `--tty`.
fn interactive(opts: &Opts) -> bool {
    (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) || opts.tty
}

/// Asks a yes-or-no question on stdin/stderr, off the async threads (so Ctrl-C still works).
async fn confirm(
    heading: String,
    lines: Vec<String>,
    question: &'static str,
) -> Result<bool, Fail> {
    tokio::task::spawn_blocking(move || {
        let color = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        prompt::Prompter::new(std::io::stdin().lock(), std::io::stderr(), color)
            .confirm(&heading, &lines, question)
    })
    .await
    .map_err(|e| usage(format!("the prompt stopped: {e}")))?
    .map_err(|e| usage(format!("the terminal failed: {e}")))
}

/// A workspace entry (a file that came with the working directory) that would run a command
/// or read the environment is used only with consent: asked on a terminal, given with
/// `--trust-workspace`, refused otherwise.
async fn trust_workspace(entry: &config::Entry, opts: &Opts) -> Result<(), Fail> {
    let from = format!(
        "@{} comes from the workspace file {}",
        entry.name,
        entry.source.display()
    );
    let risks = entry.risks();
    if risks.is_empty() || opts.trust_workspace {
        let trusted = if risks.is_empty() {
            ""
        } else {
            " (trusted with --trust-workspace)"
        };
        eprintln!("mcp-term: {}{trusted}", text::sanitize_line(&from));
        return Ok(());
    }
    let would = risks.join(" and ");
    if !interactive(opts) {
        return Err(fail(
            code::USAGE,
            "untrusted",
            format!(
                "{from} and would {would}; a file in the working directory comes with whatever was put there (a cloned repository can ship one), so mcp-term does not do that without consent: confirm on a terminal, or pass --trust-workspace"
            ),
        ));
    }
    let mut lines = vec![
        "a file in the working directory comes with whatever was put there (a cloned repository can ship one)".to_owned(),
    ];
    lines.extend(risks.iter().map(|r| format!("it would {r}")));
    let heading = format!(
        "@{} is defined by a workspace file: {}",
        entry.name,
        entry.source.display()
    );
    if confirm(heading, lines, "use it this once?").await? {
        Ok(())
    } else {
        Err(fail(
            code::USAGE,
            "untrusted",
            format!("{from}: not used (you said no)"),
        ))
    }
}

/// A pending file is data anyone can hand over, so the command it names to start a stdio
/// server runs only if a person at the terminal says yes; otherwise the server must be named
/// again on the command line.
async fn run_pending_command(file: &Path, argv: &[String], opts: &Opts) -> Result<(), Fail> {
    let names = format!(
        "the pending file {} names a command to start the server: {argv:?}",
        file.display()
    );
    let name_it = format!(
        "name the server again on the command line (mcp-term resume {} -- CMD ARGS, a URL or @name)",
        file.display()
    );
    if !interactive(opts) {
        return Err(fail(
            code::USAGE,
            "untrusted",
            format!(
                "{names}; mcp-term does not run a command taken from a pending file: {name_it}, or confirm on a terminal"
            ),
        ));
    }
    let lines = vec![
        format!("it would run the command {argv:?}"),
        "a pending file can come from anyone: run only a command you recognise".to_owned(),
    ];
    let heading = format!(
        "the pending file {} names a command to start the server",
        file.display()
    );
    if confirm(heading, lines, "run it?").await? {
        Ok(())
    } else {
        Err(fail(
            code::USAGE,
            "untrusted",
            format!("{names}; not run (you said no): {name_it}"),
        ))
    }
}

/// The spec to connect to, and the target as recorded in a pending file (no secrets).
async fn spec_of(target: &Target, opts: &Opts) -> Result<(ServerSpec, Value), Fail> {
    Ok(match target {
        Target::Stdio(argv) => (
            ServerSpec::Stdio {
                command: argv[0].clone(),
                args: argv[1..].to_vec(),
                env: Vec::new(),
                cwd: None,
            },
            json!({"stdio": argv}),
        ),
        Target::Url(url) => (
            ServerSpec::Http {
                url: url.clone(),
                headers: Vec::new(),
            },
            json!({"url": url}),
        ),
        Target::Named(name) => {
            let found = config::find(name, &config_files(opts)).map_err(|e| {
                if e.starts_with("no server named") {
                    fail(code::NOT_FOUND, "not_found", e)
                } else {
                    usage(e)
                }
            })?;
            if let Some(choice) = found.choice() {
                eprintln!("mcp-term: {}", text::sanitize_line(&choice));
            }
            if found.entry.scope == Scope::Workspace {
                trust_workspace(&found.entry, opts).await?;
            }
            let spec = config::spec_of(&found.entry, &env_lookup).map_err(usage)?;
            (spec, json!({"server": format!("@{name}")}))
        }
    })
}

fn target_from_json(v: &Value) -> Option<Target> {
    if let Some(argv) = v.get("stdio").and_then(Value::as_array) {
        let argv: Vec<String> = argv
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        return (!argv.is_empty()).then_some(Target::Stdio(argv));
    }
    if let Some(url) = v.get("url").and_then(Value::as_str) {
        return Some(Target::Url(url.to_owned()));
    }
    v.get("server")
        .and_then(Value::as_str)
        .and_then(|s| s.strip_prefix('@'))
        .map(|n| Target::Named(n.to_owned()))
}

fn parse_level(s: &str) -> Result<LoggingLevel, Fail> {
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| usage(format!("--log-level {s}: expected debug, info, notice, warning, error, critical, alert or emergency")))
}

struct Setup {
    responder: Arc<Responder>,
    elicit_form: bool,
    elicit_url: bool,
}

fn setup(opts: &Opts) -> Result<Setup, Fail> {
    let cli = opts
        .answer
        .iter()
        .map(|a| CliAnswer::parse(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let file = match &opts.answers {
        None => None,
        Some(path) => Some(read_json(path, "--answers")?),
    };
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let interactive = interactive(opts);
    let policy = opts.elicit.unwrap_or(if interactive {
        Policy::Prompt
    } else {
        Policy::Fail
    });
    let mut responder = Responder::new(Sources { cli, file }, policy, interactive);
    responder.color = terminal;
    responder.accept_defaults = opts.accept_defaults;
    responder.sampling = opts.sampling.clone();
    responder.open = opts.open;
    responder.exec_timeout = Duration::from_secs(opts.timeout);
    for dir in &opts.roots {
        let abs = std::fs::canonicalize(dir)
            .map_err(|e| usage(format!("--root {}: {e}", dir.display())))?;
        let uri = format!("file://{}", abs.display());
        let name = abs.file_name().map(|n| n.to_string_lossy().into_owned());
        responder.roots.push(
            serde_json::from_value(json!({"uri": uri, "name": name}))
                .map_err(|e| usage(e.to_string()))?,
        );
    }
    let (elicit_form, elicit_url) = match opts.elicit_modes.as_str() {
        "both" | "form,url" | "url,form" => (true, true),
        "form" => (true, false),
        "url" => (false, true),
        "none" => (false, false),
        other => {
            return Err(usage(format!(
                "--elicit-modes {other}: expected form, url, both or none"
            )));
        }
    };
    Ok(Setup {
        responder: Arc::new(responder),
        elicit_form,
        elicit_url,
    })
}

const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

fn read_json(path: &Path, what: &str) -> Result<Value, Fail> {
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .take(MAX_INPUT_BYTES)
            .read_to_string(&mut s)
            .map_err(|e| usage(format!("{what} -: {e}")))?;
        s
    } else {
        let meta = std::fs::metadata(path)
            .map_err(|e| usage(format!("{what} {}: {e}", path.display())))?;
        if meta.len() > MAX_INPUT_BYTES {
            return Err(usage(format!(
                "{what} {}: larger than {MAX_INPUT_BYTES} bytes",
                path.display()
            )));
        }
        std::fs::read_to_string(path)
            .map_err(|e| usage(format!("{what} {}: {e}", path.display())))?
    };
    serde_json::from_str(&text)
        .map_err(|e| usage(format!("{what} {}: not JSON: {e}", path.display())))
}

/// Progress on stderr: a bar on a terminal, a line otherwise.
fn show_progress(p: &mcp::types::notifications::ProgressParams) {
    let v = serde_json::to_value(p).unwrap_or(Value::Null);
    let done = v.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
    let total = v.get("total").and_then(Value::as_f64);
    let message = v
        .get("message")
        .and_then(Value::as_str)
        .map(text::sanitize_line)
        .unwrap_or_default();
    let terminal = std::io::stderr().is_terminal();
    match total {
        Some(t) if t > 0.0 && terminal => {
            let width = 20usize;
            let filled = ((done / t).clamp(0.0, 1.0) * width as f64) as usize;
            eprint!(
                "\r[{}{}] {done}/{t} {message}\u{1b}[K",
                "#".repeat(filled),
                " ".repeat(width - filled)
            );
            if done >= t {
                eprintln!();
            }
        }
        Some(t) => eprintln!("progress {done}/{t} {message}"),
        None => eprintln!("progress {done} {message}"),
    }
}

fn show_log(m: &mcp::types::logging::LoggingMessageParams) {
    let v = serde_json::to_value(m).unwrap_or(Value::Null);
    let level = v.get("level").and_then(Value::as_str).unwrap_or("?");
    let logger = v
        .get("logger")
        .and_then(Value::as_str)
        .map(|l| format!(" {}", text::sanitize(l)))
        .unwrap_or_default();
    let data = match v.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    eprintln!("log [{level}]{logger}: {}", text::sanitize(&data));
}

async fn connect(
    spec: &ServerSpec,
    opts: &Opts,
    setup: &Setup,
    mode: Mode,
    driver: Arc<OnceLock<Arc<Driver>>>,
) -> Result<Client, Fail> {
    let mut builder = Client::builder()
        .client_info("mcp-term", env!("CARGO_PKG_VERSION"))
        .mode(mode)
        .request_timeout(Duration::from_secs(opts.timeout))
        .max_task_wait(Duration::from_secs(opts.task_wait.max(1)))
        .max_rounds(opts.max_rounds)
        .tasks(!opts.no_tasks)
        .log_level(parse_level(&opts.log_level)?)
        .on_progress(|p| show_progress(&p))
        .on_log(|m| show_log(&m))
        .on_notification(|n| {
            if let mcp::types::ServerNotification::ElicitationComplete(p) = n {
                eprintln!(
                    "the server says the URL flow {} is complete",
                    text::sanitize_line(&p.elicitation_id)
                );
            }
        });
    builder = callbacks(builder, setup, driver);
    let connected = match spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).kill_on_drop(true);
            for (k, v) in env {
                cmd.env(k, v);
            }
            for kv in &opts.envs {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| usage(format!("--env {kv}: write K=V")))?;
                cmd.env(k, v);
            }
            if let Some(dir) = opts
                .cwd
                .as_deref()
                .map(Path::to_owned)
                .or_else(|| cwd.as_ref().map(PathBuf::from))
            {
                cmd.current_dir(dir);
            }
            builder.connect_stdio(cmd).await
        }
        ServerSpec::Http { url, headers } => {
            let mut transport = mcp::http::HttpTransport::new(url)
                .map_err(|e| fail(code::TRANSPORT, "transport", e))?;
            if let Some(path) = &opts.ca {
                let pem = std::fs::read(path)
                    .map_err(|e| usage(format!("--ca {}: {e}", path.display())))?;
                transport = transport
                    .add_root_pem(&pem)
                    .map_err(|e| usage(format!("--ca {}: {e}", path.display())))?;
            }
            for (k, v) in headers {
                transport = transport
                    .header(k, v)
                    .map_err(|e| usage(format!("header {k}: {e}")))?;
            }
            for h in &opts.headers {
                let (k, v) = h
                    .split_once(':')
                    .ok_or_else(|| usage(format!("--header {h:?}: write 'Name: value'")))?;
                transport = transport
                    .header(k.trim(), v.trim())
                    .map_err(|e| usage(format!("--header {}: {e}", k.trim())))?;
            }
            if let Some(var) = &opts.bearer_env {
                let token = std::env::var(var)
                    .map_err(|_| usage(format!("--bearer-env {var}: the variable is not set")))?;
                transport = transport
                    .bearer(&token)
                    .map_err(|e| usage(format!("--bearer-env {var}: {e}")))?;
            }
            if opts.oauth {
                use mcp::client::oauth::{HeadlessAuthorizer, OAuth, OAuthConfig};
                let fetch = transport.fetcher();
                let mut config = OAuthConfig::new("http://127.0.0.1:8976/callback");
                config.client_name = "mcp-term".into();
                let authorizer: Arc<dyn mcp::client::oauth::Authorizer> =
                    if setup.responder.interactive {
                        Arc::new(mcp_term::auth::TerminalAuthorizer { open: opts.open })
                    } else {
                        Arc::new(HeadlessAuthorizer::new(fetch.clone()))
                    };
                transport = transport.oauth(Arc::new(OAuth::new(config, fetch, authorizer)));
            }
            builder.connect(transport).await
        }
    };
    connected.map_err(client_fail)
}

/// Registers exactly the callbacks the command line configured: each declares its capability.
fn callbacks(
    mut builder: ClientBuilder,
    setup: &Setup,
    driver: Arc<OnceLock<Arc<Driver>>>,
) -> ClientBuilder {
    fn live(
        driver: &Arc<OnceLock<Arc<Driver>>>,
        key: String,
        request: InputRequest,
    ) -> impl std::future::Future<Output = Result<InputResponse, mcp::types::ErrorObject>> + Send + use<>
    {
        let driver = driver.get().cloned();
        async move {
            match driver {
                Some(d) => d.live(key, request).await,
                None => Err(mcp::types::ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "not ready to answer yet",
                )),
            }
        }
    }
    if setup.elicit_form || setup.elicit_url {
        let d = driver.clone();
        builder = builder
            .elicitation(move |info, params| {
                let f = live(&d, info.key, InputRequest::Elicit(params));
                async move {
                    match f.await? {
                        InputResponse::Elicit(r) => Ok(r),
                        _ => Ok(ElicitResult::cancel()),
                    }
                }
            })
            .elicitation_modes(setup.elicit_form, setup.elicit_url);
    }
    if setup.responder.sampling.is_some() {
        let d = driver.clone();
        builder = builder.sampling(move |info, params| {
            let f = live(&d, info.key, InputRequest::CreateMessage(params));
            async move {
                match f.await? {
                    InputResponse::CreateMessage(r) => Ok(r),
                    _ => Err(mcp::types::ErrorObject::internal("no sampling result")),
                }
            }
        });
    }
    if !setup.responder.roots.is_empty() {
        let d = driver;
        builder = builder.roots(move |info| {
            let f = live(&d, info.key, InputRequest::ListRoots(None));
            async move {
                match f.await? {
                    InputResponse::ListRoots(r) => Ok(r),
                    _ => Err(mcp::types::ErrorObject::internal("no roots")),
                }
            }
        });
    }
    builder
}

/// JSON on stdout: the exact data, with what a terminal would act on escaped.
fn print_json(v: &Value, format: Format) {
    match format {
        Format::Ndjson => println!("{}", text::json_line(v)),
        _ => println!("{}", text::json_pretty(v)),
    }
}

/// A listing: one `first  second` line per item for people (server text sanitized), or the
/// items as JSON.
fn print_list<T: serde::Serialize>(
    list: &[T],
    format: Format,
    columns: impl Fn(&T) -> (&str, &str),
) {
    if format == Format::Human {
        for item in list {
            let (first, second) = columns(item);
            println!(
                "{}  {}",
                text::sanitize_line(first),
                text::sanitize_line(second)
            );
        }
    } else {
        print_json(&serde_json::to_value(list).unwrap_or(Value::Null), format);
    }
}

async fn run(cli: Cli, command: Vec<String>) -> Result<i32, Fail> {
    let Cli { verb, opts } = cli;
    let mut verb = verb;
    let rest = match &mut verb {
        Verb::Info { rest }
        | Verb::Tools { rest, .. }
        | Verb::Prompts { rest }
        | Verb::Resources { rest }
        | Verb::Templates { rest }
        | Verb::Read { rest, .. }
        | Verb::Resume { rest, .. }
        | Verb::Servers { rest } => rest,
        Verb::Call { params, .. } | Verb::Prompt { params, .. } => params,
    };
    let target = split_target(rest, &opts, &command)?;
    if let Verb::Servers { rest } = &verb {
        if !rest.is_empty() {
            return Err(usage(format!(
                "servers takes no arguments, got {}",
                rest.join(" ")
            )));
        }
        let listing = config::listing(&config_files(&opts)).map_err(usage)?;
        if opts.format == Format::Human {
            for e in &listing {
                let shadow = if e["shadowed"] == Value::Bool(true) {
                    " (shadowed)"
                } else {
                    ""
                };
                println!(
                    "{}",
                    text::sanitize_line(&format!(
                        "@{}  {}  {}  {}{shadow}",
                        e["name"].as_str().unwrap_or(""),
                        e["transport"].as_str().unwrap_or(""),
                        e["source"].as_str().unwrap_or(""),
                        e["scope"].as_str().unwrap_or("")
                    ))
                );
            }
        } else {
            print_json(
                &serde_json::to_value(&listing).unwrap_or(Value::Null),
                opts.format,
            );
        }
        return Ok(code::OK);
    }
    let pending_file = match &verb {
        Verb::Resume { file, .. } => {
            let v = read_json(file, "resume")?;
            let p: Pending = serde_json::from_value(v).map_err(|e| {
                usage(format!(
                    "resume {}: not a pending file: {e}",
                    file.display()
                ))
            })?;
            Some(p)
        }
        _ => None,
    };
    let target = match (target, &pending_file) {
        (Some(t), _) => t,
        (None, Some(p)) => {
            let t = p
                .target
                .as_ref()
                .and_then(target_from_json)
                .ok_or_else(|| usage("the pending file names no server; give one"))?;
            if let (Target::Stdio(argv), Verb::Resume { file, .. }) = (&t, &verb) {
                run_pending_command(file, argv, &opts).await?;
            }
            t
        }
        (None, None) => return Err(usage("no server: give -- CMD ARGS, a URL, or @name")),
    };
    let (spec, target_json) = spec_of(&target, &opts).await?;
    let setup = setup(&opts)?;
    let mode = match (&pending_file, opts.era) {
        (Some(p), _) => Mode::Pinned(p.protocol_version.clone()),
        (None, Era::Auto) => Mode::Auto,
        (None, Era::Modern) => Mode::Pinned("2026-07-28".into()),
        (None, Era::Legacy) => Mode::Legacy,
    };
    let cell = Arc::new(OnceLock::new());
    let client = connect(&spec, &opts, &setup, mode, cell.clone()).await?;
    let negotiated = client.negotiated();
    let server_name = negotiated
        .as_ref()
        .and_then(|n| n.server_info.as_ref().map(|i| i.name.clone()))
        .unwrap_or_else(|| match &target {
            Target::Stdio(argv) => Path::new(&argv[0])
                .file_name()
                .map_or_else(|| argv[0].clone(), |n| n.to_string_lossy().into_owned()),
            Target::Url(u) => u.clone(),
            Target::Named(n) => format!("@{n}"),
        });
    let (stuck_tx, mut stuck_rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = Arc::new(Driver {
        client: client.clone(),
        responder: setup.responder.clone(),
        max_rounds: opts.max_rounds,
        trace: opts.trace_rounds,
        server: server_name,
        target: Some(target_json),
        rounds: std::sync::Mutex::new(Vec::new()),
        ndjson: opts.format == Format::Ndjson,
        timeout: Some(Duration::from_secs(opts.timeout)),
        task_wait: Duration::from_secs(opts.task_wait.max(1)),
        live_rounds: Default::default(),
        during: Default::default(),
        stuck: stuck_tx,
    });
    let _ = cell.set(driver.clone());
    let modern = client.era() == Some(mcp::types::version::Era::Modern);
    let format = opts.format;

    let call = match verb {
        Verb::Info { .. } => {
            let n = client.negotiated();
            let info = json!({
                "protocolVersion": client.protocol_version(),
                "era": if modern { "2026-07-28 (stateless)" } else { "2025-11-25 (session)" },
                "serverInfo": n.as_ref().and_then(|n| n.server_info.clone()),
                "capabilities": n.as_ref().and_then(|n| n.capabilities.clone()),
                "instructions": n.as_ref().and_then(|n| n.instructions.clone()),
                "clientCapabilities": client.capabilities(),
            });
            if format == Format::Human {
                println!("protocol: {}", info["era"].as_str().unwrap_or(""));
                if let Some(i) = n.as_ref().and_then(|n| n.server_info.as_ref()) {
                    println!(
                        "server: {} {}",
                        text::sanitize_line(&i.name),
                        text::sanitize_line(&i.version)
                    );
                }
                println!(
                    "server capabilities: {}",
                    text::json_line(&info["capabilities"])
                );
                if let Some(instructions) = info["instructions"].as_str() {
                    println!("instructions: {}", text::sanitize(instructions));
                }
                println!("client advertised: {}", info["clientCapabilities"]);
            } else {
                print_json(&info, format);
            }
            client.close().await;
            return Ok(code::OK);
        }
        Verb::Tools { schema, .. } => {
            let tools = client.list_all_tools().await.map_err(client_fail)?;
            if format == Format::Human {
                for t in &tools {
                    let desc = t
                        .description
                        .as_deref()
                        .map(|d| format!("  {}", text::sanitize(d)))
                        .unwrap_or_default();
                    println!("{}{desc}", text::sanitize_line(&t.name));
                    if schema {
                        let s = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
                        for line in text::sanitize(&s).lines() {
                            println!("    {line}");
                        }
                    }
                }
            } else {
                print_json(&serde_json::to_value(&tools).unwrap_or(Value::Null), format);
            }
            client.close().await;
            return Ok(code::OK);
        }
        Verb::Prompts { .. } => {
            let prompts = client.list_all_prompts().await.map_err(client_fail)?;
            if format == Format::Human {
                for p in &prompts {
                    let args: Vec<String> = p
                        .arguments
                        .iter()
                        .flatten()
                        .map(|a| {
                            format!(
                                "{}{}",
                                a.name,
                                if a.required == Some(true) { "*" } else { "" }
                            )
                        })
                        .collect();
                    let desc = p
                        .description
                        .as_deref()
                        .map(|d| format!("  {}", text::sanitize(d)))
                        .unwrap_or_default();
                    println!(
                        "{}({}){desc}",
                        text::sanitize_line(&p.name),
                        text::sanitize_line(&args.join(", "))
                    );
                }
            } else {
                print_json(
                    &serde_json::to_value(&prompts).unwrap_or(Value::Null),
                    format,
                );
            }
            client.close().await;
            return Ok(code::OK);
        }
        Verb::Resources { .. } => {
            let list = client.list_all_resources().await.map_err(client_fail)?;
            print_list(&list, format, |r| (&r.uri, &r.name));
            client.close().await;
            return Ok(code::OK);
        }
        Verb::Templates { .. } => {
            let list = client
                .list_all_resource_templates()
                .await
                .map_err(client_fail)?;
            print_list(&list, format, |r| (&r.uri_template, &r.name));
            client.close().await;
            return Ok(code::OK);
        }
        Verb::Call { name, params, args } => {
            let tools = client.list_all_tools().await.map_err(client_fail)?;
            let Some(tool) = tools.iter().find(|t| t.name == name) else {
                let hint = args::suggest(&name, tools.iter().map(|t| t.name.as_str()))
                    .map(|s| format!("; did you mean {s}?"))
                    .unwrap_or_default();
                return Err(fail(
                    code::NOT_FOUND,
                    "not_found",
                    format!("the server has no tool {name:?}{hint}"),
                ));
            };
            let base = match args.as_deref() {
                None => None,
                Some("-") => Some(read_json(Path::new("-"), "--args")?),
                Some(a) if a.starts_with('@') => Some(read_json(Path::new(&a[1..]), "--args")?),
                Some(a) => Some(
                    serde_json::from_str(a).map_err(|e| usage(format!("--args: not JSON: {e}")))?,
                ),
            };
            let arguments = args::build(base, &params, &tool.input_schema).map_err(usage)?;
            Call::Tool {
                name,
                arguments: Value::Object(arguments),
            }
        }
        Verb::Prompt { name, params } => {
            let prompts = client.list_all_prompts().await.map_err(client_fail)?;
            let Some(p) = prompts.iter().find(|p| p.name == name) else {
                let hint = args::suggest(&name, prompts.iter().map(|p| p.name.as_str()))
                    .map(|s| format!("; did you mean {s}?"))
                    .unwrap_or_default();
                return Err(fail(
                    code::NOT_FOUND,
                    "not_found",
                    format!("the server has no prompt {name:?}{hint}"),
                ));
            };
            let known: Vec<&str> = p
                .arguments
                .iter()
                .flatten()
                .map(|a| a.name.as_str())
                .collect();
            let mut arguments = BTreeMap::new();
            for pair in &params {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| usage(format!("{pair:?}: write name=value")))?;
                if !known.contains(&k) {
                    let hint = args::suggest(k, known.iter().copied())
                        .map(|s| format!("; did you mean {s}?"))
                        .unwrap_or_default();
                    return Err(usage(format!("the prompt has no argument {k:?}{hint}")));
                }
                arguments.insert(k.to_owned(), v.to_owned());
            }
            Call::Prompt { name, arguments }
        }
        Verb::Read { uri, out, .. } => {
            let call = Call::Read { uri };
            let finished = drive(&driver, &call, modern, &mut stuck_rx, None).await;
            return finish(&driver, &call, finished, format, out.as_deref()).await;
        }
        Verb::Resume { .. } => {
            let p = pending_file.expect("read above");
            if !modern {
                return Err(usage(
                    "the server no longer speaks the pending file's protocol version",
                ));
            }
            let call = p.call.clone();
            let finished = drive(&driver, &call, modern, &mut stuck_rx, Some(p)).await;
            return finish(&driver, &call, finished, format, None).await;
        }
        Verb::Servers { .. } => unreachable!("handled above"),
    };
    let finished = drive(&driver, &call, modern, &mut stuck_rx, None).await;
    finish(&driver, &call, finished, format, None).await
}

async fn drive(
    driver: &Arc<Driver>,
    call: &Call,
    modern: bool,
    stuck: &mut tokio::sync::mpsc::UnboundedReceiver<Finished>,
    resume: Option<Pending>,
) -> Finished {
    if !modern {
        return driver.legacy(call, stuck).await;
    }
    match resume {
        None => driver.modern(call, None, None, 0).await,
        // A task keeps its own state on the server: poll it, answer what is still open (with
        // what the earlier process already answered) and follow it to the end.
        Some(Pending {
            task: Some(task),
            round,
            answered,
            ..
        }) => match driver.client.attach_task(task, driver.timeout) {
            Ok(handle) => {
                driver
                    .task(call, handle, round.saturating_sub(1), answered)
                    .await
            }
            Err(e) => Finished::Client(e),
        },
        Some(p) => {
            // Answer what the earlier process could not, keep what it answered, and retry with
            // the state exactly as the server sent it.
            driver.record(mcp_term::rounds::RoundTrace::of(p.round, &p.input_required));
            let answered: InputResponses = p.answered.clone();
            match driver
                .answer_round(call, p.round, &p.input_required, answered)
                .await
            {
                Ok(responses) => {
                    driver
                        .modern(
                            call,
                            Some(responses),
                            p.input_required.request_state.clone(),
                            p.round,
                        )
                        .await
                }
                Err(f) => f,
            }
        }
    }
}

async fn finish(
    driver: &Arc<Driver>,
    call: &Call,
    finished: Finished,
    format: Format,
    out: Option<&Path>,
) -> Result<i32, Fail> {
    let rounds = driver.rounds.lock().map(|r| r.clone()).unwrap_or_default();
    let result = match finished {
        Finished::Done(v) => v,
        Finished::Pending(p) => {
            let v = serde_json::to_value(&*p).unwrap_or(Value::Null);
            print_json(
                &v,
                if format == Format::Ndjson {
                    Format::Ndjson
                } else {
                    Format::Json
                },
            );
            driver.client.close().await;
            // `resume` does not run a command from the file: a stdio server is named again.
            let again = if p.target.as_ref().is_some_and(|t| t.get("stdio").is_some()) {
                " -- CMD ARGS"
            } else {
                ""
            };
            return Err(fail(
                code::INPUT_REQUIRED,
                "input_required",
                format!(
                    "input required: {} (save the JSON above and finish with: mcp-term resume FILE --answers ANSWERS.json{again})",
                    p.reason
                ),
            ));
        }
        Finished::PendingLegacy(v) => {
            print_json(
                &v,
                if format == Format::Ndjson {
                    Format::Ndjson
                } else {
                    Format::Json
                },
            );
            let reason = v["reason"].as_str().unwrap_or("input required").to_owned();
            driver.client.close().await;
            return Err(fail(code::INPUT_REQUIRED, "input_required", reason));
        }
        Finished::Refused(why) => return Err(fail(code::REFUSED, "refused", why)),
        Finished::MaxRounds(n) => {
            return Err(fail(
                code::MAX_ROUNDS,
                "max_rounds",
                format!("the server kept asking past {n} round(s) (--max-rounds)"),
            ));
        }
        Finished::Client(e) => return Err(client_fail(e)),
        Finished::Usage(why) => return Err(usage(why)),
    };
    driver.client.close().await;
    let is_error =
        matches!(call, Call::Tool { .. }) && result.get("isError") == Some(&Value::Bool(true));
    if let (Call::Read { .. }, Some(path)) = (call, out) {
        let mut bytes = Vec::new();
        for c in result
            .get("contents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(t) = c.get("text").and_then(Value::as_str) {
                bytes.extend_from_slice(t.as_bytes());
            } else if let Some(b) = c.get("blob").and_then(Value::as_str) {
                use base64::Engine as _;
                bytes.extend(
                    base64::engine::general_purpose::STANDARD
                        .decode(b)
                        .map_err(|e| {
                            fail(
                                code::PROTOCOL,
                                "protocol",
                                format!("a blob is not base64: {e}"),
                            )
                        })?,
                );
            }
        }
        std::fs::write(path, &bytes)
            .map_err(|e| usage(format!("--out {}: {e}", path.display())))?;
        eprintln!("wrote {} byte(s) to {}", bytes.len(), path.display());
        return Ok(code::OK);
    }
    match format {
        Format::Human => print_human(call, &result),
        Format::Json => print_json(&json!({"result": result, "rounds": rounds}), Format::Json),
        Format::Ndjson => println!(
            "{}",
            text::json_line(&json!({"event": "result", "result": result}))
        ),
    }
    Ok(if is_error { code::TOOL_ERROR } else { code::OK })
}

/// A result for people. Every line holds the server's text (a role, a type, a URI, content),
/// so the whole text is sanitized once, where it is printed.
fn print_human(call: &Call, result: &Value) {
    let mut shown = String::new();
    human(&mut shown, call, result);
    print!("{}", text::sanitize(&shown));
}

fn human(out: &mut String, call: &Call, result: &Value) {
    use std::fmt::Write as _;
    let blocks: Vec<Value> = match call {
        Call::Tool { .. } => result
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        Call::Prompt { .. } => {
            if let Some(d) = result.get("description").and_then(Value::as_str) {
                let _ = writeln!(out, "{d}");
            }
            for m in result
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
                let _ = write!(out, "{}: ", text::sanitize_line(role));
                human_block(out, m.get("content").unwrap_or(&Value::Null));
            }
            return;
        }
        Call::Read { .. } => {
            for c in result
                .get("contents")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match c.get("text").and_then(Value::as_str) {
                    Some(t) => {
                        let _ = writeln!(out, "{t}");
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "[binary {} from {}; use --out FILE]",
                            text::sanitize_line(
                                c.get("mimeType").and_then(Value::as_str).unwrap_or("data")
                            ),
                            text::sanitize_line(c.get("uri").and_then(Value::as_str).unwrap_or(""))
                        );
                    }
                }
            }
            return;
        }
    };
    for b in &blocks {
        human_block(out, b);
    }
    if let Some(s) = result.get("structuredContent") {
        let _ = writeln!(
            out,
            "structured: {}",
            serde_json::to_string_pretty(s).unwrap_or_default()
        );
    }
}

/// One content block for people; the text it writes is sanitized by the caller.
fn human_block(out: &mut String, b: &Value) {
    use std::fmt::Write as _;
    let one = |key: &str| text::sanitize_line(b.get(key).and_then(Value::as_str).unwrap_or(""));
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
    let _ = match kind {
        "text" => writeln!(
            out,
            "{}",
            b.get("text").and_then(Value::as_str).unwrap_or("")
        ),
        "image" | "audio" => writeln!(
            out,
            "[{kind} {}, {} base64 characters]",
            b.get("mimeType")
                .and_then(Value::as_str)
                .map_or_else(|| "?".to_owned(), text::sanitize_line),
            b.get("data").and_then(Value::as_str).map_or(0, str::len)
        ),
        "resource_link" => writeln!(out, "link: {}", one("uri")),
        "resource" => {
            let r = b.get("resource").cloned().unwrap_or(Value::Null);
            match r.get("text").and_then(Value::as_str) {
                Some(t) => writeln!(out, "{t}"),
                None => writeln!(
                    out,
                    "[embedded resource {}]",
                    text::sanitize_line(r.get("uri").and_then(Value::as_str).unwrap_or(""))
                ),
            }
        }
        _ => writeln!(out, "{b}"),
    };
}
