//! `cargo xtask attack [--quick]`: hostile peers against the example servers (release builds;
//! `--quick`, the form `.ci/run` runs, uses the debug builds and smaller counts), each attack
//! from a process of its own, loopback only, bounded in count and time. A
//! legitimate client runs beside every HTTP attack on a connection it opened first. Per attack
//! the table shows the server's peak RSS (`VmHWM`), the legitimate client's success rate and
//! p99 latency, and what the attacker got back; it fails when the RSS passes the attack's bound
//! or the legitimate client drops below 99 %.
//!
//! `--bin-dir DIR` runs against other builds of `interop-server`, `protected`, `builds` and
//! `fleet` (how the "before" column was measured: against commit 6e4077d, and the fleet
//! attacks of the third review, X1-X3, against a7dd3fc, where a row names its commit); `--record
//! FILE` writes the results as JSON instead of checking them; `xtask/attack-before.json` holds
//! that measurement. A fleet attack also fails on a bound of its own: a replay kept past 64 KiB,
//! more than one bus byte per byte the attacker sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod dpop;
mod fleet;
mod labels;
mod logs;
mod tasks;
mod tls;

/// A server whose RSS passes this is killed at once, whatever the attack (the machine is shared).
const HARD_RSS_KIB: u64 = 3 * 1024 * 1024;

#[derive(Clone, Copy)]
struct Attack {
    name: &'static str,
    /// The peak RSS the fixed server must stay under, in MiB.
    bound_mib: u64,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Http,
    Protected,
    Stdio,
    /// The `builds` example: a task tool and listen streams.
    Builds,
    /// The `builds` example asking for the demo bearer tokens (`--auth`).
    BuildsAuth,
    /// The `protected` example over TLS (`--tls`), with a certificate authority of its own.
    Tls,
    /// Three `protected` instances and a redis-server: two share their DPoP replay store
    /// through Redis, the third remembers proofs in its own memory.
    Dpop,
    /// Two `fleet` instances on a redis-server, behind a trusted proxy (`attack/fleet.rs`).
    Fleet,
    /// The `shop` example, its audit log on stderr read after the attack (`attack/logs.rs`).
    Shop,
    /// The `files` example exporting OpenTelemetry to a receiver of the run (`attack/labels.rs`).
    Files,
}

const ATTACKS: [Attack; 24] = [
    Attack {
        name: "slow-headers",
        bound_mib: 120,
        kind: Kind::Http,
    },
    Attack {
        name: "slow-body",
        bound_mib: 200,
        kind: Kind::Http,
    },
    Attack {
        name: "connection-flood",
        bound_mib: 200,
        kind: Kind::Http,
    },
    Attack {
        name: "initialize-flood",
        bound_mib: 200,
        kind: Kind::Http,
    },
    Attack {
        name: "subscriptions",
        bound_mib: 120,
        kind: Kind::Http,
    },
    Attack {
        name: "request-storm",
        bound_mib: 300,
        kind: Kind::Http,
    },
    Attack {
        name: "other-principal",
        bound_mib: 60,
        kind: Kind::Protected,
    },
    // Review W1: 15 KiB of junk in the capabilities of every call that becomes a task.
    Attack {
        name: "caps-stuffing",
        bound_mib: 150,
        kind: Kind::Builds,
    },
    // Review W2: read the first SSE event of an eliciting call, hang up, again.
    Attack {
        name: "detach-loop",
        bound_mib: 150,
        kind: Kind::Http,
    },
    // Review W4: one client opens 1,024 listen streams and never reads them.
    Attack {
        name: "listen-streams",
        bound_mib: 120,
        kind: Kind::Builds,
    },
    // Review W5: sessions opened with ~360 KB of headers each.
    Attack {
        name: "fat-initialize",
        bound_mib: 150,
        kind: Kind::Http,
    },
    // Review W6: one principal opens more sessions than the whole pool.
    Attack {
        name: "session-pool",
        bound_mib: 200,
        kind: Kind::Protected,
    },
    // Review W7: 4,000 connections stalled mid-ClientHello and 500 idle after their handshake.
    Attack {
        name: "tls-flood",
        bound_mib: 150,
        kind: Kind::Tls,
    },
    // Review W8: a captured DPoP proof replayed at a second instance, and after 5,000 proofs.
    Attack {
        name: "dpop-replay",
        bound_mib: 120,
        kind: Kind::Dpop,
    },
    // Review W9: one principal creates tasks that wait for an answer until the store is full.
    Attack {
        name: "task-flood",
        bound_mib: 150,
        kind: Kind::BuildsAuth,
    },
    // Review X1: anonymous tasks of an idempotent tool with a megabyte of arguments each.
    Attack {
        name: "replay-stuffing",
        bound_mib: 400,
        kind: Kind::Fleet,
    },
    // Review X2: subscriptions and cancellations on a session both instances hold.
    Attack {
        name: "bus-amplification",
        bound_mib: 150,
        kind: Kind::Fleet,
    },
    // Review X3: one address behind the proxy opens more sessions than its share.
    Attack {
        name: "proxy-eviction",
        bound_mib: 250,
        kind: Kind::Fleet,
    },
    // Review X4: one anonymous caller spends the fleet's rate limit for every anonymous caller.
    Attack {
        name: "anonymous-rate",
        bound_mib: 150,
        kind: Kind::Fleet,
    },
    // Review X5: ids that forge audit lines and carry terminal escapes, megabyte methods.
    Attack {
        name: "log-injection",
        bound_mib: 150,
        kind: Kind::Shop,
    },
    // Review X6: tools that do not exist, named with 64 KiB each, in the metrics and spans.
    Attack {
        name: "label-injection",
        bound_mib: 150,
        kind: Kind::Files,
    },
    Attack {
        name: "stdio-5mb-line",
        bound_mib: 60,
        kind: Kind::Stdio,
    },
    Attack {
        name: "stdio-1gb-line",
        bound_mib: 60,
        kind: Kind::Stdio,
    },
    Attack {
        name: "stdio-unread-stdout",
        bound_mib: 80,
        kind: Kind::Stdio,
    },
];

