//! Security review X1-X3 against a fleet: two `fleet` instances (A and B) on one redis-server,
//! each naming loopback as its trusted proxy (`MCP_TRUSTED_PROXIES`), as behind the fleet's
//! nginx. A legitimate client holds a 2025-11-25 session opened from its own address (the
//! `X-Forwarded-For` a proxy appends) and calls it on A and B in turn for the whole attack.
//!
//! - `replay-stuffing` (X1): anonymous `reindex` tasks, each with a megabyte of arguments the
//!   tool does not declare; the attacker gets what Redis keeps for them.
//! - `bus-amplification` (X2): a session held on both instances, then subscriptions to 2 KB
//!   URIs and cancellations with 64 KiB reasons; a pattern subscriber counts the bytes on the
//!   fleet's bus channels, and the run fails past one bus byte per byte the attacker sent.
//! - `proxy-eviction` (X3): more `initialize`s than one client's share of sessions, all from
//!   one address behind the proxy; another client's idle session must stay.
//! - `anonymous-rate` (X4): an anonymous caller spends its `lookup` rate limit (shared by the
//!   fleet in Redis) and goes on; an anonymous caller from another address must be served.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{
    Attack, Outcome, Scale, Server, Tally, connect, free_port, kib, legit_summary, on_threads,
    post, read_response, spawn_http, watchdog,
};

/// The address the legitimate client comes from, as the proxy names it.
const LEGIT_ADDRESS: &str = "203.0.113.7";
/// The attacker's address, as the proxy names it.
const ATTACKER_ADDRESS: &str = "198.51.100.9";
/// The fleet's Redis key prefix (the example's default).
const PREFIX: &str = "fleet";

/// A `fleet` instance (killed on drop) and its port.
struct Instance {
    server: Server,
    port: u16,
}

fn start_instance(bin: &Path, name: &str, redis: &str) -> Result<Instance, String> {
    let port = free_port()?;
    let env = [
        ("MCP_STATE_KEYS", "attack-fleet-state-key-0123456789abcdef"),
        ("MCP_REDIS_URL", redis),
        ("MCP_INSTANCE", name),
        ("MCP_TRUSTED_PROXIES", "127.0.0.1"),
    ];
    let server = spawn_http(bin, port, &[], &env, Stdio::null())?;
    Ok(Instance { server, port })
}

/// One command to Redis on `port` (RESP), its reply read whole: a simple string, an integer
/// or a bulk string as text, an array as its elements (one level deep is all this needs).
fn redis(port: u16, args: &[&str]) -> Result<Vec<String>, String> {
    let mut command = format!("*{}\r\n", args.len());
    for arg in args {
        command.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("Redis: {e}"))?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream);
    reader
        .get_mut()
        .write_all(command.as_bytes())
        .map_err(|e| format!("Redis: {e}"))?;
    read_reply(&mut reader)
}

fn read_reply(reader: &mut impl BufRead) -> Result<Vec<String>, String> {
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .map_err(|e| format!("Redis: {e}"))?;
    let line = line.trim_end();
    let (kind, rest) = line.split_at(line.len().min(1));
    match kind {
        "+" | ":" => Ok(vec![rest.to_owned()]),
        "-" => Err(format!("Redis: {rest}")),
        "$" => {
            let len: i64 = rest.parse().map_err(|_| format!("Redis: {line}"))?;
            if len < 0 {
                return Ok(Vec::new());
            }
            let mut bytes = vec![0; len as usize + 2];
            reader
                .read_exact(&mut bytes)
                .map_err(|e| format!("Redis: {e}"))?;
            bytes.truncate(len as usize);
            Ok(vec![String::from_utf8_lossy(&bytes).into_owned()])
        }
        "*" => {
            let n: i64 = rest.parse().map_err(|_| format!("Redis: {line}"))?;
            let mut items = Vec::new();
            for _ in 0..n.max(0) {
                items.extend(read_reply(reader)?);
            }
            Ok(items)
        }
        _ => Err(format!("Redis answered {line:?}")),
    }
}

