//! Header values: the names MCP uses, and the `=?base64?…?=` encoding of values that are not
//! safe as plain header text (non-ASCII, control characters, edge whitespace).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME: &str = "mcp-name";
/// `Mcp-Session-Id` (2025-11-25 sessions only).
pub const SESSION_ID: &str = "mcp-session-id";
/// `Last-Event-ID`, naming where a resumed SSE stream picks up.
pub const LAST_EVENT_ID: &str = "last-event-id";
/// The prefix of `Mcp-Param-{Name}` headers.
pub const PARAM_PREFIX: &str = "mcp-param-";

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Encodes a value for an `Mcp-Name` or `Mcp-Param-*` header: plain when it is printable
/// ASCII without edge whitespace (and does not itself look encoded), base64 otherwise.
pub fn encode_value(value: &str) -> String {
    let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let edge_space = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with(PREFIX) && value.ends_with(SUFFIX);
    let plain = printable && !edge_space && !looks_encoded;
    if plain {
        value.to_owned()
    } else {
        format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value.as_bytes()))
    }
}

/// Decodes a header value: surrounding whitespace trimmed, `=?base64?…?=` decoded (strictly:
/// bad padding or characters are an error), anything else literal.
pub fn decode_value(raw: &str) -> Result<String, String> {
    let raw = raw.trim_matches([' ', '\t']);
    match raw
        .strip_prefix(PREFIX)
        .and_then(|r| r.strip_suffix(SUFFIX))
    {
        Some(encoded) => {
            let bytes = STANDARD
                .decode(encoded)
                .map_err(|e| format!("invalid base64 ({e})"))?;
            String::from_utf8(bytes).map_err(|_| "the decoded value is not UTF-8".to_owned())
        }
        None => Ok(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_spec_examples() {
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("us west 1"), "us west 1");
        assert_eq!(encode_value("a\tb"), "=?base64?YQli?=");
        assert_eq!(
            encode_value("=?base64?abc?="),
            "=?base64?PT9iYXNlNjQ/YWJjPz0=?="
        );
        assert_eq!(
            decode_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert_eq!(decode_value("  plain  ").unwrap(), "plain");
        assert_eq!(
            decode_value("=?base64?SGVsbG8").unwrap(),
            "=?base64?SGVsbG8",
            "no suffix: literal"
        );
        assert!(decode_value("=?base64?SGVsbG8?=").is_err(), "bad padding");
        assert!(
            decode_value("=?base64?SGVs!!!bG8=?=").is_err(),
            "bad characters"
        );
    }
}