/// How hard and how long: the full suite, or the form `.ci/run` runs.
#[derive(Clone, Copy)]
struct Scale {
    quick: bool,
}

impl Scale {
    fn secs(self) -> u64 {
        if self.quick { 4 } else { 12 }
    }
    fn many(self, full: usize, quick: usize) -> usize {
        if self.quick { quick } else { full }
    }
    fn arg(self) -> &'static str {
        if self.quick { "quick" } else { "full" }
    }
    fn parse(s: &str) -> Self {
        Scale {
            quick: s == "quick",
        }
    }
}

struct Outcome {
    name: String,
    peak_mib: f64,
    legit: Option<(u64, u64, f64)>,
    refusal: String,
    /// A bound of the attack's own that was passed (bus bytes per attacker byte, bytes kept).
    violation: Option<String>,
}

pub(crate) fn attack(args: &[String]) -> Result<(), String> {
    let scale = Scale {
        quick: args.iter().any(|a| a == "--quick"),
    };
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let root = crate::workspace_root();
    let bin_dir = match value("--bin-dir") {
        Some(dir) => PathBuf::from(dir),
        None => {
            // The quick form (CI) uses the debug builds the test stage already made, so CI
            // pays for no release build; the full suite measures release builds.
            let profile = if scale.quick { "debug" } else { "release" };
            let mut build = crate::cargo();
            build.args(["build", "--quiet", "--workspace"]);
            if !scale.quick {
                build.arg("--release");
            }
            build.args([
                "--example",
                "interop-server",
                "--example",
                "protected",
                "--example",
                "builds",
                "--example",
                "fleet",
                "--example",
                "shop",
                "--example",
                "files",
            ]);
            crate::run(&mut build)?;
            root.join("target").join(profile).join("examples")
        }
    };
    let record = value("--record");
    let only = value("--only");
    let mut outcomes = Vec::new();
    for attack in ATTACKS {
        if only.as_deref().is_some_and(|o| o != attack.name) {
            continue;
        }
        eprintln!("xtask attack: {}", attack.name);
        outcomes.push(run_attack(attack, scale, &bin_dir)?);
    }
    if let Some(path) = record {
        let rows: Vec<Value> = outcomes
            .iter()
            .map(|o| {
                json!({"name": o.name, "peak_mib": o.peak_mib, "refusal": o.refusal, "violation": o.violation,
                    "legit": o.legit.map(|(ok, total, p99)| json!({"ok": ok, "total": total, "p99_ms": p99}))})
            })
            .collect();
        let text = serde_json::to_string_pretty(&json!({"scale": scale.arg(), "attacks": rows}))
            .map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("{path}: {e}"))?;
        println!("recorded {} attacks in {path}", outcomes.len());
        return Ok(());
    }
    let before: Value = std::fs::read_to_string(root.join("xtask/attack-before.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    report(&outcomes, &before, scale)
}

fn report(outcomes: &[Outcome], before: &Value, scale: Scale) -> Result<(), String> {
    let before_of = |name: &str| {
        before["attacks"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    println!(
        "\n| attack | RSS bound | peak RSS before | peak RSS after | legit ok before | legit ok after | legit p99 after | attacker got (after) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut failures = Vec::new();
    for o in outcomes {
        let attack = ATTACKS.iter().find(|a| a.name == o.name);
        let bound = attack.map_or(0, |a| a.bound_mib);
        let was = before_of(&o.name);
        let commit = was["commit"].as_str().map_or(String::new(), |c| {
            format!(" ({c}, {})", was["scale"].as_str().unwrap_or("?"))
        });
        let was_rss = was["peak_mib"]
            .as_f64()
            .map_or("-".to_owned(), |m| format!("{m:.0} MiB{commit}"));
        let was_legit = match (was["legit"]["ok"].as_u64(), was["legit"]["total"].as_u64()) {
            (Some(ok), Some(total)) => percent(ok, total),
            _ => "-".to_owned(),
        };
        let (legit, p99) = match o.legit {
            Some((ok, total, p99)) => (percent(ok, total), format!("{p99:.1} ms")),
            None => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "| {} | {bound} MiB | {was_rss} | {:.0} MiB | {was_legit} | {legit} | {p99} | {} |",
            o.name, o.peak_mib, o.refusal
        );
        if let Some(violation) = &o.violation {
            failures.push(format!("{}: {violation}", o.name));
        }
        if o.peak_mib > bound as f64 {
            failures.push(format!(
                "{}: peak RSS {:.0} MiB > {bound} MiB",
                o.name, o.peak_mib
            ));
        }
        if let Some((ok, total, _)) = o.legit
            && (total == 0 || (ok as f64) < 0.99 * total as f64)
        {
            failures.push(format!(
                "{}: the legitimate client got {ok}/{total}",
                o.name
            ));
        }
    }
    println!(
        "\n({} scale; before = commit 6e4077d, {} scale)",
        scale.arg(),
        before["scale"].as_str().unwrap_or("not measured")
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

fn percent(ok: u64, total: u64) -> String {
    if total == 0 {
        "0 requests".to_owned()
    } else {
        format!("{:.1} % of {total}", 100.0 * ok as f64 / total as f64)
    }
}

/// A server process, killed on drop.
struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Watches the server's memory: kills it if it passes [`HARD_RSS_KIB`], and keeps the
/// highest `VmHWM` seen (the process may exit before the attack ends). Answers
/// `(killed, peak KiB)`.
fn watchdog(pid: u32, stop: Arc<AtomicBool>) -> thread::JoinHandle<(bool, u64)> {
    thread::spawn(move || {
        let mut peak = 0;
        while !stop.load(Ordering::SeqCst) {
            peak = peak.max(kib(pid, "VmHWM:").unwrap_or(0));
            if kib(pid, "VmRSS:").is_some_and(|k| k > HARD_RSS_KIB) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                return (true, peak);
            }
            thread::sleep(Duration::from_millis(50));
        }
        (false, peak)
    })
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

fn start_http(bin: &Path, port: u16, extra: &[&str]) -> Result<Server, String> {
    spawn_http(bin, port, extra, &[], Stdio::null())
}

/// [`start_http`] with environment variables `env`, its stderr to `stderr`.
fn spawn_http(
    bin: &Path,
    port: u16,
    extra: &[&str],
    env: &[(&str, &str)],
    stderr: Stdio,
) -> Result<Server, String> {
    let child = Command::new(bin)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(extra)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let server = Server { child };
    for _ in 0..400 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(server);
        }
        thread::sleep(Duration::from_millis(25));
    }
    Err(format!("{} did not listen on {port}", bin.display()))
}

fn worker(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap_or_else(|_| "xtask".into()));
    command.arg("attack-worker").args(args);
    command
}

fn run_attack(attack: Attack, scale: Scale, bin_dir: &Path) -> Result<Outcome, String> {
    if attack.kind == Kind::Stdio {
        // The worker spawns the stdio server itself and reports its peak RSS.
        let bin = bin_dir.join("interop-server");
        let out = worker(&[attack.name, scale.arg(), &bin.to_string_lossy()])
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| e.to_string())?;
        let summary = last_json(&out.stdout)?;
        return Ok(Outcome {
            name: attack.name.to_owned(),
            peak_mib: summary["peak_kib"].as_f64().unwrap_or(0.0) / 1024.0,
            legit: legit_of(&summary),
            refusal: summary["refusal"].as_str().unwrap_or("").to_owned(),
            violation: None,
        });
    }
    if attack.kind == Kind::Dpop {
        return dpop::run(attack, scale, bin_dir);
    }
    if attack.kind == Kind::Fleet {
        return fleet::run(attack, scale, bin_dir);
    }
    if attack.kind == Kind::Shop {
        return logs::run(attack, scale, bin_dir);
    }
    if attack.kind == Kind::Files {
        return labels::run(attack, scale, bin_dir);
    }
    let port = free_port()?;
    let ca = std::env::temp_dir().join(format!("mcp-attack-ca-{}.pem", std::process::id()));
    let ca_arg = ca.display().to_string();
    let stop_file = std::env::temp_dir().join(format!("mcp-attack-stop-{}", std::process::id()));
    let _ = std::fs::remove_file(&stop_file);
    let stop_arg = stop_file.display().to_string();
    let (bin, extra): (&str, &[&str]) = match attack.kind {
        Kind::Protected => ("protected", &[]),
        Kind::Builds => ("builds", &[]),
        Kind::BuildsAuth => ("builds", &["--auth"]),
        Kind::Tls => ("protected", &["--tls", &ca_arg]),
        _ => ("interop-server", &[]),
    };
    let server = start_http(&bin_dir.join(bin), port, extra)?;
    let pid = server.child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let dog = watchdog(pid, stop.clone());
    let port_arg = port.to_string();
    // Filling a pool of 10,000 sessions takes longer than the other attacks run, and the
    // TLS flood waits out the handshake deadline of its last connection.
    let secs = match attack.name {
        "session-pool" => scale.secs().max(20),
        "tls-flood" => scale.secs().max(18),
        _ => scale.secs(),
    }
    .to_string();
    // Beside a protected server the legitimate client is bob, on his own token.
    let legit_args: Option<Vec<&str>> = match attack.kind {
        Kind::Protected if attack.name == "session-pool" => {
            Some(vec!["legit-bob", &port_arg, &secs])
        }
        Kind::Protected => None,
        // Bob works until two seconds after alice has finished (at most five minutes).
        Kind::BuildsAuth => Some(vec!["legit-bob-tasks", &port_arg, "300", &stop_arg]),
        Kind::Tls => Some(vec!["legit-tls", &port_arg, &secs, &ca_arg]),
        _ => Some(vec!["legit", &port_arg, &secs]),
    };
    let legit = legit_args
        .map(|args| {
            worker(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
        })
        .transpose()
        .map_err(|e| e.to_string())?;
    // Give the legitimate client its connection before the attack starts.
    thread::sleep(Duration::from_millis(300));
    let mut attacker_args = vec![attack.name, scale.arg(), &port_arg, &secs];
    if attack.kind == Kind::Tls {
        attacker_args.push(&ca_arg);
    }
    let attacker = worker(&attacker_args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if attack.kind == Kind::BuildsAuth {
        thread::sleep(Duration::from_secs(2));
        std::fs::write(&stop_file, b"").map_err(|e| format!("{}: {e}", stop_file.display()))?;
    }
    let legit = match legit {
        Some(child) => Some(child.wait_with_output().map_err(|e| e.to_string())?),
        None => None,
    };
    let last = kib(pid, "VmHWM:").unwrap_or(0);
    stop.store(true, Ordering::SeqCst);
    let (killed, seen) = dog.join().unwrap_or((false, 0));
    let peak_kib = last.max(seen);
    drop(server);
    let _ = std::fs::remove_file(&ca);
    let _ = std::fs::remove_file(&stop_file);
    let summary = last_json(&attacker.stdout)?;
    let mut refusal = summary["refusal"].as_str().unwrap_or("").to_owned();
    if killed {
        refusal = format!("server killed past {} GiB; {refusal}", HARD_RSS_KIB >> 20);
    }
    let legit = match legit {
        Some(out) => legit_of(&last_json(&out.stdout)?),
        None => None,
    };
    Ok(Outcome {
        name: attack.name.to_owned(),
        peak_mib: if killed {
            (HARD_RSS_KIB / 1024) as f64
        } else {
            peak_kib as f64 / 1024.0
        },
        legit,
        refusal,
        violation: None,
    })
}

fn legit_of(summary: &Value) -> Option<(u64, u64, f64)> {
    Some((
        summary["legit_ok"].as_u64()?,
        summary["legit_total"].as_u64()?,
        summary["legit_p99_ms"].as_f64().unwrap_or(0.0),
    ))
}

fn last_json(out: &[u8]) -> Result<Value, String> {
    String::from_utf8_lossy(out)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| "a worker printed no summary".to_owned())
}

// ---- Workers: each runs in a process of its own and prints one JSON line. ----

/// `xtask attack-worker <attack|legit> ...`.
pub(crate) fn worker_main(args: &[String]) -> Result<(), String> {
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let summary = match arg(0) {
        "legit" => legit_client(arg(1).parse().unwrap_or(0), arg(2).parse().unwrap_or(4)),
        "legit-bob" => legit_sessions(arg(1).parse().unwrap_or(0), arg(2).parse().unwrap_or(4)),
        "legit-bob-tasks" => tasks::legit_bob(
            arg(1).parse().unwrap_or(0),
            arg(2).parse().unwrap_or(4),
            Path::new(arg(3)),
        ),
        "legit-tls" => tls::legit(
            arg(1).parse().unwrap_or(0),
            arg(2).parse().unwrap_or(4),
            Path::new(arg(3)),
        )?,
        "legit-dpop" => dpop::legit(arg(1), arg(2).parse().unwrap_or(4))?,
        "tls-flood" => tls::flood(
            Scale::parse(arg(1)),
            arg(2).parse().map_err(|_| "no port")?,
            Duration::from_secs(arg(3).parse().unwrap_or(4)),
            Path::new(arg(4)),
        )?,
        "dpop-replay" => dpop::attack(Scale::parse(arg(1)), arg(2))?,
        name if name.starts_with("stdio-") => {
            stdio_attack(name, Scale::parse(arg(1)), Path::new(arg(2)))?
        }
        name => {
            let scale = Scale::parse(arg(1));
            let port: u16 = arg(2).parse().map_err(|_| "no port")?;
            let secs: u64 = arg(3).parse().unwrap_or(4);
            http_attack(name, scale, port, Duration::from_secs(secs))?
        }
    };
    println!("{summary}");
    Ok(())
}

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"attack","version":"1"}}"#;

fn post(port: u16, headers: &[(&str, &str)], body: &str, close: bool) -> Vec<u8> {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
        body.len()
    );
    if close {
        request.push_str("connection: close\r\n");
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

fn tools_list(port: u16, id: u64, close: bool) -> Vec<u8> {
    tools_list_with(port, id, close, &[])
}

/// `tools/list` on 2026-07-28, with `extra` headers (a bearer token).
fn tools_list_with(port: u16, id: u64, close: bool, extra: &[(&str, &str)]) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{MODERN_META}}}}}"#
    );
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    headers.extend_from_slice(extra);
    post(port, &headers, &body, close)
}

