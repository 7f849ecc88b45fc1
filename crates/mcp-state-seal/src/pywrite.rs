//! The low-level writers of Python's `json.dumps` output (strings with `ensure_ascii`,
//! integers, floats as `repr`), shared by the compact writer (`pyjson`) and the canonical one.

use std::fmt::Write as _;

use crate::scan::python_verbatim_len;

pub(crate) const HEX: &[u8; 16] = b"0123456789abcdef";

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
pub(crate) const SHORT_ESCAPES: [u8; 128] = {
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

pub(crate) fn push_u_escape(out: &mut Vec<u8>, unit: u32) {
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
        if !self.push_millis(x.abs()) {
            self.push_shortest(x.abs());
        }
    }

    /// [`push_py_float`](Self::push_py_float) of a positive, finite `x`, from Rust's
    /// shortest digits.
    pub(crate) fn push_shortest(&mut self, x: f64) {
        // Rust's `{:e}` prints the same shortest round-trip digits as Python's repr
        // (both pick the closest shortest string); only the layout differs.
        let mut sci = FloatBuf::new();
        let _ = write!(sci, "{x:e}");
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

impl FloatBuf {
    /// The fixed notation of a positive `x` that is the double nearest to a whole number of
    /// milliseconds, below 2^43 (a seal's times, now and for the next 278 years), written
    /// from its integer digits; `false` (nothing written) for any other `x`.
    ///
    /// That is the shortest text that reads back as `x`, as `float.__repr__` picks it: `x`
    /// is the nearest double to `m / 1000` (IEEE division of two exact integers rounds
    /// correctly), a double below 2^43 is less than 0.001 from its neighbours, so no other
    /// text of at most three decimals reads as `x`, and fewer digits than `m / 1000`'s
    /// (trailing zeros dropped) would be another such text.
    pub(crate) fn push_millis(&mut self, x: f64) -> bool {
        const LIMIT: f64 = (1u64 << 43) as f64;
        if !(1.0..LIMIT).contains(&x) {
            return false;
        }
        let m = (x * 1000.0).round();
        if m / 1000.0 != x {
            return false;
        }
        // `m` is a whole number below 2^53: exact as an integer.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let m = m as u64;
        let (whole, mut frac) = (m / 1000, m % 1000);
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = whole;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push_all(&digits[at..]);
        self.push(b'.');
        if frac == 0 {
            self.push(b'0');
            return true;
        }
        let mut width = 3;
        while frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        for i in (0..width).rev() {
            self.push(b'0' + (frac / 10u64.pow(i) % 10) as u8);
        }
        true
    }
}

pub(crate) fn parse_exponent(text: &[u8]) -> i32 {
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
