//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640).
//!
//! A server serves skills, each a directory holding a `SKILL.md` (YAML frontmatter with at least
//! `name` and `description`, then Markdown) and the files it refers to. The files are ordinary
//! resources under `skill://<skill-path>/…`, read with `resources/read`; the extension adds:
//!
//! - `skills/list` ([`ListSkillsResult`]): one [`SkillEntry`] per skill, its `SKILL.md` URI, its
//!   frontmatter as a JSON object, and its files with their SHA-256 digest and size
//!   ([`SkillFile`]), so a client can verify what it reads;
//! - `skills/get` ([`GetSkillParams`] → [`GetSkillResult`]): one entry by URI, `-32602` for a URI
//!   that names no skill;
//! - `resources/directory/read` ([`DirectoryReadParams`] → [`DirectoryReadResult`]), when the
//!   server declares `directoryRead: true`: the direct children of a directory, subdirectories
//!   with the MIME type [`DIRECTORY_MIME_TYPE`].
//!
//! Only the wire shape is here. Reading a `SKILL.md`'s frontmatter and computing a file's
//! digest are what servers that build entries and clients that verify a file against its entry
//! do: they live in `mcp-skills`.
//!
//! ```
//! use mcp_types::ext::skills::{SkillEntry, SkillResources};
//!
//! let entry: SkillEntry = serde_json::from_value(serde_json::json!({
//!     "uri": "skill://pdf-processing/SKILL.md",
//!     "frontmatter": {"name": "pdf-processing", "description": "Fill PDF forms"},
//!     "resources": "dynamic",
//! })).unwrap();
//! assert_eq!(entry.resources, SkillResources::Dynamic);
//! assert_eq!(entry.name(), Some("pdf-processing"));
//! ```

use crate::prelude::*;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::JsonObject;
use crate::common::CacheScope;
use crate::meta::Meta;
use crate::mrtr::ResultType;
use crate::resources::Resource;

