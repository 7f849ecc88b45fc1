//! The example programs the process-level tests run, found where cargo builds them and refused
//! when they are older than the sources they are built from: a per-crate test run
//! (`cargo test -p keel-mcp-term`) does not build them, and one left from an older tree would
//! pass or fail for the wrong reason.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `target/<profile>/examples/<name>`, next to the running test binary. Panics, with the
/// command that builds it, when it is missing or older than any source it depends on (the
/// example's own file, `examples/src`, or the `src` of a crate the examples are built from).
pub fn example(name: &str) -> PathBuf {
    let mut dir = std::env::current_exe().expect("the test binary has a path");
    dir.pop();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join("examples").join(name);
    let fix = "run `cargo build -p mcp-examples --examples` first (`cargo xtask test` does)";
    let built = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} is not built: {fix}", path.display()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut sources = vec![root.join("examples/src"), root.join("examples")];
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        // Not the test crates, which no example is built from.
        sources.extend(
            crates
                .flatten()
                .map(|c| c.path())
                .filter(|c| !c.ends_with("mcp-term") && !c.ends_with("mcp-faults"))
                .map(|c| c.join("src")),
        );
    }
    if let Some((newer, when)) = newest(&sources)
        && when > built
    {
        panic!(
            "{} is older than {}: {fix}",
            path.display(),
            newer.display()
        );
    }
    path
}

/// The most recently modified `.rs` file under `dirs` (`examples` itself is read one level
/// deep: its sub-folders other than `src` are other programs' and tests' files).
fn newest(dirs: &[PathBuf]) -> Option<(PathBuf, SystemTime)> {
    let mut best: Option<(PathBuf, SystemTime)> = None;
    let mut stack: Vec<(PathBuf, bool)> = dirs
        .iter()
        .map(|d| (d.clone(), !d.ends_with("examples")))
        .collect();
    while let Some((dir, deep)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                if deep {
                    stack.push((path, true));
                }
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(when) = meta.modified()
                && best.as_ref().is_none_or(|(_, b)| when > *b)
            {
                best = Some((path, when));
            }
        }
    }
    best
}
