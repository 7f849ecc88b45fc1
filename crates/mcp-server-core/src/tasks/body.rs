//! A task's body: `RequestContext::run_as_task` creates the task and starts the body in the
//! background with the task's own context; [`run`] carries it to its end (lease, cancel,
//! expiry, the terminal state written again after a store failure).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_types::ErrorObject;
use mcp_types::ext::tasks::CreateTaskResult;
use mcp_types::mrtr::InputRequests;
use mcp_types::tools::CallToolResult;
use serde_json::Value;

use crate::cancel::CancellationToken;
use crate::futures::{BoxFuture, CatchUnwind, HandlerResult};
use crate::gating::ClientSupport;

use super::config::RESYNC;
use crate::context::RequestContext;
use crate::tasks::engine::{Running, TaskLink, base, changed, random_id, store_error};
use crate::tasks::{Lease, StoreError, TaskCtx, TaskEngine, TaskRecord, TaskStore, Terminal};

impl RequestContext {
    /// Runs `body` as a task when this `tools/call` may become one (a 2026-07-28 request that
    /// declared the extension, to a tool registered with task support on a server with tasks):
    /// the task is created in the store, the body starts in the background with the task's
    /// own context, and the call answers the `CreateTaskResult` (return this function's value
    /// from the handler). Otherwise the body runs inline, with this context, and its result is
    /// the call's: one body serves every era and mode.
    pub async fn run_as_task<F, Fut>(
        self,
        body: F,
    ) -> HandlerResult<mcp_types::mrtr::Outcome<CallToolResult>>
    where
        F: FnOnce(RequestContext) -> Fut + Send + 'static,
        Fut: Future<Output = HandlerResult<CallToolResult>> + Send + 'static,
    {
        self.run_as_task_replayable(None, body).await
    }

    /// [`run_as_task`](Self::run_as_task) for a tool that may run again when its worker is
    /// lost: `replay` (the call, who made it) is kept in the store with the task.
    pub(crate) async fn run_as_task_replayable<F, Fut>(
        self,
        replay: Option<super::replay::Replay>,
        body: F,
    ) -> HandlerResult<mcp_types::mrtr::Outcome<CallToolResult>>
    where
        F: FnOnce(RequestContext) -> Fut + Send + 'static,
        Fut: Future<Output = HandlerResult<CallToolResult>> + Send + 'static,
    {
        let TaskCtx::Launchable(launch) = self.task.clone() else {
            return body(self).await.map(mcp_types::mrtr::Outcome::Complete);
        };
        let engine = launch.engine.clone();
        let config = engine.config();
        let share = match &launch.peer_group {
            Some(group) => {
                let max = config.max_anonymous_per_address;
                let taken = super::engine::PeerShare::take(&engine.inner.anonymous, group, max);
                if taken.is_none() {
                    return Err(ErrorObject::internal(format!(
                        "this address already runs {max} tasks; wait for one to finish, or cancel one"
                    )));
                }
                taken
            }
            None => None,
        };
        let store = engine.store();
        engine.ensure_sweeper();
        let now = store.now_ms();
        let lease_until = now.saturating_add(config.lease.as_millis() as u64);
        let id = random_id()?;
        let record = TaskRecord {
            id: id.clone(),
            owner: launch.owner.clone(),
            client_support: ClientSupport::of(self.client_capabilities()),
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: config.ttl.map(|t| t.as_millis() as u64),
            poll_interval_ms: Some(config.poll_interval.as_millis().max(1) as u64),
            outstanding: InputRequests::new(),
            answers: BTreeMap::new(),
            used_keys: Default::default(),
            cancel_requested: false,
            terminal: None,
            lease: Some(Lease {
                worker: engine.worker().to_owned(),
                until_ms: lease_until,
            }),
        };
        let created = CreateTaskResult::new(base(&record));
        store.create(record).await.map_err(|e| match e {
            StoreError::Full { .. } | StoreError::OwnerFull { .. } => {
                ErrorObject::internal(e.to_string())
            }
            other => store_error(other),
        })?;
        // A replay the store cannot keep, or past its cap (security review X1), leaves a task
        // that fails "worker lost" as any other.
        let replay = replay.and_then(|r| engine.seal_replay(&id, &r).map(|encoded| (r, encoded)));
        let replay = match replay {
            Some((replay, encoded)) => match store.set_replay(&id, encoded).await {
                Ok(true) => Some(replay),
                Ok(false) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "a task's replay was not kept; it will not run again");
                    None
                }
            },
            None => None,
        };
        let token = CancellationToken::new();
        let mut ctx = self;
        ctx.task = TaskCtx::Running(Arc::new(TaskLink::new(engine.clone(), id.clone(), replay)));
        ctx.cancellation = token.clone();
        ctx.peer = None;
        ctx.progress_token = None;
        ctx.log_level = None;
        ctx.request_state = None;
        ctx.input_responses = None;
        ctx.sink = crate::sink::Sink::detached();
        ctx.keep_for_task();
        let work: BoxFuture<'static, HandlerResult<CallToolResult>> = Box::pin(body(ctx));
        let running = Running::start(&engine.inner.running);
        tokio::spawn(async move {
            run(engine, id, token, work, lease_until).await;
            drop((running, share));
        });
        if let Ok(mut slot) = launch.created.lock() {
            *slot = Some(created);
        }
        // A stand-in: the service answers the CreateTaskResult instead.
        Ok(mcp_types::mrtr::Outcome::Complete(CallToolResult::default()))
    }

    /// The id of the task this body runs in, if it runs in one.
    pub fn task_id(&self) -> Option<&str> {
        match &self.task {
            TaskCtx::Running(link) => Some(link.id()),
            _ => None,
        }
    }

    /// Whether this `tools/call` would become a task with [`run_as_task`](Self::run_as_task).
    pub fn may_run_as_task(&self) -> bool {
        matches!(self.task, TaskCtx::Launchable(_))
    }
}

