//! The Skills extension on the client: what it sends, that it verifies every file it reads
//! against the entry (size, digest, frontmatter) and refuses what does not match, and the
//! same calls against a real `McpServer::skills_dir` in memory.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mcp_client::MemoryTransport;
use mcp_client::{BoxFuture, Client, ClientError, Mode, Transport};
use mcp_types::JsonRpcMessage;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";
const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_MD: &str = "Supporting content.\n";

type Log = Arc<Mutex<Vec<Value>>>;
type Script = dyn Fn(&Value) -> Option<Value> + Send + Sync;

/// A server that answers each request with its script, recording what the client sent.
struct Fake {
    script: Box<Script>,
    sent: Log,
    tx: mpsc::UnboundedSender<JsonRpcMessage>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<JsonRpcMessage>>,
}

impl Transport for Fake {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        let value = message.to_value();
        self.sent.lock().unwrap().push(value.clone());
        if let Some(mut reply) = (self.script)(&value) {
            reply["jsonrpc"] = json!("2.0");
            reply["id"] = value["id"].clone();
            let _ = self.tx.send(JsonRpcMessage::from_value(&reply).unwrap());
        }
        Box::pin(async { Ok(()) })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.rx.lock().await.recv().await })
    }
}

fn digest(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The entry the server lists, for the files `skill_md` and `FORMS_MD`.
fn entry(skill_md: &str) -> Value {
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": SKILL_URI, "digest": digest(skill_md.as_bytes()), "size": skill_md.len()},
            {"uri": FORMS_URI, "digest": digest(FORMS_MD.as_bytes()), "size": FORMS_MD.len()},
        ]
    })
}

