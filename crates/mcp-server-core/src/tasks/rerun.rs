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

/// The kind task `id`'s replay is sealed as: a handle no request can present (its kind is not
/// one a tool declares), bound to the task (a replay moved under another task's id does not
/// open) and to no principal (the replay names its own, inside the seal).
fn replay_kind(id: &str) -> String {
    format!("mcp/task-replay/{id}")
}

/// How long a sealed replay is believed: past any task's TTL.
const REPLAY_TTL: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// A task's replay as the store keeps it (kind: [`replay_kind`]).
fn replay_item(kind: &str) -> crate::kept::Kept<'_> {
    crate::kept::Kept {
        kind,
        ttl: REPLAY_TTL,
        what: "a task's replay",
    }
}

impl TaskEngine {
    /// Sets how this engine builds re-run bodies (once; the service does it).
    pub(crate) fn set_rerunner(&self, rerunner: Rerunner) {
        let _ = self.inner.rerunner.set(rerunner);
    }

    /// Seals this engine's replays and answers with `boundary` (the server's state keys;
    /// once, by the service). Without it both are kept as plain JSON, and whoever can write
    /// to the task store can write one.
    pub(crate) fn seal_replays_with(&self, boundary: Arc<mcp_state_seal::SealingBoundary>) {
        let _ = self.inner.replay_sealer.set(boundary);
    }

    /// `replay` of task `id` as the store keeps it: its JSON, at most `MAX_REPLAY_BYTES`,
    /// sealed when the engine has keys; `None` past the cap or when sealing fails.
    pub(super) fn seal_replay(&self, id: &str, replay: &Replay) -> Option<Vec<u8>> {
        let encoded = replay.encode_bounded()?;
        let Some(sealer) = self.inner.replay_sealer.get() else {
            return Some(encoded);
        };
        let text = String::from_utf8(encoded).ok()?;
        let kind = replay_kind(id);
        replay_item(&kind)
            .seal(sealer, &text)
            .ok()
            .map(String::into_bytes)
    }

    /// The replay the store holds for task `id`, opened: refused when the engine has keys and
    /// the bytes were not sealed with them as this task's (written into the store by someone
    /// else, or moved from another task).
    async fn open_replay(&self, id: &str, bytes: &[u8]) -> Result<Replay, String> {
        let Some(sealer) = self.inner.replay_sealer.get() else {
            return Replay::decode(bytes);
        };
        let token =
            std::str::from_utf8(bytes).map_err(|_| "an unreadable task replay".to_owned())?;
        let kind = replay_kind(id);
        match replay_item(&kind).open(sealer, token).await {
            Some(text) => Replay::decode(text.as_bytes()),
            None => {
                Err("its replay is not sealed with this server's keys for this task".to_owned())
            }
        }
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
            Ok(Some(bytes)) => self.open_replay(id, &bytes).await,
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
        match self.seal_replay(id, &replay) {
            Some(sealed) => {
                if let Err(e) = store.set_replay(id, sealed).await {
                    tracing::warn!(error = %e, "a re-run's count was not stored");
                }
            }
            None => tracing::warn!("a re-run's count could not be sealed; not stored"),
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
