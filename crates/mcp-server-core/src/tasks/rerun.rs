//! Tasks that outlive their worker: a task of a tool that says it is safe to run again
//! (`idempotentHint`, no resolvers) keeps a replay in the store (what the call was, who made
//! it, and every answer its body received). When its worker is lost, the engine of whichever
//! instance sweeps first takes its lapsed lease and runs the body again from the start; a
//! question asked again is answered from the replay instead of the client. Other tasks fail
//! "worker lost" as before.

use std::sync::Arc;

use mcp_types::ErrorObject;

use crate::cancel::CancellationToken;

use super::body::run;
use super::engine::{Rerunner, Running, TaskCtx, TaskEngine, TaskLink};
use super::replay::{MAX_TASK_RUNS, Replay};
use super::store::{StoreError, Terminal};

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
        // The worker that was lost, for the failure that names it (the claim replaces it).
        let (lost, owner) = match store.get(id).await {
            Ok(Some(record)) => (record.lease.map(|lease| lease.lost()), record.owner),
            _ => (None, None),
        };
        let lost = lost.unwrap_or_else(|| "The worker running this task was lost".to_owned());
        // Taking the lapsed lease decides which instance runs it again.
        match store.claim(id, self.worker(), until).await {
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
        // A replay runs as the principal it names only when that is the task's owner: one
        // written into the store by someone else runs as nobody (security review X10).
        let replay = replay.and_then(|replay| {
            let named = super::engine::owner_key(
                replay
                    .principal
                    .clone()
                    .map(crate::seal::Principal::from)
                    .as_ref(),
            );
            if named == owner {
                Ok(replay)
            } else {
                Err("its replay names another principal than the task's owner".to_owned())
            }
        });
        let mut replay = match replay {
            Ok(replay) if replay.runs < MAX_TASK_RUNS => replay,
            Ok(replay) => {
                let why = format!(
                    "{lost}, the {} time; it is not run again",
                    ordinal(replay.runs)
                );
                self.give_up(id, why, until).await;
                return;
            }
            Err(why) => {
                tracing::warn!(%why, "a lapsed task cannot run again");
                self.give_up(id, format!("{lost}, and it cannot run again: {why}"), until)
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
                format!("{lost}, and tool '{}' is not served here", replay.tool),
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

/// "3rd" for 3: how many times a task's worker was lost.
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
