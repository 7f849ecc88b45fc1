//! Protocol versions and the two eras they belong to.
//!
//! Versions are compared by their position in the known list, never as strings, and an
//! unknown version counts as nothing.

use core::fmt;

/// The one table of protocol revisions, oldest first: each variant with its wire string and
/// its era. A new revision is one line in the invocation below; the enum, [`ProtocolVersion::KNOWN`],
/// the latest of each era and the lists every crate reads ([`MODERN_VERSIONS`],
/// [`LEGACY_VERSIONS`], [`SUPPORTED_VERSIONS`]) follow from it.
macro_rules! versions {
    ($($(#[$doc:meta])* $variant:ident = $text:literal, $era:ident;)*) => {
        /// A protocol revision this crate knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ProtocolVersion {
            $($(#[$doc])* $variant,)*
        }

        impl ProtocolVersion {
            /// Every known version, oldest first.
            pub const KNOWN: [ProtocolVersion; [$($text),*].len()] =
                [$(ProtocolVersion::$variant),*];

            /// The version string on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ProtocolVersion::$variant => $text,)*
                }
            }

            /// The era this version belongs to.
            pub const fn era(self) -> Era {
                match self {
                    $(ProtocolVersion::$variant => Era::$era,)*
                }
            }
        }
    };
}

versions! {
    /// `2024-11-05` (handshake era).
    V2024_11_05 = "2024-11-05", Legacy;
    /// `2025-03-26` (handshake era).
    V2025_03_26 = "2025-03-26", Legacy;
    /// `2025-06-18` (handshake era).
    V2025_06_18 = "2025-06-18", Legacy;
    /// `2025-11-25`, the last handshake-era revision.
    V2025_11_25 = "2025-11-25", Legacy;
    /// `2026-07-28`, the first stateless revision.
    V2026_07_28 = "2026-07-28", Modern;
}

/// The two eras of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2026-07-28 and later: stateless, context in every request's `_meta`.
    Modern,
    /// 2025-11-25 and earlier: an `initialize` handshake opens a session.
    Legacy,
}

impl Era {
    const fn is(self, other: Era) -> bool {
        matches!(
            (self, other),
            (Era::Modern, Era::Modern) | (Era::Legacy, Era::Legacy)
        )
    }
}

/// How many known versions belong to `era`.
const fn count(era: Era) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < ProtocolVersion::KNOWN.len() {
        if ProtocolVersion::KNOWN[i].era().is(era) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The wire strings of `era`'s versions, oldest first.
const fn strings<const N: usize>(era: Era) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut n, mut i) = (0, 0);
    while i < ProtocolVersion::KNOWN.len() {
        if ProtocolVersion::KNOWN[i].era().is(era) {
            out[n] = ProtocolVersion::KNOWN[i].as_str();
            n += 1;
        }
        i += 1;
    }
    out
}

/// The newest version of `era`.
const fn latest(era: Era) -> ProtocolVersion {
    let mut i = ProtocolVersion::KNOWN.len();
    while i > 0 {
        i -= 1;
        if ProtocolVersion::KNOWN[i].era().is(era) {
            return ProtocolVersion::KNOWN[i];
        }
    }
    panic!("an era without a version")
}

/// The versions served statelessly (a request's `_meta` names one of them), oldest first.
pub const MODERN_VERSIONS: [&str; count(Era::Modern)] = strings(Era::Modern);
/// The handshake versions an `initialize` may negotiate, oldest first.
pub const LEGACY_VERSIONS: [&str; count(Era::Legacy)] = strings(Era::Legacy);
/// What `server/discover` lists: every stateless version, newest first, then the newest
/// handshake one a legacy client reaches through `initialize`. The `-32022` error's
/// `supported` (the stateless versions) is a subset of it, as the conformance suite checks.
pub const SUPPORTED_VERSIONS: [&str; count(Era::Modern) + 1] = supported();

const fn supported<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < MODERN_VERSIONS.len() {
        out[i] = MODERN_VERSIONS[MODERN_VERSIONS.len() - 1 - i];
        i += 1;
    }
    out[i] = ProtocolVersion::LATEST_LEGACY.as_str();
    out
}

impl ProtocolVersion {
    /// The newest stateless version.
    pub const LATEST_MODERN: ProtocolVersion = latest(Era::Modern);
    /// The newest handshake version: what `initialize` offers and counter-offers.
    pub const LATEST_LEGACY: ProtocolVersion = latest(Era::Legacy);
    /// What a legacy HTTP request without a version header is assumed to speak.
    pub const DEFAULT_NEGOTIATED: ProtocolVersion = ProtocolVersion::V2025_03_26;

    /// Reads a version string; `None` for a version this crate does not know.
    pub fn parse(version: &str) -> Option<Self> {
        ProtocolVersion::KNOWN
            .into_iter()
            .find(|v| v.as_str() == version)
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

    #[test]
    fn the_lists_every_crate_reads_follow_from_the_table() {
        assert_eq!(MODERN_VERSIONS, ["2026-07-28"]);
        assert_eq!(
            LEGACY_VERSIONS,
            ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
        );
        assert_eq!(SUPPORTED_VERSIONS, ["2026-07-28", "2025-11-25"]);
        // What a -32022 names as supported is listed by server/discover, whatever the table.
        assert!(
            MODERN_VERSIONS
                .iter()
                .all(|v| SUPPORTED_VERSIONS.contains(v))
        );
        assert_eq!(ProtocolVersion::LATEST_LEGACY, ProtocolVersion::V2025_11_25);
        assert_eq!(ProtocolVersion::KNOWN.len(), 5);
    }
}
