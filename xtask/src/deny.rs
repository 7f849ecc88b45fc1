//! `cargo xtask deny`: `cargo deny check` for advisories, bans, licenses and sources, offline.
//!
//! The advisories check needs the RustSec database, a git repository on GitHub, which CI does
//! not reach. The repository keeps a snapshot of it (`deny/advisory-db.tar.gz`, provenance in
//! `deny/advisory-db.txt`); this unpacks it as the git repository cargo-deny reads, under
//! `target/advisory-db` (deny.toml's `db-path`), and runs `cargo deny --offline check`. The
//! snapshot's age is printed on every run; `--refresh PATH` replaces it from a clone of the
//! database on a connected machine. On such a machine a plain `cargo deny check` fetches the
//! newest database into the same place instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{run, workspace_root};

/// The folder cargo-deny looks for under `db-path` for its default database URL
/// (`https://github.com/RustSec/advisory-db`): the URL's name and a hash of it.
const DB_FOLDER: &str = "advisory-db-3157b0e258782691";

/// What the snapshot holds of the database's tree.
const SNAPSHOT_PATHS: [&str; 4] = ["crates", "rust", "LICENSES", "LICENSE.txt"];

pub(crate) fn deny(args: &[String]) -> Result<(), String> {
    match args {
        [] => check(),
        [flag, clone] if flag == "--refresh" => refresh(Path::new(clone)),
        _ => Err("usage: cargo xtask deny [--refresh PATH-OF-AN-ADVISORY-DB-CLONE]".into()),
    }
}

/// The commit and commit date the snapshot was taken at.
#[derive(Debug, PartialEq, Eq)]
struct Provenance {
    commit: String,
    date: String,
}

impl Provenance {
    fn parse(text: &str) -> Result<Provenance, String> {
        let value = |key: &str| {
            crate::setting(text, key)
                .ok_or_else(|| format!("deny/advisory-db.txt has no `{key} = …` line"))
        };
        let commit = value("commit")?;
        if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "deny/advisory-db.txt: commit {commit:?} is not a 40-digit hex id"
            ));
        }
        Ok(Provenance {
            commit,
            date: value("date")?,
        })
    }
}

fn provenance_file() -> PathBuf {
    workspace_root().join("deny").join("advisory-db.txt")
}

fn snapshot_file() -> PathBuf {
    workspace_root().join("deny").join("advisory-db.tar.gz")
}

fn check() -> Result<(), String> {
    let text = fs::read_to_string(provenance_file())
        .map_err(|e| format!("could not read deny/advisory-db.txt: {e}"))?;
    let provenance = Provenance::parse(&text)?;
    let db = unpack(&provenance)?;
    let age_days = age_in_days(&db)?;
    println!(
        "deny: advisories from the RustSec database at {} ({}, {age_days} days old; \
         `cargo xtask deny --refresh PATH` updates it)",
        &provenance.commit[..12],
        provenance.date
    );
    // cargo-deny reads `cargo metadata` for every platform, so it needs the sources of crates
    // no build on this host downloads (windows-sys, wasm-bindgen's bumpalo): a fresh machine
    // has none of them, and `--offline` below would fail on the first. The registry is the
    // one network place CI reaches; after this, the check itself stays offline.
    run(Command::new(env!("CARGO"))
        .current_dir(workspace_root())
        .args(["fetch", "--locked"]))?;
    run(Command::new(env!("CARGO"))
        .current_dir(workspace_root())
        .args(["deny", "--offline", "check"]))
}