/// A client whose server lists `listed` (the SKILL.md the entry describes) and serves `served`.
async fn scripted(listed: &'static str, served: &'static str) -> (Client, Log) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sent: Log = Arc::new(Mutex::new(Vec::new()));
    let fake = Fake {
        script: Box::new(move |m| match m["method"].as_str()? {
            "skills/list" => Some(json!({"result": {"resultType": "complete", "ttlMs": 0,
                "cacheScope": "private", "skills": [entry(listed)]}})),
            "skills/get" => Some(json!({"result": {"resultType": "complete", "ttlMs": 0,
                "cacheScope": "private", "skill": entry(listed)}})),
            "resources/read" => {
                let uri = m["params"]["uri"].as_str()?;
                let text = if uri == FORMS_URI { FORMS_MD } else { served };
                Some(
                    json!({"result": {"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}}),
                )
            }
            _ => None,
        }),
        sent: sent.clone(),
        tx,
        rx: tokio::sync::Mutex::new(rx),
    };
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(fake)
        .await
        .unwrap();
    (client, sent)
}

fn methods(sent: &Log) -> Vec<(String, Value)> {
    sent.lock()
        .unwrap()
        .iter()
        .map(|m| {
            let mut params = m["params"].clone();
            params.as_object_mut().map(|p| p.remove("_meta"));
            (m["method"].as_str().unwrap_or("").to_owned(), params)
        })
        .collect()
}

#[tokio::test]
async fn listing_reads_no_file_and_loading_verifies_then_reads() {
    let (client, sent) = scripted(SKILL_MD, SKILL_MD).await;
    let skills = client.list_all_skills().await.unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(methods(&sent), [("skills/list".to_owned(), json!({}))]);
    let envelope = sent.lock().unwrap()[0]["params"]["_meta"].clone();
    assert_eq!(
        envelope["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );

    let loaded = client.load_skill(&skills[0]).await.unwrap();
    assert_eq!(loaded.body, "\nSkill body.\n");
    assert_eq!(loaded.frontmatter["name"], "pdf-processing");
    assert!(loaded.file.verified);
    let forms = client.read_skill_file(&skills[0], FORMS_URI).await.unwrap();
    assert_eq!(forms.text(), Some(FORMS_MD));
    assert_eq!(
        methods(&sent)[1..],
        [
            ("resources/read".to_owned(), json!({"uri": SKILL_URI})),
            ("resources/read".to_owned(), json!({"uri": FORMS_URI})),
        ]
    );
    let got = client.get_skill(SKILL_URI).await.unwrap();
    assert_eq!(got, skills[0]);
    assert_eq!(
        methods(&sent)[3],
        ("skills/get".to_owned(), json!({"uri": SKILL_URI}))
    );
}

#[tokio::test]
async fn a_file_that_does_not_match_its_entry_is_refused() {
    let tampered: &'static str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nEvil body!!\n";
    let (client, _) = scripted(SKILL_MD, tampered).await;
    let skill = &client.list_all_skills().await.unwrap()[0];
    let error = client.load_skill(skill).await.unwrap_err();
    assert_eq!(
        error,
        ClientError::SkillVerification {
            uri: SKILL_URI.into(),
            reason: format!(
                "the content's digest is {}; the entry lists {}",
                digest(tampered.as_bytes()),
                digest(SKILL_MD.as_bytes())
            ),
        }
    );

    let longer: &'static str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\nextra\n";
    let (client, _) = scripted(SKILL_MD, longer).await;
    let skill = &client.list_all_skills().await.unwrap()[0];
    assert_eq!(
        client.load_skill(skill).await.unwrap_err().to_string(),
        format!(
            "skill file {SKILL_URI} refused: the server sent {} bytes; the entry lists {}",
            longer.len(),
            SKILL_MD.len()
        )
    );

    // Digest and size match the file, but its frontmatter is not the entry's.
    let other: &'static str =
        "---\nname: pdf-processing\ndescription: Exfiltrate credentials\n---\n\nSkill body.\n";
    let (client, _) = scripted(other, other).await;
    let skill = &client.list_all_skills().await.unwrap()[0];
    assert_eq!(
        client.load_skill(skill).await.unwrap_err().to_string(),
        format!(
            "skill file {SKILL_URI} refused: the file's frontmatter differs from the entry's in: description"
        )
    );

    let (client, sent) = scripted(SKILL_MD, SKILL_MD).await;
    let skill = &client.list_all_skills().await.unwrap()[0];
    let error = client
        .read_skill_file(skill, "skill://pdf-processing/../secrets")
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "skill file skill://pdf-processing/../secrets refused: not one of the files the entry of skill://pdf-processing/SKILL.md lists"
    );
    // Refused before anything was sent.
    assert_eq!(methods(&sent).len(), 1);
}

fn examples_skills() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/skills")
}

#[tokio::test]
async fn against_a_skills_dir_server_every_skill_loads_on_both_eras() {
    let service = mcp_server_core::registry::McpServer::new("skills")
        .skills_dir(examples_skills())
        .into_service()
        .unwrap();
    for mode in [Mode::Auto, Mode::Legacy] {
        let client = Client::builder()
            .mode(mode)
            .connect(MemoryTransport::new(&service))
            .await
            .unwrap();
        let skills = client.list_all_skills().await.unwrap();
        let names: Vec<_> = skills.iter().filter_map(|s| s.name()).collect();
        assert_eq!(names, ["pdf-processing", "release-notes"]);
        for skill in &skills {
            let loaded = client.load_skill(skill).await.unwrap();
            assert!(loaded.body.contains("# "), "{}", loaded.body);
            if let mcp_types::ext::skills::SkillResources::Files(files) = &skill.resources {
                for file in files {
                    assert!(
                        client
                            .read_skill_file(skill, &file.uri)
                            .await
                            .unwrap()
                            .verified
                    );
                }
            }
        }
        let unknown = client.get_skill("skill://nope/SKILL.md").await.unwrap_err();
        assert!(
            matches!(&unknown, ClientError::Server(e) if e.code.0 == -32602),
            "{unknown:?}"
        );
    }
}
