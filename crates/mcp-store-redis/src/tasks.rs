//! Tasks on Redis. Each task is a hash (`{prefix}:task:{id}`, TTL the task's own, capped):
//! the record as JSON (`rec`), a version (`v`) that every change of the record bumps, so that
//! concurrent instances change it by compare-and-set on the version and never lose a write,
//! the worker's lease (`lease`, `"{until_ms} {worker}"`, renewed by a small script that
//! neither reads nor writes the record) and an end mark (`end`, so a renewal can refuse an
//! ended task without parsing it). Beside them: an index of live tasks by expiry
//! (`{prefix}:tasks`, for the fleet-wide cap), the leases of unfinished tasks by deadline
//! (`{prefix}:task-leases`, for failing tasks whose worker died, swept by one instance of the
//! fleet at a time under `{prefix}:task-sweep`), and a change channel
//! (`{prefix}:task-changed`) that wakes watchers on every instance.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use mcp_server_core::gating::ClientSupport;
use mcp_server_core::tasks::{BoxFuture, Lease, StoreError, TaskRecord, TaskStore, Terminal};
use mcp_types::mrtr::InputRequests;
use mcp_types::{ErrorObject, JsonObject};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::Shared;

/// How often a change is retried when another instance changed the task in between.
const CAS_ATTEMPTS: usize = 32;

/// The most lapsed leases (and expired index entries) one sweep handles; the next sweep
/// takes the rest.
const SWEEP_BATCH: usize = 256;

/// Keeps `ARGV[1]` as the replay `KEYS[2]` of the task `KEYS[1]`, expiring with it; `-1` when
/// the task is gone.
const SET_REPLAY: &str = r"
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return -1 end
if ttl < 0 then
  redis.call('SET', KEYS[2], ARGV[1])
else
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl)
end
return 1
";

/// Writes a new record if the version is still the one read (compare-and-set), and keeps the
/// lease and the lease index in step. KEYS[1] the task, KEYS[2] the lease index; ARGV[1] the
/// version read, ARGV[2] the new record, ARGV[3] its expiry (ms), ARGV[4] the id, ARGV[5] `1`
/// when the task ends with this write, ARGV[6] what happens to the lease (`keep`, `clear`,
/// `set`), ARGV[7] the new lease (`set`), ARGV[8] its deadline (`set`), ARGV[9] a time (ms):
/// when not empty, write only if the lease lapsed by then (the sweep's condition, which a
/// renewal, not bumping the version, could have changed). KEYS[3] the task's replay, deleted
/// when the task ends (a finished task never runs again: security review X1). Answers 1
/// written, 0 not.
const CAS: &str = r"
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
if ARGV[9] ~= '' then
  local lease = redis.call('HGET', KEYS[1], 'lease')
  if not lease or tonumber(string.match(lease, '^%d+')) > tonumber(ARGV[9]) then return 0 end
end
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'v', tonumber(ARGV[1]) + 1)
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'end', '1')
  redis.call('DEL', KEYS[3])
end
if ARGV[6] == 'clear' then
  redis.call('HDEL', KEYS[1], 'lease')
  redis.call('ZREM', KEYS[2], ARGV[4])
elseif ARGV[6] == 'set' then
  redis.call('HSET', KEYS[1], 'lease', ARGV[7])
  redis.call('ZADD', KEYS[2], ARGV[8], ARGV[4])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
";

/// Takes or renews a lease (review W10: a few bytes each way, the record untouched).
/// KEYS[1] the task, KEYS[2] the lease index; ARGV[1] the worker, ARGV[2] the new deadline
/// (ms), ARGV[3] now (ms), ARGV[4] the id. Answers 1 (held until the deadline), 0 (the task
/// ended, or another worker's lease has not lapsed) or -1 (no such task).
const CLAIM: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[1], 'end') == 1 then return 0 end
local lease = redis.call('HGET', KEYS[1], 'lease')
if lease then
  local until_ms, worker = string.match(lease, '^(%d+) (.*)$')
  if worker ~= ARGV[1] and tonumber(until_ms) > tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[1], 'lease', ARGV[2] .. ' ' .. ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
return 1
";

