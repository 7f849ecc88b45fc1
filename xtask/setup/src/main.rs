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
    let status = Command::new(cargo)
        .current_dir(xtask_setup::workspace_root())
        .args(["run", "--quiet", "--package", "xtask", "--"])
        .args(&args)
        .env(xtask_setup::DONE_VARIABLE, "1")
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| c.clamp(1, 255) as u8)),
        Err(e) => {
            eprintln!("xtask: could not start cargo to run the xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
