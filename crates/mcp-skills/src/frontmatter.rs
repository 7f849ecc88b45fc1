//! The YAML frontmatter of a `SKILL.md`: a strict subset of YAML 1.2, read into a JSON object.

use std::fmt;

use serde_json::{Map, Value};

/// A JSON object, as a frontmatter is read into.
type JsonObject = Map<String, Value>;

/// Why a `SKILL.md` frontmatter could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    /// The 1-based line of the file the problem is on (0: the file as a whole).
    pub line: usize,
    /// What is wrong, for a person.
    pub message: String,
}

impl fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "SKILL.md frontmatter: {}", self.message)
        } else {
            write!(
                f,
                "SKILL.md frontmatter, line {}: {}",
                self.line, self.message
            )
        }
    }
}

impl std::error::Error for FrontmatterError {}

fn error(line: usize, message: impl Into<String>) -> FrontmatterError {
    FrontmatterError {
        line,
        message: message.into(),
    }
}

/// How deep mappings may nest in a frontmatter [`parse_frontmatter`] reads (a file from a peer
/// cannot make it recurse without bound).
pub const MAX_FRONTMATTER_DEPTH: usize = 32;

/// The YAML frontmatter at the top of a `SKILL.md`, as a JSON object.
///
/// The file starts (after an optional byte-order mark) with a `---` line and the frontmatter
/// ends at the next `---` line. What is between is read as a strict subset of YAML 1.2 that
/// covers what skill frontmatter uses: block mappings (nested by indentation), block sequences
/// of scalars, plain, single- and double-quoted scalars, `|` and `>` block scalars (with `-`
/// or `+`), comments. Plain scalars are typed as the YAML core schema types them (`null`,
/// `true`, `12`, `1.5` ...). Anything else (flow collections, anchors and aliases, tags,
/// complex keys, tabs in indentation, duplicate keys) is refused with the line it is on rather
/// than read differently from a full YAML parser, as is nesting deeper than
/// [`MAX_FRONTMATTER_DEPTH`].
pub fn parse_frontmatter(text: &str) -> Result<JsonObject, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(error(
            1,
            "a SKILL.md must begin with a `---` line opening its YAML frontmatter",
        ));
    }
    let mut body = Vec::new();
    let mut closed = false;
    for (i, line) in lines.enumerate() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        body.push(Line {
            number: i + 2,
            text: line,
        });
    }
    if !closed {
        return Err(error(0, "no `---` line closes the frontmatter"));
    }
    let mut parser = Parser {
        lines: body,
        at: 0,
        depth: 0,
    };
    parser.skip_blank();
    if parser.at == parser.lines.len() {
        return Ok(JsonObject::new());
    }
    let indent = parser.indent_of(parser.at)?;
    if indent != 0 {
        return Err(error(
            parser.lines[parser.at].number,
            "the frontmatter's top-level keys must not be indented",
        ));
    }
    let map = parser.mapping(0)?;
    parser.skip_blank();
    if let Some(line) = parser.lines.get(parser.at) {
        return Err(error(line.number, "unexpected indentation"));
    }
    Ok(map)
}

#[derive(Clone, Copy)]
struct Line<'a> {
    number: usize,
    text: &'a str,
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
    depth: usize,
}

fn is_blank(text: &str) -> bool {
    let t = text.trim_start_matches(' ');
    t.is_empty() || t.starts_with('#')
}

impl<'a> Parser<'a> {
    fn skip_blank(&mut self) {
        while self.at < self.lines.len() && is_blank(self.lines[self.at].text) {
            self.at += 1;
        }
    }

    fn indent_of(&self, at: usize) -> Result<usize, FrontmatterError> {
        let line = self.lines[at];
        let indent = line.text.len() - line.text.trim_start_matches(' ').len();
        if line.text[indent..].starts_with('\t') {
            return Err(error(line.number, "tabs are not allowed in indentation"));
        }
        Ok(indent)
    }

