//! What one `mcp-term` run left behind, for the process-level tests that run it: exit code,
//! stdout, stderr, and the one JSON error line a failing run ends stderr with.

use serde_json::Value;

pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Out {
    /// The JSON error line every failing run ends stderr with.
    pub(crate) fn error(&self) -> Value {
        let last = self.stderr.lines().last().unwrap_or("");
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("the last stderr line is not JSON ({e}): {}", self.stderr))
    }
}