/// Status, headers (lowercase names) and body.
type HttpAnswer = (u16, Vec<(String, String)>, Vec<u8>);

/// One response, read by content-length.
fn read_response(reader: &mut impl BufRead) -> Result<HttpAnswer, String> {
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status line ({line:?})"))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .ok_or("no content-length")?;
    let mut body = vec![0; length.min(16 << 20)];
    reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((status, headers, body))
}

fn connect(port: u16) -> Result<BufReader<TcpStream>, String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    Ok(BufReader::new(stream))
}

/// The legitimate client: `tools/list` on one keep-alive connection for `secs` seconds,
/// reconnecting (and counting a failure) when the connection fails.
fn legit_client(port: u16, secs: u64) -> Value {
    keepalive_client(
        secs,
        || connect(port).ok(),
        |id| tools_list(port, id, false),
    )
}

/// A legitimate client on any connection (plain or TLS): `request(id)` every 20 ms for `secs`
/// seconds on one keep-alive connection, reconnecting (and counting a failure) when it fails;
/// a request is served when it gets a `200` JSON-RPC answer.
fn keepalive_client<S: Read + Write>(
    secs: u64,
    connect: impl Fn() -> Option<BufReader<S>>,
    request: impl Fn(u64) -> Vec<u8>,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs) + Duration::from_millis(600);
    let mut latencies = Vec::new();
    let (mut ok, mut total) = (0u64, 0u64);
    let mut conn = connect();
    let mut id = 0;
    while Instant::now() < deadline {
        id += 1;
        total += 1;
        let start = Instant::now();
        let served = conn.as_mut().is_some_and(|c| {
            c.get_mut().write_all(&request(id)).is_ok()
                && c.get_mut().flush().is_ok()
                && matches!(read_response(c), Ok((200, _, body)) if body.starts_with(br#"{"jsonrpc":"2.0","id""#))
        });
        latencies.push(start.elapsed().as_secs_f64() * 1000.0);
        if served {
            ok += 1;
        } else {
            conn = connect();
        }
        thread::sleep(Duration::from_millis(20));
    }
    legit_summary(ok, total, latencies)
}

/// What a legitimate client saw: how many of its requests were served, and their p99 (ms).
fn legit_summary(ok: u64, total: u64, mut latencies: Vec<f64>) -> Value {
    latencies.sort_by(f64::total_cmp);
    let p99 = latencies
        .get((latencies.len() * 99 / 100).min(latencies.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    json!({"legit_ok": ok, "legit_total": total, "legit_p99_ms": p99})
}

fn status_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let first = text.lines().next().unwrap_or("").trim();
    if first.is_empty() {
        "connection closed, no answer".to_owned()
    } else {
        first.trim_start_matches("HTTP/1.1 ").to_owned()
    }
}

/// Tallies what a set of attack connections got back.
#[derive(Default)]
struct Tally(std::collections::BTreeMap<String, u64>);

impl Tally {
    fn add(&mut self, what: String) {
        *self.0.entry(what).or_default() += 1;
    }
    fn summary(&self) -> String {
        self.0
            .iter()
            .map(|(what, n)| format!("{n}x {what}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Opens `n` connections that send `head` and then trickle one byte every second until
/// `hold` passes; answers what each got back.
fn slow_connections(port: u16, n: usize, head: &[u8], hold: Duration) -> Tally {
    let mut streams = Vec::new();
    let mut tally = Tally::default();
    for _ in 0..n {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => {
                let _ = s.set_nonblocking(true);
                let _ = (&s).write_all(head);
                streams.push((s, Vec::new(), true));
            }
            Err(_) => tally.add("connect refused".into()),
        }
    }
    let deadline = Instant::now() + hold;
    while Instant::now() < deadline {
        for (stream, answer, open) in &mut streams {
            if !*open {
                continue;
            }
            let mut buf = [0u8; 512];
            match stream.read(&mut buf) {
                Ok(0) => *open = false,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    let _ = stream.write(b"x");
                }
                Err(_) => *open = false,
            }
        }
        thread::sleep(Duration::from_millis(1000));
    }
    for (_, answer, open) in &streams {
        tally.add(if answer.is_empty() && *open {
            "still held open".to_owned()
        } else {
            status_line(answer)
        });
    }
    tally
}

fn http_attack(name: &str, scale: Scale, port: u16, run: Duration) -> Result<Value, String> {
    let refusal = match name {
        "slow-headers" => {
            let head = format!("POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nx-slow: ");
            slow_connections(port, scale.many(1000, 300), head.as_bytes(), run).summary()
        }
        "slow-body" => {
            let head = format!(
                "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: 4194304\r\n\r\n{{"
            );
            // Past the 30 s body deadline in the full run; the quick run shows the connections held.
            let hold = if scale.quick {
                run
            } else {
                Duration::from_secs(34)
            };
            slow_connections(port, scale.many(1000, 300), head.as_bytes(), hold).summary()
        }
        "connection-flood" => {
            let mut held = Vec::new();
            let mut tally = Tally::default();
            for _ in 0..scale.many(4000, 2500) {
                match TcpStream::connect(("127.0.0.1", port)) {
                    Ok(s) => held.push(s),
                    Err(_) => tally.add("connect failed".into()),
                }
            }
            thread::sleep(run / 2);
            for s in &held {
                let _ = s.set_nonblocking(true);
                let mut buf = [0u8; 256];
                match (&*s).read(&mut buf) {
                    Ok(0) => tally.add("closed".into()),
                    Ok(n) => tally.add(status_line(&buf[..n])),
                    Err(_) => tally.add("held open".into()),
                }
            }
            thread::sleep(run / 2);
            tally.summary()
        }
        "initialize-flood" => {
            let pad = "x".repeat(4 * 1024 * 1024 - 256);
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"x","version":"1","pad":"{pad}"}}}}}}"#
            );
            let request = Arc::new(post(port, &[], &body, true));
            let count = scale.many(120, 40);
            let tally = Arc::new(std::sync::Mutex::new(Tally::default()));
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let (request, tally) = (request.clone(), tally.clone());
                    thread::spawn(move || {
                        for _ in 0..count / 4 {
                            let what = match connect(port).and_then(|mut c| {
                                c.get_mut().write_all(&request).map_err(|e| e.to_string())?;
                                read_response(&mut c)
                            }) {
                                Ok((status, headers, body)) => {
                                    let session =
                                        headers.iter().any(|(n, _)| n == "mcp-session-id");
                                    let code = serde_json::from_slice::<Value>(&body)
                                        .ok()
                                        .and_then(|v| v["error"]["code"].as_i64());
                                    format!(
                                        "{status}{}{}",
                                        code.map_or(String::new(), |c| format!(" {c}")),
                                        if session { " + session" } else { " no session" }
                                    )
                                }
                                Err(e) => e,
                            };
                            if let Ok(mut t) = tally.lock() {
                                t.add(what);
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                let _ = t.join();
            }
            tally.lock().map(|t| t.summary()).unwrap_or_default()
        }
        "subscriptions" => subscriptions(port, scale.many(100_000, 10_000), run)?,
        "request-storm" => request_storm(port, scale.many(10_000, 2_000))?,
        "other-principal" => other_principal(port)?,
        "caps-stuffing" => caps_stuffing(port, scale.many(5_000, 1_000))?,
        "detach-loop" => detach_loop(port, scale.many(3_000, 600), run)?,
        "listen-streams" => listen_streams(port, 1_024, run)?,
        "fat-initialize" => fat_initialize(port, scale.many(2_000, 300))?,
        "session-pool" => session_pool(port, 11_000, run)?,
        "task-flood" => tasks::flood(port, 11_000)?,
        other => return Err(format!("unknown attack {other}")),
    };
    Ok(json!({"refusal": refusal}))
}

