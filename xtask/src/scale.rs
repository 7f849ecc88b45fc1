//! `cargo xtask bench --scale` (issue #35): how a server's cost grows with the work it holds.
//! For each kind of unit (idle 2025-11-25 sessions, sessions holding their GET stream, open
//! `subscriptions/listen` streams, kept tasks, tools in the registry), `loadgen scale` grows it
//! step by step against one server and reads the server's RSS and the latency of plain calls
//! made alongside (see `bench/loadgen/src/scale.rs`). Ours at every kind; rmcp at the kinds it
//! has (sessions and GET streams, in its stateful mode).
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
}

const SERIES: [Series; 5] = [
    Series {
        kind: "sessions",
        what: "idle 2025-11-25 sessions",
        steps: &[1_000, 10_000, 100_000],
        rmcp: true,
    },
    Series {
        kind: "streams",
        what: "2025-11-25 sessions, each holding its GET stream",
        steps: &[1_000, 10_000],
        rmcp: true,
    },
    Series {
        kind: "listen",
        what: "open subscriptions/listen streams",
        steps: &[1_000, 10_000],
        rmcp: false,
    },
    Series {
        kind: "tasks",
        what: "completed tasks kept in memory",
        steps: &[10_000, 100_000, 1_000_000],
        rmcp: false,
    },
    Series {
        kind: "tools",
        what: "tools in the registry (a server per step)",
        steps: &[10, 100, 1_000],
        rmcp: false,
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
        let mut servers = vec![("ours", ours(series.kind == "tools"))];
        if series.rmcp {
            servers.push(("rmcp", rmcp.clone()));
        }
        for (name, command) in servers {
            eprintln!("xtask: scale {} ({name}): {steps:?}", series.kind);
            let measured = loadgen_scale(bin, series.kind, &steps, &command)?;
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

fn loadgen_scale(
    bin: &Path,
    kind: &str,
    steps: &[usize],
    server: &[String],
) -> Result<Value, String> {
    let steps: Vec<String> = steps.iter().map(usize::to_string).collect();
    let mut command = Command::new(bin.join("loadgen"));
    command
        .current_dir(workspace_root())
        .args(["scale", "--kind", kind, "--steps", &steps.join(",")])
        .args(["--probe", "1"])
        .arg("--")
        .args(server);
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
    } else {
        " filled in (s) |\n"
    });
    out.push_str(if tools {
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
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
        } else {
            out.push_str(&format!(" {:.2} |\n", f("fill_secs")));
        }
    }
    // A step whose units add less than the RSS can show (ten tools) is no base to compare.
    let first = steps
        .iter()
        .find(|s| s["kb_per_unit"].as_f64().is_some_and(|kb| kb > 0.0));
    if let (Some(first), Some(last)) = (first, steps.last()) {
        let growth = |key: &str| {
            let (a, b) = (first[key].as_f64(), last[key].as_f64());
            a.zip(b).map(|(a, b)| b / a).unwrap_or(f64::NAN)
        };
        out.push_str(&format!(
            "\nFrom {} to {} units: KiB per unit ×{:.2} (flat means within ×0.8–×1.2), plain-call p99 ×{:.2} (the bound is ×2).\n\n",
            first["units"],
            last["units"],
            growth("kb_per_unit"),
            growth("call_p99_us"),
        ));
    }
    out
}
