//! The deployed base in `cargo xtask interop`: the SDK lines most MCP clients and servers in the
//! wild are still built on, against ours, both ways.
//!
//! - The TypeScript SDK v1 (`@modelcontextprotocol/sdk` 1.32.2, `examples/deployed/typescript`,
//!   installed with `npm ci` from its `package-lock.json`) and the Python SDK 1.x (`mcp` 1.30.0,
//!   `examples/deployed/python`, installed into `target/py1` from `requirements.lock`, every
//!   package at an exact version, `--no-deps`): their clients against our `interop-server`, and
//!   their servers (stateful Streamable HTTP, as their READMEs set them up) against our
//!   `interop-client` and `mcp-term`.
//! - The MCP Inspector's CLI (`@modelcontextprotocol/inspector` 1.0.3, `--cli`) against our
//!   `interop-server`.
//!
//! These speak 2025-11-25 only, so our clients run in the era modes that can reach them:
//! `auto` (a `server/discover` probe that such a server refuses, then `initialize`) and pinned
//! 2025-11-25. Each cell runs over stdio and over HTTP on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use super::interop::{
    CELL_TIMEOUT, Server, aim, finish, free_port, npm_env, spawn, spawn_to, wait_ready,
    wait_with_timeout,
};
use super::{venv_with, workspace_root};

/// Where the deployed base's scripts, manifests and lockfiles live.
const DIR: &str = "examples/deployed";
/// The one era these SDK lines speak.
const LEGACY: &str = "2025-11-25";

/// A program of the deployed base, and the name its server gives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sdk {
    Python,
    TypeScript,
}

impl Sdk {
    fn name(self) -> &'static str {
        match self {
            Sdk::Python => "python 1.30",
            Sdk::TypeScript => "typescript v1",
        }
    }

    fn server_name(self) -> &'static str {
        match self {
            Sdk::Python => "interop-deployed-python",
            Sdk::TypeScript => "interop-deployed-typescript",
        }
    }
}

/// What runs in a cell.
#[derive(Clone, Copy)]
enum Check {
    /// The SDK's client drives our `interop-server` through every 2025-11-25 flow.
    PeerClient(Sdk),
    /// Our `interop-client` drives the SDK's server, probing (`auto`) or pinned to 2025-11-25.
    InteropClient(Sdk, bool),
    /// `mcp-term info` against the SDK's server, `auto` or pinned.
    TermInfo(Sdk, bool),
    /// `mcp-term call delete_folder`, its question answered with `--answer`, `auto`.
    TermCall(Sdk),
    /// The Inspector's CLI lists our tools (`false`) or calls `delete_folder` (`true`).
    Inspector(bool),
}

impl Check {
    fn name(self) -> String {
        let era = |auto: bool| if auto { "auto" } else { LEGACY };
        match self {
            Check::PeerClient(sdk) => format!("{} client -> rust server", sdk.name()),
            Check::InteropClient(sdk, auto) => {
                format!("interop-client ({}) -> {} server", era(auto), sdk.name())
            }
            Check::TermInfo(sdk, auto) => {
                format!("mcp-term info ({}) -> {} server", era(auto), sdk.name())
            }
            Check::TermCall(sdk) => format!("mcp-term call (auto) -> {} server", sdk.name()),
            Check::Inspector(call) => {
                let method = if call { "tools/call" } else { "tools/list" };
                format!("inspector 1.0.3 cli {method} -> rust server")
            }
        }
    }

    /// The SDK whose server the cell runs, or `None` when the server is ours.
    fn peer_server(self) -> Option<Sdk> {
        match self {
            Check::PeerClient(_) | Check::Inspector(_) => None,
            Check::InteropClient(sdk, _) | Check::TermInfo(sdk, _) | Check::TermCall(sdk) => {
                Some(sdk)
            }
        }
    }
}

/// The programs the cells start.
pub(crate) struct Programs {
    python: PathBuf,
    node: PathBuf,
    rust_server: PathBuf,
    rust_client: PathBuf,
    term: PathBuf,
    logs: PathBuf,
}

impl Programs {
    pub(crate) fn new(
        node: &Path,
        rust_server: &Path,
        rust_client: &Path,
        target: &Path,
    ) -> Result<Self, String> {
        let root = workspace_root();
        npm_env(&root.join(DIR).join("typescript"))?;
        let python = python1_env(&root, target)?;
        let logs = target.join("interop").join("deployed");
        std::fs::create_dir_all(&logs)
            .map_err(|e| format!("could not create {}: {e}", logs.display()))?;
        Ok(Programs {
            python,
            node: node.to_owned(),
            rust_server: rust_server.to_owned(),
            rust_client: rust_client.to_owned(),
            term: target
                .join("debug")
                .join(format!("mcp-term{}", std::env::consts::EXE_SUFFIX)),
            logs,
        })
    }

