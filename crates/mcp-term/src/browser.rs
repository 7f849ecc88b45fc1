//! What a browser would open. A server's URL is parsed as a browser parses it (WHATWG URL
//! rules, the `url` crate): the consent screen shows that parse's host and its serialization,
//! and only that serialization is ever handed to the opener. Userinfo, schemes other than
//! https and plain http off this machine are refused.

use std::process::{Command, Stdio};

use url::{Host, Position, Url};

/// A URL as a browser reads it, accepted for consent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserUrl {
    /// The WHATWG serialization: the text shown and the only text opened. It is ASCII with no
    /// control characters (a browser's parser percent-encodes them, and writes an
    /// internationalised host in punycode).
    pub href: String,
    /// The host the browser contacts, as serialized (`bank.example`, `xn--…`, `[::1]`).
    pub host: String,
    /// Byte range of the host in `href`.
    pub host_range: (usize, usize),
}

/// Why a URL is not offered to a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A browser could not parse it at all.
    NotAUrl(String),
    /// Not https or http.
    Scheme(String),
    /// `http:` to a host other than this machine.
    PlainHttp(String),
    /// `user:password@` before the host.
    Userinfo,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotAUrl(why) => write!(f, "a browser cannot read it as a URL ({why})"),
            Refused::Scheme(scheme) => write!(
                f,
                "its scheme is {scheme}:, and only https (or http to this machine) is opened"
            ),
            Refused::PlainHttp(host) => write!(
                f,
                "it is plain http to {host}, which anyone on the network can read or change; only https (or http to this machine) is opened"
            ),
            Refused::Userinfo => f.write_str(
                "it has a user name or password before the host (user@host), a classic disguise",
            ),
        }
    }
}

/// Parses `raw` as a browser would and applies the consent rules: https, or http to a
/// loopback host (`localhost`, `127.0.0.0/8`, `[::1]`); no userinfo.
pub fn parse(raw: &str) -> Result<BrowserUrl, Refused> {
    let url = Url::parse(raw).map_err(|e| Refused::NotAUrl(e.to_string()))?;
    match url.scheme() {
        "https" => {}
        "http" if url.host().is_some_and(|h| is_loopback(&h)) => {}
        "http" => {
            return Err(Refused::PlainHttp(
                url.host_str().unwrap_or_default().to_owned(),
            ));
        }
        other => return Err(Refused::Scheme(other.to_owned())),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused::Userinfo);
    }
    let host = url.host_str().unwrap_or_default().to_owned();
    let start = url[..Position::BeforeHost].len();
    let end = url[..Position::AfterHost].len();
    Ok(BrowserUrl {
        href: url.as_str().to_owned(),
        host,
        host_range: (start, end),
    })
}

fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

impl BrowserUrl {
    /// What a person should notice before saying yes. `raw` is the server's text.
    pub fn warnings(&self, raw: &str) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.href.starts_with("http:") {
            warnings.push(format!(
                "plain http ({}): not encrypted, but it stays on this machine",
                self.host
            ));
        }
        if self.host.split('.').any(|label| label.starts_with("xn--")) {
            warnings.push(format!(
                "the host {} is an internationalised (punycode) name: check it is the site you expect",
                self.host
            ));
        }
        // A browser rewrites some spellings (`\` for `/`, percent-encoded or full-width host
        // characters, case): show the server's own text too, so a difference is seen.
        let raw = raw.trim();
        let same = raw == self.href
            || (self.href.ends_with('/') && raw == &self.href[..self.href.len() - 1]);
        if !same {
            warnings.push(format!(
                "the server wrote it as {}; a browser reads that as the address above",
                crate::text::sanitize_line(raw)
            ));
        }
        warnings
    }
}

