//! `Retry-After` (RFC 9110, section 10.2.3): a number of seconds, or an HTTP date, read as
//! the wait from now.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hyper::header;

/// The wait a `Retry-After` header asks for: its seconds, or the time until its date (zero
/// for a date already past). `None` when the header is absent or is neither.
pub(super) fn retry_after(headers: &hyper::HeaderMap) -> Option<Duration> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = http_date(value)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Seconds since 1970 of an HTTP date in any of the three forms a recipient must read:
/// `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate), `Sunday, 06-Nov-94 08:49:37 GMT`
/// (RFC 850) and `Sun Nov  6 08:49:37 1994` (asctime).
fn http_date(text: &str) -> Option<u64> {
    let tokens: Vec<&str> = text
        .split([' ', ',', '-'])
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.len() > 6 {
        return None;
    }
    let month = tokens
        .iter()
        .find_map(|t| MONTHS.iter().position(|m| m == t))? as u64
        + 1;
    let mut clock = tokens.iter().filter(|t| t.contains(':'));
    let (clock, None) = (clock.next()?, clock.next()) else {
        return None;
    };
    let mut numbers = tokens
        .iter()
        .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))
        .map(|t| (t.len(), t.parse::<u64>().ok()));
    let (day, (year_digits, year)) = (numbers.next()?.1?, numbers.next()?);
    if numbers.next().is_some() {
        return None;
    }
    let year = match (year_digits, year?) {
        // RFC 850's two digits: 70 and later are the 1900s (HTTP dates start in 1990s).
        (2, y) if y >= 70 => 1900 + y,
        (2, y) => 2000 + y,
        (4, y) => y,
        _ => return None,
    };
    let mut hms = clock.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || h > 23 || m > 59 || s > 60 || !(1..=31).contains(&day) {
        return None;
    }
    Some(days_since_epoch(year, month, day)? * 86_400 + h * 3_600 + m * 60 + s)
}

/// Days from 1970-01-01 to a Gregorian date (Howard Hinnant's days-from-civil), for dates
/// from 1970 on.
fn days_since_epoch(year: u64, month: u64, day: u64) -> Option<u64> {
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV_6_1994: u64 = 784_111_777;

    #[test]
    fn the_three_date_forms_read_the_same_instant() {
        assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(NOV_6_1994));
        assert_eq!(
            http_date("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(NOV_6_1994)
        );
        assert_eq!(http_date("Sun Nov  6 08:49:37 1994"), Some(NOV_6_1994));
        assert_eq!(
            http_date("Thu, 03 Dec 2026 17:00:00 GMT"),
            Some(1_796_317_200)
        );
        assert_eq!(
            http_date("Tue, 29 Feb 2028 00:00:00 GMT"),
            Some(1_835_395_200)
        );
    }

    #[test]
    fn what_is_not_a_date_is_refused() {
        for text in [
            "",
            "soon",
            "Sun, 06 Nov 1994 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 194 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 12:00:00 GMT",
            "Sun, 06 Nov 1994 1995 08:49:37 GMT",
        ] {
            assert_eq!(http_date(text), None, "{text:?}");
        }
    }

    fn headers(value: &str) -> hyper::HeaderMap {
        let mut headers = hyper::HeaderMap::new();
        headers.insert(header::RETRY_AFTER, value.parse().unwrap());
        headers
    }

    #[test]
    fn seconds_a_future_date_and_a_past_date() {
        assert_eq!(retry_after(&headers("7")), Some(Duration::from_secs(7)));
        let in_ten = SystemTime::now() + Duration::from_secs(10);
        let wait = retry_after(&headers(&imf_fixdate(in_ten))).unwrap();
        assert!(
            (Duration::from_secs(8)..=Duration::from_secs(10)).contains(&wait),
            "{wait:?}"
        );
        assert_eq!(
            retry_after(&headers("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers("later")), None);
        assert_eq!(retry_after(&hyper::HeaderMap::new()), None);
    }

    /// `at` as an IMF-fixdate (the weekday is not checked, so any will do).
    fn imf_fixdate(at: SystemTime) -> String {
        let secs = at.duration_since(UNIX_EPOCH).unwrap().as_secs();
        let (days, rest) = (secs / 86_400, secs % 86_400);
        let (mut year, mut month) = (1970, 1);
        while days_since_epoch(year + 1, 1, 1).unwrap() <= days {
            year += 1;
        }
        while month < 12 && days_since_epoch(year, month + 1, 1).unwrap() <= days {
            month += 1;
        }
        let day = days - days_since_epoch(year, month, 1).unwrap() + 1;
        format!(
            "Mon, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
            MONTHS[(month - 1) as usize],
            rest / 3_600,
            rest % 3_600 / 60,
            rest % 60
        )
    }
}
