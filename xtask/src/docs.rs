//! `cargo xtask docs`: every published library documented the way docs.rs documents it, and
//! failing on what docs.rs would show broken.
//!
//! For each package of the workspace that is published and has a library, its
//! `[package.metadata.docs.rs]` is read (`all-features`, `features`, `no-default-features`,
//! `rustdoc-args`) and `cargo +nightly rustdoc --lib` runs with those features and arguments
//! (docs.rs builds on nightly with `--cfg docsrs`, which turns on `doc_cfg`, so a
//! feature-gated item shows its feature), plus `-D warnings`: a broken intra-doc link, a
//! missing doc or a bad code block fails. Each package is documented alone, in `target/docsrs`,
//! as docs.rs builds it alone.

use std::process::Command;

use serde_json::Value;

use crate::{metadata, run, workspace_root};

pub(crate) fn docs(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask docs".into());
    }
    let metadata = metadata()?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let mut documented = Vec::new();
    for package in &packages {
        let Some(plan) = Plan::of(package)? else {
            continue;
        };
        run(&mut plan.command())?;
        documented.push(plan.name);
    }
    if documented.is_empty() {
        return Err("no published library found in the workspace".into());
    }
    println!(
        "docs: {} libraries documented as docs.rs would, without a warning: {}",
        documented.len(),
        documented.join(", ")
    );
    Ok(())
}

/// How docs.rs builds one package's documentation.
struct Plan {
    name: String,
    all_features: bool,
    no_default_features: bool,
    features: Vec<String>,
    rustdoc_args: Vec<String>,
}

impl Plan {
    /// The plan for `package`, or `None` for one that is not published or has no library.
    fn of(package: &Value) -> Result<Option<Plan>, String> {
        let name = package["name"].as_str().unwrap_or_default().to_owned();
        // `publish = false` is an empty list of registries.
        let unpublished = package["publish"].as_array().is_some_and(Vec::is_empty);
        let has_lib = package["targets"].as_array().is_some_and(|targets| {
            targets.iter().any(|t| {
                t["kind"].as_array().is_some_and(|kinds| {
                    kinds
                        .iter()
                        .any(|k| matches!(k.as_str(), Some("lib" | "proc-macro")))
                })
            })
        });
        if unpublished || !has_lib {
            return Ok(None);
        }
        let settings = &package["metadata"]["docs"]["rs"];
        if settings.is_null() {
            return Err(format!(
                "{name} is published but has no [package.metadata.docs.rs]: say which features \
                 docs.rs documents and pass rustdoc-args = [\"--cfg\", \"docsrs\"]"
            ));
        }
        let strings = |key: &str| -> Vec<String> {
            settings[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let rustdoc_args = strings("rustdoc-args");
        if !rustdoc_args.windows(2).any(|w| w == ["--cfg", "docsrs"]) {
            return Err(format!(
                "{name}'s [package.metadata.docs.rs] lacks rustdoc-args = [\"--cfg\", \"docsrs\"]"
            ));
        }
        Ok(Some(Plan {
            name,
            all_features: settings["all-features"].as_bool().unwrap_or(false),
            no_default_features: settings["no-default-features"].as_bool().unwrap_or(false),
            features: strings("features"),
            rustdoc_args,
        }))
    }

    fn command(&self) -> Command {
        let mut command = Command::new("cargo");
        command
            .current_dir(workspace_root())
            .env(
                "CARGO_TARGET_DIR",
                workspace_root().join("target").join("docsrs"),
            )
            // The rustup proxy picks nightly; the calling cargo's own would pin stable.
            .env_remove("RUSTC")
            .env_remove("CARGO")
            .env_remove("RUSTDOCFLAGS")
            .args(["+nightly", "rustdoc", "--locked", "--lib", "-p", &self.name]);
        if self.all_features {
            command.arg("--all-features");
        }
        if self.no_default_features {
            command.arg("--no-default-features");
        }
        if !self.features.is_empty() {
            command.args(["--features", &self.features.join(",")]);
        }
        command
            .arg("--")
            .args(&self.rustdoc_args)
            .args(["-D", "warnings"]);
        command
    }
}
