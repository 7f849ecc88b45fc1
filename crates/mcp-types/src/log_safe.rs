//! Text from a peer, made safe to write into a line-oriented log.
//!
//! A JSON-RPC id or method is whatever the peer sent. Written raw into a text log, a newline
//! in it starts a line that looks like the log's own (a forged audit record), and an escape
//! sequence reaches the terminal of whoever tails the log. [`LogSafe`] writes the text quoted,
//! with every control character and every invisible or direction-changing one escaped, and
//! cut after [`LogSafe::MAX_CHARS`] characters with the length it had.

use core::fmt;

use crate::jsonrpc::RequestId;

/// Displays a peer's text quoted, escaped and bounded (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub struct LogSafe<'a>(pub &'a str);

impl LogSafe<'_> {
    /// The characters written before the text is cut.
    pub const MAX_CHARS: usize = 128;
}

/// Characters that change how the rest of a line reads without showing themselves: zero-width
/// ones, direction marks, embeddings, overrides and isolates, the byte-order mark.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}'
    )
}

impl fmt::Display for LogSafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        f.write_char('"')?;
        for (written, c) in self.0.chars().enumerate() {
            if written == Self::MAX_CHARS {
                return write!(f, "…\" ({} bytes)", self.0.len());
            }
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if c.is_control() || invisible(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

/// Displays a request id for a log: a number as it is, a string as [`LogSafe`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct LogSafeId<'a>(pub &'a RequestId);

impl fmt::Display for LogSafeId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => fmt::Display::fmt(&LogSafe(s), f),
        }
    }
}

impl RequestId {
    /// This id as a log line may show it (see [`LogSafeId`]).
    pub fn for_log(&self) -> LogSafeId<'_> {
        LogSafeId(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    fn shown(text: &str) -> String {
        format!("{}", LogSafe(text))
    }

    #[test]
    fn a_forged_line_and_a_terminal_escape_stay_on_one_line_escaped() {
        let evil =
            "1\n2026-12-06T09:00:00Z INFO mcp::audit: audit subject=\"bob\"\n\u{1b}]0;owned\u{7}";
        let out = shown(evil);
        assert_eq!(
            out,
            r#""1\n2026-12-06T09:00:00Z INFO mcp::audit: audit subject=\"bob\"\n\u{1b}]0;owned\u{7}""#
        );
        assert!(!out.contains('\n') && !out.contains('\u{1b}') && !out.contains('\u{7}'));
    }

    #[test]
    fn invisible_and_direction_changing_characters_are_escaped() {
        assert_eq!(
            shown("a\u{202E}b\u{200B}c\u{FEFF}"),
            r#""a\u{202e}b\u{200b}c\u{feff}""#
        );
        assert_eq!(shown("café ✓"), "\"café ✓\"");
    }

    #[test]
    fn long_text_is_cut_with_its_length() {
        let long = "é".repeat(1000);
        let out = shown(&long);
        assert_eq!(
            out,
            format!("\"{}…\" (2000 bytes)", "é".repeat(LogSafe::MAX_CHARS))
        );
        assert_eq!(
            shown(&"x".repeat(LogSafe::MAX_CHARS)),
            format!("\"{}\"", "x".repeat(128))
        );
    }

    #[test]
    fn ids_show_numbers_bare_and_strings_quoted() {
        assert_eq!(RequestId::Number(-7).for_log().to_string(), "-7");
        assert_eq!(RequestId::String("7".into()).for_log().to_string(), "\"7\"");
    }
}
