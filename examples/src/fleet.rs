//! fleet: every instance shares the request-state keys, so a round started on one instance
//! can finish on any other, and keys rotate without dropping a round in flight.
//!
//! Rotation in three deployments, each one rolled out to every instance:
//!
//! 1. `[OLD, NEW]`: everyone can verify NEW before anyone seals with it;
//! 2. `[NEW, OLD]`: seal with NEW, still accept rounds sealed with OLD;
//! 3. `[NEW]`: after the state's lifetime (ten minutes by default), drop OLD.

use std::sync::Arc;
use std::time::Duration;

use mcp::policy::{Rate, RateLimit, RateStore};
use mcp::tasks::{TaskConfig, TaskStore, TaskSupport};
use mcp::{
    Accepted, Context, ElicitationResult, McpServer, Refusal, RequestStateSecurity, Resolution,
    ToolDef,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// The environment variable holding the ring: secrets separated by commas, the sealing one
/// first, each at least 32 bytes (`openssl rand -base64 32` makes a good one).
pub const KEYS_VAR: &str = "MCP_STATE_KEYS";

/// The answer to "Restart …?".
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Go ahead with the restart.
    pub ok: bool,
}

/// Always asks before restarting.
#[mcp::resolver]
pub async fn confirm_restart(service: &str) -> Resolution<Confirm> {
    Resolution::elicit(format!("Restart {service} on every instance?"))
}

/// Restart a service across the fleet, after confirmation.
#[mcp::tool]
pub async fn restart(
    /// The service to restart.
    service: String,
    #[resolve(confirm_restart)] confirm: Accepted<Confirm>,
) -> String {
    if confirm.0.ok {
        format!("Restarted {service}.")
    } else {
        format!("{service} keeps running.")
    }
}

/// The window a deployment goes out in.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Window {
    /// When: `now` or `tonight`.
    pub when: String,
}

/// First round of `deploy`: which window.
#[mcp::resolver]
pub async fn pick_window(service: &str) -> Resolution<Window> {
    Resolution::elicit(format!("When should {service} be deployed?"))
}

/// Second round of `deploy`, asked once the window is known.
#[mcp::resolver]
pub async fn confirm_deploy(
    service: &str,
    #[resolve(pick_window)] window: Accepted<Window>,
) -> Resolution<Confirm> {
    Resolution::elicit(format!("Deploy {service} {}?", window.0.when))
}

/// Deploy a service: two questions, one after the other (three rounds on 2026-07-28).
#[mcp::tool]
pub async fn deploy(
    /// The service to deploy.
    service: String,
    #[resolve(pick_window)] window: Accepted<Window>,
    #[resolve(confirm_deploy)] confirm: Accepted<Confirm>,
) -> String {
    if confirm.0.ok {
        format!("Deploying {service} {}.", window.0.when)
    } else {
        format!("{service} is not deployed.")
    }
}

/// Answers at once, on any instance.
#[mcp::tool]
pub async fn status(
    /// The service to report on.
    service: String,
) -> String {
    format!("{service} is healthy.")
}

/// How often one caller may call `lookup`: per user, or per client address for anonymous
/// callers (the address the trusted proxy names), across the fleet when the rate store is
/// shared.
pub const LOOKUP_RATE: u32 = 20;

/// Answers at once, on any instance, at most [`LOOKUP_RATE`] times a minute per caller.
#[mcp::tool(read_only)]
pub async fn lookup(
    /// The service whose owner to name.
    service: String,
) -> String {
    format!("{service} is run by the platform team.")
}

/// The resource whose sub-resources `announce` updates (`fleet://notices/{n}`): subscribe to
/// it (a legacy `resources/subscribe`, or a `subscriptions/listen` stream) to hear them.
pub const NOTICES: &str = "fleet://notices";

/// The arguments of `announce`.
#[derive(Deserialize, JsonSchema)]
pub struct Announce {
    /// Which notice: `fleet://notices/{n}` is announced as updated.
    pub n: u64,
}

/// Raises one resource update (`fleet://notices/{n}`) on whichever instance serves the
/// call; in a fleet every subscriber on every instance hears it once.
pub fn announce() -> ToolDef {
    ToolDef::new("announce")
        .description("Announce notice n as updated to every subscriber of fleet://notices.")
        .arguments::<Announce>()
        .handler(|ctx: Context, a: Announce| async move {
            ctx.notifier()
                .resource_updated(format!("{NOTICES}/{}", a.n));
            format!("Announced notice {}.", a.n)
        })
}

/// The arguments of `reindex`.
#[derive(Deserialize, JsonSchema)]
pub struct Reindex {
    /// The index to rebuild.
    pub index: String,
}

