//! The benchmark's load generator, driven by `cargo xtask bench`. It starts the server under
//! test itself (so it knows its PID and when it started), measures it, stops it, and prints
//! one JSON object on stdout.
//!
//!     loadgen http  [--secs S] [--warmup S] [--conns 1,16,64] [--flow N] [--task N] [--task-get N] [--latency] -- SERVER ARGS…
//!     loadgen stdio [--secs S] [--warmup S] -- SERVER ARGS…
//!     loadgen sessions [--sessions N] [--streams-only] -- SERVER ARGS…   memory per idle legacy session and SSE stream
//!     loadgen scale --kind K --steps 1000,10000 [--probe S] [--watch PID] -- SERVER ARGS…   how the cost grows
//!                   (kinds: sessions, streams, listen, tasks, tools; see `scale.rs`)
//!
//! `{port}` in the server's arguments becomes a free loopback port. Every request is a
//! 2026-07-28 `tools/call` with its headers and `_meta`; every answer's id and echoed text are
//! checked, and one wrong answer fails the run. `--latency` adds the streamed exchanges one at a
//! time (a legacy elicitation round trip, an SSE-streamed 2026-07-28 call; see `latency.rs`).

use std::time::Duration;

mod http;
mod latency;
mod procfs;
mod scale;
mod server;
mod sessions;
mod stdio;
mod wire;

/// How long, and how hard, to measure.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The measured window of each level.
    pub secs: Duration,
    /// Load before each measured window, not counted.
    pub warmup: Duration,
    /// Connection counts for the plain call, in order.
    pub conns: Vec<usize>,
    /// Connections for the multi-round flow (`confirm_echo`), if measured.
    pub flow: Option<usize>,
    /// Connections for the task flow (`task_echo`), if measured.
    pub task: Option<usize>,
    /// Connections for `tasks/get` polling of a task that stays `working` (`task_wait`), if
    /// measured.
    pub task_get: Option<usize>,
    /// Whether to measure the streamed exchanges' latency (`latency.rs`).
    pub latency: bool,
    /// Legacy sessions (and as many SSE streams) to open in `sessions` mode.
    pub sessions: usize,
    /// `sessions` mode opens the streams only, without sessions (a server with none: the floor).
    pub streams_only: bool,
    /// What `scale` mode grows (`scale.rs`).
    pub kind: String,
    /// The unit counts `scale` mode measures at, in order.
    pub steps: Vec<usize>,
    /// How long `scale` mode makes plain calls at each step.
    pub probe: Duration,
    /// Another process whose RSS `scale` mode reads at each step (the Redis holding the units).
    pub watch: Option<u32>,
    /// The server command; `{port}` (and in `scale` mode `{tools}`) is replaced.
    pub command: Vec<String>,
}

/// A comma-separated list of counts.
fn counts(list: Option<&String>, option: &str) -> Result<Vec<usize>, String> {
    list.ok_or_else(|| format!("{option} needs a list"))?
        .split(',')
        .map(|n| n.parse().map_err(|_| format!("{option}: bad count {n:?}")))
        .collect()
}

fn parse(args: &[String]) -> Result<(String, Settings), String> {
    let mode = args
        .first()
        .ok_or("usage: loadgen <http|stdio|sessions|scale> [options] -- SERVER ARGS…")?;
    let mut settings = Settings {
        secs: Duration::from_secs(5),
        warmup: Duration::from_secs(1),
        conns: vec![1, 16, 64],
        flow: None,
        latency: false,
        task: None,
        task_get: None,
        sessions: 10_000,
        streams_only: false,
        kind: String::new(),
        steps: Vec::new(),
        probe: Duration::from_secs(1),
        watch: None,
        command: Vec::new(),
    };
    let mut rest = args[1..].iter();
    let seconds = |v: Option<&String>| -> Result<Duration, String> {
        v.and_then(|v| v.parse::<f64>().ok())
            .filter(|s| *s >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| "expected seconds".to_string())
    };
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--secs" => settings.secs = seconds(rest.next())?,
            "--warmup" => settings.warmup = seconds(rest.next())?,
            "--conns" => settings.conns = counts(rest.next(), "--conns")?,
            "--steps" => settings.steps = counts(rest.next(), "--steps")?,
            "--kind" => settings.kind = rest.next().ok_or("--kind needs a kind")?.clone(),
            "--probe" => settings.probe = seconds(rest.next())?,
            "--watch" => {
                let pid = rest.next().and_then(|n| n.parse().ok());
                settings.watch = Some(pid.ok_or("--watch needs a PID")?);
            }
            "--flow" => {
                let n = rest.next().and_then(|n| n.parse().ok());
                settings.flow = Some(n.ok_or("--flow needs a connection count")?);
            }
            "--latency" => settings.latency = true,
            "--streams-only" => settings.streams_only = true,
            "--sessions" => {
                let n = rest.next().and_then(|n| n.parse().ok());
                settings.sessions = n.ok_or("--sessions needs a count")?;
            }
            "--task" => {
                let n = rest.next().and_then(|n| n.parse().ok());
                settings.task = Some(n.ok_or("--task needs a connection count")?);
            }
            "--task-get" => {
                let n = rest.next().and_then(|n| n.parse().ok());
                settings.task_get = Some(n.ok_or("--task-get needs a connection count")?);
            }
            "--" => {
                settings.command = rest.by_ref().cloned().collect();
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if mode == "scale" && settings.steps.is_empty() {
        return Err("scale needs --steps".into());
    }
    if settings.command.is_empty() {
        return Err("no server command after --".into());
    }
    Ok((mode.clone(), settings))
}

/// One thread, like a one-thread `wrk`: the load generator then takes at most one of the
/// machine's cores and leaves the rest to the server, the same for every implementation. (A
/// multi-thread runtime competed with the server for both cores and added cross-thread wake-ups
/// to every answer, inflating the server CPU it measured.)
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match parse(&args) {
        Ok((mode, settings)) => match mode.as_str() {
            "http" => http::run(&settings).await,
            "stdio" => stdio::run(&settings).await,
            "sessions" => sessions::run(&settings, settings.sessions).await,
            "scale" => scale::run(&settings).await,
            other => Err(format!("unknown mode {other:?}")),
        },
        Err(e) => Err(e),
    };
    match outcome {
        Ok(report) => {
            println!("{report}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Percentile `p` (0–100) of sorted latencies, in microseconds.
pub fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The text sent in request `id`: different every time, so an echo of the wrong request fails.
pub fn text_for(id: u64) -> String {
    format!("echo #{id} from loadgen: the quick brown fox")
}