/// Creates a task in one step, so that no crash or lost connection leaves a record outside
/// the indexes (review W17). KEYS[1] the task, KEYS[2] the index of live tasks by expiry,
/// KEYS[3] the lease index; ARGV[1] now (ms), ARGV[2] the fleet's cap, ARGV[3] the record,
/// ARGV[4] its expiry (ms), ARGV[5] the id, ARGV[6] its lease (empty: none), ARGV[7] the
/// lease's deadline (ms), ARGV[8] `1` when the task has already ended; KEYS[4] the owner's
/// index of live tasks by expiry, ARGV[9] `1` when the task has an owner, ARGV[10] the
/// owner's cap (review W9). Answers 1 (created), 0 (the id is taken), -1 (the fleet holds its
/// cap) or -2 (the owner holds its cap); only 1 writes.
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return -1 end
if ARGV[9] == '1' then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[1])
  if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[10]) then return -2 end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if ARGV[9] == '1' then
  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[5])
  local left = redis.call('PTTL', KEYS[4])
  if left < 0 or left < tonumber(ARGV[4]) - tonumber(ARGV[1]) then
    redis.call('PEXPIREAT', KEYS[4], ARGV[4])
  end
end
redis.call('HSET', KEYS[1], 'rec', ARGV[3], 'v', 1)
if ARGV[8] == '1' then redis.call('HSET', KEYS[1], 'end', '1') end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'lease', ARGV[6]) end
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
if ARGV[6] ~= '' then redis.call('ZADD', KEYS[3], ARGV[7], ARGV[5]) end
return 1
";

/// Marks that one instance of the fleet sweeps now: the first to set it sweeps, and it is not
/// given back, so the fleet sweeps about once per `every`. It lives nine tenths of `every`,
/// so that an instance alone (whose timer has the same period) sweeps on each of its ticks
/// rather than every other one.
fn sweep_lock_cmd(key: &str, every: std::time::Duration) -> redis::Cmd {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key)
        .arg(1)
        .arg("NX")
        .arg("PX")
        .arg((every.as_millis() * 9 / 10).max(1) as u64);
    cmd
}

/// The record as stored.
#[derive(Serialize, Deserialize)]
struct Stored {
    id: String,
    owner: Option<String>,
    /// Five flags (older records kept the whole capabilities object under another name,
    /// which is ignored: such a task asks for nothing).
    #[serde(default)]
    client_support: ClientSupport,
    status_message: Option<String>,
    created_at_ms: u64,
    last_updated_at_ms: u64,
    ttl_ms: Option<u64>,
    poll_interval_ms: Option<u64>,
    outstanding: InputRequests,
    answers: BTreeMap<String, Value>,
    used_keys: BTreeSet<String>,
    cancel_requested: bool,
    terminal: Option<StoredTerminal>,
}

#[derive(Serialize, Deserialize)]
enum StoredTerminal {
    Completed(JsonObject),
    Failed(ErrorObject),
    Cancelled,
}

fn to_text(r: &TaskRecord) -> Result<String, StoreError> {
    let stored = Stored {
        id: r.id.clone(),
        owner: r.owner.clone(),
        client_support: r.client_support,
        status_message: r.status_message.clone(),
        created_at_ms: r.created_at_ms,
        last_updated_at_ms: r.last_updated_at_ms,
        ttl_ms: r.ttl_ms,
        poll_interval_ms: r.poll_interval_ms,
        outstanding: r.outstanding.clone(),
        answers: r.answers.clone(),
        used_keys: r.used_keys.clone(),
        cancel_requested: r.cancel_requested,
        terminal: r.terminal.as_ref().map(|t| match t {
            Terminal::Completed(o) => StoredTerminal::Completed(o.clone()),
            Terminal::Failed(e) => StoredTerminal::Failed(e.clone()),
            Terminal::Cancelled => StoredTerminal::Cancelled,
        }),
    };
    serde_json::to_string(&stored)
        .map_err(|e| StoreError::Backend(format!("a task record does not serialize: {e}")))
}

