//! The self-containment check: no tracked file may point outside the repository. A user's
//! clone has nothing beside it, so a test, script or CI step that reads the shared folder beside the clone or a path
//! of somebody's machine works only where it was written.

use std::path::Path;
use std::process::Command;

/// Fragments that name a place outside the repository. Built from pieces so that this file
/// does not match itself.
fn patterns() -> Vec<String> {
    let up = "..";
    vec![
        format!("{up}/shared"),
        format!("{up}\\shared"),
        ["/", "work", "/"].concat(),
        ["/", "home", "/"].concat(),
        ["/", "root", "/"].concat(),
        ["/", "Users", "/"].concat(),
        ["C:", "\\", "Users"].concat(),
    ]
}

/// Every line of a tracked text file that names a path outside the repository.
pub(crate) fn outside_references(root: &Path) -> Result<Vec<String>, String> {
    let output = Command::new("git")
        .current_dir(root)
        .args(["ls-files", "-z"])
        .output()
        .map_err(|e| format!("could not run git ls-files: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let patterns = patterns();
    let mut found = Vec::new();
    for name in output.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name);
        // A file deleted in the work tree but still in the index is not read by anything.
        let Ok(bytes) = std::fs::read(root.join(name.as_ref())) else {
            continue;
        };
        if bytes.contains(&0) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        found.extend(scan(&name, &text, &patterns));
    }
    Ok(found)
}

fn scan(name: &str, text: &str, patterns: &[String]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| patterns.iter().any(|p| line.contains(p.as_str())))
        .map(|(n, line)| format!("{name}:{}: {}", n + 1, line.trim()))
        .collect()
}

pub(crate) fn check(root: &Path) -> Result<(), String> {
    let found = outside_references(root)?;
    if found.is_empty() {
        println!("paths: ok (no tracked file refers to a path outside the repository)");
        Ok(())
    } else {
        Err(format!(
            "tracked files refer to paths outside the repository (copy what they need into \
             fixtures/ or the crate instead):\n  {}",
            found.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_outside_the_repository_are_found() {
        let patterns = patterns();
        let text = format!(
            "ok line\nlet dir = \"{}/captures\";\nconst P: &str = \"{}x/target\";\n",
            patterns[0], patterns[2]
        );
        let found = scan("t.rs", &text, &patterns);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("t.rs:2: "), "{found:?}");
        assert!(found[1].starts_with("t.rs:3: "), "{found:?}");
        assert!(scan("t.rs", "fixtures/captures and shared state", &patterns).is_empty());
    }
}
