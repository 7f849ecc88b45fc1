//! `cargo xtask bench`: our echo server side by side with rmcp's, a hand-written hyper floor,
//! and the Python SDK's (issue #11; method and targets in `docs/performance.md`); and the
//! client side, our client against rmcp's, each keeping calls in flight to our stdio server
//! (`bench/client-load`, issue #30).
//!
//! The servers and the load generator live in the separate Cargo workspace `bench/` (excluded
//! from the main one, so the tests never build rmcp; CI's `bench --quick` smoke stage does).
//! This command builds it in release mode, then runs `bench/target/release/loadgen` once per
//! implementation, transport and round. The load generator starts the server itself
//! (loopback, a free port), measures it, stops it by the PID of its own child, and prints one
//! JSON object. Rounds rotate the order of the implementations; ratios are computed within a
//! round; the report shows medians over rounds.
//!
//! Output: a Markdown report on stdout and in `target/bench/report.md`, the raw figures in
//! `target/bench/raw.json`. A run that is not `--quick` copies its figures to
//! `docs/performance/` and redraws the charts there (`charts.rs`); `--charts` only redraws.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::{python_env, run, workspace_root};

/// The connection counts of the HTTP load levels.
const CONNS: [u64; 3] = [1, 16, 64];
/// The connection count of the multi-round flow (and of the plain call it is compared with).
const FLOW_CONNS: u64 = 16;
/// The calls one client keeps in flight over one stdio pipe in the client-side figures.
const CLIENT_CALLS: u64 = 64;

struct Options {
    quick: bool,
    /// Skip the build figures (`--no-builds`; a quick run always skips them).
    no_builds: bool,
    /// Only the build figures (`--builds-only`).
    builds_only: bool,
    rounds: usize,
    secs: f64,
    warmup: f64,
    /// Legacy sessions (and SSE streams) opened for the memory figures.
    sessions: usize,
    /// The scaling runs instead of the side-by-side figures (`--scale`, `scale.rs`).
    scale: bool,
    /// Only redraw the charts in `docs/performance/` from the figures beside them.
    charts: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Options {
            quick: false,
            no_builds: false,
            builds_only: false,
            rounds: 3,
            secs: 5.0,
            warmup: 1.0,
            sessions: 10_000,
            scale: false,
            charts: false,
        };
        let mut rounds = None;
        let mut secs = None;
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let mut value = |name: &str| {
                rest.next()
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| *v > 0.0)
                    .ok_or_else(|| format!("{name} needs a positive number"))
            };
            match arg.as_str() {
                "--quick" => options.quick = true,
                "--no-builds" => options.no_builds = true,
                "--builds-only" => options.builds_only = true,
                "--scale" => options.scale = true,
                "--charts" => options.charts = true,
                "--rounds" => rounds = Some(value("--rounds")? as usize),
                "--secs" => secs = Some(value("--secs")?),
                other => {
                    return Err(format!(
                        "unknown option {other:?} (cargo xtask bench [--quick] [--rounds N] [--secs S] [--no-builds | --builds-only | --scale | --charts])"
                    ));
                }
            }
        }
        if options.charts && args.len() > 1 {
            return Err("--charts only redraws the charts: it takes no other option".into());
        }
        if options.scale && (options.builds_only || options.no_builds) {
            return Err("--scale runs only the scaling series (with --quick: a smoke test)".into());
        }
        if options.builds_only && (options.no_builds || options.quick) {
            return Err(
                "--builds-only runs only the build figures: not with --no-builds or --quick".into(),
            );
        }
        if options.quick {
            options.no_builds = true;
            options.rounds = 1;
            options.secs = 0.6;
            options.warmup = 0.2;
            options.sessions = 1_000;
        }
        options.rounds = rounds.unwrap_or(options.rounds).max(1);
        options.secs = secs.unwrap_or(options.secs);
        Ok(options)
    }
}

/// One implementation under test: how to start it on each transport.
struct Implementation {
    name: &'static str,
    http: Vec<String>,
    stdio: Option<Vec<String>>,
    /// Whether it serves `confirm_echo` (the multi-round flow).
    flow: bool,
    /// Whether it serves `confirm_echo` on legacy sessions and `progress_echo` (the streamed
    /// exchanges' latency).
    latency: bool,
    /// How to start it for the session memory figures (2025-11-25 sessions, GET streams).
    sessions: Option<Vec<String>>,
    /// It has no sessions: the memory run opens its GET streams only (the floor's: what hyper
    /// and tokio alone hold per open stream).
    streams_only: bool,
}

