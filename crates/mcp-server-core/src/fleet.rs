//! A fleet of instances behind one endpoint, with nothing sticky: what a 2025-11-25 session
//! needs between its requests lives in a shared [`SessionStore`], and a [`Bus`] carries
//! between instances what must reach another one (a change notification, a client's answer to
//! a question another instance asked, a cancellation, a session's end).
//!
//! One process needs none of it: without [`Server::fleet`](crate::Server::fleet) a session
//! lives in its endpoint's table and change notifications stay in the process, as before.
//! [`MemorySessionStore`] and [`MemoryBus`] join several endpoints of one process (tests, or
//! two listeners); `mcp_store_redis` has the Redis ones a real fleet uses.
//!
//! What travels: a session's record (negotiated version, the client's capabilities and
//! identity from `initialize`, log level, resource subscriptions, the principal that opened
//! it), JSON-encoded; on the bus, JSON messages on three channels ([`CHANGES`],
//! [`SESSIONS`], and [`answers_channel`] of each instance).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::lifecycle::Implementation;
use mcp_types::logging::LoggingLevel;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};

use crate::futures::BoxFuture;
use crate::seal::Principal;

use crate::kept::Kept;

/// The channel every instance hears change notifications on.
pub const CHANGES: &str = "changes";
/// The channel every instance hears cancellations and session ends on.
pub const SESSIONS: &str = "sessions";
/// How many bus messages wait for a slow listener of one channel before the oldest are
/// dropped (a listener that far behind has lost them; it logs how many).
pub const BUS_QUEUE: usize = 1024;

/// The most bytes of bus messages waiting for one listener: past it a message is dropped, as
/// past [`BUS_QUEUE`] messages (security review X2: a thousand forwarded answers of a megabyte
/// each would otherwise wait in one instance's memory).
pub const BUS_QUEUE_BYTES: usize = 32 * 1024 * 1024;

/// The largest bus message a listener takes (larger ones are dropped): room for the largest
/// client answer an instance forwards (1 MiB), sealed.
pub const MAX_BUS_MESSAGE: usize = 4 * 1024 * 1024;

/// What waits for one listener of a [`Bus`], bounded by count ([`BUS_QUEUE`]) and by bytes
/// ([`BUS_QUEUE_BYTES`]), each message at most [`MAX_BUS_MESSAGE`]. A bus's
/// [`listen`](Bus::listen) makes one, returns its receiver, and [`offer`](Self::offer)s it
/// every message it hears; the listener reads the receiver as any channel.
#[derive(Debug)]
pub struct ListenerQueue {
    tx: mpsc::Sender<Vec<u8>>,
    /// The sizes of the messages handed over and maybe not yet read, oldest first.
    sizes: std::collections::VecDeque<usize>,
    bytes: usize,
    max_bytes: usize,
    dropped: u64,
}

/// What became of a message [`ListenerQueue::offer`] was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// It waits for the listener.
    Queued,
    /// Dropped (logged): the listener is that far behind, or the message is past
    /// [`MAX_BUS_MESSAGE`].
    Dropped,
    /// The listener is gone: stop listening.
    Closed,
}

impl ListenerQueue {
    /// A queue of the default bounds, and the receiver its listener reads.
    pub fn new() -> (Self, mpsc::Receiver<Vec<u8>>) {
        Self::with_bounds(BUS_QUEUE, BUS_QUEUE_BYTES)
    }

    /// A queue of at most `messages` messages and `bytes` bytes.
    pub fn with_bounds(messages: usize, bytes: usize) -> (Self, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel(messages.max(1));
        let queue = ListenerQueue {
            tx,
            sizes: std::collections::VecDeque::new(),
            bytes: 0,
            max_bytes: bytes,
            dropped: 0,
        };
        (queue, rx)
    }

