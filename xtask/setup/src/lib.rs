//! What the project's tests and checks need from the machine, in one table ([`NEEDS`]), and
//! the code that checks it and installs what is missing.
//!
//! `cargo xtask <command>` runs [`ensure_for_command`] before it builds anything: every
//! prerequisite of that command's suites is looked for; what is missing is installed where this
//! process can (Debian packages with `apt-get` as root, toolchains and components with rustup,
//! cargo subcommands with `cargo install`), printing what and why; anything it cannot install
//! stops the command at once with the one command line that would install it.
//!
//! A new system dependency of a test is one row of [`NEEDS`]. `.ci/run` keeps no list of its
//! own: it runs `cargo xtask setup`.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A group of checks that `cargo xtask` runs, each with its own prerequisites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// `cargo fmt --check`, `cargo clippy`, `cargo deny` (CI runs them before the tests).
    Lint,
    /// `cargo xtask test`, the README's test command.
    Test,
    /// `cargo xtask conformance`, the official suite on Node.
    Conformance,
    /// `cargo xtask interop`, the Python and TypeScript SDKs against ours.
    Interop,
    /// `cargo xtask fleet`, three instances behind nginx on Redis.
    Fleet,
    /// `cargo xtask attack`, hostile peers against the example servers.
    Attack,
    /// `cargo xtask fuzz`, the fuzz targets on nightly.
    Fuzz,
    /// `cargo xtask portable`, the declared minimum Rust version, `mcp-types` without `std`,
    /// and the two lower crates in WebAssembly.
    Portable,
    /// `cargo xtask bench`, ours beside rmcp, a floor and the Python SDK.
    Bench,
    /// `cargo xtask release --dry-run`, the docs.rs build, the packages and the public API.
    Release,
}

impl Suite {
    /// Every suite, in the order CI runs them.
    pub const ALL: [Self; 10] = [
        Self::Lint,
        Self::Release,
        Self::Test,
        Self::Conformance,
        Self::Interop,
        Self::Fleet,
        Self::Attack,
        Self::Fuzz,
        Self::Portable,
        Self::Bench,
    ];

    /// The suites of `.ci/run` (the benchmarks as a smoke test: `bench --quick`).
    pub const CI: [Self; 10] = [
        Self::Lint,
        Self::Release,
        Self::Test,
        Self::Conformance,
        Self::Interop,
        Self::Fleet,
        Self::Attack,
        Self::Fuzz,
        Self::Portable,
        Self::Bench,
    ];

    /// The name a user types: `cargo xtask setup test`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lint => "lint",
            Self::Test => "test",
            Self::Conformance => "conformance",
            Self::Interop => "interop",
            Self::Fleet => "fleet",
            Self::Attack => "attack",
            Self::Fuzz => "fuzz",
            Self::Portable => "portable",
            Self::Bench => "bench",
            Self::Release => "release",
        }
    }

    /// The suite named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The suites that `cargo xtask <command>` runs (none for a command that needs nothing
    /// beyond Rust, such as `layers`).
    pub fn of_command(command: &str) -> &'static [Self] {
        match command {
            "test" => &[Self::Test],
            "ci" => &Self::CI,
            "conformance" => &[Self::Conformance],
            "interop" => &[Self::Interop],
            "fleet" => &[Self::Fleet],
            "attack" => &[Self::Attack],
            "fuzz" => &[Self::Fuzz],
            "portable" => &[Self::Portable],
            "docs" | "release" => &[Self::Release],
            "deny" => &[Self::Lint],
            "bench" => &[Self::Bench],
            _ => &[],
        }
    }
}

