//! `cargo xtask bench`'s build figures (issue #21): how long a new user waits for a one-tool
//! server to build, ours against rmcp's, and what `#[mcp::tool]` costs the compiler on 100
//! tools against rmcp's `#[tool]`. Method in `docs/performance.md` ("Build times").
//!
//! Every crate is generated under `target/bench/builds/`, each a workspace of its own with its
//! own target directory, its `Cargo.lock` copied from the repository (ours: `Cargo.lock`; rmcp:
//! `bench/Cargo.lock`, which pins rmcp 3.11.0), so a run resolves the same versions every time
//! and needs nothing but crates.io. The measured commands run with the default dev profile:
//! the variables a developer's shell may set (`CARGO_PROFILE_*`, `CARGO_TARGET_DIR`,
//! `CARGO_INCREMENTAL`, `RUSTFLAGS`, …) are removed from their environment.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use serde_json::{Value, json};

use super::bench::median;

/// Incremental rebuilds (each after a new edit of the tool body) and `cargo check` repetitions
/// per figure; the report shows the median.
const REPEATS: usize = 3;
/// Tools in the macro expansion crates.
const TOOLS: usize = 100;

/// The one-tool servers whose builds are timed.
struct Server {
    /// Its key in the figures.
    key: &'static str,
    /// Its column heading.
    label: &'static str,
    manifest: String,
    lock: PathBuf,
    /// `main.rs` with the tool returning `format!("{prefix}{text}")`.
    source: fn(&str) -> String,
}

fn env_cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Whether `name` is a variable of ours that a new user's shell does not set: a profile,
/// target-dir, incremental, flag or wrapper override.
fn overridden(name: &str) -> bool {
    name.starts_with("CARGO_PROFILE_")
        || name.starts_with("CARGO_BUILD_")
        || matches!(
            name,
            "CARGO_TARGET_DIR"
                | "CARGO_INCREMENTAL"
                | "RUSTFLAGS"
                | "CARGO_ENCODED_RUSTFLAGS"
                | "RUSTC_BOOTSTRAP"
                | "RUSTC_WRAPPER"
                | "RUSTC_WORKSPACE_WRAPPER"
        )
}

/// `cargo` in `dir` with the environment of a new user's shell (see [`overridden`]).
fn clean_cargo(dir: &Path) -> Command {
    let mut command = Command::new(env_cargo());
    command.current_dir(dir);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(overridden) {
            command.env_remove(name);
        }
    }
    command
}

