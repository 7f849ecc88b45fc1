//! `cargo xtask release --dry-run`: everything a release checks, without publishing.
//!
//! 1. **Agreement**: every published package has the workspace's version, and every
//!    dependency between them asks for it; CHANGELOG.md's newest version heading is that
//!    version; each crate's README starts from `cargo add <package>`, and every version a
//!    README or the root README writes for one of our packages is the current one; each
//!    published package has its description, keywords, categories, readme, license,
//!    rust-version and docs.rs link, and no repository URL that is not a real home; each
//!    published library's crate documentation shows an example.
//! 2. **Documentation**: `cargo xtask docs` (docs.rs's build, warnings failing: a public
//!    item without docs fails there, and in every build, through `missing_docs = "deny"`).
//! 3. **Packages**: `cargo package --workspace --locked` without `--no-verify`, the
//!    unpublished packages excluded: each package in dependency order, built from its
//!    `.crate` alone with the lower ones resolved from the local packages (what
//!    `cargo publish --dry-run` would upload and build).
//! 4. **Public API**: `cargo semver-checks` of each published library against the previous
//!    release tag (`vX.Y.Z`) when the clone has one, else against the saved baseline in
//!    `release/api-baseline/` (`--save-baseline` writes it, from this tree).
//!
//! Without `--dry-run`, the same checks run with CHANGELOG's heading dated today, then
//! `cargo publish --workspace` and the tag `vX.Y.Z`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::{cargo, metadata, run, workspace_root};

