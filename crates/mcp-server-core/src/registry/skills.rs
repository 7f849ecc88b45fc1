//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) served from a directory:
//! [`McpServer::skills_dir`](super::McpServer::skills_dir).
//!
//! Every directory below the root that holds a `SKILL.md` is a skill; its path from the root is
//! its skill path (`pdf-processing`, `acme/pdf-processing`), its last segment its name, which
//! must equal the frontmatter's `name`. Each file of a skill (everything below its directory
//! except hidden files and nested skills) is a resource `skill://<skill-path>/<file>`, read
//! with `resources/read`; the `SKILL.md`s are also listed by `resources/list`. The catalog is
//! read once, when the server is built: contents, digests and sizes stay what `skills/list`
//! published, and only the URIs it published are ever served, so no request can name a path
//! outside the directory (`..` segments, absolute paths and symbolic links leaving the root are
//! refused when the catalog is built, and match nothing when requested).

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use mcp_skills::{parse_frontmatter, sha256_digest};
use mcp_types::JsonObject;
use mcp_types::content::ResourceContents;
use mcp_types::error::ErrorObject;
use mcp_types::ext::skills::{
    self as wire, DIRECTORY_MIME_TYPE, DirectoryReadResult, GetSkillResult, ListSkillsResult,
    SKILL_MD, SkillEntry, SkillFile, SkillResources,
};
use mcp_types::resources::{ReadResourceResult, Resource};
use mcp_types::version::Era;
use serde_json::Value;

use super::BuildError;
use crate::service::resource_not_found;

/// What [`McpServer::skills_dir`](super::McpServer::skills_dir) loads at most. A directory
/// over a limit fails the build ([`BuildError`] naming the limit and the skill), so a server
/// never starts with a catalog it would serve only in part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsLimits {
    /// Skills in the directory (default 1,000).
    pub max_skills: usize,
    /// Files of one skill, its `SKILL.md` included (default 512, the extension's SHOULD).
    pub max_files_per_skill: usize,
    /// Bytes of one skill, summed over its files (default 16 MiB, the extension's SHOULD).
    pub max_skill_bytes: u64,
    /// Bytes of every skill together, all held in memory (default 64 MiB).
    pub max_total_bytes: u64,
    /// Directory levels below the root (default 16).
    pub max_depth: usize,
}

impl Default for SkillsLimits {
    fn default() -> Self {
        SkillsLimits {
            max_skills: 1_000,
            max_files_per_skill: 512,
            max_skill_bytes: 16 * 1024 * 1024,
            max_total_bytes: 64 * 1024 * 1024,
            max_depth: 16,
        }
    }
}

struct File {
    bytes: Vec<u8>,
    mime_type: &'static str,
}

/// Every skill of a directory, read once.
pub(crate) struct SkillCatalog {
    /// By `SKILL.md` URI, in URI order.
    entries: Vec<SkillEntry>,
    index: HashMap<String, usize>,
    /// `resources/list` entries of the `SKILL.md`s.
    listed: Vec<Resource>,
    files: HashMap<String, File>,
    /// Directory URI → its direct children.
    directories: HashMap<String, Vec<Resource>>,
}

