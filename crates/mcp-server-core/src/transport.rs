//! What a transport and the service exchange, at the bottom of the crate: what a transport
//! knows about who sent a message ([`TransportContext`]), where the replay guard's claims wait
//! for the answer to leave ([`Delivery`]), and the messages a request produces
//! ([`ResponseStream`]). Everything above (sealing, policy, the service) names these; they
//! name nothing of the crate but the sink's stream.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use mcp_state_seal::{Principal, UseClaim};
use mcp_types::JsonRpcMessage;

/// What a transport knows about who sent a message.
#[derive(Clone, Default)]
pub struct TransportContext {
    /// The authenticated principal (e.g. from a verified bearer token), if any.
    pub principal: Option<Principal>,
    /// The scopes the request's access token grants, when the transport verified one; `None`
    /// when it authenticated no token. Scope checks ([`RequireScopes`](crate::policy::RequireScopes))
    /// fail closed on `None`.
    pub scopes: Option<Arc<[String]>>,
    /// Anything else a deployment's principal binding needs (e.g. the HTTP request parts).
    pub context: Option<Arc<dyn Any + Send + Sync>>,
    /// Where the replay guard's claim on this request's `requestState` waits until the
    /// transport delivered the answer (see [`Delivery`]). `None`: the claim is marked done
    /// as soon as the handler answered.
    pub delivery: Option<Arc<Delivery>>,
    /// The conventions' `network.transport` of the connection the request came over: `"tcp"`
    /// (HTTP), `"pipe"` (stdio), or `None` (in memory). Recorded on each request's span.
    pub network_transport: Option<&'static str>,
    /// The address of the client the request came from, as the transport determined it:
    /// the connection's peer, or, behind a proxy the transport was told to trust, the client
    /// the proxy names. `None` when the transport has no address (stdio, in memory, an HTTP
    /// service mounted in another router). Anonymous callers are told apart by it, grouped
    /// by [`client_group`].
    pub peer: Option<std::net::IpAddr>,
}

/// The share an address counts against: an IPv4 address itself, an IPv6 address's /64 (one
/// household or host has a whole /64, so per-address shares would give one client 2^64 of
/// them); an IPv4 address mapped into IPv6 is the IPv4 address. Written as text, a key for
/// per-client limits (`203.0.113.7`, `2001:db8:1:2::/64`).
pub fn client_group(address: std::net::IpAddr) -> String {
    match address {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                format!("{}/64", std::net::Ipv6Addr::from(prefix))
            }
        },
    }
}

impl fmt::Debug for TransportContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportContext")
            .field("principal", &self.principal)
            .field("scopes", &self.scopes)
            .field("context", &self.context.is_some())
            .field("delivery", &self.delivery.is_some())
            .field("network_transport", &self.network_transport)
            .field("peer", &self.peer)
            .finish()
    }
}

/// The replay guard's claims of one request whose handler answered, held by the transport
/// until the answer left (an HTTP body written): only then is the state marked done. An
/// instance that dies between the two leaves the claim to be taken over by the instance a load
/// balancer re-sends the request to, instead of that one refusing it as a replay.
#[derive(Default)]
pub struct Delivery {
    pub(crate) claims: Mutex<Vec<UseClaim>>,
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery").finish_non_exhaustive()
    }
}

impl Delivery {
    /// An empty holder, for one request.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn hold(&self, claim: UseClaim) -> Result<(), UseClaim> {
        match self.claims.lock() {
            Ok(mut claims) => {
                claims.push(claim);
                Ok(())
            }
            Err(_) => Err(claim),
        }
    }

    /// Whether a claim waits here.
    pub fn is_empty(&self) -> bool {
        self.claims.lock().map_or(true, |claims| claims.is_empty())
    }

    /// Marks every claim held here done: the answer was delivered (or its connection is gone).
    pub async fn finish(&self) {
        let claims = match self.claims.lock() {
            Ok(mut claims) => std::mem::take(&mut *claims),
            Err(_) => return,
        };
        for claim in claims {
            Box::pin(claim.finish()).await;
        }
    }
}

/// The messages a request produces, in order: notifications (and, on legacy sessions,
/// server-to-client requests), then exactly one response, after which the stream ends. A
/// cancelled request ends without a response.
#[derive(Debug)]
pub struct ResponseStream {
    pub(crate) rx: crate::sink::Receiver,
}

impl ResponseStream {
    /// A stream holding one message that is already known (an immediate error or result).
    pub fn ready(message: JsonRpcMessage) -> Self {
        ResponseStream {
            rx: crate::sink::Receiver::ready(message),
        }
    }

    /// The next message, or `None` once the stream ended.
    pub async fn next(&mut self) -> Option<JsonRpcMessage> {
        self.rx.recv().await
    }

    /// Polls for the next message (for transports that implement a body or a stream by hand).
    pub fn poll_next(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<JsonRpcMessage>> {
        self.rx.poll_recv(cx)
    }

    /// Drains the stream.
    pub async fn collect(mut self) -> Vec<JsonRpcMessage> {
        let mut out = Vec::new();
        while let Some(message) = self.next().await {
            out.push(message);
        }
        out
    }
}
