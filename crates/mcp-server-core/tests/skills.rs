//! The Skills extension served from a directory (`McpServer::skills_dir`), on the wire of both
//! eras: capability, `skills/list`, `skills/get`, `resources/read`, `resources/directory/read`,
//! the refusals, and that nothing outside the directory is served.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{TestClient, with_meta};
use mcp_server_core::registry::{McpServer, SkillsLimits};
use serde_json::{Value, json};

const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  author: acme\n---\n\n# PDF\n\nSee references/FORMS.md.\n";
const FORMS_MD: &str = "Supporting content.\n";
const BLOB: &[u8] = &[0xff, 0x00, 0xfe];
const NOTES_MD: &str = "---\nname: release-notes\ndescription: Write release notes\n---\nBody\n";

/// A fresh directory under the system's temp dir, named for the test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-skills-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// `pdf-processing` (SKILL.md, references/FORMS.md, data.bin) and `acme/release-notes`.
fn catalog(test: &str) -> PathBuf {
    let root = scratch(test);
    write(&root.join("pdf-processing/SKILL.md"), SKILL_MD.as_bytes());
    write(
        &root.join("pdf-processing/references/FORMS.md"),
        FORMS_MD.as_bytes(),
    );
    write(&root.join("pdf-processing/data.bin"), BLOB);
    write(&root.join("pdf-processing/.hidden"), b"never served");
    write(
        &root.join("acme/release-notes/SKILL.md"),
        NOTES_MD.as_bytes(),
    );
    root
}

/// `sha256:<hex>` by ring, independently of the SDK's own digest.
fn digest(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn service(root: &Path) -> mcp_server_core::Service {
    McpServer::new("skills-test")
        .version("1.0")
        .skills_dir(root)
        .into_service()
        .unwrap()
}

fn pdf_entry() -> Value {
    json!({
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents",
            "metadata": {"author": "acme"}
        },
        "resources": [
            {"uri": "skill://pdf-processing/SKILL.md", "digest": digest(SKILL_MD.as_bytes()), "size": SKILL_MD.len()},
            {"uri": "skill://pdf-processing/data.bin", "digest": digest(BLOB), "size": 3},
            {"uri": "skill://pdf-processing/references/FORMS.md", "digest": digest(FORMS_MD.as_bytes()), "size": FORMS_MD.len()},
        ]
    })
}

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

#[tokio::test]
async fn discover_declares_the_extension_with_directory_read_and_resources() {
    let root = catalog("discover");
    let mut c = TestClient::new(&service(&root));
    let r = c.modern("server/discover", json!({}), json!({})).await;
    let caps = &r["result"]["capabilities"];
    assert_eq!(
        caps["extensions"],
        json!({"io.modelcontextprotocol/skills": {"directoryRead": true}})
    );
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
}

#[tokio::test]
async fn skills_list_and_get_answer_entries_with_digests_and_cache_hints() {
    let root = catalog("list");
    let mut c = TestClient::new(&service(&root));
    let r = c.modern("skills/list", json!({}), json!({})).await;
    let mut result = r["result"].clone();
    assert_eq!(
        result.as_object_mut().unwrap().remove("_meta").unwrap()[SERVER_INFO],
        json!({"name": "skills-test", "version": "1.0"})
    );
    assert_eq!(
        result,
        json!({
            "skills": [
                {
                    "uri": "skill://acme/release-notes/SKILL.md",
                    "frontmatter": {"name": "release-notes", "description": "Write release notes"},
                    "resources": [{
                        "uri": "skill://acme/release-notes/SKILL.md",
                        "digest": digest(NOTES_MD.as_bytes()),
                        "size": NOTES_MD.len()
                    }]
                },
                pdf_entry(),
            ],
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private"
        })
    );

    let r = c
        .modern(
            "skills/get",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
            json!({}),
        )
        .await;
    assert_eq!(r["result"]["skill"], pdf_entry());
    assert_eq!(r["result"]["ttlMs"], 0);
    assert_eq!(r["result"]["cacheScope"], "private");
    assert!(r["result"].get("nextCursor").is_none());

    let r = c
        .modern(
            "skills/get",
            json!({"uri": "skill://nope/SKILL.md"}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32602,
            "message": "Unknown skill: skill://nope/SKILL.md (skills/list names the skills this server serves)",
            "data": {"uri": "skill://nope/SKILL.md"}})
    );
    let r = c.modern("skills/get", json!({}), json!({})).await;
    assert_eq!(
        r["error"],
        json!({"code": -32602, "message": "skills/get needs a string `uri`"})
    );
}

