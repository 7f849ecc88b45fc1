//! `cargo xtask interop`: the Python and TypeScript SDKs against our server, and our client
//! against their servers, on both transports and in both eras.
//!
//! The matrix, for each peer SDK: its client (`examples/python/interop_client.py`,
//! `examples/typescript/interop_client.mjs`) × our `interop-server`, and our `interop-client`
//! × its server (`examples/python/interop_server.py`, `examples/typescript/interop_server.mjs`),
//! each over stdio and Streamable HTTP, each at 2025-11-25 (legacy session) and 2026-07-28
//! (stateless). Where the client can find the era itself (our `Mode::Auto`, the TypeScript
//! SDK's `versionNegotiation: 'auto'`), a third cell per transport does that: the client
//! probes with `server/discover` (`--probe`) and must end up at 2026-07-28, which is what a
//! user gets from either client's defaults-to-probe path. Every cell runs every flow; a cell
//! passes when its client exits 0. HTTP
//! servers listen on 127.0.0.1 at a free port; each is started for its cell and stopped by the
//! PID of the child spawned here. Logs go to `target/interop/`.
//!
//! One more cell, `python otel`, runs `examples/python/otel_interop.py`: with an OTLP receiver
//! of its own, it checks that a trace started by the Python SDK's client continues in our
//! server, and that one started by our client continues in the Python SDK's server (and, in
//! 2025-11-25, back into our client for the questions asked mid-call), in both eras.
//!
//! The Python SDK lives in the `target/py` virtual environment ([`python_env`]). The
//! TypeScript SDK is installed from the npm registry with `npm ci` into
//! `examples/typescript/node_modules` (ignored by git), from the committed
//! `package-lock.json`, and only again when that lockfile changes; its scripts run on the
//! machine's `node` when it is 20 or newer (what the 2.4.0 packages declare), else on the
//! Node 22 the conformance task installs under `target/conformance-tools/`.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::conformance::ensure_node;
use super::{cargo, deployed, python_env, run, workspace_root};

const ERAS: [&str; 2] = ["2025-11-25", MODERN];
/// The stateless revision, the one a probing client must find.
const MODERN: &str = "2026-07-28";
/// How long one cell may take (each flow also has its own 60 s limit inside the clients).
pub(crate) const CELL_TIMEOUT: Duration = Duration::from_secs(300);
/// How long an HTTP server may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The oldest Node the TypeScript SDK packages run on (their `engines` field).
const TS_NODE_MAJOR: u32 = 20;
/// Where the TypeScript scripts, their `package.json` and `package-lock.json` live.
const TS_DIR: &str = "examples/typescript";

/// The other SDK of a cell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Peer {
    Python,
    TypeScript,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Python => "python",
            Peer::TypeScript => "typescript",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Peer::Python => "py",
            Peer::TypeScript => "ts",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The peer's client against our server.
    PeerClient,
    /// Our client against the peer's server.
    RustClient,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wire {
    Stdio,
    Http,
}

struct Cell {
    peer: Peer,
    side: Side,
    wire: Wire,
    era: &'static str,
    /// The client negotiates the era with a `server/discover` probe instead of being told.
    probe: bool,
}

impl Cell {
    fn name(&self) -> String {
        let pair = match self.side {
            Side::PeerClient => format!("{} client -> rust server", self.peer.name()),
            Side::RustClient => format!("rust client -> {} server", self.peer.name()),
        };
        let wire = match self.wire {
            Wire::Stdio => "stdio",
            Wire::Http => "http ",
        };
        let probe = if self.probe { " (probe)" } else { "" };
        format!("{pair:<32}  {wire}  {}{probe}", self.era)
    }

    fn slug(&self) -> String {
        let side = match self.side {
            Side::PeerClient => format!("{}-client", self.peer.slug()),
            Side::RustClient => format!("rs-client-{}-server", self.peer.slug()),
        };
        let wire = match self.wire {
            Wire::Stdio => "stdio",
            Wire::Http => "http",
        };
        let probe = if self.probe { "-probe" } else { "" };
        format!("{side}-{wire}-{}{probe}", self.era)
    }
}

/// Everything a cell needs to start its processes.
struct Programs {
    python: PathBuf,
    node: PathBuf,
    rust_server: PathBuf,
    rust_client: PathBuf,
    python_server: PathBuf,
    python_client: PathBuf,
    ts_server: PathBuf,
    ts_client: PathBuf,
    logs: PathBuf,
}

