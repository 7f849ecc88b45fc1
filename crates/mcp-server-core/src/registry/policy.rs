//! The policy of a [`McpServer`]: its layers (see [`crate::policy`]) and the scopes its tools,
//! prompts and resources declare.

use std::sync::Arc;

use mcp_types::methods;

use super::McpServer;
use crate::policy::{Layer, Policy, RequireScopes};

impl McpServer {
    /// Wraps every request (but `subscriptions/listen`, a stream) in `layer`, outside the
    /// layers of a method or a tool. See [`crate::policy`].
    pub fn layer(mut self, layer: impl Layer) -> Self {
        self.policy.add_everywhere(Arc::new(layer));
        self
    }

    /// Wraps every `method` request in `layer`, inside the server's layers and outside a
    /// tool's.
    pub fn method_layer(mut self, method: impl Into<String>, layer: impl Layer) -> Self {
        self.policy.add_method(method.into(), Arc::new(layer));
        self
    }

    /// Wraps every call of the tool `name` in `layer`, innermost (after the scopes the tool
    /// declares).
    pub fn tool_layer(mut self, name: impl Into<String>, layer: impl Layer) -> Self {
        self.policy
            .add_target(methods::TOOLS_CALL, name.into(), Arc::new(layer));
        self
    }

    /// Wraps every `prompts/get` of the prompt `name` in `layer`, innermost.
    pub fn prompt_layer(mut self, name: impl Into<String>, layer: impl Layer) -> Self {
        self.policy
            .add_target(methods::PROMPTS_GET, name.into(), Arc::new(layer));
        self
    }

    /// Wraps every `resources/read` of the resource `uri` in `layer`, innermost.
    pub fn resource_layer(mut self, uri: impl Into<String>, layer: impl Layer) -> Self {
        self.policy
            .add_target(methods::RESOURCES_READ, uri.into(), Arc::new(layer));
        self
    }

    /// Leaves out of a caller's `tools/list` the tools whose scopes its token does not grant
    /// (default: every tool is listed, and a call without the scope is refused). The list
    /// then differs by caller, so it is marked `private` for caches; a page may hold fewer
    /// tools than the page size.
    pub fn hide_unauthorized_tools(mut self, hide: bool) -> Self {
        self.policy.hide_unauthorized_tools(hide);
        self
    }

    /// Refuses a layer on a tool, prompt or resource the server does not have (a misspelt
    /// name would leave the real one unguarded).
    pub(super) fn check_policy(&self) -> Result<(), super::BuildError> {
        for (method, target) in self.policy.targets() {
            let (known, what) = match method {
                methods::TOOLS_CALL => (self.tools.iter().any(|t| t.tool.name == target), "tool"),
                methods::PROMPTS_GET => (
                    self.prompts.iter().any(|p| p.prompt.name == target),
                    "prompt",
                ),
                _ => (
                    self.resources.iter().any(|r| r.resource.uri == target),
                    "resource",
                ),
            };
            if !known {
                return Err(super::BuildError(format!(
                    "a layer was added to the {what} '{target}', which this server does not have"
                )));
            }
        }
        Ok(())
    }

    /// The server's policy: the scopes each definition declares, as the first layer of its
    /// target, then the layers added.
    pub(super) fn take_policy(&mut self) -> Policy {
        let mut policy = std::mem::take(&mut self.policy);
        // A scoped prompt's completions, and a scoped resource's subscription, need the
        // same scopes as the prompt and the read (security review X11).
        let declared = self
            .tools
            .iter()
            .map(|t| (methods::TOOLS_CALL, &t.tool.name, &t.scopes))
            .chain(self.prompts.iter().flat_map(|p| {
                [methods::PROMPTS_GET, methods::COMPLETION_COMPLETE]
                    .map(|method| (method, &p.prompt.name, &p.scopes))
            }))
            .chain(self.resources.iter().flat_map(|r| {
                [methods::RESOURCES_READ, methods::RESOURCES_SUBSCRIBE]
                    .map(|method| (method, &r.resource.uri, &r.scopes))
            }));
        for (method, target, scopes) in declared {
            if !scopes.is_empty() {
                policy.add_target_first(
                    method,
                    target.clone(),
                    Arc::new(RequireScopes::new(scopes.iter().cloned())),
                );
            }
        }
        policy
    }
}