fn implementations(bin: &Path, python: Option<&Path>) -> Vec<Implementation> {
    let exe = |name: &str| bin.join(name).display().to_string();
    let mut list = vec![
        Implementation {
            name: "ours",
            http: vec![exe("our-echo"), "--http".into(), "{port}".into()],
            stdio: Some(vec![exe("our-echo"), "--stdio".into()]),
            flow: true,
            latency: true,
            sessions: Some(vec![exe("our-echo"), "--http-wide".into(), "{port}".into()]),
            streams_only: false,
        },
        // The same server with the `otel` feature compiled in and no exporter installed.
        Implementation {
            name: "ours-otel",
            http: vec![exe("our-echo-otel"), "--http".into(), "{port}".into()],
            stdio: Some(vec![exe("our-echo-otel"), "--stdio".into()]),
            flow: false,
            latency: false,
            sessions: None,
            streams_only: false,
        },
        Implementation {
            name: "rmcp",
            http: vec![exe("rmcp-echo"), "--http".into(), "{port}".into()],
            stdio: Some(vec![exe("rmcp-echo"), "--stdio".into()]),
            flow: true,
            latency: false,
            sessions: Some(vec![
                exe("rmcp-echo"),
                "--http-sessions".into(),
                "{port}".into(),
            ]),
            streams_only: false,
        },
        Implementation {
            name: "floor",
            http: vec![exe("floor"), "--http".into(), "{port}".into()],
            stdio: Some(vec![exe("floor"), "--stdio".into()]),
            flow: false,
            latency: false,
            sessions: Some(vec![exe("floor"), "--http".into(), "{port}".into()]),
            streams_only: true,
        },
    ];
    if let Some(python) = python {
        let script = workspace_root()
            .join("bench")
            .join("python")
            .join("echo_server.py")
            .display()
            .to_string();
        let python = python.display().to_string();
        list.push(Implementation {
            name: "python",
            http: vec![
                python.clone(),
                script.clone(),
                "--http".into(),
                "{port}".into(),
            ],
            stdio: Some(vec![python, script, "--stdio".into()]),
            flow: true,
            latency: false,
            sessions: None,
            streams_only: false,
        });
    }
    list
}

/// What one round measured of one implementation.
#[derive(Default, Clone)]
struct Run {
    http: Value,
    stdio: Value,
    sessions: Value,
    /// The client side (issue #30): this implementation's client against our stdio server.
    client: Value,
}

