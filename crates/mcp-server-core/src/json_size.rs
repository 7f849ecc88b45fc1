//! How many bytes a value takes as JSON, counted without keeping the text and abandoned as
//! soon as the count passes a limit.

use std::io;

use serde::Serialize;

/// A sink that only counts, and fails once more than `limit` bytes were written (which stops
/// the serializer there).
struct Counter {
    written: usize,
    limit: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written = self.written.saturating_add(buf.len());
        if self.written > self.limit {
            return Err(io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `value` encodes as JSON in at most `limit` bytes. The work stops at the limit, so a
/// huge value costs no more than a value of `limit` bytes.
pub(crate) fn encoded_len_within(value: &impl Serialize, limit: usize) -> bool {
    serde_json::to_writer(&mut Counter { written: 0, limit }, value).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_the_compact_encoding_and_stops_past_the_limit() {
        let value = json!({"a": "bcd"}); // {"a":"bcd"} is 11 bytes
        assert!(encoded_len_within(&value, 11));
        assert!(!encoded_len_within(&value, 10));
        let huge = json!({"pad": vec![0; 1_000_000]});
        assert!(!encoded_len_within(&huge, 16 * 1024));
    }
}