fn initialize_session(port: u16, token: Option<&str>) -> Result<String, String> {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = Vec::new();
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    // Declares elicitation, so a tool that asks asks this session (detach-loop).
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"a","version":"1"}}}"#;
    let mut c = connect(port)?;
    c.get_mut()
        .write_all(&post(port, &headers, body, true))
        .map_err(|e| e.to_string())?;
    let (status, h, _) = read_response(&mut c)?;
    h.into_iter()
        .find(|(n, _)| n == "mcp-session-id")
        .map(|(_, v)| v)
        .ok_or(format!("initialize answered {status} without a session"))
}

fn subscriptions(port: u16, count: usize, run: Duration) -> Result<String, String> {
    let session = initialize_session(port, None)?;
    let deadline = Instant::now() + run;
    let sent = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(std::sync::Mutex::new(Tally::default()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (session, sent, tally) = (session.clone(), sent.clone(), tally.clone());
            thread::spawn(move || {
                let Ok(mut c) = connect(port) else { return };
                let mut i = t;
                while i < count && Instant::now() < deadline {
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","id":{i},"method":"resources/subscribe","params":{{"uri":"file:///attack/{i:0>80}"}}}}"#
                    );
                    let request = post(port, &[("mcp-session-id", &session)], &body, false);
                    let what = match c.get_mut().write_all(&request).map_err(|e| e.to_string()).and_then(|()| read_response(&mut c)) {
                        Ok((status, _, body)) => {
                            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            match v["error"]["message"].as_str() {
                                Some(m) => format!("{status} {}", m),
                                None => format!("{status} ok"),
                            }
                        }
                        Err(e) => {
                            let Ok(again) = connect(port) else { return };
                            c = again;
                            e
                        }
                    };
                    sent.fetch_add(1, Ordering::SeqCst);
                    if let Ok(mut t) = tally.lock() {
                        t.add(what);
                    }
                    i += 4;
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    let summary = tally.lock().map(|t| t.summary()).unwrap_or_default();
    Ok(format!(
        "{} of {count} sent in {} s: {summary}",
        sent.load(Ordering::SeqCst),
        run.as_secs()
    ))
}

fn request_storm(port: u16, count: usize) -> Result<String, String> {
    let per_thread = count / 50;
    let threads: Vec<_> = (0..50)
        .map(|_| {
            thread::spawn(move || {
                let mut tally = Tally::default();
                let mut open = Vec::new();
                for id in 0..per_thread {
                    match TcpStream::connect(("127.0.0.1", port)) {
                        Ok(mut s) => {
                            let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
                            let _ = s.write_all(&tools_list(port, id as u64, true));
                            open.push(s);
                        }
                        Err(_) => tally.add("connect failed".into()),
                    }
                }
                for s in open {
                    let mut reader = BufReader::new(s);
                    tally.add(match read_response(&mut reader) {
                        Ok((status, _, _)) => status.to_string(),
                        Err(e) => e,
                    });
                }
                tally
            })
        })
        .collect();
    let mut all = Tally::default();
    for t in threads {
        if let Ok(tally) = t.join() {
            for (what, n) in tally.0 {
                *all.0.entry(what).or_default() += n;
            }
        }
    }
    Ok(format!("{count} concurrent calls: {}", all.summary()))
}

fn other_principal(port: u16) -> Result<String, String> {
    let session = initialize_session(port, Some("alice-token"))?;
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let mut c = connect(port)?;
    c.get_mut()
        .write_all(&post(
            port,
            &[
                ("authorization", "Bearer bob-token"),
                ("mcp-session-id", &session),
            ],
            body,
            true,
        ))
        .map_err(|e| e.to_string())?;
    let (status, _, body) = read_response(&mut c)?;
    Ok(format!(
        "bob with alice's session: {status} {}",
        String::from_utf8_lossy(&body)
            .chars()
            .take(60)
            .collect::<String>()
    ))
}

/// The legitimate client beside `session-pool`: bob opens a session (and pings in it) every
/// 20 ms; a refused `initialize` or a failed ping counts as a failure.
fn legit_sessions(port: u16, secs: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs) + Duration::from_millis(600);
    let mut latencies = Vec::new();
    let (mut ok, mut total) = (0u64, 0u64);
    while Instant::now() < deadline {
        total += 1;
        let start = Instant::now();
        let served = initialize_session(port, Some("bob-token")).is_ok_and(|session| {
            let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
            connect(port).is_ok_and(|mut c| {
                c.get_mut()
                    .write_all(&post(
                        port,
                        &[
                            ("authorization", "Bearer bob-token"),
                            ("mcp-session-id", &session),
                        ],
                        ping,
                        true,
                    ))
                    .is_ok()
                    && matches!(read_response(&mut c), Ok((200, _, _)))
            })
        });
        latencies.push(start.elapsed().as_secs_f64() * 1000.0);
        if served {
            ok += 1;
        }
        thread::sleep(Duration::from_millis(20));
    }
    legit_summary(ok, total, latencies)
}

/// Runs `count` jobs on 8 threads and tallies what each answered.
fn on_threads(count: usize, job: impl Fn(usize) -> String + Send + Sync + 'static) -> Tally {
    let job = Arc::new(job);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let job = job.clone();
            thread::spawn(move || {
                let mut tally = Tally::default();
                for i in (t..count).step_by(8) {
                    tally.add(job(i));
                }
                tally
            })
        })
        .collect();
    let mut all = Tally::default();
    for t in threads {
        if let Ok(tally) = t.join() {
            for (what, n) in tally.0 {
                *all.0.entry(what).or_default() += n;
            }
        }
    }
    all
}

/// What one request answered: its status and JSON-RPC error code, or the transport error.
fn answered(port: u16, request: &[u8]) -> String {
    answered_with(port, request, false)
}

/// [`answered`], with the JSON-RPC error's message when `message` is set.
fn answered_with(port: u16, request: &[u8], message: bool) -> String {
    match connect(port).and_then(|mut c| {
        c.get_mut().write_all(request).map_err(|e| e.to_string())?;
        read_response(&mut c)
    }) {
        Ok((status, _, body)) => {
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            match (v["error"]["code"].as_i64(), v["error"]["message"].as_str()) {
                (Some(code), Some(text)) if message => format!("{status} {code} {text}"),
                (Some(code), _) => format!("{status} {code}"),
                _ if v["result"]["resultType"] == "task" => format!("{status} task"),
                _ => format!("{status}"),
            }
        }
        Err(e) => e,
    }
}

/// Review W1: `tools/call run_build` as a task, each with 15 KiB of junk in its capabilities
/// (under the 16 KiB cap), and one in ten with 20 KiB (over it). The tasks wait for an
/// answer that never comes, for their whole TTL.
fn caps_stuffing(port: u16, count: usize) -> Result<String, String> {
    let tally = on_threads(count, move |i| {
        let pad = "x".repeat(if i % 10 == 0 { 20 * 1024 } else { 15 * 1024 });
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"run_build","arguments":{{"project":"p{i}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}},"extensions":{{"io.modelcontextprotocol/tasks":{{}}}},"pad":"{pad}"}}}}}}}}"#
        );
        let request = post(
            port,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "run_build"),
            ],
            &body,
            true,
        );
        answered(port, &request)
    });
    Ok(format!("{count} stuffed calls: {}", tally.summary()))
}