/// How a missing prerequisite is installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Install {
    /// A Debian package (`apt-get install`, as root).
    Apt(&'static str),
    /// A component of the toolchain in use (`rustup component add`).
    RustupComponent(&'static str),
    /// A rustup toolchain (`rustup toolchain install --profile minimal`).
    RustupToolchain(&'static str),
    /// A compilation target of the toolchain in use (`rustup target add`).
    RustupTarget(&'static str),
    /// A cargo subcommand from crates.io (`cargo install --locked`).
    Cargo(&'static str),
}

/// One thing a suite needs from the machine.
#[derive(Debug)]
pub struct Need {
    /// What is looked for: a program's name, or a short description.
    pub name: &'static str,
    /// Which test or step needs it, in a few words a person can check.
    pub why: &'static str,
    /// The suites that need it.
    pub suites: &'static [Suite],
    /// Whether the machine has it.
    pub present: fn() -> bool,
    /// How to install it.
    pub install: Install,
    /// `false` when the suite runs without it (skipping, with a message, what needs it): a
    /// missing optional need is installed when possible and otherwise only reported.
    pub required: bool,
    /// Whether it is looked at on this machine at all (cargo-fuzz only once nightly is there).
    pub applies: fn() -> bool,
}

fn always() -> bool {
    true
}

/// Every prerequisite of every suite. A new system dependency of a test is one row here.
pub const NEEDS: &[Need] = &[
    Need {
        name: "git",
        why: "the layering check lists the tracked files with git ls-files",
        suites: &[Suite::Test],
        present: || program("git").is_some(),
        install: Install::Apt("git"),
        required: true,
        applies: always,
    },
    Need {
        name: "python3 with venv",
        why: "the Python SDK interop tests run in a virtual environment under target/py",
        suites: &[Suite::Test, Suite::Interop, Suite::Bench],
        present: python_has_venv,
        install: Install::Apt("python3-venv"),
        required: true,
        applies: always,
    },
    Need {
        name: "prlimit",
        why: "the accept-backoff test runs an example server under a file-descriptor limit",
        suites: &[Suite::Test],
        present: || program("prlimit").is_some(),
        install: Install::Apt("util-linux"),
        required: true,
        applies: always,
    },
    Need {
        name: "tmux",
        why: "mcp-term's real-terminal tests drive it in a tmux pane",
        suites: &[Suite::Test],
        present: || program("tmux").is_some(),
        install: Install::Apt("tmux"),
        required: true,
        applies: always,
    },
    Need {
        name: "redis-server",
        why: "mcp-store-redis's tests, the fleet and the DPoP replay attack start their own redis-server on loopback",
        suites: &[Suite::Test, Suite::Fleet, Suite::Attack],
        present: || program("redis-server").is_some(),
        install: Install::Apt("redis-server"),
        required: true,
        applies: always,
    },
    Need {
        name: "nginx",
        why: "the fleet runs behind an nginx started on loopback",
        suites: &[Suite::Fleet],
        present: || program("nginx").is_some(),
        install: Install::Apt("nginx"),
        required: true,
        applies: always,
    },
    Need {
        name: "kill",
        why: "the fleet and the attacks stop their servers with kill(1)",
        suites: &[Suite::Fleet, Suite::Attack],
        present: || program("kill").is_some(),
        install: Install::Apt("procps"),
        required: true,
        applies: always,
    },
    Need {
        name: "chromium",
        why: "the MCP Apps browser test drives Debian's headless Chromium through the booking app",
        suites: &[Suite::Test],
        present: || program("chromium").is_some(),
        install: Install::Apt("chromium"),
        required: true,
        applies: always,
    },
    Need {
        name: "npm",
        why: "installs Node 22, the conformance harness, the TypeScript SDK and playwright-core (the browser test) with npm",
        suites: &[Suite::Test, Suite::Conformance, Suite::Interop],
        present: || program("npm").is_some(),
        install: Install::Apt("npm"),
        required: true,
        applies: always,
    },
    Need {
        name: "rustfmt",
        why: "cargo fmt --check",
        suites: &[Suite::Lint],
        present: || succeeds(cargo().args(["fmt", "--version"])),
        install: Install::RustupComponent("rustfmt"),
        required: true,
        applies: always,
    },
    Need {
        name: "clippy",
        why: "cargo clippy -D warnings",
        suites: &[Suite::Lint],
        present: || succeeds(cargo().args(["clippy", "--version"])),
        install: Install::RustupComponent("clippy"),
        required: true,
        applies: always,
    },
    Need {
        name: "cargo-deny",
        why: "cargo xtask deny: advisories, bans, licenses and sources",
        suites: &[Suite::Lint],
        present: || succeeds(cargo().args(["deny", "--version"])),
        install: Install::Cargo("cargo-deny"),
        required: true,
        applies: always,
    },
    Need {
        name: "the minimum Rust version's toolchain",
        why: "cargo xtask portable checks and tests the workspace with the declared rust-version",
        suites: &[Suite::Portable],
        present: || succeeds(Command::new("rustup").args(["run", MSRV, "rustc", "--version"])),
        install: Install::RustupToolchain(MSRV),
        required: true,
        applies: always,
    },
    Need {
        name: "target x86_64-unknown-none",
        why: "mcp-types without std builds for a target that has no std",
        suites: &[Suite::Portable],
        present: || has_target(PORTABLE_TARGETS[0]),
        install: Install::RustupTarget(PORTABLE_TARGETS[0]),
        required: true,
        applies: always,
    },
    Need {
        name: "target wasm32-unknown-unknown",
        why: "mcp-types and mcp-state-seal (feature wasm-js) in a JavaScript host",
        suites: &[Suite::Portable],
        present: || has_target(PORTABLE_TARGETS[1]),
        install: Install::RustupTarget(PORTABLE_TARGETS[1]),
        required: true,
        applies: always,
    },
    Need {
        name: "target wasm32-wasip1",
        why: "a requestState sealed in WebAssembly under Node's WASI, unsealed natively",
        suites: &[Suite::Portable],
        present: || has_target(PORTABLE_TARGETS[2]),
        install: Install::RustupTarget(PORTABLE_TARGETS[2]),
        required: true,
        applies: always,
    },
    Need {
        name: "target wasm32-wasip2",
        why: "mcp-types and mcp-state-seal build for WASI preview 2",
        suites: &[Suite::Portable],
        present: || has_target(PORTABLE_TARGETS[3]),
        install: Install::RustupTarget(PORTABLE_TARGETS[3]),
        required: true,
        applies: always,
    },
    Need {
        name: "clang",
        why: "ring's C and assembly for the WebAssembly targets",
        suites: &[Suite::Portable],
        present: || program("clang").is_some(),
        install: Install::Apt("clang"),
        required: true,
        applies: always,
    },
    Need {
        name: "node",
        why: "runs the wasm32-wasip1 sealing program (Node's built-in WASI)",
        suites: &[Suite::Portable],
        present: || program("node").is_some(),
        install: Install::Apt("nodejs"),
        required: true,
        applies: always,
    },
    Need {
        name: "nightly toolchain",
        why: "cargo fuzz builds with sanitizers on nightly (`cargo xtask fuzz --ci` skips without it on a developer's machine, and fails on CI); `cargo xtask docs` documents as docs.rs does, on nightly",
        suites: &[Suite::Fuzz, Suite::Release],
        present: has_nightly,
        install: Install::RustupToolchain("nightly"),
        required: true,
        applies: always,
    },
    Need {
        name: "cargo-semver-checks",
        why: "cargo xtask release checks the public API against the previous release",
        suites: &[Suite::Release],
        present: || succeeds(cargo().args(["semver-checks", "--version"])),
        install: Install::Cargo("cargo-semver-checks"),
        required: true,
        applies: always,
    },
    Need {
        name: "cargo-fuzz",
        why: "runs the fuzz targets of fuzz/",
        suites: &[Suite::Fuzz],
        present: || succeeds(Command::new("cargo").args(["+nightly", "fuzz", "--version"])),
        install: Install::Cargo("cargo-fuzz"),
        required: true,
        applies: has_nightly,
    },
];

/// The environment variable that turns installing off: `MCP_XTASK_SETUP=check` only checks,
/// and stops at anything missing, even as root.
pub const MODE_VARIABLE: &str = "MCP_XTASK_SETUP";

/// Set by `cargo xtask` for the main xtask once the setup has run, so that it is not run twice.
pub const DONE_VARIABLE: &str = "MCP_XTASK_SETUP_DONE";

/// Whether [`ensure`] may install what is missing, or only checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Install what this process can install; stop on the rest.
    Install,
    /// Install nothing; stop on anything missing.
    Check,
}

impl Mode {
    /// [`Mode::Check`] when `MCP_XTASK_SETUP=check`, else [`Mode::Install`].
    pub fn from_env() -> Self {
        if env::var(MODE_VARIABLE).is_ok_and(|v| v == "check") {
            Self::Check
        } else {
            Self::Install
        }
    }
}

/// What the machine offers to install with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// The process runs as root.
    pub root: bool,
    /// `apt-get` is there.
    pub apt: bool,
    /// `rustup` is there.
    pub rustup: bool,
}

impl Machine {
    /// This machine.
    pub fn detect() -> Self {
        Self {
            root: is_root(),
            apt: program("apt-get").is_some(),
            rustup: program("rustup").is_some(),
        }
    }

    fn can_install(self, install: Install, mode: Mode) -> bool {
        mode == Mode::Install
            && match install {
                Install::Apt(_) => self.root && self.apt,
                Install::RustupComponent(_)
                | Install::RustupToolchain(_)
                | Install::RustupTarget(_) => self.rustup,
                Install::Cargo(_) => true,
            }
    }
}

/// Runs the setup for `cargo xtask <command>`: nothing when the command needs nothing, or when
/// `cargo xtask` already ran it for this process tree.
pub fn ensure_for_command(command: &str) -> Result<(), String> {
    if env::var_os(DONE_VARIABLE).is_some() {
        return Ok(());
    }
    let suites = Suite::of_command(command);
    if suites.is_empty() {
        return Ok(());
    }
    ensure(suites, &format!("cargo xtask {command}"), Mode::from_env())
}

/// `cargo xtask setup [--check] [SUITE...]`: every suite of CI when none is named.
pub fn command(args: &[String]) -> Result<(), String> {
    let mut mode = Mode::from_env();
    let mut suites = Vec::new();
    for arg in args {
        match arg.as_str() {
            "--check" => mode = Mode::Check,
            "all" => suites.extend(Suite::ALL),
            other => suites.push(Suite::parse(other).ok_or_else(|| {
                format!(
                    "unknown suite `{other}`; usage: cargo xtask setup [--check] [SUITE...] \
                     with SUITE one of {} or all (default: every suite CI runs)",
                    Suite::ALL.map(Suite::name).join(", ")
                )
            })?),
        }
    }
    if suites.is_empty() {
        suites.extend(Suite::CI);
    }
    let names: Vec<&str> = suites.iter().map(|s| s.name()).collect();
    ensure(
        &suites,
        &format!("cargo xtask setup {}", names.join(" ")),
        mode,
    )
}

/// Checks every prerequisite of `suites`, installs what it can (in [`Mode::Install`]), and
/// fails, naming the missing ones and the command that installs them, when anything required
/// is still missing. `what` names the command for the messages.
pub fn ensure(suites: &[Suite], what: &str, mode: Mode) -> Result<(), String> {
    let needs: Vec<&Need> = NEEDS
        .iter()
        .filter(|n| n.suites.iter().any(|s| suites.contains(s)) && (n.applies)())
        .collect();
    let missing: Vec<&Need> = needs.iter().copied().filter(|n| !(n.present)()).collect();
    if missing.is_empty() {
        eprintln!("setup: ok ({} prerequisites of {what})", needs.len());
        return Ok(());
    }
    let machine = Machine::detect();
    let (installable, blocked): (Vec<&Need>, Vec<&Need>) = missing
        .iter()
        .copied()
        .partition(|n| machine.can_install(n.install, mode));
    // Stop before installing anything when something required cannot be installed here: the
    // user gets the whole list at once, in the first seconds.
    if blocked.iter().any(|n| n.required) {
        return Err(refusal(what, &blocked, machine, mode));
    }
    for need in &blocked {
        eprintln!(
            "setup: {} is missing and optional: {}; install it with `{}`",
            need.name,
            need.why,
            install_line(&[need.install], machine)
        );
    }
    install(&installable)?;
    let still: Vec<&Need> = installable
        .iter()
        .copied()
        .filter(|n| !(n.present)())
        .collect();
    let still_required: Vec<&Need> = still.iter().copied().filter(|n| n.required).collect();
    if !still_required.is_empty() {
        return Err(format!(
            "setup: still missing after installing: {}",
            still_required
                .iter()
                .map(|n| n.name)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for need in still {
        eprintln!(
            "setup: {} could not be installed and is optional: {}",
            need.name, need.why
        );
    }
    eprintln!("setup: ok ({} prerequisites of {what})", needs.len());
    Ok(())
}

/// The message for prerequisites this process cannot install.
pub fn refusal(what: &str, blocked: &[&Need], machine: Machine, mode: Mode) -> String {
    let width = blocked.iter().map(|n| n.name.len()).max().unwrap_or(0);
    let mut text = format!("setup: `{what}` needs what this machine lacks:\n");
    for need in blocked {
        let _ = writeln!(text, "  {:width$}  {}", need.name, need.why);
    }
    let installs: Vec<Install> = blocked.iter().map(|n| n.install).collect();
    let apt_elsewhere = !machine.apt && installs.iter().any(|i| matches!(i, Install::Apt(_)));
    if apt_elsewhere {
        text.push_str(
            "Install them with the machine's package manager (the Debian package names are \
             below), then run the command again:\n",
        );
    } else {
        text.push_str("Install them, then run the command again:\n");
    }
    let _ = write!(text, "  {}", install_line(&installs, machine));
    if mode == Mode::Check {
        let _ = write!(
            text,
            "\n(installing is off: {MODE_VARIABLE}=check or --check was given)"
        );
    } else if installs.iter().any(|i| matches!(i, Install::Apt(_))) && machine.apt {
        text.push_str("\n(as root, `cargo xtask setup` installs them itself)");
    }
    text
}

/// One shell line that installs all of `installs`, grouped by installer.
pub fn install_line(installs: &[Install], machine: Machine) -> String {
    let mut apt = Vec::new();
    let mut components = Vec::new();
    let mut lines = Vec::new();
    for install in installs {
        match *install {
            Install::Apt(p) if !apt.contains(&p) => apt.push(p),
            Install::RustupComponent(c) => components.push(c),
            Install::RustupToolchain(t) => {
                lines.push(format!("rustup toolchain install {t} --profile minimal"));
            }
            Install::RustupTarget(t) => lines.push(format!("rustup target add {t}")),
            Install::Cargo(c) => lines.push(format!("cargo install --locked {c}")),
            Install::Apt(_) => {}
        }
    }
    if !components.is_empty() {
        lines.insert(0, format!("rustup component add {}", components.join(" ")));
    }
    if !apt.is_empty() {
        let sudo = if machine.root { "" } else { "sudo " };
        lines.insert(0, format!("{sudo}apt-get install -y {}", apt.join(" ")));
    }
    lines.join(" && ")
}

/// What is said, before anything runs, when setup installs Debian packages as root (security
/// review X15): the exact commands, and how to install nothing instead.
pub fn apt_announcement(packages: &[&str]) -> String {
    format!(
        "setup: running as root: `apt-get update` then `apt-get install -y {}` \
         (MCP_XTASK_SETUP=check installs nothing and names what is missing)",
        packages.join(" ")
    )
}

fn install(needs: &[&Need]) -> Result<(), String> {
    let mut apt: Vec<&str> = Vec::new();
    for need in needs {
        if let Install::Apt(p) = need.install
            && !apt.contains(&p)
        {
            apt.push(p);
        }
    }
    if !apt.is_empty() {
        for need in needs
            .iter()
            .filter(|n| matches!(n.install, Install::Apt(_)))
        {
            eprintln!("setup: installing {} ({})", need.name, need.why);
        }
        eprintln!("{}", apt_announcement(&apt));
        // Without a fresh package list a new machine may find nothing to install.
        run(Command::new("apt-get")
            .args(["update", "-qq"])
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(&apt)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null()))?;
    }
    for need in needs {
        let Some(mut command) = install_command(need.install) else {
            continue;
        };
        eprintln!("setup: installing {} ({})", need.name, need.why);
        if let Err(e) = run(&mut command) {
            if need.required {
                return Err(e);
            }
            eprintln!("setup: {e}");
        }
    }
    Ok(())
}

/// The command that installs `install`; `None` for a Debian package (those go in one
/// `apt-get install`, run before).
fn install_command(install: Install) -> Option<Command> {
    Some(match install {
        Install::Apt(_) => return None,
        Install::RustupComponent(c) => {
            let mut command = Command::new("rustup");
            command.args(["component", "add", c]);
            command
        }
        Install::RustupToolchain(t) => {
            let mut command = Command::new("rustup");
            command.args(["toolchain", "install", t, "--profile", "minimal"]);
            command
        }
        Install::RustupTarget(t) => {
            let mut command = Command::new("rustup");
            command.args(["target", "add", t]);
            command
        }
        Install::Cargo(c) => {
            let mut command = Command::new("cargo");
            command.args(["install", "--locked", "--quiet", c]);
            // A tool for this machine's checks: built without the fat LTO and the single
            // codegen unit its release profile may ask for (cargo-semver-checks asks for
            // both), and without optimizations, which cost a fresh CI machine minutes and
            // buy our checks nothing. Measured on 2 cores: cargo-semver-checks builds in
            // 94 s unoptimized against 289 s at opt-level 3, and checks three of our
            // libraries in 2.0 s against 0.4; cargo-deny builds in 47 s and checks the
            // workspace in 1.7 s against 0.9. Assertions stay as a release build has them
            // (the profile's other settings are untouched).
            command
                .env("CARGO_PROFILE_RELEASE_LTO", "false")
                .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
                .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0");
            command
        }
    })
}

fn run(command: &mut Command) -> Result<(), String> {
    eprintln!("setup: running {command:?}");
    let status = command
        .status()
        .map_err(|e| format!("could not start {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed with {status}"))
    }
}

fn succeeds(command: &mut Command) -> bool {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Removes from `command`'s environment what `cargo run` sets to describe the package it runs
/// (`CARGO_PKG_*`, `CARGO_MANIFEST_*`, `CARGO_CRATE_NAME`, `CARGO_BIN_NAME`,
/// `CARGO_PRIMARY_PACKAGE`), so that a cargo started from an xtask sees the environment a
/// developer's shell has. Build scripts that read one of these (ring does) would otherwise
/// be run again, and everything above them compiled again, whenever the two alternate.
pub fn without_package_description(command: &mut Command) {
    for (name, _) in env::vars_os() {
        if name.to_str().is_some_and(describes_the_package) {
            command.env_remove(name);
        }
    }
}

fn describes_the_package(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || matches!(
            name,
            "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
        )
}

/// The cargo that runs this process (rustup's proxy when run from a shell).
fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The minimum Rust version the workspace declares (`rust-version` in its `Cargo.toml`); a
/// test keeps the two equal.
pub const MSRV: &str = "1.88";

/// The targets `cargo xtask portable` builds for: no `std` at all, then WebAssembly in a
/// JavaScript host and under WASI (preview 1 and 2).
pub const PORTABLE_TARGETS: [&str; 4] = [
    "x86_64-unknown-none",
    "wasm32-unknown-unknown",
    "wasm32-wasip1",
    "wasm32-wasip2",
];

fn has_target(target: &str) -> bool {
    Command::new("rustup")
        .args(["target", "list", "--installed"])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == target)
        })
}

fn has_nightly() -> bool {
    succeeds(Command::new("rustup").args(["run", "nightly", "rustc", "--version"]))
}

/// The Python the interop environment is made from (`PYTHON`, else `python3`) can make a venv
/// with pip in it: Debian splits `venv` and `ensurepip` out of python3.
fn python_has_venv() -> bool {
    let python = env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    succeeds(Command::new(python).args(["-c", "import venv, ensurepip"]))
}

/// Directories searched after `PATH`: a user's `PATH` often lacks the sbin ones, where Debian
/// puts nginx.
const SYSTEM_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// The executable file `name` on `PATH` or in the system's program directories.
pub fn program(name: &str) -> Option<PathBuf> {
    program_in(&env::var_os("PATH").unwrap_or_default(), name)
}

/// [`program`] with `path` for `PATH`.
fn program_in(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    env::split_paths(path)
        .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.trim_ascii() == b"0")
}