impl fmt::Debug for SkillCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkillCatalog")
            .field("skills", &self.index.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// `unreserved` of RFC 3986 stays, everything else is percent-encoded.
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn mime_type(name: &str, bytes: &[u8]) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(chunk.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(chunk.get(2).copied().unwrap_or(0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// What the walk found below the root.
struct Walk<'a> {
    root: PathBuf,
    limits: &'a SkillsLimits,
    total_bytes: u64,
}

/// One entry of a directory: a file or a directory (symbolic links resolved, and refused when
/// they leave the root).
enum Node {
    File(PathBuf),
    Dir(PathBuf),
}

impl Walk<'_> {
    fn fail(&self, path: &Path, message: impl fmt::Display) -> BuildError {
        BuildError(format!("skills directory: {}: {message}", path.display()))
    }

    /// The visible entries of `dir`, sorted by name.
    fn children(&self, dir: &Path) -> Result<Vec<(String, Node)>, BuildError> {
        let mut out = Vec::new();
        let entries = fs::read_dir(dir).map_err(|e| self.fail(dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| self.fail(dir, e))?;
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(self.fail(&path, "the file name is not UTF-8"));
            };
            if name.starts_with('.') {
                continue;
            }
            let meta = fs::symlink_metadata(&path).map_err(|e| self.fail(&path, e))?;
            let meta = if meta.file_type().is_symlink() {
                let target = fs::canonicalize(&path).map_err(|e| self.fail(&path, e))?;
                if !target.starts_with(&self.root) {
                    return Err(self.fail(
                        &path,
                        format!(
                            "a symbolic link to {}, outside the skills directory; skills serve only what is inside it",
                            target.display()
                        ),
                    ));
                }
                fs::metadata(&target).map_err(|e| self.fail(&path, e))?
            } else {
                meta
            };
            if meta.is_dir() {
                out.push((name, Node::Dir(path)));
            } else if meta.is_file() {
                out.push((name, Node::File(path)));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Finds every skill directory below `dir` (`segments` is its skill path so far).
    fn find_skills(
        &self,
        dir: &Path,
        segments: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, PathBuf)>,
    ) -> Result<(), BuildError> {
        if segments.len() > self.limits.max_depth {
            return Err(self.fail(
                dir,
                format!(
                    "deeper than SkillsLimits::max_depth ({})",
                    self.limits.max_depth
                ),
            ));
        }
        let children = self.children(dir)?;
        if !segments.is_empty()
            && children
                .iter()
                .any(|(name, node)| name == SKILL_MD && matches!(node, Node::File(_)))
        {
            out.push((segments.clone(), dir.to_path_buf()));
            if out.len() > self.limits.max_skills {
                return Err(self.fail(
                    &self.root,
                    format!(
                        "more than SkillsLimits::max_skills ({}) skills",
                        self.limits.max_skills
                    ),
                ));
            }
        }
        for (name, node) in children {
            if let Node::Dir(path) = node {
                segments.push(name);
                self.find_skills(&path, segments, out)?;
                segments.pop();
            }
        }
        Ok(())
    }
}

/// A skill's name follows the Agent Skills naming rules.
fn check_name(walk: &Walk<'_>, dir: &Path, name: &str) -> Result<(), BuildError> {
    if !wire::valid_skill_name(name) {
        return Err(walk.fail(
            dir,
            format!(
                "`{name}` is not a valid skill name (1-64 lowercase letters, digits and single hyphens, no hyphen first or last)"
            ),
        ));
    }
    Ok(())
}

/// What a skill's `SKILL.md` gives its entry and its listing.
struct SkillMd {
    /// Its size in bytes.
    size: u64,
    frontmatter: JsonObject,
    /// The frontmatter's `name` and `description`.
    name: String,
    description: String,
}

impl SkillCatalog {
    /// Reads every skill below `root`.
    pub(crate) fn load(root: &Path, limits: &SkillsLimits) -> Result<Self, BuildError> {
        let root = fs::canonicalize(root)
            .map_err(|e| BuildError(format!("skills directory: {}: {e}", root.display())))?;
        if !root.is_dir() {
            return Err(BuildError(format!(
                "skills directory: {} is not a directory",
                root.display()
            )));
        }
        let mut walk = Walk {
            root: root.clone(),
            limits,
            total_bytes: 0,
        };
        let mut found = Vec::new();
        walk.find_skills(&root, &mut Vec::new(), &mut found)?;
        let skill_dirs: Vec<PathBuf> = found.iter().map(|(_, dir)| dir.clone()).collect();
        let mut catalog = SkillCatalog {
            entries: Vec::new(),
            index: HashMap::new(),
            listed: Vec::new(),
            files: HashMap::new(),
            directories: HashMap::new(),
        };
        for (segments, dir) in &found {
            catalog.add_skill(&mut walk, segments, dir, &skill_dirs)?;
        }
        catalog.entries.sort_by(|a, b| a.uri.cmp(&b.uri));
        catalog.listed.sort_by(|a, b| a.uri.cmp(&b.uri));
        catalog.index = catalog
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.uri.clone(), i))
            .collect();
        Ok(catalog)
    }

    /// Adds the skill in `dir` (`segments` is its skill path): its name checked, its files
    /// walked and read, its `SKILL.md` frontmatter read, then its entry published.
    fn add_skill(
        &mut self,
        walk: &mut Walk<'_>,
        segments: &[String],
        dir: &Path,
        skill_dirs: &[PathBuf],
    ) -> Result<(), BuildError> {
        let path: Vec<String> = segments.iter().map(|s| encode_segment(s)).collect();
        let base = format!("{}{}", wire::SCHEME, path.join("/"));
        let skill_uri = format!("{base}/{SKILL_MD}");
        let name = segments.last().map(String::as_str).unwrap_or_default();
        let skill_md_path = dir.join(SKILL_MD);
        check_name(walk, dir, name)?;
        let files = self.list_files(walk, dir, &base, skill_dirs)?;
        let manifest = self.read_files(walk, dir, files)?;
        self.type_directory_children();
        let skill_md = self.read_skill_md(walk, &skill_uri, &skill_md_path, name)?;
        self.publish(skill_uri, skill_md, manifest);
        Ok(())
    }

    /// The files of a skill, depth first, without the nested skills (each is its own), sorted
    /// by URI; every directory on the way gets its listing.
    fn list_files(
        &mut self,
        walk: &Walk<'_>,
        dir: &Path,
        base: &str,
        skill_dirs: &[PathBuf],
    ) -> Result<Vec<(String, PathBuf)>, BuildError> {
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        let mut stack = vec![(dir.to_path_buf(), base.to_owned())];
        while let Some((current, uri)) = stack.pop() {
            let mut children = Vec::new();
            for (child, node) in walk.children(&current)? {
                let child_uri = format!("{uri}/{}", encode_segment(&child));
                match node {
                    Node::Dir(sub) => {
                        if sub.components().count() - walk.root.components().count()
                            > walk.limits.max_depth
                        {
                            return Err(walk.fail(
                                &sub,
                                format!(
                                    "deeper than SkillsLimits::max_depth ({})",
                                    walk.limits.max_depth
                                ),
                            ));
                        }
                        children.push(Resource {
                            uri: child_uri.clone(),
                            name: child.clone(),
                            mime_type: Some(DIRECTORY_MIME_TYPE.to_owned()),
                            ..resource()
                        });
                        if !skill_dirs.iter().any(|d| d == &sub) {
                            stack.push((sub, child_uri));
                        }
                    }
                    Node::File(file) => {
                        let size = fs::metadata(&file).map_err(|e| walk.fail(&file, e))?.len();
                        children.push(Resource {
                            uri: child_uri.clone(),
                            name: child.clone(),
                            size: Some(size),
                            ..resource()
                        });
                        files.push((child_uri, file));
                    }
                }
            }
            self.directories.insert(uri, children);
        }
        if files.len() > walk.limits.max_files_per_skill {
            return Err(walk.fail(
                dir,
                format!(
                    "{} files, more than SkillsLimits::max_files_per_skill ({})",
                    files.len(),
                    walk.limits.max_files_per_skill
                ),
            ));
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(files)
    }

    /// Reads the files within the byte limits, keeps them to serve, and returns the manifest
    /// of their digests and sizes.
    fn read_files(
        &mut self,
        walk: &mut Walk<'_>,
        dir: &Path,
        files: Vec<(String, PathBuf)>,
    ) -> Result<Vec<SkillFile>, BuildError> {
        let mut manifest = Vec::with_capacity(files.len());
        let mut skill_bytes = 0u64;
        for (uri, file) in files {
            let bytes = fs::read(&file).map_err(|e| walk.fail(&file, e))?;
            let size = bytes.len() as u64;
            skill_bytes += size;
            walk.total_bytes += size;
            if skill_bytes > walk.limits.max_skill_bytes {
                return Err(walk.fail(
                    dir,
                    format!(
                        "more than SkillsLimits::max_skill_bytes ({}) bytes",
                        walk.limits.max_skill_bytes
                    ),
                ));
            }
            if walk.total_bytes > walk.limits.max_total_bytes {
                return Err(walk.fail(
                    &walk.root,
                    format!(
                        "more than SkillsLimits::max_total_bytes ({}) bytes of skills",
                        walk.limits.max_total_bytes
                    ),
                ));
            }
            let file_name = uri.rsplit('/').next().unwrap_or_default();
            let mime_type = mime_type(file_name, &bytes);
            manifest.push(SkillFile {
                uri: uri.clone(),
                digest: sha256_digest(&bytes),
                size,
            });
            self.files.insert(uri, File { bytes, mime_type });
        }
        Ok(manifest)
    }

    /// Gives each file listed in a directory the MIME type its contents were given.
    fn type_directory_children(&mut self) {
        for children in self.directories.values_mut() {
            for child in children.iter_mut() {
                if child.mime_type.is_none() {
                    child.mime_type = self.files.get(&child.uri).map(|f| f.mime_type.to_owned());
                }
            }
        }
    }

    /// The skill's `SKILL.md`, read: its frontmatter has a non-empty `name`, equal to the
    /// directory's, and a non-empty `description`.
    fn read_skill_md(
        &self,
        walk: &Walk<'_>,
        skill_uri: &str,
        skill_md_path: &Path,
        name: &str,
    ) -> Result<SkillMd, BuildError> {
        let text = self
            .files
            .get(skill_uri)
            .map(|f| String::from_utf8(f.bytes.clone()))
            .ok_or_else(|| walk.fail(skill_md_path, "missing"))?
            .map_err(|_| walk.fail(skill_md_path, "not UTF-8 text"))?;
        let frontmatter = parse_frontmatter(&text).map_err(|e| walk.fail(skill_md_path, e))?;
        let field = |key: &str| {
            frontmatter
                .get(key)
                .and_then(Value::as_str)
                .filter(|v| !v.trim().is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    walk.fail(
                        skill_md_path,
                        format!("the frontmatter needs a non-empty string `{key}`"),
                    )
                })
        };
        let (fm_name, description) = (field("name")?, field("description")?);
        if fm_name != name {
            return Err(walk.fail(
                skill_md_path,
                format!(
                    "the frontmatter names the skill `{fm_name}` but its directory is `{name}`; they must be equal"
                ),
            ));
        }
        Ok(SkillMd {
            size: text.len() as u64,
            frontmatter,
            name: fm_name,
            description,
        })
    }

    /// Lists the skill's `SKILL.md` and adds its entry.
    fn publish(&mut self, skill_uri: String, skill_md: SkillMd, manifest: Vec<SkillFile>) {
        self.listed.push(Resource {
            uri: skill_uri.clone(),
            name: skill_md.name,
            description: Some(skill_md.description),
            mime_type: Some("text/markdown".to_owned()),
            size: Some(skill_md.size),
            ..resource()
        });
        self.entries.push(SkillEntry {
            uri: skill_uri,
            frontmatter: skill_md.frontmatter,
            resources: SkillResources::Files(manifest),
            meta: None,
            extra: JsonObject::new(),
        });
    }

    /// The `SKILL.md` resources `resources/list` shows.
    pub(crate) fn listed(&self) -> &[Resource] {
        &self.listed
    }

    /// Whether `uri` is one of the catalog's files.
    pub(crate) fn serves(&self, uri: &str) -> bool {
        self.files.contains_key(uri)
    }

    /// `resources/read` of one of the catalog's files: UTF-8 as text, anything else as a blob.
    pub(crate) fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        let file = self.files.get(uri)?;
        let contents = match std::str::from_utf8(&file.bytes) {
            Ok(text) => ResourceContents::text(uri, text),
            Err(_) => ResourceContents::blob(uri, base64(&file.bytes)),
        }
        .with_mime_type(file.mime_type);
        Some(ReadResourceResult {
            contents: vec![contents],
            ..Default::default()
        })
    }

    /// `skills/list`, one page.
    pub(crate) fn list(
        &self,
        params: &JsonObject,
        page_size: usize,
    ) -> Result<ListSkillsResult, ErrorObject> {
        let cursor = optional_string(params, "cursor")?;
        let (skills, next) = page(&self.entries, cursor, page_size)?;
        Ok(ListSkillsResult::new(skills, next))
    }

    /// `skills/get`.
    pub(crate) fn get(&self, params: &JsonObject) -> Result<GetSkillResult, ErrorObject> {
        let uri = required_uri(params, wire::SKILLS_GET)?;
        match self.index.get(uri) {
            Some(i) => Ok(GetSkillResult::new(self.entries[*i].clone())),
            None => Err(ErrorObject::invalid_params(format!(
                "Unknown skill: {uri} (skills/list names the skills this server serves)"
            ))
            .with_data(serde_json::json!({ "uri": uri }))),
        }
    }

    /// `resources/directory/read`, one page.
    pub(crate) fn directory(
        &self,
        era: Era,
        params: &JsonObject,
        page_size: usize,
    ) -> Result<DirectoryReadResult, ErrorObject> {
        let uri = required_uri(params, wire::RESOURCES_DIRECTORY_READ)?;
        let cursor = optional_string(params, "cursor")?;
        match self.directories.get(uri) {
            Some(children) => {
                let (resources, next) = page(children, cursor, page_size)?;
                Ok(DirectoryReadResult::new(resources, next))
            }
            None if self.files.contains_key(uri) => Err(ErrorObject::invalid_params(format!(
                "{uri} is a file, not a directory; read it with resources/read"
            ))
            .with_data(serde_json::json!({ "uri": uri }))),
            None => {
                let mut error = resource_not_found(era, uri);
                error.code = mcp_types::ErrorCode::INVALID_PARAMS;
                error.message = format!("{uri} is not a directory this server serves");
                Err(error)
            }
        }
    }
}

fn resource() -> Resource {
    Resource {
        uri: String::new(),
        name: String::new(),
        title: None,
        description: None,
        mime_type: None,
        size: None,
        icons: None,
        annotations: None,
        meta: None,
        extra: JsonObject::new(),
    }
}

fn optional_string<'a>(params: &'a JsonObject, key: &str) -> Result<Option<&'a str>, ErrorObject> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ErrorObject::invalid_params(format!(
            "`{key}` must be a string"
        ))),
    }
}

fn required_uri<'a>(params: &'a JsonObject, method: &str) -> Result<&'a str, ErrorObject> {
    optional_string(params, "uri")?
        .ok_or_else(|| ErrorObject::invalid_params(format!("{method} needs a string `uri`")))
}

fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|start| *start <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {c:?}")))?,
    };
    let end = start.saturating_add(page_size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

/// The capability settings: `directoryRead` is always served.
pub(crate) fn capability() -> JsonObject {
    let mut settings = JsonObject::new();
    settings.insert(wire::DIRECTORY_READ.to_owned(), Value::Bool(true));
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_the_standard_does() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xff, 0xfe, 0x00, 0x01]), "//4AAQ==");
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(encode_segment("a b/c%.md"), "a%20b%2Fc%25.md");
    }
}
