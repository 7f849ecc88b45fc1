//! A small JSON reader that keeps what Python's `json.loads` keeps and
//! `serde_json::Value` loses: integer lexemes of any size, escaped lone surrogates,
//! duplicate keys (last wins). Used for canonical digests of raw argument text and
//! for reading the sealed claims envelope without copying its strings.

use std::cmp::Ordering;

use crate::error::{JsonSyntaxError, JsonSyntaxErrorKind};
use crate::scan::{backslash_free_len, string_run_len};

/// Deeper documents are refused rather than risking the stack; serde_json, which
/// parses the wire, stops at 128.
const MAX_DEPTH: usize = 256;

/// A parsed JSON value borrowing from its source text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    /// An integer lexeme, exactly as written (`-?(0|[1-9][0-9]*)`).
    Int(&'a str),
    /// A number written with a fraction or an exponent: a Python float.
    Float(f64),
    Str(JsonStr<'a>),
    Array(Vec<Node<'a>>),
    /// Members in document order, duplicates included.
    Object(Vec<(JsonStr<'a>, Node<'a>)>),
}

impl Node<'_> {
    /// Python truthiness, for `arguments or {}`.
    pub(crate) fn is_falsy(&self) -> bool {
        match self {
            Self::Null | Self::Bool(false) => true,
            Self::Bool(true) => false,
            Self::Int(lexeme) => lexeme.trim_start_matches('-') == "0",
            Self::Float(x) => *x == 0.0,
            Self::Str(s) => s.raw.is_empty(),
            Self::Array(items) => items.is_empty(),
            Self::Object(members) => members.is_empty(),
        }
    }
}

/// The body of a JSON string literal (between the quotes), already validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct JsonStr<'a> {
    raw: &'a str,
    escaped: bool,
}

impl<'a> JsonStr<'a> {
    /// The raw body when it holds no escape, i.e. when it is its own value.
    pub(crate) fn as_plain(&self) -> Option<&'a str> {
        (!self.escaped).then_some(self.raw)
    }

    /// The code points of the decoded string; an escaped lone surrogate is
    /// yielded as its own value, the way Python keeps it.
    pub(crate) fn code_points(&self) -> CodePoints<'a> {
        CodePoints { rest: self.raw }
    }

    /// The decoded string, or `None` if it holds a lone surrogate (no Rust `str`
    /// can).
    pub(crate) fn decode(&self) -> Option<String> {
        let raw = self.raw;
        let bytes = raw.as_bytes();
        let mut out = String::with_capacity(raw.len());
        let mut i = 0;
        // Runs between escapes are copied wholesale; a backslash is ASCII, so every
        // index where one sits is a char boundary.
        loop {
            let run = backslash_free_len(&bytes[i..]);
            out.push_str(&raw[i..i + run]);
            i += run;
            if i >= bytes.len() {
                return Some(out);
            }
            let simple = match bytes.get(i + 1) {
                Some(b'"') => Some('"'),
                Some(b'\\') => Some('\\'),
                Some(b'/') => Some('/'),
                Some(b'n') => Some('\n'),
                Some(b'r') => Some('\r'),
                Some(b't') => Some('\t'),
                Some(b'b') => Some('\u{8}'),
                Some(b'f') => Some('\u{c}'),
                _ => None,
            };
            if let Some(c) = simple {
                out.push(c);
                i += 2;
            } else {
                let mut escape = CodePoints { rest: &raw[i..] };
                out.push(char::from_u32(escape.next()?)?);
                i = raw.len() - escape.rest.len();
            }
        }
    }

    /// Whether the decoded string equals `s`.
    pub(crate) fn eq_str(&self, s: &str) -> bool {
        match self.as_plain() {
            Some(plain) => plain == s,
            None => self.code_points().eq(s.chars().map(u32::from)),
        }
    }

    /// Python's `str` ordering: by code point.
    pub(crate) fn cmp_code_points(&self, other: &Self) -> Ordering {
        match (self.as_plain(), other.as_plain()) {
            // UTF-8 byte order is code point order.
            (Some(a), Some(b)) => a.cmp(b),
            _ => self.code_points().cmp(other.code_points()),
        }
    }
}

/// Iterator over the code points of a validated string body.
pub(crate) struct CodePoints<'a> {
    rest: &'a str,
}

