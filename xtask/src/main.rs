//! Project automation, run as `cargo xtask <command>`.
//!
//! `cargo xtask` runs the `xtask-setup` crate first (`xtask/setup`): it checks, and installs
//! where it can, what the command needs from the machine, then runs this program.
//!
//! - `setup`: what every suite needs from the machine (packages, toolchains, tools), installed
//!   as root or named with the command that installs it (see `xtask/setup`).
//! - `layers`: fails when a crate depends on a crate above it in the layer table of DESIGN.md,
//!   or on a third-party crate its row does not allow, or when a tracked file refers to a path
//!   outside the repository (a folder beside the clone, a machine's absolute paths).
//! - `test`: the README's test command: layers, the Python interop environment, then every
//!   test of the workspace (unit, integration, doc).
//! - `ci`: what `.ci/run` runs after installing tools: fmt, clippy, `deny`, `release
//!   --dry-run`, `test`, `conformance`, `interop`, `attack --quick`, `portable`.
//! - `conformance`: the official MCP conformance suite against the `conformance-server` and
//!   `conformance-client` examples (see `conformance.rs`).
//! - `interop`: the Python and TypeScript SDKs' clients against our server and our client
//!   against their servers, over stdio and Streamable HTTP, in both eras (see `interop.rs`).
//! - `attack`: hostile peers against the example servers (see `attack.rs`).
//! - `fuzz`: every fuzz target of `fuzz/` (nightly, cargo-fuzz) on its committed corpus, N
//!   seconds each (see `fuzz.rs`).
//! - `fleet`: three `fleet` instances behind nginx on Redis under a bounded load, through a key
//!   rotation by rolling restarts and a SIGKILL (see `fleet.rs`).
//! - `portable`: the declared minimum Rust version, `mcp-types` without `std`, and the lower
//!   crates in WebAssembly, a state sealed there and unsealed natively (see `portable.rs`).
//! - `deny`: `cargo deny check` offline, advisories from the snapshot in `deny/` (see
//!   `deny.rs`).
//! - `release`: what a release checks (versions, CHANGELOG, READMEs, docs, packages built
//!   from their `.crate`, the public API by cargo-semver-checks), `--dry-run` publishing nothing
//!   (see `release.rs`).
//! - `docs`: every published library documented as docs.rs documents it, warnings failing
//!   (see `docs.rs`).
//! - `bench`: our server side by side with rmcp, a hyper floor and the Python SDK; writes
//!   `target/bench/report.md` (see `bench.rs` and docs/performance.md); `bench --scale`: how
//!   the cost grows with sessions, streams, tasks and tools (see `scale.rs`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod architecture;
mod attack;
mod bench;
mod builds;
mod charts;
mod conformance;
mod deny;
mod deployed;
mod docs;
mod fleet;
mod fuzz;
mod interop;
mod layers;
mod paths;
mod portable;
mod redis;
mod release;
mod scale;
mod semver;

/// The Python SDK version the interop tests run against.
const PYTHON_MCP: &str = "mcp==2.3.0";
/// What else the `target/py` environment holds: the OpenTelemetry SDK and its OTLP/HTTP exporter
/// (which brings `opentelemetry-proto`), for the interop task's OpenTelemetry cells.
const PYTHON_OTEL: [&str; 2] = [
    "opentelemetry-sdk==1.45.2",
    "opentelemetry-exporter-otlp-proto-http==1.45.2",
];

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    // Run directly (`cargo run -p xtask`), nothing has checked the machine yet.
    if let Some(command) = args.first().filter(|c| *c != "setup")
        && let Err(message) = xtask_setup::ensure_for_command(command)
    {
        eprintln!("xtask: {message}");
        return ExitCode::FAILURE;
    }
    let result = match args.first().map(String::as_str) {
        Some("setup") => xtask_setup::command(&args[1..]),
        Some("layers") => layers(),
        Some("architecture") => architecture::architecture(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("ci") => ci(),
        Some("conformance") => conformance::conformance(&args[1..]),
        Some("interop") => interop::interop(&args[1..]),
        Some("bench") => bench::bench(&args[1..]),
        Some("attack") => attack::attack(&args[1..]),
        Some("attack-worker") => attack::worker_main(&args[1..]),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("fleet") => fleet::fleet(&args[1..]),
        Some("portable") => portable::portable(&args[1..]),
        Some("docs") => docs::docs(&args[1..]),
        Some("deny") => deny::deny(&args[1..]),
        Some("release") => release::release(&args[1..]),
        Some("python-env") => python_env().map(|py| println!("{}", py.display())),
        _ => Err(format!(
            "usage: cargo xtask <setup|layers|architecture|test|ci|conformance|interop|bench|attack|fuzz|fleet|portable|docs|deny|release|python-env>\n  \
             setup       check and install what the tests need from the machine [--check] [SUITE...]\n  \
             layers      check the crate layering of DESIGN.md and that no file points outside the tree\n  \
             architecture  file and function lengths and import circles within a crate [--check]\n  \
             test        run every test (sets up the Python interop venv first)\n  \
             ci          fmt, clippy, deny, release --dry-run, architecture, test, conformance, interop,\n              \
             attack --quick, portable\n  \
             conformance the official MCP conformance suite against the conformance-server\n              \
             and conformance-client examples (needs npm; installs Node 22 and the harness under target/)\n  \
             interop     Python and TypeScript SDK clients x our server, our client x their servers\n              \
             (needs npm; installs the TypeScript SDK into examples/typescript/node_modules)\n  \
             bench       side-by-side benchmarks vs rmcp, a hyper floor, the Python SDK [--quick]\n              \
             [--scale: how the cost grows with sessions, streams, tasks, tools]\n  \
             attack      hostile peers against the example servers, with a legitimate client beside [--quick]\n  \
             fuzz        every fuzz target (nightly, cargo-fuzz) [--seconds N] [--ci] [TARGET...]\n  \
             fleet       3 fleet instances behind nginx on Redis, a load through a key rotation and\n              \
             a SIGKILL [--flows N] [--concurrency C]\n  \
             docs        every published library documented as docs.rs would (nightly), warnings fail\n  \
             release     what a release checks, then publish and tag [--dry-run | --save-baseline]\n  \
             deny        cargo deny check offline: advisories (from deny/'s snapshot), bans, licenses,\n              \
             sources [--refresh PATH-OF-A-CLONE]\n  \
             portable    the minimum Rust version, mcp-types without std, the lower crates in\n              \
             WebAssembly (a state sealed there, unsealed here) [--no-msrv]\n  \
             python-env  create target/py with {PYTHON_MCP} and print its python"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    xtask_setup::workspace_root()
}

fn run(command: &mut Command) -> Result<(), String> {
    eprintln!("xtask: running {command:?}");
    let status = command
        .status()
        .map_err(|e| format!("could not start {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed with {status}"))
    }
}

/// The value of `key = value` in one of the xtasks' small settings files (`#` starts a
/// comment line; an empty value counts as none).
fn setting(text: &str, key: &str) -> Option<String> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_owned())
        })
        .filter(|v| !v.is_empty())
}