/// The workspace root (this crate lives in `xtask/setup`).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The program `name`, or an error that says how to install it (for the xtasks that run it).
pub fn require_program(name: &str) -> Result<PathBuf, String> {
    program(name).ok_or_else(|| {
        let install = NEEDS
            .iter()
            .find(|n| n.name == name)
            .map(|n| install_line(&[n.install], Machine::detect()))
            .unwrap_or_else(|| format!("install {name}"));
        format!("{name} is not installed: `cargo xtask setup` installs it, or `{install}`")
    })
}

#[cfg(test)]
mod tests {

    /// A cargo tool is built as fast as it can be built (a fresh CI machine builds three):
    /// unoptimized, many codegen units, no LTO; the other installs carry no such settings.
    #[test]
    fn a_cargo_tool_is_built_unoptimized_and_the_rest_as_they_are() {
        use std::ffi::OsStr;
        let command = super::install_command(super::Install::Cargo("cargo-fuzz")).unwrap();
        let envs: Vec<(&OsStr, Option<&OsStr>)> = command.get_envs().collect();
        for (name, value) in [
            ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0"),
            ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
            ("CARGO_PROFILE_RELEASE_LTO", "false"),
        ] {
            assert!(
                envs.contains(&(OsStr::new(name), Some(OsStr::new(value)))),
                "{name}={value} in {envs:?}"
            );
        }
        let args: Vec<&OsStr> = command.get_args().collect();
        assert_eq!(args, ["install", "--locked", "--quiet", "cargo-fuzz"]);
        let rustup = super::install_command(super::Install::RustupTarget("wasm32-wasip1")).unwrap();
        assert_eq!(rustup.get_envs().count(), 0);
        assert!(super::install_command(super::Install::Apt("tmux")).is_none());
    }

