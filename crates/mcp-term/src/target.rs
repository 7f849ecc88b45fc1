//! Which server to talk to: the target on the command line, an `@name` from a config file
//! (a workspace one only with consent), or the one a pending file names.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use mcp_term::code;
use mcp_term::config::{self, Scope, ServerSpec};
use mcp_term::{prompt, text};

use crate::cli::Opts;
use crate::fail::{Fail, fail, usage};

/// The target as parsed from the command line.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Stdio(Vec<String>),
    Url(String),
    Named(String),
}

fn is_target(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://") || s.starts_with('@')
}

pub(crate) fn split_target(
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

pub(crate) fn config_files(opts: &Opts) -> Vec<config::Source> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    config::candidates(opts.config.as_deref(), &cwd, home.as_deref())
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether a person is there to ask: stdin and stderr are a terminal, or `--tty`.
pub(crate) fn interactive(opts: &Opts) -> bool {
    (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) || opts.tty
}

/// Asks a yes-or-no question on stdin/stderr, off the async threads (so Ctrl-C still works).
pub(crate) async fn confirm(
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
pub(crate) async fn run_pending_command(
    file: &Path,
    argv: &[String],
    opts: &Opts,
) -> Result<(), Fail> {
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
pub(crate) async fn spec_of(target: &Target, opts: &Opts) -> Result<(ServerSpec, Value), Fail> {
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

pub(crate) fn target_from_json(v: &Value) -> Option<Target> {
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