    /// Hands `payload` to the listener unless that takes the queue past a bound.
    pub fn offer(&mut self, channel: &str, payload: Vec<u8>) -> Offered {
        if self.tx.is_closed() {
            return Offered::Closed;
        }
        // The channel is first in, first out: what it no longer holds, the listener read.
        let waiting = self.tx.max_capacity() - self.tx.capacity();
        while self.sizes.len() > waiting {
            self.bytes -= self.sizes.pop_front().unwrap_or(0);
        }
        let size = payload.len();
        let why = if size > MAX_BUS_MESSAGE {
            Some("a bus message past the size a listener takes was dropped")
        } else if self.bytes + size > self.max_bytes {
            Some("a bus listener is behind by its bytes; a message was dropped")
        } else {
            match self.tx.try_send(payload) {
                Ok(()) => {
                    self.sizes.push_back(size);
                    self.bytes += size;
                    None
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    Some("a bus listener is behind; a message was dropped")
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return Offered::Closed,
            }
        };
        match why {
            None => Offered::Queued,
            Some(why) => {
                self.dropped += 1;
                tracing::warn!(%channel, size, dropped = self.dropped, "{why}");
                Offered::Dropped
            }
        }
    }

    /// Resolves once the listener is gone.
    pub async fn closed(&self) {
        self.tx.closed().await;
    }
}

/// The channel on which fleet member `member` ([`Fleet::member`]) hears the answers to the
/// questions it asked; a publish on it with no listener says the member is gone.
pub fn answers_channel(member: &str) -> String {
    format!("answers:{member}")
}

/// What a member publishes on another's [`answers_channel`] to learn whether it still runs
/// (the count of listeners); listeners ignore it.
pub const PING: &[u8] = b"{}";

/// How long a member that no one hears on its [`answers_channel`] is looked for before it is
/// called gone: a live member whose bus connection dropped (Redis restarted) listens again
/// within about a second of Redis coming back, and is then found; a dead one never is.
pub const GONE_AFTER: Duration = Duration::from_secs(3);

/// Publishes `payload` on `channel` until someone hears it, for up to [`GONE_AFTER`]: how many
/// did, `0` only when nobody listened that whole time. A bus failure is returned at once.
pub async fn publish_heard(
    bus: &dyn Bus,
    channel: &str,
    payload: &[u8],
) -> Result<usize, FleetError> {
    let give_up = tokio::time::Instant::now() + GONE_AFTER;
    let mut pause = Duration::from_millis(100);
    loop {
        let heard = bus.publish(channel, payload).await?;
        if heard > 0 || tokio::time::Instant::now() + pause > give_up {
            return Ok(heard);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(800));
    }
}

/// Why a shared store or the bus could not serve: the text names the store (Redis, …) and
/// what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetError(pub String);

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FleetError {}

/// Where the 2025-11-25 sessions of a fleet live between requests. Records are opaque bytes
/// (a [`SessionRecord`] encoded); each expires after `idle` without a read or a write.
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// Stores `record` as session `id`'s, expiring after `idle`.
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a [u8],
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), FleetError>>;

    /// Session `id`'s record, its expiry pushed back to `idle` from now; `None` when there is
    /// no such session (it never was, was deleted, or expired).
    fn get<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, FleetError>>;

    /// Forgets session `id`; `true` when it existed.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, FleetError>>;

    /// Ends session `id`: stores its `tombstone` (a record that says it ended) for `keep`,
    /// and from then on, for as long as the tombstone lasts, a [`put`](Self::put) of `id`
    /// changes nothing, so that a record write in flight on another instance (a subscribe, a
    /// `setLevel`) cannot bring a deleted session back (security review X13). The default
    /// is a plain `put`, which such a write can overwrite; the memory and Redis stores refuse
    /// it.
    fn end<'a>(
        &'a self,
        id: &'a str,
        tombstone: &'a [u8],
        keep: Duration,
    ) -> BoxFuture<'a, Result<(), FleetError>> {
        self.put(id, tombstone, keep)
    }
}

/// Messages between the instances of a fleet. Delivery is at most once, to the instances
/// listening when the message is published (a publish reports how many that was).
pub trait Bus: Send + Sync + fmt::Debug {
    /// Sends `payload` to every listener of `channel`, this instance's included; how many
    /// listeners got it.
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<usize, FleetError>>;