    /// Security review X15: as root, setup says the exact commands before it runs them.
    #[test]
    fn installing_as_root_names_the_commands_and_the_way_out_first() {
        assert_eq!(
            apt_announcement(&["nginx", "redis-server"]),
            "setup: running as root: `apt-get update` then `apt-get install -y nginx redis-server` \
             (MCP_XTASK_SETUP=check installs nothing and names what is missing)"
        );
    }

    use super::*;

    const USER: Machine = Machine {
        root: false,
        apt: true,
        rustup: true,
    };

    #[test]
    fn what_cargo_run_says_of_its_package_is_not_passed_on() {
        for name in [
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
        ] {
            assert!(describes_the_package(name), "{name}");
        }
        // What configures cargo itself stays.
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_PROFILE_DEV_DEBUG",
        ] {
            assert!(!describes_the_package(name), "{name}");
        }
        // `cargo test` describes this package to the test as `cargo run` would to a binary.
        assert!(env::var_os("CARGO_PKG_NAME").is_some());
        let mut command = Command::new("true");
        without_package_description(&mut command);
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .filter_map(|(name, _)| name.to_str())
            .collect();
        assert!(removed.contains(&"CARGO_PKG_NAME"), "{removed:?}");
        assert!(removed.contains(&"CARGO_MANIFEST_DIR"), "{removed:?}");
        assert!(!removed.contains(&"CARGO"), "{removed:?}");
    }

    #[test]
    fn every_command_that_runs_a_suite_names_it() {
        assert_eq!(Suite::of_command("test"), &[Suite::Test]);
        assert_eq!(Suite::of_command("ci"), &Suite::CI);
        assert!(Suite::of_command("layers").is_empty());
        for suite in Suite::ALL {
            assert_eq!(Suite::parse(suite.name()), Some(suite));
            assert!(
                NEEDS.iter().any(|n| n.suites.contains(&suite)) || suite == Suite::Bench,
                "{suite:?} has no prerequisite"
            );
        }
    }

    #[test]
    fn the_msrv_toolchain_is_the_declared_rust_version() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
        let declared = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("rust-version = "))
            .map(|v| v.trim_matches('"'));
        assert_eq!(declared, Some(MSRV));
    }

    #[test]
    fn a_user_without_root_gets_one_sudo_line_for_every_package() {
        let redis = NEEDS.iter().find(|n| n.name == "redis-server").unwrap();
        let tmux = NEEDS.iter().find(|n| n.name == "tmux").unwrap();
        let text = refusal("cargo xtask test", &[redis, tmux], USER, Mode::Install);
        assert_eq!(
            text,
            "setup: `cargo xtask test` needs what this machine lacks:\n  \
             redis-server  mcp-store-redis's tests, the fleet and the DPoP replay attack start their own redis-server on loopback\n  \
             tmux          mcp-term's real-terminal tests drive it in a tmux pane\n\
             Install them, then run the command again:\n  \
             sudo apt-get install -y redis-server tmux\n\
             (as root, `cargo xtask setup` installs them itself)"
        );
    }

    #[test]
    fn root_in_check_mode_is_told_why_nothing_was_installed() {
        let nginx = NEEDS.iter().find(|n| n.name == "nginx").unwrap();
        let root = Machine { root: true, ..USER };
        let text = refusal("cargo xtask fleet", &[nginx], root, Mode::Check);
        assert!(text.contains("\n  apt-get install -y nginx\n"), "{text}");
        assert!(
            text.ends_with("MCP_XTASK_SETUP=check or --check was given)"),
            "{text}"
        );
        assert!(!root.can_install(nginx.install, Mode::Check));
        assert!(root.can_install(nginx.install, Mode::Install));
        assert!(!USER.can_install(nginx.install, Mode::Install));
    }

    #[test]
    fn install_lines_group_by_installer_and_keep_packages_once() {
        let line = install_line(
            &[
                Install::Cargo("cargo-deny"),
                Install::Apt("redis-server"),
                Install::RustupComponent("rustfmt"),
                Install::Apt("redis-server"),
                Install::RustupComponent("clippy"),
                Install::Apt("nginx"),
            ],
            Machine { root: true, ..USER },
        );
        assert_eq!(
            line,
            "apt-get install -y redis-server nginx && rustup component add rustfmt clippy \
             && cargo install --locked cargo-deny"
        );
    }

    #[test]
    fn without_apt_the_message_says_the_names_are_debian_ones() {
        let tmux = NEEDS.iter().find(|n| n.name == "tmux").unwrap();
        let machine = Machine { apt: false, ..USER };
        let text = refusal("cargo xtask test", &[tmux], machine, Mode::Install);
        assert!(
            text.contains("the Debian package names are below"),
            "{text}"
        );
        assert!(!text.contains("installs them itself"), "{text}");
    }

    /// The README's list of what a fresh machine needs is this table's, for every suite.
    #[test]
    fn the_readme_names_every_package_of_the_table() {
        let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
        let start = readme.find("What a fresh machine needs").unwrap();
        let end = start + readme[start..].find("keeps no list of its own").unwrap();
        let section = &readme[start..end];
        for need in NEEDS {
            let named = match need.install {
                Install::Apt(p) => p,
                Install::RustupComponent(c) => c,
                Install::RustupToolchain(t) => t,
                Install::RustupTarget(t) => t,
                Install::Cargo(c) => c,
            };
            assert!(
                section.contains(&format!("`{named}`")),
                "README.md's fresh-machine list lacks `{named}` ({})",
                need.why
            );
            for suite in need.suites {
                let row = if *suite == Suite::Test {
                    section
                        .lines()
                        .find(|l| l.contains("for `cargo xtask test`"))
                        .map(|l| {
                            // The test bullet runs over three lines.
                            let at = section.find(l).unwrap();
                            &section
                                [at..at + section[at..].find("\n\n").unwrap_or(section.len() - at)]
                        })
                } else {
                    section
                        .lines()
                        .find(|l| l.starts_with(&format!("| `{}` |", suite.name())))
                };
                let row = row.unwrap_or_else(|| {
                    panic!("README.md has no line for the {} suite", suite.name())
                });
                assert!(
                    row.contains(named),
                    "README.md's line for the {} suite lacks {named}: {row}",
                    suite.name()
                );
            }
        }
    }

    #[test]
    fn programs_are_found_on_path_and_in_sbin() {
        assert!(program("sh").is_some());
        assert!(program("no-such-program-anywhere").is_none());
        // A PATH without the system folders still finds what lives only there (nginx is in
        // /usr/sbin, outside a user's PATH): the fallback, not the PATH, finds it.
        let empty = tempfile_dir();
        let in_sbin = SYSTEM_DIRS
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
            .map(|e| e.path())
            .find(|p| is_executable(p))
            .expect("a program in a system folder");
        let name = in_sbin.file_name().unwrap().to_str().unwrap();
        let found = program_in(empty.as_os_str(), name).expect("found through SYSTEM_DIRS");
        assert!(
            SYSTEM_DIRS.iter().any(|d| found.starts_with(d)),
            "{}",
            found.display()
        );
        assert!(program_in(empty.as_os_str(), "no-such-program-anywhere").is_none());
        std::fs::remove_dir(&empty).unwrap();
    }

    /// A folder with nothing in it, to stand for a PATH that finds nothing.
    fn tempfile_dir() -> PathBuf {
        let dir = env::temp_dir().join(format!("xtask-setup-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