impl Programs {
    /// The server of a cell, with the arguments that choose the transport.
    fn server(&self, cell: &Cell, listen: Option<SocketAddr>) -> Command {
        let mut command = match (cell.side, cell.peer) {
            (Side::PeerClient, _) => {
                let mut c = Command::new(&self.rust_server);
                match listen {
                    Some(addr) => c.arg("--http").arg(addr.to_string()),
                    None => c.arg("--stdio"),
                };
                c
            }
            (Side::RustClient, peer) => {
                let mut c = match peer {
                    Peer::Python => {
                        let mut c = Command::new(&self.python);
                        c.arg(&self.python_server).env("PYTHONUNBUFFERED", "1");
                        c
                    }
                    Peer::TypeScript => {
                        let mut c = Command::new(&self.node);
                        c.arg(&self.ts_server);
                        c
                    }
                };
                match listen {
                    Some(addr) => c.arg("--http").arg(addr.port().to_string()),
                    None => c.arg("--stdio"),
                };
                c
            }
        };
        command.current_dir(workspace_root());
        command
    }

    /// The client of a cell, pointed at a URL or told to spawn the server command.
    fn client(&self, cell: &Cell, url: Option<&str>, server: &Command) -> Command {
        let mut command = match (cell.side, cell.peer) {
            (Side::PeerClient, Peer::Python) => {
                let mut c = Command::new(&self.python);
                c.arg(&self.python_client).env("PYTHONUNBUFFERED", "1");
                c
            }
            (Side::PeerClient, Peer::TypeScript) => {
                let mut c = Command::new(&self.node);
                c.arg(&self.ts_client);
                c
            }
            (Side::RustClient, _) => Command::new(&self.rust_client),
        };
        command.args(["--era", cell.era]);
        if cell.probe {
            command.arg("--probe");
        }
        // The Python twin serves an MCP App with the SDK's `Apps`; the TypeScript one has none.
        if cell.side == Side::RustClient && cell.peer == Peer::Python {
            command.arg("--apps");
        }
        aim(&mut command, url.map(|u| ("--url", u)), server);
        command
    }
}

/// Points a client `command` at its server: at `(flag, url)` (the flag empty for a positional
/// URL), or at a stdio server it starts itself (`-- PROGRAM ARGS…`); run from the workspace.
pub(crate) fn aim(command: &mut Command, url: Option<(&str, &str)>, server: &Command) {
    match url {
        Some(("", url)) => {
            command.arg(url);
        }
        Some((flag, url)) => {
            command.args([flag, url]);
        }
        None => {
            command
                .arg("--")
                .arg(server.get_program())
                .args(server.get_args());
        }
    }
    command.current_dir(workspace_root());
}

/// Installs the npm packages of `dir` from its `package-lock.json` with `npm ci
/// --ignore-scripts` (exact versions and integrity hashes; no install script runs), unless the
/// installed tree was made from this very lockfile (a copy of it is kept in `node_modules/`).
pub(crate) fn npm_env(dir: &Path) -> Result<(), String> {
    npm_env_saying(dir, "the packages of its package-lock.json")
}

/// [`npm_env`], saying first what it installs (`what`) and where.
pub(crate) fn npm_env_saying(dir: &Path, what: &str) -> Result<(), String> {
    let lock = dir.join("package-lock.json");
    let marker = dir.join("node_modules").join(".mcp-rs-interop-lock.json");
    let wanted =
        std::fs::read(&lock).map_err(|e| format!("could not read {}: {e}", lock.display()))?;
    if std::fs::read(&marker).ok().as_deref() == Some(wanted.as_slice()) {
        return Ok(());
    }
    eprintln!(
        "xtask: installing {what} into {} (npm ci --ignore-scripts, from its lockfile)",
        dir.display()
    );
    run(Command::new("npm").current_dir(dir).args([
        "ci",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ]))
    .map_err(|e| format!("{e} (npm installs {what} into {})", dir.display()))?;
    std::fs::write(&marker, &wanted)
        .map_err(|e| format!("could not write {}: {e}", marker.display()))
}

