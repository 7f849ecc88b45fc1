//! The string handling OAuth needs, kept exact: URLs are never normalised (an issuer, an `iss`
//! and a `resource` are compared as the strings the servers sent), form encoding, and the
//! parameters of a `WWW-Authenticate: Bearer` challenge.

/// A URL split into its parts, as written (no case folding, no trailing slash added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawUrl<'a> {
    pub(crate) scheme: &'a str,
    pub(crate) authority: &'a str,
    /// The path, possibly empty; never includes the query or fragment.
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) fragment: Option<&'a str>,
}

impl<'a> RawUrl<'a> {
    /// Splits an absolute `http`/`https` URL.
    pub(crate) fn parse(url: &'a str) -> Option<Self> {
        let (scheme, rest) = url.split_once("://")?;
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return None;
        }
        let (rest, fragment) = match rest.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (rest, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains(['@', ' ']) {
            return None;
        }
        Some(RawUrl {
            scheme,
            authority,
            path,
            query,
            fragment,
        })
    }

    /// `scheme://authority`.
    pub(crate) fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    /// The path without a trailing slash (`""` for the root).
    pub(crate) fn trimmed_path(&self) -> &'a str {
        self.path.trim_end_matches('/')
    }

    /// Scheme and authority compared as a browser would: case-insensitively, with the
    /// scheme's default port made explicit.
    fn same_origin(&self, other: &RawUrl<'_>) -> bool {
        fn normal(url: &RawUrl<'_>) -> (String, String) {
            let scheme = url.scheme.to_ascii_lowercase();
            let mut authority = url.authority.to_ascii_lowercase();
            let has_port = authority
                .rsplit_once(':')
                .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            if !has_port {
                authority.push_str(if scheme == "https" { ":443" } else { ":80" });
            }
            (scheme, authority)
        }
        normal(self) == normal(other)
    }
}

/// Whether the protected resource `resource` (from its metadata) covers the MCP endpoint
/// `server`: same origin, and the server's path lies at or under the resource's path.
pub(crate) fn resource_covers(resource: &str, server: &str) -> bool {
    let (Some(r), Some(s)) = (RawUrl::parse(resource), RawUrl::parse(server)) else {
        return false;
    };
    if r.fragment.is_some() || !r.same_origin(&s) {
        return false;
    }
    let prefix = r.trimmed_path();
    let path = s.trimmed_path();
    prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/"))
}

/// `application/x-www-form-urlencoded` encoding of one component.
pub(crate) fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A form body or query string from pairs.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Decodes one form component (`+` is a space, `%XX` a byte); `None` for bad escapes or
/// invalid UTF-8.
pub(crate) fn form_decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = value.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The decoded `key=value` pairs of a query string or form body.
pub(crate) fn parse_form(text: &str) -> Option<Vec<(String, String)>> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Some((form_decode(k)?, form_decode(v)?))
        })
        .collect()
}

/// The auth-params of a `WWW-Authenticate` value's `Bearer` (or `DPoP`) challenge, in any order, with
/// quoted strings (which may hold commas and escaped quotes) unquoted. Names are lowercased.
pub(crate) fn bearer_params(header: &str) -> Vec<(String, String)> {
    let trimmed = header.trim_start();
    // A DPoP challenge (RFC 9449 §7.1) carries the same auth-params.
    let scheme = ["bearer", "dpop"].into_iter().find(|scheme| {
        trimmed
            .get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
            && trimmed[scheme.len()..].starts_with([' ', '\t'])
    });
    let Some(rest) = scheme.map(|scheme| &trimmed[scheme.len()..]) else {
        return Vec::new();
    };
    let mut params = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() || c == ',' {
                break;
            }
            name.push(c);
            chars.next();
        }
        if name.is_empty() {
            break;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek() != Some(&'=') {
            // A token68 or another scheme's name: nothing we read.
            continue;
        }
        chars.next();
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(escaped) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' || c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        params.push((name.to_ascii_lowercase(), value));
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_their_spelling() {
        let u = RawUrl::parse("http://localhost:3000/tenant1/?a=b#f").unwrap();
        assert_eq!(
            (u.scheme, u.authority, u.path, u.query, u.fragment),
            (
                "http",
                "localhost:3000",
                "/tenant1/",
                Some("a=b"),
                Some("f")
            )
        );
        assert_eq!(u.origin(), "http://localhost:3000");
        assert_eq!(u.trimmed_path(), "/tenant1");
        assert_eq!(RawUrl::parse("http://localhost:3000").unwrap().path, "");
        assert!(RawUrl::parse("ftp://x/").is_none());
        assert!(RawUrl::parse("http://user@evil/").is_none());
        assert!(RawUrl::parse("/relative").is_none());
    }

    #[test]
    fn a_resource_covers_its_own_path_and_below() {
        let server = "http://localhost:3000/mcp";
        assert!(resource_covers("http://localhost:3000/mcp", server));
        assert!(resource_covers("http://localhost:3000", server));
        assert!(resource_covers("http://localhost:3000/", server));
        assert!(resource_covers("HTTP://LOCALHOST:3000/mcp", server));
        assert!(resource_covers(
            "http://example.com/mcp",
            "http://example.com:80/mcp"
        ));
        assert!(!resource_covers("https://evil.example.com/mcp", server));
        assert!(!resource_covers("http://localhost:3001/mcp", server));
        assert!(!resource_covers("http://localhost:3000/mc", server));
        assert!(!resource_covers("http://localhost:3000/mcp/deeper", server));
        assert!(!resource_covers("http://localhost:3000/mcp#x", server));
    }

    #[test]
    fn forms_round_trip() {
        assert_eq!(form_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
        assert_eq!(
            form(&[("scope", "mcp:basic offline_access"), ("x", "")]),
            "scope=mcp%3Abasic+offline_access&x="
        );
        assert_eq!(
            parse_form("code=test-auth-code&state=s%2B1&iss=http%3A%2F%2Flocalhost%3A1").unwrap(),
            [
                ("code".to_owned(), "test-auth-code".to_owned()),
                ("state".to_owned(), "s+1".to_owned()),
                ("iss".to_owned(), "http://localhost:1".to_owned())
            ]
        );
        assert!(parse_form("a=%zz").is_none());
        assert!(parse_form("a=%f").is_none());
    }

    #[test]
    fn bearer_challenges_in_any_order() {
        assert_eq!(
            bearer_params(
                r#"Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="http://h/x", error_description="a, \"quoted\" text""#
            ),
            [
                ("error".to_owned(), "insufficient_scope".to_owned()),
                ("scope".to_owned(), "mcp:admin".to_owned()),
                ("resource_metadata".to_owned(), "http://h/x".to_owned()),
                (
                    "error_description".to_owned(),
                    r#"a, "quoted" text"#.to_owned()
                )
            ]
        );
        assert_eq!(
            bearer_params("bearer realm=example,scope=\"a b\""),
            [
                ("realm".to_owned(), "example".to_owned()),
                ("scope".to_owned(), "a b".to_owned())
            ]
        );
        assert!(bearer_params("Basic realm=x").is_empty());
        assert!(bearer_params("Bearer").is_empty());
        assert_eq!(
            bearer_params("DPoP error=\"use_dpop_nonce\", resource_metadata=\"http://rs/prm\""),
            [
                ("error".to_owned(), "use_dpop_nonce".to_owned()),
                ("resource_metadata".to_owned(), "http://rs/prm".to_owned())
            ]
        );
        assert!(bearer_params("DPoPx realm=x").is_empty());
    }
}
