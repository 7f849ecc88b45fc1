//! Python's `json.dumps` output, byte for byte: ASCII-only strings, `float.__repr__`
//! numbers, compact separators. Every digest and every sealed envelope goes through
//! here, so a Rust and a Python server sharing keys produce and accept the same bytes.

use std::fmt::Write as _;
use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter};

use crate::scan::python_verbatim_len;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Renders `value` as Python's `json.dumps(value, separators=(",", ":"))` would:
/// compact, non-ASCII escaped as `\uXXXX`, floats as Python prints them, and map
/// keys in the order `value` serializes them (not sorted).
///
/// This is the form the Python SDK hashes for question digests and uses for its
/// principal string, so anything that must match it bit for bit is rendered here.
///
/// ```
/// use serde_json::json;
///
/// let text = mcp_state_seal::compact_json(&json!(["café", 1.0, 1e-7, null])).unwrap();
/// assert_eq!(text, r#"["caf\u00e9",1.0,1e-07,null]"#);
/// ```
///
/// # Errors
///
/// Whatever `value`'s [`Serialize`] implementation reports (e.g. a map with
/// non-string keys).
pub fn compact_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    write_compact_json(&mut out, value)?;
    // Every byte written is ASCII: strings are escaped and numbers are digits.
    Ok(String::from_utf8(out).unwrap_or_default())
}

pub(crate) fn write_compact_json<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    let mut ser = serde_json::Serializer::with_formatter(out, PythonFormatter);
    value.serialize(&mut ser)
}

/// A serde_json formatter that writes what Python's `json.dumps` writes with
/// `ensure_ascii=True` and compact separators.
struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        // Python has one float type; an f32 reaches it widened to a double.
        self.write_f64(writer, f64::from(value))
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        let mut buf = FloatBuf::new();
        buf.push_py_float(value);
        writer.write_all(buf.as_bytes())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // serde_json already escaped quotes, backslashes and control characters; what
        // reaches a fragment may still hold DEL and non-ASCII, which Python escapes too.
        // Most fragments (keys, schema words, ASCII messages) hold neither: write them as
        // they are, without a buffer per fragment.
        let bytes = fragment.as_bytes();
        if python_verbatim_len(bytes) == bytes.len() {
            return writer.write_all(bytes);
        }
        let mut buf = Vec::with_capacity(bytes.len() + 16);
        write_escaped_body(&mut buf, fragment);
        writer.write_all(&buf)
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // A `RawValue` would otherwise be copied as written (spacing, non-ASCII,
        // `1E5`); Python parses and re-dumps it, so render it the same way.
        let mut buf = Vec::with_capacity(fragment.len());
        match crate::jsontext::parse(fragment) {
            Ok(node) => crate::canonical::write_canonical_node(&mut buf, &node, false),
            Err(_) => buf.extend_from_slice(fragment.as_bytes()),
        }
        writer.write_all(&buf)
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        let mut buf = Vec::with_capacity(6);
        let byte = match char_escape {
            CharEscape::Quote => b'"',
            CharEscape::ReverseSolidus => b'\\',
            CharEscape::Solidus => b'/',
            CharEscape::Backspace => 0x08,
            CharEscape::FormFeed => 0x0c,
            CharEscape::LineFeed => b'\n',
            CharEscape::CarriageReturn => b'\r',
            CharEscape::Tab => b'\t',
            CharEscape::AsciiControl(byte) => byte,
        };
        push_code_point(&mut buf, u32::from(byte));
        writer.write_all(&buf)
    }
}

/// Appends `s` as a JSON string literal, quotes included, escaped like Python's
/// `ensure_ascii=True`.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    write_escaped_body(out, s);
    out.push(b'"');
}

/// Appends the escaped content of a JSON string (no quotes).
pub(crate) fn write_escaped_body(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let clean = python_verbatim_len(&bytes[start..]);
        out.extend_from_slice(&bytes[start..start + clean]);
        start += clean;
        // Escape every byte that needs it up to the next clean byte, without going
        // back to the word-at-a-time scan for each one (states are often dense in
        // quotes).
        while let Some(&b) = bytes.get(start) {
            if b < 0x80 {
                match SHORT_ESCAPES[usize::from(b)] {
                    0 => break,
                    b'u' => push_u_escape(out, u32::from(b)),
                    letter => out.extend_from_slice(&[b'\\', letter]),
                }
                start += 1;
            } else {
                let c = s[start..].chars().next().unwrap_or('\u{fffd}');
                push_code_point(out, u32::from(c));
                start += c.len_utf8();
            }
        }
    }
}

