//! `cargo xtask fuzz [--seconds N] [--ci] [TARGET…]`: runs every fuzz target of `fuzz/` (a
//! cargo-fuzz workspace of its own, on the nightly toolchain) for N seconds each (default 60)
//! on its committed corpus under `fuzz/corpus/<target>`, and prints the executions and the
//! coverage libFuzzer reported. New inputs it finds go to a scratch corpus under `target/`,
//! so the committed one changes only by hand. A crash stops the run and leaves its input
//! under `fuzz/artifacts/<target>/`.
//!
//! With `--ci`, a machine without the nightly toolchain skips the stage with a printed reason
//! (and cargo-fuzz is installed when missing).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::workspace_root;

/// Every target of fuzz/Cargo.toml, in the order they run.
pub(crate) const TARGETS: &[&str] = &[
    "jsonrpc",
    "frame",
    "sse",
    "seal",
    "oauth",
    "service",
    "http",
    "uri_template",
    "elicitation",
    "frontmatter",
];

pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let mut seconds = 60u64;
    let mut ci = false;
    let mut chosen = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--seconds needs a number")?;
            }
            "--ci" => ci = true,
            target if TARGETS.contains(&target) => chosen.push(target),
            other => {
                return Err(format!(
                    "unknown fuzz argument {other:?}; targets: {}",
                    TARGETS.join(", ")
                ));
            }
        }
    }
    if chosen.is_empty() {
        chosen = TARGETS.to_vec();
    }
    let nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !nightly {
        let why = "the nightly toolchain is not installed (`rustup toolchain install nightly`)";
        // `--ci` on a developer's machine skips, saying so; on a CI machine (`CI` set) a missing
        // toolchain fails the stage, which would otherwise pass without fuzzing anything.
        if ci && !crate::on_ci() {
            println!("fuzz: skipped: {why}");
            return Ok(());
        }
        return Err(format!("{why}; CI runs every fuzz target"));
    }
    let has_fuzz = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_fuzz {
        // `cargo xtask fuzz` installs it first (xtask/setup) unless installing is off.
        return Err("cargo-fuzz is not installed (`cargo install cargo-fuzz --locked`)".into());
    }
    let root = workspace_root();
    let fuzz_dir = root.join("fuzz");
    // CI's run is a smoke test (every target builds and runs its corpus and a few seconds
    // more): it builds without optimizations, as cargo fuzz's `--dev` does, which compiles the
    // targets in well under half the release build's time (one codegen unit per crate at full
    // optimization): 2.3 minutes instead of 5.5 on a 2-core machine. Longer campaigns build in
    // release for the executions per second.
    let profile: &[&str] = if ci { &["--dev"] } else { &[] };
    // All targets in one build first, so they compile side by side rather than one by one.
    let mut build = Command::new("cargo");
    build
        .current_dir(&fuzz_dir)
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN")
        .args(["+nightly", "fuzz", "build"])
        .args(profile);
    eprintln!("xtask: building the fuzz targets");
    let built = build
        .status()
        .map_err(|e| format!("could not start cargo fuzz: {e}"))?;
    if !built.success() {
        return Err(format!("building the fuzz targets failed ({built})"));
    }
    let mut summary = Vec::new();
    for target in chosen {
        let corpus = fuzz_dir.join("corpus").join(target);
        let scratch = root.join("target").join("fuzz-corpus").join(target);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
        let mut command = Command::new("cargo");
        command
            .current_dir(&fuzz_dir)
            .env_remove("CARGO")
            .env_remove("RUSTUP_TOOLCHAIN")
            .args(["+nightly", "fuzz", "run", target])
            .args(profile)
            .arg(&scratch)
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .args([
                "-rss_limit_mb=2048",
                "-max_len=65536",
                "-print_final_stats=1",
            ]);
        eprintln!("xtask: fuzzing {target} for {seconds} s");
        let output = command
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("could not start cargo fuzz: {e}"))?;
        let log = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            eprintln!("{log}");
            return Err(format!(
                "fuzz target {target} failed ({}); the input is under fuzz/artifacts/{target}/",
                output.status
            ));
        }
        summary.push(format!("{target:10} {}", stats(&log, &corpus)));
    }
    println!("fuzz: every target ran {seconds} s without a failure");
    for line in summary {
        println!("  {line}");
    }
    Ok(())
}

/// "N executions, cov: C, ft: F, corpus K files" from libFuzzer's last status line.
fn stats(log: &str, corpus: &Path) -> String {
    let last = log
        .lines()
        .rev()
        .find(|l| l.starts_with('#') && l.contains("cov:"))
        .unwrap_or_default();
    let field = |name: &str| {
        last.split_whitespace()
            .skip_while(|w| *w != name)
            .nth(1)
            .unwrap_or("?")
            .to_owned()
    };
    let execs = last
        .split_whitespace()
        .next()
        .map(|n| n.trim_start_matches('#'))
        .unwrap_or("?");
    let committed = std::fs::read_dir(corpus).map(|d| d.count()).unwrap_or(0);
    format!(
        "{execs} executions, cov: {}, ft: {}, committed corpus {committed} files",
        field("cov:"),
        field("ft:")
    )
}

#[cfg(test)]
mod tests {
    use super::TARGETS;

    /// `TARGETS` is what `cargo xtask fuzz` (and so CI) runs: a target added to
    /// fuzz/Cargo.toml but not here would never run, one listed here but not there would
    /// fail the stage.
    #[test]
    fn targets_are_the_bins_of_the_fuzz_workspace() {
        let manifest = std::fs::read_to_string(crate::workspace_root().join("fuzz/Cargo.toml"))
            .expect("fuzz/Cargo.toml");
        let mut bins: Vec<&str> = manifest
            .split("[[bin]]")
            .skip(1)
            .filter_map(|bin| {
                let line = bin.lines().find(|l| l.trim_start().starts_with("name"))?;
                line.split('"').nth(1)
            })
            .collect();
        let mut targets = TARGETS.to_vec();
        bins.sort_unstable();
        targets.sort_unstable();
        assert_eq!(targets, bins);
    }
}