#[tokio::test]
async fn skills_list_pages_by_the_server_page_size() {
    let root = catalog("pages");
    let service = McpServer::new("skills-test")
        .page_size(1)
        .skills_dir(&root)
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    let first = c.modern("skills/list", json!({}), json!({})).await;
    assert_eq!(first["result"]["nextCursor"], "1");
    assert_eq!(
        first["result"]["skills"][0]["uri"],
        "skill://acme/release-notes/SKILL.md"
    );
    let second = c
        .modern("skills/list", json!({"cursor": "1"}), json!({}))
        .await;
    assert_eq!(second["result"]["skills"][0], pdf_entry());
    assert!(second["result"].get("nextCursor").is_none());
    let bad = c
        .modern("skills/list", json!({"cursor": "x"}), json!({}))
        .await;
    assert_eq!(
        bad["error"],
        json!({"code": -32602, "message": "Invalid cursor: \"x\""})
    );
}

#[tokio::test]
async fn skill_files_are_resources_and_skill_mds_are_listed() {
    let root = catalog("read");
    let mut c = TestClient::new(&service(&root));
    let r = c
        .modern(
            "resources/read",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["result"]["contents"],
        json!([{"uri": "skill://pdf-processing/SKILL.md", "mimeType": "text/markdown", "text": SKILL_MD}])
    );
    let r = c
        .modern(
            "resources/read",
            json!({"uri": "skill://pdf-processing/data.bin"}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["result"]["contents"],
        json!([{"uri": "skill://pdf-processing/data.bin", "mimeType": "application/octet-stream", "blob": "/wD+"}])
    );
    let r = c.modern("resources/list", json!({}), json!({})).await;
    assert_eq!(
        r["result"]["resources"],
        json!([
            {"uri": "skill://acme/release-notes/SKILL.md", "name": "release-notes", "description": "Write release notes", "mimeType": "text/markdown", "size": NOTES_MD.len()},
            {"uri": "skill://pdf-processing/SKILL.md", "name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents", "mimeType": "text/markdown", "size": SKILL_MD.len()},
        ])
    );
}

#[tokio::test]
async fn nothing_outside_the_directory_or_unlisted_is_served() {
    let root = catalog("traversal");
    // A file next to the skills directory, which a `..` would reach on a naive server.
    write(&root.join("../secret.txt"), b"secret");
    let mut c = TestClient::new(&service(&root));
    for uri in [
        "skill://pdf-processing/../../secret.txt",
        "skill://pdf-processing/references/../SKILL.md",
        "skill://pdf-processing/.hidden",
        "skill://pdf-processing/%2E%2E/secret.txt",
        "skill:///etc/passwd",
        "file:///etc/passwd",
    ] {
        let r = c
            .modern("resources/read", json!({"uri": uri}), json!({}))
            .await;
        assert_eq!(
            r["error"],
            json!({"code": -32602, "message": "Resource not found", "data": {"uri": uri}}),
            "{uri}"
        );
    }
}

#[tokio::test]
async fn a_symbolic_link_out_of_the_directory_fails_the_build() {
    let root = catalog("symlink");
    let outside = scratch("symlink-outside");
    write(&outside.join("passwd"), b"root:x:0:0");
    std::os::unix::fs::symlink(
        outside.join("passwd"),
        root.join("pdf-processing/references/passwd"),
    )
    .unwrap();
    let error = McpServer::new("s")
        .skills_dir(&root)
        .into_service()
        .unwrap_err()
        .0;
    assert!(
        error.ends_with(&format!(
            "references/passwd: a symbolic link to {}, outside the skills directory; skills serve only what is inside it",
            fs::canonicalize(outside.join("passwd")).unwrap().display()
        )),
        "{error}"
    );
    // A link that stays inside is served like the file it names.
    fs::remove_file(root.join("pdf-processing/references/passwd")).unwrap();
    std::os::unix::fs::symlink(
        root.join("pdf-processing/references/FORMS.md"),
        root.join("pdf-processing/references/ALIAS.md"),
    )
    .unwrap();
    let mut c = TestClient::new(&service(&root));
    let r = c
        .modern(
            "resources/read",
            json!({"uri": "skill://pdf-processing/references/ALIAS.md"}),
            json!({}),
        )
        .await;
    assert_eq!(r["result"]["contents"][0]["text"], FORMS_MD);
}

#[tokio::test]
async fn directory_read_lists_direct_children_and_refuses_files() {
    let root = catalog("directory");
    let mut c = TestClient::new(&service(&root));
    let r = c
        .modern(
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing"}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["result"]["resources"],
        json!([
            {"uri": "skill://pdf-processing/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": SKILL_MD.len()},
            {"uri": "skill://pdf-processing/data.bin", "name": "data.bin", "mimeType": "application/octet-stream", "size": 3},
            {"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"},
        ])
    );
    assert_eq!(r["result"]["ttlMs"], 0);
    let r = c
        .modern(
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing/references"}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["result"]["resources"],
        json!([{"uri": "skill://pdf-processing/references/FORMS.md", "name": "FORMS.md", "mimeType": "text/markdown", "size": FORMS_MD.len()}])
    );
    let r = c
        .modern(
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32602,
            "message": "skill://pdf-processing/SKILL.md is a file, not a directory; read it with resources/read",
            "data": {"uri": "skill://pdf-processing/SKILL.md"}})
    );
    let r = c
        .modern(
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing/.."}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32602,
            "message": "skill://pdf-processing/.. is not a directory this server serves",
            "data": {"uri": "skill://pdf-processing/.."}})
    );
    let r = c
        .modern("resources/directory/read", json!({"uri": 5}), json!({}))
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32602, "message": "`uri` must be a string"})
    );
}