/// For each ASCII byte: 0 when Python writes it as itself, the letter of its
/// two-character escape (`\n`), or `u` for a `\u00XX` escape.
const SHORT_ESCAPES: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x7f] = b'u';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'\n' as usize] = b'n';
    table[b'\r' as usize] = b'r';
    table[b'\t' as usize] = b't';
    table[0x08] = b'b';
    table[0x0c] = b'f';
    table
};

/// Appends one code point as Python writes it inside a string. A lone surrogate
/// (possible when re-rendering JSON text that escapes one) is written as itself.
pub(crate) fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0x22 => out.extend_from_slice(b"\\\""),
        0x5c => out.extend_from_slice(b"\\\\"),
        0x0a => out.extend_from_slice(b"\\n"),
        0x0d => out.extend_from_slice(b"\\r"),
        0x09 => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        // The range is checked by the arm, so the cast keeps the value.
        0x20..=0x7e => out.push(cp as u8),
        0..=0xffff => push_u_escape(out, cp),
        _ => {
            // Astral characters become a UTF-16 surrogate pair, as in Python.
            let v = cp - 0x1_0000;
            push_u_escape(out, 0xd800 | (v >> 10));
            push_u_escape(out, 0xdc00 | (v & 0x3ff));
        }
    }
}

fn push_u_escape(out: &mut Vec<u8>, unit: u32) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[(unit >> 12 & 0xf) as usize],
        HEX[(unit >> 8 & 0xf) as usize],
        HEX[(unit >> 4 & 0xf) as usize],
        HEX[(unit & 0xf) as usize],
    ]);
}

/// Appends an integer's decimal digits.
pub(crate) fn write_int(out: &mut Vec<u8>, n: i128) {
    let mut buf = FloatBuf::new();
    // Writing to a fixed buffer large enough for any i128 cannot fail.
    let _ = write!(buf, "{n}");
    out.extend_from_slice(buf.as_bytes());
}

/// Appends `x` as Python's `json.dumps` writes a float.
pub(crate) fn write_float(out: &mut Vec<u8>, x: f64) {
    let mut buf = FloatBuf::new();
    buf.push_py_float(x);
    out.extend_from_slice(buf.as_bytes());
}

/// A fixed, stack-allocated text buffer: formatting a number must not allocate.
pub(crate) struct FloatBuf {
    bytes: [u8; 48],
    len: usize,
}