/// Redis's `used_memory`, in bytes.
fn used_memory(port: u16) -> u64 {
    redis(port, &["INFO", "memory"])
        .ok()
        .and_then(|info| {
            info.first()?
                .lines()
                .find_map(|l| l.strip_prefix("used_memory:"))?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// The keys matching `pattern` (SCAN, all of them) with their sizes (`STRLEN`).
fn sizes_of(port: u16, pattern: &str) -> Vec<u64> {
    let mut keys = Vec::new();
    let mut cursor = "0".to_owned();
    while let Ok(reply) = redis(port, &["SCAN", &cursor, "MATCH", pattern, "COUNT", "1000"]) {
        let Some((next, found)) = reply.split_first() else {
            break;
        };
        keys.extend(found.iter().cloned());
        cursor = next.clone();
        if cursor == "0" {
            break;
        }
    }
    keys.iter()
        .filter_map(|k| redis(port, &["STRLEN", k]).ok()?.first()?.parse().ok())
        .collect()
}

/// Counts the bytes of every message on the fleet's bus channels until `stop`, from a
/// pattern subscription (which no publish counts as a listener).
fn bus_counter(port: u16, stop: Arc<AtomicBool>) -> Result<thread::JoinHandle<u64>, String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("Redis: {e}"))?;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut reader = BufReader::new(stream);
    let pattern = format!("{PREFIX}:bus:*");
    let command = format!(
        "*2\r\n$10\r\nPSUBSCRIBE\r\n${}\r\n{pattern}\r\n",
        pattern.len()
    );
    reader
        .get_mut()
        .write_all(command.as_bytes())
        .map_err(|e| format!("Redis: {e}"))?;
    read_reply(&mut reader)?;
    Ok(thread::spawn(move || {
        let mut bytes = 0;
        while !stop.load(Ordering::SeqCst) {
            // A pmessage: pattern, channel, payload.
            match read_reply(&mut reader) {
                Ok(parts) if parts.len() == 4 => bytes += parts[3].len() as u64,
                Ok(_) => {}
                Err(e) if e.contains("timed out") || e.contains("would block") => {}
                Err(_) => break,
            }
        }
        bytes
    }))
}

fn legacy_post(port: u16, session: Option<&str>, from: &str, body: &str) -> Vec<u8> {
    let mut headers = vec![
        ("mcp-protocol-version", "2025-11-25"),
        ("x-forwarded-for", from),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    post(port, &headers, body, false)
}

/// Opens a 2025-11-25 session on `port` from `from` (the proxy's `X-Forwarded-For`).
fn open_session(port: u16, from: &str) -> Result<String, String> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attack","version":"1"}}}"#;
    let mut c = connect(port)?;
    c.get_mut()
        .write_all(&legacy_post(port, None, from, body))
        .map_err(|e| e.to_string())?;
    let (status, headers, _) = read_response(&mut c)?;
    headers
        .into_iter()
        .find(|(n, _)| n == "mcp-session-id")
        .map(|(_, v)| v)
        .ok_or(format!("initialize answered {status} without a session"))
}

/// The legitimate client: `ping` on its session every 20 ms, on A and B in turn, until `stop`.
fn legit(ports: [u16; 2], stop: Arc<AtomicBool>) -> Result<thread::JoinHandle<Value>, String> {
    let session = open_session(ports[0], LEGIT_ADDRESS)?;
    Ok(thread::spawn(move || {
        let mut latencies = Vec::new();
        let (mut ok, mut total) = (0u64, 0u64);
        let mut conns = [connect(ports[0]).ok(), connect(ports[1]).ok()];
        while !stop.load(Ordering::SeqCst) {
            let i = (total % 2) as usize;
            total += 1;
            let body = format!(r#"{{"jsonrpc":"2.0","id":{total},"method":"ping"}}"#);
            let request = legacy_post(ports[i], Some(&session), LEGIT_ADDRESS, &body);
            let start = Instant::now();
            let served = conns[i].as_mut().is_some_and(|c| {
                c.get_mut().write_all(&request).is_ok()
                    && matches!(read_response(c), Ok((200, _, _)))
            });
            latencies.push(start.elapsed().as_secs_f64() * 1000.0);
            if served {
                ok += 1;
            } else {
                conns[i] = connect(ports[i]).ok();
            }
            thread::sleep(Duration::from_millis(20));
        }
        legit_summary(ok, total, latencies)
    }))
}

/// What the attacker sent and got, and a bound the run checks beyond RSS.
struct Got {
    refusal: String,
    violation: Option<String>,
}

pub(super) fn run(attack: Attack, scale: Scale, bin_dir: &Path) -> Result<Outcome, String> {
    let redis = crate::redis::Redis::start()?;
    let redis_port = redis.port();
    let bin = bin_dir.join("fleet");
    let a = start_instance(&bin, "a", &redis.url())?;
    let b = start_instance(&bin, "b", &redis.url())?;
    let ports = [a.port, b.port];
    let stop = Arc::new(AtomicBool::new(false));
    let dog = watchdog(a.server.child.id(), stop.clone());
    let legit_stop = Arc::new(AtomicBool::new(false));
    let legit = legit(ports, legit_stop.clone())?;
    thread::sleep(Duration::from_millis(300));
    let got = match attack.name {
        "replay-stuffing" => replay_stuffing(ports, redis_port, scale.many(200, 30)),
        "bus-amplification" => bus_amplification(ports, redis_port, scale),
        "proxy-eviction" => proxy_eviction(ports, scale.many(3000, 1200)),
        "anonymous-rate" => anonymous_rate(ports, scale.many(1000, 200)),
        other => Err(format!("no fleet attack {other}")),
    };
    thread::sleep(Duration::from_millis(300));
    legit_stop.store(true, Ordering::SeqCst);
    let legit = legit.join().map_err(|_| "the legitimate client panicked")?;
    let last = kib(a.server.child.id(), "VmHWM:").unwrap_or(0);
    stop.store(true, Ordering::SeqCst);
    let (_, seen) = dog.join().unwrap_or((false, 0));
    drop((a, b, redis));
    let got = got?;
    Ok(Outcome {
        name: attack.name.to_owned(),
        peak_mib: last.max(seen) as f64 / 1024.0,
        legit: super::legit_of(&legit),
        refusal: got.refusal,
        violation: got.violation,
    })
}

/// X1: anonymous `reindex` tasks with a megabyte of undeclared arguments each.
fn replay_stuffing(ports: [u16; 2], redis: u16, count: usize) -> Result<Got, String> {
    let before = used_memory(redis);
    let pad = "x".repeat(1 << 20);
    let body = Arc::new(move |i: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"reindex","arguments":{{"index":"i{i}","pad":"{pad}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}},"extensions":{{"io.modelcontextprotocol/tasks":{{}}}}}}}}}}}}"#
        )
    });
    let tally = on_threads(count, move |i| {
        let port = ports[i % 2];
        let request = post(
            port,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "reindex"),
                ("x-forwarded-for", ATTACKER_ADDRESS),
            ],
            &body(i),
            true,
        );
        super::answered(port, &request)
    });
    let replays = sizes_of(redis, &format!("{PREFIX}:task-replay:*"));
    let kept: u64 = replays.iter().sum();
    let largest = replays.iter().max().copied().unwrap_or(0);
    let grew = used_memory(redis).saturating_sub(before);
    Ok(Got {
        refusal: format!(
            "{count} calls of 1 MiB: {}; Redis keeps {} replays, {} KiB in all, the largest {} B; used_memory +{:.1} MiB",
            tally.summary(),
            replays.len(),
            kept / 1024,
            largest,
            grew as f64 / (1 << 20) as f64
        ),
        violation: (largest > 64 * 1024).then(|| format!("a replay of {largest} B was kept")),
    })
}

