//! Protocol versions and the two eras they belong to.
//!
//! Versions are compared by their position in the known list, never as strings, and an
//! unknown version counts as nothing.

use std::fmt;

/// A protocol revision this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// `2024-11-05` (handshake era).
    V2024_11_05,
    /// `2025-03-26` (handshake era).
    V2025_03_26,
    /// `2025-06-18` (handshake era).
    V2025_06_18,
    /// `2025-11-25`, the last handshake-era revision.
    V2025_11_25,
    /// `2026-07-28`, the first stateless revision.
    V2026_07_28,
}

/// The two eras of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2026-07-28 and later: stateless, context in every request's `_meta`.
    Modern,
    /// 2025-11-25 and earlier: an `initialize` handshake opens a session.
    Legacy,
}

impl ProtocolVersion {
    /// Every known version, oldest first.
    pub const KNOWN: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];
    /// The newest stateless version.
    pub const LATEST_MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
    /// The newest handshake version: what `initialize` offers and counter-offers.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;
    /// What a legacy HTTP request without a version header is assumed to speak.
    pub const DEFAULT_NEGOTIATED: ProtocolVersion = ProtocolVersion::V2025_03_26;

    /// The version string on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Reads a version string; `None` for a version this crate does not know.
    pub fn parse(version: &str) -> Option<Self> {
        ProtocolVersion::KNOWN
            .into_iter()
            .find(|v| v.as_str() == version)
    }

    /// The era this version belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether this is a stateless (2026-07-28 or later) version.
    pub const fn is_modern(self) -> bool {
        matches!(self.era(), Era::Modern)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order_by_position() {
        assert_eq!(
            ProtocolVersion::parse("2026-07-28"),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(ProtocolVersion::parse("v999.0.0"), None);
        assert!(ProtocolVersion::V2025_11_25 < ProtocolVersion::V2026_07_28);
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Legacy);
        assert!(ProtocolVersion::LATEST_MODERN.is_modern());
    }
}