#[tokio::test]
async fn a_legacy_session_sees_the_extension_without_modern_fields() {
    let root = catalog("legacy");
    let mut c = TestClient::new(&service(&root));
    let init = c.initialize("2025-11-25", json!({})).await;
    assert_eq!(
        init["result"]["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/skills": {"directoryRead": true}})
    );
    let r = c
        .request(
            "skills/get",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
        )
        .await;
    assert_eq!(r["result"], json!({"skill": pdf_entry()}));
}

#[tokio::test]
async fn without_skills_the_methods_do_not_exist() {
    let service = McpServer::new("plain")
        .resource(
            mcp_server_core::registry::ResourceDef::new("test://a", "a")
                .handler(|_ctx| async { Ok::<_, String>("a".to_owned()) }),
        )
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    let r = c.modern("skills/list", json!({}), json!({})).await;
    assert_eq!(r["error"]["code"], -32601);
    let r = c
        .request("skills/list", with_meta(json!({}), json!({})))
        .await;
    assert_eq!(r["error"]["code"], -32601);
}

#[test]
fn mistakes_in_the_directory_fail_the_build_naming_the_file() {
    let build = |root: &Path, limits: SkillsLimits| {
        McpServer::new("s")
            .skills_dir(root)
            .skills_limits(limits)
            .into_service()
            .unwrap_err()
            .0
    };
    let root = scratch("mismatch");
    write(
        &root.join("pdf/SKILL.md"),
        b"---\nname: other\ndescription: d\n---\n",
    );
    let e = build(&root, SkillsLimits::default());
    assert!(
        e.ends_with("pdf/SKILL.md: the frontmatter names the skill `other` but its directory is `pdf`; they must be equal"),
        "{e}"
    );

    let root = scratch("no-frontmatter");
    write(&root.join("pdf/SKILL.md"), b"# no frontmatter\n");
    let e = build(&root, SkillsLimits::default());
    assert!(
        e.ends_with("pdf/SKILL.md: SKILL.md frontmatter, line 1: a SKILL.md must begin with a `---` line opening its YAML frontmatter"),
        "{e}"
    );

    let root = scratch("no-description");
    write(&root.join("pdf/SKILL.md"), b"---\nname: pdf\n---\n");
    let e = build(&root, SkillsLimits::default());
    assert!(
        e.ends_with("pdf/SKILL.md: the frontmatter needs a non-empty string `description`"),
        "{e}"
    );

    let root = scratch("bad-name");
    write(
        &root.join("Pdf_Tools/SKILL.md"),
        b"---\nname: Pdf_Tools\ndescription: d\n---\n",
    );
    let e = build(&root, SkillsLimits::default());
    assert!(e.contains("`Pdf_Tools` is not a valid skill name"), "{e}");

    let root = catalog("limits");
    let e = build(
        &root,
        SkillsLimits {
            max_files_per_skill: 2,
            ..SkillsLimits::default()
        },
    );
    assert!(
        e.ends_with("pdf-processing: 3 files, more than SkillsLimits::max_files_per_skill (2)"),
        "{e}"
    );
    let e = build(
        &root,
        SkillsLimits {
            max_skill_bytes: 50,
            ..SkillsLimits::default()
        },
    );
    assert!(
        e.ends_with("more than SkillsLimits::max_skill_bytes (50) bytes"),
        "{e}"
    );
    let e = build(&root.join("missing"), SkillsLimits::default());
    assert!(e.starts_with("skills directory: "), "{e}");
}