    fn script(sdk: Sdk, what: &str) -> PathBuf {
        let (dir, file) = match sdk {
            Sdk::Python => ("python", format!("{what}.py")),
            Sdk::TypeScript => ("typescript", format!("{what}.mjs")),
        };
        workspace_root().join(DIR).join(dir).join(file)
    }

    /// The command that runs `sdk`'s script `what` (`server` or `client`).
    fn sdk_command(&self, sdk: Sdk, what: &str) -> Command {
        let mut command = match sdk {
            Sdk::Python => {
                let mut c = Command::new(&self.python);
                c.env("PYTHONUNBUFFERED", "1");
                c
            }
            Sdk::TypeScript => Command::new(&self.node),
        };
        command.arg(Self::script(sdk, what));
        command
    }

    /// The server of a cell: the SDK's, or our `interop-server`, on stdio or at `listen`.
    fn server(&self, check: Check, listen: Option<u16>) -> Command {
        let mut command = match check.peer_server() {
            Some(sdk) => {
                let mut c = self.sdk_command(sdk, "server");
                match listen {
                    Some(port) => c.arg("--http").arg(port.to_string()),
                    None => c.arg("--stdio"),
                };
                c
            }
            None => {
                let mut c = Command::new(&self.rust_server);
                match listen {
                    Some(port) => c.arg("--http").arg(format!("127.0.0.1:{port}")),
                    None => c.arg("--stdio"),
                };
                c
            }
        };
        command.current_dir(workspace_root());
        command
    }

    /// The client of a cell, aimed at `url` or told to start `server` itself.
    fn client(&self, check: Check, url: Option<&str>, server: &Command) -> Command {
        let era = |auto: bool| if auto { "auto" } else { LEGACY };
        let mut command = match check {
            Check::PeerClient(sdk) => self.sdk_command(sdk, "client"),
            Check::InteropClient(_, auto) => {
                let mut c = Command::new(&self.rust_client);
                c.args(["--era", LEGACY]);
                if auto {
                    c.arg("--probe");
                }
                c
            }
            Check::TermInfo(_, auto) => {
                let mut c = Command::new(&self.term);
                c.args(["info", "--format", "json", "--era", era(auto)]);
                c
            }
            Check::TermCall(_) => {
                let mut c = Command::new(&self.term);
                c.args(["call", "delete_folder", "path=/tmp/project"]);
                c.args(["--answer", "ok=true", "--format", "json", "--era", "auto"]);
                c
            }
            Check::Inspector(call) => return self.inspector(call, url, server),
        };
        // mcp-term takes the URL as a positional argument.
        let flag = match check {
            Check::TermInfo(..) | Check::TermCall(_) => "",
            _ => "--url",
        };
        aim(&mut command, url.map(|u| (flag, u)), server);
        command
    }
}

impl Programs {
    /// The Inspector's CLI (`--cli`): the target first (its options take several values),
    /// then the method, and a stdio server's own arguments after `--`.
    fn inspector(&self, call: bool, url: Option<&str>, server: &Command) -> Command {
        let cli = "typescript/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js";
        let mut command = Command::new(&self.node);
        command
            .arg(workspace_root().join(DIR).join(cli))
            .arg("--cli");
        match url {
            Some(url) => command.args([url, "--transport", "http"]),
            None => command.arg(server.get_program()),
        };
        if call {
            command.args(["--method", "tools/call", "--tool-name", "delete_folder"]);
            command.args(["--tool-arg", "path=/tmp/empty"]);
        } else {
            command.args(["--method", "tools/list"]);
        }
        if url.is_none() {
            command.arg("--").args(server.get_args());
        }
        command.current_dir(workspace_root());
        command
    }
}

/// Every deployed-base cell: `(name, check, over HTTP)`.
fn cells() -> Vec<(String, Check, bool)> {
    let mut checks = vec![Check::Inspector(false), Check::Inspector(true)];
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        checks.extend([
            Check::PeerClient(sdk),
            Check::InteropClient(sdk, true),
            Check::InteropClient(sdk, false),
            Check::TermInfo(sdk, true),
            Check::TermInfo(sdk, false),
            Check::TermCall(sdk),
        ]);
    }
    let mut cells = Vec::new();
    for check in checks {
        for http in [false, true] {
            let wire = if http { "http " } else { "stdio" };
            cells.push((format!("{:<52}  {wire}", check.name()), check, http));
        }
    }
    cells
}

