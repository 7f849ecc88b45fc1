//! Reading one line at a time with a bound, for both sides: the server reads requests from
//! stdin, the client reads the server's stdout and stderr. A line longer than the bound is
//! consumed to its newline without being kept, and reported by its length, so one huge line
//! costs neither memory nor the lines after it.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The capacity a line buffer keeps between lines (read or written).
pub(crate) const KEPT_CAPACITY: usize = 64 * 1024;

/// One line read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line (in the buffer, without its `\n`); the last one may lack it.
    Full,
    /// A line of this many bytes, over the limit: skipped.
    TooLong(usize),
    /// The end of the stream.
    Eof,
}

/// Reads one `\n`-terminated line into `line`, keeping at most `max` bytes of it: a longer
/// line is consumed to its end and reported by its length.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    line.clear();
    // A large line's buffer is not kept for the small ones that follow.
    line.shrink_to(KEPT_CAPACITY);
    let mut length = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match length {
                0 => Line::Eof,
                n if n > max => Line::TooLong(n),
                _ => Line::Full,
            });
        }
        let (taken, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        length = length.saturating_add(taken);
        if length <= max {
            line.extend_from_slice(&available[..taken]);
        } else {
            line.clear();
        }
        reader.consume(taken + usize::from(done));
        if done {
            return Ok(if length > max {
                Line::TooLong(length)
            } else {
                Line::Full
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn lines(input: &[u8], max: usize) -> Vec<Result<String, usize>> {
        // A 4-byte buffer: lines and limits straddle reads.
        let mut reader = BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, &mut line, max).await.unwrap() {
                Line::Full => out.push(Ok(String::from_utf8_lossy(&line).into_owned())),
                Line::TooLong(n) => out.push(Err(n)),
                Line::Eof => return out,
            }
        }
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_and_reading_goes_on() {
        let got = lines(b"short\n0123456789abcdef\nok\nlast", 10).await;
        assert_eq!(
            got,
            [
                Ok("short".to_owned()),
                Err(16),
                Ok("ok".to_owned()),
                Ok("last".to_owned())
            ]
        );
        assert_eq!(lines(b"", 10).await, []);
        assert_eq!(
            lines(b"exactly10!\n", 10).await,
            [Ok("exactly10!".to_owned())]
        );
    }
}