    /// What is published on `channel` from now on, through a [`ListenerQueue`]: a listener
    /// that falls [`BUS_QUEUE`] messages or [`BUS_QUEUE_BYTES`] bytes behind loses what comes
    /// until it catches up, and no message past [`MAX_BUS_MESSAGE`] reaches it; one whose
    /// connection drops is reconnected by the bus. Call it from within a Tokio runtime.
    fn listen(&self, channel: &str) -> mpsc::Receiver<Vec<u8>>;
}

/// This instance's place in a fleet: its name (unique in the fleet: it names the questions it
/// asks, so an answer finds its way back), the shared session store and the bus.
#[derive(Clone)]
pub struct Fleet {
    pub(crate) instance: Arc<str>,
    /// `{instance}~{random}`: this process, which a restarted instance of the same name is not.
    pub(crate) member: Arc<str>,
    pub(crate) sessions: Arc<dyn SessionStore>,
    pub(crate) bus: Arc<dyn Bus>,
    /// The server's state keys, set when the server that runs this fleet has them: what the
    /// fleet stores and sends is sealed with them (see [`Fleet::seal`]).
    pub(crate) sealer: Arc<std::sync::OnceLock<Arc<mcp_state_seal::SealingBoundary>>>,
}

// A fleet is names and handles to shared stores, whose every operation is one message to the
// store: a panic in the middle of one leaves nothing half-written here for a later caller to
// see. Saying so keeps the types that carry a fleet (`ChangeNotifier`, the server) usable
// inside `catch_unwind`, as they were before fleets existed; the trait objects alone would not.
impl std::panic::UnwindSafe for Fleet {}
impl std::panic::RefUnwindSafe for Fleet {}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("instance", &self.instance)
            .field("sessions", &self.sessions)
            .field("bus", &self.bus)
            .finish()
    }
}

impl Fleet {
    /// Instance `instance` (letters, digits, `-`, `_`; unique in the fleet) of a fleet that
    /// shares `sessions` and `bus`.
    ///
    /// # Panics
    /// When `instance` is empty or holds another character: it is part of request ids and
    /// channel names, and a wrong name is a deployment error best seen at start.
    pub fn new(
        instance: impl Into<String>,
        sessions: impl SessionStore + 'static,
        bus: impl Bus + 'static,
    ) -> Self {
        Self::shared(instance, Arc::new(sessions), Arc::new(bus))
    }

    /// [`Fleet::new`] with stores already shared.
    pub fn shared(
        instance: impl Into<String>,
        sessions: Arc<dyn SessionStore>,
        bus: Arc<dyn Bus>,
    ) -> Self {
        let instance: String = instance.into();
        assert!(
            !instance.is_empty()
                && instance
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "a fleet instance name is letters, digits, '-' and '_', and not empty: {instance:?}"
        );
        // Random per process: a question, a stream or a claim of the process that died is not
        // mistaken for one of its successor under the same name.
        let process = mcp_state_seal::random_hex_id()
            .map(|hex| hex[..8].to_owned())
            .unwrap_or_else(|_| format!("{:08x}", std::process::id()));
        Fleet {
            member: format!("{instance}~{process}").into(),
            instance: instance.into(),
            sessions,
            bus,
            sealer: Arc::default(),
        }
    }

    /// Seals what this fleet stores and sends with `boundary` (the server's state keys; the
    /// service does it once, when the server has keys).
    pub(crate) fn seal_with(&self, boundary: Arc<mcp_state_seal::SealingBoundary>) {
        let _ = self.sealer.set(boundary);
    }

    /// Whether what this fleet stores and sends is sealed: `true` once a server with state
    /// keys ([`Server::request_state_security`](crate::Server::request_state_security), which
    /// every `McpServer` has) runs it.
    pub fn is_sealed(&self) -> bool {
        self.sealer.get().is_some()
    }

