//! A task's times as the wire writes them.

/// `YYYY-MM-DDThh:mm:ss.mmmZ` for milliseconds since the Unix epoch.
///
/// Every `tasks/get` renders two of these; the digits are written by hand because `format!`
/// made them 40 % of the engine's own cost of a poll (callgrind, issue #21).
pub fn iso8601(ms: u64) -> String {
    match iso8601_text(ms) {
        // Only ASCII digits and separators were written: the check cannot fail, and copies
        // the text at once (a `char` at a time cost 500 instructions per timestamp).
        Ok(out) => core::str::from_utf8(&out)
            .map(str::to_owned)
            .unwrap_or_default(),
        Err(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t[0], t[1], t[2], t[3], t[4], t[5], t[6]
        ),
    }
}

/// [`iso8601`]'s text on the stack, for a year of four digits (or, past year 9999, its
/// fields: year, month, day, hours, minutes, seconds, milliseconds).
pub(crate) fn iso8601_text(ms: u64) -> Result<[u8; 24], [i64; 7]> {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let rem = rem as i64;
    let fields = [
        year,
        month,
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        (ms % 1000) as i64,
    ];
    if !(0..10_000).contains(&year) {
        // Past year 9999 (ms near u64::MAX): as many year digits as it takes.
        return Err(fields);
    }
    let mut out = [0u8; 24];
    let layout: [(usize, u8); 7] = [
        (4, b'-'),
        (2, b'-'),
        (2, b'T'),
        (2, b':'),
        (2, b':'),
        (2, b'.'),
        (3, b'Z'),
    ];
    let mut at = 0;
    for (value, (width, after)) in fields.into_iter().zip(layout) {
        let mut value = value.unsigned_abs();
        for i in (0..width).rev() {
            out[at + i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
        out[at + width] = after;
        at += width + 1;
    }
    Ok(out)
}
