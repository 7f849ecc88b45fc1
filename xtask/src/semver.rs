//! The public API check of `cargo xtask release`: `cargo semver-checks` of each published
//! library against the previous release.
//!
//! The previous release is the newest tag `vX.Y.Z` below the packages' version when the clone
//! has one. Until the first release there is none, so the repository keeps a saved baseline
//! of the public API in `release/api-baseline/`: each library's rustdoc JSON (gzip), written
//! by `cargo xtask release --save-baseline` from a clean tree, with the commit and the rustdoc
//! JSON format it came from (`baseline.txt`). cargo-semver-checks compares two documents of
//! one format only; when this toolchain writes another format than the baseline's, the
//! baseline is rebuilt from its commit when the clone has it (`--baseline-rev`), and the
//! check fails, saying so, when it has not.
//!
//! A library that is new since the tag or the saved baseline has no API to keep yet: it is
//! skipped, saying so. One that has no saved file but was a package at the baseline's commit
//! (a file lost) fails the check.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::release::Package;
use crate::{run, workspace_root};

fn baseline_dir() -> PathBuf {
    workspace_root().join("release").join("api-baseline")
}

fn work_dir() -> PathBuf {
    workspace_root().join("target").join("semver")
}

/// The libraries of `packages` (a package without one has no API to keep).
fn libraries(packages: &[Package]) -> impl Iterator<Item = &Package> {
    packages.iter().filter(|p| p.lib.is_some())
}

pub(crate) fn check(packages: &[Package]) -> Result<(), String> {
    let version = &packages[0].version;
    if let Some(tag) = previous_tag(version)? {
        for p in libraries(packages) {
            if existed_at(&tag, p) == Some(false) {
                println!("release: {} is new since {tag}: no API to keep yet", p.name);
                continue;
            }
            run(semver_checks()
                .args(["--package", &p.name, "--baseline-rev", &tag])
                .arg("--all-features"))?;
        }
        println!("release: the public API keeps semver against {tag}");
        return Ok(());
    }
    let saved = Saved::read()?;
    for p in libraries(packages) {
        let packed = packed_baseline(p);
        if against(p, packed.is_file(), existed_at(&saved.commit, p), &saved)? == Against::New {
            println!(
                "release: {} is new since the saved baseline (commit {}): no API to keep yet",
                p.name,
                short(&saved.commit)
            );
            continue;
        }
        let current = rustdoc_json(p, &work_dir().join("current"))?;
        let current_format = format_version(&current)?;
        if current_format == saved.format {
            let baseline = unpack(p)?;
            run(semver_checks()
                .arg("--baseline-rustdoc")
                .arg(&baseline)
                .arg("--current-rustdoc")
                .arg(&current))?;
        } else if has_commit(&saved.commit) {
            run(semver_checks()
                .args(["--package", &p.name, "--baseline-rev", &saved.commit])
                .arg("--all-features"))?;
        } else {
            return Err(format!(
                "the saved API baseline is rustdoc JSON format {}, this toolchain writes format \
                 {current_format}, and this clone lacks the baseline's commit {} to rebuild it: \
                 fetch that commit, or run `cargo xtask release --save-baseline` on a tree whose \
                 API is the baseline",
                saved.format, saved.commit
            ));
        }
    }
    println!(
        "release: the public API keeps semver against the saved baseline (commit {})",
        short(&saved.commit)
    );
    Ok(())
}

fn short(commit: &str) -> &str {
    &commit[..12.min(commit.len())]
}

/// What library `p` is compared with.
#[derive(Debug, PartialEq, Eq)]
enum Against {
    /// Its saved rustdoc JSON.
    Saved,
    /// Nothing: it is new since the baseline.
    New,
}

/// What library `p` is compared with, from whether its baseline file is saved and whether its
/// package was there at the baseline's commit (`None`: this clone lacks that commit). A
/// library absent from the baseline is new; one the baseline's commit had, yet without a
/// saved file, is an error (the file was lost, or never written).
fn against(
    p: &Package,
    file_saved: bool,
    existed: Option<bool>,
    saved: &Saved,
) -> Result<Against, String> {
    match (file_saved, existed) {
        (true, _) => Ok(Against::Saved),
        (false, Some(false) | None) => Ok(Against::New),
        (false, Some(true)) => Err(format!(
            "{} has no saved API baseline ({}), yet it was a package at the baseline's commit \
             {}: `cargo xtask release --save-baseline` adds it",
            p.name,
            packed_baseline(p).display(),
            short(&saved.commit)
        )),
    }
}

/// Whether package `p` (its manifest, at the path it has now) was in revision `rev`; `None`
/// when this clone lacks `rev`.
fn existed_at(rev: &str, p: &Package) -> Option<bool> {
    if !has_commit(rev) {
        return None;
    }
    let root = workspace_root();
    let manifest = p
        .dir
        .strip_prefix(&root)
        .unwrap_or(&p.dir)
        .join("Cargo.toml");
    let object = format!("{rev}:{}", manifest.to_string_lossy().replace('\\', "/"));
    Some(
        Command::new("git")
            .current_dir(root)
            .args(["cat-file", "-e", &object])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success()),
    )
}