    /// `plain` as the shared store keeps it or the bus carries it as `item`: sealed with the
    /// server's state keys (encrypted, authenticated, and bound to the item: a session's record
    /// is refused as another session's, a message on one channel on another), or unchanged
    /// when the server has no keys. Whoever can write to the store or publish on the bus but
    /// does not hold the keys cannot write anything [`open`](Self::open) believes (security
    /// review X10).
    ///
    /// # Errors
    /// When `plain` is not UTF-8 text (records and messages are JSON) or sealing fails.
    pub fn seal(&self, item: FleetItem<'_>, plain: &[u8]) -> Result<Vec<u8>, FleetError> {
        let Some(sealer) = self.sealer.get() else {
            return Ok(plain.to_vec());
        };
        let text = std::str::from_utf8(plain)
            .map_err(|_| FleetError(format!("{} is not UTF-8 text", item.what())))?;
        let kind = item.kind();
        item.kept(&kind)
            .seal(sealer, text)
            .map(String::into_bytes)
            .map_err(|e| FleetError(format!("{} could not be sealed: {e}", item.what())))
    }

    /// What [`seal`](Self::seal) made of `item`, opened: the plain bytes, or an error when
    /// they were not sealed as this `item` with this server's keys (written by someone without
    /// them, copied from another item, or expired), logged at `warn` with the reason.
    ///
    /// # Errors
    /// As above; the message names the item and never its content.
    pub async fn open(&self, item: FleetItem<'_>, stored: &[u8]) -> Result<Vec<u8>, FleetError> {
        let Some(sealer) = self.sealer.get() else {
            return Ok(stored.to_vec());
        };
        let refused = || {
            FleetError(format!(
                "{} is not sealed with this server's keys: refused",
                item.what()
            ))
        };
        let token = std::str::from_utf8(stored).map_err(|_| refused())?;
        let kind = item.kind();
        match item.kept(&kind).open(sealer, token).await {
            Some(text) => Ok(text.into_bytes()),
            None => Err(refused()),
        }
    }

    /// Whether `stored` (as [`seal`](Self::seal) made it) was sealed with the key the server
    /// seals with now: `false` for one of an older key still accepted during a key rotation,
    /// which should be sealed again before that key is dropped. `true` without keys.
    pub fn sealed_with_current_key(&self, stored: &[u8]) -> bool {
        match (self.sealer.get(), std::str::from_utf8(stored)) {
            (None, _) => true,
            (Some(sealer), Ok(token)) => sealer.sealed_with_current_key(token),
            (Some(_), Err(_)) => false,
        }
    }

    /// This instance's name.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The shared session store.
    pub fn sessions(&self) -> &Arc<dyn SessionStore> {
        &self.sessions
    }

    /// The bus.
    pub fn bus(&self) -> &Arc<dyn Bus> {
        &self.bus
    }

    /// This process in the fleet: the instance name and a random part (`i1~3f9a01c2`), so
    /// that a restarted instance is another member.
    pub fn member(&self) -> &str {
        &self.member
    }

    /// The prefix of the ids of the server-to-client requests this process sends
    /// (`i1~3f9a01c2:` → `i1~3f9a01c2:7`): [`Fleet::asker`] reads the member back.
    pub fn request_prefix(&self) -> String {
        format!("{}:", self.member)
    }

    /// Which member ([`Fleet::member`]) sent the server-to-client request `id`, if a fleet
    /// member did.
    pub fn asker(id: &mcp_types::RequestId) -> Option<&str> {
        match id {
            mcp_types::RequestId::String(s) => {
                let (instance, n) = s.rsplit_once(':')?;
                (!instance.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    .then_some(instance)
            }
            mcp_types::RequestId::Number(_) => None,
        }
    }
}

/// What a fleet seals ([`Fleet::seal`]): each is bound to what it is, so that one is never
/// accepted as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetItem<'a> {
    /// The record of 2025-11-25 session `id` in the [`SessionStore`].
    SessionRecord(&'a str),
    /// A message on bus channel `channel`.
    BusMessage(&'a str),
}

/// How long a sealed session record is believed: longer than any session stays idle (the
/// store's expiry ends a record first); a record is sealed again whenever it changes, and when
/// it is read under a key about to be rotated out.
const SESSION_RECORD_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// How long a sealed bus message is believed: a message is heard within moments of its
/// publication or never; the margin covers a bus that is behind and clocks a little apart.
const BUS_MESSAGE_TTL: Duration = Duration::from_secs(300);

impl FleetItem<'_> {
    fn what(&self) -> &'static str {
        match self {
            FleetItem::SessionRecord(_) => "a session record",
            FleetItem::BusMessage(_) => "a bus message",
        }
    }