/// Unpacks the snapshot as a one-commit git repository (cargo-deny reads the database's
/// commit date), once per snapshot commit.
fn unpack(provenance: &Provenance) -> Result<PathBuf, String> {
    let parent = workspace_root().join("target").join("advisory-db");
    let db = parent.join(DB_FOLDER);
    let stamp = parent.join("snapshot-commit");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(provenance.commit.as_str())
        && db.join(".git").is_dir()
    {
        return Ok(db);
    }
    if db.exists() {
        fs::remove_dir_all(&db).map_err(|e| format!("could not clear {}: {e}", db.display()))?;
    }
    fs::create_dir_all(&db).map_err(|e| format!("could not create {}: {e}", db.display()))?;
    run(Command::new("tar")
        .arg("-xzf")
        .arg(snapshot_file())
        .arg("-C")
        .arg(&db))?;
    let git = |args: &[&str]| {
        let mut command = Command::new("git");
        command
            .current_dir(&db)
            .args(["-c", "user.name=xtask", "-c", "user.email=xtask@localhost"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .env("GIT_AUTHOR_DATE", &provenance.date)
            .env("GIT_COMMITTER_DATE", &provenance.date)
            .stdout(Stdio::null());
        run(&mut command)
    };
    git(&["init", "--quiet"])?;
    git(&["add", "--all"])?;
    git(&[
        "commit",
        "--quiet",
        "--message",
        &format!("rustsec/advisory-db at {}", provenance.commit),
    ])?;
    fs::write(&stamp, &provenance.commit)
        .map_err(|e| format!("could not write {}: {e}", stamp.display()))?;
    Ok(db)
}

fn age_in_days(db: &Path) -> Result<u64, String> {
    let committed: u64 = crate::git_output(db, &["log", "-1", "--format=%ct"])?
        .parse()
        .map_err(|_| format!("{} has no commit with a date", db.display()))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| format!("the clock is before 1970: {e}"))?
        .as_secs();
    Ok(now.saturating_sub(committed) / 86_400)
}

/// Replaces the snapshot with the HEAD of `clone`, a clone of the advisory database.
fn refresh(clone: &Path) -> Result<(), String> {
    let git = |args: &[&str]| crate::git_output(clone, args);
    let commit = git(&["rev-parse", "HEAD"])?;
    let date = git(&["log", "-1", "--format=%cI"])?;
    let snapshot = fs::File::create(snapshot_file())
        .map_err(|e| format!("could not write deny/advisory-db.tar.gz: {e}"))?;
    let mut archive = Command::new("git")
        .arg("-C")
        .arg(clone)
        .args(["archive", "--format=tar", "HEAD"])
        .args(SNAPSHOT_PATHS)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run git archive: {e}"))?;
    let tar = archive.stdout.take().ok_or("git archive has no stdout")?;
    run(Command::new("gzip")
        .args(["-9", "-n"])
        .stdin(tar)
        .stdout(snapshot))?;
    let status = archive
        .wait()
        .map_err(|e| format!("git archive did not finish: {e}"))?;
    if !status.success() {
        return Err(format!("git archive failed with {status}"));
    }
    let text = fs::read_to_string(provenance_file())
        .map_err(|e| format!("could not read deny/advisory-db.txt: {e}"))?;
    let updated = with_provenance(&text, &commit, &date);
    Provenance::parse(&updated)?;
    fs::write(provenance_file(), updated)
        .map_err(|e| format!("could not write deny/advisory-db.txt: {e}"))?;
    println!("deny: snapshot replaced by rustsec/advisory-db at {commit} ({date})");
    Ok(())
}

/// `text` with its `commit` and `date` lines replaced, the comments kept.
fn with_provenance(text: &str, commit: &str, date: &str) -> String {
    let mut out: String = text
        .lines()
        .filter(|line| {
            let key = line.split_once('=').map(|(k, _)| k.trim());
            line.trim_start().starts_with('#') || !matches!(key, Some("commit" | "date"))
        })
        .map(|line| format!("{line}\n"))
        .collect();
    out.push_str(&format!("commit = {commit}\ndate = {date}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# comment = not a key\ncommit = bf5c0d245a92671908518d7e765914d437954ed6\n\
                        date = 2026-08-21T08:28:40+02:00\n";

    #[test]
    fn the_committed_provenance_parses() {
        let text = fs::read_to_string(provenance_file()).unwrap();
        let provenance = Provenance::parse(&text).unwrap();
        assert_eq!(provenance.commit.len(), 40);
    }

    #[test]
    fn provenance_reads_commit_and_date_and_skips_comments() {
        assert_eq!(
            Provenance::parse(FILE).unwrap(),
            Provenance {
                commit: "bf5c0d245a92671908518d7e765914d437954ed6".into(),
                date: "2026-08-21T08:28:40+02:00".into(),
            }
        );
    }

    #[test]
    fn a_missing_or_malformed_commit_is_refused() {
        assert_eq!(
            Provenance::parse("date = 2026-08-21\n").unwrap_err(),
            "deny/advisory-db.txt has no `commit = …` line"
        );
        assert_eq!(
            Provenance::parse("commit = HEAD\ndate = 2026-08-21\n").unwrap_err(),
            "deny/advisory-db.txt: commit \"HEAD\" is not a 40-digit hex id"
        );
    }

    #[test]
    fn a_refresh_replaces_both_lines_and_keeps_the_comments() {
        let updated = with_provenance(FILE, &"a".repeat(40), "2026-12-01T00:00:00+00:00");
        assert_eq!(
            updated,
            format!(
                "# comment = not a key\ncommit = {}\ndate = 2026-12-01T00:00:00+00:00\n",
                "a".repeat(40)
            )
        );
    }
}