/// X2: what one client makes the bus carry, per byte it sends.
fn bus_amplification(ports: [u16; 2], redis: u16, scale: Scale) -> Result<Got, String> {
    let session = open_session(ports[0], ATTACKER_ADDRESS)?;
    // Held on both instances.
    let mut conns = [connect(ports[0])?, connect(ports[1])?];
    let ping = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
    for (c, port) in conns.iter_mut().zip(ports) {
        c.get_mut()
            .write_all(&legacy_post(port, Some(&session), ATTACKER_ADDRESS, ping))
            .map_err(|e| e.to_string())?;
        read_response(c)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let counter = bus_counter(redis, stop.clone())?;
    let mut sent: u64 = 0;
    let mut tally = Tally::default();
    let rounds = scale.many(400, 100);
    let reason = "r".repeat(64 * 1024);
    for i in 0..rounds {
        let body = if i % 2 == 0 {
            let uri = format!("fleet://notices/{i}/{}", "u".repeat(2000));
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"resources/subscribe","params":{{"uri":"{uri}"}}}}"#,
                i + 1
            )
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":"w{i}","reason":"{reason}"}}}}"#
            )
        };
        let port = ports[i % 2];
        let c = &mut conns[i % 2];
        sent += body.len() as u64;
        let what = c
            .get_mut()
            .write_all(&legacy_post(port, Some(&session), ATTACKER_ADDRESS, &body))
            .map_err(|e| e.to_string())
            .and_then(|()| read_response(c))
            .map(|(status, _, _)| status.to_string())
            .unwrap_or_else(|e| e);
        tally.add(what);
    }
    // What the instances publish after the last request.
    thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let bus = counter.join().map_err(|_| "the bus counter panicked")?;
    let ratio = bus as f64 / sent.max(1) as f64;
    Ok(Got {
        refusal: format!(
            "{rounds} requests, {} KiB sent: {}; bus {} KiB ({ratio:.3} bus bytes per byte sent)",
            sent / 1024,
            tally.summary(),
            bus / 1024
        ),
        violation: (ratio > 1.0).then(|| format!("{ratio:.2} bus bytes per attacker byte")),
    })
}