    /// The handle kind the item is sealed as: no request presents one (no tool declares a
    /// kind under `mcp/fleet/`), and it names the item.
    fn kind(&self) -> String {
        match self {
            FleetItem::SessionRecord(id) => format!("mcp/fleet/session-record/{id}"),
            FleetItem::BusMessage(channel) => format!("mcp/fleet/bus/{channel}"),
        }
    }

    fn kept<'k>(&self, kind: &'k str) -> Kept<'k> {
        let ttl = match self {
            FleetItem::SessionRecord(_) => SESSION_RECORD_TTL,
            FleetItem::BusMessage(_) => BUS_MESSAGE_TTL,
        };
        Kept {
            kind,
            ttl,
            what: self.what(),
        }
    }
}

/// What a 2025-11-25 session keeps between requests, as the shared store holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The version `initialize` negotiated.
    pub protocol_version: String,
    /// The client's capabilities from `initialize`.
    pub capabilities: ClientCapabilities,
    /// The client's name and version from `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    /// The level `logging/setLevel` chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// The resources the client subscribed to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<String>,
    /// Who opened the session (only they may use it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<StoredPrincipal>,
    /// The session was deleted: the record stays a while as a tombstone, so that a DELETE a
    /// load balancer re-sends (its first instance died after deleting) is answered `200`
    /// again, while every other request gets `404`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
    /// The address of the client that opened the session
    /// ([`TransportContext::peer`](crate::TransportContext::peer)): an instance that restores
    /// an anonymous session counts it against that client's share, as the instance that
    /// opened it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<std::net::IpAddr>,
}

/// A [`Principal`] as a session record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredPrincipal {
    /// [`Principal::client_id`].
    pub client_id: String,
    /// [`Principal::issuer`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// [`Principal::subject`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl From<&Principal> for StoredPrincipal {
    fn from(p: &Principal) -> Self {
        StoredPrincipal {
            client_id: p.client_id.clone(),
            issuer: p.issuer.clone(),
            subject: p.subject.clone(),
        }
    }
}

impl From<StoredPrincipal> for Principal {
    fn from(p: StoredPrincipal) -> Self {
        Principal {
            client_id: p.client_id,
            issuer: p.issuer,
            subject: p.subject,
        }
    }
}

impl SessionRecord {
    /// The record as the store keeps it.
    pub fn encode(&self) -> Vec<u8> {
        // A record is strings, numbers and JSON objects: it always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A stored record; an error names what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<Self, FleetError> {
        // From text, as every other decoder of these types reads: one instance of each.
        std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
            .map_err(|e| FleetError(format!("a stored session record is unreadable: {e}")))
    }

    /// The principal that opened the session.
    pub fn principal(&self) -> Option<Principal> {
        self.principal.clone().map(Principal::from)
    }
}

/// A record and when it expires.
/// A record, when it expires, and whether it is a tombstone ([`SessionStore::end`]).
type Stored = (Vec<u8>, tokio::time::Instant, bool);

/// Session records in this process's memory, for several endpoints of one process. Records
/// expire after their idle time; the store holds at most `max` (oldest-expiring evicted).
#[derive(Debug, Clone)]
pub struct MemorySessionStore {
    records: Arc<Mutex<HashMap<String, Stored>>>,
    max: usize,
}

