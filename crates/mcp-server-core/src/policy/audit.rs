//! The audit log: who called what, how it ended, how long it took.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_state_seal::Principal;
use mcp_types::RequestId;
use mcp_types::version::Era;
use serde::Deserialize;

use super::{Call, Layer, Next, Reply};
use crate::futures::BoxFuture;

/// How an audited request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditOutcome {
    /// A complete result.
    Complete,
    /// A tool result with `isError: true` (the tool ran and failed).
    ToolError,
    /// An `InputRequiredResult`: the server asked the client for input (2026-07-28).
    InputRequired,
    /// A task was created for the call.
    TaskCreated,
    /// A JSON-RPC error with this code.
    Error(i64),
}

impl fmt::Display for AuditOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditOutcome::Complete => f.write_str("complete"),
            AuditOutcome::ToolError => f.write_str("tool_error"),
            AuditOutcome::InputRequired => f.write_str("input_required"),
            AuditOutcome::TaskCreated => f.write_str("task_created"),
            AuditOutcome::Error(code) => write!(f, "error {code}"),
        }
    }
}

impl AuditOutcome {
    /// The outcome of `reply`.
    pub fn of(reply: &Reply) -> Self {
        #[derive(Deserialize)]
        struct Top<'a> {
            #[serde(rename = "resultType", borrow)]
            result_type: Option<&'a str>,
            #[serde(rename = "isError")]
            is_error: Option<bool>,
            task: Option<serde::de::IgnoredAny>,
        }
        match reply {
            Err(e) => AuditOutcome::Error(e.code.0),
            Ok(raw) => match serde_json::from_str::<Top<'_>>(raw.get()) {
                Ok(top) if top.result_type == Some("input_required") => AuditOutcome::InputRequired,
                Ok(top) if top.is_error == Some(true) => AuditOutcome::ToolError,
                Ok(top) if top.task.is_some() => AuditOutcome::TaskCreated,
                _ => AuditOutcome::Complete,
            },
        }
    }
}

/// One audited request. It holds no arguments, answers or request state: an audit log is
/// read by more people than the data it is about.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditRecord {
    /// The JSON-RPC id.
    pub id: RequestId,
    /// The method.
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub target: Option<String>,
    /// The era the request was served in.
    pub era: Era,
    /// Who called, when the transport authenticated someone.
    pub principal: Option<Principal>,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// From the audit layer's start to the answer.
    pub duration: Duration,
}

type Sink = dyn Fn(&AuditRecord) + Send + Sync;

/// Records every request it wraps once it answered: [`to_tracing`](Self::to_tracing) as an
/// `INFO` event of target `mcp::audit`, or to a function of yours with [`new`](Self::new)
/// (a database, a file). A request cancelled by its client (dropped before it answered) is
/// recorded as `Error(-32800)`, the code JSON-RPC reserves for a cancelled request.
#[derive(Clone)]
pub struct Audit {
    sink: Arc<Sink>,
}

impl fmt::Debug for Audit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Audit").finish_non_exhaustive()
    }
}

impl Audit {
    /// Sends each record to `sink`.
    pub fn new<F>(sink: F) -> Self
    where
        F: Fn(&AuditRecord) + Send + Sync + 'static,
    {
        Audit {
            sink: Arc::new(sink),
        }
    }

    /// Each record as an `INFO` event of target `mcp::audit`, with the fields `method`,
    /// `target`, `era`, `client_id`, `subject`, `outcome` and `duration_us`.
    pub fn to_tracing() -> Self {
        Audit::new(|r| {
            let principal = r.principal.as_ref();
            tracing::info!(
                target: "mcp::audit",
                id = %r.id.for_log(),
                method = %mcp_types::LogSafe(&r.method),
                target = r.target.as_deref(),
                era = ?r.era,
                client_id = principal.map(|p| p.client_id.as_str()),
                subject = principal.and_then(|p| p.subject.as_deref()),
                outcome = %r.outcome,
                duration_us = u64::try_from(r.duration.as_micros()).unwrap_or(u64::MAX),
                "audit"
            );
        })
    }
}

/// Writes the record when dropped: after the answer, or when the request was cancelled.
struct Pending<'a> {
    audit: &'a Audit,
    call: &'a Call<'a>,
    started: Instant,
    outcome: Option<AuditOutcome>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let record = AuditRecord {
            id: self.call.id().clone(),
            method: self.call.method().to_owned(),
            target: self.call.target().map(str::to_owned),
            era: self.call.era(),
            principal: self.call.principal().cloned(),
            outcome: self.outcome.unwrap_or(AuditOutcome::Error(-32800)),
            duration: self.started.elapsed(),
        };
        (self.audit.sink)(&record);
    }
}

impl Layer for Audit {
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let mut pending = Pending {
                audit: self,
                call,
                started: Instant::now(),
                outcome: None,
            };
            let reply = next.run().await;
            pending.outcome = Some(AuditOutcome::of(&reply));
            reply
        })
    }
}
