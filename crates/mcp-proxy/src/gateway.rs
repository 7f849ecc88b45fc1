//! The [`Gateway`] builder: mounts under prefixes, every upstream asked for its tools at once
//! when it is built, collisions refused, and a low-level [`Server`] whose two tool handlers
//! answer from the shared catalog.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::seal::RequestStateSecurity;
use mcp_server_core::{Server, Service};
use mcp_types::lifecycle::Implementation;
use mcp_types::tools::Tool;

use crate::catalog::{fetch, merge};
use crate::error::GatewayError;
use crate::namespace::{Namespace, check_separator};
use crate::shared::{Shared, describe};
use crate::upstream::remote::DEFAULT_CALL_TIMEOUT;
use crate::upstream::{IntoUpstream, Mounted, Upstream};

/// The default number of tools on one page of the gateway's `tools/list`.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// A gateway: servers mounted under prefixes, served as one.
///
/// See the [crate documentation](crate) for an example.
#[derive(Debug)]
pub struct Gateway {
    name: String,
    version: String,
    separator: char,
    security: Option<RequestStateSecurity>,
    mounts: Vec<(String, Result<Upstream, String>)>,
    page_size: usize,
    local_timeout: Duration,
}

impl Gateway {
    /// A gateway named `name`: its `serverInfo` name, the name it gives upstreams as
    /// `clientInfo`, and the audience of the `requestState` it seals.
    pub fn new(name: impl Into<String>) -> Gateway {
        Gateway {
            name: name.into(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            separator: '_',
            security: None,
            mounts: Vec::new(),
            page_size: DEFAULT_PAGE_SIZE,
            local_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// The version it reports (default: this crate's).
    pub fn version(mut self, version: impl Into<String>) -> Gateway {
        self.version = version.into();
        self
    }

    /// The separator between a prefix and a name: `_` (the default), `.` or `-`.
    pub fn separator(mut self, separator: char) -> Gateway {
        self.separator = separator;
        self
    }

    /// How `requestState` is sealed (default: an ephemeral key, one instance). Gateways that
    /// share keys and a name open each other's state.
    pub fn request_state_security(mut self, security: RequestStateSecurity) -> Gateway {
        self.security = Some(security);
        self
    }

    /// Mounts `upstream` under `prefix` (`""`: its names as they are; several mounts may
    /// share the root). Its tools are exposed as `{prefix}{separator}{name}`.
    pub fn mount(mut self, prefix: impl Into<String>, upstream: impl IntoUpstream) -> Gateway {
        self.mounts.push((prefix.into(), upstream.into_upstream()));
        self
    }

    /// How many tools a page of `tools/list` holds (default 100).
    pub fn page_size(mut self, page_size: usize) -> Gateway {
        self.page_size = page_size.max(1);
        self
    }

    /// How long an in-process upstream may take to answer (default 60 s; a [`Proxy`]
    /// has its own, [`Proxy::call_timeout`]).
    ///
    /// [`Proxy`]: crate::Proxy
    /// [`Proxy::call_timeout`]: crate::Proxy::call_timeout
    pub fn local_timeout(mut self, timeout: Duration) -> Gateway {
        self.local_timeout = timeout;
        self
    }

    /// Checks the mounts, asks every upstream for its tools at once, refuses two that expose
    /// one name, and builds the server. An upstream that does not answer does not fail the
    /// build: it is logged, listed by [`GatewayServer::missing`], and asked again later.
    pub async fn build(self) -> Result<GatewayServer, GatewayError> {
        check_separator(self.separator)?;
        let gateway = Implementation::new(self.name.clone(), self.version.clone());
        let mut prefixes = HashSet::new();
        let mut mounts = Vec::new();
        for (prefix, upstream) in self.mounts {
            let ns = Namespace::new(&prefix, self.separator)?;
            // Several root mounts are fine (their names must not collide); a prefix is one
            // mount's.
            if !prefix.is_empty() && !prefixes.insert(prefix.clone()) {
                return Err(GatewayError::DuplicatePrefix { prefix });
            }
            let upstream = upstream.map_err(|why| GatewayError::Mount {
                upstream: ns.label().to_owned(),
                why,
            })?;
            mounts.push(Arc::new(Mounted::new(
                ns,
                upstream,
                gateway.clone(),
                self.local_timeout,
            )));
        }
        let listed = list_all(&mounts).await;
        let catalog = merge(&mounts, &listed, 1, true)?;
        let security = self
            .security
            .unwrap_or_else(RequestStateSecurity::ephemeral);
        let mut server = Server::new(self.name)
            .version(self.version)
            .change_notifications(true)
            .request_state_security(security)
            .map_err(GatewayError::Sealing)?;
        for tool in &catalog.tools {
            server = server.tool_input_schema(tool.name.clone(), &tool.input_schema);
        }
        let shared = Arc::new(Shared::new(mounts, listed, catalog, self.page_size));
        let lists = shared.clone();
        let calls = shared.clone();
        let server = server
            .on_list_tools(move |_ctx, params| {
                let page = lists.list(params.cursor.as_deref());
                async move { page }
            })
            .on_call_tool(move |ctx, params| crate::call::call(calls.clone(), ctx, params));
        Ok(GatewayServer { server, shared })
    }

    /// [`build`](Self::build), then [`GatewayServer::into_service`].
    pub async fn into_service(self) -> Result<Service, GatewayError> {
        Ok(self.build().await?.into_service())
    }
}

/// Asks every mount for its tools at once; `None` for those that did not answer.
async fn list_all(mounts: &[Arc<Mounted>]) -> Vec<Option<Vec<Tool>>> {
    let mut fetches = tokio::task::JoinSet::new();
    for (i, mount) in mounts.iter().enumerate() {
        let mount = mount.clone();
        fetches.spawn(async move { (i, fetch(&mount).await) });
    }
    let mut listed = vec![None; mounts.len()];
    while let Some(done) = fetches.join_next().await {
        let Ok((i, result)) = done else {
            continue;
        };
        match result {
            Ok(tools) => listed[i] = Some(tools),
            Err(failure) => tracing::warn!(
                upstream = mounts[i].ns.label(),
                why = %describe(&failure),
                "an upstream did not list its tools; the gateway starts without them"
            ),
        }
    }
    listed
}

/// A built gateway: the low-level [`Server`] (to add layers to) and what its handlers share.
pub struct GatewayServer {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for GatewayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayServer")
            .field("server", &self.server.name())
            .field("tools", &self.shared.catalog().tools.len())
            .field("missing", &self.missing())
            .finish()
    }
}

impl GatewayServer {
    /// Changes the server before it runs (policy layers, limits, an audit log...). Its tool
    /// handlers must stay the gateway's.
    pub fn map(mut self, change: impl FnOnce(Server) -> Server) -> GatewayServer {
        self.server = change(self.server);
        self
    }

    /// The qualified names of the tools it serves now, in list order.
    pub fn tools(&self) -> Vec<String> {
        self.shared
            .catalog()
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// The mounts (by prefix, `(root: {server})` for `""`) whose tools are missing because they did not
    /// answer.
    pub fn missing(&self) -> Vec<String> {
        let catalog = self.shared.catalog();
        catalog
            .missing
            .iter()
            .map(|&i| self.shared.mounts[i].ns.label().to_owned())
            .collect()
    }

    /// The service transports drive. Changes to the catalog (an upstream lost, or back) are
    /// announced through it as `notifications/tools/list_changed`.
    pub fn into_service(self) -> Service {
        let service = self.server.into_service();
        // Set once: a second service of one gateway cannot exist (this consumes it).
        let _ = self.shared.notifier.set(service.notifier());
        service
    }
}
