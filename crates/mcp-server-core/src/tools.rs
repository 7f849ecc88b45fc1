//! One place for everything a server knows about each of its tools: the `x-mcp-header`
//! annotations of its input schema, whether it runs as a task, the layers that wrap its calls,
//! the handler an [`McpServer`](crate::registry::McpServer) registered for it and how that
//! handler runs a lost task again. Before this table those facts lived in five maps joined by
//! the tool's name at run time, so a `tools/call` hashed its name up to five times (issue #50).
//! Now a `tools/call` looks its tool up once, where it is served (a tool with layers of its
//! own, once more where the layers run).

use std::collections::HashMap;
use std::sync::Arc;

use mcp_types::JsonObject;
use mcp_types::mrtr::Outcome;
use mcp_types::param_header::ParamHeader;
use mcp_types::tools::{CallToolRequestParams, CallToolResult};

use crate::context::RequestContext;
use crate::futures::{BoxFuture, HandlerResult};
use crate::policy::Layer;
use crate::tasks::TaskSupport;

/// A tool by its place in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ToolId(u32);

/// The handler of one tool's calls (the same shape as `Server::on_call_tool`'s).
pub(crate) type ToolHandler = Arc<
    dyn Fn(
            RequestContext,
            CallToolRequestParams,
        ) -> BoxFuture<'static, HandlerResult<Outcome<CallToolResult>>>
        + Send
        + Sync,
>;

/// Runs one tool's task again after its worker was lost, with the arguments its replay kept.
pub(crate) type ToolRerun = Arc<
    dyn Fn(RequestContext, JsonObject) -> BoxFuture<'static, HandlerResult<CallToolResult>>
        + Send
        + Sync,
>;

/// What the server knows about one tool.
#[derive(Clone, Default)]
pub(crate) struct ToolFacts {
    /// The `x-mcp-header` annotations of its input schema, when it has any.
    pub(crate) param_headers: Option<Arc<[ParamHeader]>>,
    /// Whether it runs as a task.
    pub(crate) task: TaskSupport,
    /// The layers of its own, innermost (the scopes it declares first).
    pub(crate) layers: Vec<Arc<dyn Layer>>,
    /// Whether a registry defined it: a metric may then carry its name.
    pub(crate) registered: bool,
    /// Whether its handler can never answer `input_required` (a registry's tool whose body
    /// cannot return a round and that has no resolvers): a call of it that carries no
    /// `requestState` then needs no binding to seal against, so none is made.
    pub(crate) never_asks: bool,
    /// Its handler, when a registry defined it; otherwise `Server::on_call_tool` answers.
    pub(crate) handler: Option<ToolHandler>,
    /// How its task runs again, when it may.
    pub(crate) rerun: Option<ToolRerun>,
}

/// Every tool's facts, indexed by name once.
#[derive(Clone, Default)]
pub(crate) struct ToolTable {
    index: HashMap<String, ToolId>,
    facts: Vec<ToolFacts>,
    /// Whether any tool has `x-mcp-header` annotations (a transport then looks its tool up).
    any_headers: bool,
    /// Whether any tool has layers of its own.
    any_layers: bool,
    /// Whether any of those layers requires a scope (read by an HTTP endpoint per request).
    any_scoped_layers: bool,
}

impl ToolTable {
    /// The tool named `name`, if the server knows anything about it. A table without
    /// entries answers without hashing the name.
    pub(crate) fn find(&self, name: &str) -> Option<ToolId> {
        if self.facts.is_empty() {
            return None;
        }
        self.index.get(name).copied()
    }

    /// The facts of the tool `id` names.
    pub(crate) fn get(&self, id: ToolId) -> &ToolFacts {
        &self.facts[id.0 as usize]
    }

    /// The facts of the tool `name`, if there are any.
    pub(crate) fn named(&self, name: &str) -> Option<&ToolFacts> {
        self.find(name).map(|id| self.get(id))
    }

    /// Changes the facts of the tool `name`, starting from none when it has no entry yet.
    pub(crate) fn update(&mut self, name: impl Into<String>, change: impl FnOnce(&mut ToolFacts)) {
        let name = name.into();
        let id = match self.index.get(&name) {
            Some(id) => *id,
            None => {
                let id = ToolId(u32::try_from(self.facts.len()).expect("fewer than 2^32 tools"));
                self.facts.push(ToolFacts::default());
                self.index.insert(name, id);
                id
            }
        };
        change(&mut self.facts[id.0 as usize]);
        self.any_headers = self.facts.iter().any(|f| f.param_headers.is_some());
        self.any_layers = self.facts.iter().any(|f| !f.layers.is_empty());
        self.any_scoped_layers = self
            .facts
            .iter()
            .any(|f| f.layers.iter().any(|l| !l.required_scopes().is_empty()));
    }

    /// Whether any tool has `x-mcp-header` annotations.
    pub(crate) fn any_headers(&self) -> bool {
        self.any_headers
    }

    /// Whether any tool has layers of its own.
    pub(crate) fn any_layers(&self) -> bool {
        self.any_layers
    }

    /// Whether any tool's own layers require a scope.
    pub(crate) fn any_scoped_layers(&self) -> bool {
        self.any_scoped_layers
    }

    /// Each tool's name and facts, in the order they were first named.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &ToolFacts)> {
        let mut named: Vec<(&str, ToolId)> =
            self.index.iter().map(|(n, id)| (n.as_str(), *id)).collect();
        named.sort_by_key(|(_, id)| id.0);
        named.into_iter().map(|(n, id)| (n, self.get(id)))
    }

    /// Forgets every handler a registry set (a low-level `on_call_tool` then answers every
    /// tool, as it did before the table).
    pub(crate) fn drop_handlers(&mut self) {
        for facts in &mut self.facts {
            facts.handler = None;
            facts.rerun = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_looked_up_once_and_its_facts_gathered_in_one_entry() {
        let mut table = ToolTable::default();
        assert_eq!(table.find("echo"), None);
        table.update("echo", |f| f.task = TaskSupport::Optional);
        table.update("other", |f| f.registered = true);
        table.update("echo", |f| f.registered = true);
        let echo = table.find("echo").expect("echo has an entry");
        assert_eq!(table.get(echo).task, TaskSupport::Optional);
        assert!(table.get(echo).registered);
        assert_eq!(table.find("missing"), None);
        let names: Vec<&str> = table.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["echo", "other"]);
        assert!(!table.any_headers());
        assert!(!table.any_layers());
    }
}
