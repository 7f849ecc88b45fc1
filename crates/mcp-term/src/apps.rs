//! MCP Apps in a terminal: `mcp-term` renders no HTML, so it says that a tool has an app and
//! where, and with `--save-ui DIR` writes the app into `DIR` for a browser. The tool's text
//! result is printed as for any tool.

use std::path::{Path, PathBuf};

use mcp::client::Client;
use mcp::types::ext::apps::UiCsp;

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
    let html = with_policy(&app.html, app.meta.csp.as_ref());
    std::fs::write(&path, html.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The app's HTML as it is saved: a Content Security Policy `<meta>` first, at byte 0, then the
/// document untouched. A browser parses a `<meta>` before anything else into the head, so the
/// policy holds whatever the document does (a `<head>` in a comment, a script before it). The
/// app reaches only the origins it declared (`_meta.ui.csp`), and without a sandboxing host it
/// gets no more than that: no other network, no form posts, no plugins (security review X14).
pub fn with_policy(html: &str, csp: Option<&UiCsp>) -> String {
    let policy = policy(csp).replace('&', "&amp;").replace('"', "&quot;");
    format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n{html}")
}

/// The policy for an app that declared `csp`: what the MCP Apps sandbox of the example host
/// gives it, with `form-action 'none'`.
fn policy(csp: Option<&UiCsp>) -> String {
    fn list(domains: Option<&Vec<String>>) -> Vec<&str> {
        domains
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|d| origin_like(d))
            .collect()
    }
    let sources = |domains: Option<&Vec<String>>, none: &str| {
        let list = list(domains);
        if list.is_empty() {
            none.to_owned()
        } else {
            list.join(" ")
        }
    };
    let resources: String = list(csp.and_then(|c| c.resource_domains.as_ref()))
        .iter()
        .map(|d| format!(" {d}"))
        .collect();
    [
        "default-src 'none'".to_owned(),
        format!("script-src 'unsafe-inline'{resources}"),
        format!("style-src 'unsafe-inline'{resources}"),
        format!("img-src data:{resources}"),
        format!(
            "font-src{}",
            if resources.is_empty() {
                " 'none'"
            } else {
                &resources
            }
        ),
        format!("media-src data:{resources}"),
        format!(
            "connect-src {}",
            sources(csp.and_then(|c| c.connect_domains.as_ref()), "'none'")
        ),
        format!(
            "frame-src {}",
            sources(csp.and_then(|c| c.frame_domains.as_ref()), "'none'")
        ),
        "object-src 'none'".to_owned(),
        format!(
            "base-uri {}",
            sources(csp.and_then(|c| c.base_uri_domains.as_ref()), "'none'")
        ),
        "form-action 'none'".to_owned(),
    ]
    .join("; ")
}

/// Whether `domain` reads as one CSP source of an origin (`https://api.example.com`,
/// `https://*.example.com:8443`): a server's list can add origins, never a keyword, another
/// directive or a second source in one entry.
fn origin_like(domain: &str) -> bool {
    let Some((scheme, rest)) = domain.split_once("://") else {
        return false;
    };
    !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*' | ':' | '/' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_app_starts_with_the_policy_it_declared() {
        let html = "<!-- <head> --><script>fetch('https://evil.example/')</script><html><head></head></html>";
        let csp = UiCsp {
            connect_domains: Some(vec![
                "https://api.example.com".into(),
                "https://x.example; script-src *".into(),
                "'unsafe-eval'".into(),
            ]),
            resource_domains: Some(vec!["https://cdn.example.com".into()]),
            ..UiCsp::default()
        };
        let saved = with_policy(html, Some(&csp));
        assert_eq!(
            saved,
            format!(
                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
                 script-src 'unsafe-inline' https://cdn.example.com; \
                 style-src 'unsafe-inline' https://cdn.example.com; \
                 img-src data: https://cdn.example.com; font-src https://cdn.example.com; \
                 media-src data: https://cdn.example.com; connect-src https://api.example.com; \
                 frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'\">\n{html}"
            )
        );
        // Nothing declared: no network at all.
        let bare = with_policy("<p>hi</p>", None);
        assert!(bare.starts_with(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        ));
        assert!(
            bare.contains("connect-src 'none'; frame-src 'none'"),
            "{bare}"
        );
        assert!(bare.ends_with("form-action 'none'\">\n<p>hi</p>"), "{bare}");
    }

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