impl Iterator for CodePoints<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let c = self.rest.chars().next()?;
        if c != '\\' {
            self.rest = &self.rest[c.len_utf8()..];
            return Some(u32::from(c));
        }
        let bytes = self.rest.as_bytes();
        let simple = match bytes.get(1) {
            Some(b'"') => Some(0x22),
            Some(b'\\') => Some(0x5c),
            Some(b'/') => Some(0x2f),
            Some(b'b') => Some(0x08),
            Some(b'f') => Some(0x0c),
            Some(b'n') => Some(0x0a),
            Some(b'r') => Some(0x0d),
            Some(b't') => Some(0x09),
            _ => None,
        };
        if let Some(cp) = simple {
            self.rest = &self.rest[2..];
            return Some(cp);
        }
        // `\uXXXX`, validated by the parser.
        let unit = hex4(bytes.get(2..6)?)?;
        self.rest = &self.rest[6..];
        if (0xd800..0xdc00).contains(&unit) {
            // Like Python, join a high surrogate with an escaped low one that follows.
            let next = self.rest.as_bytes();
            if next.starts_with(b"\\u")
                && let Some(low) = next.get(2..6).and_then(hex4)
                && (0xdc00..0xe000).contains(&low)
            {
                self.rest = &self.rest[6..];
                return Some(0x1_0000 + ((unit - 0xd800) << 10) + (low - 0xdc00));
            }
        }
        Some(unit)
    }
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        let v = char::from(d).to_digit(16)?;
        Some(acc << 4 | v)
    })
}

