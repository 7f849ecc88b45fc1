//! Files: a tool whose confirmation comes from a resolver, asked only when it matters.
//!
//! `delete_folder(path)` deletes one of two in-memory folders. The resolver `confirm_delete`
//! reads the tool's `path` argument: an empty folder is confirmed without asking; any other
//! asks "`{path}` has `{n}` file(s). Delete anyway?". The `confirm` parameter never appears in
//! the tool's `inputSchema`, and the body runs once, with the answer.

use mcp::{ElicitationResult, McpServer, Resolution};
use schemars::JsonSchema;
use serde::Deserialize;

/// The folders this example pretends to own.
pub fn folder(path: &str) -> Option<&'static [&'static str]> {
    match path {
        "/tmp/empty" => Some(&[]),
        "/tmp/project" => Some(&["main.py", "README.md"]),
        _ => None,
    }
}

/// The answer to "Delete anyway?".
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Delete the folder and everything in it.
    pub ok: bool,
}

/// Confirms on its own when the folder is empty; asks otherwise.
#[mcp::resolver]
pub async fn confirm_delete(path: &str) -> Resolution<Confirm> {
    match folder(path) {
        None => Resolution::reject(format!("no such folder: {path}")),
        Some([]) => Resolution::ready(Confirm { ok: true }),
        Some(files) => Resolution::elicit(format!(
            "{path} has {} file(s). Delete anyway?",
            files.len()
        )),
    }
}

/// Delete a folder, asking for confirmation when it is not empty.
#[mcp::tool]
pub async fn delete_folder(
    /// The folder to delete.
    path: String,
    #[resolve(confirm_delete)] confirm: ElicitationResult<Confirm>,
) -> String {
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
