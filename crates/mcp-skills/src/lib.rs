//! Reading and checking skills (the `io.modelcontextprotocol/skills` extension, SEP-2640).
//!
//! Package `keel-mcp-skills` on crates.io: `cargo add keel-mcp-skills`,
//! then `use mcp_skills::…`.
//!
//! The wire shape of a skill (its entry, its files with their digests) is `mcp-types`'; this
//! crate is what both sides do with a skill's files: a server that builds entries from a
//! directory and a client that verifies what it reads against an entry.
//!
//! - [`parse_frontmatter`] reads the YAML frontmatter of a `SKILL.md` (a strict subset of YAML,
//!   see there) into a JSON object, and [`skill_body`] is what follows it;
//! - [`sha256_digest`] is the digest of a file as a skill entry publishes it.
//!
//! ```
//! use mcp_skills::{parse_frontmatter, sha256_digest, skill_body};
//!
//! let skill_md = "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\n\nBody.\n";
//! let frontmatter = parse_frontmatter(skill_md)?;
//! assert_eq!(frontmatter["name"], "pdf-processing");
//! assert_eq!(skill_body(skill_md), Some("\nBody.\n"));
//! assert!(sha256_digest(skill_md.as_bytes()).starts_with("sha256:"));
//! # Ok::<(), mcp_skills::FrontmatterError>(())
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod digest;
mod frontmatter;

pub use digest::sha256_digest;
pub use frontmatter::{FrontmatterError, MAX_FRONTMATTER_DEPTH, parse_frontmatter, skill_body};
