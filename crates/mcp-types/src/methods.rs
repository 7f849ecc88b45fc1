//! Method names and the per-revision method tables: which requests and notifications exist in
//! which revision, in which direction, and which may answer `input_required`.

use crate::version::{Era, ProtocolVersion};

/// `server/discover`.
pub const SERVER_DISCOVER: &str = "server/discover";
/// `initialize` (2025-11-25 only).
pub const INITIALIZE: &str = "initialize";
/// `ping` (2025-11-25 only).
pub const PING: &str = "ping";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (2025-11-25 only).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (2025-11-25 only).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `logging/setLevel` (2025-11-25 only).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `subscriptions/listen` (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `elicitation/create`.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `sampling/createMessage`.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `roots/list`.
pub const ROOTS_LIST: &str = "roots/list";
/// `tasks/get` (2025-11-25 core; an extension method in 2026-07-28).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result` (2025-11-25 only).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25 only).
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel` (2025-11-25 core; an extension method in 2026-07-28).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/update` (an extension method in 2026-07-28 only; see [`crate::ext::tasks`]).
pub const TASKS_UPDATE: &str = "tasks/update";

/// `notifications/initialized` (2025-11-25 only).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled`.
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// `notifications/message`.
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// `notifications/resources/updated`.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/resources/list_changed`.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/tools/list_changed`.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/roots/list_changed` (2025-11-25 only).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/elicitation/complete` (2025-11-25 only).
pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `notifications/subscriptions/acknowledged` (2026-07-28).
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";
/// `notifications/tasks/status` (2025-11-25 only).
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";

/// The methods allowed inside `inputRequests`.
pub const INPUT_REQUEST_METHODS: [&str; 3] =
    [ELICITATION_CREATE, SAMPLING_CREATE_MESSAGE, ROOTS_LIST];

/// A request (answered) or a notification (never answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A request.
    Request,
    /// A notification.
    Notification,
}

/// Who sends the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server.
    ClientToServer,
    /// Server to client.
    ServerToClient,
}

/// Where a method stands with the Tasks extension (`io.modelcontextprotocol/tasks`) on
/// 2026-07-28.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskRole {
    /// Not a method of the extension.
    None,
    /// Served by the extension (`tasks/get`, `tasks/update`, `tasks/cancel`).
    Served,
    /// Removed by the extension (`tasks/result`, `tasks/list`): answered `-32601`.
    Removed,
}

/// One row of the method table: every fact about a method that a crate of this workspace
/// needs, written once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSpec {
    /// The method name.
    pub name: &'static str,
    /// Request or notification.
    pub kind: Kind,
    /// Who sends it.
    pub direction: Direction,
    /// Exists in 2025-11-25.
    pub legacy: bool,
    /// Exists in 2026-07-28 (the core revision; an extension's methods say so in `task`).
    pub modern: bool,
    /// Its 2026-07-28 result may be `input_required`.
    pub input_required: bool,
    /// Its 2026-07-28 result carries `ttlMs` and `cacheScope`.
    pub cacheable: bool,
    /// Sending it twice changes nothing on the server: a client may send it again after the
    /// connection failed it (`tools/call` is not, though a tool's `readOnlyHint` or
    /// `idempotentHint` may make one call so).
    pub repeatable: bool,
    /// The parameter the HTTP transport's `Mcp-Name` header repeats, if any.
    pub name_param: Option<&'static str>,
    /// Its place in the Tasks extension.
    pub task: TaskRole,
}

const fn row(
    name: &'static str,
    kind: Kind,
    direction: Direction,
    legacy: bool,
    modern: bool,
) -> MethodSpec {
    MethodSpec {
        name,
        kind,
        direction,
        legacy,
        modern,
        input_required: false,
        cacheable: false,
        repeatable: false,
        name_param: None,
        task: TaskRole::None,
    }
}

impl MethodSpec {
    const fn input_required(mut self) -> Self {
        self.input_required = true;
        self
    }
    const fn cacheable(mut self) -> Self {
        self.cacheable = true;
        self
    }
    const fn repeatable(mut self) -> Self {
        self.repeatable = true;
        self
    }
    const fn named_by(mut self, param: &'static str) -> Self {
        self.name_param = Some(param);
        self
    }
    const fn task(mut self, role: TaskRole) -> Self {
        self.task = role;
        self
    }
}

use Direction::{ClientToServer as C2S, ServerToClient as S2C};
use Kind::{Notification as N, Request as R};

