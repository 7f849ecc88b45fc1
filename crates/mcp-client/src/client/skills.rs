//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) on the client.
//!
//! [`Client::list_skills`] and [`Client::get_skill`] fetch entries (no file is read: a host
//! reads a skill's files only when it loads the skill). [`Client::load_skill`] reads a skill's
//! `SKILL.md` and [`Client::read_skill_file`] any file it lists; both verify what the server
//! sent against the entry (byte count, then SHA-256 digest; for `SKILL.md` its frontmatter,
//! field by field) and refuse content that does not match with
//! [`ClientError::SkillVerification`], so nothing unverified reaches the caller.

use std::collections::HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_types::JsonObject;
use mcp_types::common::PaginatedRequestParams;
use mcp_types::ext::skills::{
    self as wire, GetSkillParams, GetSkillResult, ListSkillsResult, SKILL_MD, SkillEntry,
    SkillResources,
};
use serde_json::Value;

use super::Client;
use crate::error::ClientError;

/// How many `skills/list` pages [`Client::list_all_skills`] follows before it gives up on a
/// server whose cursors never end.
pub const MAX_SKILL_PAGES: usize = 1_000;

/// A verified file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFileContent {
    /// The file's URI.
    pub uri: String,
    /// The MIME type the server gave, if any.
    pub mime_type: Option<String>,
    /// The raw bytes (a text resource's UTF-8, a blob's decoded base64).
    pub bytes: Vec<u8>,
    /// Whether the bytes were checked against the entry's digest and size (`false` only for a
    /// skill whose `resources` is `"dynamic"`, which publishes none).
    pub verified: bool,
}

impl SkillFileContent {
    /// The bytes as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// A loaded skill: its verified `SKILL.md`, split into frontmatter and body.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The entry the skill was loaded from.
    pub entry: SkillEntry,
    /// The frontmatter of the file (equal to the entry's).
    pub frontmatter: JsonObject,
    /// The Markdown after the frontmatter: the instructions.
    pub body: String,
    /// The whole `SKILL.md`.
    pub file: SkillFileContent,
}

fn refuse(uri: &str, reason: impl Into<String>) -> ClientError {
    ClientError::SkillVerification {
        uri: uri.to_owned(),
        reason: reason.into(),
    }
}

impl Client {
    /// One page of `skills/list`.
    pub async fn list_skills(
        &self,
        cursor: Option<String>,
    ) -> Result<ListSkillsResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(wire::SKILLS_LIST, &params, None).await
    }

    /// Every skill, following cursors (at most [`MAX_SKILL_PAGES`] pages; a cursor the server
    /// repeats ends the listing with an error rather than a loop).
    pub async fn list_all_skills(&self) -> Result<Vec<SkillEntry>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_SKILL_PAGES {
            let page = self.list_skills(cursor).await?;
            all.extend(page.skills);
            match page.next_cursor {
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(ClientError::InvalidResponse(format!(
                        "skills/list repeated the cursor {next:?}"
                    )));
                }
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
        Err(ClientError::InvalidResponse(format!(
            "skills/list returned more than {MAX_SKILL_PAGES} pages"
        )))
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is `uri`.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, ClientError> {
        let params = GetSkillParams {
            uri: uri.to_owned(),
            meta: self.meta(None),
        };
        let result: GetSkillResult = self.typed(wire::SKILLS_GET, &params, None).await?;
        if result.skill.uri != uri {
            return Err(ClientError::InvalidResponse(format!(
                "skills/get for {uri} answered the skill {}",
                result.skill.uri
            )));
        }
        Ok(result.skill)
    }

    /// Reads file `uri` of `skill` and verifies it against the entry: it must be listed, and
    /// its byte count and SHA-256 digest must be the listed ones. Content that fails is never
    /// returned.
    pub async fn read_skill_file(
        &self,
        skill: &SkillEntry,
        uri: &str,
    ) -> Result<SkillFileContent, ClientError> {
        let listed = match &skill.resources {
            SkillResources::Files(_) => Some(skill.file(uri).ok_or_else(|| {
                refuse(
                    uri,
                    format!("not one of the files the entry of {} lists", skill.uri),
                )
            })?),
            SkillResources::Dynamic => None,
        };
        let result = self.read_resource(uri).await?;
        let contents = result
            .contents
            .iter()
            .find(|c| c.uri == uri)
            .or_else(|| result.contents.first())
            .ok_or_else(|| refuse(uri, "resources/read returned no contents"))?;
        let bytes = match (&contents.text, &contents.blob) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(blob)) => STANDARD
                .decode(blob)
                .map_err(|e| refuse(uri, format!("the blob is not base64: {e}")))?,
            (None, None) => return Err(refuse(uri, "the contents have neither text nor blob")),
        };
        if let Some(file) = listed {
            if bytes.len() as u64 != file.size {
                return Err(refuse(
                    uri,
                    format!(
                        "the server sent {} bytes; the entry lists {}",
                        bytes.len(),
                        file.size
                    ),
                ));
            }
            let digest = mcp_skills::sha256_digest(&bytes);
            if digest != file.digest {
                return Err(refuse(
                    uri,
                    format!(
                        "the content's digest is {digest}; the entry lists {}",
                        file.digest
                    ),
                ));
            }
        }
        Ok(SkillFileContent {
            uri: uri.to_owned(),
            mime_type: contents.mime_type.clone(),
            bytes,
            verified: listed.is_some(),
        })
    }

    /// Loads `skill`: reads its `SKILL.md`, verifies it ([`read_skill_file`]), then parses its
    /// frontmatter and compares it field by field with the entry's; any difference refuses
    /// the skill.
    ///
    /// [`read_skill_file`]: Self::read_skill_file
    pub async fn load_skill(&self, skill: &SkillEntry) -> Result<LoadedSkill, ClientError> {
        if !skill.uri.ends_with(&format!("/{SKILL_MD}")) {
            return Err(refuse(&skill.uri, "a skill's uri names its SKILL.md"));
        }
        let file = self.read_skill_file(skill, &skill.uri).await?;
        let text = file
            .text()
            .ok_or_else(|| refuse(&skill.uri, "SKILL.md is not UTF-8 text"))?;
        let frontmatter =
            mcp_skills::parse_frontmatter(text).map_err(|e| refuse(&skill.uri, e.to_string()))?;
        let differ = differing_fields(&frontmatter, &skill.frontmatter);
        if !differ.is_empty() {
            return Err(refuse(
                &skill.uri,
                format!(
                    "the file's frontmatter differs from the entry's in: {}",
                    differ.join(", ")
                ),
            ));
        }
        let body = mcp_skills::skill_body(text).unwrap_or_default().to_owned();
        Ok(LoadedSkill {
            entry: skill.clone(),
            frontmatter,
            body,
            file,
        })
    }
}

/// The keys whose values differ between two frontmatters (a missing key equals `null`).
fn differing_fields(file: &JsonObject, entry: &JsonObject) -> Vec<String> {
    let mut keys: Vec<&String> = file.keys().chain(entry.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| file.get(*k).unwrap_or(&Value::Null) != entry.get(*k).unwrap_or(&Value::Null))
        .cloned()
        .collect()
}