/// Review W2: in one legacy session, `tools/call provision` (which elicits) over SSE, read
/// until the elicitation arrives, hang up, again: each handler runs on, detached.
fn detach_loop(port: u16, count: usize, run: Duration) -> Result<String, String> {
    let session = initialize_session(port, None)?;
    let deadline = Instant::now() + run;
    let mut tally = Tally::default();
    for i in 0..count {
        if Instant::now() > deadline {
            break;
        }
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"provision","arguments":{{"name":"db{i}"}}}}}}"#
        );
        let request = post(port, &[("mcp-session-id", &session)], &body, true);
        let what = connect(port).and_then(|mut c| {
            c.get_mut().write_all(&request).map_err(|e| e.to_string())?;
            let mut seen = Vec::new();
            let mut chunk = [0u8; 2048];
            loop {
                let n = c.get_mut().read(&mut chunk).map_err(|e| e.to_string())?;
                if n == 0 {
                    return Ok(status_line(&seen));
                }
                seen.extend_from_slice(&chunk[..n]);
                if seen.windows(18).any(|w| w == b"elicitation/create") {
                    return Ok("elicited, then hung up".to_owned());
                }
                if !seen.starts_with(b"HTTP/1.1 200") && seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    let text = String::from_utf8_lossy(&seen).into_owned();
                    let last = text.lines().last().unwrap_or("").to_owned();
                    return Ok(format!("{}: {last}", status_line(&seen)));
                }
            }
        });
        tally.add(what.unwrap_or_else(|e| e));
    }
    Ok(tally.summary())
}

