//! Tasks that outlive their worker: a task of a tool that says it is safe to run again
//! (`idempotentHint`, no resolvers) keeps a replay in the store (what the call was, who made
//! it, and every answer its body received). When its worker is lost, the engine of whichever
//! instance sweeps first takes its lapsed lease and runs the body again from the start; a
//! question asked again is answered from the replay instead of the client. Other tasks fail
//! "worker lost" as before.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::tools::CallToolResult;
use mcp_types::{ErrorObject, JsonObject};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cancel::CancellationToken;
use crate::fleet::StoredPrincipal;
use crate::futures::{BoxFuture, HandlerResult};

use super::body::run;
use super::engine::{Running, TaskCtx, TaskEngine, TaskLink};
use super::store::{StoreError, Terminal};

/// How many times a task's body runs at most (the first run and the re-runs): a body that
/// takes its worker down every time stops after this many.
pub const MAX_TASK_RUNS: u32 = 3;

/// What running a task again needs, as the store keeps it (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Replay {
    pub(crate) tool: String,
    pub(crate) arguments: JsonObject,
    pub(crate) protocol_version: String,
    pub(crate) capabilities: ClientCapabilities,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) principal: Option<StoredPrincipal>,
    /// The answers the body received, by question key (`q1`, …).
    #[serde(default)]
    pub(crate) answered: BTreeMap<String, Value>,
    /// How many times the body has started.
    pub(crate) runs: u32,
}

impl Replay {
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
            .map_err(|e| format!("an unreadable task replay: {e}"))
    }
}

/// Builds the body of a re-run from its replay: the service makes the context (as the task's
/// first run had it) and the registry calls the tool. `None` when the tool is not there.
pub(crate) type Rerunner = Arc<
    dyn Fn(
            &Replay,
            TaskCtx,
            CancellationToken,
        ) -> Option<BoxFuture<'static, HandlerResult<CallToolResult>>>
        + Send
        + Sync,
>;

/// The replay a running body keeps up to date (answers), when its task can run again.
#[derive(Debug)]
pub(crate) struct Kept {
    pub(crate) replay: Mutex<Replay>,
}

impl TaskEngine {
    /// Sets how this engine builds re-run bodies (once; the service does it).
    pub(crate) fn set_rerunner(&self, rerunner: Rerunner) {
        let _ = self.inner.rerunner.set(rerunner);
    }

    /// Takes and runs again every task whose worker was lost and that can run again.
    pub(super) async fn rerun_lapsed(&self, now: u64) {
        let Some(rerunner) = self.inner.rerunner.get().cloned() else {
            return;
        };
        let store = self.store();
        let lapsed = match store.lapsed(now).await {
            Ok(lapsed) => lapsed,
            Err(e) => {
                tracing::warn!(error = %e, "looking for tasks to run again failed");
                return;
            }
        };
        for id in lapsed {
            self.rerun(&rerunner, &id, now).await;
        }
    }

    async fn rerun(&self, rerunner: &Rerunner, id: &str, now: u64) {
        let store = self.store();
        let until = now.saturating_add(self.config().lease.as_millis() as u64);
        // Taking the lapsed lease decides which instance runs it again.
        match store.claim(id, &self.inner.worker, until).await {
            Ok(true) => {}
            Ok(false) | Err(StoreError::NotFound) => return,
            Err(e) => {
                tracing::warn!(error = %e, "a lapsed task could not be taken");
                return;
            }
        }
        let replay = match store.replay(id).await {
            Ok(Some(bytes)) => Replay::decode(&bytes),
            Ok(None) => Err("its replay is gone".to_owned()),
            Err(e) => Err(e.to_string()),
        };
        let mut replay = match replay {
            Ok(replay) if replay.runs < MAX_TASK_RUNS => replay,
            Ok(replay) => {
                let why = format!(
                    "The worker running this task was lost {} times; it is not run again",
                    replay.runs
                );
                self.give_up(id, why, until).await;
                return;
            }
            Err(why) => {
                tracing::warn!(%why, "a lapsed task cannot run again");
                self.give_up(id, "The worker running this task was lost".into(), until)
                    .await;
                return;
            }
        };
        replay.runs += 1;
        if let Err(e) = store.set_replay(id, replay.encode()).await {
            tracing::warn!(error = %e, "a re-run's count was not stored");
        }
        let token = CancellationToken::new();
        let link = Arc::new(TaskLink::rerun(self.clone(), id.to_owned(), replay.clone()));
        let Some(work) = rerunner(&replay, TaskCtx::Running(link), token.clone()) else {
            self.give_up(
                id,
                format!(
                    "The worker running this task was lost, and tool '{}' is not served here",
                    replay.tool
                ),
                until,
            )
            .await;
            return;
        };
        tracing::info!(
            run = replay.runs,
            "a task whose worker was lost runs again here"
        );
        let _ = store
            .set_status_message(
                id,
                Some(format!(
                    "Running again (run {}): the worker running it was lost",
                    replay.runs
                )),
            )
            .await;
        let engine = self.clone();
        let id = id.to_owned();
        let running = Running::start(&self.inner.running);
        tokio::spawn(async move {
            run(engine, id, token, work, until).await;
            drop(running);
        });
    }

    async fn give_up(&self, id: &str, why: String, _until: u64) {
        let store = self.store();
        let _ = store.set_status_message(id, Some(why.clone())).await;
        if let Err(e) = store
            .finish(id, Terminal::Failed(ErrorObject::internal(why)))
            .await
        {
            tracing::warn!(error = %e, "a lapsed task's end was not stored");
        }
    }
}