fn from_text(text: &str) -> Result<TaskRecord, StoreError> {
    let s: Stored = serde_json::from_str(text)
        .map_err(|e| StoreError::Backend(format!("a stored task record does not parse: {e}")))?;
    Ok(TaskRecord {
        id: s.id,
        owner: s.owner,
        client_support: s.client_support,
        status_message: s.status_message,
        created_at_ms: s.created_at_ms,
        last_updated_at_ms: s.last_updated_at_ms,
        ttl_ms: s.ttl_ms,
        poll_interval_ms: s.poll_interval_ms,
        outstanding: s.outstanding,
        answers: s.answers,
        used_keys: s.used_keys,
        cancel_requested: s.cancel_requested,
        terminal: s.terminal.map(|t| match t {
            StoredTerminal::Completed(o) => Terminal::Completed(o),
            StoredTerminal::Failed(e) => Terminal::Failed(e),
            StoredTerminal::Cancelled => Terminal::Cancelled,
        }),
        // The lease is a field of its own, filled in by the reader.
        lease: None,
    })
}

/// A lease as its field holds it: `"{until_ms} {worker}"`.
fn lease_text(lease: &Lease) -> String {
    format!("{} {}", lease.until_ms, lease.worker)
}

fn lease_of(text: &str) -> Result<Lease, StoreError> {
    text.split_once(' ')
        .and_then(|(until, worker)| {
            Some(Lease {
                worker: worker.to_owned(),
                until_ms: until.parse().ok()?,
            })
        })
        .ok_or_else(|| StoreError::Backend(format!("a stored task lease does not parse: {text:?}")))
}

/// What a write does to the lease field.
#[derive(Debug, PartialEq)]
enum LeaseChange {
    Keep,
    Clear,
    Set(Lease),
}

fn backend(e: String) -> StoreError {
    StoreError::Backend(e)
}

/// Watch feeds of this process, by task id, fed by the change channel.
type Feeds = Arc<Mutex<HashMap<String, watch::Sender<u64>>>>;

/// [`TaskStore`] on Redis, shared by every instance of a fleet (see the module docs).
pub struct RedisTaskStore {
    shared: Arc<Shared>,
    cas: redis::Script,
    create: redis::Script,
    claim: redis::Script,
    feeds: Feeds,
    subscriber: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.shared.config.prefix)
            .field("max_tasks", &self.shared.config.max_tasks)
            .finish()
    }
}

impl Drop for RedisTaskStore {
    fn drop(&mut self) {
        if let Ok(mut subscriber) = self.subscriber.lock()
            && let Some(task) = subscriber.take()
        {
            task.abort();
        }
    }
}