/// Review W4: one client opens `count` listen streams and holds them unread for `run`.
fn listen_streams(port: u16, count: usize, run: Duration) -> Result<String, String> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let request = post(
        port,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ],
        body,
        false,
    );
    let mut held = Vec::new();
    let mut tally = Tally::default();
    for _ in 0..count {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut s) => {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = s.write_all(&request);
                let mut head = [0u8; 512];
                let n = s.read(&mut head).unwrap_or(0);
                let status = status_line(&head[..n]);
                if status.starts_with("200") {
                    tally.add("stream held open".into());
                } else {
                    let text = String::from_utf8_lossy(&head[..n]).into_owned();
                    tally.add(format!("{status}: {}", text.lines().last().unwrap_or("")));
                }
                held.push(s);
            }
            Err(_) => tally.add("connect failed".into()),
        }
    }
    thread::sleep(run);
    Ok(tally.summary())
}

/// Review W5: legacy sessions opened with 90 headers of 4 KB each (~360 KB of headers).
fn fat_initialize(port: u16, count: usize) -> Result<String, String> {
    let pad = "p".repeat(4000);
    let names: Vec<String> = (0..90).map(|i| format!("x-pad-{i}")).collect();
    let tally = on_threads(count, move |_| {
        let headers: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), pad.as_str())).collect();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fat","version":"1"}}}"#;
        answered(port, &post(port, &headers, body, true))
    });
    Ok(format!(
        "{count} initialize with ~360 KB of headers: {}",
        tally.summary()
    ))
}

