//! stdio: cold start, idle memory, sequential round trips (one request in flight) and their
//! server CPU.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};

use crate::wire::{self, Answer};
use crate::{Settings, percentile, procfs, text_for};

struct Pipe {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Pipe {
    /// One round trip of `echo`, checked. Notifications before the response are skipped.
    async fn round_trip(&mut self, id: u64) -> Result<(), String> {
        let text = text_for(id);
        let mut line = wire::call_body(id, "echo", &text, None);
        line.push(b'\n');
        self.stdin
            .write_all(&line)
            .await
            .map_err(|e| format!("write: {e}"))?;
        self.stdin
            .flush()
            .await
            .map_err(|e| format!("flush: {e}"))?;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(|e| format!("read: {e}"))?
                .ok_or("the server closed stdout")?;
            let message: Value =
                serde_json::from_str(&line).map_err(|e| format!("not JSON: {e}: {line}"))?;
            if message.get("id").is_none() && message.get("method").is_some() {
                continue;
            }
            return match wire::check_message(&message, id, &text, false)? {
                Answer::Complete => Ok(()),
                Answer::InputRequired(_) => Err("echo asked for input".into()),
            };
        }
    }
}

/// Runs the stdio suite against one server.
pub async fn run(settings: &Settings) -> Result<Value, String> {
    let spawned = Instant::now();
    let mut child = Command::new(&settings.command[0])
        .args(&settings.command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start {:?}: {e}", settings.command))?;
    let pid = child.id().ok_or("server has no pid")?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut pipe = Pipe {
        stdin,
        lines: BufReader::new(stdout).lines(),
    };
    let outcome = async {
        pipe.round_trip(1).await?;
        let cold = spawned.elapsed();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let idle_rss = procfs::memory_kb(pid, "VmRSS")?;
        let mut id = 1_000;
        let warm_until = Instant::now() + settings.warmup;
        while Instant::now() < warm_until {
            id += 1;
            pipe.round_trip(id).await?;
        }
        let cpu_start = procfs::cpu_us(pid)?;
        let start = Instant::now();
        let mut latencies = Vec::with_capacity(65_536);
        while start.elapsed() < settings.secs {
            id += 1;
            let sent = Instant::now();
            pipe.round_trip(id).await?;
            latencies.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32);
        }
        let secs = start.elapsed().as_secs_f64();
        let cpu = procfs::cpu_us(pid)?.saturating_sub(cpu_start);
        latencies.sort_unstable();
        let n = latencies.len().max(1) as f64;
        Ok::<_, String>(json!({
            "cold_start_ms": cold.as_secs_f64() * 1e3,
            "idle_rss_kb": idle_rss,
            "round_trips": latencies.len(),
            "rps": latencies.len() as f64 / secs,
            "p50_us": percentile(&latencies, 50.0),
            "p99_us": percentile(&latencies, 99.0),
            "cpu_us_per_req": cpu as f64 / n,
        }))
    }
    .await;
    // Close stdin (the polite shutdown), then make sure our child is gone.
    drop(pipe);
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
    outcome
}