/// Builds the examples, ensures both SDKs, runs every cell, and fails if any cell did.
/// `--deployed` runs only the deployed base's cells (`deployed.rs`).
pub(crate) fn interop(args: &[String]) -> Result<(), String> {
    let only_deployed = match args {
        [] => false,
        [flag] if flag == "--deployed" => true,
        _ => return Err("usage: cargo xtask interop [--deployed]".into()),
    };
    let root = workspace_root();
    let python = python_env()?;
    run(cargo().args([
        "build",
        "--workspace",
        "--example",
        "interop-server",
        "--example",
        "interop-client",
        "--bin",
        "mcp-term",
    ]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_absolute() {
                dir
            } else {
                root.join(dir)
            }
        })
        .unwrap_or_else(|| root.join("target"));
    let examples = target.join("debug").join("examples");
    let node = ensure_node(&target.join("conformance-tools"), TS_NODE_MAJOR)?;
    npm_env(&root.join(TS_DIR))?;
    let programs = Programs {
        python,
        node,
        rust_server: examples.join(format!("interop-server{}", std::env::consts::EXE_SUFFIX)),
        rust_client: examples.join(format!("interop-client{}", std::env::consts::EXE_SUFFIX)),
        python_server: root.join("examples/python/interop_server.py"),
        python_client: root.join("examples/python/interop_client.py"),
        ts_server: root.join(TS_DIR).join("interop_server.mjs"),
        ts_client: root.join(TS_DIR).join("interop_client.mjs"),
        logs: target.join("interop"),
    };
    std::fs::create_dir_all(&programs.logs)
        .map_err(|e| format!("could not create {}: {e}", programs.logs.display()))?;

    let deployed = deployed::Programs::new(
        &programs.node,
        &programs.rust_server,
        &programs.rust_client,
        &target,
    )?;
    let (mut passed, mut failed) = deployed::run_cells(&deployed);
    if only_deployed {
        return tally(passed, failed, &programs.logs);
    }
    let mut cells = Vec::new();
    for peer in [Peer::Python, Peer::TypeScript] {
        for side in [Side::PeerClient, Side::RustClient] {
            // interop_client.py has no `--probe`: the Python client cells stay as they were.
            let probes = side == Side::RustClient || peer == Peer::TypeScript;
            for wire in [Wire::Stdio, Wire::Http] {
                for era in ERAS {
                    cells.push(Cell {
                        peer,
                        side,
                        wire,
                        era,
                        probe: false,
                    });
                }
                if probes {
                    cells.push(Cell {
                        peer,
                        side,
                        wire,
                        era: MODERN,
                        probe: true,
                    });
                }
            }
        }
    }
    for cell in &cells {
        let started = Instant::now();
        let outcome = run_cell(&programs, cell);
        count(
            report_cell(&cell.name(), started, outcome),
            &mut passed,
            &mut failed,
        );
    }
    // OpenTelemetry across the boundary, both ways and in both eras (one script, its own
    // OTLP receiver): see examples/python/otel_interop.py.
    let started = Instant::now();
    let outcome = otel_cell(&programs);
    count(
        report_cell("python otel (trace context both ways)", started, outcome),
        &mut passed,
        &mut failed,
    );
    tally(passed, failed, &programs.logs)
}

/// Prints a cell's line: `PASS  name  (summary, 1.2s)`, or `FAIL  name` and the detail,
/// indented. Whether it passed.
pub(crate) fn report_cell(name: &str, started: Instant, outcome: Result<String, String>) -> bool {
    match outcome {
        Ok(summary) => {
            println!(
                "PASS  {name}  ({summary}, {:.1}s)",
                started.elapsed().as_secs_f64()
            );
            true
        }
        Err(detail) => {
            println!("FAIL  {name}");
            for line in detail.lines() {
                println!("        {line}");
            }
            false
        }
    }
}

/// Counts a cell in `passed` or `failed`.
pub(crate) fn count(passed_it: bool, passed: &mut usize, failed: &mut usize) {
    if passed_it {
        *passed += 1;
    } else {
        *failed += 1;
    }
}

/// The closing line, and the task's failure when any cell failed.
fn tally(passed: usize, failed: usize, logs: &Path) -> Result<(), String> {
    println!("interop: {passed} passed, {failed} failed");
    if failed == 0 {
        Ok(())
    } else {
        Err(format!(
            "{failed} interop cell(s) failed; logs in {}",
            logs.display()
        ))
    }
}