/// The desktop's opener with `url` as its only argument. `url.href` begins with `https://` or
/// `http://`, so it cannot be read as an option; no `--` is passed, because xdg-open refuses
/// it (`unexpected option '--'`) and macOS's `open` does not document it.
pub fn opener(url: &BrowserUrl) -> Command {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let mut command = Command::new(program);
    command
        .arg(&url.href)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Opens `url` in the browser, saying on stderr what happened.
pub fn open(url: &BrowserUrl) {
    let mut command = opener(url);
    match command.spawn() {
        Ok(_) => eprintln!("  opened {} in your browser", url.href),
        Err(e) => eprintln!(
            "  could not run {} ({e}); open this URL yourself: {}",
            command.get_program().to_string_lossy(),
            url.href
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(raw: &str) -> String {
        parse(raw).unwrap().host
    }

    #[test]
    fn a_backslash_ends_the_authority_as_in_a_browser() {
        let url = parse("https://evil.example\\@bank.example/login").unwrap();
        assert_eq!(url.host, "evil.example");
        assert_eq!(url.href, "https://evil.example/@bank.example/login");
        assert_eq!(
            &url.href[url.host_range.0..url.host_range.1],
            "evil.example"
        );
        assert_eq!(
            url.warnings("https://evil.example\\@bank.example/login"),
            [
                "the server wrote it as https://evil.example\\@bank.example/login; a browser reads that as the address above"
            ]
        );
        // The same trick with other separators a browser treats as the end of the host.
        assert_eq!(host("https://evil.example\\\\bank.example"), "evil.example");
        assert_eq!(host("https://evil.example?@bank.example/"), "evil.example");
        assert_eq!(host("https://evil.example#@bank.example/"), "evil.example");
    }

    #[test]
    fn hosts_are_read_as_a_browser_reads_them() {
        // Percent-encoded, full-width and upper-case hosts, tabs and newlines a browser drops.
        assert_eq!(host("https://ev%69l.example/"), "evil.example");
        assert_eq!(host("https://evil\u{ff0e}example/"), "evil.example");
        assert_eq!(host("HTTPS://EVIL.Example:443/x"), "evil.example");
        assert_eq!(host("https://ev\til\n.example/"), "evil.example");
        assert_eq!(host("  https://evil.example/  "), "evil.example");
        // Numeric IPv4 forms.
        assert_eq!(host("https://0x7f.1/"), "127.0.0.1");
        // An internationalised name is shown in punycode, with a warning.
        let url = parse("https://pаypal.example/").unwrap();
        assert_eq!(url.host, "xn--pypal-4ve.example");
        assert!(
            url.warnings("https://pаypal.example/")[0].contains("punycode"),
            "{:?}",
            url.warnings("")
        );
        assert!(
            parse("https://pay.example.com/deposit/B-1")
                .unwrap()
                .warnings("https://pay.example.com/deposit/B-1")
                .is_empty()
        );
        assert!(
            parse("https://pay.example.com")
                .unwrap()
                .warnings("https://pay.example.com")
                .is_empty()
        );
    }

    #[test]
    fn userinfo_other_schemes_and_plain_http_are_refused() {
        assert_eq!(
            parse("https://bank.example@evil.example/"),
            Err(Refused::Userinfo)
        );
        assert_eq!(
            parse("https://bank.example:pw@evil.example/"),
            Err(Refused::Userinfo)
        );
        assert_eq!(
            parse("http://pay.example/"),
            Err(Refused::PlainHttp("pay.example".into()))
        );
        assert_eq!(
            parse("file:///etc/passwd"),
            Err(Refused::Scheme("file".into()))
        );
        assert_eq!(
            parse("javascript:alert(1)"),
            Err(Refused::Scheme("javascript".into()))
        );
        assert_eq!(
            parse("-a Calculator"),
            Err(Refused::NotAUrl("relative URL without a base".into()))
        );
        assert_eq!(
            Refused::Userinfo.to_string(),
            "it has a user name or password before the host (user@host), a classic disguise"
        );
        // http stays on this machine only.
        for local in [
            "http://localhost:8976/cb",
            "http://127.0.0.1/",
            "http://127.1.2.3/",
            "http://[::1]:80/",
        ] {
            assert!(parse(local).is_ok(), "{local}");
        }
        assert_eq!(
            parse("http://localhost.evil.example/"),
            Err(Refused::PlainHttp("localhost.evil.example".into()))
        );
    }

    #[test]
    fn the_opener_gets_exactly_the_serialization_shown() {
        let url = parse("https://evil.example\\@bank.example/login").unwrap();
        let command = opener(&url);
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(args, ["https://evil.example/@bank.example/login"]);
        assert!(!url.href.starts_with('-'));
    }
}