/// The most records a [`MemorySessionStore`] holds unless configured.
pub const DEFAULT_MAX_MEMORY_SESSIONS: usize = 100_000;

impl Default for MemorySessionStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemorySessionStore {
    /// An empty store of up to [`DEFAULT_MAX_MEMORY_SESSIONS`] records.
    pub fn new() -> Self {
        Self::with_max(DEFAULT_MAX_MEMORY_SESSIONS)
    }

    /// An empty store of up to `max` records.
    pub fn with_max(max: usize) -> Self {
        MemorySessionStore {
            records: Arc::default(),
            max: max.max(1),
        }
    }
}

impl MemorySessionStore {
    fn records(&self) -> Result<std::sync::MutexGuard<'_, HashMap<String, Stored>>, FleetError> {
        self.records
            .lock()
            .map_err(|_| FleetError("the memory session store is poisoned".into()))
    }
}

impl SessionStore for MemorySessionStore {
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a [u8],
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), FleetError>> {
        Box::pin(async move {
            let now = tokio::time::Instant::now();
            let mut records = self.records()?;
            if !records.contains_key(id) && records.len() >= self.max {
                records.retain(|_, (_, until, _)| *until > now);
                if records.len() >= self.max {
                    let first = records
                        .iter()
                        .min_by_key(|(_, (_, until, _))| *until)
                        .map(|(k, _)| k.clone());
                    if let Some(first) = first {
                        records.remove(&first);
                    }
                }
            }
            if let Some((_, until, true)) = records.get(id)
                && *until > now
            {
                // Ended: a late write does not revive it.
                return Ok(());
            }
            records.insert(id.to_owned(), (record.to_vec(), now + idle, false));
            Ok(())
        })
    }

    fn end<'a>(
        &'a self,
        id: &'a str,
        tombstone: &'a [u8],
        keep: Duration,
    ) -> BoxFuture<'a, Result<(), FleetError>> {
        Box::pin(async move {
            let now = tokio::time::Instant::now();
            let mut records = self.records()?;
            records.insert(id.to_owned(), (tombstone.to_vec(), now + keep, true));
            Ok(())
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, FleetError>> {
        Box::pin(async move {
            let now = tokio::time::Instant::now();
            let mut records = self.records()?;
            match records.get_mut(id) {
                Some((record, until, _)) if *until > now => {
                    *until = now + idle;
                    Ok(Some(record.clone()))
                }
                Some(_) => {
                    records.remove(id);
                    Ok(None)
                }
                None => Ok(None),
            }
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, FleetError>> {
        Box::pin(async move {
            let mut records = self.records()?;
            Ok(records.remove(id).is_some())
        })
    }
}

/// One channel of a [`MemoryBus`]: its messages to every listener.
type Channel = broadcast::Sender<Arc<[u8]>>;

/// A bus inside this process (several endpoints of one process; tests).
#[derive(Debug, Clone, Default)]
pub struct MemoryBus {
    channels: Arc<Mutex<HashMap<String, Channel>>>,
}

impl MemoryBus {
    /// A bus with no listener yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn sender(&self, channel: &str) -> Option<Channel> {
        let mut channels = self.channels.lock().ok()?;
        Some(
            channels
                .entry(channel.to_owned())
                .or_insert_with(|| broadcast::channel(BUS_QUEUE).0)
                .clone(),
        )
    }
}

impl Bus for MemoryBus {
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<usize, FleetError>> {
        Box::pin(async move {
            let sender = self
                .sender(channel)
                .ok_or_else(|| FleetError("the memory bus is poisoned".into()))?;
            Ok(sender.send(Arc::from(payload)).unwrap_or(0))
        })
    }

    fn listen(&self, channel: &str) -> mpsc::Receiver<Vec<u8>> {
        let (mut queue, rx) = ListenerQueue::new();
        let Some(sender) = self.sender(channel) else {
            return rx;
        };
        let mut messages = sender.subscribe();
        let channel = channel.to_owned();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    () = queue.closed() => return,
                    message = messages.recv() => message,
                };
                match message {
                    Ok(message) => {
                        if queue.offer(&channel, message.to_vec()) == Offered::Closed {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(%channel, skipped = n, "a bus listener fell behind");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_queue_holds_so_many_messages_and_so_many_bytes() {
        let (mut queue, mut rx) = ListenerQueue::with_bounds(8, 4096);
        let kib = || vec![b'x'; 1024];
        for _ in 0..4 {
            assert_eq!(queue.offer("c", kib()), Offered::Queued);
        }
        // Four KiB wait: the fifth is past the bytes, however few the messages.
        assert_eq!(queue.offer("c", kib()), Offered::Dropped);
        // Read two: two more fit.
        rx.recv().await.unwrap();
        rx.recv().await.unwrap();
        assert_eq!(queue.offer("c", kib()), Offered::Queued);
        assert_eq!(queue.offer("c", kib()), Offered::Queued);
        assert_eq!(queue.offer("c", kib()), Offered::Dropped);
        // Small ones fill the count first.
        while rx.try_recv().is_ok() {}
        for _ in 0..8 {
            assert_eq!(queue.offer("c", b"{}".to_vec()), Offered::Queued);
        }
        assert_eq!(queue.offer("c", b"{}".to_vec()), Offered::Dropped);
        while rx.try_recv().is_ok() {}
        // No message past the largest one a listener takes, whatever room there is.
        let (mut roomy, _rx) = ListenerQueue::with_bounds(8, 64 * MAX_BUS_MESSAGE);
        assert_eq!(
            roomy.offer("c", vec![0; MAX_BUS_MESSAGE + 1]),
            Offered::Dropped
        );
        assert_eq!(roomy.offer("c", vec![0; MAX_BUS_MESSAGE]), Offered::Queued);
        drop(rx);
        assert_eq!(queue.offer("c", b"{}".to_vec()), Offered::Closed);
    }

    /// A listener of the memory bus that reads nothing holds at most the bytes bound.
    #[tokio::test]
    async fn a_memory_bus_listener_that_reads_nothing_holds_at_most_its_bytes() {
        let bus = MemoryBus::new();
        let mut rx = bus.listen("c");
        tokio::task::yield_now().await;
        let mib = vec![b'x'; 1024 * 1024];
        for _ in 0..(2 * BUS_QUEUE_BYTES / mib.len()) {
            assert_eq!(bus.publish("c", &mib).await.unwrap(), 1);
            tokio::task::yield_now().await;
        }
        let mut held = 0;
        while let Ok(message) = rx.try_recv() {
            held += message.len();
        }
        assert_eq!(held, BUS_QUEUE_BYTES);
    }

    /// The semver check of a release caught `ChangeNotifier` losing both when it began to
    /// carry a fleet: a caller's `catch_unwind` around code holding one stopped compiling.
    #[test]
    fn handles_that_carry_a_fleet_stay_unwind_safe() {
        fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
        unwind_safe::<Fleet>();
        unwind_safe::<crate::ChangeNotifier>();
    }

    #[test]
    fn asker_reads_back_the_request_prefix() {
        let fleet = Fleet::new("i-2", MemorySessionStore::new(), MemoryBus::new());
        let id = mcp_types::RequestId::String(format!("{}17", fleet.request_prefix()));
        assert_eq!(Fleet::asker(&id), Some(fleet.member()));
        assert!(fleet.member().starts_with("i-2~"), "{}", fleet.member());
        let again = Fleet::new("i-2", MemorySessionStore::new(), MemoryBus::new());
        assert_ne!(
            again.member(),
            fleet.member(),
            "a restarted instance is another member"
        );
        assert_eq!(Fleet::asker(&mcp_types::RequestId::Number(3)), None);
        assert_eq!(
            Fleet::asker(&mcp_types::RequestId::String("i1:x".into())),
            None
        );
        assert_eq!(
            Fleet::asker(&mcp_types::RequestId::String(":4".into())),
            None
        );
    }

    #[test]
    #[should_panic(expected = "a fleet instance name")]
    fn an_instance_name_with_a_colon_is_refused() {
        let _ = Fleet::new("i:1", MemorySessionStore::new(), MemoryBus::new());
    }

    /// Security review X13: a write after `end` does not bring the session back.
    #[tokio::test]
    async fn a_late_write_does_not_revive_an_ended_session() {
        let store = MemorySessionStore::new();
        let idle = Duration::from_secs(60);
        store.put("s", b"live", idle).await.unwrap();
        store.end("s", b"ended", idle).await.unwrap();
        store.put("s", b"revived", idle).await.unwrap();
        assert_eq!(store.get("s", idle).await.unwrap(), Some(b"ended".to_vec()));
    }

    #[test]
    fn a_record_round_trips_and_a_bad_one_names_itself() {
        let record = SessionRecord {
            protocol_version: "2025-11-25".into(),
            capabilities: ClientCapabilities::default(),
            client_info: None,
            log_level: Some(LoggingLevel::Info),
            subscriptions: vec!["file:///a".into()],
            principal: Some(StoredPrincipal::from(&Principal::new("app"))),
            ended: false,
            peer: Some("2001:db8::7".parse().unwrap()),
        };
        let bytes = record.encode();
        assert_eq!(SessionRecord::decode(&bytes).unwrap(), record);
        let err = SessionRecord::decode(b"{").unwrap_err();
        assert!(
            err.0.starts_with("a stored session record is unreadable"),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_memory_store_expires_idle_records_and_evicts_at_its_cap() {
        let store = MemorySessionStore::with_max(2);
        let idle = Duration::from_secs(10);
        store.put("a", b"1", idle).await.unwrap();
        store.put("b", b"2", idle).await.unwrap();
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(store.get("a", idle).await.unwrap(), Some(b"1".to_vec()));
        store.put("c", b"3", idle).await.unwrap();
        // "b" expired first: it made room.
        assert_eq!(store.get("b", idle).await.unwrap(), None);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(store.get("a", idle).await.unwrap(), None);
        assert_eq!(store.get("c", idle).await.unwrap(), None);
        store.put("d", b"4", idle).await.unwrap();
        assert!(store.remove("d").await.unwrap());
        assert!(!store.remove("d").await.unwrap());
    }

    #[tokio::test]
    async fn the_memory_bus_counts_listeners() {
        let bus = MemoryBus::new();
        assert_eq!(bus.publish("x", b"lost").await.unwrap(), 0);
        let mut rx = bus.listen("x");
        assert_eq!(bus.publish("x", b"hello").await.unwrap(), 1);
        assert_eq!(rx.recv().await.unwrap(), b"hello".to_vec());
    }

    /// Issue #48: a member whose bus connection dropped (Redis restarted) is not called gone
    /// while it reconnects: a publish nobody heard is tried again, for up to GONE_AFTER.
    /// Before, one publish heard by nobody answered the client "the process is gone" (410).
    #[tokio::test(start_paused = true)]
    async fn a_member_listening_again_soon_is_heard_and_a_gone_one_is_not() {
        let bus = Arc::new(MemoryBus::new());
        let later = bus.clone();
        let listener = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let mut rx = later.listen("answers:i1~0badc0de");
            rx.recv().await
        });
        let started = tokio::time::Instant::now();
        let heard = publish_heard(&*bus, "answers:i1~0badc0de", b"the answer")
            .await
            .unwrap();
        assert_eq!(heard, 1);
        assert!(started.elapsed() < GONE_AFTER);
        assert_eq!(listener.await.unwrap(), Some(b"the answer".to_vec()));

        let started = tokio::time::Instant::now();
        let heard = publish_heard(&*bus, "answers:i2~deadbeef", b"nobody")
            .await
            .unwrap();
        assert_eq!(heard, 0);
        let waited = started.elapsed();
        assert!(
            waited >= GONE_AFTER - Duration::from_millis(800) && waited <= GONE_AFTER,
            "{waited:?}"
        );
    }
}
