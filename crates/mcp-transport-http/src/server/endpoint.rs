//! The running endpoint: its configuration, the service, the caps, the legacy sessions and the
//! drain flag, and the pipeline every request goes through: where it comes from, who sends
//! it, its headers, its body under the limits, its place under the caps, then the era it
//! belongs to (the 2026-07-28 route, or a 2025-11-25 session).

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http_body::Body;
use hyper::{Method, Request, Response, StatusCode};
use mcp_server_core::{Delivery, LEGACY_VERSIONS, ResponseStream, Service, TransportContext};
use mcp_types::frame::ClientFrame;
use mcp_types::messages::ClientRequest;
use mcp_types::{ErrorCode, ErrorObject, JsonRpcMessage};

use super::body::McpBody;
use super::config::Config;
use super::gate::{
    authenticate, check_origin_and_host, check_scopes, cors_headers, metadata, preflight,
};
use super::guards::Guards;
use super::legacy::Sessions;
use super::modern::{check_modern_headers, handle_modern, respond};
use super::reply::{accepted, error, not_allowed, plain, plain_owned};
use super::request::{
    Incoming, accepted_media, check_post_headers, header_str, names, parse_message, read_body,
};
use crate::probe::Probe;

/// The endpoint as it runs: built from a [`Config`] once, shared by every request.
pub(crate) struct Endpoint {
    pub(crate) service: Service,
    pub(crate) config: Config,
    guards: Guards,
    pub(crate) sessions: Arc<Sessions>,
    /// `true` once `serve_with_shutdown` began to drain.
    pub(crate) draining: tokio::sync::watch::Sender<bool>,
}

impl Endpoint {
    /// The running state for `service` configured by `config`: fresh caps, no session.
    pub(crate) fn new(service: Service, config: Config) -> Self {
        Endpoint {
            guards: Guards::new(&config),
            sessions: Arc::new(Sessions::new(&config, &service)),
            draining: tokio::sync::watch::Sender::new(false),
            service,
            config,
        }
    }

    /// What the endpoint was built from.
    pub(crate) fn into_parts(self) -> (Service, Config) {
        (self.service, self.config)
    }

    /// Requests running here, detached ones included (see [`Guards::running`]).
    pub(crate) fn requests_running(&self) -> usize {
        self.guards.running()
    }

