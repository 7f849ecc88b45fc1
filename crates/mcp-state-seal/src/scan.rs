//! Word-at-a-time byte scans for the string loops of sealing and unsealing.
//! A state can be kilobytes long, and finding the next byte that needs attention
//! eight bytes at a time (plain `u64` arithmetic, no `unsafe`) is most of the
//! difference between JSON handling that costs more than the encryption and
//! JSON handling that does not.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `x` that is zero. The lowest set bit is exact;
/// bits above it may be spurious (a borrow), which never matters because only
/// the first hit is used.
const fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
}

/// High bit set in each byte of `x` below `n` (`n <= 0x80`), lowest bit exact.
const fn bytes_below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(ONES * n as u64) & !x & HIGH
}

/// High bit set in each byte of `x` equal to `b`, lowest bit exact.
const fn bytes_equal(x: u64, b: u8) -> u64 {
    zero_bytes(x ^ (ONES * b as u64))
}

/// Index of the first byte for which `word_flags` (on whole words) or `is_hit`
/// (on the tail shorter than a word) says yes; `bytes.len()` if none.
fn first_hit(bytes: &[u8], word_flags: impl Fn(u64) -> u64, is_hit: impl Fn(u8) -> bool) -> usize {
    let mut i = 0;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let flags = word_flags(u64::from_le_bytes(word));
        if flags != 0 {
            // Little-endian load: the lowest flag is the first byte in memory.
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + bytes[i..]
        .iter()
        .position(|&b| is_hit(b))
        .unwrap_or(bytes.len() - i)
}

/// Whether Python's `json.dumps` (ASCII mode) escapes this byte of UTF-8 text:
/// controls, DEL, `"`, `\` and every byte of a non-ASCII character.
pub(crate) const fn python_escapes(b: u8) -> bool {
    b < 0x20 || b >= 0x7f || b == b'"' || b == b'\\'
}

/// Length of the prefix Python's `json.dumps` copies verbatim.
pub(crate) fn python_verbatim_len(bytes: &[u8]) -> usize {
    first_hit(
        bytes,
        |x| {
            bytes_below(x, 0x20)
                | (x & HIGH)
                | bytes_equal(x, 0x7f)
                | bytes_equal(x, b'"')
                | bytes_equal(x, b'\\')
        },
        python_escapes,
    )
}

/// Length of the prefix of a JSON string body that needs no attention from a
/// parser: no `"`, `\` or control character. Non-ASCII passes (the text is UTF-8).
pub(crate) fn string_run_len(bytes: &[u8]) -> usize {
    first_hit(
        bytes,
        // `& !x` in `bytes_below` already keeps bytes >= 0x80 out of the control test.
        |x| bytes_below(x, 0x20) | bytes_equal(x, b'"') | bytes_equal(x, b'\\'),
        |b| b < 0x20 || b == b'"' || b == b'\\',
    )
}

/// Length of the prefix without a backslash.
pub(crate) fn backslash_free_len(bytes: &[u8]) -> usize {
    first_hit(bytes, |x| bytes_equal(x, b'\\'), |b| b == b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value at every position of a short and a long buffer, alone and
    /// followed by a second hit (which must not shadow the first).
    fn check(scan: fn(&[u8]) -> usize, is_hit: fn(u8) -> bool) {
        for b in 0u8..=0xff {
            for len in [5usize, 23] {
                for pos in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[pos] = b;
                    let want = if is_hit(b) { pos } else { len };
                    assert_eq!(scan(&bytes), want, "{b:#x} at {pos} of {len}");
                    if pos + 1 < len {
                        bytes[pos + 1] = b'"';
                        let want = if is_hit(b) {
                            pos
                        } else {
                            scan(&bytes[pos + 1..]) + pos + 1
                        };
                        assert_eq!(scan(&bytes), want, "{b:#x} at {pos}, then a quote");
                        // A zero byte right after a hit is the case where the
                        // borrow trick sets spurious bits.
                        bytes[pos + 1] = 0;
                        let want = if is_hit(b) {
                            pos
                        } else {
                            scan(&bytes[pos + 1..]) + pos + 1
                        };
                        assert_eq!(scan(&bytes), want, "{b:#x} at {pos}, then NUL");
                    }
                }
            }
        }
    }

    #[test]
    fn python_verbatim_scan_stops_at_every_escaped_byte() {
        check(python_verbatim_len, python_escapes);
    }

    #[test]
    fn string_scan_stops_at_quotes_backslashes_and_controls() {
        check(string_run_len, |b| b < 0x20 || b == b'"' || b == b'\\');
    }

    #[test]
    fn backslash_scan_stops_at_backslashes_only() {
        check(backslash_free_len, |b| b == b'\\');
    }
}