/// Runs every deployed-base cell, printing a line each; returns (passed, failed).
pub(crate) fn run_cells(programs: &Programs) -> (usize, usize) {
    let (mut passed, mut failed) = (0, 0);
    for (index, (name, check, http)) in cells().into_iter().enumerate() {
        let started = Instant::now();
        let outcome = run_cell(programs, index, check, http);
        crate::interop::count(
            crate::interop::report_cell(&format!("deployed: {name}"), started, outcome),
            &mut passed,
            &mut failed,
        );
    }
    (passed, failed)
}

fn run_cell(programs: &Programs, index: usize, check: Check, http: bool) -> Result<String, String> {
    let log = |suffix: &str| programs.logs.join(format!("cell-{index:02}.{suffix}"));
    let mut server = None;
    let url = if http {
        let addr = free_port()?;
        let mut command = programs.server(check, Some(addr.port()));
        let child = spawn(&mut command, &log("server.log"))?;
        let guard = server.insert(Server(child));
        wait_ready(&mut guard.0, addr)?;
        Some(format!("http://{addr}/mcp"))
    } else {
        None
    };
    let stdio_server = programs.server(check, None);
    let mut client = programs.client(check, url.as_deref(), &stdio_server);
    let (out, err) = (log("client.out"), log("client.err"));
    let mut child = spawn_to(&mut client, &out, &err)?;
    let status = wait_with_timeout(&mut child, CELL_TIMEOUT);
    drop(server);
    let summary = finish(status, &out, &err, "client", CELL_TIMEOUT)?;
    let output = std::fs::read_to_string(&out).unwrap_or_default();
    match check {
        Check::PeerClient(_) | Check::InteropClient(..) => Ok(summary),
        Check::TermInfo(sdk, _) => term_info(&output, sdk),
        Check::TermCall(_) => term_call(&output),
        Check::Inspector(call) => inspector(&output, call),
    }
}

fn json(output: &str, what: &str) -> Result<Value, String> {
    serde_json::from_str(output).map_err(|e| format!("{what} printed no JSON ({e}):\n{output}"))
}

/// `mcp-term info --format json` reached the SDK's server in a 2025-11-25 session.
fn term_info(output: &str, sdk: Sdk) -> Result<String, String> {
    let info = json(output, "mcp-term info")?;
    let version = info["protocolVersion"].as_str().unwrap_or_default();
    let name = info["serverInfo"]["name"].as_str().unwrap_or_default();
    if version != LEGACY || name != sdk.server_name() {
        return Err(format!(
            "mcp-term info: protocolVersion {version:?}, server {name:?}; want {LEGACY:?}, {:?}",
            sdk.server_name()
        ));
    }
    Ok(format!("{name}, {version}"))
}

/// `mcp-term call delete_folder` answered the live question and got the tool's text.
fn term_call(output: &str) -> Result<String, String> {
    let call = json(output, "mcp-term call")?;
    let text = call["result"]["content"][0]["text"].as_str();
    let asked = &call["rounds"][0]["methods"];
    if text != Some("deleted /tmp/project") || *asked != serde_json::json!(["elicitation/create"]) {
        return Err(format!(
            "mcp-term call: text {text:?}, first round's questions {asked}; want \"deleted /tmp/project\" after one elicitation/create\n{output}"
        ));
    }
    Ok("deleted /tmp/project, one question answered".to_owned())
}

/// The Inspector's CLI listed our tools (and `delete_folder` among them), or called it.
fn inspector(output: &str, call: bool) -> Result<String, String> {
    // The CLI prints a deprecation notice before the JSON.
    let start = output.find('{').unwrap_or(output.len());
    let listed = json(&output[start..], "the Inspector's CLI")?;
    if call {
        let text = listed["content"][0]["text"].as_str();
        if text != Some("deleted /tmp/empty") {
            return Err(format!(
                "tools/call: text {text:?}, want \"deleted /tmp/empty\""
            ));
        }
        return Ok("tools/call: deleted /tmp/empty".to_owned());
    }
    let tools: Vec<&str> = listed["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    if !tools.contains(&"delete_folder") {
        return Err(format!("tools/list: no delete_folder in {tools:?}"));
    }
    Ok(format!("tools/list: {} tools", tools.len()))
}

/// The `target/py1` virtual environment with the Python SDK 1.x, installed from the lockfile
/// (every package at an exact version, nothing resolved afresh), again only when it changes.
fn python1_env(root: &Path, target: &Path) -> Result<PathBuf, String> {
    let lock = root.join(DIR).join("python").join("requirements.lock");
    let wanted =
        std::fs::read(&lock).map_err(|e| format!("could not read {}: {e}", lock.display()))?;
    let lock = lock.to_string_lossy();
    venv_with(&target.join("py1"), &wanted, &["--no-deps", "-r", &lock])
        .map_err(|e| format!("{e} (pip installs the Python SDK 1.x for the deployed-base cells)"))
}
