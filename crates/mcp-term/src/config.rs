//! `@name` targets: entries of `mcpServers` (or VS Code's `servers`) config files, with
//! `${VAR}` and `${VAR:-default}` expansion.

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

/// One named entry and the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The name after `@`.
    pub name: String,
    /// The file.
    pub source: PathBuf,
    /// The entry's JSON, before expansion.
    pub raw: Value,
}

/// The files searched for `@name`, in order: `--config`, `./.mcp.json`, `./.vscode/mcp.json`,
/// then the Claude Code, Claude Desktop and VS Code user files.
pub fn candidates(explicit: Option<&Path>, cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(p) = explicit {
        files.push(p.to_owned());
    }
    files.push(cwd.join(".mcp.json"));
    files.push(cwd.join(".vscode").join("mcp.json"));
    if let Some(home) = home {
        files.push(home.join(".claude.json"));
        files.push(home.join(".config/Claude/claude_desktop_config.json"));
        files.push(home.join("Library/Application Support/Claude/claude_desktop_config.json"));
        files.push(home.join(".config/Code/User/mcp.json"));
        files.push(home.join("Library/Application Support/Code/User/mcp.json"));
    }
    files
}

/// Longest config file read (a config is small; a huge one is a mistake).
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// The entries of one file; a file that does not exist has none.
pub fn load(path: &Path) -> Result<Vec<Entry>, String> {
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
            raw: raw.clone(),
        })
        .collect())
}

/// Every entry of every candidate file, in search order (an earlier one shadows later ones).
pub fn all(files: &[PathBuf]) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for f in files {
        entries.extend(load(f)?);
    }
    Ok(entries)
}

/// Finds `name` and expands it.
pub fn resolve(
    name: &str,
    files: &[PathBuf],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Entry, ServerSpec), String> {
    let entries = all(files)?;
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        let hint = crate::args::suggest(name, names.iter().copied())
            .map(|s| format!("; did you mean @{s}?"))
            .unwrap_or_default();
        let searched: Vec<String> = files
            .iter()
            .filter(|f| f.exists())
            .map(|f| f.display().to_string())
            .collect();
        let searched = if searched.is_empty() {
            "any config file (none was found)".to_owned()
        } else {
            searched.join(", ")
        };
        return Err(format!("no server named @{name} in {searched}{hint}"));
    };
    let spec = spec_of(entry, env)?;
    Ok((entry.clone(), spec))
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

/// For `servers`: every entry, its kind, its file, and whether an earlier one shadows it.
pub fn listing(files: &[PathBuf]) -> Result<Vec<BTreeMap<&'static str, Value>>, String> {
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

    #[test]
    fn the_search_order_and_shadowing() {
        let dir = std::env::temp_dir().join(format!("mcp-term-config-{}", std::process::id()));
        let home = dir.join("home");
        std::fs::create_dir_all(home.join(".config/Claude")).unwrap();
        std::fs::write(
            dir.join(".mcp.json"),
            r#"{"mcpServers": {"files": {"command": "a"}}}"#,
        )
        .unwrap();
        std::fs::write(
            home.join(".config/Claude/claude_desktop_config.json"),
            r#"{"mcpServers": {"files": {"command": "b"}, "bistro": {"url": "http://x/mcp"}}}"#,
        )
        .unwrap();
        let files = candidates(None, &dir, Some(&home));
        let (entry, spec) = resolve("files", &files, &env).unwrap();
        assert_eq!(entry.source, dir.join(".mcp.json"));
        assert!(matches!(spec, ServerSpec::Stdio { command, .. } if command == "a"));
        let (_, spec) = resolve("bistro", &files, &env).unwrap();
        assert!(matches!(spec, ServerSpec::Http { .. }));
        let err = resolve("bistr", &files, &env).unwrap_err();
        assert!(err.contains("did you mean @bistro?"), "{err}");
        let listed = listing(&files).unwrap();
        assert_eq!(listed.len(), 3);
        let shadowed: Vec<&Value> = listed
            .iter()
            .filter(|e| e["shadowed"] == json!(true))
            .map(|e| &e["name"])
            .collect();
        assert_eq!(shadowed, [&json!("files")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