/// Where the saved baseline of `p` is (or would be).
fn packed_baseline(p: &Package) -> PathBuf {
    baseline_dir().join(format!("{}.json.gz", p.name))
}

fn semver_checks() -> Command {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", work_dir().join("target"))
        .args(["semver-checks", "check-release"]);
    command
}

/// The newest tag `vX.Y.Z` reachable from HEAD that is below `version`.
fn previous_tag(version: &str) -> Result<Option<String>, String> {
    let tags = crate::git_output(
        &workspace_root(),
        &["tag", "--list", "v*", "--merged", "HEAD"],
    )?;
    let current = parse_version(version)
        .ok_or_else(|| format!("the packages' version {version} is not X.Y.Z"))?;
    Ok(tags
        .lines()
        .filter_map(|tag| Some((parse_version(tag.strip_prefix('v')?)?, tag.to_owned())))
        .filter(|(v, _)| *v < current)
        .max()
        .map(|(_, tag)| tag))
}

fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

fn has_commit(commit: &str) -> bool {
    Command::new("git")
        .current_dir(workspace_root())
        .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What `baseline.txt` records.
#[derive(Debug, PartialEq, Eq)]
struct Saved {
    commit: String,
    format: u64,
}

impl Saved {
    fn read() -> Result<Saved, String> {
        let path = baseline_dir().join("baseline.txt");
        let text = fs::read_to_string(&path).map_err(|e| {
            format!(
                "no saved API baseline ({}: {e}); `cargo xtask release --save-baseline` writes one",
                path.display()
            )
        })?;
        Saved::parse(&text)
    }

    fn parse(text: &str) -> Result<Saved, String> {
        let value = |key: &str| {
            crate::setting(text, key)
                .ok_or_else(|| format!("release/api-baseline/baseline.txt has no `{key} = …`"))
        };
        let format = value("format")?;
        Ok(Saved {
            commit: value("commit")?,
            format: format.parse().map_err(|_| {
                format!("release/api-baseline/baseline.txt: format {format:?} is not a number")
            })?,
        })
    }
}

/// `cargo rustdoc` of `p`'s library as JSON (stable rustc, its unstable JSON output unlocked
/// as cargo-semver-checks does), every feature on; returns the file's path.
fn rustdoc_json(p: &Package, out: &Path) -> Result<PathBuf, String> {
    let target = work_dir().join("target");
    run(Command::new(env!("CARGO"))
        .current_dir(workspace_root())
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .args([
            "rustdoc",
            "--locked",
            "--lib",
            "--all-features",
            "--package",
            &p.name,
        ])
        .args(["--", "-Z", "unstable-options", "--output-format", "json"]))?;
    let lib = p.lib.as_ref().map_or("", |l| l.name.as_str());
    let written = target.join("doc").join(format!("{lib}.json"));
    fs::create_dir_all(out).map_err(|e| format!("could not create {}: {e}", out.display()))?;
    let kept = out.join(format!("{}.json", p.name));
    fs::rename(&written, &kept).map_err(|e| {
        format!(
            "could not move {} to {}: {e}",
            written.display(),
            kept.display()
        )
    })?;
    Ok(kept)
}

fn format_version(json: &Path) -> Result<u64, String> {
    let text = fs::read(json).map_err(|e| format!("could not read {}: {e}", json.display()))?;
    let doc: Value = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not JSON: {e}", json.display()))?;
    doc["format_version"]
        .as_u64()
        .ok_or_else(|| format!("{} has no format_version", json.display()))
}

/// The saved baseline of `p`, unpacked under target/semver/baseline.
fn unpack(p: &Package) -> Result<PathBuf, String> {
    let packed = packed_baseline(p);
    if !packed.is_file() {
        return Err(format!(
            "{} has no saved API baseline ({}): a new library? `cargo xtask release \
             --save-baseline` adds it",
            p.name,
            packed.display()
        ));
    }
    let dir = work_dir().join("baseline");
    fs::create_dir_all(&dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let out = dir.join(format!("{}.json", p.name));
    let file =
        fs::File::create(&out).map_err(|e| format!("could not write {}: {e}", out.display()))?;
    run(Command::new("gzip").arg("-dc").arg(&packed).stdout(file))?;
    Ok(out)
}

/// Writes `release/api-baseline/` from this tree, which must be committed and clean (the
/// baseline names its commit).
pub(crate) fn save_baseline(packages: &[Package]) -> Result<(), String> {
    let git = |args: &[&str]| crate::git_output(&workspace_root(), args);
    let dirty = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        "crates",
    ])?;
    if !dirty.is_empty() {
        return Err(format!(
            "the crates have uncommitted changes, and the baseline names a commit: commit \
             first\n{dirty}"
        ));
    }
    let commit = git(&["rev-parse", "HEAD"])?;
    let dir = baseline_dir();
    fs::create_dir_all(&dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let mut format = None;
    for p in libraries(packages) {
        let json = rustdoc_json(p, &work_dir().join("save"))?;
        let this = format_version(&json)?;
        if format.is_some_and(|f| f != this) {
            return Err("rustdoc wrote two formats in one run".into());
        }
        format = Some(this);
        let packed = dir.join(format!("{}.json.gz", p.name));
        let file = fs::File::create(&packed)
            .map_err(|e| format!("could not write {}: {e}", packed.display()))?;
        run(Command::new("gzip")
            .args(["-9", "-n", "-c"])
            .arg(&json)
            .stdout(file))?;
    }
    let format = format.ok_or("no published library to save")?;
    let text = format!(
        "# The public API the release check compares against until the first release tag:\n\
         # each published library's rustdoc JSON (gzip), every feature on, written by\n\
         # `cargo xtask release --save-baseline` from this commit, in this rustdoc JSON format.\n\
         commit = {commit}\nformat = {format}\n"
    );
    fs::write(dir.join("baseline.txt"), text)
        .map_err(|e| format!("could not write baseline.txt: {e}"))?;
    println!("release: API baseline saved from {commit} (rustdoc JSON format {format})");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_txt_reads_commit_and_format() {
        let saved = Saved::parse("# c = x\ncommit = abc\nformat = 57\n").unwrap();
        assert_eq!(
            saved,
            Saved {
                commit: "abc".into(),
                format: 57
            }
        );
        assert_eq!(
            Saved::parse("commit = abc\n").unwrap_err(),
            "release/api-baseline/baseline.txt has no `format = …`"
        );
        assert_eq!(
            Saved::parse("commit = abc\nformat = new\n").unwrap_err(),
            "release/api-baseline/baseline.txt: format \"new\" is not a number"
        );
    }

    #[test]
    fn the_committed_baseline_has_a_file_per_published_library_it_had() {
        let saved = Saved::read().unwrap();
        let packages = crate::release::workspace().unwrap().published;
        for p in libraries(&packages) {
            let existed = existed_at(&saved.commit, p);
            let file = packed_baseline(p).is_file();
            assert!(
                file || existed != Some(true),
                "{} has no saved baseline, and the baseline's commit had it",
                p.name
            );
            let expected = if file { Against::Saved } else { Against::New };
            assert_eq!(
                against(p, file, existed, &saved),
                Ok(expected),
                "{}",
                p.name
            );
        }
    }

    #[test]
    fn a_library_absent_from_the_baseline_is_new_and_a_lost_file_is_an_error() {
        let saved = Saved {
            commit: "0123456789abcdef0123".into(),
            format: 57,
        };
        let packages = crate::release::workspace().unwrap().published;
        let p = libraries(&packages).next().unwrap();
        assert_eq!(against(p, true, Some(true), &saved), Ok(Against::Saved));
        assert_eq!(against(p, true, None, &saved), Ok(Against::Saved));
        assert_eq!(against(p, false, Some(false), &saved), Ok(Against::New));
        assert_eq!(against(p, false, None, &saved), Ok(Against::New));
        assert_eq!(
            against(p, false, Some(true), &saved),
            Err(format!(
                "{} has no saved API baseline ({}), yet it was a package at the baseline's \
                 commit 0123456789ab: `cargo xtask release --save-baseline` adds it",
                p.name,
                packed_baseline(p).display()
            ))
        );
    }

    #[test]
    fn a_package_is_looked_for_at_a_revision_by_its_manifest() {
        let packages = crate::release::workspace().unwrap().published;
        let proxy = packages
            .iter()
            .find(|p| p.name == "keel-mcp-proxy")
            .unwrap();
        let root = workspace_root();
        assert_eq!(existed_at("HEAD", proxy), Some(true));
        assert_eq!(
            existed_at("0000000000000000000000000000000000000000", proxy),
            None
        );
        // The commit that added the package had it, its parent did not (when this clone holds
        // that history).
        let added = crate::git_output(
            &root,
            &[
                "log",
                "--diff-filter=A",
                "--format=%H",
                "--",
                "crates/mcp-proxy/Cargo.toml",
            ],
        )
        .unwrap();
        if let Some(added) = added.lines().last() {
            assert_eq!(existed_at(added, proxy), Some(true));
            assert_eq!(existed_at(&format!("{added}^"), proxy), Some(false));
        }
    }

    #[test]
    fn versions_order_as_numbers() {
        assert_eq!(parse_version("0.10.0"), Some((0, 10, 0)));
        assert!(parse_version("0.10.0") > parse_version("0.9.3"));
        assert_eq!(parse_version("0.1"), None);
        assert_eq!(parse_version("0.1.0-rc1"), None);
    }
}