/// X3: more sessions on instance A than one client's share, from one address behind the proxy, while another
/// client (another address) holds a session it does not use meanwhile: a share evicts its own
/// client's least recently used session, and behind a proxy that is not trusted every session
/// is the proxy's.
fn proxy_eviction(ports: [u16; 2], count: usize) -> Result<Got, String> {
    let idle = open_session(ports[0], LEGIT_ADDRESS)?;
    let tally = on_threads(count, move |_| {
        match open_session(ports[0], ATTACKER_ADDRESS) {
            Ok(_) => "200 session".to_owned(),
            Err(e) => e,
        }
    });
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let mut kept = Vec::new();
    for port in ports {
        let mut c = connect(port)?;
        c.get_mut()
            .write_all(&legacy_post(port, Some(&idle), LEGIT_ADDRESS, ping))
            .map_err(|e| e.to_string())?;
        kept.push(read_response(&mut c)?.0);
    }
    let lost = kept.iter().any(|&status| status != 200);
    Ok(Got {
        refusal: format!(
            "{count} initialize from one address: {}; another client's idle session then answers {kept:?}",
            tally.summary()
        ),
        violation: lost.then(|| "another client's idle session was closed".to_owned()),
    })
}

/// `tools/call lookup` (2026-07-28, anonymous) from `from`: whether it was served, or the
/// JSON-RPC error's message.
fn lookup(port: u16, i: usize, from: &str) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"lookup","arguments":{{"service":"s{i}"}},{}}}}}"#,
        super::MODERN_META
    );
    let request = post(
        port,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "lookup"),
            ("x-forwarded-for", from),
        ],
        &body,
        true,
    );
    super::answered_with(port, &request, true)
}

/// X4: one anonymous caller spends the rate limit, on both instances; another must not share
/// its bucket.
fn anonymous_rate(ports: [u16; 2], count: usize) -> Result<Got, String> {
    // The refusals' messages differ only in the time they name.
    let tally = on_threads(count, move |i| {
        let answer = lookup(ports[i % 2], i, ATTACKER_ADDRESS);
        answer.split("; try again").next().unwrap_or("").to_owned()
    });
    let others: Vec<String> = (0..5)
        .map(|i| lookup(ports[i % 2], 10_000 + i, LEGIT_ADDRESS))
        .collect();
    let refused = others.iter().filter(|a| *a != "200").count();
    Ok(Got {
        refusal: format!(
            "{count} calls from one address: {}; another anonymous caller then got {}",
            tally.summary(),
            Tally(others.iter().fold(Default::default(), |mut m, a| {
                *m.entry(a.clone()).or_default() += 1;
                m
            }))
            .summary()
        ),
        violation: (refused > 0)
            .then(|| format!("another anonymous caller was refused {refused} of 5 calls")),
    })
}