/// Runs `command`, failing with its stderr; returns the wall-clock seconds it took.
fn timed(command: &mut Command) -> Result<f64, String> {
    eprintln!("xtask: timing {command:?}");
    let start = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("could not start {command:?}: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    eprintln!("xtask: {secs:.2} s");
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{command:?} failed:\n{}", tail.join("\n")));
    }
    Ok(secs)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Rewrites nothing but the modification time, so cargo rebuilds the crate.
fn touch(path: &Path) -> Result<(), String> {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(SystemTime::now()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn remove_dir(path: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// A dependency on the repository's `crates/mcp`, with `features` (`None`: the defaults).
fn mcp_dependency(root: &Path, features: Option<&[&str]>) -> String {
    let path = root.join("crates").join("mcp");
    let path = path.display().to_string().replace('\\', "/");
    match features {
        None => format!("mcp = {{ package = \"keel-mcp\", path = \"{path}\" }}"),
        Some(list) => format!(
            "mcp = {{ package = \"keel-mcp\", path = \"{path}\", default-features = false, features = [{}] }}",
            list.iter()
                .map(|f| format!("\"{f}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A package manifest that is its own workspace (it lives inside ours).
fn manifest(name: &str, kind: &str, dependencies: &[String]) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         {kind}\n[dependencies]\n{}\n\n[workspace]\n",
        dependencies.join("\n")
    )
}

/// Our one-tool server, written like the README's quickstart.
pub(crate) fn ours_source(prefix: &str) -> String {
    format!(
        r#"use mcp::McpServer;

/// Echo the text back.
#[mcp::tool]
async fn echo(text: String) -> String {{
    format!("{prefix}{{text}}")
}}

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {{
    mcp::stdio::serve(McpServer::new("echo").tool(echo)).await
}}
"#
    )
}

/// The same server on rmcp, written like rmcp-macros' README (a `#[tool_router]` impl, a
/// `#[tool_handler]` `ServerHandler`), served with `serve(stdio())`.
pub(crate) fn rmcp_source(prefix: &str) -> String {
    format!(
        r#"use rmcp::handler::server::wrapper::Parameters;
use rmcp::{{ServerHandler, ServiceExt, tool, tool_handler, tool_router}};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {{
    text: String,
}}

#[derive(Clone)]
struct Echo;

#[tool_router]
impl Echo {{
    /// Echo the text back.
    #[tool(description = "Echo the text back.")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {{
        format!("{prefix}{{}}", args.text)
    }}
}}

#[tool_handler]
impl ServerHandler for Echo {{}}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {{
    let running = Echo.serve(rmcp::transport::io::stdio()).await?;
    running.waiting().await?;
    Ok(())
}}
"#
    )
}

const TOKIO: &str = r#"tokio = { version = "1", features = ["macros", "rt-multi-thread"] }"#;
const RMCP: &str =
    r#"rmcp = { version = "=3.11.0", features = ["server", "macros", "transport-io"] }"#;
const SERDE: &str = r#"serde = { version = "1", features = ["derive"] }"#;
const SCHEMARS: &str = r#"schemars = "1""#;

/// The leanest documented feature set of `mcp` for a stdio server with `#[mcp::tool]`.
pub(crate) const LEAN: [&str; 2] = ["macros", "stdio"];

fn servers(root: &Path) -> Vec<Server> {
    let bin = "[[bin]]\nname = \"echo\"\npath = \"src/main.rs\"\n";
    vec![
        Server {
            key: "ours_default",
            label: "ours (`mcp`, default features)",
            manifest: manifest(
                "ours-default",
                bin,
                &[mcp_dependency(root, None), TOKIO.into()],
            ),
            lock: root.join("Cargo.lock"),
            source: ours_source,
        },
        Server {
            key: "ours_lean",
            label: "ours (`mcp`, features = [\"macros\", \"stdio\"])",
            manifest: manifest(
                "ours-lean",
                bin,
                &[mcp_dependency(root, Some(&LEAN)), TOKIO.into()],
            ),
            lock: root.join("Cargo.lock"),
            source: ours_source,
        },
        Server {
            key: "rmcp",
            label: "rmcp 3.11.0 (server, macros, transport-io)",
            manifest: manifest(
                "rmcp-one-tool",
                bin,
                &[RMCP.into(), TOKIO.into(), SERDE.into(), SCHEMARS.into()],
            ),
            lock: root.join("bench").join("Cargo.lock"),
            source: rmcp_source,
        },
    ]
}

/// Writes a crate's files and its copied lock file, and fetches what it needs (not timed:
/// downloads are not part of a build). `cargo fetch` also drops the lock's unused entries,
/// keeping the pinned versions of the rest, so later `--locked` builds resolve nothing.
fn prepare(
    dir: &Path,
    manifest: &str,
    lock: &Path,
    sources: &[(&str, String)],
) -> Result<(), String> {
    write(&dir.join("Cargo.toml"), manifest)?;
    for (path, text) in sources {
        write(&dir.join(path), text)?;
    }
    std::fs::copy(lock, dir.join("Cargo.lock")).map_err(|e| format!("{}: {e}", lock.display()))?;
    timed(clean_cargo(dir).arg("fetch"))?;
    Ok(())
}

/// A clean `cargo build` (empty target directory), then `REPEATS` incremental rebuilds, each
/// after a new edit of the returned string.
fn time_server(dir: &Path, server: &Server) -> Result<Value, String> {
    let main = dir.join("src").join("main.rs");
    prepare(
        dir,
        &server.manifest,
        &server.lock,
        &[("src/main.rs", (server.source)("echo: "))],
    )?;
    remove_dir(&dir.join("target"))?;
    let clean = timed(clean_cargo(dir).args(["build", "--locked"]))?;
    let mut incremental = Vec::new();
    for edit in 0..REPEATS {
        write(&main, &(server.source)(&format!("echo (edit {edit}): ")))?;
        incremental.push(timed(clean_cargo(dir).args(["build", "--locked"]))?);
    }
    Ok(json!({"clean_s": clean, "incremental_s": incremental}))
}

/// The argument lists the 100 tools cycle through.
const SIGNATURES: [(&str, &str); 5] = [
    ("text: String", "text"),
    ("count: i64, flag: bool", "format!(\"{count} {flag}\")"),
    (
        "text: String, limit: Option<i64>",
        "format!(\"{text} {limit:?}\")",
    ),
    (
        "point: Point, label: Option<String>",
        "format!(\"{} {} {label:?}\", point.x, point.y)",
    ),
    (
        "text: String, count: i64, flag: bool, point: Point",
        "format!(\"{text} {count} {flag} {}\", point.x)",
    ),
];

/// Our 100-tool crate: `with_macro` puts `#[mcp::tool]` on each fn and registers all of them on
/// an `McpServer`; without, the same fns are plain (and nothing is registered).
pub(crate) fn ours_tools_source(with_macro: bool) -> String {
    let mut out = String::from(
        "//! Generated by `cargo xtask bench` (the macro expansion figure).\n\n\
         use schemars::JsonSchema;\nuse serde::Deserialize;\n\n\
         /// A point.\n#[derive(Deserialize, JsonSchema)]\npub struct Point {\n    /// x.\n    pub x: i64,\n    /// y.\n    pub y: i64,\n}\n",
    );
    for n in 0..TOOLS {
        let (args, body) = SIGNATURES[n % SIGNATURES.len()];
        out.push_str(&format!("\n/// Tool number {n}.\n"));
        if with_macro {
            out.push_str("#[mcp::tool]\n");
        }
        out.push_str(&format!(
            "pub async fn tool_{n}({args}) -> String {{\n    {body}.to_string()\n}}\n"
        ));
    }
    if with_macro {
        out.push_str("\n/// All of them on one server.\npub fn server() -> mcp::McpServer {\n    mcp::McpServer::new(\"tools\")");
        for n in 0..TOOLS {
            out.push_str(&format!("\n        .tool(tool_{n})"));
        }
        out.push_str("\n}\n");
    }
    out
}

/// rmcp's 100-tool crate: one argument struct per tool (rmcp's `Parameters<T>` form, written in
/// both crates), the methods in one impl; `with_macro` adds `#[tool_router]`, `#[tool]` and a
/// `#[tool_handler]` `ServerHandler`.
pub(crate) fn rmcp_tools_source(with_macro: bool) -> String {
    let mut out = String::from(
        "//! Generated by `cargo xtask bench` (the macro expansion figure).\n\n\
         use rmcp::handler::server::wrapper::Parameters;\nuse schemars::JsonSchema;\nuse serde::Deserialize;\n\n\
         /// A point.\n#[derive(Deserialize, JsonSchema)]\npub struct Point {\n    /// x.\n    pub x: i64,\n    /// y.\n    pub y: i64,\n}\n",
    );
    for n in 0..TOOLS {
        let (args, _) = SIGNATURES[n % SIGNATURES.len()];
        let fields: Vec<String> = args
            .split(", ")
            .map(|field| format!("    /// A field.\n    pub {field},\n"))
            .collect();
        out.push_str(&format!(
            "\n/// The arguments of tool {n}.\n#[derive(Deserialize, JsonSchema)]\npub struct Args{n} {{\n{}}}\n",
            fields.concat()
        ));
    }
    out.push_str("\n/// The server.\n#[derive(Clone)]\npub struct Tools;\n\n");
    if with_macro {
        out.push_str("use rmcp::{tool, tool_handler, tool_router};\n\n#[tool_router]\n");
    }
    out.push_str("impl Tools {");
    for n in 0..TOOLS {
        let (args, body) = SIGNATURES[n % SIGNATURES.len()];
        let names: Vec<&str> = args
            .split(", ")
            .filter_map(|field| field.split(':').next())
            .collect();
        out.push_str(&format!("\n    /// Tool number {n}.\n"));
        if with_macro {
            out.push_str(&format!(
                "    #[tool(description = \"Tool number {n}.\")]\n"
            ));
        }
        out.push_str(&format!(
            "    pub async fn tool_{n}(&self, Parameters(Args{n} {{ {} }}): Parameters<Args{n}>) -> String {{\n        {body}.to_string()\n    }}\n",
            names.join(", ")
        ));
    }
    out.push_str("}\n");
    if with_macro {
        out.push_str("\n#[tool_handler]\nimpl rmcp::ServerHandler for Tools {}\n");
    }
    out
}

/// The 100-tool crates of one SDK: `cargo check` of each (`CARGO_INCREMENTAL=0`, dependencies
/// already checked), `REPEATS` times, alternating.
fn time_macros(
    dir: &Path,
    lock: &Path,
    dependencies: &[String],
    source: fn(bool) -> String,
) -> Result<Value, String> {
    let lib = "[lib]\npath = \"src/lib.rs\"\n";
    let members = ["with-macro", "plain"];
    let mut sources = Vec::new();
    for (member, with_macro) in members.iter().zip([true, false]) {
        sources.push((
            format!("{member}/Cargo.toml"),
            manifest(member, lib, dependencies).replace("\n\n[workspace]\n", "\n"),
        ));
        sources.push((format!("{member}/src/lib.rs"), source(with_macro)));
    }
    let workspace = "[workspace]\nresolver = \"3\"\nmembers = [\"with-macro\", \"plain\"]\n";
    let borrowed: Vec<(&str, String)> = sources
        .iter()
        .map(|(path, text)| (path.as_str(), text.clone()))
        .collect();
    prepare(dir, workspace, lock, &borrowed)?;
    let check = |member: &str| -> Result<f64, String> {
        timed(
            clean_cargo(dir)
                .env("CARGO_INCREMENTAL", "0")
                .args(["check", "--locked", "-p", member]),
        )
    };
    // Dependencies first, not timed.
    for member in members {
        check(member)?;
    }
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..REPEATS {
        for (i, member) in members.iter().enumerate() {
            touch(&dir.join(member).join("src").join("lib.rs"))?;
            times[i].push(check(member)?);
        }
    }
    Ok(json!({"with_macro_s": times[0], "plain_s": times[1]}))
}

/// Measures everything; the figures as JSON (written to `target/bench/builds.json` by the
/// caller).
pub(crate) fn measure(root: &Path) -> Result<Value, String> {
    let out = root.join("target").join("bench").join("builds");
    let mut figures = serde_json::Map::new();
    for server in servers(root) {
        eprintln!("xtask: builds: {}", server.label);
        let measured = time_server(&out.join(server.key.replace('_', "-")), &server)?;
        figures.insert(server.key.into(), measured);
    }
    eprintln!("xtask: builds: 100 tools, ours");
    figures.insert(
        "macros_ours".into(),
        time_macros(
            &out.join("macros-ours"),
            &root.join("Cargo.lock"),
            &[
                mcp_dependency(root, Some(&["macros"])),
                SERDE.into(),
                SCHEMARS.into(),
            ],
            ours_tools_source,
        )?,
    );
    eprintln!("xtask: builds: 100 tools, rmcp");
    figures.insert(
        "macros_rmcp".into(),
        time_macros(
            &out.join("macros-rmcp"),
            &root.join("bench").join("Cargo.lock"),
            &[
                r#"rmcp = { version = "=3.11.0", features = ["server", "macros"] }"#.into(),
                SERDE.into(),
                SCHEMARS.into(),
            ],
            rmcp_tools_source,
        )?,
    );
    Ok(Value::Object(figures))
}

/// Seconds as the build figures keep them: one value, or the repeats (their median).
pub(crate) fn seconds_median(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Array(list) => median(list.iter().map(Value::as_f64)),
        _ => None,
    }
}

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
}

/// The Markdown section of the build figures.
pub(crate) fn report(figures: &Value) -> String {
    let get = |key: &str, field: &str| seconds_median(&figures[key][field]);
    let mut out = String::from(
        "\n### Builds (debug, the default dev profile; wall-clock seconds on this machine)\n\n\
         | one-tool stdio server | clean `cargo build` (s) | incremental rebuild after editing the tool body (s, median of 3) |\n\
         | --- | ---: | ---: |\n",
    );
    let labels = [
        ("ours_default", "ours (`mcp`, default features)"),
        (
            "ours_lean",
            "ours (`mcp`, features = [\"macros\", \"stdio\"])",
        ),
        ("rmcp", "rmcp 3.11.0 (server, macros, transport-io)"),
    ];
    for (key, label) in labels {
        out.push_str(&format!(
            "| {label} | {} | {} |\n",
            secs(get(key, "clean_s")),
            secs(get(key, "incremental_s"))
        ));
    }
    out.push_str(&format!(
        "\n| {TOOLS} tools, `cargo check` (incremental off, dependencies built; s, median of 3) | with the macros | the same fns without | difference |\n\
         | --- | ---: | ---: | ---: |\n"
    ));
    for (key, label) in [
        (
            "macros_ours",
            "ours: `#[mcp::tool]` fns + `McpServer::tool` ×100 / plain async fns",
        ),
        (
            "macros_rmcp",
            "rmcp: `#[tool_router]` + `#[tool]` ×100 + `#[tool_handler]` / the same impl and argument structs",
        ),
    ] {
        let with = get(key, "with_macro_s");
        let plain = get(key, "plain_s");
        let difference = with.zip(plain).map(|(a, b)| a - b);
        out.push_str(&format!(
            "| {label} | {} | {} | {} |\n",
            secs(with),
            secs(plain),
            secs(difference)
        ));
    }
    out.push_str("\n| target | measured | met? |\n| --- | ---: | :---: |\n");
    for target in targets(figures) {
        out.push_str(&format!("| {} | {} | {} |\n", target.0, target.1, target.2));
    }
    out
}

/// The build targets: label, the value shown, and whether it is met.
pub(crate) fn targets(figures: &Value) -> Vec<(String, String, &'static str)> {
    let get = |key: &str, field: &str| seconds_median(&figures[key][field]);
    let verdict = |met: Option<bool>| match met {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "n/a",
    };
    let mut list = Vec::new();
    let rmcp = get("rmcp", "clean_s");
    // Issue #35's targets: 0.8× rmcp's with the default features, 0.6× with the lean ones.
    for (key, features, bound) in [
        ("ours_default", "default features", 0.8),
        ("ours_lean", "features = [\"macros\", \"stdio\"]", 0.6),
    ] {
        let ratio = get(key, "clean_s")
            .zip(rmcp)
            .filter(|(_, b)| *b > 0.0)
            .map(|(a, b)| a / b);
        list.push((
            format!("clean debug build of a one-tool server ≤ {bound}× rmcp's ({features})"),
            ratio.map_or_else(|| "n/a".into(), |r| format!("{r:.2}×")),
            verdict(ratio.map(|r| r <= bound)),
        ));
    }
    for (key, features) in [
        ("ours_default", "default features"),
        ("ours_lean", "features = [\"macros\", \"stdio\"]"),
    ] {
        let incremental = get(key, "incremental_s");
        list.push((
            format!("incremental rebuild after editing the tool body under 1 s ({features})"),
            incremental.map_or_else(|| "n/a".into(), |s| format!("{s:.2} s")),
            verdict(incremental.map(|s| s < 1.0)),
        ));
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_100_tools_cover_every_argument_kind() {
        let with = ours_tools_source(true);
        assert_eq!(with.matches("#[mcp::tool]\n").count(), TOOLS);
        assert_eq!(with.matches(".tool(tool_").count(), TOOLS);
        for kind in ["String", "i64", "bool", "Option<", "point: Point"] {
            assert!(with.contains(kind), "no {kind} argument");
        }
        let plain = ours_tools_source(false);
        assert!(!plain.contains("mcp::"));
        assert_eq!(plain.matches("pub async fn tool_").count(), TOOLS);
        // The crates differ only in the macros and the registration.
        let stripped = with.replace("#[mcp::tool]\n", "");
        assert!(stripped.starts_with(&plain));
    }

    #[test]
    fn rmcp_tools_differ_only_in_the_macros() {
        let with = rmcp_tools_source(true);
        assert_eq!(with.matches("#[tool(").count(), TOOLS);
        assert_eq!(with.matches("pub struct Args").count(), TOOLS);
        let plain = rmcp_tools_source(false);
        let stripped: String = with
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                !l.starts_with("#[tool") && !l.starts_with("use rmcp::{tool")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let stripped = stripped
            .replace("\nimpl rmcp::ServerHandler for Tools {}\n", "")
            .replace("pub struct Tools;\n\n\n", "pub struct Tools;\n\n");
        assert_eq!(stripped.trim_end(), plain.trim_end());
    }

    #[test]
    fn edits_change_only_the_returned_string() {
        for source in [ours_source, rmcp_source] {
            let a = source("echo: ");
            let b = source("echo (edit 1): ");
            assert_ne!(a, b);
            assert_eq!(a.replace("echo: ", "X"), b.replace("echo (edit 1): ", "X"));
        }
    }

    #[test]
    fn targets_are_ratios_to_rmcp_and_a_bound_in_seconds() {
        // Issue #35's bounds: 0.8× with the default features, 0.6× lean, rebuilds under 1 s.
        let figures = json!({
            "ours_default": {"clean_s": 35.0, "incremental_s": [0.5, 3.0, 0.9]},
            "ours_lean": {"clean_s": 31.0, "incremental_s": [1.0]},
            "rmcp": {"clean_s": 50.0, "incremental_s": [1.0]},
        });
        let list = targets(&figures);
        assert_eq!(
            list[0].0,
            "clean debug build of a one-tool server ≤ 0.8× rmcp's (default features)"
        );
        assert_eq!((list[0].1.as_str(), list[0].2), ("0.70×", "yes"));
        assert_eq!((list[1].1.as_str(), list[1].2), ("0.62×", "**no**"));
        assert_eq!((list[2].1.as_str(), list[2].2), ("0.90 s", "yes"));
        assert_eq!((list[3].1.as_str(), list[3].2), ("1.00 s", "**no**"));
        let none = targets(&json!({}));
        assert!(none.iter().all(|t| t.2 == "n/a"));
        let text = report(&figures);
        assert!(text.contains("| ours (`mcp`, default features) | 35.00 | 0.90 |"));
    }

    #[test]
    fn the_measured_builds_leave_our_overrides_behind() {
        for name in [
            "CARGO_PROFILE_DEV_DEBUG",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "RUSTFLAGS",
            "RUSTC_BOOTSTRAP",
        ] {
            assert!(overridden(name), "{name}");
        }
        for name in ["PATH", "HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"] {
            assert!(!overridden(name), "{name}");
        }
    }
}