/// How long `reindex` works once confirmed.
pub const REINDEX_WORK: Duration = Duration::from_millis(1500);

/// A task that is safe to run again (`idempotentHint`): when the instance running it dies, another
/// instance runs it again from the start, and the confirmation already given is not asked
/// again (docs/scale-out.md, "Tasks that outlive their worker").
pub fn reindex() -> ToolDef {
    ToolDef::new("reindex")
        .description("Rebuild an index, after confirmation, as a task; safe to run again.")
        .arguments::<Reindex>()
        .annotations(mcp::types::tools::ToolAnnotations {
            idempotent_hint: Some(true),
            ..Default::default()
        })
        .task(TaskSupport::Optional)
        .handler(|ctx: Context, r: Reindex| async move {
            let question = format!("Rebuild {} now?", r.index);
            // A question that could not be asked (the task store failing, say) is not the
            // tool's failure: `?` answers the call with that JSON-RPC error (a task ends
            // `failed` with it), never an `isError` result a client would take for the tool's.
            match ctx.elicit::<Confirm>(question).await.map_err(Refusal)? {
                ElicitationResult::Accepted(Confirm { ok: true }) => {
                    tokio::time::sleep(REINDEX_WORK).await;
                    Ok(format!("Reindexed {}.", r.index))
                }
                _ => Ok::<_, Refusal>(format!("{} left as it is.", r.index)),
            }
        })
}

/// The arguments of `migrate`.
#[derive(Deserialize, JsonSchema)]
pub struct Migrate {
    /// The database to migrate.
    pub database: String,
}

/// A task that asks for confirmation from inside (the Tasks extension): created on one
/// instance, followed and answered through any instance when the task store is shared.
pub fn migrate() -> ToolDef {
    ToolDef::new("migrate")
        .description("Migrate a database, after confirmation, as a task.")
        .arguments::<Migrate>()
        .task(TaskSupport::Optional)
        .handler(|ctx: Context, m: Migrate| async move {
            let question = format!("Migrate {} now?", m.database);
            // As `reindex`: a question that could not be asked answers with its error.
            match ctx.elicit::<Confirm>(question).await.map_err(Refusal)? {
                ElicitationResult::Accepted(Confirm { ok: true }) => {
                    Ok(format!("Migrated {}.", m.database))
                }
                _ => Ok::<_, Refusal>(format!("{} left as it is.", m.database)),
            }
        })
}

/// Parses the ring from the text of [`KEYS_VAR`].
pub fn security_from(keys: &str) -> Result<RequestStateSecurity, String> {
    let secrets: Vec<&str> = keys.split(',').map(str::trim).collect();
    RequestStateSecurity::keys(secrets).map_err(|e| format!("{KEYS_VAR}: {e}"))
}

/// The fleet server over the shared ring, its tasks in `tasks` (a store every instance
/// shares, such as Redis) or, without one, in this process; one instance of `fleet` (its
/// 2025-11-25 sessions and change notifications shared) when given; `lookup`'s rate limit
/// in `rates` (shared by the fleet) or in this process.
pub fn server(
    security: RequestStateSecurity,
    tasks: Option<Arc<dyn TaskStore>>,
    fleet: Option<mcp::fleet::Fleet>,
    rates: Option<Arc<dyn RateStore>>,
) -> McpServer {
    // A short lease: a task whose instance died is failed ("worker lost") within seconds.
    let mut config = TaskConfig::new()
        .poll_interval(Duration::from_millis(100))
        .lease(Duration::from_secs(3));
    if let Some(store) = tasks {
        config = config.shared_store(store);
    }
    let mut limit =
        RateLimit::per_principal("lookup", Rate::new(LOOKUP_RATE, Duration::from_secs(60)));
    if let Some(rates) = rates {
        limit = limit.shared_store(rates);
    }
    let server = McpServer::new("fleet")
        .tool(lookup)
        .tool_layer("lookup", limit)
        .tool(restart)
        .tool(deploy)
        .tool(status)
        .tool(migrate())
        .tool(reindex())
        .tool(announce())
        .resource(
            mcp::ResourceDef::new(NOTICES, "notices")
                .description("The notices `announce` updates (fleet://notices/{n}).")
                .handler(|_ctx| async { String::from("Subscribe to hear announcements.") }),
        )
        .tasks(config)
        .request_state_security(security);
    match fleet {
        Some(fleet) => server.fleet(fleet),
        None => server,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_comes_from_the_environment_text() {
        assert!(
            security_from(
                "a-secret-of-at-least-32-bytes-long!!, another-secret-of-32-bytes-or-more"
            )
            .is_ok()
        );
        let short = security_from("short").err().unwrap();
        assert!(short.starts_with("MCP_STATE_KEYS: "), "{short}");
    }
}