/// Runs one cell; on success returns the client's summary line, on failure what it printed.
fn run_cell(programs: &Programs, cell: &Cell) -> Result<String, String> {
    let slug = cell.slug();
    let log = |suffix: &str| programs.logs.join(format!("{slug}.{suffix}"));
    let mut server = None;
    let url = match cell.wire {
        Wire::Stdio => None,
        Wire::Http => {
            let addr = free_port()?;
            let child = spawn(&mut programs.server(cell, Some(addr)), &log("server.log"))?;
            // Owned from here, so the server is stopped on every path out of this function.
            let guard = server.insert(Server(child));
            wait_ready(&mut guard.0, addr)?;
            Some(format!("http://{addr}/mcp"))
        }
    };
    let stdio_server = programs.server(cell, None);
    let mut client = programs.client(cell, url.as_deref(), &stdio_server);
    let out = log("client.out");
    let err = log("client.err");
    let mut child = spawn_to(&mut client, &out, &err)?;
    let status = wait_with_timeout(&mut child, CELL_TIMEOUT);
    drop(server);
    finish(status, &out, &err, "client", CELL_TIMEOUT)
}

/// A finished child's summary (the last line it printed) when it exited 0; else what went
/// wrong: its status, its lines other than `ok …`, and the last lines of its stderr.
pub(crate) fn finish(
    status: Option<std::process::ExitStatus>,
    out: &Path,
    err: &Path,
    what: &str,
    timeout: Duration,
) -> Result<String, String> {
    let output = std::fs::read_to_string(out).unwrap_or_default();
    let summary = output.lines().last().unwrap_or("").to_owned();
    match status {
        Some(s) if s.success() => Ok(summary),
        status => {
            let mut detail = match status {
                Some(s) => format!("{what} exited with {s}\n"),
                None => format!("{what} killed after {}s\n", timeout.as_secs()),
            };
            for line in output.lines().filter(|l| !l.starts_with("ok ")) {
                detail.push_str(line);
                detail.push('\n');
            }
            let errors = std::fs::read_to_string(err).unwrap_or_default();
            let tail: Vec<&str> = errors.lines().rev().take(15).collect();
            if !tail.is_empty() {
                detail.push_str(&format!("last lines of {}:\n", err.display()));
                for line in tail.into_iter().rev() {
                    detail.push_str("  ");
                    detail.push_str(line);
                    detail.push('\n');
                }
            }
            Err(detail)
        }
    }
}

/// Runs `otel_interop.py`: a Python client's trace continued by our server, and our client's
/// continued by a Python server, each checked span by span at an OTLP receiver.
fn otel_cell(programs: &Programs) -> Result<String, String> {
    let out = programs.logs.join("otel.client.out");
    let err = programs.logs.join("otel.client.err");
    let mut command = Command::new(&programs.python);
    command
        .arg(programs.python_client.with_file_name("otel_interop.py"))
        .arg("--rust-server")
        .arg(&programs.rust_server)
        .arg("--rust-client")
        .arg(&programs.rust_client)
        .arg("--logs")
        .arg(&programs.logs)
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .current_dir(workspace_root());
    let mut child = spawn_to(&mut command, &out, &err)?;
    let status = wait_with_timeout(&mut child, 2 * CELL_TIMEOUT);
    finish(status, &out, &err, "otel_interop.py", 2 * CELL_TIMEOUT)
}

/// An HTTP server this task spawned; dropping it kills that child (by its PID) and reaps it.
pub(crate) struct Server(pub(crate) Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port on 127.0.0.1 nobody listens on right now.
pub(crate) fn free_port() -> Result<SocketAddr, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))?;
    listener
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))
}

pub(crate) fn spawn(command: &mut Command, log: &Path) -> Result<Child, String> {
    spawn_to(command, log, log)
}

pub(crate) fn spawn_to(command: &mut Command, out: &Path, err: &Path) -> Result<Child, String> {
    let open = |path: &Path| {
        File::create(path).map_err(|e| format!("could not create {}: {e}", path.display()))
    };
    let stdout = open(out)?;
    let stderr = if out == err {
        stdout
            .try_clone()
            .map_err(|e| format!("could not share {}: {e}", out.display()))?
    } else {
        open(err)?
    };
    command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("could not start {command:?}: {e}"))
}

/// Polls until the server accepts a connection, failing if it exits or takes too long.
pub(crate) fn wait_ready(child: &mut Child, addr: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the server exited with {status} before listening"));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the server did not listen on {addr} within {}s",
                READY_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits for the child; kills it (by its PID) and returns `None` past the timeout.
pub(crate) fn wait_with_timeout(
    child: &mut Child,
    timeout: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}