impl FloatBuf {
    pub(crate) const fn new() -> Self {
        Self {
            bytes: [0; 48],
            len: 0,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn push(&mut self, b: u8) {
        // The longest text written here (a sign, 17 digits, a point, zeros up to
        // the 16-digit threshold, an exponent) is well under the buffer size.
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn push_all(&mut self, s: &[u8]) {
        for &b in s {
            self.push(b);
        }
    }

    /// `float.__repr__` as `json.dumps` uses it: the shortest digits that round-trip,
    /// scientific notation when the decimal exponent is below -4 or at least 16
    /// (`1e-07`, `1.5e+16`), otherwise fixed notation with at least one decimal
    /// (`1.0`, `0.0001`). Non-finite values are written as `json.dumps` does.
    pub(crate) fn push_py_float(&mut self, x: f64) {
        if x.is_nan() {
            return self.push_all(b"NaN");
        }
        if x.is_infinite() {
            let text: &[u8] = if x > 0.0 { b"Infinity" } else { b"-Infinity" };
            return self.push_all(text);
        }
        if x.is_sign_negative() {
            self.push(b'-');
        }
        if x == 0.0 {
            return self.push_all(b"0.0");
        }
        // Rust's `{:e}` prints the same shortest round-trip digits as Python's repr
        // (both pick the closest shortest string); only the layout differs.
        let mut sci = FloatBuf::new();
        let _ = write!(sci, "{:e}", x.abs());
        let text = sci.as_bytes();
        let e_at = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
        let mut digits = [0u8; 24];
        let mut n = 0;
        for &b in &text[..e_at] {
            if b.is_ascii_digit() && n < digits.len() {
                digits[n] = b;
                n += 1;
            }
        }
        let digits = &digits[..n];
        let exp = parse_exponent(&text[(e_at + 1).min(text.len())..]);
        if !(-4..16).contains(&exp) {
            self.push(digits[0]);
            if n > 1 {
                self.push(b'.');
                self.push_all(&digits[1..]);
            }
            self.push(b'e');
            self.push(if exp < 0 { b'-' } else { b'+' });
            let mag = exp.unsigned_abs();
            if mag < 10 {
                self.push(b'0');
            }
            let _ = write!(self, "{mag}");
        } else if exp < 0 {
            self.push_all(b"0.");
            for _ in 0..(-exp - 1) {
                self.push(b'0');
            }
            self.push_all(digits);
        } else {
            // `exp` is in 0..16 here.
            let point = exp as usize + 1;
            if point < n {
                self.push_all(&digits[..point]);
                self.push(b'.');
                self.push_all(&digits[point..]);
            } else {
                self.push_all(digits);
                for _ in n..point {
                    self.push(b'0');
                }
                self.push_all(b".0");
            }
        }
    }
}

fn parse_exponent(text: &[u8]) -> i32 {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mag = digits.iter().fold(0i32, |acc, &d| {
        acc.saturating_mul(10)
            .saturating_add(i32::from(d.wrapping_sub(b'0')))
    });
    if negative { -mag } else { mag }
}

impl std::fmt::Write for FloatBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.len + s.len() > self.bytes.len() {
            return Err(std::fmt::Error);
        }
        self.push_all(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_and_escaped_fragments_render_like_python() {
        // json.dumps(v, separators=(",", ":")) of each value, from Python 3.11.
        let cases = [
            ("plain ascii", r#""plain ascii""#),
            ("tab\tand \"quote\"", r#""tab\tand \"quote\"""#),
            ("del\u{7f}end", r#""del\u007fend""#),
            ("café ✓ 😀", r#""caf\u00e9 \u2713 \ud83d\ude00""#),
            ("", r#""""#),
        ];
        for (value, python) in cases {
            assert_eq!(compact_json(value).unwrap(), python, "{value:?}");
        }
        assert_eq!(
            compact_json(&serde_json::json!({"k\u{e9}y": ["a", "b\u{7f}"]})).unwrap(),
            r#"{"k\u00e9y":["a","b\u007f"]}"#
        );
    }

    fn repr(x: f64) -> String {
        let mut buf = FloatBuf::new();
        buf.push_py_float(x);
        String::from_utf8(buf.as_bytes().to_vec()).unwrap()
    }

    fn esc(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_render_like_python_repr() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1e-7, "1e-07"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (1e100, "1e+100"),
            (1e-300, "1e-300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (1782345600.5, "1782345600.5"),
            (1782346200.5, "1782346200.5"),
            (100.0, "100.0"),
            (123.456, "123.456"),
            (1234567890123456.7, "1234567890123456.8"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
        ];
        for &(x, want) in cases {
            assert_eq!(repr(x), want, "{x:e}");
        }
    }

    #[test]
    fn strings_escape_like_python_ensure_ascii() {
        assert_eq!(esc("plain /path"), r#""plain /path""#);
        assert_eq!(esc("q\"b\\"), r#""q\"b\\""#);
        assert_eq!(esc("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(esc("\u{0}\u{1f}\u{7f}"), r#""\u0000\u001f\u007f""#);
        assert_eq!(esc("café 😀"), r#""caf\u00e9 \ud83d\ude00""#);
        assert_eq!(esc("\u{ffff}\u{10000}"), r#""\uffff\ud800\udc00""#);
    }

    #[test]
    fn raw_values_are_re_rendered_like_python() {
        #[derive(Serialize)]
        struct Params {
            schema: Box<serde_json::value::RawValue>,
        }
        let schema =
            serde_json::value::RawValue::from_string(r#"{ "b" : 1E2, "a": "é" }"#.into()).unwrap();
        assert_eq!(
            compact_json(&Params { schema }).unwrap(),
            r#"{"schema":{"b":100.0,"a":"\u00e9"}}"#
        );
    }

    #[test]
    fn serialize_uses_python_layout() {
        #[derive(Serialize)]
        struct Params<'a> {
            mode: &'a str,
            message: &'a str,
            n: f32,
        }
        let text = compact_json(&Params {
            mode: "form",
            message: "Où?\u{7f}\u{1}",
            n: 0.5,
        })
        .unwrap();
        assert_eq!(
            text,
            r#"{"mode":"form","message":"O\u00f9?\u007f\u0001","n":0.5}"#
        );
    }
}
