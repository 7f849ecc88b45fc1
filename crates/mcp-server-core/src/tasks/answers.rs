//! A task's answers as the store keeps them between `tasks/update` and the body that takes
//! them: sealed with the server's state keys when the engine has them, bound to the task and
//! the question's key, so that a process that can write to a shared task store but does not
//! hold the keys cannot answer a question in someone else's task (consent given for them:
//! security review X10).

use serde_json::Value;

use super::engine::TaskEngine;

/// How long a sealed answer is believed: past any task's TTL.
const ANSWER_TTL: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// A task's answer as the store keeps it (kind: [`kind`]).
fn answer_item(kind: &str) -> crate::kept::Kept<'_> {
    crate::kept::Kept {
        kind,
        ttl: ANSWER_TTL,
        what: "a task's answer",
    }
}

/// The kind the answer to question `key` of task `task` is sealed as: a handle no request
/// presents (no tool declares a kind under `mcp/task-answer/`).
fn kind(task: &str, key: &str) -> String {
    format!("mcp/task-answer/{task}/{key}")
}

impl TaskEngine {
    /// `value`, the client's answer to question `key` of task `task`, as the store keeps it:
    /// a sealed string when the engine has keys, `value` itself otherwise; `None` when it
    /// cannot be sealed (logged).
    pub(super) fn seal_answer(&self, task: &str, key: &str, value: Value) -> Option<Value> {
        let Some(sealer) = self.inner.replay_sealer.get() else {
            return Some(value);
        };
        let kind = kind(task, key);
        answer_item(&kind)
            .seal(sealer, &value.to_string())
            .ok()
            .map(Value::String)
    }

    /// The answer the store held for question `key` of task `task`, opened: refused (logged)
    /// when the engine has keys and it was not sealed with them for this task and question.
    pub(super) async fn open_answer(
        &self,
        task: &str,
        key: &str,
        stored: Value,
    ) -> Result<Value, String> {
        let Some(sealer) = self.inner.replay_sealer.get() else {
            return Ok(stored);
        };
        let refused = || {
            format!(
                "the answer to '{key}' in the task store is not sealed with this server's keys \
                 (every instance of a fleet needs the same request-state keys)"
            )
        };
        let Value::String(token) = stored else {
            tracing::warn!(%key, "a task's answer that is not sealed was refused");
            return Err(refused());
        };
        let kind = kind(task, key);
        match answer_item(&kind).open(sealer, &token).await {
            Some(text) => serde_json::from_str(&text).map_err(|_| refused()),
            None => Err(refused()),
        }
    }
}
