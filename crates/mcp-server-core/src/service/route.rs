//! Spawning a request on its route (stateless 2026-07-28, or a legacy session) and turning its
//! answer into the response stream, a panic into an error.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_types::methods::{self};
use mcp_types::{ClientRequest, ErrorCode, ErrorObject, JsonRpcRequest, ParamsError, RequestId};

use crate::cancel::CancellationToken;
use crate::futures::CatchUnwind;
use crate::policy::Call;
use crate::sink::Sink;
use crate::trace::RequestSpan;

use crate::ResponseStream;
use crate::service::inner::{Served, respond};
use crate::service::legacy::{LegacyCall, serve_legacy};
use crate::service::modern::serve_modern;
use crate::service::{Inner, Route};

pub(super) fn spawn_request(
    inner: Arc<Inner>,
    request: JsonRpcRequest,
    typed: Result<ClientRequest, ParamsError>,
    route: Route,
) -> ResponseStream {
    let cancel = CancellationToken::new();
    if let Some(session) = route.session() {
        let stream = request.method == methods::SUBSCRIPTIONS_LISTEN;
        if !session.track(&request.id, cancel.clone(), stream) {
            return ResponseStream::ready(respond(
                &request.id,
                Err(ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "a request with id {} is already in flight on this session",
                        request.id
                    ),
                )),
            ));
        }
    }
    let era: Option<std::borrow::Cow<'_, str>> = match &route {
        Route::Modern { .. } => typed
            .as_ref()
            .ok()
            .and_then(|t| t.meta())
            .and_then(|m| m.protocol_version.as_deref())
            .map(std::borrow::Cow::Borrowed),
        Route::Legacy { session, .. } => session
            .with_legacy(|l| l.protocol_version.clone())
            .map(std::borrow::Cow::Owned),
    };
    let network = route
        .transport()
        .network_transport
        .or_else(|| route.session().and_then(|s| s.transport.network_transport));
    let traced = RequestSpan::open(
        &request,
        typed.as_ref().ok(),
        era.as_deref(),
        network,
        &inner.server,
    );
    let span = traced.span.clone();
    let (sink, rx) = Sink::channel();
    let task = async move {
        let id = request.id.clone();
        // Layers see the request before it is served (its name and `_meta` copied out here,
        // only when there are layers); a listen stream is not a call and is not wrapped.
        let server = &inner.server;
        let call =
            (server.has_layers() && request.method != methods::SUBSCRIPTIONS_LISTEN).then(|| {
                Call::new(&request.id, &request.method, route.era(), route.transport())
                    .of_request(typed.as_ref().ok())
            });
        // Boxed on its own: the blocks below then hold a pointer to it. Moved into them, it
        // was stored twice (captured, then awaited): 6.9 KB instead of 3.4 for every request,
        // and for the whole life of a listen stream (`-Zprint-type-sizes`, massif). One box
        // per route, made here but run only when polled (after the layers, if any): a
        // 2026-07-28 request's is 1 KB, where one future for both routes was the size of the
        // legacy one, 3.2 KB, moved into its box whole.
        let serve: Pin<Box<dyn Future<Output = Served> + Send + '_>> = match &route {
            Route::Modern { transport, .. } => Box::pin(async {
                serve_modern(&inner, &request, typed, transport, &sink, &cancel)
                    .answer()
                    .await
            }),
            Route::Legacy {
                session,
                transport,
                back_channel,
            } => Box::pin(async {
                let call = LegacyCall {
                    session,
                    transport,
                    back_channel: *back_channel,
                };
                serve_legacy(&inner, &request, typed, &call, &sink, &cancel).await
            }),
        };
        // Without layers the served future is caught as it is; with them, the layers run
        // around it in one more future.
        let work: CatchUnwind<'_, Served> = match &call {
            None => CatchUnwind(serve),
            Some(call) => CatchUnwind(Box::pin(async {
                // Every method but listen answers, so `serve` always has an answer here.
                let endpoint = Box::pin(async {
                    serve
                        .await
                        .unwrap_or_else(|| Err(ErrorObject::internal("no answer")))
                });
                let own = server.layers_of(call.method(), call.target());
                Some(server.policy.run(call, own, endpoint).await)
            })),
        };
        let served = race(work, &cancel, &sink, &id).await;
        traced.finish(served.as_ref().map(|r| r.as_ref().map(|raw| raw.get())));
        if let Some(result) = served {
            sink.send(respond(&id, result)).await;
        } else {
            tracing::debug!(%id, "request cancelled; no response is sent");
        }
        if let Some(session) = route.session() {
            session.untrack(&id);
        }
    };
    run_until_it_waits(Box::pin(tracing::Instrument::instrument(task, span)));
    ResponseStream { rx }
}

/// A request's work to its answer (`None`: cancelled, nothing is sent). A request that
/// answers in its first poll (most do) never waits on its cancellation or on its stream's
/// close: they are only watched once it has to wait. One already cancelled does not start. A
/// panic is answered -32603.
async fn race(
    work: CatchUnwind<'_, Served>,
    cancel: &CancellationToken,
    sink: &Sink,
    id: &RequestId,
) -> Served {
    let answered = |served: Option<Served>| {
        served.unwrap_or_else(|| {
            tracing::error!(%id, "a handler panicked; answering -32603");
            Some(Err(ErrorObject::internal("Internal error")))
        })
    };
    if cancel.is_cancelled() {
        return None;
    }
    let mut work = std::pin::pin!(work);
    let first =
        std::future::poll_fn(|cx| std::task::Poll::Ready(work.as_mut().poll(cx).map(answered)))
            .await;
    match first {
        std::task::Poll::Ready(served) => served,
        std::task::Poll::Pending => tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            () = sink.closed() => {
                cancel.cancel();
                None
            }
            served = work => answered(served),
        },
    }
}

/// Polls a request once, here, and hands it to the runtime only if it has to wait. Most
/// handlers answer without waiting on anything (a tool that computes its result): those finish
/// on the caller's task, with their answer already in the response channel, and cost no task
/// of their own, no scheduling and no wake-up of another worker. A request that waits (a
/// back-channel question, a timer, I/O) is spawned where it stopped; the runtime's first poll
/// gives every future it waits on the task's real waker.
pub(super) fn run_until_it_waits(
    mut task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
) {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if task.as_mut().poll(&mut cx).is_pending() {
        tokio::spawn(task);
    }
}
