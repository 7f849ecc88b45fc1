//! `cargo xtask conformance`: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, run through the shared `run-conformance.sh`) against
//! the `conformance-server` and `conformance-client` examples.
//!
//! - Server: both requirement sets (2025-11-25 and 2026-07-28) against one
//!   `conformance-server`, started and stopped by the script.
//! - Client: one leg per requirement set, with `conformance/expected-failures.yml` as the
//!   baseline (empty today: every scored client scenario, OAuth included, passes).
//!
//! Prints each leg's `conformance: N passed, M failed` line and fails when any scored scenario
//! failed, or the baseline is stale.

use std::env;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, run, workspace_root};

/// The harness's per-scenario timeout for the client legs (its suites run in parallel).
const CLIENT_TIMEOUT_MS: &str = "60000";

/// The script that installs and drives the harness: `MCP_CONFORMANCE_SCRIPT`, or
/// `<workspace>/../shared/tools/run-conformance.sh`.
fn script(root: &Path) -> Result<PathBuf, String> {
    let path = match env::var_os("MCP_CONFORMANCE_SCRIPT") {
        Some(path) => PathBuf::from(path),
        None => root
            .join("..")
            .join("shared")
            .join("tools")
            .join("run-conformance.sh"),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "the conformance runner {} does not exist (set MCP_CONFORMANCE_SCRIPT)",
            path.display()
        ))
    }
}

/// A free loopback port for the server under test.
fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("could not find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("could not find a free port: {e}"))
}

/// The directory cargo puts example binaries in.
fn examples_dir(root: &Path) -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("debug")
        .join("examples")
}

struct Leg {
    name: String,
    ok: bool,
    summary: Option<String>,
}

/// Runs one invocation of the script, echoing its output, and keeps its closing
/// `conformance: N passed, M failed` line. Without a baseline every scored scenario must
/// pass; with one, the harness's exit code applies the baseline (listed scenarios may fail,
/// and must: a listed scenario that passes is stale).
fn leg(
    name: &str,
    script: &Path,
    args: &[String],
    out: &Path,
    baseline: bool,
) -> Result<Leg, String> {
    let mut command = Command::new("bash");
    command
        .arg(script)
        .args(args)
        .env("CONFORMANCE_OUT", out)
        .current_dir(workspace_root());
    eprintln!("xtask: conformance leg `{name}`: {command:?}");
    let output = command
        .output()
        .map_err(|e| format!("could not start {}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    let summary = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("conformance: "))
        .map(str::to_owned);
    let scored_ok = summary.as_deref().is_some_and(|s| s.ends_with(" 0 failed"));
    Ok(Leg {
        name: name.to_owned(),
        ok: output.status.success() && (baseline || scored_ok),
        summary,
    })
}

pub(crate) fn conformance(extra: &[String]) -> Result<(), String> {
    if !extra.is_empty() {
        return Err(format!(
            "usage: cargo xtask conformance (no arguments; got {extra:?})"
        ));
    }
    let root = workspace_root();
    let script = script(&root)?;
    for example in ["conformance-server", "conformance-client"] {
        run(cargo().args(["build", "-p", "mcp-examples", "--example", example]))?;
    }
    let bin = examples_dir(&root);
    let server = bin.join("conformance-server");
    let client = bin.join("conformance-client");
    let baseline = root.join("conformance").join("expected-failures.yml");
    let out = root.join("target").join("conformance");

    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut legs = vec![leg(
        "server",
        &script,
        &[
            "server".into(),
            "--url".into(),
            url,
            "--server-cmd".into(),
            format!("'{}' --port {port}", server.display()),
            "--requirements".into(),
            "2025-11-25,2026-07-28".into(),
        ],
        &out.join("server"),
        false,
    )?];
    for requirements in ["2025-11-25", "2026-07-28"] {
        legs.push(leg(
            &format!("client {requirements}"),
            &script,
            &[
                "client".into(),
                "--cmd".into(),
                format!("'{}'", client.display()),
                "--requirements".into(),
                requirements.into(),
                "--timeout".into(),
                CLIENT_TIMEOUT_MS.into(),
                "--expected-failures".into(),
                baseline.display().to_string(),
            ],
            &out.join(format!("client-{requirements}")),
            true,
        )?);
    }

    println!("\n=================== cargo xtask conformance ===================");
    println!(
        "(a scenario listed in {} counts as failed in its leg's line but passes the leg)",
        baseline.display()
    );
    for leg in &legs {
        println!(
            "{:<18} {}{}",
            leg.name,
            leg.summary
                .as_deref()
                .unwrap_or("conformance: no summary line (see the log above)"),
            if leg.ok { "" } else { "  <- FAILED" }
        );
    }
    let failed: Vec<&str> = legs
        .iter()
        .filter(|l| !l.ok)
        .map(|l| l.name.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "conformance failed in: {} (results under {})",
            failed.join(", "),
            out.display()
        ))
    }
}
