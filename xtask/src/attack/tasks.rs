//! Review W9 against `builds --auth`: alice creates `run_build` tasks that wait for an answer
//! she never gives, more than the whole store holds (11,000 against 10,000); bob creates tasks
//! beside her until two seconds after she stops.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{answered, answered_with, legit_summary, on_threads, post};

/// `tools/call run_build` as a task (the client declares the Tasks extension and
/// elicitation), as the holder of `token`.
fn task_call(port: u16, id: usize, token: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"run_build","arguments":{{"project":"p{id}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}},"extensions":{{"io.modelcontextprotocol/tasks":{{}}}}}}}}}}}}"#
    );
    let bearer = format!("Bearer {token}");
    post(
        port,
        &[
            ("authorization", &bearer),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "run_build"),
        ],
        &body,
        true,
    )
}

/// Alice's `count` task calls, on 8 threads: each task stops at the build's question and
/// waits there for its whole TTL.
pub(super) fn flood(port: u16, count: usize) -> Result<String, String> {
    let tally = on_threads(count, move |i| {
        answered_with(port, &task_call(port, i, "alice-token"), true)
    });
    Ok(format!("alice's {count} task calls: {}", tally.summary()))
}

/// The legitimate client: bob creates a task every 20 ms (each also waiting for an answer)
/// until `stop` exists (the attack has ended) or `secs` pass; an answer that is not a created
/// task counts as a failure.
pub(super) fn legit_bob(port: u16, secs: u64, stop: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut latencies = Vec::new();
    let (mut ok, mut total) = (0u64, 0u64);
    while Instant::now() < deadline && !stop.exists() {
        total += 1;
        let start = Instant::now();
        let served = answered(port, &task_call(port, total as usize, "bob-token")) == "200 task";
        latencies.push(start.elapsed().as_secs_f64() * 1000.0);
        if served {
            ok += 1;
        }
        thread::sleep(Duration::from_millis(20));
    }
    legit_summary(ok, total, latencies)
}
