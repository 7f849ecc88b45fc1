//! `cargo xtask bench --scale` (issue #35): how a server's cost grows with the work it holds.
//! For each kind of unit (idle 2025-11-25 sessions, sessions holding their GET stream, open
//! `subscriptions/listen` streams, kept tasks, tools in the registry), `loadgen scale` grows it
//! step by step against one server and reads the server's RSS and the latency of plain calls
//! made alongside (see `bench/loadgen/src/scale.rs`). Ours at every kind; rmcp at the kinds it
//! has (sessions and GET streams, in its stateful mode). Tasks are measured twice: in the
//! server's memory, and in a Redis started for the run (no persistence; its RSS read beside
//! the server's), when `redis-server` is installed.
//!
//! Output: a Markdown report on stdout and in `target/bench/scale.md`, the raw figures in
//! `target/bench/scale.json`.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::workspace_root;

/// One scaling series: a kind, its steps, and which servers have it.
struct Series {
    kind: &'static str,
    what: &'static str,
    steps: &'static [usize],
    rmcp: bool,
    /// The tasks are kept in a Redis started for the series.
    redis: bool,
}

const SERIES: [Series; 6] = [
    Series {
        kind: "sessions",
        what: "idle 2025-11-25 sessions",
        steps: &[1_000, 10_000, 100_000],
        rmcp: true,
        redis: false,
    },
    Series {
        kind: "streams",
        what: "2025-11-25 sessions, each holding its GET stream",
        steps: &[1_000, 10_000],
        rmcp: true,
        redis: false,
    },
    Series {
        kind: "listen",
        what: "open subscriptions/listen streams",
        steps: &[1_000, 10_000],
        rmcp: false,
        redis: false,
    },
    Series {
        kind: "tasks",
        what: "completed tasks kept in memory",
        steps: &[10_000, 100_000, 1_000_000],
        rmcp: false,
        redis: false,
    },
    Series {
        kind: "tasks",
        what: "completed tasks kept in Redis",
        steps: &[10_000, 100_000],
        rmcp: false,
        redis: true,
    },
    Series {
        kind: "tools",
        what: "tools in the registry (a server per step)",
        steps: &[10, 100, 1_000],
        rmcp: false,
        redis: false,
    },
];

/// Runs every series against the release binaries in `bin`; `quick` divides every step by 100
/// (at least 10 units): a smoke test of the harness, not figures.
pub(crate) fn run(bin: &Path, out: &Path, quick: bool) -> Result<(), String> {
    let ours = |tools: bool| {
        let mut command = vec![
            bin.join("our-echo").display().to_string(),
            "--http-scale".into(),
            "{port}".into(),
        ];
        if tools {
            command.push("{tools}".into());
        }
        command
    };
    let rmcp = vec![
        bin.join("rmcp-echo").display().to_string(),
        "--http-sessions".into(),
        "{port}".into(),
    ];
    let mut raw = Vec::new();
    let mut report = String::from("## cargo xtask bench --scale\n\n");
    report.push_str(&format!(
        "Host: {}; load average before: {}.\n\n",
        super::bench::cpu_model(),
        super::bench::load_average()
    ));
    for series in &SERIES {
        let steps: Vec<usize> = series
            .steps
            .iter()
            .map(|&n| if quick { (n / 100).max(10) } else { n })
            .collect();
        let redis = if series.redis {
            match super::redis::Redis::start() {
                Ok(redis) => Some(redis),
                Err(e) => {
                    eprintln!("xtask: scale: {} left out: {e}", series.what);
                    continue;
                }
            }
        } else {
            None
        };
        let mut servers = vec![("ours", ours(series.kind == "tools"))];
        if let Some(redis) = &redis {
            servers = vec![(
                "ours",
                vec![
                    bin.join("our-echo-redis").display().to_string(),
                    "--http-scale-redis".into(),
                    "{port}".into(),
                    redis.url(),
                ],
            )];
        }
        if series.rmcp {
            servers.push(("rmcp", rmcp.clone()));
        }
        for (name, command) in servers {
            eprintln!("xtask: scale {} ({name}): {steps:?}", series.what);
            let watch = redis.as_ref().map(super::redis::Redis::pid);
            let measured = loadgen_scale(bin, series.kind, &steps, watch, &command)?;
            report.push_str(&table(series, name, &measured));
            raw.push(json!({"server": name, "measured": measured}));
        }
    }
    println!("{report}");
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    std::fs::write(out.join("scale.md"), &report).map_err(|e| e.to_string())?;
    let raw = serde_json::to_string_pretty(&raw).map_err(|e| e.to_string())?;
    std::fs::write(out.join("scale.json"), raw).map_err(|e| e.to_string())?;
    eprintln!("xtask: wrote {}", out.join("scale.md").display());
    Ok(())
}