impl RedisTaskStore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RedisTaskStore {
            shared,
            cas: redis::Script::new(CAS),
            create: redis::Script::new(CREATE),
            claim: redis::Script::new(CLAIM),
            feeds: Arc::default(),
            subscriber: Mutex::new(None),
        }
    }

    fn task_key(&self, id: &str) -> String {
        self.shared.key(&["task", id])
    }

    fn replay_key(&self, id: &str) -> String {
        self.shared.key(&["task-replay", id])
    }

    /// The tasks whose lease lapsed by `now_ms`, a batch at a time.
    async fn lapsed_leases(&self, now_ms: u64) -> Result<Vec<String>, StoreError> {
        self.due("task-leases", &self.shared.key(&["task-leases"]), now_ms)
            .await
    }

    /// A batch of the members of the sorted set `key` scored `now_ms` or less.
    async fn due(&self, what: &str, key: &str, now_ms: u64) -> Result<Vec<String>, StoreError> {
        self.shared
            .run(
                &format!("ZRANGEBYSCORE {what}"),
                redis::cmd("ZRANGEBYSCORE")
                    .arg(key)
                    .arg("-inf")
                    .arg(now_ms)
                    .arg("LIMIT")
                    .arg(0)
                    .arg(SWEEP_BATCH),
            )
            .await
            .map_err(backend)
    }

    async fn has_replay(&self, id: &str) -> Result<bool, StoreError> {
        self.shared
            .run::<i64>(
                "EXISTS task-replay",
                redis::cmd("EXISTS").arg(self.replay_key(id)),
            )
            .await
            .map(|n| n > 0)
            .map_err(backend)
    }

    fn channel(&self) -> String {
        self.shared.key(&["task-changed"])
    }

    /// When the record's key expires: its TTL, capped by the retention.
    fn expires_at(&self, r: &TaskRecord) -> u64 {
        let cap = r
            .created_at_ms
            .saturating_add(self.shared.config.max_task_retention.as_millis() as u64);
        r.expires_at_ms().map_or(cap, |at| at.min(cap))
    }

    /// The record, its version and its lease, in one `HMGET`.
    async fn read(&self, id: &str) -> Result<Option<(String, TaskRecord)>, StoreError> {
        let (text, version, lease): (Option<String>, Option<String>, Option<String>) = self
            .shared
            .run(
                "HMGET task",
                redis::cmd("HMGET")
                    .arg(self.task_key(id))
                    .arg("rec")
                    .arg("v")
                    .arg("lease"),
            )
            .await
            .map_err(backend)?;
        let (Some(text), Some(version)) = (text, version) else {
            return Ok(None);
        };
        let mut record = from_text(&text)?;
        record.lease = lease.as_deref().map(lease_of).transpose()?;
        if record.expires_at_ms().is_some_and(|at| at <= self.now_ms()) {
            return Ok(None);
        }
        Ok(Some((version, record)))
    }

    /// Reads, changes and writes back the task, again if another instance wrote in between.
    /// With `only_lapsed`, the write happens only if the lease lapsed at the time of the change
    /// (a renewal does not bump the version, so the script checks it).
    async fn update<T>(
        &self,
        id: &str,
        only_lapsed: bool,
        mut change: impl FnMut(&mut TaskRecord, u64) -> Result<(T, bool), StoreError>,
    ) -> Result<T, StoreError> {
        for _ in 0..CAS_ATTEMPTS {
            let Some((version, mut record)) = self.read(id).await? else {
                return Err(StoreError::NotFound);
            };
            let now = self.now_ms();
            let lease_before = record.lease.clone();
            let ended_before = record.terminal.is_some();
            let (out, changed) = change(&mut record, now)?;
            let ends = !ended_before && record.terminal.is_some();
            let lease = if ends {
                LeaseChange::Clear
            } else if record.lease == lease_before {
                LeaseChange::Keep
            } else {
                record
                    .lease
                    .clone()
                    .map_or(LeaseChange::Clear, LeaseChange::Set)
            };
            if !changed && lease == LeaseChange::Keep {
                return Ok(out);
            }
            if changed {
                record.last_updated_at_ms = now;
            }
            let (op, lease_text, lease_until) = match &lease {
                LeaseChange::Keep => ("keep", String::new(), 0),
                LeaseChange::Clear => ("clear", String::new(), 0),
                LeaseChange::Set(l) => ("set", lease_text(l), l.until_ms),
            };
            let mut invocation = self.cas.key(self.task_key(id));
            invocation
                .key(self.shared.key(&["task-leases"]))
                .key(self.replay_key(id))
                .arg(&version)
                .arg(to_text(&record)?)
                .arg(self.expires_at(&record))
                .arg(id)
                .arg(if ends { "1" } else { "" })
                .arg(op)
                .arg(lease_text)
                .arg(lease_until)
                .arg(if only_lapsed {
                    now.to_string()
                } else {
                    String::new()
                });
            let written: i64 = self
                .shared
                .script("compare-and-set of a task", &invocation)
                .await
                .map_err(backend)?;
            if written == 1 {
                if changed {
                    self.publish(id).await;
                }
                return Ok(out);
            }
        }
        Err(StoreError::Backend(format!(
            "the task changed under {CAS_ATTEMPTS} attempts to update it"
        )))
    }

    async fn publish(&self, id: &str) {
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(self.channel()).arg(id);
        if let Err(e) = self.shared.run::<i64>("PUBLISH task change", &cmd).await {
            // Watchers poll as well: a lost wake-up only delays them by one poll interval.
            tracing::warn!(error = %e, "a task change was not published");
        }
    }

    /// Starts the change-channel subscriber once: it wakes this process's feeds.
    fn ensure_subscriber(&self) {
        let Ok(mut subscriber) = self.subscriber.lock() else {
            return;
        };
        if subscriber.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.shared.client.clone();
        let channel = self.channel();
        let feeds = self.feeds.clone();
        let timeout = self.shared.config.command_timeout;
        *subscriber = Some(runtime.spawn(async move {
            loop {
                match subscribe(&client, &channel, timeout).await {
                    Ok(pubsub) => listen(pubsub, &feeds).await,
                    Err(e) => tracing::warn!(error = %e, "task change channel unavailable"),
                }
                // Reconnect after a pause; meanwhile watchers fall back to polling.
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        }));
    }
}