    pub(crate) fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// One request through the pipeline: check where it comes from, authenticate, check its
    /// headers, read its body under the limits, route it by era, respond.
    /// `peer` is the address of the connection when this server accepted it (for the
    /// per-client shares), `None` when mounted in another router.
    ///
    /// Plain code up to the request's own future, which holds each of these once (an
    /// `async fn` at each level keeps its arguments twice, and every POST's future holds all
    /// the levels).
    pub(crate) fn handle<B>(
        &self,
        request: Request<B>,
        peer: Option<std::net::IpAddr>,
    ) -> impl Future<Output = Response<McpBody>> + Send + '_
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.handle_or(request, peer, None)
    }

    /// [`Endpoint::handle`], or `answered` as it is when the caller has decided the answer
    /// already (the listener's readiness path, a 404): the same future either way, so the
    /// caller wraps no future of its own around the endpoint's (each level copies the whole
    /// request future once more on the way in).
    pub(crate) fn handle_or<B>(
        &self,
        request: Request<B>,
        peer: Option<std::net::IpAddr>,
        answered: Option<Response<McpBody>>,
    ) -> impl Future<Output = Response<McpBody>> + Send + '_
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let (checked, peer) = match answered {
            Some(answer) => (Err(answer), None),
            None => {
                // In a fleet, the bus is heard from the first request on (mounted in another
                // router, this is where the endpoint starts).
                self.sessions.join_fleet();
                // Behind a trusted proxy, the client it names (security review X3).
                let peer = peer.map(|peer| {
                    super::proxy::client_address(&self.config.trusted_proxies, peer, &parts.headers)
                });
                (check_origin_and_host(&self.config, &parts), peer)
            }
        };
        // The served future is made in this block, not before it: one made outside would be
        // kept twice (as captured, then as awaited).
        async move {
            let cors_origin = match checked {
                Ok(origin) => origin,
                Err(refused) => return refused,
            };
            let mut response = self.serve(parts, body, cors_origin.is_some(), peer).await;
            if let Some(origin) = cors_origin {
                cors_headers(response.headers_mut(), &origin);
            }
            response
        }
    }

    #[allow(clippy::manual_async_fn)] // an `async fn` would keep `parts` twice
    fn serve<B>(
        &self,
        parts: hyper::http::request::Parts,
        body: B,
        cors: bool,
        peer: Option<std::net::IpAddr>,
    ) -> impl Future<Output = Response<McpBody>> + Send + '_
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        async move {
            if let Some(metadata) = metadata(&self.config, &parts) {
                return metadata;
            }
            if parts.method == Method::OPTIONS && cors {
                return preflight(&parts.headers);
            }
            let (principal, scopes) =
                match authenticate(&self.config, parts.method.as_str(), &parts.headers).await {
                    Ok(Some(caller)) => (Some(caller.principal), Some(caller.scopes)),
                    Ok(None) => (None, None),
                    Err(refused) => return refused,
                };
            let session_id = match header_str(&parts.headers, &names::SESSION_ID) {
                Ok(id) => id.map(str::to_owned),
                Err(e) => return plain_owned(StatusCode::BAD_REQUEST, e),
            };
            match parts.method {
                Method::POST => {}
                Method::GET => {
                    let last_event_id = match header_str(&parts.headers, &names::LAST_EVENT_ID) {
                        Ok(id) => id,
                        Err(e) => return plain_owned(StatusCode::BAD_REQUEST, e),
                    };
                    // The GET, DELETE and session paths below are boxed: their futures are large
                    // and rare, and inline they would make every request's future (moved at each
                    // await, and held per connection) as large as theirs (issue #35).
                    return Box::pin(self.sessions.get(
                        session_id.as_deref(),
                        principal.as_ref(),
                        last_event_id,
                        self.draining.subscribe(),
                    ))
                    .await;
                }
                Method::DELETE => {
                    return Box::pin(
                        self.sessions
                            .delete(session_id.as_deref(), principal.as_ref()),
                    )
                    .await;
                }
                _ => return not_allowed(),
            }
            let accepted = accepted_media(&parts.headers);
            if let Err(refused) = check_post_headers(&parts.headers, accepted) {
                return refused;
            }
            // The body is read before a place under the caps is taken (review W25): a client that
            // sends its body slowly holds its connection only, and the minimum rate bounds that.
            let config = &self.config;
            let read = read_body(
                body,
                config.max_body,
                config.min_body_rate,
                config.body_timeout,
            );
            let bytes = match read.await {
                Ok(bytes) => bytes,
                Err(refused) => return refused,
            };
            // In a block: its locals are not kept across the await below (800 bytes a POST).
            let (routed, permit, delivery) = {
                let ClientFrame { message, typed } =
                    match parse_message(&bytes, session_id.is_none()) {
                        Ok(frame) => frame,
                        Err(refused) => return refused,
                    };
                drop(bytes);
                if let Some(refused) =
                    self.check_scopes(&message, typed.as_ref(), scopes.as_deref())
                {
                    return refused;
                }
                // Held until the answer is sent, and by a legacy request that runs on after its client
                // hung up until it ends: the whole exchange counts against the cap. A listen stream,
                // which lives long, counts against its own budget and its client's share (review W4).
                let permit = match self.guards.admit(&message, principal.as_ref(), peer) {
                    Ok(permit) => permit,
                    Err(refused) => return refused,
                };
                let request_headers = Arc::new(parts.headers);
                // The replay guard's claim of this request is marked done once its body was written.
                let delivery = Arc::new(Delivery::new());
                let incoming = Incoming {
                    sse: accepted.sse,
                    transport: TransportContext {
                        principal,
                        scopes,
                        context: Some(request_headers.clone()),
                        delivery: Some(delivery.clone()),
                        network_transport: Some("tcp"),
                        peer,
                    },
                    headers: request_headers,
                    permit: permit.clone(),
                    peer,
                };
                let routed = self.route(message, typed, incoming, session_id);
                (routed, permit, delivery)
            };
            routed
                .response()
                .await
                .map(|body| body.holding(permit).delivering(delivery))
        }
    }

    /// The step-up challenge for a request whose method or target needs scopes its token
    /// lacks (see [`check_scopes`]); nothing to look up when no layer requires a scope.
    /// The target is read from the params the body's one pass decoded, when it did: the raw
    /// probe refuses params that name a member it reads twice (a `tools/call` with two
    /// `"uri"`s, which the call's own type keeps as unknown members), and then saw no target.
    fn check_scopes(
        &self,
        message: &JsonRpcMessage,
        typed: Option<&ClientRequest>,
        granted: Option<&[String]>,
    ) -> Option<Response<McpBody>> {
        let JsonRpcMessage::Request(request) = message else {
            return None;
        };
        if !self.service.requires_scopes() {
            return None;
        }
        let probe;
        let target = match mcp_types::methods::name_param(&request.method) {
            Some(field) => {
                probe = Probe::new(typed, request.params.as_deref());
                probe.named(field)
            }
            None => None,
        };
        let required = self.service.required_scopes(&request.method, target);
        if required.is_empty() {
            return None;
        }
        check_scopes(&self.config, &required, granted)
    }

    /// Era routing. A request carrying the 2026-07-28 envelope is stateless: it is checked and
    /// served the same with or without `Mcp-Session-Id`, which it never depends on. Anything
    /// else with a session id belongs to that legacy session; an `initialize` opens one.
    ///
    /// Plain code up to what is left to wait for: the stateless request's answer stream (the
    /// service runs it), or a session's boxed path. As an `async fn` it kept the decoded
    /// request twice in a 3 KB future that every POST's future held.
    fn route(
        &self,
        message: JsonRpcMessage,
        one_pass: Option<ClientRequest>,
        incoming: Incoming,
        session_id: Option<String>,
    ) -> Routed<'_> {
        let request = match message {
            JsonRpcMessage::Request(request) => request,
            other => {
                if let Some(id) = session_id {
                    return Routed::Boxed(Box::pin(async move {
                        self.sessions.in_session(&id, other, incoming).await
                    }));
                }
                return Routed::Ready(Box::new(match other {
                    JsonRpcMessage::Notification(_) => accepted(),
                    _ => error(
                        None,
                        ErrorObject::new(
                            ErrorCode::INVALID_REQUEST,
                            "a response is only accepted on a 2025-11-25 session",
                        ),
                    ),
                }));
            }
        };
        // Without a session id this is (almost always) a stateless 2026-07-28 request: its
        // params are decoded once (most often in the body's one pass), and the header checks
        // read the typed values; the service gets the decoded request. A request naming a
        // session, or params that do not decode, are probed from the raw JSON as any value.
        let typed = session_id.is_none().then(|| match one_pass {
            Some(typed) => Ok(typed),
            None => ClientRequest::from_request(&request),
        });
        let probe = Probe::new(
            typed.as_ref().and_then(|t| t.as_ref().ok()),
            request.params.as_deref(),
        );
        let meta_version = probe.protocol_version();
        if meta_version.is_none()
            && let Some(id) = session_id
        {
            let message = JsonRpcMessage::Request(request);
            return Routed::Boxed(Box::pin(async move {
                self.sessions.in_session(&id, message, incoming).await
            }));
        }
        let version_header = match header_str(&incoming.headers, &names::PROTOCOL_VERSION) {
            Ok(v) => v,
            Err(e) => {
                let mismatch = ErrorObject::header_mismatch(e);
                return Routed::Ready(Box::new(error(Some(request.id), mismatch)));
            }
        };
        let handshake_header = version_header.is_some_and(|v| LEGACY_VERSIONS.contains(&v));
        let Some(meta_version) = meta_version else {
            // Legacy clients open a session with `initialize` and no modern header or envelope.
            if request.method == mcp_types::methods::INITIALIZE
                && (version_header.is_none() || handshake_header)
            {
                return Routed::Boxed(Box::pin(self.sessions.initialize(
                    &self.service,
                    request,
                    incoming,
                )));
            }
            if handshake_header {
                return Routed::Ready(Box::new(plain(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: Missing session ID",
                )));
            }
            // The service answers the missing envelope.
            let stream = handle_modern(&self.service, request, typed, incoming.transport);
            return Routed::Respond(stream, incoming.sse);
        };
        if let Err(mismatch) = check_modern_headers(
            &self.service,
            &incoming.headers,
            &request,
            &probe,
            meta_version,
            version_header,
        ) {
            return Routed::Ready(Box::new(error(Some(request.id), mismatch)));
        }
        let stream = handle_modern(&self.service, request, typed, incoming.transport);
        Routed::Respond(stream, incoming.sse)
    }
}

/// What is left of a POST once it was routed.
enum Routed<'a> {
    /// Answered already (a refusal, a notification accepted); boxed, so that the request's
    /// future does not keep room for a whole response on the common path.
    Ready(Box<Response<McpBody>>),
    /// A stateless request being served: its answer stream, and whether the client takes SSE.
    Respond(ResponseStream, bool),
    /// A legacy session's request, or an `initialize`.
    Boxed(std::pin::Pin<Box<dyn std::future::Future<Output = Response<McpBody>> + Send + 'a>>),
}

impl Routed<'_> {
    async fn response(self) -> Response<McpBody> {
        match self {
            Routed::Ready(response) => *response,
            Routed::Respond(stream, sse) => respond(stream, sse).await,
            Routed::Boxed(boxed) => boxed.await,
        }
    }
}
