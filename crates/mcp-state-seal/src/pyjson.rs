//! Python's `json.dumps` output, byte for byte: ASCII-only strings, `float.__repr__`
//! numbers, compact separators. Every digest and every sealed envelope goes through
//! here, so a Rust and a Python server sharing keys produce and accept the same bytes.

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter};

use crate::pywrite::{FloatBuf, push_code_point, write_escaped_body};
use crate::scan::python_verbatim_len;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pywrite::write_str;

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

    /// A whole number of milliseconds is written from its integer digits: the same text as
    /// the shortest digits give, on the grid, at its edges and off it.
    #[test]
    fn milliseconds_render_as_the_shortest_digits_do() {
        let shortest = |x: f64| {
            let mut buf = FloatBuf::new();
            buf.push_shortest(x);
            String::from_utf8(buf.as_bytes().to_vec()).unwrap()
        };
        let limit = 1u64 << 43;
        let mut ms: Vec<u64> = vec![1000, 1001, 1010, 1100, 1999, 10_000, 1_782_345_600_500];
        ms.extend([
            limit * 1000 - 1,
            (limit - 1) * 1000,
            limit * 1000,
            limit * 1000 + 7,
        ]);
        // A fixed walk over the range (xorshift), every digit count of both parts.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let scale = 10u64.pow(u32::try_from(state % 16).unwrap() + 4);
            ms.push(state % scale);
        }
        let mut fast = 0;
        for m in ms {
            let x = m as f64 / 1000.0;
            let mut buf = FloatBuf::new();
            if buf.push_millis(x) {
                fast += 1;
                let text = String::from_utf8(buf.as_bytes().to_vec()).unwrap();
                assert_eq!(text, shortest(x), "{m} ms");
                assert_eq!(text.parse::<f64>().unwrap(), x, "{m} ms");
            }
            assert_eq!(repr(x), shortest(x), "{m} ms");
            // The next double: off the grid (not taken) below 2^33 s; nearer the limit, the
            // nearest double to the next millisecond, whose text is again the shortest.
            let next = f64::from_bits(x.to_bits() + 1);
            let mut buf = FloatBuf::new();
            if buf.push_millis(next) {
                assert!(next >= (1u64 << 33) as f64, "{next}");
                assert_eq!(buf.as_bytes(), shortest(next).as_bytes(), "{next}");
            }
        }
        assert!(
            fast > 150_000,
            "{fast} of the values took the whole-millisecond path"
        );
        assert_eq!(repr(1_782_345_600.123), "1782345600.123");
        assert_eq!(repr(1_782_345_600.12), "1782345600.12");
        assert_eq!(repr(1_782_345_600.0), "1782345600.0");
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