    /// The next non-blank line's indentation, if any.
    fn peek_indent(&mut self) -> Result<Option<usize>, FrontmatterError> {
        self.skip_blank();
        if self.at == self.lines.len() {
            return Ok(None);
        }
        self.indent_of(self.at).map(Some)
    }

    fn mapping(&mut self, indent: usize) -> Result<JsonObject, FrontmatterError> {
        self.depth += 1;
        if self.depth > MAX_FRONTMATTER_DEPTH {
            let line = self.lines.get(self.at).map_or(0, |l| l.number);
            return Err(error(
                line,
                format!("mappings nest deeper than {MAX_FRONTMATTER_DEPTH} levels"),
            ));
        }
        let map = self.mapping_entries(indent);
        self.depth -= 1;
        map
    }

    fn mapping_entries(&mut self, indent: usize) -> Result<JsonObject, FrontmatterError> {
        let mut map = JsonObject::new();
        while let Some(found) = self.peek_indent()? {
            if found < indent {
                break;
            }
            let line = self.lines[self.at];
            if found > indent {
                return Err(error(line.number, "unexpected indentation"));
            }
            let content = &line.text[indent..];
            if content.starts_with("- ") || content == "-" {
                return Err(error(
                    line.number,
                    "a sequence item where a key was expected",
                ));
            }
            if content.starts_with("? ") || content.starts_with('%') {
                return Err(error(
                    line.number,
                    "complex keys and directives are not supported",
                ));
            }
            let (key, rest) = split_key(content).ok_or_else(|| {
                error(
                    line.number,
                    "expected `key: value` (a plain scalar cannot span lines here)",
                )
            })?;
            let key = scalar_key(key, line.number)?;
            self.at += 1;
            let value = self.value_after_key(rest, indent, line.number)?;
            if map.insert(key.clone(), value).is_some() {
                return Err(error(line.number, format!("duplicate key `{key}`")));
            }
        }
        Ok(map)
    }

    /// The value of a key whose line ends with `rest` (after the `:`).
    fn value_after_key(
        &mut self,
        rest: &str,
        indent: usize,
        number: usize,
    ) -> Result<Value, FrontmatterError> {
        let rest = strip_comment(rest).trim();
        if rest.is_empty() {
            // A nested block, or null.
            match self.peek_indent()? {
                Some(child) if child > indent => {
                    let line = self.lines[self.at];
                    let content = &line.text[child..];
                    if content.starts_with("- ") || content == "-" {
                        self.sequence(child).map(Value::Array)
                    } else {
                        self.mapping(child).map(Value::Object)
                    }
                }
                Some(child) if child == indent => {
                    let line = self.lines[self.at];
                    let content = &line.text[child..];
                    if content.starts_with("- ") || content == "-" {
                        // YAML lets a sequence sit at its key's indentation.
                        self.sequence(child).map(Value::Array)
                    } else {
                        Ok(Value::Null)
                    }
                }
                _ => Ok(Value::Null),
            }
        } else if let Some(header) = rest.strip_prefix('|') {
            self.block_scalar(header, indent, number, true)
        } else if let Some(header) = rest.strip_prefix('>') {
            self.block_scalar(header, indent, number, false)
        } else {
            let first = rest;
            let mut value = self.inline_scalar(first, number)?;
            // A plain scalar may go on over more-indented lines.
            if let Value::String(s) = &mut value
                && plain_start(first)
            {
                while let Some(child) = self.peek_indent()? {
                    if child <= indent {
                        break;
                    }
                    let line = self.lines[self.at];
                    let more = strip_comment(&line.text[child..]).trim();
                    if split_key(more).is_some() {
                        return Err(error(line.number, "a mapping cannot follow a scalar value"));
                    }
                    s.push(' ');
                    s.push_str(more);
                    self.at += 1;
                }
            }
            Ok(value)
        }
    }