/// The extension identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// `skills/list`.
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get`.
pub const SKILLS_GET: &str = "skills/get";
/// `resources/directory/read` (served when the capability says `directoryRead: true`).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";
/// The MIME type of a directory child of `resources/directory/read`.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// The file at the root of every skill.
pub const SKILL_MD: &str = "SKILL.md";
/// The URI scheme servers use for skills.
pub const SCHEME: &str = "skill://";
/// The capability setting that promises `resources/directory/read`.
pub const DIRECTORY_READ: &str = "directoryRead";

/// One file of a skill: its URI, `sha256:<64 lowercase hex>` of its raw bytes, and their
/// number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI (the skill's `SKILL.md` or a file below its directory).
    pub uri: String,
    /// `sha256:` and the lowercase hex SHA-256 of the raw bytes.
    pub digest: String,
    /// The length of the raw bytes.
    pub size: u64,
}

/// The `resources` of a skill entry: every file, or `"dynamic"` (no manifest published).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, each once.
    Files(Vec<SkillFile>),
    /// The wire string `"dynamic"`: the server publishes no file list.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(s) if s == "dynamic" => Ok(SkillResources::Dynamic),
            Value::Array(files) => serde_json::from_value(Value::Array(files))
                .map(SkillResources::Files)
                .map_err(D::Error::custom),
            other => Err(D::Error::custom(format!(
                "skill resources must be an array of {{uri, digest, size}} or \"dynamic\", not {other}"
            ))),
        }
    }
}

/// One skill as `skills/list` and `skills/get` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter as a JSON object (`name` and `description` at least).
    pub frontmatter: JsonObject,
    /// The skill's files, or `"dynamic"`.
    pub resources: SkillResources,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SkillEntry {
    /// The skill's name: the path segment before `/SKILL.md` in its URI.
    pub fn name(&self) -> Option<&str> {
        skill_name(&self.uri)
    }

    /// The listed file with this URI.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }

    /// The skill's directory URI (its `SKILL.md` URI without `/SKILL.md`).
    pub fn directory(&self) -> Option<&str> {
        self.uri.strip_suffix("/SKILL.md")
    }
}

/// The name a `…/<name>/SKILL.md` URI gives its skill.
pub fn skill_name(uri: &str) -> Option<&str> {
    let rest = &uri[uri.find("://")? + 3..];
    let dir = rest.strip_suffix("/SKILL.md")?;
    let name = dir.rsplit('/').next()?;
    (!name.is_empty()).then_some(name)
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 characters, lowercase ASCII
/// letters, digits and hyphens, no hyphen first, last or twice in a row.
pub fn valid_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

macro_rules! cacheable_result {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
            /// Freshness in milliseconds (2026-07-28).
            #[serde(rename = "ttlMs", default, skip_serializing_if = "Option::is_none")]
            pub ttl_ms: Option<u64>,
            /// Cache scope (2026-07-28).
            #[serde(rename = "cacheScope", default, skip_serializing_if = "Option::is_none")]
            pub cache_scope: Option<CacheScope>,
            /// `resultType` (2026-07-28).
            #[serde(rename = "resultType", default, skip_serializing_if = "Option::is_none")]
            pub result_type: Option<ResultType>,
            /// `_meta`.
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<Meta>,
            /// Members this crate does not know, kept as sent.
            #[serde(flatten)]
            pub extra: JsonObject,
        }
    };
}

cacheable_result!(
    /// The result of `skills/list`.
    ListSkillsResult {
        /// The skills of this page.
        skills: Vec<SkillEntry>,
        /// The cursor of the next page.
        #[serde(rename = "nextCursor", default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
    }
);

cacheable_result!(
    /// The result of `skills/get`.
    GetSkillResult {
        /// The skill.
        skill: SkillEntry,
    }
);

cacheable_result!(
    /// The result of `resources/directory/read`.
    DirectoryReadResult {
        /// The directory's direct children (subdirectories with [`DIRECTORY_MIME_TYPE`]).
        resources: Vec<Resource>,
        /// The cursor of the next page.
        #[serde(rename = "nextCursor", default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
    }
);

impl ListSkillsResult {
    /// A page of skills.
    pub fn new(skills: Vec<SkillEntry>, next_cursor: Option<String>) -> Self {
        ListSkillsResult {
            skills,
            next_cursor,
            ttl_ms: None,
            cache_scope: None,
            result_type: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

impl GetSkillResult {
    /// One skill.
    pub fn new(skill: SkillEntry) -> Self {
        GetSkillResult {
            skill,
            ttl_ms: None,
            cache_scope: None,
            result_type: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

impl DirectoryReadResult {
    /// A page of a directory's children.
    pub fn new(resources: Vec<Resource>, next_cursor: Option<String>) -> Self {
        DirectoryReadResult {
            resources,
            next_cursor,
            ttl_ms: None,
            cache_scope: None,
            result_type: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The params of `resources/directory/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectoryReadParams {
    /// The directory's URI.
    pub uri: String,
    /// The cursor of a page after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_read_both_resource_forms_and_refuse_others() {
        let entry: SkillEntry = serde_json::from_value(json!({
            "uri": "skill://acme/pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "d"},
            "resources": [{"uri": "skill://acme/pdf-processing/SKILL.md", "digest": "sha256:00", "size": 3}],
        }))
        .unwrap();
        assert_eq!(entry.name(), Some("pdf-processing"));
        assert_eq!(entry.directory(), Some("skill://acme/pdf-processing"));
        assert_eq!(entry.file(&entry.uri).map(|f| f.size), Some(3));
        let bad = serde_json::from_value::<SkillEntry>(json!({
            "uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "static"}));
        assert!(bad.unwrap_err().to_string().contains("\"dynamic\""));
        assert!(valid_skill_name("pdf-processing"));
        for name in ["", "-a", "a-", "a--b", "Pdf", "a_b"] {
            assert!(!valid_skill_name(name), "{name}");
        }
    }
}