/// Every method of both revisions, by name, kind and direction.
///
/// On 2026-07-28 `elicitation/create`, `sampling/createMessage` and `roots/list` are not
/// JSON-RPC requests at all: they only travel inside `inputRequests` (see
/// [`INPUT_REQUEST_METHODS`]).
pub const METHODS: &[MethodSpec] = &[
    row(SERVER_DISCOVER, R, C2S, false, true)
        .cacheable()
        .repeatable(),
    row(INITIALIZE, R, C2S, true, false),
    row(PING, R, C2S, true, false).repeatable(),
    row(TOOLS_LIST, R, C2S, true, true).cacheable().repeatable(),
    row(TOOLS_CALL, R, C2S, true, true)
        .input_required()
        .named_by("name"),
    row(PROMPTS_LIST, R, C2S, true, true)
        .cacheable()
        .repeatable(),
    row(PROMPTS_GET, R, C2S, true, true)
        .input_required()
        .repeatable()
        .named_by("name"),
    row(RESOURCES_LIST, R, C2S, true, true)
        .cacheable()
        .repeatable(),
    row(RESOURCES_TEMPLATES_LIST, R, C2S, true, true)
        .cacheable()
        .repeatable(),
    row(RESOURCES_READ, R, C2S, true, true)
        .input_required()
        .cacheable()
        .repeatable()
        .named_by("uri"),
    row(RESOURCES_SUBSCRIBE, R, C2S, true, false),
    row(RESOURCES_UNSUBSCRIBE, R, C2S, true, false),
    row(COMPLETION_COMPLETE, R, C2S, true, true),
    row(LOGGING_SET_LEVEL, R, C2S, true, false),
    row(SUBSCRIPTIONS_LISTEN, R, C2S, false, true),
    row(TASKS_GET, R, C2S, true, false)
        .task(TaskRole::Served)
        .repeatable()
        .named_by("taskId"),
    row(TASKS_UPDATE, R, C2S, false, false)
        .task(TaskRole::Served)
        .named_by("taskId"),
    row(TASKS_RESULT, R, C2S, true, false).task(TaskRole::Removed),
    row(TASKS_LIST, R, C2S, true, false).task(TaskRole::Removed),
    row(TASKS_CANCEL, R, C2S, true, false)
        .task(TaskRole::Served)
        .named_by("taskId"),
    row(PING, R, S2C, true, false),
    row(SAMPLING_CREATE_MESSAGE, R, S2C, true, false),
    row(ROOTS_LIST, R, S2C, true, false),
    row(ELICITATION_CREATE, R, S2C, true, false),
    row(TASKS_GET, R, S2C, true, false),
    row(TASKS_RESULT, R, S2C, true, false),
    row(TASKS_LIST, R, S2C, true, false),
    row(TASKS_CANCEL, R, S2C, true, false),
    row(NOTIFICATION_INITIALIZED, N, C2S, true, false),
    row(NOTIFICATION_CANCELLED, N, C2S, true, true),
    row(NOTIFICATION_PROGRESS, N, C2S, true, false),
    row(NOTIFICATION_ROOTS_LIST_CHANGED, N, C2S, true, false),
    row(NOTIFICATION_TASKS_STATUS, N, C2S, true, false),
    row(NOTIFICATION_CANCELLED, N, S2C, true, true),
    row(NOTIFICATION_PROGRESS, N, S2C, true, true),
    row(NOTIFICATION_MESSAGE, N, S2C, true, true),
    row(NOTIFICATION_RESOURCES_UPDATED, N, S2C, true, true),
    row(NOTIFICATION_RESOURCES_LIST_CHANGED, N, S2C, true, true),
    row(NOTIFICATION_TOOLS_LIST_CHANGED, N, S2C, true, true),
    row(NOTIFICATION_PROMPTS_LIST_CHANGED, N, S2C, true, true),
    row(NOTIFICATION_ELICITATION_COMPLETE, N, S2C, true, false),
    row(NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, N, S2C, false, true),
    row(NOTIFICATION_TASKS_STATUS, N, S2C, true, false),
];

impl MethodSpec {
    /// Whether this method exists in the era.
    pub const fn in_era(&self, era: Era) -> bool {
        match era {
            Era::Modern => self.modern,
            Era::Legacy => self.legacy,
        }
    }
}

