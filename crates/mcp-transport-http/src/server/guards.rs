//! The server's caps on requests: POSTs in flight, `subscriptions/listen` streams and each
//! client's share of them. A request takes its place here once its body is read, or is
//! answered 503 with `Retry-After`. (The connection cap is the accept loop's, in `listen.rs`;
//! a session's own cap is in `legacy.rs`.)

use std::sync::Arc;

use hyper::Response;
use mcp_server_core::seal::Principal;
use mcp_types::JsonRpcMessage;
use tokio::sync::Semaphore;

use super::body::McpBody;
use super::config::Config;
use super::quota::{Permit, Quota, client_key};
use super::reply::{busy, busy_owned};

/// The places under the caps, built from the configuration.
pub(crate) struct Guards {
    in_flight: Arc<Semaphore>,
    max_in_flight: usize,
    listen_streams: Arc<Semaphore>,
    listen_per_client: Arc<Quota>,
}

impl Guards {
    pub(crate) fn new(config: &Config) -> Self {
        Guards {
            in_flight: Arc::new(Semaphore::new(config.max_in_flight)),
            max_in_flight: config.max_in_flight,
            listen_streams: Arc::new(Semaphore::new(config.max_listen_streams)),
            listen_per_client: Arc::new(Quota::new(config.listen_per_client)),
        }
    }

    /// How many requests hold a place now: those being answered, and the 2025-11-25 ones
    /// whose client stopped reading their stream and that still run (detached), waiting for
    /// an answer to a question they asked, say.
    pub(crate) fn running(&self) -> usize {
        self.max_in_flight
            .saturating_sub(self.in_flight.available_permits())
    }

    /// A place under the caps for `message`: a `subscriptions/listen` stream under the listen
    /// budget and its client's share of it (review W4), anything else under `max_in_flight`.
    pub(crate) fn admit(
        &self,
        message: &JsonRpcMessage,
        principal: Option<&Principal>,
        peer: Option<std::net::IpAddr>,
    ) -> Result<Arc<Permit>, Response<McpBody>> {
        let listen = matches!(message, JsonRpcMessage::Request(r)
            if r.method == mcp_types::methods::SUBSCRIPTIONS_LISTEN);
        if !listen {
            let Ok(place) = self.in_flight.clone().try_acquire_owned() else {
                return Err(busy("Too many requests in flight; retry shortly"));
            };
            return Ok(Arc::new(Permit {
                _place: place,
                _share: None,
            }));
        }
        let share = match client_key(principal, peer) {
            Some(client) => match self.listen_per_client.take(&client) {
                Some(share) => Some(share),
                None => {
                    return Err(busy_owned(format!(
                        "Too many listen streams for this client (at most {}); close one first",
                        self.listen_per_client.limit()
                    )));
                }
            },
            None => None,
        };
        let Ok(place) = self.listen_streams.clone().try_acquire_owned() else {
            return Err(busy("Too many listen streams; retry shortly"));
        };
        Ok(Arc::new(Permit {
            _place: place,
            _share: share,
        }))
    }
}
