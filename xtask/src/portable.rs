//! `cargo xtask portable`: what a user who takes one of our crates somewhere unusual relies on.
//!
//! 1. **The minimum Rust version.** The workspace is checked (every target, every feature)
//!    with the `rust-version` it declares, in `target/msrv`, and the unit tests of the two
//!    crates that go furthest from a server (`mcp-types`, `mcp-state-seal`) run with it.
//! 2. **`mcp-types` without `std`.** Built with `default-features = false` for
//!    `x86_64-unknown-none`, a target that has no `std` to fall back on.
//! 3. **WebAssembly.** `mcp-types` for `wasm32-unknown-unknown` and `wasm32-wasip2`;
//!    `mcp-state-seal` for `wasm32-wasip1`, `wasm32-wasip2` and, with its `wasm-js` feature,
//!    `wasm32-unknown-unknown`.
//! 4. **A state sealed in WebAssembly is unsealed natively.** `xtask/wasm-seal` is built for
//!    `wasm32-wasip1` and run by Node's built-in WASI; this process unseals the token it
//!    prints with the same key, and refuses it for another tool and once altered.

use std::process::Command;

use mcp_state_seal::{RequestBinding, RequestStateSecurity};
use xtask_setup::{MSRV, PORTABLE_TARGETS};

use crate::{run, workspace_root};

/// The key both sides share (test material, not a secret).
const KEY: &str = "portable-check-key-of-at-least-32-bytes";
const AUDIENCE: &str = "portable";
const TOOL: &str = "checkout";
const STATE: &str = "basket=3;step=confirm";

pub(crate) fn portable(args: &[String]) -> Result<(), String> {
    let skip_msrv = match args {
        [] => false,
        [flag] if flag == "--no-msrv" => true,
        _ => return Err("usage: cargo xtask portable [--no-msrv]".into()),
    };
    if !skip_msrv {
        msrv()?;
    }
    let [none, js, wasip1, wasip2] = PORTABLE_TARGETS;
    build(&[
        "-p",
        "keel-mcp-types",
        "--no-default-features",
        "--target",
        none,
    ])?;
    for target in [js, wasip2] {
        build(&["-p", "keel-mcp-types", "--target", target])?;
    }
    for target in [wasip1, wasip2] {
        build(&["-p", "keel-mcp-state-seal", "--target", target])?;
    }
    build(&[
        "-p",
        "keel-mcp-state-seal",
        "--features",
        "wasm-js",
        "--target",
        js,
    ])?;
    sealed_in_wasm(wasip1)
}

/// `cargo +MSRV check` of everything, then the unit tests of the lowest crates, in their own
/// target directory.
///
/// What the declared version promises is that everything compiles with it, which the check
/// proves for every target and feature. Running every crate's unit tests as well compiled the
/// whole workspace a second time (two of CI's minutes, issue #48) for what the stable run
/// already covers; the two crates users embed in no-`std` and WebAssembly builds keep theirs.
fn msrv() -> Result<(), String> {
    let target_dir = workspace_root().join("target").join("msrv");
    let toolchain = format!("+{MSRV}");
    let cargo = |args: &[&str]| {
        let mut command = Command::new("cargo");
        command
            .current_dir(workspace_root())
            .env("CARGO_TARGET_DIR", &target_dir)
            // The rustup proxy picks the toolchain; a CARGO or RUSTC from the calling cargo
            // would pin the newer one.
            .env_remove("RUSTC")
            .env_remove("CARGO")
            .arg(&toolchain)
            .args(args);
        command
    };
    run(&mut cargo(&[
        "check",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--locked",
    ]))?;
    run(&mut cargo(&[
        "test",
        "-p",
        "keel-mcp-types",
        "-p",
        "keel-mcp-state-seal",
        "--lib",
        "--all-features",
        "--locked",
    ]))
}

fn build(args: &[&str]) -> Result<(), String> {
    run(Command::new(env!("CARGO"))
        .current_dir(workspace_root())
        .args(["build", "--locked"])
        .args(args))
}

/// Seals in WebAssembly, unseals here.
fn sealed_in_wasm(target: &str) -> Result<(), String> {
    let root = workspace_root();
    build(&["--release", "-p", "wasm-seal", "--target", target])?;
    let program = root
        .join("target")
        .join(target)
        .join("release")
        .join("wasm-seal.wasm");
    let runner = root.join("xtask").join("wasm-seal").join("run-wasi.mjs");
    let mut command = Command::new(xtask_setup::require_program("node")?);
    command
        .arg("--no-warnings")
        .arg(&runner)
        .arg(&program)
        .args([KEY, AUDIENCE, TOOL, STATE]);
    eprintln!("xtask: running {command:?}");
    let output = command
        .output()
        .map_err(|e| format!("could not start node: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the WebAssembly sealer failed with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let token = String::from_utf8(output.stdout)
        .map_err(|_| "the WebAssembly sealer printed bytes that are not UTF-8".to_owned())?
        .trim()
        .to_owned();
    let verdicts = unseal_checks(&token)?;
    println!("portable: a state sealed in {target} (Node's WASI), unsealed natively: {verdicts}");
    Ok(())
}

/// Unseals `token` for the tool it was sealed for, and checks that another tool and an altered
/// token are refused.
fn unseal_checks(token: &str) -> Result<String, String> {
    let boundary = RequestStateSecurity::keys([KEY])
        .map_err(|e| e.to_string())?
        .audience(AUDIENCE)
        .bind(None)
        .map_err(|e| e.to_string())?;
    let binding = RequestBinding::new("tools/call", TOOL, None);
    let state = boundary
        .unseal(&binding, token, None)
        .map_err(|e| format!("the token from WebAssembly did not unseal: {e:?}"))?;
    if state != STATE {
        return Err(format!("the token unsealed to {state:?}, not {STATE:?}"));
    }
    let other = RequestBinding::new("tools/call", "refund", None);
    if boundary.unseal(&other, token, None).is_ok() {
        return Err("the token unsealed for another tool".into());
    }
    let mut altered = token.to_owned();
    let last = altered
        .pop()
        .ok_or("the WebAssembly sealer printed nothing")?;
    altered.push(if last == 'A' { 'B' } else { 'A' });
    if boundary.unseal(&binding, &altered, None).is_ok() {
        return Err("an altered token unsealed".into());
    }
    Ok(format!(
        "{STATE:?} back; refused for another tool and once altered ({} bytes)",
        token.len()
    ))
}
