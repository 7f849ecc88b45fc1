//! MCP Apps in a terminal: `mcp-term` renders no HTML, so it says that a tool has an app and
//! where, and with `--save-ui DIR` writes the app into `DIR` for a browser. The tool's text
//! result is printed as for any tool.

use std::path::{Path, PathBuf};

use mcp::client::Client;

use crate::text;

/// The longest file name an app is saved under, before `.html`.
const MAX_STEM: usize = 100;

/// A file name for the app at `uri`: `ui://bistro/booking` is `bistro-booking.html`. Anything
/// but ASCII letters, digits, `.`, `_` and `-` becomes `-`, so the name never leaves `DIR`.
pub fn file_name(uri: &str) -> String {
    let rest = uri.strip_prefix("ui://").unwrap_or(uri);
    let stem: String = rest
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(MAX_STEM)
        .collect();
    let stem = stem.trim_matches(|c| c == '-' || c == '.');
    if stem.is_empty() {
        "app.html".to_owned()
    } else {
        format!("{stem}.html")
    }
}

/// Says on stderr that tool `tool` has the app at `uri`; with `dir`, reads the app and writes
/// it there. A failure to read or write is said, and the call goes on.
pub async fn announce(client: &Client, tool: &str, uri: &str, dir: Option<&Path>) {
    let tool = text::sanitize_line(tool);
    let shown = text::sanitize_line(uri);
    let Some(dir) = dir else {
        eprintln!("{tool} has an app: {shown} (--save-ui DIR writes it for a browser)");
        return;
    };
    match save(client, uri, dir).await {
        Ok(path) => eprintln!("{tool} has an app: {shown}, saved as {}", path.display()),
        Err(why) => eprintln!(
            "{tool} has an app: {shown}, not saved: {}",
            text::sanitize_line(&why)
        ),
    }
}

async fn save(client: &Client, uri: &str, dir: &Path) -> Result<PathBuf, String> {
    let app = client.read_app(uri).await.map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(file_name(uri));
    std::fs::write(&path, app.html.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_stay_inside_the_directory() {
        assert_eq!(file_name("ui://bistro/booking"), "bistro-booking.html");
        assert_eq!(
            file_name("ui://a/../../etc/passwd"),
            "a-..-..-etc-passwd.html"
        );
        assert_eq!(file_name("ui://.."), "app.html");
        assert_eq!(file_name("ui://"), "app.html");
        assert_eq!(file_name("ui://dash/v2.html"), "dash-v2.html.html");
        assert_eq!(
            file_name(&format!("ui://{}", "x".repeat(300))).len(),
            MAX_STEM + 5
        );
    }
}