/// Parses a whole document: one value, optionally surrounded by whitespace.
pub(crate) fn parse(text: &str) -> Result<Node<'_>, JsonSyntaxError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.error(JsonSyntaxErrorKind::TrailingCharacters));
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, kind: JsonSyntaxErrorKind) -> JsonSyntaxError {
        let kind = if self.pos >= self.bytes.len() && kind == JsonSyntaxErrorKind::Unexpected {
            JsonSyntaxErrorKind::UnexpectedEnd
        } else {
            kind
        };
        JsonSyntaxError::new(self.pos, kind)
    }

    fn unexpected(&self) -> JsonSyntaxError {
        self.error(JsonSyntaxErrorKind::Unexpected)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &[u8], node: Node<'a>) -> Result<Node<'a>, JsonSyntaxError> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(node)
        } else {
            Err(self.unexpected())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node<'a>, JsonSyntaxError> {
        match self.bytes.get(self.pos) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Node::Str),
            Some(b't') => self.literal(b"true", Node::Bool(true)),
            Some(b'f') => self.literal(b"false", Node::Bool(false)),
            Some(b'n') => self.literal(b"null", Node::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected()),
        }
    }

    fn enter(&self, depth: usize) -> Result<(), JsonSyntaxError> {
        if depth > MAX_DEPTH {
            Err(self.error(JsonSyntaxErrorKind::TooDeep))
        } else {
            Ok(())
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node<'a>, JsonSyntaxError> {
        self.enter(depth)?;
        self.pos += 1;
        // Room for a whole claims envelope (nine members) without growing.
        let mut members = Vec::with_capacity(9);
        self.skip_ws();
        if self.eat(b'}') {
            return Ok(Node::Object(members));
        }
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.unexpected());
            }
            let key = self.string()?;
            self.skip_ws();
            if !self.eat(b':') {
                return Err(self.unexpected());
            }
            self.skip_ws();
            let value = self.value(depth)?;
            members.push((key, value));
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(b'}') {
                return Ok(Node::Object(members));
            }
            return Err(self.unexpected());
        }
    }

    fn array(&mut self, depth: usize) -> Result<Node<'a>, JsonSyntaxError> {
        self.enter(depth)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b']') {
            return Ok(Node::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(b']') {
                return Ok(Node::Array(items));
            }
            return Err(self.unexpected());
        }
    }

    /// A string literal starting at the opening quote.
    fn string(&mut self) -> Result<JsonStr<'a>, JsonSyntaxError> {
        self.pos += 1;
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.pos += string_run_len(&self.bytes[self.pos..]);
            match self.bytes.get(self.pos) {
                None => return Err(self.error(JsonSyntaxErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    let raw = &self.text[start..self.pos];
                    self.pos += 1;
                    return Ok(JsonStr { raw, escaped });
                }
                Some(b'\\') => {
                    escaped = true;
                    self.pos += 1;
                    match self.bytes.get(self.pos) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1;
                        }
                        Some(b'u') => {
                            self.pos += 1;
                            let digits = self.bytes.get(self.pos..self.pos + 4);
                            if digits.and_then(hex4).is_none() {
                                return Err(self.unexpected());
                            }
                            self.pos += 4;
                        }
                        _ => return Err(self.unexpected()),
                    }
                }
                // Raw control characters are invalid inside strings (Python's strict mode).
                Some(_) => return Err(self.unexpected()),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Node<'a>, JsonSyntaxError> {
        let start = self.pos;
        self.eat(b'-');
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.unexpected()),
        }
        let mut float = false;
        if self.eat(b'.') {
            float = true;
            if self.digits() == 0 {
                return Err(self.unexpected());
            }
        }
        if self.eat(b'e') || self.eat(b'E') {
            float = true;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return Err(self.unexpected());
            }
        }
        let lexeme = &self.text[start..self.pos];
        if float {
            // Rust's parser rounds correctly, like Python's `float()`; overflow gives
            // infinity in both.
            lexeme
                .parse::<f64>()
                .map(Node::Float)
                .map_err(|_| JsonSyntaxError::new(start, JsonSyntaxErrorKind::Unexpected))
        } else {
            Ok(Node::Int(lexeme))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> JsonStr<'_> {
        match parse(text).unwrap() {
            Node::Str(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn numbers_keep_their_lexemes() {
        assert_eq!(
            parse("100000000000000000000").unwrap(),
            Node::Int("100000000000000000000")
        );
        assert_eq!(parse("-0").unwrap(), Node::Int("-0"));
        assert_eq!(parse("1e2").unwrap(), Node::Float(100.0));
        assert_eq!(parse("1E-7").unwrap(), Node::Float(1e-7));
        assert_eq!(parse(" 2.5 ").unwrap(), Node::Float(2.5));
        assert_eq!(parse("1e400").unwrap(), Node::Float(f64::INFINITY));
    }

    #[test]
    fn invalid_documents_are_refused() {
        for bad in [
            "",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "+1",
            "[1,]",
            "{\"a\":1,}",
            "{a:1}",
            "nul",
            "NaN",
            "Infinity",
            "\"\\x\"",
            "\"\\u12g4\"",
            "\"a\nb\"",
            "\"open",
            "[1] 2",
            "{\"a\" 1}",
            "'a'",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).is_err());
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn escapes_decode_like_python() {
        assert_eq!(s(r#""a\u00e9\/\n""#).decode().as_deref(), Some("aé/\n"));
        assert_eq!(s(r#""\ud83d\ude00""#).decode().as_deref(), Some("😀"));
        assert_eq!(
            s(r#""\ud83d\ude00""#).code_points().collect::<Vec<_>>(),
            [0x1f600]
        );
        // A lone surrogate is kept as itself but cannot become a Rust string.
        assert_eq!(
            s(r#""\ud83dx""#).code_points().collect::<Vec<_>>(),
            [0xd83d, 0x78]
        );
        assert_eq!(s(r#""\ud83dx""#).decode(), None);
        assert!(s(r#""caf\u00e9""#).eq_str("café"));
        assert!(!s(r#""caf\u00e9""#).eq_str("cafe"));
    }

    #[test]
    fn keys_order_by_code_point() {
        // U+FF61 sorts before U+1F600 by code point, although its UTF-16 unit is larger.
        let a = s(r#""\uff61""#);
        let b = s(r#""\ud83d\ude00""#);
        assert_eq!(a.cmp_code_points(&b), Ordering::Less);
        assert_eq!(
            s("\"b\"").cmp_code_points(&s(r#""\u0061""#)),
            Ordering::Greater
        );
    }

    #[test]
    fn falsy_values_are_pythons() {
        for text in [
            "null", "false", "0", "-0", "0.0", "-0e3", "\"\"", "[]", "{}",
        ] {
            assert!(parse(text).unwrap().is_falsy(), "{text}");
        }
        for text in ["true", "1", "0.1", "\"0\"", "[0]", "{\"a\":0}"] {
            assert!(!parse(text).unwrap().is_falsy(), "{text}");
        }
    }
}
