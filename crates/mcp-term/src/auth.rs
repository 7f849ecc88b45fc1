//! OAuth in a terminal: the authorization page is shown as a browser reads it (its host on a
//! line of its own, opened only with `--open`) and the person pastes the address the browser
//! was sent back to.

use std::io::{BufRead, Write};

use mcp::client::BoxFuture;
use mcp::client::oauth::{Authorizer, OAuthError};

use crate::browser;
use crate::text::sanitize_line;

/// An [`Authorizer`] that asks on the terminal.
pub struct TerminalAuthorizer {
    /// Open the page in the browser.
    pub open: bool,
}

/// Shows `authorization_url` as a browser reads it (its host on a line of its own) and reads
/// the redirect from `input`; the answer must start with `redirect_uri`. With `open`, the
/// address shown is opened once it is on the screen. An address the URL rules refuse
/// (userinfo, plain http off this machine, another scheme) is an error: nobody is asked to
/// sign in there.
pub fn ask_redirect(
    input: &mut impl BufRead,
    output: &mut impl Write,
    authorization_url: &str,
    redirect_uri: &str,
    open: bool,
) -> Result<String, OAuthError> {
    let io = |e: std::io::Error| OAuthError::Authorization(format!("the terminal failed: {e}"));
    let page = browser::parse(authorization_url).map_err(|why| {
        OAuthError::Authorization(format!(
            "mcp-term will not offer the authorization page {}: {why}",
            sanitize_line(authorization_url)
        ))
    })?;
    writeln!(output, "── the server needs you to sign in ──").map_err(io)?;
    writeln!(output, "  open: {}", page.href).map_err(io)?;
    writeln!(output, "  host: {}", page.host).map_err(io)?;
    for w in page.warnings(authorization_url) {
        writeln!(output, "  ! {w}").map_err(io)?;
    }
    if open {
        browser::open(&page);
    }
    loop {
        write!(
            output,
            "  paste the address your browser was sent to ({redirect_uri}…): "
        )
        .map_err(io)?;
        output.flush().map_err(io)?;
        let mut line = String::new();
        if input.read_line(&mut line).map_err(io)? == 0 {
            return Err(OAuthError::Authorization(
                "no redirect address was given".into(),
            ));
        }
        let line = line.trim();
        if line.starts_with(redirect_uri) {
            return Ok(line.to_owned());
        }
        writeln!(
            output,
            "  ! that address does not start with {redirect_uri}; try again"
        )
        .map_err(io)?;
    }
}

impl Authorizer for TerminalAuthorizer {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        let (url, redirect, open) = (
            authorization_url.to_owned(),
            redirect_uri.to_owned(),
            self.open,
        );
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                ask_redirect(
                    &mut std::io::stdin().lock(),
                    &mut std::io::stderr(),
                    &url,
                    &redirect,
                    open,
                )
            })
            .await
            .map_err(|e| OAuthError::Authorization(format!("the prompt stopped: {e}")))?
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_must_come_back_to_the_redirect_uri() {
        let mut out = Vec::new();
        let got = ask_redirect(
            &mut "https://evil.example/cb?code=1\nhttp://127.0.0.1:8976/callback?code=abc&state=s\n".as_bytes(),
            &mut out,
            "https://auth.example.com/authorize?client_id=x",
            "http://127.0.0.1:8976/callback",
            false,
        );
        assert_eq!(
            got,
            Ok("http://127.0.0.1:8976/callback?code=abc&state=s".into())
        );
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.starts_with(
                "── the server needs you to sign in ──\n  open: https://auth.example.com/authorize?client_id=x\n  host: auth.example.com\n  paste"
            ),
            "{out}"
        );
        assert!(
            out.contains("does not start with http://127.0.0.1:8976/callback; try again"),
            "{out}"
        );
        let none = ask_redirect(
            &mut "".as_bytes(),
            &mut Vec::new(),
            "https://a.example/x",
            "http://127.0.0.1/cb",
            false,
        );
        assert!(none.is_err());
    }

    #[test]
    fn an_authorization_page_is_shown_with_the_host_a_browser_opens_or_refused() {
        let mut out = Vec::new();
        // Nothing typed: the page is shown, then the missing redirect is an error.
        let asked = ask_redirect(
            &mut "".as_bytes(),
            &mut out,
            "https://evil.example\\@auth.example.com/authorize",
            "http://127.0.0.1/cb",
            false,
        );
        assert!(asked.is_err(), "{asked:?}");
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(
                "  open: https://evil.example/@auth.example.com/authorize\n  host: evil.example\n"
            ),
            "{out}"
        );
        let mut out = Vec::new();
        let refused = ask_redirect(
            &mut "http://127.0.0.1/cb?code=1\n".as_bytes(),
            &mut out,
            "https://auth.example.com@evil.example/authorize",
            "http://127.0.0.1/cb",
            false,
        );
        assert_eq!(
            refused,
            Err(OAuthError::Authorization(
                "mcp-term will not offer the authorization page https://auth.example.com@evil.example/authorize: it has a user name or password before the host (user@host), a classic disguise".into()
            ))
        );
        assert!(out.is_empty());
    }
}
