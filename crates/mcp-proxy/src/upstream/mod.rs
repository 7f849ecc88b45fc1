//! What a gateway mounts: an [`Upstream`], in this process (an `McpServer`, a `Server`, a
//! `Service`) or elsewhere (a [`Proxy`](remote::Proxy)), and, once mounted, the one interface
//! the catalog and the calls use whichever it is: a page of `tools/list`, a `tools/call`.

pub(crate) mod local;
pub(crate) mod remote;

use std::time::Duration;

use mcp_server_core::registry::McpServer;
use mcp_server_core::{RequestContext, Server, Service};
use mcp_types::JsonObject;
use mcp_types::lifecycle::Implementation;
use mcp_types::methods;
use mcp_types::tools::ListToolsResult;
use mcp_types::version::{Era, ProtocolVersion};
use serde_json::value::RawValue;

use crate::envelope::{Caller, call_params, list_params, meta};
use crate::failure::UpstreamFailure;
use crate::namespace::Namespace;
use local::{LocalLink, RELAYED_PROGRESS};
use remote::{Proxy, RemoteLink};

/// Something a gateway can mount: see [`IntoUpstream`].
pub struct Upstream(Spec);

enum Spec {
    Local(Service),
    Remote(Box<Proxy>),
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Spec::Local(service) => f
                .debug_tuple("Upstream::Local")
                .field(&service.server_info().name)
                .finish(),
            Spec::Remote(proxy) => f.debug_tuple("Upstream::Remote").field(proxy).finish(),
        }
    }
}

/// Anything a gateway can mount: an [`McpServer`] (built when mounted), a low-level
/// [`Server`], a [`Service`], or a [`Proxy`].
pub trait IntoUpstream {
    /// The upstream, or why it could not be made (an `McpServer` whose definitions do not
    /// build).
    fn into_upstream(self) -> Result<Upstream, String>;
}

impl IntoUpstream for Upstream {
    fn into_upstream(self) -> Result<Upstream, String> {
        Ok(self)
    }
}

impl IntoUpstream for Service {
    fn into_upstream(self) -> Result<Upstream, String> {
        Ok(Upstream(Spec::Local(self)))
    }
}

impl IntoUpstream for Server {
    fn into_upstream(self) -> Result<Upstream, String> {
        Ok(Upstream(Spec::Local(self.into_service())))
    }
}

impl IntoUpstream for McpServer {
    fn into_upstream(self) -> Result<Upstream, String> {
        let service = self.into_service().map_err(|e| e.to_string())?;
        Ok(Upstream(Spec::Local(service)))
    }
}

impl IntoUpstream for Proxy {
    fn into_upstream(self) -> Result<Upstream, String> {
        Ok(Upstream(Spec::Remote(Box::new(self))))
    }
}

/// The limits of one mount.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The wait for one answer (a call, a list page).
    pub call_timeout: Duration,
    /// How many tools are taken from it.
    pub max_tools: usize,
    /// How many `tools/list` pages are read from it.
    pub max_list_pages: usize,
}

enum Link {
    Local(LocalLink),
    Remote(Box<RemoteLink>),
}

/// An upstream under its namespace, as the gateway drives it.
pub(crate) struct Mounted {
    /// Its namespace.
    pub ns: Namespace,
    /// Its limits.
    pub limits: Limits,
    link: Link,
    gateway: Implementation,
}

impl Mounted {
    /// Mounts `upstream` under `ns`; `gateway` is who the gateway says it is upstream, and
    /// `local_timeout` the wait for an in-process upstream's answers.
    pub(crate) fn new(
        ns: Namespace,
        upstream: Upstream,
        gateway: Implementation,
        local_timeout: Duration,
    ) -> Mounted {
        let ns = match &upstream.0 {
            Spec::Local(service) => ns.named(&service.server_info().name),
            Spec::Remote(proxy) => ns.named(&proxy.described),
        };
        let (link, limits) = match upstream.0 {
            Spec::Local(service) => (
                Link::Local(LocalLink::new(service)),
                Limits {
                    call_timeout: local_timeout,
                    max_tools: remote::DEFAULT_MAX_TOOLS,
                    max_list_pages: remote::DEFAULT_MAX_LIST_PAGES,
                },
            ),
            Spec::Remote(proxy) => {
                let limits = Limits {
                    call_timeout: proxy.call_timeout,
                    max_tools: proxy.max_tools,
                    max_list_pages: proxy.max_list_pages,
                };
                (
                    Link::Remote(Box::new(RemoteLink::new(*proxy, gateway.clone()))),
                    limits,
                )
            }
        };
        Mounted {
            ns,
            limits,
            link,
            gateway,
        }
    }

    /// Whether asking it now may find it up: in process, connected, or its wait after a
    /// failed connection over.
    pub(crate) fn may_try(&self) -> bool {
        match &self.link {
            Link::Local(_) => true,
            Link::Remote(remote) => remote.may_try(),
        }
    }

    /// One page of its `tools/list`.
    pub(crate) async fn list_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, UpstreamFailure> {
        let caller = Caller::default();
        let raw = match &self.link {
            Link::Local(local) => {
                let version = ProtocolVersion::LATEST_MODERN.as_str();
                let params =
                    list_params(cursor, meta(Era::Modern, version, &caller, &self.gateway))
                        .map_err(invalid_request)?;
                local
                    .request(methods::TOOLS_LIST, params, None, self.limits.call_timeout)
                    .await?
            }
            Link::Remote(remote) => {
                remote
                    .request(methods::TOOLS_LIST, |era, version| {
                        list_params(cursor, meta(era, version, &caller, &self.gateway))
                    })
                    .await?
            }
        };
        serde_json::from_str(raw.get()).map_err(|e| {
            UpstreamFailure::Client(mcp_client::ClientError::InvalidResponse(format!(
                "'tools/list' result: {e}"
            )))
        })
    }

    /// Calls its tool `name` (its own name, unqualified) for the caller of `ctx`, and returns
    /// the raw result.
    pub(crate) async fn call(
        &self,
        ctx: &RequestContext,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<Box<RawValue>, UpstreamFailure> {
        let mut caller = Caller {
            capabilities: ctx.client_capabilities().clone(),
            log_level: ctx.log_level(),
            progress: None,
        };
        match &self.link {
            Link::Local(local) => {
                if ctx.wants_progress() {
                    caller.progress = Some(mcp_types::RequestId::String(RELAYED_PROGRESS.into()));
                }
                let version = ProtocolVersion::LATEST_MODERN.as_str();
                let meta = meta(Era::Modern, version, &caller, &self.gateway);
                let params = call_params(name, arguments, meta).map_err(invalid_request)?;
                local
                    .request(
                        methods::TOOLS_CALL,
                        params,
                        Some(ctx),
                        self.limits.call_timeout,
                    )
                    .await
            }
            Link::Remote(remote) => {
                remote
                    .request(methods::TOOLS_CALL, |era, version| {
                        call_params(name, arguments, meta(era, version, &caller, &self.gateway))
                    })
                    .await
            }
        }
    }
}

fn invalid_request(e: serde_json::Error) -> UpstreamFailure {
    UpstreamFailure::Client(mcp_client::ClientError::InvalidRequest(e.to_string()))
}