/// Runs `cargo xtask bench`.
pub(crate) fn bench(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    let root = workspace_root();
    let out = root.join("target").join("bench");
    if options.charts {
        let docs = charts_dir();
        return drawn(super::charts::draw(&docs, &docs)?);
    }
    if options.builds_only {
        let figures = builds(&out)?;
        let report = format!(
            "## cargo xtask bench --builds-only\n{}",
            super::builds::report(&figures)
        );
        println!("{report}");
        std::fs::write(out.join("builds.md"), &report).map_err(|e| e.to_string())?;
        eprintln!("xtask: wrote {}", out.join("builds.md").display());
        return publish(&out, &["builds.json"], false);
    }
    let target = bench_target(options.quick);
    build_bench(None, options.quick)?;
    if options.quick {
        // The harness's own unit tests (loadgen's wire parsing and figures), which nothing
        // else runs: the bench workspace is outside the main one. The default members, as
        // just built, so that only the test harnesses are compiled.
        run(&mut bench_cargo("test", None, true))?;
    }
    // Apart, so its `otel` feature stays out of our-echo (see bench/Cargo.toml).
    build_bench(Some("our-echo-otel"), options.quick)?;
    let bin = target.join("release");
    if options.scale {
        // Apart as well: the Redis client stays out of our-echo (see bench/Cargo.toml).
        build_bench(Some("our-echo-redis"), options.quick)?;
        super::scale::run(&bin, &out, options.quick)?;
        return publish(&out, &["scale.json"], options.quick);
    }
    let python = match python_env() {
        Ok(python) => Some(python),
        Err(e) => {
            eprintln!("xtask: the Python SDK is left out: {e}");
            None
        }
    };
    let list = implementations(&bin, python.as_deref());
    let load_before = load_average();
    let mut rounds: Vec<BTreeMap<&'static str, Run>> = Vec::new();
    for round in 0..options.rounds {
        let mut order: Vec<&Implementation> = list.iter().collect();
        order.rotate_left(round % list.len());
        let mut results = BTreeMap::new();
        for implementation in order {
            eprintln!(
                "xtask: round {}/{}: {}",
                round + 1,
                options.rounds,
                implementation.name
            );
            let mut measured = Run::default();
            let mut http_args = vec![
                "http".to_string(),
                "--conns".into(),
                CONNS.map(|c| c.to_string()).join(","),
            ];
            if implementation.flow {
                http_args.extend(["--flow".into(), FLOW_CONNS.to_string()]);
            }
            if implementation.latency {
                // Ours only: the streamed exchanges, and the task flow (the Tasks extension).
                http_args.push("--latency".into());
                http_args.extend(["--task".into(), FLOW_CONNS.to_string()]);
                http_args.extend(["--task-get".into(), FLOW_CONNS.to_string()]);
            }
            measured.http = loadgen(&bin, &options, &http_args, &implementation.http)?;
            if let Some(stdio) = &implementation.stdio {
                measured.stdio = loadgen(&bin, &options, &["stdio".to_string()], stdio)?;
            }
            if let Some(sessions) = &implementation.sessions {
                let mut args = vec![
                    "sessions".to_string(),
                    "--sessions".into(),
                    options.sessions.to_string(),
                ];
                if implementation.streams_only {
                    args.push("--streams-only".into());
                }
                measured.sessions = loadgen(&bin, &options, &args, sessions)?;
            }
            if matches!(implementation.name, "ours" | "rmcp") {
                measured.client = client_load(&bin, &options, implementation.name)?;
            }
            results.insert(implementation.name, measured);
        }
        rounds.push(results);
    }
    let load_after = load_average();
    let names: Vec<&str> = list.iter().map(|i| i.name).collect();
    let mut report = report(&options, &names, &rounds, &load_before, &load_after);
    if !options.no_builds {
        // After the load figures, which the builds' compile jobs would disturb.
        report.push_str(&super::builds::report(&builds(&out)?));
    }
    println!("{report}");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    std::fs::write(out.join("report.md"), &report).map_err(|e| e.to_string())?;
    let raw: Vec<Value> = rounds
        .iter()
        .map(|round| {
            round
                .iter()
                .map(|(name, run)| {
                    (
                        name.to_string(),
                        json!({"http": run.http, "stdio": run.stdio, "sessions": run.sessions, "client": run.client}),
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into()
        })
        .collect();
    let raw = serde_json::to_string_pretty(&raw).map_err(|e| e.to_string())?;
    std::fs::write(out.join("raw.json"), raw).map_err(|e| e.to_string())?;
    eprintln!("xtask: wrote {}", out.join("report.md").display());
    let mut files = vec!["raw.json"];
    if !options.no_builds {
        files.push("builds.json");
    }
    publish(&out, &files, options.quick)
}

/// Where the bench workspace is built: `bench/target`, or `bench/target/quick` for a quick run.
fn bench_target(quick: bool) -> std::path::PathBuf {
    let target = workspace_root().join("bench").join("target");
    if quick { target.join("quick") } else { target }
}

/// Builds the bench workspace in release mode (see [`bench_target`]): its default members, or
/// `package` alone.
///
/// A quick run is a smoke test whose figures mean nothing, so it builds with `opt-level = 1`
/// and no debug info: the same code and harness, compiled in 4 minutes instead of nearly 6 on
/// a 2-core machine (CI's last stage, issue #48). It builds apart so that a full run never
/// starts from its artifacts.
fn build_bench(package: Option<&str>, quick: bool) -> Result<(), String> {
    run(&mut bench_cargo("build", package, quick))
}

/// `cargo <subcommand> --release` in the bench workspace, as [`build_bench`] builds it.
fn bench_cargo(subcommand: &str, package: Option<&str>, quick: bool) -> Command {
    let bench_dir = workspace_root().join("bench");
    let mut command = Command::new(env_cargo());
    command
        .current_dir(workspace_root())
        .args([subcommand, "--release"])
        .args(package.map(|p| ["-p", p]).into_iter().flatten())
        .arg("--manifest-path")
        .arg(bench_dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", bench_target(quick));
    if quick {
        command
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false");
    }
    command
}

/// Where the charts and the figures they are drawn from are committed.
fn charts_dir() -> std::path::PathBuf {
    workspace_root().join("docs").join("performance")
}

/// Draws the charts of a run's figures (`files`, in `out`): a quick run's into `out/charts/`
/// (a smoke test of the drawing, the tree left as it was); a full run's figures are copied to
/// `docs/performance/` and every chart there is redrawn.
fn publish(out: &Path, files: &[&str], quick: bool) -> Result<(), String> {
    if quick {
        return drawn(super::charts::draw(out, &out.join("charts"))?);
    }
    let docs = charts_dir();
    std::fs::create_dir_all(&docs).map_err(|e| format!("{}: {e}", docs.display()))?;
    for file in files {
        std::fs::copy(out.join(file), docs.join(file))
            .map_err(|e| format!("copying {file} to {}: {e}", docs.display()))?;
    }
    drawn(super::charts::draw(&docs, &docs)?)
}

fn drawn(written: Vec<std::path::PathBuf>) -> Result<(), String> {
    for path in &written {
        eprintln!("xtask: drew {}", path.display());
    }
    Ok(())
}

/// Measures the build figures and writes them to `out/builds.json`.
fn builds(out: &Path) -> Result<Value, String> {
    let figures = super::builds::measure(&workspace_root())?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let raw = serde_json::to_string_pretty(&figures).map_err(|e| e.to_string())?;
    std::fs::write(out.join("builds.json"), raw).map_err(|e| e.to_string())?;
    Ok(figures)
}

fn env_cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn loadgen(
    bin: &Path,
    options: &Options,
    args: &[String],
    server: &[String],
) -> Result<Value, String> {
    let mut command = Command::new(bin.join("loadgen"));
    command
        .current_dir(workspace_root())
        .args(args)
        .args(["--secs", &options.secs.to_string()])
        .args(["--warmup", &options.warmup.to_string()])
        .arg("--")
        .args(server);
    json_of(&mut command, "loadgen")
}

/// Runs a measuring program and reads the JSON figures it prints; `who` names it in errors.
pub(crate) fn json_of(command: &mut Command, who: &str) -> Result<Value, String> {
    let output = command
        .output()
        .map_err(|e| format!("could not start {command:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("{who} printed no JSON: {e}"))
}

/// The client-side figures of `client` (`ours` or `rmcp`): that client, in its own process,
/// keeps [`CLIENT_CALLS`] calls of `echo` in flight over one stdio pipe to our server.
fn client_load(bin: &Path, options: &Options, client: &str) -> Result<Value, String> {
    let mut command = Command::new(bin.join("client-load"));
    command
        .current_dir(workspace_root())
        .args(["--client", client])
        .args(["--concurrency", &CLIENT_CALLS.to_string()])
        .args(["--secs", &options.secs.to_string()])
        .args(["--warmup", &options.warmup.to_string()])
        .arg("--")
        .arg(bin.join("our-echo"))
        .arg("--stdio");
    json_of(&mut command, "client-load")
}

/// The processor as `/proc/cpuinfo` names it, with its cache size: CPU time per call moves
/// with the host (the same binaries measured 34 µs per call on one VM of this kind and 19 µs on
/// another), so a report says which one it ran on.
pub(crate) fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_owned())
        })
    };
    match (field("model name"), field("cache size")) {
        (Some(model), Some(cache)) => format!("{model} (cache size {cache})"),
        (Some(model), None) => model,
        _ => "an unknown processor".into(),
    }
}

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| {
            let parts: Vec<&str> = s.split_whitespace().take(3).collect();
            (parts.len() == 3).then(|| parts.join(" "))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The median of the values present (`None` when there are none).
pub(crate) fn median(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let mut values: Vec<f64> = values
        .into_iter()
        .flatten()
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// A figure of an HTTP load level.
fn level(run: &Run, conns: u64, key: &str) -> Option<f64> {
    run.http["levels"]
        .as_array()?
        .iter()
        .find(|l| l["conns"].as_u64() == Some(conns))?[key]
        .as_f64()
}

type Getter = Box<dyn Fn(&Run) -> Option<f64>>;

fn getter(f: impl Fn(&Run) -> Option<f64> + 'static) -> Getter {
    Box::new(f)
}

/// One row of the figures table.
struct Row {
    label: String,
    cells: Vec<Getter>,
    format: fn(f64) -> String,
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for conns in CONNS {
        rows.push(Row {
            label: format!("HTTP requests/s, {conns} conn."),
            cells: vec![getter(move |r| level(r, conns, "rps"))],
            format: whole,
        });
    }
    for conns in CONNS {
        rows.push(Row {
            label: format!("HTTP latency p50 / p90 / p99 (µs), {conns} conn."),
            cells: ["p50_us", "p90_us", "p99_us"]
                .into_iter()
                .map(|key| getter(move |r| level(r, conns, key)))
                .collect(),
            format: whole,
        });
    }
    for conns in CONNS {
        rows.push(Row {
            label: format!("HTTP server CPU µs per call, {conns} conn."),
            cells: vec![getter(move |r| level(r, conns, "cpu_us_per_req"))],
            format: one_decimal,
        });
    }
    rows.push(Row {
        label: format!(
            "multi-round flows/s (call → input_required → retry → result), {FLOW_CONNS} conn."
        ),
        cells: vec![getter(|r| r.http["flow"]["rps"].as_f64())],
        format: whole,
    });
    rows.push(Row {
        label: format!(
            "client calls/s, {CLIENT_CALLS} in flight over one stdio pipe to our server (the client's SDK)"
        ),
        cells: vec![getter(|r| r.client["calls_per_sec"].as_f64())],
        format: whole,
    });
    rows.push(Row {
        label: "client CPU µs per call (the client process alone)".into(),
        cells: vec![getter(|r| r.client["client_cpu_us_per_call"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "server CPU µs per flow".into(),
        cells: vec![getter(|r| r.http["flow"]["cpu_us_per_req"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "flow CPU ÷ plain call CPU".into(),
        cells: vec![getter(|r| r.http["flow"]["cpu_vs_plain"].as_f64())],
        format: ratio,
    });
    rows.push(Row {
        label: format!(
            "task flows/s (create → tasks/get → input_required → tasks/update → completed), {FLOW_CONNS} conn."
        ),
        cells: vec![getter(|r| r.http["task"]["rps"].as_f64())],
        format: whole,
    });
    rows.push(Row {
        label: "server CPU µs per task flow".into(),
        cells: vec![getter(|r| r.http["task"]["cpu_us_per_req"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "task flow CPU ÷ plain call CPU".into(),
        cells: vec![getter(|r| r.http["task"]["cpu_vs_plain"].as_f64())],
        format: ratio,
    });
    rows.push(Row {
        label: "tasks/get polls per task flow".into(),
        cells: vec![getter(|r| {
            let polls = r.http["task"]["polls"].as_f64()?;
            let flows = r.http["task"]["requests"].as_f64()?;
            (flows > 0.0).then(|| polls / flows)
        })],
        format: one_decimal,
    });
    rows.push(Row {
        label: format!("tasks/get polls/s of a working task, {FLOW_CONNS} conn."),
        cells: vec![getter(|r| r.http["task_get"]["rps"].as_f64())],
        format: whole,
    });
    rows.push(Row {
        label: "server CPU µs per tasks/get".into(),
        cells: vec![getter(|r| r.http["task_get"]["cpu_us_per_req"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "tasks/get CPU ÷ plain call CPU".into(),
        cells: vec![getter(|r| r.http["task_get"]["cpu_vs_plain"].as_f64())],
        format: ratio,
    });
    for (key, label) in [
        (
            "legacy_elicitation",
            "legacy elicitation round trip p50 / p99 / max (µs), one at a time",
        ),
        (
            "sse_call",
            "SSE-streamed 2026-07-28 call p50 / p99 / max (µs), one at a time",
        ),
    ] {
        rows.push(Row {
            label: label.into(),
            cells: ["p50_us", "p99_us", "max_us"]
                .into_iter()
                .map(|stat| getter(move |r| r.http["latency"][key][stat].as_f64()))
                .collect(),
            format: whole,
        });
        rows.push(Row {
            label: format!(
                "{} taking 20 ms or more",
                label.split(" p50").next().unwrap_or(label)
            ),
            cells: vec![getter(move |r| {
                let rounds = r.http["latency"][key]["rounds"].as_f64()?;
                let slow = r.http["latency"][key]["over_20ms"].as_f64()?;
                (rounds > 0.0).then(|| 100.0 * slow / rounds)
            })],
            format: percent,
        });
    }
    rows.push(Row {
        label: "stdio round trips/s".into(),
        cells: vec![getter(|r| r.stdio["rps"].as_f64())],
        format: whole,
    });
    rows.push(Row {
        label: "stdio server CPU µs per call".into(),
        cells: vec![getter(|r| r.stdio["cpu_us_per_req"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "memory per idle 2025-11-25 session (KiB)".into(),
        cells: vec![getter(|r| r.sessions["kb_per_session"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "memory per open SSE stream (KiB)".into(),
        cells: vec![getter(|r| r.sessions["kb_per_stream"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "idle RSS, HTTP (MiB)".into(),
        cells: vec![getter(|r| {
            r.http["idle_rss_kb"].as_f64().map(|k| k / 1024.0)
        })],
        format: one_decimal,
    });
    rows.push(Row {
        label: "peak RSS after 64 conn. (MiB)".into(),
        cells: vec![getter(|r| {
            r.http["peak_rss_kb"].as_f64().map(|k| k / 1024.0)
        })],
        format: one_decimal,
    });
    rows.push(Row {
        label: "cold start to first answer, HTTP (ms)".into(),
        cells: vec![getter(|r| r.http["cold_start_ms"].as_f64())],
        format: one_decimal,
    });
    rows.push(Row {
        label: "cold start to first answer, stdio (ms)".into(),
        cells: vec![getter(|r| r.stdio["cold_start_ms"].as_f64())],
        format: one_decimal,
    });
    rows
}

fn whole(v: f64) -> String {
    format!("{v:.0}")
}

fn one_decimal(v: f64) -> String {
    format!("{v:.1}")
}

fn percent(v: f64) -> String {
    format!("{v:.1} %")
}

fn ratio(v: f64) -> String {
    format!("{v:.2}×")
}

/// A target: a ratio of two figures of one round (ours ÷ theirs, or ours ÷ ours), or their
/// difference, and its bound (issue #21).
struct Target {
    label: String,
    numerator: (&'static str, Getter),
    denominator: (&'static str, Getter),
    at_most: bool,
    bound: f64,
    /// Compare `numerator − denominator` with the bound instead of their ratio.
    difference: bool,
}

fn targets() -> Vec<Target> {
    let cpu = |conns: u64| getter(move |r| level(r, conns, "cpu_us_per_req"));
    let ratio =
        |label: String, a: (&'static str, Getter), b: (&'static str, Getter), at_most, bound| {
            Target {
                label,
                numerator: a,
                denominator: b,
                at_most,
                bound,
                difference: false,
            }
        };
    let mut list = Vec::new();
    for conns in CONNS {
        list.push(ratio(
            format!("HTTP server CPU per tools/call ({conns} conn.) ≤ 1.15× floor"),
            ("ours", cpu(conns)),
            ("floor", cpu(conns)),
            true,
            1.15,
        ));
    }
    list.push(ratio(
        "HTTP calls/s at 64 conn. ≥ 0.9× floor".into(),
        ("ours", getter(|r| level(r, 64, "rps"))),
        ("floor", getter(|r| level(r, 64, "rps"))),
        false,
        0.9,
    ));
    let stdio_cpu = || getter(|r| r.stdio["cpu_us_per_req"].as_f64());
    list.push(ratio(
        "stdio server CPU per call ≤ 1.15× floor".into(),
        ("ours", stdio_cpu()),
        ("floor", stdio_cpu()),
        true,
        1.15,
    ));
    list.push(ratio(
        "two-leg multi-round flow ≤ 2.2× the CPU of a plain call".into(),
        (
            "ours",
            getter(|r| r.http["flow"]["cpu_us_per_req"].as_f64()),
        ),
        ("ours", cpu(FLOW_CONNS)),
        true,
        2.2,
    ));
    list.push(ratio(
        format!("`tasks/get` polling CPU ≤ 1.2× a plain call ({FLOW_CONNS} conn.)"),
        (
            "ours",
            getter(|r| r.http["task_get"]["cpu_us_per_req"].as_f64()),
        ),
        ("ours", cpu(FLOW_CONNS)),
        true,
        1.2,
    ));
    list.push(ratio(
        "HTTP server CPU per tools/call, `otel` on and no exporter (64 conn.) ≤ 1.05× ours".into(),
        ("ours-otel", cpu(64)),
        ("ours", cpu(64)),
        true,
        1.05,
    ));
    list.push(ratio(
        "stdio server CPU per call, `otel` on and no exporter ≤ 1.05× ours".into(),
        ("ours-otel", stdio_cpu()),
        ("ours", stdio_cpu()),
        true,
        1.05,
    ));
    let rss = || getter(|r| r.http["idle_rss_kb"].as_f64().map(|k| k / 1024.0));
    list.push(Target {
        label: "idle RSS ≤ floor's + 1.5 MiB (shown: ours − floor, MiB)".into(),
        numerator: ("ours", rss()),
        denominator: ("floor", rss()),
        at_most: true,
        bound: 1.5,
        difference: true,
    });
    list.push(ratio(
        format!("client calls/s ({CLIENT_CALLS} in flight, stdio) ≥ 1× rmcp's client"),
        ("ours", getter(|r| r.client["calls_per_sec"].as_f64())),
        ("rmcp", getter(|r| r.client["calls_per_sec"].as_f64())),
        false,
        1.0,
    ));
    list.push(ratio(
        "client CPU per call ≤ 1× rmcp's client".into(),
        (
            "ours",
            getter(|r| r.client["client_cpu_us_per_call"].as_f64()),
        ),
        (
            "rmcp",
            getter(|r| r.client["client_cpu_us_per_call"].as_f64()),
        ),
        true,
        1.0,
    ));
    list.push(ratio(
        "memory per idle legacy session ≤ 0.5× rmcp".into(),
        ("ours", getter(|r| r.sessions["kb_per_session"].as_f64())),
        ("rmcp", getter(|r| r.sessions["kb_per_session"].as_f64())),
        true,
        0.5,
    ));
    list.push(ratio(
        "memory per open SSE stream ≤ 0.5× rmcp".into(),
        ("ours", getter(|r| r.sessions["kb_per_stream"].as_f64())),
        ("rmcp", getter(|r| r.sessions["kb_per_stream"].as_f64())),
        true,
        0.5,
    ));
    list
}

/// The ratio of a target in one round.
fn round_ratio(target: &Target, round: &BTreeMap<&'static str, Run>) -> Option<f64> {
    let (a, get_a) = &target.numerator;
    let (b, get_b) = &target.denominator;
    let a = get_a(round.get(a)?)?;
    let b = get_b(round.get(b)?)?;
    if target.difference {
        return Some(a - b);
    }
    (b > 0.0).then(|| a / b)
}

fn report(
    options: &Options,
    names: &[&str],
    rounds: &[BTreeMap<&'static str, Run>],
    load_before: &str,
    load_after: &str,
) -> String {
    let mut out = String::new();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    out.push_str("## cargo xtask bench\n\n");
    out.push_str(&format!(
        "{} run: {} round(s), {} s measured per level after {} s of warm-up; {cores} core(s) \
         of {}; load average before {load_before}, after {load_after}.\n",
        if options.quick {
            "**Quick (smoke)**"
        } else {
            "Full"
        },
        options.rounds,
        options.secs,
        options.warmup,
        cpu_model(),
    ));
    out.push_str(&format!(
        "Session memory: {} legacy sessions, then one SSE stream each.\n",
        options.sessions
    ));
    let busy = load_before
        .split_whitespace()
        .next()
        .and_then(|l| l.parse::<f64>().ok())
        .is_some_and(|l| l >= 0.5);
    if busy {
        out.push_str(
            "\n**Measured under load**: other work was running when the benchmark started \
             (1-minute load average ≥ 0.5), so absolute figures are noisy; ratios within a round \
             are more robust.\n",
        );
    }
    out.push_str("\nMedians over rounds. Python runs one uvicorn worker.\n\n| figure |");
    for name in names {
        out.push_str(&format!(" {name} |"));
    }
    out.push_str("\n| --- |");
    for _ in names {
        out.push_str(" ---: |");
    }
    out.push('\n');
    for row in rows() {
        out.push_str(&format!("| {} |", row.label));
        for name in names {
            let values: Vec<String> = row
                .cells
                .iter()
                .map(|cell| {
                    median(rounds.iter().map(|round| round.get(name).and_then(cell)))
                        .map_or_else(|| "n/a".to_string(), row.format)
                })
                .collect();
            out.push_str(&format!(" {} |", values.join(" / ")));
        }
        out.push('\n');
    }
    out.push_str(
        "\n| target | ratio (median of per-round ratios) | met? |\n| --- | ---: | :---: |\n",
    );
    for target in targets() {
        let value = median(rounds.iter().map(|round| round_ratio(&target, round)));
        let (shown, met) = match value {
            Some(v) => {
                let met = if target.at_most {
                    v <= target.bound
                } else {
                    v >= target.bound
                };
                let shown = if target.difference {
                    format!("{v:+.2}")
                } else {
                    format!("{v:.2}×")
                };
                (shown, if met { "yes" } else { "**no**" })
            }
            None => ("n/a".into(), "n/a"),
        };
        out.push_str(&format!("| {} | {shown} | {met} |\n", target.label));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_skips_missing_values() {
        assert_eq!(median([Some(3.0), None, Some(1.0), Some(2.0)]), Some(2.0));
        assert_eq!(median([Some(4.0), Some(1.0)]), Some(2.5));
        assert_eq!(median([None]), None);
    }

    #[test]
    fn ratios_are_taken_within_a_round() {
        let run = |cpu: f64, rss_kb: f64| Run {
            http: json!({"levels": [{"conns": 1, "cpu_us_per_req": cpu}], "idle_rss_kb": rss_kb}),
            stdio: Value::Null,
            sessions: Value::Null,
            client: Value::Null,
        };
        let round: BTreeMap<&'static str, Run> =
            [("ours", run(10.0, 5120.0)), ("floor", run(8.0, 3584.0))]
                .into_iter()
                .collect();
        let all = targets();
        let first = &all[0];
        assert!(first.label.contains("(1 conn.)"));
        assert_eq!(round_ratio(first, &round), Some(1.25));
        // No 16-connection level in this round: that target has no ratio.
        assert_eq!(round_ratio(&all[1], &round), None);
        // Idle RSS is a difference in MiB: 5 − 3.5.
        let rss = all.iter().find(|t| t.difference).unwrap();
        assert_eq!(round_ratio(rss, &round), Some(1.5));
        // The client figures compare the two clients, each against our server.
        let client = |calls: f64| Run {
            client: json!({"calls_per_sec": calls, "client_cpu_us_per_call": 100.0 / calls}),
            ..Run::default()
        };
        let round: BTreeMap<&'static str, Run> = [("ours", client(200.0)), ("rmcp", client(100.0))]
            .into_iter()
            .collect();
        let calls = all
            .iter()
            .find(|t| t.label.starts_with("client calls/s"))
            .unwrap();
        assert_eq!(round_ratio(calls, &round), Some(2.0));
        let cpu = all
            .iter()
            .find(|t| t.label.starts_with("client CPU"))
            .unwrap();
        assert_eq!(round_ratio(cpu, &round), Some(0.5));
    }

    #[test]
    fn quick_is_one_short_round() {
        let options = Options::parse(&["--quick".to_string()]).unwrap();
        assert_eq!(options.rounds, 1);
        assert!(options.quick && options.secs < 1.0);
        assert!(options.no_builds, "a quick run leaves the builds out");
        assert!(Options::parse(&["--bogus".to_string()]).is_err());
        let full = Options::parse(&[]).unwrap();
        assert!(!full.no_builds && !full.builds_only);
        assert!(
            Options::parse(&["--no-builds".to_string()])
                .unwrap()
                .no_builds
        );
        assert!(
            Options::parse(&["--builds-only".to_string()])
                .unwrap()
                .builds_only
        );
        assert!(Options::parse(&["--builds-only".into(), "--quick".into()]).is_err());
    }
}
