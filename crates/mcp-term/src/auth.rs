//! OAuth in a terminal: the authorization page is shown (its host highlighted, opened only
//! with `--open`) and the person pastes the address the browser was sent back to.

use std::io::{BufRead, Write};

use mcp::client::BoxFuture;
use mcp::client::oauth::{Authorizer, OAuthError};

use crate::prompt::{url_parts, url_warnings};
use crate::text::sanitize;

/// An [`Authorizer`] that asks on the terminal.
pub struct TerminalAuthorizer {
    /// Open the page in the browser.
    pub open: bool,
}

/// Shows `authorization_url` and reads the redirect from `input`; the answer must start with
/// `redirect_uri`.
pub fn ask_redirect(
    input: &mut impl BufRead,
    output: &mut impl Write,
    authorization_url: &str,
    redirect_uri: &str,
) -> Result<String, OAuthError> {
    let io = |e: std::io::Error| OAuthError::Authorization(format!("the terminal failed: {e}"));
    let clean = sanitize(authorization_url);
    writeln!(output, "── the server needs you to sign in ──").map_err(io)?;
    writeln!(output, "  open: {clean}").map_err(io)?;
    if let Some(parts) = url_parts(&clean) {
        writeln!(output, "  host: {}", parts.host).map_err(io)?;
    }
    for w in url_warnings(&clean) {
        writeln!(output, "  ! {w}").map_err(io)?;
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
            if open {
                crate::responder::open_browser(&url);
            }
            tokio::task::spawn_blocking(move || {
                ask_redirect(
                    &mut std::io::stdin().lock(),
                    &mut std::io::stderr(),
                    &url,
                    &redirect,
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
            "http://auth.example.com/authorize?client_id=x",
            "http://127.0.0.1:8976/callback",
        );
        assert_eq!(
            got,
            Ok("http://127.0.0.1:8976/callback?code=abc&state=s".into())
        );
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("  host: auth.example.com\n"), "{out}");
        assert!(out.contains("! not https"), "{out}");
        assert!(
            out.contains("does not start with http://127.0.0.1:8976/callback; try again"),
            "{out}"
        );
        let none = ask_redirect(
            &mut "".as_bytes(),
            &mut Vec::new(),
            "https://a.example/x",
            "http://127.0.0.1/cb",
        );
        assert!(none.is_err());
    }
}