/// Whether `method` exists as a message of `kind` sent in `direction` under `version`.
pub fn exists(version: ProtocolVersion, method: &str, kind: Kind, direction: Direction) -> bool {
    METHODS.iter().any(|m| {
        m.name == method && m.kind == kind && m.direction == direction && m.in_era(version.era())
    })
}

/// Whether `method` exists in any revision this crate knows (in any role).
pub fn is_known(method: &str) -> bool {
    METHODS.iter().any(|m| m.name == method)
}

/// The methods of an era that a sender in `direction` may use, as `kind`.
pub fn methods_of(
    era: Era,
    kind: Kind,
    direction: Direction,
) -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(move |m| m.kind == kind && m.direction == direction && m.in_era(era))
        .map(|m| m.name)
}

/// The row of the client-to-server request `method`, if the table has one.
pub fn request(method: &str) -> Option<&'static MethodSpec> {
    METHODS
        .iter()
        .find(|m| m.name == method && m.kind == Kind::Request && m.direction == C2S)
}

/// Whether a 2026-07-28 result of `method` may be `input_required`.
pub fn may_return_input_required(method: &str) -> bool {
    request(method).is_some_and(|m| m.input_required)
}

/// Whether a 2026-07-28 result of `method` carries the caching hints.
pub fn is_cacheable(method: &str) -> bool {
    request(method).is_some_and(|m| m.cacheable)
}

/// Whether sending the client request `method` twice changes nothing on the server (the
/// `repeatable` column of [`MethodSpec`]).
pub fn is_repeatable(method: &str) -> bool {
    request(method).is_some_and(|m| m.repeatable)
}

/// The parameter of `method` that the `Mcp-Name` header repeats (`name`, `uri`, `taskId`).
pub fn name_param(method: &str) -> Option<&'static str> {
    request(method).and_then(|m| m.name_param)
}

/// Where the client request `method` stands with the Tasks extension.
pub fn task_role(method: &str) -> TaskRole {
    request(method).map_or(TaskRole::None, |m| m.task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_match_the_digest() {
        let modern: Vec<_> =
            methods_of(Era::Modern, Kind::Request, Direction::ClientToServer).collect();
        assert_eq!(
            modern,
            [
                SERVER_DISCOVER,
                TOOLS_LIST,
                TOOLS_CALL,
                PROMPTS_LIST,
                PROMPTS_GET,
                RESOURCES_LIST,
                RESOURCES_TEMPLATES_LIST,
                RESOURCES_READ,
                COMPLETION_COMPLETE,
                SUBSCRIPTIONS_LISTEN
            ]
        );
        // Every era's sets against the official schemas' unions: tests/schema.rs,
        // `the_method_table_is_the_schemas_unions`.
        assert_eq!(
            methods_of(Era::Modern, Kind::Request, Direction::ServerToClient).count(),
            0
        );
        assert_eq!(
            methods_of(Era::Modern, Kind::Notification, Direction::ClientToServer)
                .collect::<Vec<_>>(),
            [NOTIFICATION_CANCELLED]
        );
        assert!(!exists(
            ProtocolVersion::V2026_07_28,
            PING,
            Kind::Request,
            Direction::ClientToServer
        ));
        assert!(exists(
            ProtocolVersion::V2025_11_25,
            ELICITATION_CREATE,
            Kind::Request,
            Direction::ServerToClient
        ));
        assert!(may_return_input_required(PROMPTS_GET));
        assert!(!may_return_input_required(TOOLS_LIST));
        assert!(is_cacheable(RESOURCES_READ) && !is_cacheable(TOOLS_CALL));
        let input_required: Vec<_> = METHODS
            .iter()
            .filter(|m| m.input_required)
            .map(|m| m.name)
            .collect();
        assert_eq!(input_required, [TOOLS_CALL, PROMPTS_GET, RESOURCES_READ]);
        let cacheable = METHODS.iter().filter(|m| m.cacheable).count();
        assert_eq!(cacheable, 6);
        assert_eq!(name_param(TOOLS_CALL), Some("name"));
        assert_eq!(name_param(RESOURCES_READ), Some("uri"));
        assert_eq!(name_param(TASKS_UPDATE), Some("taskId"));
        assert_eq!(name_param(TOOLS_LIST), None);
        assert_eq!(task_role(TASKS_UPDATE), TaskRole::Served);
        assert_eq!(task_role(TASKS_LIST), TaskRole::Removed);
        assert_eq!(task_role(TOOLS_CALL), TaskRole::None);
    }
}
