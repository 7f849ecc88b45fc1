//! Security review X5 against the `shop` example, whose audit log (`mcp::audit`, one line per
//! call) goes to stderr: alice sends `tools/call browse` with JSON-RPC ids that carry a newline,
//! a whole forged audit line saying bob checked out, and a terminal escape, and methods of a
//! megabyte on the legacy path. What an operator reads must hold one line per event: no forged
//! line, no escape byte, no line past a few kilobytes.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::json;

use super::{
    Attack, Outcome, Scale, connect, free_port, keepalive_client, kib, on_threads, post,
    spawn_http, watchdog,
};

/// The audit line the attacker tries to forge, attributed to bob.
const FORGED: &str = "2026-12-06T09:00:00Z  INFO mcp::audit: audit id=77 method=tools/call target=\"checkout\" subject=\"bob\" outcome=complete";

fn browse(port: u16, id: &serde_json::Value, token: &str) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "browse", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let bearer = format!("Bearer {token}");
    post(
        port,
        &[
            ("authorization", &bearer),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "browse"),
        ],
        &body.to_string(),
        false,
    )
}

pub(super) fn run(attack: Attack, scale: Scale, bin_dir: &Path) -> Result<Outcome, String> {
    let port = free_port()?;
    let log_path =
        std::env::temp_dir().join(format!("mcp-attack-audit-{}.log", std::process::id()));
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let bin = bin_dir.join("shop");
    let env = [("RUST_LOG", "warn,mcp::audit=info")];
    let server = spawn_http(&bin, port, &[], &env, Stdio::from(log))?;
    let pid = server.child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let dog = watchdog(pid, stop.clone());
    let secs = scale.secs();
    let legit = thread::spawn(move || {
        keepalive_client(
            secs,
            || connect(port).ok(),
            |id| browse(port, &json!(id), "bob-browse"),
        )
    });
    thread::sleep(Duration::from_millis(300));
    let count = scale.many(2000, 300);
    let id = format!("1\n{FORGED}\n\u{1b}]0;owned\u{7}");
    let long_method = "m".repeat(1 << 20);
    let tally = on_threads(count, move |i| {
        let request = if i % 10 == 9 {
            // A megabyte method on the legacy path, where no header names it.
            let body = json!({"jsonrpc": "2.0", "id": format!("{id}{i}"), "method": long_method});
            post(
                port,
                &[
                    ("authorization", "Bearer alice-browse"),
                    ("mcp-protocol-version", "2025-11-25"),
                ],
                &body.to_string(),
                true,
            )
        } else {
            browse(port, &json!(format!("{id}{i}")), "alice-browse")
        };
        super::answered(port, &request)
    });
    thread::sleep(Duration::from_millis(300));
    let legit = legit.join().map_err(|_| "the legitimate client panicked")?;
    let last = kib(pid, "VmHWM:").unwrap_or(0);
    stop.store(true, Ordering::SeqCst);
    let (_, seen) = dog.join().unwrap_or((false, 0));
    drop(server);
    let text = std::fs::read(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let _ = std::fs::remove_file(&log_path);
    let lines = String::from_utf8_lossy(&text);
    // A forged record is a line of its own that starts as the attacker wrote it.
    let forged = lines
        .lines()
        .filter(|l| l.trim_start().starts_with("2026-12-06T09:00:00Z"))
        .count();
    let escapes = text.iter().filter(|&&b| b == 0x1b).count();
    let longest = lines.lines().map(str::len).max().unwrap_or(0);
    let audits = lines.lines().filter(|l| l.contains("mcp::audit")).count();
    let mut violations = Vec::new();
    if forged > 0 {
        violations.push(format!("{forged} forged audit line(s)"));
    }
    if escapes > 0 {
        violations.push(format!("{escapes} escape byte(s) in the log"));
    }
    if longest > 16 * 1024 {
        violations.push(format!("a log line of {longest} bytes"));
    }
    Ok(Outcome {
        name: attack.name.to_owned(),
        peak_mib: last.max(seen) as f64 / 1024.0,
        legit: super::legit_of(&legit),
        refusal: format!(
            "{count} calls: {}; the log: {audits} audit lines, {forged} forged, {escapes} escape bytes, longest line {longest} B",
            tally.summary()
        ),
        violation: (!violations.is_empty()).then(|| violations.join(", ")),
    })
}
