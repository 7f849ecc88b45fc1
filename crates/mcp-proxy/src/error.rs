//! What building a gateway or describing an upstream can fail with, at the bottom of the
//! crate: every other file names these, and these name nothing of the crate.

use std::fmt;

/// Why a [`Gateway`](crate::Gateway) could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum GatewayError {
    /// A prefix holds a character outside `[A-Za-z0-9_.-]`, or is too long.
    InvalidPrefix {
        /// The prefix as given.
        prefix: String,
        /// What is wrong with it.
        why: String,
    },
    /// Two mounts share one prefix.
    DuplicatePrefix {
        /// The prefix.
        prefix: String,
    },
    /// The separator is not one of `_`, `.` or `-`.
    InvalidSeparator {
        /// The separator as given.
        separator: char,
    },
    /// Two upstreams that answered at build time expose the same qualified tool name.
    Collision {
        /// The qualified name both expose.
        name: String,
        /// The upstream mounted first.
        first: String,
        /// The upstream mounted later.
        second: String,
    },
    /// An in-process server refused to build (an `McpServer`'s definitions).
    Mount {
        /// The upstream (its prefix, or `(root)`).
        upstream: String,
        /// Why.
        why: String,
    },
    /// The `requestState` sealing settings are not usable.
    Sealing(mcp_server_core::seal::ConfigError),
}

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GatewayError::InvalidPrefix { prefix, why } => {
                write!(f, "invalid prefix {prefix:?}: {why}")
            }
            GatewayError::DuplicatePrefix { prefix } => {
                write!(f, "prefix {prefix:?} is mounted twice")
            }
            GatewayError::InvalidSeparator { separator } => write!(
                f,
                "invalid separator {separator:?}: it must be one of '_', '.' or '-'"
            ),
            GatewayError::Collision {
                name,
                first,
                second,
            } => write!(
                f,
                "tool {name:?} is exposed by both upstream '{first}' and upstream '{second}'"
            ),
            GatewayError::Mount { upstream, why } => {
                write!(f, "upstream '{upstream}' could not be built: {why}")
            }
            GatewayError::Sealing(e) => write!(f, "requestState sealing: {e}"),
        }
    }
}

impl std::error::Error for GatewayError {}

/// Why a [`Proxy`](crate::Proxy) could not be described (a URL or a header that is not
/// valid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyError(pub String);

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProxyError {}
