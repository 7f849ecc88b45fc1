//! The client side of the benchmark (issue #30): one client process spawns the server
//! (`our-echo --stdio`), connects this SDK's client or rmcp's over the one stdio pipe
//! (2026-07-28 for both: `server/discover`, no `initialize`), and keeps `--concurrency` calls of
//! `echo` in flight for `--secs` after `--warmup`. Every answer's text is checked. It prints one
//! JSON object: calls per second, and the client process's own CPU (user + system, from
//! `/proc/self/stat`) per call, in microseconds.
//!
//!     client-load --client ours|rmcp [--concurrency N] [--secs S] [--warmup S] -- SERVER ARGS…

use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::process::Command;

type Call =
    Arc<dyn Fn(u64) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync>;

struct Settings {
    client: String,
    concurrency: usize,
    secs: f64,
    warmup: f64,
    command: Vec<String>,
}

fn parse() -> Result<Settings, String> {
    let mut settings = Settings {
        client: String::new(),
        concurrency: 64,
        secs: 5.0,
        warmup: 1.0,
        command: Vec::new(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut number = |name: &str| {
            rest.next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| *v >= 0.0)
                .ok_or(format!("{name} needs a number"))
        };
        match arg.as_str() {
            "--client" => settings.client = rest.next().cloned().unwrap_or_default(),
            "--concurrency" => settings.concurrency = number("--concurrency")? as usize,
            "--secs" => settings.secs = number("--secs")?,
            "--warmup" => settings.warmup = number("--warmup")?,
            "--" => {
                settings.command = rest.by_ref().cloned().collect();
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if settings.command.is_empty() || settings.concurrency == 0 {
        return Err("usage: client-load --client ours|rmcp [--concurrency N] [--secs S] [--warmup S] -- SERVER ARGS…".into());
    }
    Ok(settings)
}

/// The text call `n` sends, and must get back.
fn text(n: u64) -> String {
    format!("call {n}")
}

fn spawn(command: &[String]) -> Result<tokio::process::Child, String> {
    Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawning {command:?}: {e}"))
}

/// This SDK's client: `StdioTransport` spawns the server.
async fn ours(command: &[String], concurrency: usize) -> Result<Call, String> {
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]);
    let transport = mcp::stdio::StdioTransport::spawn(cmd).map_err(|e| e.to_string())?;
    let client = mcp::client::Client::builder()
        .max_in_flight(concurrency)
        .connect(transport)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(move |n| {
        let client = client.clone();
        Box::pin(async move {
            let result = client
                .call_tool("echo", json!({"text": text(n)}))
                .await
                .map_err(|e| e.to_string())?;
            match result.content.first().and_then(|c| c.as_text()) {
                Some(t) if t == text(n) => Ok(()),
                other => Err(format!("call {n} answered {other:?}")),
            }
        })
    }))
}

/// rmcp's client over the child's pipes, in discover mode (2026-07-28).
async fn rmcp_client(command: &[String]) -> Result<Call, String> {
    use rmcp::model::{CallToolRequestParams, ProtocolVersion};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let mut child = spawn(command)?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client =
        ().serve_with_lifecycle((stdout, stdin), lifecycle)
            .await
            .map_err(|e| e.to_string())?;
    let client = Arc::new((client, tokio::sync::Mutex::new(Some(child))));
    Ok(Arc::new(move |n| {
        let client = client.clone();
        Box::pin(async move {
            let mut arguments = serde_json::Map::new();
            arguments.insert("text".into(), json!(text(n)));
            let params = CallToolRequestParams::new("echo").with_arguments(arguments);
            let result = client
                .0
                .call_tool(params)
                .await
                .map_err(|e| e.to_string())?;
            match result.content.first().and_then(|c| c.as_text()) {
                Some(t) if t.text == text(n) => Ok(()),
                other => Err(format!("call {n} answered {other:?}")),
            }
        })
    }))
}

/// The process's user + system CPU so far, from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

/// `concurrency` callers, each calling again as soon as its call returns, until `until`.
async fn load(
    call: &Call,
    concurrency: usize,
    for_secs: f64,
    counter: &Arc<AtomicU64>,
) -> Result<u64, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (call, stop, done, counter) =
            (call.clone(), stop.clone(), done.clone(), counter.clone());
        callers.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                call(n).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), String>(())
        });
    }
    tokio::time::sleep(Duration::from_secs_f64(for_secs)).await;
    stop.store(true, Ordering::Relaxed);
    let counted = done.load(Ordering::Relaxed);
    while let Some(joined) = callers.join_next().await {
        joined.map_err(|e| e.to_string())??;
    }
    Ok(counted)
}

#[tokio::main]
async fn main() {
    let settings = match parse() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let call = match settings.client.as_str() {
        "ours" => ours(&settings.command, settings.concurrency).await,
        "rmcp" => rmcp_client(&settings.command).await,
        other => Err(format!("--client is ours or rmcp, not {other:?}")),
    };
    let call = call.unwrap_or_else(|e| {
        eprintln!("connecting: {e}");
        std::process::exit(1);
    });
    let counter = Arc::new(AtomicU64::new(0));
    if let Err(e) = load(&call, settings.concurrency, settings.warmup, &counter).await {
        eprintln!("warm-up: {e}");
        std::process::exit(1);
    }
    let (cpu_before, started) = (cpu(), Instant::now());
    let calls = match load(&call, settings.concurrency, settings.secs, &counter).await {
        Ok(calls) => calls,
        Err(e) => {
            eprintln!("load: {e}");
            std::process::exit(1);
        }
    };
    let (cpu_used, elapsed) = (cpu() - cpu_before, started.elapsed());
    let report = json!({
        "client": settings.client,
        "concurrency": settings.concurrency,
        "calls": calls,
        "secs": elapsed.as_secs_f64(),
        "calls_per_sec": calls as f64 / elapsed.as_secs_f64(),
        "client_cpu_us_per_call": cpu_used.as_micros() as f64 / calls.max(1) as f64,
    });
    println!("{report}");
    std::process::exit(0);
}