/// What a step's units must add to the RSS before their cost per unit means anything: RSS
/// moves by pages and by the allocator's arenas, so ten tools (about 90 KiB) read anywhere
/// from 0 to 4 KiB each from one run to the next.
const READABLE_KIB: f64 = 512.0;

/// Whether a step's cost per unit (`key`, KiB) is measured on enough memory to mean anything.
pub(crate) fn readable(step: &Value, key: &str) -> bool {
    let units = step["units"].as_f64().unwrap_or(0.0);
    step[key]
        .as_f64()
        .is_some_and(|kb| kb > 0.0 && kb * units >= READABLE_KIB)
}

fn loadgen_scale(
    bin: &Path,
    kind: &str,
    steps: &[usize],
    watch: Option<u32>,
    server: &[String],
) -> Result<Value, String> {
    let steps: Vec<String> = steps.iter().map(usize::to_string).collect();
    let mut command = Command::new(bin.join("loadgen"));
    command
        .current_dir(workspace_root())
        .args(["scale", "--kind", kind, "--steps", &steps.join(",")])
        .args(["--probe", "1"]);
    if let Some(pid) = watch {
        command.args(["--watch", &pid.to_string()]);
    }
    command.arg("--").args(server);
    super::bench::json_of(&mut command, "loadgen scale")
}

/// One series of one server as a Markdown table, with the growth of the cost per unit and of
/// the plain call's p99 from the first step to the last.
fn table(series: &Series, server: &str, measured: &Value) -> String {
    let steps = measured["steps"].as_array().cloned().unwrap_or_default();
    let tools = series.kind == "tools";
    let mut out = format!("### {} ({server})\n\n", series.what);
    out.push_str("| units | RSS (MiB) | KiB per unit | KiB per unit since the step before | plain call p50 / p99 (µs) |");
    out.push_str(if tools {
        " tools/list pages per walk | page p50 / p99 (µs) |\n"
    } else if series.redis {
        " filled in (s) | Redis RSS (MiB) | Redis KiB per unit |\n"
    } else {
        " filled in (s) |\n"
    });
    out.push_str(if tools || series.redis {
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    } else {
        "| ---: | ---: | ---: | ---: | ---: | ---: |\n"
    });
    for step in &steps {
        let f = |key: &str| step[key].as_f64().unwrap_or(f64::NAN);
        out.push_str(&format!(
            "| {} | {:.1} | {:.2} | {:.2} | {} / {} |",
            step["units"],
            f("rss_kb") / 1024.0,
            f("kb_per_unit"),
            f("kb_per_unit_since_last"),
            step["call_p50_us"],
            step["call_p99_us"],
        ));
        if tools {
            let list = &step["tools_list"];
            out.push_str(&format!(
                " {} | {} / {} |\n",
                list["pages_per_walk"], list["page_p50_us"], list["page_p99_us"]
            ));
        } else if series.redis {
            out.push_str(&format!(
                " {:.2} | {:.1} | {:.2} |\n",
                f("fill_secs"),
                f("watched_rss_kb") / 1024.0,
                f("watched_kb_per_unit")
            ));
        } else {
            out.push_str(&format!(" {:.2} |\n", f("fill_secs")));
        }
    }
    // Where the units live: the server, or (tasks in Redis) the Redis beside it.
    let (per_unit, whose) = if series.redis {
        ("watched_kb_per_unit", "Redis ")
    } else {
        ("kb_per_unit", "")
    };
    // A step whose units add less than the RSS can show (ten tools) is no base to compare.
    let first = steps.iter().find(|s| readable(s, per_unit));
    if let (Some(first), Some(last)) = (first, steps.last()) {
        let growth = |key: &str| {
            let (a, b) = (first[key].as_f64(), last[key].as_f64());
            a.zip(b).map(|(a, b)| b / a).unwrap_or(f64::NAN)
        };
        out.push_str(&format!(
            "\nFrom {} to {} units: {whose}KiB per unit ×{:.2} (flat means within ×0.8–×1.2), plain-call p99 ×{:.2} (the bound is ×2).\n\n",
            first["units"],
            last["units"],
            growth(per_unit),
            growth("call_p99_us"),
        ));
    }
    out
}
