//! The Tasks extension (`io.modelcontextprotocol/tasks`) on the server: a `tools/call` whose
//! request declared the extension, to a tool that supports tasks, answers a
//! `CreateTaskResult` at once while its body runs in the background, outliving the request
//! that started it. The client polls `tasks/get`, answers questions with `tasks/update` and
//! stops the task with `tasks/cancel`.
//!
//! A task asks its user through the same machinery as any call: `ctx.elicit()`,
//! `ctx.create_message()`, `ctx.list_roots()` (and `ctx.send_request`) inside a task post an
//! input request to the task (status `input_required`, `inputRequests` in `tasks/get`) and
//! return the answer `tasks/update` delivers. Resolvers (`#[resolve]`) run before the task is
//! created, as multi-round-trip rounds on `tools/call` itself. `ctx.progress()` inside a task
//! sets its `statusMessage`. Cancellation reaches the body through `ctx.cancellation()`.
//!
//! Status rules: a body that returns a result (also one with `isError: true`) ends
//! `completed`; one that returns a JSON-RPC error ends `failed` (a panic, too, as `-32603`);
//! a body whose task was cancelled ends `cancelled` (it gets [`TaskConfig::cancel_grace`] to
//! wind down, then it is dropped). Tasks are bound to the principal that created them: for
//! anyone else a task does not exist (`-32602`, like an unknown id). They expire `ttlMs` after
//! creation. They are never offered on 2025-11-25 sessions, where a task-supporting tool simply
//! runs inline.

mod answers;
mod body;
mod config;
mod engine;
mod poll;
mod replay;
mod rerun;
mod store;
mod time;

pub use config::{
    DEFAULT_CANCEL_GRACE, DEFAULT_LEASE, DEFAULT_MAX_ANONYMOUS_TASKS_PER_ADDRESS,
    DEFAULT_MAX_QUESTIONS, DEFAULT_POLL_INTERVAL, DEFAULT_SWEEP_INTERVAL, DEFAULT_TASK_TTL,
    TaskConfig, TaskSupport,
};
pub(crate) use engine::{TaskCaller, TaskCtx, TaskEngine};
pub use engine::{detailed, owner_key};
pub(crate) use replay::Replay;
pub use replay::{MAX_REPLAY_BYTES, MAX_TASK_RUNS};
pub use store::{
    BoxFuture, DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_OWNER, InMemoryTaskStore, Lease,
    StoreError, TaskRecord, TaskStore, Terminal, system_now_ms,
};
pub use time::iso8601;

#[cfg(test)]
mod tests {
    use super::iso8601;

    /// The formatter `iso8601` replaced, as the reference.
    fn by_format(ms: u64) -> String {
        let secs = ms / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            ms % 1000
        )
    }

    #[test]
    fn iso8601_writes_known_instants() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_735_689_599_999), "2024-12-31T23:59:59.999Z");
        assert_eq!(iso8601(253_402_300_799_998), "9999-12-31T23:59:59.998Z");
        // Year 10000 and beyond take more digits, as before.
        assert_eq!(iso8601(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
    }

    #[test]
    fn iso8601_writes_what_the_formatter_wrote() {
        let mut ms = 0u64;
        while ms < 260_000_000_000_000 {
            assert_eq!(iso8601(ms), by_format(ms), "{ms}");
            ms = ms * 3 / 2 + 7_919_311;
        }
        for day in (0..3_652_425u64).step_by(97) {
            let ms = day * 86_400_000 + day * 7_777_777 % 86_400_000;
            assert_eq!(iso8601(ms), by_format(ms), "{ms}");
        }
        assert_eq!(iso8601(u64::MAX), by_format(u64::MAX));
    }
}
