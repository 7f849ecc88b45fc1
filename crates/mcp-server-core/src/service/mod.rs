//! The transport-facing service: how any transport feeds messages in and gets responses out.
//!
//! - [`Service::handle_modern`] serves one stateless 2026-07-28 request (what an HTTP POST
//!   carries) and returns its [`ResponseStream`]: request-scoped notifications, then the
//!   response. Dropping the stream cancels the handler.
//! - [`Service::connect`] opens a [`Session`] for a stream transport (stdio, a socket, an
//!   in-memory pipe) or a legacy HTTP session: every message of the connection goes through
//!   [`Session::handle`]; an `initialize` starts a 2025-11-25 session on it, while requests
//!   carrying the 2026-07-28 envelope are always served statelessly. Unsolicited messages
//!   (legacy list-changed and resource-updated notifications) arrive on the receiver
//!   `connect` returns.

mod boundary;
mod dispatch;
mod envelope;
mod inner;
mod legacy;
mod modern;
mod reply;
mod route;
mod session;
mod subscriptions;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use mcp_types::capabilities::ServerCapabilities;
use mcp_types::lifecycle::Implementation;
use mcp_types::{ClientRequest, JsonRpcMessage, JsonRpcRequest, ParamsError};
use tokio::sync::mpsc;

use crate::cancel::CancellationToken;
use crate::limits::SessionLimits;
use crate::notify::{ChangeEvent, ChangeNotifier};
use crate::peer::Pending;
use crate::server::Server;
use mcp_types::param_header::ParamHeader;

pub use crate::transport::{Delivery, ResponseStream, TransportContext, client_group};
pub use dispatch::resource_not_found;
pub(crate) use inner::Inner;
pub use inner::{LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS};
pub use session::Session;

use inner::{Route, SessionState};
use route::spawn_request;

/// A server ready to be driven by transports. Cheap to clone.
#[derive(Clone)]
pub struct Service {
    inner: Arc<Inner>,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("server", &self.inner.server)
            .finish()
    }
}

impl Server {
    /// Turns the server into the service transports drive.
    pub fn into_service(self) -> Service {
        Service::new(self)
    }
}

impl Service {
    pub(crate) fn new(server: Server) -> Self {
        let capabilities = server.capabilities();
        if let (Some(fleet), Some(boundary)) = (&server.fleet, &server.boundary) {
            // Session records and bus messages under the keys `requestState` is sealed with
            // (security review X10).
            fleet.seal_with(boundary.clone());
        }
        // 2025-11-25 has no `extensions` capability and its own core tasks: only the
        // extensions that serve both eras are advertised there.
        let legacy_extensions = server.extensions.advertised(true);
        let legacy_capabilities = ServerCapabilities {
            extensions: (!legacy_extensions.is_empty()).then_some(legacy_extensions),
            ..capabilities.clone()
        };
        let service = Service {
            inner: Arc::new(Inner {
                capabilities,
                legacy_capabilities,
                notifier: ChangeNotifier::for_fleet(server.fleet.clone()),
                server_info: crate::stamp::server_info_bytes(&server.info).into(),
                fleet_joined: std::sync::atomic::AtomicBool::new(false),
                server,
            }),
        };
        service.arm_task_reruns();
        service
    }

    /// The `x-mcp-header` annotations of tool `name`, if it has any (see
    /// [`Server::tool_input_schema`]).
    pub fn param_headers(&self, tool: &str) -> Option<&[ParamHeader]> {
        let tools = &self.inner.server.tools;
        if !tools.any_headers() {
            return None;
        }
        tools.named(tool).and_then(|t| t.param_headers.as_deref())
    }