pub(crate) fn release(args: &[String]) -> Result<(), String> {
    match args {
        [flag] if flag == "--dry-run" => checks(Mode::DryRun).map(drop),
        [flag] if flag == "--save-baseline" => {
            crate::semver::save_baseline(&workspace()?.published)
        }
        [] => {
            let workspace = checks(Mode::Publish)?;
            publish(&workspace)
        }
        _ => Err("usage: cargo xtask release [--dry-run | --save-baseline]".into()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// CHANGELOG's heading may still say `Unreleased`.
    DryRun,
    /// CHANGELOG's heading must carry today's date.
    Publish,
}

/// What the checks read of one published package.
#[derive(Debug, Clone)]
pub(crate) struct Package {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) dir: PathBuf,
    /// The package's library, if it has one.
    pub(crate) lib: Option<Library>,
    description: Option<String>,
    keywords: Vec<String>,
    categories: Vec<String>,
    readme: Option<String>,
    license: Option<String>,
    rust_version: Option<String>,
    documentation: Option<String>,
    repository: Option<String>,
    /// Requirements this package states on other packages of the workspace: (name, req).
    internal: Vec<(String, String)>,
}

/// A package's library: its source root and its name in code (`mcp_types` for
/// `keel-mcp-types`).
#[derive(Debug, Clone)]
pub(crate) struct Library {
    pub(crate) root: PathBuf,
    pub(crate) name: String,
}

/// The workspace as a release sees it: its published packages and the names of the others.
pub(crate) struct Workspace {
    pub(crate) published: Vec<Package>,
    unpublished: Vec<String>,
}

/// Reads the workspace once (`cargo metadata`): the published packages (every one not
/// `publish = false`) and the names of the unpublished ones.
pub(crate) fn workspace() -> Result<Workspace, String> {
    let metadata = metadata()?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let mut unpublished = Vec::new();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let mut out = Vec::new();
    for p in &packages {
        if p["publish"].as_array().is_some_and(Vec::is_empty) {
            unpublished.extend(p["name"].as_str().map(str::to_owned));
            continue;
        }
        let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or_default());
        let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
        let lib = p["targets"].as_array().into_iter().flatten().find_map(|t| {
            let kinds = strings(&t["kind"]);
            kinds
                .iter()
                .any(|k| k == "lib" || k == "proc-macro")
                .then(|| Library {
                    root: PathBuf::from(t["src_path"].as_str().unwrap_or_default()),
                    name: t["name"].as_str().unwrap_or_default().to_owned(),
                })
        });
        let internal = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["path"].is_string() && d["kind"].as_str() != Some("dev"))
            .map(|d| {
                (
                    d["name"].as_str().unwrap_or_default().to_owned(),
                    d["req"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        out.push(Package {
            name: p["name"].as_str().unwrap_or_default().to_owned(),
            version: p["version"].as_str().unwrap_or_default().to_owned(),
            dir,
            lib,
            description: text(&p["description"]),
            keywords: strings(&p["keywords"]),
            categories: strings(&p["categories"]),
            readme: text(&p["readme"]),
            license: text(&p["license"]),
            rust_version: text(&p["rust_version"]),
            documentation: text(&p["documentation"]),
            repository: text(&p["repository"]),
            internal,
        });
    }
    if out.is_empty() {
        return Err("no published package in the workspace".into());
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Workspace {
        published: out,
        unpublished,
    })
}

/// Every check of a release, in order, the cheap ones first.
fn checks(mode: Mode) -> Result<Workspace, String> {
    let workspace = workspace()?;
    let packages = &workspace.published;
    let root = workspace_root();
    let changelog = read(&root.join("CHANGELOG.md"))?;
    let mut readmes = vec![("README.md".to_owned(), read(&root.join("README.md"))?)];
    let mut docs = Vec::new();
    for p in packages {
        if let Some(readme) = &p.readme {
            let path = p.dir.join(readme);
            readmes.push((relative(&path), read(&path)?));
        }
        if let Some(lib) = &p.lib {
            docs.push((p.name.clone(), read(&lib.root)?));
        }
    }
    let today = today()?;
    let mut problems = Vec::new();
    problems.extend(versions(packages));
    if let Some(version) = packages.first().map(|p| p.version.as_str()) {
        problems.extend(changelog_problems(&changelog, version, mode, &today));
        problems.extend(readme_problems(packages, &readmes, version));
    }
    problems.extend(packages.iter().flat_map(manifest_problems));
    problems.extend(
        docs.iter()
            .filter_map(|(name, source)| example_problem(name, source)),
    );
    if !problems.is_empty() {
        return Err(format!(
            "release: {} problem(s):\n  - {}",
            problems.len(),
            problems.join("\n  - ")
        ));
    }
    println!(
        "release: {} packages at {} agree with CHANGELOG.md and their READMEs",
        packages.len(),
        packages[0].version
    );
    crate::docs::docs(&[])?;
    package(&workspace, mode)?;
    crate::semver::check(packages)?;
    println!(
        "release: {} ready ({}): {}",
        packages[0].version,
        match mode {
            Mode::DryRun => "dry run, nothing published",
            Mode::Publish => "publishing next",
        },
        packages
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(workspace)
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("could not read {}: {e}", path.display()))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Packages and verifies every published package in dependency order. A dry run packages
/// the working tree as it is; publishing refuses uncommitted changes.
fn package(workspace: &Workspace, mode: Mode) -> Result<(), String> {
    forget_local_packages(&workspace.published)?;
    let mut command = cargo();
    command.args(["package", "--workspace", "--locked"]);
    if mode == Mode::DryRun {
        command.arg("--allow-dirty");
    }
    for name in &workspace.unpublished {
        command.args(["--exclude", name]);
    }
    run(&mut command)?;
    println!(
        "release: {} packages packaged and each built from its .crate",
        workspace.published.len()
    );
    Ok(())
}

/// Removes what cargo unpacked of our packages from an earlier run's local registry.
///
/// `cargo package --workspace` resolves a package's dependencies on its siblings from a local
/// registry of the `.crate` files it just made, and unpacks them under
/// `$CARGO_HOME/registry/src/-<hash>/<name>-<version>`. It unpacks a version only once: a
/// second dry run with changed sources at the same version would build the dependents against
/// the first run's copy (seen here: a new API missing from a stale `keel-mcp-state-seal`).
/// Only those local registries (their folder names start with `-`) are touched, never a
/// download from crates.io.
fn forget_local_packages(packages: &[Package]) -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let Ok(registries) = fs::read_dir(home.join("registry").join("src")) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for p in packages {
            let unpacked = registry.path().join(format!("{}-{}", p.name, p.version));
            if unpacked.exists() {
                fs::remove_dir_all(&unpacked)
                    .map_err(|e| format!("could not remove {}: {e}", unpacked.display()))?;
            }
        }
    }
    Ok(())
}

fn publish(workspace: &Workspace) -> Result<(), String> {
    let version = &workspace.published[0].version;
    let mut command = cargo();
    command.args(["publish", "--workspace", "--locked"]);
    for name in &workspace.unpublished {
        command.args(["--exclude", name]);
    }
    run(&mut command)?;
    run(Command::new("git")
        .current_dir(workspace_root())
        .args(["tag", "--annotate", &format!("v{version}"), "--message"])
        .arg(format!("Release {version}")))?;
    println!("release: {version} published and tagged v{version}; push the tag");
    Ok(())
}

/// One version for every published package, and every dependency between them asking for it.
fn versions(packages: &[Package]) -> Vec<String> {
    let Some(first) = packages.first() else {
        return Vec::new();
    };
    let mut problems: Vec<String> = packages
        .iter()
        .filter(|p| p.version != first.version)
        .map(|p| {
            format!(
                "{} is at {} but {} is at {}: published packages share one version",
                p.name, p.version, first.name, first.version
            )
        })
        .collect();
    for p in packages {
        for (dep, req) in &p.internal {
            let wanted = format!("^{}", first.version);
            if packages.iter().any(|q| &q.name == dep) && *req != wanted {
                problems.push(format!(
                    "{} asks for {dep} {req}, not {wanted} (the workspace dependency's version)",
                    p.name
                ));
            }
        }
    }
    problems
}

/// CHANGELOG.md's newest version heading (`## [X.Y.Z] - DATE`) names `version`, with a date
/// (today's, to publish) or `Unreleased` (a dry run).
fn changelog_problems(changelog: &str, version: &str, mode: Mode, today: &str) -> Vec<String> {
    let newest = changelog.lines().find_map(|line| {
        let rest = line.strip_prefix("## [")?;
        let (name, after) = rest.split_once(']')?;
        (name != "Unreleased").then(|| {
            (
                name.to_owned(),
                after.trim_start_matches([' ', '-']).trim().to_owned(),
            )
        })
    });
    let Some((name, date)) = newest else {
        return vec![format!(
            "CHANGELOG.md has no version heading (`## [{version}] - {today}`)"
        )];
    };
    if name != version {
        return vec![format!(
            "CHANGELOG.md's newest version is {name}, the packages' is {version}: add \
             `## [{version}] - Unreleased` above it with what changed"
        )];
    }
    match mode {
        Mode::DryRun if date == "Unreleased" || is_date(&date) => Vec::new(),
        Mode::Publish if date == today => Vec::new(),
        Mode::DryRun => vec![format!(
            "CHANGELOG.md's heading for {version} says {date:?}: a date (YYYY-MM-DD) or Unreleased"
        )],
        Mode::Publish => vec![format!(
            "CHANGELOG.md's heading for {version} says {date:?}: date it {today} to publish"
        )],
    }
}

fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// Each crate's README starts from `cargo add <package>`, and a version any README writes for
/// one of our packages is the current one.
fn readme_problems(
    packages: &[Package],
    readmes: &[(String, String)],
    version: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    for p in packages {
        let Some(readme) = &p.readme else { continue };
        let path = relative(&p.dir.join(readme));
        let Some((_, text)) = readmes.iter().find(|(name, _)| *name == path) else {
            continue;
        };
        let head: String = text.lines().take(8).collect::<Vec<_>>().join("\n");
        let adds = head.contains(&format!("cargo add {}", p.name));
        let installs = head.contains(&format!("cargo install {}", p.name));
        if !adds && !installs {
            problems.push(format!(
                "{path} does not say `cargo add {}` (or `cargo install` for a command) in its \
                 first lines",
                p.name
            ));
        }
    }
    for (path, text) in readmes {
        for (line_number, line) in text.lines().enumerate() {
            for (package, req) in stated_versions(line, packages) {
                if !req_matches(&req, version) {
                    problems.push(format!(
                        "{path}:{}: {package} version \"{req}\", the packages are at {version}",
                        line_number + 1
                    ));
                }
            }
        }
    }
    problems
}

/// The versions a line of a README gives our packages: `keel-x = "V"`,
/// `keel-x = { version = "V" … }` and `{ package = "keel-x", version = "V" … }`.
fn stated_versions(line: &str, packages: &[Package]) -> Vec<(String, String)> {
    let quoted_after = |text: &str, key: &str| -> Option<String> {
        let at = text.find(key)? + key.len();
        let rest = text[at..].trim_start().strip_prefix('=')?.trim_start();
        let rest = rest.strip_prefix('"')?;
        Some(rest[..rest.find('"')?].to_owned())
    };
    let mut out = Vec::new();
    for p in packages {
        let named_as_key = line.trim_start().starts_with(&format!("{} ", p.name))
            || line.trim_start().starts_with(&format!("{}=", p.name));
        let named_as_package = line.contains(&format!("package = \"{}\"", p.name));
        if !named_as_key && !named_as_package {
            continue;
        }
        let req = if named_as_key {
            quoted_after(line, &p.name).or_else(|| quoted_after(line, "version"))
        } else {
            quoted_after(line, "version")
        };
        if let Some(req) = req {
            out.push((p.name.clone(), req));
        }
    }
    out
}

/// Whether a README's requirement (`0.2`, `0.2.0`, `^0.2`, `=0.2.0`) selects `version`.
fn req_matches(req: &str, version: &str) -> bool {
    let exact = req.starts_with('=');
    let req = req.trim_start_matches(['^', '=', '~']);
    let want: Vec<&str> = req.split('.').collect();
    let have: Vec<&str> = version.split('.').collect();
    if exact {
        return req == version;
    }
    // Caret semantics: the leftmost non-zero part and everything before it must be equal, and
    // the rest given must not be above the version's.
    let significant = have
        .iter()
        .position(|part| *part != "0")
        .unwrap_or(have.len() - 1);
    want.iter().enumerate().all(|(i, part)| match have.get(i) {
        Some(h) if i <= significant => part == h,
        Some(h) => part.parse::<u64>().ok() <= h.parse::<u64>().ok(),
        None => false,
    })
}

/// What crates.io and docs.rs show of a package, each present and true.
fn manifest_problems(p: &Package) -> Vec<String> {
    let mut problems = Vec::new();
    let name = &p.name;
    let mut missing = |field: &str, absent: bool| {
        if absent {
            problems.push(format!("{name}: `{field}` is not set"));
        }
    };
    missing(
        "description",
        p.description.as_deref().is_none_or(str::is_empty),
    );
    missing("keywords", p.keywords.is_empty());
    missing("categories", p.categories.is_empty());
    missing("readme", p.readme.is_none());
    missing("license", p.license.is_none());
    missing("rust-version", p.rust_version.is_none());
    missing("documentation", p.documentation.is_none());
    if p.keywords.len() > 5 {
        problems.push(format!(
            "{name}: crates.io takes at most 5 keywords, not {}",
            p.keywords.len()
        ));
    }
    if let Some(docs) = &p.documentation
        && *docs != format!("https://docs.rs/{name}")
    {
        problems.push(format!(
            "{name}: documentation is {docs}, not https://docs.rs/{name}"
        ));
    }
    if let Some(url) = &p.repository
        && (url.contains("example.") || url.contains("invalid") || url.contains("localhost"))
    {
        problems.push(format!(
            "{name}: repository {url} is a placeholder: name the real home or leave it out"
        ));
    }
    problems
}

/// A published library's crate documentation (the `//!` lines of its root) shows code: a
/// fenced block that is not text, TOML or a shell session.
fn example_problem(name: &str, source: &str) -> Option<String> {
    let mut in_block = false;
    let mut examples = 0;
    for line in source
        .lines()
        .map(str::trim_start)
        .take_while(|l| l.starts_with("//!") || l.starts_with("#![") || l.is_empty())
        .filter_map(|l| l.strip_prefix("//!"))
    {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        if !in_block && !matches!(info.trim(), "text" | "toml" | "sh" | "console") {
            examples += 1;
        }
        in_block = !in_block;
    }
    (examples == 0)
        .then(|| format!("{name}: the crate documentation (//! in its lib.rs) shows no example"))
}

/// Today's date, `YYYY-MM-DD`, in UTC.
fn today() -> Result<String, String> {
    let output = Command::new("date")
        .args(["-u", "+%F"])
        .output()
        .map_err(|e| format!("could not run date: {e}"))?;
    let today = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if is_date(&today) {
        Ok(today)
    } else {
        Err(format!("date -u +%F printed {today:?}, not a date"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str, version: &str) -> Package {
        Package {
            name: name.into(),
            version: version.into(),
            dir: workspace_root().join("crates").join(name),
            lib: None,
            description: Some("d".into()),
            keywords: vec!["mcp".into()],
            categories: vec!["network-programming".into()],
            readme: Some("README.md".into()),
            license: Some("MIT".into()),
            rust_version: Some("1.88".into()),
            documentation: Some(format!("https://docs.rs/{name}")),
            repository: None,
            internal: Vec::new(),
        }
    }

    #[test]
    fn a_package_at_another_version_is_named() {
        let packages = [package("keel-a", "0.2.0"), package("keel-b", "0.3.0")];
        assert_eq!(
            versions(&packages),
            ["keel-b is at 0.3.0 but keel-a is at 0.2.0: published packages share one version"]
        );
    }

    #[test]
    fn a_dependency_on_an_old_version_is_named() {
        let mut b = package("keel-b", "0.2.0");
        b.internal.push(("keel-a".into(), "^0.1.0".into()));
        assert_eq!(
            versions(&[package("keel-a", "0.2.0"), b]),
            ["keel-b asks for keel-a ^0.1.0, not ^0.2.0 (the workspace dependency's version)"]
        );
    }

    #[test]
    fn the_changelog_heading_must_name_the_version() {
        let log = "# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-11-30\n";
        assert_eq!(
            changelog_problems(log, "0.2.0", Mode::DryRun, "2026-12-03"),
            [
                "CHANGELOG.md's newest version is 0.1.0, the packages' is 0.2.0: add \
              `## [0.2.0] - Unreleased` above it with what changed"
            ]
        );
        let log = "## [0.2.0] - Unreleased\n\n## [0.1.0] - 2026-11-30\n";
        assert!(changelog_problems(log, "0.2.0", Mode::DryRun, "2026-12-03").is_empty());
        assert_eq!(
            changelog_problems(log, "0.2.0", Mode::Publish, "2026-12-03"),
            ["CHANGELOG.md's heading for 0.2.0 says \"Unreleased\": date it 2026-12-03 to publish"]
        );
        let log = "## [0.2.0] - 2026-12-03\n";
        assert!(changelog_problems(log, "0.2.0", Mode::Publish, "2026-12-03").is_empty());
        assert_eq!(
            changelog_problems("# Changelog\n", "0.2.0", Mode::DryRun, "2026-12-03"),
            ["CHANGELOG.md has no version heading (`## [0.2.0] - 2026-12-03`)"]
        );
    }

    #[test]
    fn readme_versions_are_read_in_each_toml_spelling() {
        let packages = [package("keel-mcp", "0.2.0")];
        let lines = [
            ("keel-mcp = \"0.1\"", "0.1"),
            (
                "keel-mcp = { version = \"0.2\", features = [\"client\"] }",
                "0.2",
            ),
            (
                "mcp = { package = \"keel-mcp\", version = \"0.2.0\" }",
                "0.2.0",
            ),
        ];
        for (line, want) in lines {
            assert_eq!(
                stated_versions(line, &packages),
                [("keel-mcp".to_owned(), want.to_owned())],
                "{line}"
            );
        }
        assert!(stated_versions("keel-mcp-types = \"0.1\"", &packages).is_empty());
        assert!(stated_versions("cargo add keel-mcp", &packages).is_empty());
    }

    #[test]
    fn requirements_match_as_cargo_reads_them() {
        for (req, version, ok) in [
            ("0.2", "0.2.0", true),
            ("0.2.0", "0.2.0", true),
            ("^0.2", "0.2.3", true),
            ("0.2.1", "0.2.3", true),
            ("0.1", "0.2.0", false),
            ("0.2.4", "0.2.3", false),
            ("=0.2.0", "0.2.0", true),
            ("=0.2", "0.2.0", false),
            ("1", "1.4.0", true),
            ("1.5", "1.4.0", false),
            ("2", "1.4.0", false),
        ] {
            assert_eq!(req_matches(req, version), ok, "{req} for {version}");
        }
    }

    #[test]
    fn a_readme_with_an_old_version_or_without_cargo_add_is_named() {
        let packages = [package("keel-mcp", "0.2.0")];
        let readmes = [
            (
                "crates/keel-mcp/README.md".to_owned(),
                "# mcp\n\nSee below.\n".to_owned(),
            ),
            (
                "README.md".to_owned(),
                "```toml\nmcp = { package = \"keel-mcp\", version = \"0.1\" }\n```\n".to_owned(),
            ),
        ];
        assert_eq!(
            readme_problems(&packages, &readmes, "0.2.0"),
            [
                "crates/keel-mcp/README.md does not say `cargo add keel-mcp` (or `cargo install` \
                 for a command) in its first lines",
                "README.md:2: keel-mcp version \"0.1\", the packages are at 0.2.0",
            ]
        );
    }

    #[test]
    fn a_placeholder_repository_and_missing_fields_are_named() {
        let mut p = package("keel-a", "0.2.0");
        p.repository = Some("https://example.invalid/mcp-rs".into());
        p.keywords.clear();
        assert_eq!(
            manifest_problems(&p),
            [
                "keel-a: `keywords` is not set",
                "keel-a: repository https://example.invalid/mcp-rs is a placeholder: name the \
                 real home or leave it out",
            ]
        );
    }

    #[test]
    fn crate_docs_without_code_are_named() {
        assert_eq!(
            example_problem(
                "keel-a",
                "//! Words only.\n//!\n//! ```text\n//! a\n//! ```\nmod x;\n"
            ),
            Some("keel-a: the crate documentation (//! in its lib.rs) shows no example".into())
        );
        assert_eq!(
            example_problem("keel-a", "//! Code:\n//! ```\n//! let x = 1;\n//! ```\n"),
            None
        );
        assert_eq!(
            example_problem("keel-a", "//! ```rust,no_run\n//! f();\n//! ```\n"),
            None
        );
    }

    #[test]
    fn dates_are_year_month_day() {
        assert!(is_date("2026-12-03"));
        assert!(is_date(&today().unwrap()));
        assert!(!is_date("Unreleased"));
        assert!(!is_date("2026-12-3"));
    }
}