pub(crate) async fn subscribe(
    client: &redis::Client,
    channel: &str,
    timeout: std::time::Duration,
) -> Result<redis::aio::PubSub, String> {
    let connect = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok::<_, redis::RedisError>(pubsub)
    };
    match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(pubsub)) => Ok(pubsub),
        Ok(Err(e)) => Err(format!("Redis SUBSCRIBE: {e}")),
        Err(_) => Err(format!("Redis SUBSCRIBE: no answer within {timeout:?}")),
    }
}

async fn listen(mut pubsub: redis::aio::PubSub, feeds: &Feeds) {
    use futures_util::StreamExt;
    let mut messages = pubsub.on_message();
    while let Some(message) = messages.next().await {
        let Ok(id) = message.get_payload::<String>() else {
            continue;
        };
        if let Ok(mut feeds) = feeds.lock() {
            feeds.retain(|_, feed| feed.receiver_count() > 0);
            if let Some(feed) = feeds.get(&id) {
                feed.send_modify(|revision| *revision += 1);
            }
        }
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let limit = self.shared.config.max_tasks;
            let per_owner = self.shared.config.max_tasks_per_owner;
            let (lease, lease_until) = match (&record.terminal, &record.lease) {
                (None, Some(lease)) => (lease_text(lease), lease.until_ms),
                _ => (String::new(), 0),
            };
            let mut invocation = self.create.key(self.task_key(&record.id));
            invocation
                .key(self.shared.key(&["tasks"]))
                .key(self.shared.key(&["task-leases"]))
                .key(
                    self.shared
                        .key(&["owner-tasks", record.owner.as_deref().unwrap_or("")]),
                )
                .arg(self.now_ms())
                .arg(limit)
                .arg(to_text(&record)?)
                .arg(self.expires_at(&record))
                .arg(&record.id)
                .arg(lease)
                .arg(lease_until)
                .arg(if record.terminal.is_some() { "1" } else { "" })
                .arg(if record.owner.is_some() { "1" } else { "" })
                .arg(per_owner);
            let created: i64 = self
                .shared
                .script("creation of a task", &invocation)
                .await
                .map_err(backend)?;
            match created {
                1 => Ok(()),
                -1 => Err(StoreError::Full { limit }),
                -2 => Err(StoreError::OwnerFull { limit: per_owner }),
                _ => Err(StoreError::Backend(format!(
                    "task id {} is taken",
                    record.id
                ))),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move { Ok(self.read(id).await?.map(|(_, record)| record)) })
    }

    fn set_status_message<'a>(
        &'a self,
        id: &'a str,
        message: Option<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.update(id, false, |r, _| {
                if r.terminal.is_some() {
                    return Err(StoreError::Finished);
                }
                let changed = r.status_message != message;
                r.status_message = message.clone();
                Ok(((), changed))
            })
            .await
        })
    }

    fn add_input_requests<'a>(
        &'a self,
        id: &'a str,
        requests: InputRequests,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.update(id, false, |r, _| {
                if r.terminal.is_some() {
                    return Err(StoreError::Finished);
                }
                if let Some(k) = requests.keys().find(|k| r.used_keys.contains(*k)) {
                    return Err(StoreError::KeyReused(k.clone()));
                }
                r.used_keys.extend(requests.keys().cloned());
                r.outstanding.extend(requests.clone());
                Ok(((), true))
            })
            .await
        })
    }

    fn resolve_inputs<'a>(
        &'a self,
        id: &'a str,
        responses: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            self.update(id, false, |r, _| {
                let mut delivered = Vec::new();
                for (key, value) in &responses {
                    if r.outstanding.remove(key).is_some() {
                        r.answers.insert(key.clone(), value.clone());
                        delivered.push(key.clone());
                    }
                }
                let changed = !delivered.is_empty();
                Ok((delivered, changed))
            })
            .await
        })
    }

    fn take_answer<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        Box::pin(async move {
            // Taking changes the record (the answer leaves it), but wakes nobody.
            let mut taken = None;
            self.update(id, false, |r, _| {
                taken = r.answers.remove(key);
                Ok(((), taken.is_some()))
            })
            .await?;
            Ok(taken)
        })
    }

    fn request_cancel<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.update(id, false, |r, _| {
                let changed = r.terminal.is_none() && !r.cancel_requested;
                if changed {
                    r.cancel_requested = true;
                }
                Ok(((), changed))
            })
            .await
        })
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        terminal: Terminal,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            self.update(id, false, |r, _| {
                if r.terminal.is_some() {
                    return Ok((false, false));
                }
                r.terminal = Some(terminal.clone());
                r.outstanding.clear();
                r.answers.clear();
                r.lease = None;
                Ok((true, true))
            })
            .await
        })
    }

    fn claim<'a>(
        &'a self,
        id: &'a str,
        worker: &'a str,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            // The same transition as TaskRecord::claim_lease, on the lease field alone.
            let mut invocation = self.claim.key(self.task_key(id));
            invocation
                .key(self.shared.key(&["task-leases"]))
                .arg(worker)
                .arg(until_ms)
                .arg(self.now_ms())
                .arg(id);
            let claimed: i64 = self
                .shared
                .script("lease of a task", &invocation)
                .await
                .map_err(backend)?;
            match claimed {
                1 => Ok(true),
                0 => Ok(false),
                _ => Err(StoreError::NotFound),
            }
        })
    }

    fn expire(&self, now_ms: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            // One instance of the fleet sweeps per period (review W10): the others skip.
            let lock = self.shared.key(&["task-sweep"]);
            let sweeping: Option<String> = self
                .shared
                .run(
                    "SET NX task-sweep",
                    &sweep_lock_cmd(&lock, self.shared.config.task_sweep_interval),
                )
                .await
                .map_err(backend)?;
            if sweeping.is_none() {
                return Ok(Vec::new());
            }
            // Tasks past their TTL: their keys expired in Redis; drop them from the index.
            let index = self.shared.key(&["tasks"]);
            let removed = self.due("tasks", &index, now_ms).await?;
            if !removed.is_empty() {
                let mut zrem = redis::cmd("ZREM");
                zrem.arg(&index).arg(&removed);
                let _: i64 = self
                    .shared
                    .run("ZREM tasks", &zrem)
                    .await
                    .map_err(backend)?;
            }
            // Unfinished tasks whose worker stopped renewing its lease end failed.
            let lapsed = self.lapsed_leases(now_ms).await?;
            for id in lapsed {
                // A task that can run again waits for an engine to take it (`lapsed`).
                if self.has_replay(&id).await? {
                    continue;
                }
                let outcome = self
                    .update(&id, true, |r, now| {
                        if r.terminal.is_none()
                            && let Some(lease) = r.lease.take_if(|l| l.until_ms <= now)
                        {
                            let why = lease.lost();
                            r.terminal = Some(Terminal::Failed(ErrorObject::internal(why.clone())));
                            r.status_message = Some(why);
                            r.outstanding.clear();
                            return Ok(((), true));
                        }
                        Ok(((), false))
                    })
                    .await;
                if let Err(StoreError::NotFound) = outcome {
                    let mut zrem = redis::cmd("ZREM");
                    zrem.arg(self.shared.key(&["task-leases"])).arg(&id);
                    let _: i64 = self
                        .shared
                        .run("ZREM task-leases", &zrem)
                        .await
                        .map_err(backend)?;
                } else {
                    outcome?;
                }
            }
            Ok(removed)
        })
    }

    fn set_replay<'a>(
        &'a self,
        id: &'a str,
        replay: Vec<u8>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            // The replay lives as long as its task's key.
            let script = redis::Script::new(SET_REPLAY);
            let mut invocation = script.key(self.task_key(id));
            invocation.key(self.replay_key(id)).arg(replay);
            let kept: i64 = self
                .shared
                .script("SET task-replay", &invocation)
                .await
                .map_err(backend)?;
            if kept < 0 {
                return Err(StoreError::NotFound);
            }
            Ok(true)
        })
    }

    fn replay<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            self.shared
                .run(
                    "GET task-replay",
                    redis::cmd("GET").arg(self.replay_key(id)),
                )
                .await
                .map_err(backend)
        })
    }

    fn lapsed(&self, now_ms: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let lapsed = self.lapsed_leases(now_ms).await?;
            let mut rerunnable = Vec::new();
            for id in lapsed {
                if self.has_replay(&id).await? {
                    rerunnable.push(id);
                }
            }
            Ok(rerunnable)
        })
    }

    fn watch(&self, id: &str) -> Option<watch::Receiver<u64>> {
        self.ensure_subscriber();
        let mut feeds = self.feeds.lock().ok()?;
        Some(
            feeds
                .entry(id.to_owned())
                .or_insert_with(|| watch::Sender::new(0))
                .subscribe(),
        )
    }
}