    /// The scopes a request to `method` naming `target` (a tool or prompt name, a resource
    /// URI) needs: every scope its layers require ([`crate::policy::RequireScopes`]), each
    /// once. Empty when none does, and then without a lookup when the server has no layer. A
    /// transport that authenticates tokens checks them before it runs the request, to refuse
    /// in its own terms (the HTTP endpoint's 403 `insufficient_scope` challenge).
    pub fn required_scopes(&self, method: &str, target: Option<&str>) -> Vec<String> {
        let server = &self.inner.server;
        if !server.has_layers() {
            return Vec::new();
        }
        server
            .policy
            .required_scopes(method, server.layers_of(method, target))
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Whether any layer requires a scope (a transport need not look for a request's target
    /// when none does).
    pub fn requires_scopes(&self) -> bool {
        self.inner.server.requires_scopes()
    }

    /// The limits every session of this service runs under.
    pub fn limits(&self) -> &SessionLimits {
        &self.inner.server.limits
    }

    /// The server's identity.
    pub fn server_info(&self) -> &Implementation {
        &self.inner.server.info
    }

    /// What `server/discover` advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// A handle to announce list changes and resource updates to every subscriber.
    pub fn notifier(&self) -> ChangeNotifier {
        self.inner.notifier.clone()
    }

    /// Lets the task engine run again, here, a task whose worker was lost (see
    /// `tasks/rerun.rs`): the context is the one its first run had, detached.
    fn arm_task_reruns(&self) {
        // Replays and answers are sealed with the state keys whenever the server has both
        // (security review X10), re-runs or not.
        if let (Some(engine), Some(boundary)) = (
            self.inner.server.tasks.as_ref(),
            self.inner.server.boundary.as_ref(),
        ) {
            engine.seal_replays_with(boundary.clone());
        }
        let Some(engine) = self.inner.server.tasks.as_ref() else {
            return;
        };
        if !self
            .inner
            .server
            .tools
            .iter()
            .any(|(_, t)| t.rerun.is_some())
        {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        engine.set_rerunner(Arc::new(move |replay, task, token| {
            let inner = weak.upgrade()?;
            let rerun = inner.server.tools.named(&replay.tool)?.rerun.clone()?;
            let principal = replay.principal.clone().map(Into::into);
            let transport = TransportContext {
                principal: principal.clone(),
                ..TransportContext::default()
            };
            let mut ctx = crate::RequestContext {
                id: mcp_types::RequestId::String("task-rerun".into()),
                method: std::borrow::Cow::Borrowed(mcp_types::methods::TOOLS_CALL),
                era: mcp_types::version::Era::Modern,
                protocol_version: crate::context::version_text(&replay.protocol_version),
                client_capabilities: Arc::new(replay.capabilities.clone()),
                client_info: None,
                meta: None,
                principal,
                request_state: None,
                input_responses: None,
                progress_token: None,
                log_level: None,
                sink: crate::sink::Sink::detached(),
                cancellation: token,
                peer: None,
                notifier: inner.notifier.clone(),
                task,
                sealing: crate::sealing::Sealing::of(inner.server.boundary.as_ref(), &transport),
                state: inner.server.state.clone(),
            };
            ctx.keep_for_task();
            Some(rerun(ctx, replay.arguments.clone()))
        }));
    }

    /// The fleet this instance belongs to ([`Server::fleet`]), if any.
    pub fn fleet(&self) -> Option<&crate::fleet::Fleet> {
        self.inner.server.fleet.as_ref()
    }

    /// Starts hearing the changes other instances of the fleet raise, so that this
    /// instance's subscribers (`subscriptions/listen` streams, legacy sessions) get them too;
    /// once per service, from within a Tokio runtime (a transport calls it when it starts
    /// serving). Without a fleet, nothing to do.
    pub fn join_fleet(&self) {
        let Some(fleet) = self.fleet() else {
            return;
        };
        if self
            .inner
            .fleet_joined
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let mut changes = fleet.bus().listen(crate::fleet::CHANGES);
        let (fleet, me) = (fleet.clone(), fleet.member().to_owned());
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let item = crate::fleet::FleetItem::BusMessage(crate::fleet::CHANGES);
            while let Some(payload) = changes.recv().await {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                // One not sealed with the fleet's keys is refused (and logged) by `open`.
                let Ok(plain) = fleet.open(item, &payload).await else {
                    continue;
                };
                match serde_json::from_slice::<crate::notify::ChangeMessage>(&plain) {
                    Ok(message) if message.from != me => {
                        inner.notifier.raise_here(message.event.event());
                    }
                    Ok(_) => {}
                    Err(e) => tracing::debug!(error = %e, "an unreadable change message ignored"),
                }
            }
        });
    }

    /// Opens a connection for a 2025-11-25 session another instance of the fleet opened (or
    /// this one, before a restart), from its stored record: as if its `initialize` had run
    /// here. `transport` is the session's kept context (its principal).
    pub fn restore(
        &self,
        record: &crate::fleet::SessionRecord,
        transport: TransportContext,
    ) -> (Session, mpsc::Receiver<JsonRpcMessage>) {
        let (session, unsolicited) = self.connect(transport);
        session.restore(record);
        (session, unsolicited)
    }

    /// How many task bodies (Tasks extension) run in this process now: a draining transport
    /// waits for them (bounded), since a body cannot move to another instance.
    pub fn running_tasks(&self) -> usize {
        self.inner
            .server
            .tasks
            .as_ref()
            .map_or(0, crate::tasks::TaskEngine::running)
    }

    /// Ends every `subscriptions/listen` stream with its result. In-flight calls finish.
    pub fn shutdown(&self) {
        self.inner.notifier.send(ChangeEvent::Shutdown);
    }

    /// Serves one stateless 2026-07-28 request. The caller has already checked whatever its
    /// transport adds (HTTP headers); this checks the `_meta` envelope, the version, the method
    /// and the params, in that order, then runs the handler.
    pub fn handle_modern(
        &self,
        request: JsonRpcRequest,
        transport: TransportContext,
    ) -> ResponseStream {
        let typed = ClientRequest::from_request(&request);
        self.handle_modern_decoded(request, typed, transport)
    }

    /// [`Service::handle_modern`] for a transport that has already decoded the params (to
    /// check its own headers against them): `typed` must be
    /// `ClientRequest::from_request(&request)`, so the body is decoded once.
    pub fn handle_modern_decoded(
        &self,
        request: JsonRpcRequest,
        typed: Result<ClientRequest, ParamsError>,
        transport: TransportContext,
    ) -> ResponseStream {
        spawn_request(
            self.inner.clone(),
            request,
            typed,
            Route::Modern {
                transport,
                session: None,
            },
        )
    }

    /// Opens a connection. Drop the [`Session`] (or call [`Session::close`]) when the
    /// transport ends.
    pub fn connect(
        &self,
        transport: TransportContext,
    ) -> (Session, mpsc::Receiver<JsonRpcMessage>) {
        let (outbound, rx) = mpsc::channel(self.inner.server.limits.unsolicited_queue.max(1));
        let state = Arc::new(SessionState {
            inner: self.inner.clone(),
            transport,
            outbound,
            legacy: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
            inflight: Mutex::new(HashMap::new()),
            pending: Arc::new(Pending::named(
                self.fleet().map(crate::fleet::Fleet::request_prefix),
            )),
            closed: CancellationToken::new(),
            changed: std::sync::OnceLock::new(),
            deliver: std::sync::OnceLock::new(),
            #[cfg(feature = "otel")]
            opened: std::time::Instant::now(),
        });
        (Session { state }, rx)
    }
}