/// Runs a task's body to its end: renews the lease, watches the store for a cancel (trips the
/// body's token, then gives it the grace period) and for removal (TTL: the body is dropped),
/// and writes the terminal state. `lease_until` is when the lease the task was created with
/// lapses.
pub(super) async fn run(
    engine: TaskEngine,
    id: String,
    token: CancellationToken,
    body: BoxFuture<'static, HandlerResult<CallToolResult>>,
    mut lease_until: u64,
) {
    let config = engine.config().clone();
    let store = engine.store();
    let worker = engine.worker().to_owned();
    let mut feed = store.watch(&id);
    let deadline = config
        .ttl
        .map(|ttl| tokio::time::Instant::now() + ttl)
        .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365 * 30));
    let mut body = std::pin::pin!(CatchUnwind(body));
    let renew_every = (config.lease / 3).min(Duration::from_secs(1));
    let mut tick = tokio::time::interval(renew_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // With a change feed, the task is read when the feed wakes, and every RESYNC in case a
    // wake-up was lost; without one, at every renewal.
    let resync_every = (RESYNC.as_millis() / renew_every.as_millis().max(1)).max(1) as u64;
    let mut renewals: u64 = 0;
    let mut grace: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let ended: Option<Terminal> = loop {
        let check = tokio::select! {
            out = &mut body => break Some(match out {
                None => {
                    tracing::error!("a task body panicked; the task ends failed");
                    Terminal::Failed(ErrorObject::internal("Internal error"))
                }
                Some(Ok(result)) => match serde_json::to_value(&result) {
                    Ok(Value::Object(o)) => Terminal::Completed(o),
                    _ => Terminal::Failed(ErrorObject::internal("the result could not be serialized")),
                },
                Some(Err(error)) => Terminal::Failed(error),
            }),
            open = changed(&mut feed) => {
                if !open { feed = None; }
                true
            }
            _ = tick.tick() => {
                let until = store.now_ms().saturating_add(config.lease.as_millis() as u64);
                match store.claim(&id, &worker, until).await {
                    Ok(true) => lease_until = until,
                    Ok(false) => {
                        tracing::warn!("a task's lease was taken by another worker; its body stops here");
                        break None;
                    }
                    Err(StoreError::NotFound) => break None,
                    Err(e) => tracing::debug!(error = %e, "a task's lease was not renewed"),
                }
                renewals += 1;
                feed.is_none() || renewals.is_multiple_of(resync_every)
            }
            () = tokio::time::sleep_until(deadline) => break None,
            () = async { match grace.as_mut() { Some(g) => g.await, None => std::future::pending().await } } => {
                break Some(Terminal::Cancelled);
            }
        };
        if check {
            match store.get(&id).await {
                Ok(None) => break None,
                Ok(Some(r)) if r.terminal.is_some() => break None,
                Ok(Some(r)) if r.cancel_requested && !token.is_cancelled() => {
                    token.cancel();
                    grace = Some(Box::pin(tokio::time::sleep(config.cancel_grace)));
                }
                _ => {}
            }
        }
    };
    let Some(mut terminal) = ended else {
        // Gone (expired, removed, taken over): the body is told, gets the grace period to
        // wind down, and whatever it returns is dropped.
        token.cancel();
        let _ = tokio::time::timeout(config.cancel_grace, &mut body).await;
        return;
    };
    if token.is_cancelled() {
        terminal = Terminal::Cancelled;
    }
    if let Terminal::Failed(e) = &terminal {
        let _ = store.set_status_message(&id, Some(e.message.clone())).await;
    }
    #[cfg(feature = "otel")]
    crate::otel::count_task(match &terminal {
        Terminal::Completed(_) => "completed",
        Terminal::Failed(_) => "failed",
        Terminal::Cancelled => "cancelled",
    });
    store_end(store, &id, terminal, lease_until).await;
}

/// The first pause before writing a task's end again, doubled after each failure.
const END_RETRY_FIRST: Duration = Duration::from_millis(50);
/// The longest pause between two attempts to write a task's end.
const END_RETRY_MAX: Duration = Duration::from_secs(1);

/// Writes a task's end, again after a failure (with backoff) until the worker's lease lapses:
/// one transient store error must not lose a result (review W17). Past the lease nothing is
/// gained by retrying, since the sweep then ends the task `failed` ("worker lost").
async fn store_end(store: &dyn TaskStore, id: &str, terminal: Terminal, lease_until: u64) {
    let mut pause = END_RETRY_FIRST;
    loop {
        let error = match store.finish(id, terminal.clone()).await {
            Ok(_) | Err(StoreError::NotFound) => return,
            Err(e) => e,
        };
        let now = store.now_ms();
        if now.saturating_add(pause.as_millis() as u64) >= lease_until {
            tracing::error!(error = %error, "a task's end could not be stored before its lease lapsed; the task will read as failed");
            return;
        }
        tracing::warn!(error = %error, retry_in = ?pause, "a task's end could not be stored; trying again");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(END_RETRY_MAX);
    }
}