    fn sequence(&mut self, indent: usize) -> Result<Vec<Value>, FrontmatterError> {
        let mut items = Vec::new();
        while let Some(found) = self.peek_indent()? {
            if found != indent {
                if found > indent {
                    return Err(error(self.lines[self.at].number, "unexpected indentation"));
                }
                break;
            }
            let line = self.lines[self.at];
            let content = &line.text[indent..];
            let Some(item) = content.strip_prefix('-') else {
                break;
            };
            if !(item.is_empty() || item.starts_with(' ')) {
                break;
            }
            let item = strip_comment(item).trim();
            if split_key(item).is_some() || item.starts_with("- ") {
                return Err(error(
                    line.number,
                    "only scalars are supported as sequence items",
                ));
            }
            self.at += 1;
            if item.is_empty() {
                items.push(Value::Null);
            } else if item.starts_with('|') || item.starts_with('>') {
                return Err(error(
                    line.number,
                    "block scalars are not supported as sequence items",
                ));
            } else {
                items.push(self.inline_scalar(item, line.number)?);
            }
        }
        Ok(items)
    }

    fn block_scalar(
        &mut self,
        header: &str,
        indent: usize,
        number: usize,
        literal: bool,
    ) -> Result<Value, FrontmatterError> {
        let header = strip_comment(header).trim();
        let chomp = match header {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            _ => {
                return Err(error(
                    number,
                    "block scalar indentation indicators are not supported",
                ));
            }
        };
        // The block's lines: every following line more indented than the key, or blank.
        let mut raw: Vec<&str> = Vec::new();
        let mut block_indent = None;
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            let text = line.text;
            if text.trim_start_matches(' ').is_empty() {
                raw.push("");
                self.at += 1;
                continue;
            }
            let own = text.len() - text.trim_start_matches(' ').len();
            if own <= indent {
                break;
            }
            let wanted = *block_indent.get_or_insert(own);
            if own < wanted {
                return Err(error(
                    line.number,
                    "a block scalar line is less indented than its first",
                ));
            }
            raw.push(&text[wanted..]);
            self.at += 1;
        }
        // Trailing blank lines belong to chomping, not to the content.
        let trailing = raw.iter().rev().take_while(|l| l.is_empty()).count();
        let content = &raw[..raw.len() - trailing];
        let mut out = String::new();
        if literal {
            out = content.join("\n");
        } else {
            let mut previous_blank = false;
            for (i, line) in content.iter().enumerate() {
                let more_indented = line.starts_with(' ');
                if i > 0 {
                    if line.is_empty() {
                        out.push('\n');
                    } else if !previous_blank && !more_indented && !content[i - 1].starts_with(' ')
                    {
                        out.push(' ');
                    } else if !previous_blank {
                        out.push('\n');
                    }
                }
                out.push_str(line);
                previous_blank = line.is_empty();
            }
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => {
                if !content.is_empty() {
                    out.push('\n');
                }
            }
            Chomp::Keep => {
                if !content.is_empty() {
                    out.push('\n');
                }
                for _ in 0..trailing {
                    out.push('\n');
                }
            }
        }
        Ok(Value::String(out))
    }

    fn inline_scalar(&self, text: &str, number: usize) -> Result<Value, FrontmatterError> {
        let text = text.trim();
        match text.chars().next() {
            Some('"') => double_quoted(text, number).map(Value::String),
            Some('\'') => single_quoted(text, number).map(Value::String),
            Some('[' | '{') => Err(error(
                number,
                "flow collections (`[...]`, `{...}`) are not supported; use block style",
            )),
            Some('&' | '*') => Err(error(number, "anchors and aliases are not supported")),
            Some('!') => Err(error(number, "tags are not supported")),
            Some('@' | '`') => Err(error(
                number,
                format!(
                    "a plain scalar cannot start with `{}`; quote it",
                    &text[..1]
                ),
            )),
            Some('%') => Err(error(
                number,
                "a plain scalar cannot start with `%`; quote it",
            )),
            _ => {
                if text.contains(": ") || text.ends_with(':') {
                    return Err(error(
                        number,
                        "a plain scalar cannot contain `: `; quote the value",
                    ));
                }
                plain_value(text, number)
            }
        }
    }
}

