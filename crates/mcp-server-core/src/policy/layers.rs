//! The deadline, the concurrency cap and the scope check.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Semaphore;

use super::{Call, Layer, Next, Reply, codes, refusal};
use crate::futures::BoxFuture;

/// A deadline for each request it wraps. When it passes, the request's future is dropped,
/// which stops its handler at its next `.await` (and everything the handler was waiting on:
/// a legacy server-to-client request, a timer, I/O), and the caller gets `-32001` with
/// `data.timeoutMs`.
///
/// The deadline counts the whole request: on a 2025-11-25 session that includes the time the
/// user takes to answer a mid-call elicitation; on 2026-07-28 each round of a multi-round
/// call is a request of its own. A task's work runs after its `tools/call` answered, so a
/// task is not timed by it (a task has its own TTL).
#[derive(Debug, Clone, Copy)]
pub struct Timeout {
    after: Duration,
}

impl Timeout {
    /// A deadline of `after` per request.
    pub fn new(after: Duration) -> Self {
        Timeout { after }
    }
}

impl Layer for Timeout {
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            match tokio::time::timeout(self.after, next.run()).await {
                Ok(reply) => reply,
                Err(_) => {
                    let ms = u64::try_from(self.after.as_millis()).unwrap_or(u64::MAX);
                    tracing::info!(
                        method = call.method(),
                        timeout_ms = ms,
                        "a request timed out and was stopped"
                    );
                    #[cfg(feature = "otel")]
                    crate::otel::count_refusal("timeout");
                    Err(refusal(
                        codes::TIMED_OUT,
                        format!(
                            "{} did not finish within {}; the server stopped it",
                            call.describe(),
                            human(self.after)
                        ),
                        json!({ "timeoutMs": ms }),
                    ))
                }
            }
        })
    }
}

/// At most `max` requests at once through this layer (one count for the whole server, a
/// method or a tool, by where it is installed). One more is refused at once with `-32029`
/// (`data.limit = "concurrency"`), never queued: a queue would be memory a client can grow.
/// The count is this process's; a fleet's instances count each their own.
#[derive(Debug, Clone)]
pub struct ConcurrencyLimit {
    max: usize,
    permits: Arc<Semaphore>,
}

impl ConcurrencyLimit {
    /// At most `max` requests at once (at least one).
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        ConcurrencyLimit {
            max,
            permits: Arc::new(Semaphore::new(max)),
        }
    }
}

impl Layer for ConcurrencyLimit {
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let Ok(_permit) = self.permits.try_acquire() else {
                #[cfg(feature = "otel")]
                crate::otel::count_refusal("concurrency");
                return Err(refusal(
                    codes::TOO_MANY_REQUESTS,
                    format!(
                        "{} is already running {} at once; try again when one finished",
                        call.describe(),
                        self.max
                    ),
                    json!({ "limit": "concurrency", "max": self.max }),
                ));
            };
            next.run().await
        })
    }
}

/// The scopes a caller's token must grant. Over HTTP the endpoint checks them before the
/// request runs and answers 403 with `WWW-Authenticate: Bearer error="insufficient_scope",
/// scope="…"`, from which a client asks its authorization server for more (step-up). Here,
/// inside the engine, a request that reaches the layer without them (another transport, or
/// one that authenticated no token: fail closed) is refused with `-32003` and
/// `data.requiredScopes`.
///
/// `#[mcp::tool(scopes = ["calendar.write"])]` installs one on its tool.
#[derive(Debug, Clone)]
pub struct RequireScopes {
    scopes: Vec<String>,
}

impl RequireScopes {
    /// Every scope of `scopes` is required.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(scopes: I) -> Self {
        RequireScopes {
            scopes: scopes.into_iter().map(Into::into).collect(),
        }
    }
}

impl Layer for RequireScopes {
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        let missing: Vec<&str> = self
            .scopes
            .iter()
            .filter(|s| !call.scopes().is_some_and(|g| g.contains(s)))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return next.run();
        }
        #[cfg(feature = "otel")]
        crate::otel::count_refusal("scope");
        let why = match call.scopes() {
            None => "and this request carries no access token",
            Some(_) => "which the request's access token does not grant",
        };
        let error = refusal(
            codes::FORBIDDEN,
            format!(
                "{} needs the scope{} {}, {why}",
                call.describe(),
                if self.scopes.len() == 1 { "" } else { "s" },
                self.scopes.join(" ")
            ),
            json!({ "requiredScopes": self.scopes, "missingScopes": missing }),
        );
        Box::pin(std::future::ready(Err(error)))
    }

    fn required_scopes(&self) -> &[String] {
        &self.scopes
    }
}

/// `2 s`, `1.5 s`, `250 ms`.
pub(super) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
