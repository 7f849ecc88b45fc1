//! The client's answers to a server's questions. One set of callbacks serves both eras: the
//! same elicitation callback answers a legacy `elicitation/create` request and an
//! `inputRequests` entry. Registering a callback declares the capability.

use std::future::Future;
use std::sync::Arc;

use mcp_types::capabilities::{
    ClientCapabilities, ElicitationCapability, RootsCapability, SamplingCapability,
};
use mcp_types::elicitation::{ElicitRequestParams, ElicitResult};
use mcp_types::ext::tasks::DetailedTask;
use mcp_types::logging::LoggingMessageParams;
use mcp_types::notifications::ProgressParams;
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp_types::{ErrorObject, JsonObject, ServerNotification};

use crate::transport::BoxFuture;

/// What [`crate::ClientBuilder::on_task_status`] installs: called with each status a task reports.
pub(crate) type TaskStatusFn = Arc<dyn Fn(&DetailedTask) + Send + Sync>;

/// Which question a callback is answering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    /// The question's name: its `inputRequests` key (2026-07-28), the same resolver key on a
    /// 2025-11-25 request from a server of this SDK (which sends it in `_meta`), and the
    /// request's id on a 2025-11-25 request from any other server.
    pub key: String,
    /// The method of the call being served (`tools/call`, ...), or the legacy request's own.
    pub method: String,
}

pub(crate) type ElicitFn = Arc<
    dyn Fn(
            RequestInfo,
            ElicitRequestParams,
        ) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>>
        + Send
        + Sync,
>;
pub(crate) type SampleFn = Arc<
    dyn Fn(
            RequestInfo,
            CreateMessageRequestParams,
        ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>
        + Send
        + Sync,
>;
pub(crate) type RootsFn = Arc<
    dyn Fn(RequestInfo) -> BoxFuture<'static, Result<ListRootsResult, ErrorObject>> + Send + Sync,
>;
pub(crate) type ProgressFn = Arc<dyn Fn(ProgressParams) + Send + Sync>;
pub(crate) type LogFn = Arc<dyn Fn(LoggingMessageParams) + Send + Sync>;
pub(crate) type NotificationFn = Arc<dyn Fn(&ServerNotification) + Send + Sync>;
pub(crate) type CacheHitFn = Arc<dyn Fn(&str) + Send + Sync>;

/// The callbacks a client was built with.
#[derive(Clone, Default)]
pub(crate) struct Callbacks {
    pub(crate) elicit: Option<ElicitFn>,
    pub(crate) elicit_form: bool,
    pub(crate) elicit_url: bool,
    pub(crate) sample: Option<SampleFn>,
    pub(crate) sample_tools: bool,
    pub(crate) roots: Option<RootsFn>,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) log: Option<LogFn>,
    pub(crate) notification: Option<NotificationFn>,
    pub(crate) task_status: Option<TaskStatusFn>,
    pub(crate) cache_hit: Option<CacheHitFn>,
}

impl Callbacks {
    pub(crate) fn set_elicit<F, Fut>(&mut self, f: F)
    where
        F: Fn(RequestInfo, ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicit = Some(Arc::new(move |info, params| Box::pin(f(info, params))));
    }

    pub(crate) fn set_sample<F, Fut>(&mut self, f: F)
    where
        F: Fn(RequestInfo, CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sample = Some(Arc::new(move |info, params| Box::pin(f(info, params))));
    }

    pub(crate) fn set_roots<F, Fut>(&mut self, f: F)
    where
        F: Fn(RequestInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move |info| Box::pin(f(info))));
    }

    /// The capabilities the registered callbacks declare.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.elicit.is_some() && (self.elicit_form || self.elicit_url) {
            caps.elicitation = Some(ElicitationCapability {
                form: self.elicit_form.then(JsonObject::new),
                url: self.elicit_url.then(JsonObject::new),
                extra: JsonObject::new(),
            });
        }
        if self.sample.is_some() {
            caps.sampling = Some(SamplingCapability {
                tools: self.sample_tools.then(JsonObject::new),
                ..Default::default()
            });
        }
        if self.roots.is_some() {
            caps.roots = Some(RootsCapability::default());
        }
        caps
    }
}