enum Chomp {
    Strip,
    Clip,
    Keep,
}

fn plain_start(text: &str) -> bool {
    !text.starts_with('"') && !text.starts_with('\'')
}

/// `key: rest` or `key:` at the start of `content` (outside quotes).
fn split_key(content: &str) -> Option<(&str, &str)> {
    let bytes = content.as_bytes();
    let quote = match bytes.first() {
        Some(b'"') | Some(b'\'') => Some(bytes[0]),
        _ => None,
    };
    let start = match quote {
        Some(q) => {
            let mut i = 1;
            loop {
                if i >= bytes.len() {
                    return None;
                }
                if bytes[i] == b'\\' && q == b'"' {
                    i += 2;
                    continue;
                }
                if bytes[i] == q {
                    if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    break i + 1;
                }
                i += 1;
            }
        }
        None => 0,
    };
    let mut i = start;
    while i < bytes.len() {
        if bytes[i] == b'#' && i > 0 && bytes[i - 1] == b' ' {
            return None;
        }
        if bytes[i] == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ') {
            return Some((&content[..i], &content[i + 1..]));
        }
        if quote.is_some() && bytes[i] != b' ' {
            return None;
        }
        i += 1;
    }
    None
}

fn scalar_key(key: &str, number: usize) -> Result<String, FrontmatterError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(error(number, "an empty key"));
    }
    match key.as_bytes()[0] {
        b'"' => double_quoted(key, number),
        b'\'' => single_quoted(key, number),
        b'[' | b'{' | b'&' | b'*' | b'!' | b'|' | b'>' | b'@' | b'`' | b'%' | b'-' => Err(error(
            number,
            format!("the key `{key}` is not a plain scalar; quote it"),
        )),
        _ => Ok(key.to_owned()),
    }
}

/// `text` up to a ` #` comment outside quotes.
fn strip_comment(text: &str) -> &str {
    let bytes = text.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' && q == b'"' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => {
                if (b == b'"' || b == b'\'') && (i == 0 || bytes[i - 1] == b' ') {
                    quote = Some(b);
                } else if b == b'#' && (i == 0 || bytes[i - 1] == b' ') {
                    return &text[..i];
                }
            }
        }
        i += 1;
    }
    text
}

fn single_quoted(text: &str, number: usize) -> Result<String, FrontmatterError> {
    let inner = text
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .filter(|_| text.len() >= 2)
        .ok_or_else(|| error(number, "an unterminated single-quoted scalar"))?;
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' && chars.next() != Some('\'') {
            return Err(error(number, "text after a closing single quote"));
        }
        out.push(c);
    }
    Ok(out)
}

fn double_quoted(text: &str, number: usize) -> Result<String, FrontmatterError> {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|_| text.len() >= 2)
        .ok_or_else(|| error(number, "an unterminated double-quoted scalar"))?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Err(error(number, "text after a closing double quote")),
            '\\' => {
                let escaped = chars
                    .next()
                    .ok_or_else(|| error(number, "a dangling `\\` in a double-quoted scalar"))?;
                out.push(match escaped {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    '"' => '"',
                    '\\' => '\\',
                    '/' => '/',
                    ' ' => ' ',
                    'u' | 'x' | 'U' => {
                        let len = match escaped {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String = chars.by_ref().take(len).collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == len)
                            .and_then(char::from_u32)
                            .ok_or_else(|| error(number, format!("a bad `\\{escaped}` escape")))?
                    }
                    other => {
                        return Err(error(
                            number,
                            format!("the escape `\\{other}` is not supported"),
                        ));
                    }
                });
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// A plain scalar, typed by the YAML 1.2 core schema.
fn plain_value(text: &str, number: usize) -> Result<Value, FrontmatterError> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let lower = text.to_ascii_lowercase();
    if matches!(lower.trim_start_matches(['+', '-']), ".inf" | ".nan") {
        return Err(error(
            number,
            "infinity and NaN have no JSON form; quote the value",
        ));
    }
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits(unsigned, 10) {
        return Ok(match text.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| error(number, "a number out of range"))?,
        });
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8)] {
        if let Some(rest) = text.strip_prefix(prefix)
            && digits(rest, radix)
        {
            return i64::from_str_radix(rest, radix)
                .map(Value::from)
                .map_err(|_| error(number, "a number out of range"));
        }
    }
    if is_core_float(unsigned)
        && let Some(n) = text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
    {
        return Ok(Value::Number(n));
    }
    Ok(Value::String(text.to_owned()))
}

