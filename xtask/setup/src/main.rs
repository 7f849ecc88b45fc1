//! `cargo xtask`: checks and installs what the command needs from the machine (see the
//! library), then hands the command to the main xtask.
//!
//! This binary has no dependencies, so on a fresh clone it builds in about a second: a machine
//! that lacks a package is told so before the main xtask and the workspace are compiled.

use std::env;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let command = args.first().map(String::as_str).unwrap_or_default();
    let setup = if command == "setup" {
        xtask_setup::command(&args[1..])
    } else {
        xtask_setup::ensure_for_command(command)
    };
    if let Err(message) = setup {
        eprintln!("xtask: {message}");
        return ExitCode::FAILURE;
    }
    if command == "setup" {
        return ExitCode::SUCCESS;
    }
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = xtask_setup::workspace_root();
    // Built, then started directly rather than through `cargo run`: `cargo run` describes the
    // package it runs in the environment (CARGO_PKG_NAME and the rest), every cargo the xtask
    // starts inherits that, and a build script that reads one of those variables (ring reads
    // CARGO_PKG_NAME and the version) sees it change between a developer's `cargo build` and
    // the xtask's, or between this launcher and the xtask: ring and everything above it were
    // compiled again at every `cargo xtask` (issue #48: CI's minutes).
    let mut build = Command::new(&cargo);
    build
        .current_dir(&root)
        .args(["build", "--quiet", "--package", "xtask"]);
    xtask_setup::without_package_description(&mut build);
    match build.status() {
        Ok(status) if status.success() => {}
        Ok(status) => {
            eprintln!("xtask: building the xtask failed ({status})");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("xtask: could not start cargo to build the xtask: {e}");
            return ExitCode::FAILURE;
        }
    }
    // The xtask is built beside this launcher (the same target directory and profile).
    let Some(xtask) = env::current_exe()
        .ok()
        .map(|me| me.with_file_name(format!("xtask{}", env::consts::EXE_SUFFIX)))
    else {
        eprintln!("xtask: cannot tell where this launcher runs from, so where the xtask is");
        return ExitCode::FAILURE;
    };
    let mut command = Command::new(&xtask);
    command
        .current_dir(&root)
        .args(&args)
        .env("CARGO", &cargo)
        .env(xtask_setup::DONE_VARIABLE, "1");
    xtask_setup::without_package_description(&mut command);
    match command.status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| c.clamp(1, 255) as u8)),
        Err(e) => {
            eprintln!("xtask: could not start {}: {e}", xtask.display());
            ExitCode::FAILURE
        }
    }
}
