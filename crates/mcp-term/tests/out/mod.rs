//! What one `mcp-term` run left behind, for the process-level tests that run it: exit code,
//! stdout, stderr, and the one JSON error line a failing run ends stderr with.

use serde_json::Value;

pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(out: std::process::Output) -> Self {
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }
}

impl Out {
    /// Asserts the run failed with exit `code` and the error line's `kind`; `context` names
    /// the case in the failure message.
    #[track_caller]
    #[allow(dead_code)] // not every test binary that includes this module fails runs
    pub(crate) fn assert_failed(&self, code: i32, kind: &str, context: &str) {
        assert_eq!(self.code, code, "{context}: {}", self.stderr);
        assert_eq!(
            self.error()["error"]["kind"],
            kind,
            "{context}: {}",
            self.stderr
        );
    }

    /// The JSON error line every failing run ends stderr with.
    pub(crate) fn error(&self) -> Value {
        let last = self.stderr.lines().last().unwrap_or("");
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("the last stderr line is not JSON ({e}): {}", self.stderr))
    }
}
