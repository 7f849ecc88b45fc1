//! How long a request waits and what happens when the connection fails it: the limits it
//! waits under ([`Wait`], progress starting the timeout again), and the rule for sending it
//! again: only what changes nothing on the server (the method table's `repeatable` column, or
//! a tool `tools/list` annotated `readOnlyHint` or `idempotentHint`), a few times, after a
//! backoff or the server's `Retry-After`, within the request's total time.

use std::sync::Arc;
use std::time::Duration;

use mcp_types::RequestId;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::error::ClientError;
use crate::transport::{Delivery, LocalFailure};

use crate::client::Inner;
use crate::{MAX_RESENDS, MAX_RETRY_AFTER, RESEND_BACKOFF_CAP, RESEND_BACKOFF_START};

/// The limits one request waits under.
#[derive(Debug, Clone)]
pub(crate) struct Wait {
    /// How long without an answer or a progress notification.
    pub(crate) idle: Duration,
    /// The longest in all, re-sends included.
    pub(crate) total: Duration,
    /// The progress token the request carries: its notifications start `idle` again.
    pub(crate) progress: Option<RequestId>,
}

/// Why one attempt at a request failed: for the caller, or a failure the transport made up
/// (which may be mended by sending again).
#[derive(Debug)]
pub(crate) enum Failed {
    Client(ClientError),
    Local(LocalFailure),
}

/// A request's progress token, registered while it waits; woken by each of its progress
/// notifications.
pub(crate) struct ProgressWaiter<'a> {
    inner: &'a Inner,
    token: RequestId,
    notify: Arc<Notify>,
}

impl<'a> ProgressWaiter<'a> {
    pub(crate) fn register(inner: &'a Inner, token: &RequestId) -> Self {
        let notify = Arc::new(Notify::new());
        if let Ok(mut waiters) = inner.progress_waiters.lock() {
            waiters.insert(token.clone(), notify.clone());
        }
        ProgressWaiter {
            inner,
            token: token.clone(),
            notify,
        }
    }
}

impl Drop for ProgressWaiter<'_> {
    fn drop(&mut self) {
        if let Ok(mut waiters) = self.inner.progress_waiters.lock() {
            waiters.remove(&self.token);
        }
    }
}

/// Resolves at the request's next progress notification; never without a token.
pub(crate) async fn progressed(waiter: Option<&ProgressWaiter<'_>>) {
    match waiter {
        Some(waiter) => waiter.notify.notified().await,
        None => std::future::pending().await,
    }
}

/// The error of a request whose wait ended at `at`: its total time when that was the
/// deadline, else its timeout.
pub(crate) fn timed_out(method: &str, wait: &Wait, at: Instant, deadline: Instant) -> ClientError {
    if at >= deadline {
        ClientError::TotalTimeout {
            method: method.to_owned(),
            after: wait.total,
        }
    } else {
        ClientError::Timeout {
            method: method.to_owned(),
            after: wait.idle,
        }
    }
}

/// The wait before sending `method` again after `failure`, or the error the caller gets.
pub(crate) fn resend_pause(
    method: &str,
    failure: LocalFailure,
    repeatable: bool,
    resends: u32,
    deadline: Instant,
) -> Result<Duration, ClientError> {
    let may_have_run = match failure.delivery {
        Delivery::Final => return Err(ClientError::Transport(failure.why)),
        Delivery::NotProcessed => false,
        Delivery::Unknown => true,
    };
    // Whether a request safe to repeat ran does not matter to its caller: when the client
    // gives up on it, the connection failed. For any other, it is the question.
    let stop = |why: String| {
        if repeatable {
            ClientError::Transport(why)
        } else {
            ClientError::Interrupted {
                method: method.to_owned(),
                may_have_run,
                why,
            }
        }
    };
    if !repeatable {
        return Err(stop(format!(
            "{}; the client did not send it again, as it is not known to be safe to repeat",
            failure.why
        )));
    }
    if resends >= MAX_RESENDS {
        return Err(stop(format!(
            "{}; the client gave up after sending it {} times",
            failure.why,
            resends + 1
        )));
    }
    let pause = match failure.retry_after {
        Some(asked) if asked > MAX_RETRY_AFTER => {
            return Err(stop(format!(
                "{}; the server asked to wait {} s before trying again, longer than the client waits ({} s)",
                failure.why,
                asked.as_secs(),
                MAX_RETRY_AFTER.as_secs()
            )));
        }
        Some(asked) => asked,
        None => (RESEND_BACKOFF_START * 2u32.saturating_pow(resends)).min(RESEND_BACKOFF_CAP),
    };
    if Instant::now() + pause >= deadline {
        return Err(stop(format!(
            "{}; no time was left to send it again",
            failure.why
        )));
    }
    Ok(pause)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(delivery: Delivery, retry_after: Option<Duration>) -> LocalFailure {
        LocalFailure {
            why: "the connection broke".into(),
            delivery,
            retry_after,
        }
    }

    #[tokio::test]
    async fn only_repeatable_requests_are_sent_again_within_their_limits() {
        let later = Instant::now() + Duration::from_secs(60);
        let unknown = failure(Delivery::Unknown, None);
        assert_eq!(
            resend_pause("tools/list", unknown.clone(), true, 0, later),
            Ok(RESEND_BACKOFF_START)
        );
        assert_eq!(
            resend_pause("tools/list", unknown.clone(), true, 2, later),
            Ok(RESEND_BACKOFF_START * 4)
        );
        assert_eq!(
            resend_pause("tools/call", unknown.clone(), false, 0, later),
            Err(ClientError::Interrupted {
                method: "tools/call".into(),
                may_have_run: true,
                why: "the connection broke; the client did not send it again, as it is not known to be safe to repeat".into(),
            })
        );
        assert_eq!(
            resend_pause("tools/list", unknown.clone(), true, MAX_RESENDS, later),
            Err(ClientError::Transport(
                "the connection broke; the client gave up after sending it 4 times".into()
            ))
        );
        let busy = failure(Delivery::NotProcessed, Some(Duration::from_secs(2)));
        assert_eq!(
            resend_pause("tools/list", busy.clone(), true, 0, later),
            Ok(Duration::from_secs(2))
        );
        let soon = Instant::now() + Duration::from_secs(1);
        assert!(matches!(
            resend_pause("tools/call", busy.clone(), false, 0, soon),
            Err(ClientError::Interrupted {
                may_have_run: false,
                ..
            })
        ));
        assert!(matches!(
            resend_pause("tools/list", busy, true, 0, soon),
            Err(ClientError::Transport(why)) if why.ends_with("no time was left to send it again")
        ));
        let too_long = failure(Delivery::NotProcessed, Some(MAX_RETRY_AFTER * 2));
        assert!(matches!(
            resend_pause("tools/list", too_long, true, 0, later),
            Err(ClientError::Transport(why)) if why.contains("asked to wait 60 s")
        ));
        assert_eq!(
            resend_pause(
                "tools/list",
                LocalFailure::fatal("too large"),
                true,
                0,
                later
            ),
            Err(ClientError::Transport("too large".into()))
        );
    }
}