/// Review W6: alice opens `count` sessions (more than the whole pool) as fast as she can,
/// while bob opens his own beside her.
fn session_pool(port: u16, count: usize, run: Duration) -> Result<String, String> {
    let deadline = Instant::now() + run;
    let tally = on_threads(count, move |_| {
        if Instant::now() > deadline {
            return "not sent (time)".to_owned();
        }
        match initialize_session(port, Some("alice-token")) {
            Ok(_) => "session".to_owned(),
            Err(e) => e,
        }
    });
    Ok(format!("alice's {count} initialize: {}", tally.summary()))
}

fn stdio_attack(name: &str, scale: Scale, bin: &Path) -> Result<Value, String> {
    let mut child = Command::new(bin)
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let pid = child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let dog = watchdog(pid, stop.clone());
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let legit = |id: u64| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{MODERN_META}}}}}"#)
            + "\n"
    };
    // Reads answers on a thread of its own, so a server that stops answering cannot hang us.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = move || {
        let mut lines = BufReader::new(stdout);
        let mut line = String::new();
        while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
            if tx.send(std::mem::take(&mut line)).is_err() {
                return;
            }
        }
    };
    let mut refusal;
    let (mut ok, mut total) = (0u64, 0u64);
    let mut latencies = Vec::new();
    match name {
        "stdio-5mb-line" | "stdio-1gb-line" => {
            thread::spawn(reader);
            let size: usize = if name == "stdio-5mb-line" {
                5 << 20
            } else if scale.quick {
                256 << 20
            } else {
                1 << 30
            };
            let chunk = vec![b'x'; 1 << 20];
            let mut written = 0;
            while written < size {
                if stdin.write_all(&chunk).is_err() {
                    break;
                }
                written += chunk.len();
            }
            let _ = stdin.write_all(b"\n");
            refusal = format!("{} MiB line", written >> 20);
            for id in 1..=20 {
                total += 1;
                let sent = Instant::now();
                let _ = stdin.write_all(legit(id).as_bytes());
                let _ = stdin.flush();
                loop {
                    match rx.recv_timeout(Duration::from_secs(30)) {
                        Ok(line) if line.contains(&format!(r#""id":{id},"#)) => {
                            ok += 1;
                            latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                            break;
                        }
                        Ok(line) => {
                            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                            refusal = format!(
                                "{refusal}: {} {}",
                                v["error"]["code"],
                                v["error"]["message"].as_str().unwrap_or("")
                            );
                        }
                        Err(_) => break,
                    }
                }
            }
        }
        _ => {
            // Never read stdout while writing requests for a while, then read again.
            let written = Arc::new(AtomicU64::new(0));
            let count = scale.many(100_000, 20_000) as u64;
            let writer = {
                let written = written.clone();
                thread::spawn(move || {
                    for id in 1..=count {
                        if stdin.write_all(legit(id).as_bytes()).is_err() {
                            return;
                        }
                        written.store(id, Ordering::SeqCst);
                    }
                    drop(stdin);
                })
            };
            thread::sleep(Duration::from_secs(scale.secs()));
            let stalled = written.load(Ordering::SeqCst);
            refusal =
                format!("server read {stalled} of {count} requests while its stdout was not read");
            thread::spawn(reader);
            let deadline = Instant::now() + Duration::from_secs(60);
            while total < count && Instant::now() < deadline {
                match rx.recv_timeout(Duration::from_secs(10)) {
                    Ok(line) => {
                        total += 1;
                        if line.contains(r#""result""#) {
                            ok += 1;
                        }
                    }
                    Err(_) => break,
                }
            }
            total = count;
            let _ = writer.join();
        }
    }
    let last = kib(pid, "VmHWM:").unwrap_or(0);
    stop.store(true, Ordering::SeqCst);
    let (killed, seen) = dog.join().unwrap_or((false, 0));
    let peak_kib = last.max(seen);
    if killed {
        refusal = format!("server killed past {} GiB; {refusal}", HARD_RSS_KIB >> 20);
    }
    let _ = child.kill();
    let _ = child.wait();
    latencies.sort_by(f64::total_cmp);
    let p99 = latencies.last().copied().unwrap_or(0.0);
    Ok(
        json!({"peak_kib": peak_kib, "refusal": refusal, "legit_ok": ok, "legit_total": total, "legit_p99_ms": p99}),
    )
}
