//! Security review X6 against the `files` example exporting OpenTelemetry to a receiver of
//! this run (OTLP/HTTP, which it answers `200` and weighs): a client calls 40 tools that do not
//! exist, each named with 64 KiB. The metrics an operator's collector receives must not keep
//! those names (every later export carried 2.6 MB before), and no span batch may carry them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use super::{
    Attack, Outcome, Scale, connect, free_port, keepalive_client, kib, on_threads, post,
    spawn_http, tools_list, watchdog,
};

/// What the receiver got: `(path, body bytes)` of each export, in order.
type Exports = Arc<Mutex<Vec<(String, usize)>>>;

/// An OTLP/HTTP receiver on loopback: answers every POST `200`, keeps each body's size.
fn receiver() -> Result<(u16, Exports), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let exports: Exports = Arc::default();
    let kept = exports.clone();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = kept.clone();
            thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let mut length = 0;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    if let Ok(mut exports) = kept.lock() {
                        exports.push((path, length));
                    }
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(ok).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok((port, exports))
}

/// The size of the last metrics export the receiver got.
fn last_metrics(exports: &Exports) -> usize {
    exports
        .lock()
        .ok()
        .and_then(|e| {
            e.iter()
                .rev()
                .find(|(p, _)| p == "/v1/metrics")
                .map(|(_, n)| *n)
        })
        .unwrap_or(0)
}

pub(super) fn run(attack: Attack, scale: Scale, bin_dir: &Path) -> Result<Outcome, String> {
    let (otlp, exports) = receiver()?;
    let port = free_port()?;
    let bin = bin_dir.join("files");
    let endpoint = format!("http://127.0.0.1:{otlp}");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "500"),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ];
    let server = spawn_http(&bin, port, &[], &env, Stdio::null())?;
    let pid = server.child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let dog = watchdog(pid, stop.clone());
    let secs = scale.secs();
    let legit = thread::spawn(move || {
        keepalive_client(
            secs,
            || connect(port).ok(),
            |id| tools_list(port, id, false),
        )
    });
    // What the metrics weigh with the legitimate client's calls alone.
    thread::sleep(Duration::from_millis(1500));
    let baseline = last_metrics(&exports);
    let names = 40;
    let tally = on_threads(names, move |i| {
        let name = format!("x{i}{}", "n".repeat(64 * 1024));
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"{name}","arguments":{{}},{}}}}}"#,
            super::MODERN_META
        );
        let request = post(
            port,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", &name),
            ],
            &body,
            true,
        );
        super::answered(port, &request)
    });
    let legit = legit.join().map_err(|_| "the legitimate client panicked")?;
    // Two export intervals after the attack: what the collector keeps receiving.
    thread::sleep(Duration::from_millis(1200));
    let after = last_metrics(&exports);
    let largest_spans = exports
        .lock()
        .ok()
        .and_then(|e| {
            e.iter()
                .filter(|(p, _)| p == "/v1/traces")
                .map(|(_, n)| *n)
                .max()
        })
        .unwrap_or(0);
    let last = kib(pid, "VmHWM:").unwrap_or(0);
    stop.store(true, Ordering::SeqCst);
    let (_, seen) = dog.join().unwrap_or((false, 0));
    drop(server);
    let mut violations = Vec::new();
    if after > baseline + 64 * 1024 {
        violations.push(format!(
            "every metrics export keeps the names: {baseline} B before, {after} B after"
        ));
    }
    if largest_spans > names * 64 * 1024 / 2 {
        violations.push(format!("a span batch of {largest_spans} B"));
    }
    Ok(Outcome {
        name: attack.name.to_owned(),
        peak_mib: last.max(seen) as f64 / 1024.0,
        legit: super::legit_of(&legit),
        refusal: format!(
            "{names} tools named with 64 KiB: {}; metrics export {baseline} B before, {after} B after; largest span batch {largest_spans} B",
            tally.summary()
        ),
        violation: (!violations.is_empty()).then(|| violations.join(", ")),
    })
}
