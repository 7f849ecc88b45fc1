//! What reaches the terminal. Text a server (or any file) chose goes through [`sanitize`]
//! before it is printed, and JSON through [`json_line`] or [`json_pretty`], so a hostile
//! server cannot retitle the window, rewrite earlier output, write the clipboard or disguise
//! text with control characters.

use serde_json::Value;

/// Characters a terminal acts on, or that reorder or split text without showing themselves:
/// C0 controls, DEL and C1 controls (`char::is_control`), the bidirectional controls
/// (embeddings, overrides, isolates, marks) and the Unicode line and paragraph separators.
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Removes terminal control characters from text: C0 except newline and tab, DEL, C1, escape
/// sequences whole (CSI, OSC, DCS and the other string sequences, two-character escapes), the
/// bidirectional controls and U+2028/U+2029.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                _ => skip_escape(&mut chars),
            },
            // The C1 forms of CSI and of the string introducers (DCS, SOS, OSC, PM, APC): a
            // terminal that reads them as controls would act on their bodies too.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\n' | '\t' => out.push(c),
            c if is_hidden(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// [`sanitize`] for text shown on one line (an error, a key, a type): newlines and tabs
/// become spaces, so the text cannot start a line that looks like the tool's own.
pub fn sanitize_line(text: &str) -> String {
    sanitize(text).replace(['\n', '\t'], " ")
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// A CSI body: parameter and intermediate bytes, then one final byte. A malformed one ends
/// at the first other character, which stays text.
fn skip_csi(chars: &mut Chars<'_>) {
    while chars
        .next_if(|c| ('\u{20}'..='\u{3f}').contains(c))
        .is_some()
    {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// An OSC, DCS, SOS, PM or APC body: everything up to BEL or the string terminator (ESC \ or
/// C1 ST). An unterminated one runs to the end of the text, as it would on a terminal.
fn skip_string(chars: &mut Chars<'_>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

/// Any other escape: intermediate bytes, then one final byte (`ESC c`, `ESC ( B`).
fn skip_escape(chars: &mut Chars<'_>) {
    while chars
        .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
        .is_some()
    {}
    chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
}

/// serde_json escapes C0 controls in strings but writes DEL, C1 controls, bidirectional
/// controls and U+2028/U+2029 as they are. These only occur inside JSON strings, where a
/// `\uXXXX` escape is the same value: the output stays the exact data, and the terminal never
/// sees them.
fn escape_hidden(json: String) -> String {
    if !json.chars().any(|c| c != '\n' && is_hidden(c)) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c != '\n' && is_hidden(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `value` as one line of JSON, safe to print.
pub fn json_line(value: &Value) -> String {
    escape_hidden(value.to_string())
}

/// `value` as indented JSON, safe to print.
pub fn json_pretty(value: &Value) -> String {
    escape_hidden(serde_json::to_string_pretty(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_text_loses_control_characters() {
        assert_eq!(
            sanitize("a\u{1b}[31mred\u{1b}[0m\u{7}b\r\n\u{9b}6nc\u{202e}d"),
            "aredb\ncd"
        );
        assert_eq!(
            sanitize("x\u{1b}]8;;http://evil\u{7}link\u{1b}]8;;\u{1b}\\"),
            "xlink"
        );
        assert_eq!(sanitize("tab\there"), "tab\there");
    }

    #[test]
    fn every_kind_of_escape_goes_whole() {
        // OSC 52 (clipboard), a window title, a screen clear, a DCS and an APC string, a
        // two-character reset and a charset switch, and their C1 forms.
        let hostile = "\u{1b}]52;c;aGk=\u{7}\u{1b}]0;title\u{1b}\\\u{1b}[2J\u{1b}[?1049h\
                       \u{1b}Pq#0\u{1b}\\\u{1b}_apc\u{7}\u{1b}c\u{1b}(Bdone\
                       \u{9d}0;t\u{9c}\u{9b}2J\u{90}dcs\u{9c}!";
        assert_eq!(sanitize(hostile), "done!");
        // A malformed CSI ends at the first character that cannot belong to it.
        assert_eq!(sanitize("\u{1b}[12é"), "é");
        // An unterminated string sequence hides the rest, as a terminal would.
        assert_eq!(sanitize("ok\u{1b}]0;never ends"), "ok");
    }

    #[test]
    fn bidi_controls_and_line_separators_are_removed() {
        let text = "a\u{202a}b\u{202b}c\u{202c}d\u{202d}e\u{202e}f\u{2066}g\u{2067}h\
                    \u{2068}i\u{2069}j\u{200e}k\u{200f}l\u{061c}m\u{2028}n\u{2029}o\u{7f}p\u{85}q";
        assert_eq!(sanitize(text), "abcdefghijklmnopq");
    }

    #[test]
    fn one_line_text_has_no_line_breaks() {
        assert_eq!(
            sanitize_line("mcp-term: ok\n{\"error\"}\tx\u{1b}[1A"),
            "mcp-term: ok {\"error\"} x"
        );
    }

    #[test]
    fn json_keeps_the_data_and_escapes_what_a_terminal_acts_on() {
        let value = json!({"t": "a\u{1b}]0;x\u{7}\u{9b}2J\u{202e}\u{2028}\u{7f}é", "n": 1});
        let line = json_line(&value);
        assert_eq!(
            line,
            r#"{"n":1,"t":"a\u001b]0;x\u0007\u009b2J\u202e\u2028\u007fé"}"#
        );
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap(), value);
        let pretty = json_pretty(&value);
        assert!(pretty.contains("\n  \"n\": 1,\n"), "{pretty}");
        assert!(pretty.contains(r#""a\u001b]0;x\u0007\u009b2J\u202e\u2028\u007fé""#));
        assert_eq!(serde_json::from_str::<Value>(&pretty).unwrap(), value);
    }
}