/// `[0-9]*(\.[0-9]*)?([eE][-+]?[0-9]+)?` with at least one digit before the exponent.
fn is_core_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let all_digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = all_digits(int)
        && frac.is_none_or(all_digits)
        && (int.len() + frac.map_or(0, str::len)) > 0;
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    mantissa_ok && exponent_ok && (frac.is_some() || exponent.is_some())
}

/// The body of a `SKILL.md`: what follows the frontmatter's closing `---` line.
pub fn skill_body(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end() == "---" {
            return Some(&rest[offset..]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(text: &str) -> Value {
        Value::Object(parse_frontmatter(text).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn frontmatter_scalars_nest_and_type_as_yaml_does() {
        let text = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: 'Apache-2.0'\nversion: 2\nratio: 1.5\nbeta: true\nnothing:\nquoted: \"a \\\"b\\\" \\u00e9\"\nmetadata:\n  author: acme # who\n  tags:\n    - pdf\n    - forms\nallowed-tools: Read Write\n---\nBody\n";
        assert_eq!(
            fm(text),
            json!({
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "version": 2,
                "ratio": 1.5,
                "beta": true,
                "nothing": null,
                "quoted": "a \"b\" é",
                "metadata": {"author": "acme", "tags": ["pdf", "forms"]},
                "allowed-tools": "Read Write",
            })
        );
        assert_eq!(skill_body(text), Some("Body\n"));
    }

    #[test]
    fn block_scalars_fold_and_keep_lines() {
        let text = "---\nname: a\ndescription: >\n  one\n  two\n\n  three\nnotes: |-\n  line 1\n  line 2\nlong: plain\n  continued\n---\n";
        assert_eq!(
            fm(text),
            json!({"name": "a", "description": "one two\nthree\n", "notes": "line 1\nline 2", "long": "plain continued"})
        );
    }

    #[test]
    fn what_the_subset_does_not_cover_is_refused_with_its_line() {
        for (text, line, words) in [
            ("---\nname: [a, b]\n---\n", 2, "flow collections"),
            ("---\nname: &x a\n---\n", 2, "anchors"),
            ("---\nname: a\nname: b\n---\n", 3, "duplicate key `name`"),
            ("---\nname: a: b\n---\n", 2, "cannot contain `: `"),
            ("---\nname: a\n\tx: b\n---\n", 3, "tabs"),
            ("---\n  name: a\n---\n", 2, "must not be indented"),
        ] {
            let e = parse_frontmatter(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(words), "{text:?}: {e}");
        }
        assert_eq!(
            parse_frontmatter("name: a\n").unwrap_err().to_string(),
            "SKILL.md frontmatter, line 1: a SKILL.md must begin with a `---` line opening its YAML frontmatter"
        );
        let mut deep = String::from("---\n");
        for level in 0..10_000 {
            deep.push_str(&" ".repeat(level));
            deep.push_str("k:\n");
        }
        deep.push_str("---\n");
        let e = parse_frontmatter(&deep).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (34, "mappings nest deeper than 32 levels")
        );
        assert_eq!(
            parse_frontmatter("---\nname: a\n").unwrap_err().to_string(),
            "SKILL.md frontmatter: no `---` line closes the frontmatter"
        );
    }
}
