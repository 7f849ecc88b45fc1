//! Files: a tool whose confirmation comes from a resolver, asked only when it matters.
//!
//! `delete_folder(path)` deletes a folder from an in-memory table that starts as
//! `/tmp/empty` = [] and `/tmp/project` = [main.py, README.md]. The resolver `confirm_delete`
//! reads the tool's `path` argument and counts the folder's files: none (an empty folder, or
//! one that is not there) is confirmed without asking; otherwise it asks "`{path}` has `{n}`
//! file(s). Delete anyway?". An accepted deletion removes the folder, so asking to delete it
//! again counts 0 files and deletes without a question. The `confirm` parameter never appears
//! in the tool's `inputSchema`, and the body runs once, with the answer.

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use mcp::{ElicitationResult, McpServer, Resolution};
use schemars::JsonSchema;
use serde::Deserialize;

/// The folders this example pretends to own, shared by every request of the process.
static FOLDERS: LazyLock<Mutex<BTreeMap<String, Vec<String>>>> = LazyLock::new(|| {
    Mutex::new(BTreeMap::from([
        ("/tmp/empty".to_owned(), Vec::new()),
        (
            "/tmp/project".to_owned(),
            vec!["main.py".to_owned(), "README.md".to_owned()],
        ),
    ]))
});

fn folders() -> MutexGuard<'static, BTreeMap<String, Vec<String>>> {
    // A panic while holding the lock cannot leave the map half-written (every change is one
    // insert or remove), so a poisoned lock is still a consistent table.
    FOLDERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How many files `path` holds (0 when it is empty or not there).
pub fn file_count(path: &str) -> usize {
    folders().get(path).map_or(0, Vec::len)
}

/// The answer to "Delete anyway?".
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Delete the folder and everything in it.
    pub ok: bool,
}

/// Confirms on its own when the folder has no files; asks otherwise.
#[mcp::resolver]
pub async fn confirm_delete(path: &str) -> Resolution<Confirm> {
    match file_count(path) {
        0 => Resolution::ready(Confirm { ok: true }),
        n => Resolution::elicit(format!("{path} has {n} file(s). Delete anyway?")),
    }
}

/// Delete a folder, asking for confirmation when it is not empty.
#[mcp::tool]
pub async fn delete_folder(
    /// The folder to delete.
    path: String,
    #[resolve(confirm_delete)] confirm: ElicitationResult<Confirm>,
) -> String {
    if matches!(confirm, ElicitationResult::Accepted(Confirm { ok: true })) {
        folders().remove(&path);
    }
    outcome(&path, &confirm)
}

/// What `delete_folder` answers for each outcome of the confirmation.
pub fn outcome(path: &str, confirm: &ElicitationResult<Confirm>) -> String {
    match confirm {
        ElicitationResult::Accepted(Confirm { ok: true }) => format!("deleted {path}"),
        ElicitationResult::Accepted(_) => "kept the folder".into(),
        ElicitationResult::Declined => "declined: folder not deleted".into(),
        ElicitationResult::Cancelled => "cancelled: folder not deleted".into(),
    }
}

/// The Files server.
pub fn server() -> McpServer {
    McpServer::new("Files").tool(delete_folder)
}