/// What `git args` prints in `dir`, trimmed; a failure names the command and git's reason.
fn git_output(dir: &std::path::Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("could not run git: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `cargo metadata --no-deps` of the workspace, as JSON.
fn metadata() -> Result<serde_json::Value, String> {
    let output = cargo()
        .args(["metadata", "--no-deps", "--format-version", "1", "--locked"])
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata printed something that is not JSON: {e}"))
}

fn cargo() -> Command {
    let mut command = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

/// Creates (once) a virtual environment under `target/py` with the Python SDK, and returns the
/// path of its interpreter.
fn python_env() -> Result<PathBuf, String> {
    let venv = workspace_root().join("target").join("py");
    let wanted = format!("{PYTHON_MCP} {}", PYTHON_OTEL.join(" "));
    let mut packages = vec![PYTHON_MCP];
    packages.extend(PYTHON_OTEL);
    venv_with(&venv, wanted.as_bytes(), &packages)
}

/// The virtual environment at `venv` with `pip install`'s `arguments` installed, made again
/// only when `wanted` (what the environment is made from, kept in it as `.installed`) changed;
/// its Python.
pub(crate) fn venv_with(venv: &Path, wanted: &[u8], arguments: &[&str]) -> Result<PathBuf, String> {
    let python = venv.join("bin").join("python");
    let marker = venv.join(".installed");
    if std::fs::read(&marker).ok().as_deref() == Some(wanted) {
        return Ok(python);
    }
    let system_python = env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    run(Command::new(&system_python)
        .args(["-m", "venv", "--clear"])
        .arg(venv))?;
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(arguments))?;
    std::fs::write(&marker, wanted)
        .map_err(|e| format!("could not write {}: {e}", marker.display()))?;
    Ok(python)
}

/// Whether this runs on a CI machine (`CI` set to anything but empty, `false` or `0`): there a
/// missing tool fails its stage instead of skipping it.
pub(crate) fn on_ci() -> bool {
    env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The crate layering and the self-containment of the tree.
fn layers() -> Result<(), String> {
    let root = workspace_root();
    layers::check()?;
    paths::check(&root)
}

fn test(extra: &[String]) -> Result<(), String> {
    layers()?;
    let python = python_env()?;
    // The example tests run the example programs, so `cargo build --all-targets` builds those
    // first (`cargo test` builds examples as test harnesses). Every cargo command here resolves
    // the workspace's features the same way, so the dependencies are compiled once for all of
    // them: `-p mcp-examples --examples` compiled tokio and everything above it a second time,
    // and `cargo test --doc` on its own a third (issue #48: CI's minutes). The doc tests run
    // with the libraries' and the integration tests (`cargo test --workspace`), the benches and
    // the examples' own tests after. The xtasks that build an example build it with
    // `--workspace` for the same reason.
    run(cargo().args(["build", "--workspace", "--all-targets"]))?;
    // The MCP Apps browser test runs playwright-core, which needs Node 20: the machine's, or
    // the one the conformance task installs when the machine's is older (Debian 12 has 18).
    let root = workspace_root();
    let target = env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let node = conformance::ensure_node(&target.join("conformance-tools"), 20)?;
    for targets in [&[][..], &["--benches", "--examples"][..]] {
        run(cargo()
            .args(["test", "--workspace"])
            .args(targets)
            .args(extra)
            .env("MCP_NODE", &node)
            .env("MCP_INTEROP_PYTHON", &python)
            .env("MCP_REQUIRE_INTEROP", "1"))?;
    }
    Ok(())
}

fn ci() -> Result<(), String> {
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    deny::deny(&[])?;
    release::release(&["--dry-run".to_owned()])?;
    architecture::architecture(&["--check".to_owned()])?;
    test(&[])?;
    conformance::conformance(&[])?;
    interop::interop(&[])?;
    attack::attack(&["--quick".to_owned()])?;
    portable::portable(&[])
}
