//! The build's check of application state: every state type a definition (or one of its
//! resolvers) takes was given to the server, so a missing one fails the build with a
//! message that says which, not a request later.

use crate::state::{StateMap, StateNeed};

use super::error::BuildError;
use super::prompt::PromptDef;
use super::resolve::Resolver;
use super::resource::{ResourceDef, ResourceTemplateDef};
use super::tool::ToolDef;

/// What a server holds, as the check reads it.
pub(super) struct Defs<'a> {
    pub(super) server: &'a str,
    pub(super) state: &'a StateMap,
    pub(super) tools: &'a [ToolDef],
    pub(super) prompts: &'a [PromptDef],
    pub(super) resources: &'a [ResourceDef],
    pub(super) templates: &'a [ResourceTemplateDef],
}

/// One definition, as the message names it, with what it and its resolvers take.
struct Taker<'a> {
    kind: &'static str,
    name: &'a str,
    needs: &'a [StateNeed],
    resolvers: &'a [Resolver],
}

/// Fails on the first state type taken and not given, in the order definitions were added.
pub(super) fn check(server: Defs<'_>) -> Result<(), BuildError> {
    let tools = server.tools.iter().map(|t| Taker {
        kind: "tool",
        name: &t.tool.name,
        needs: &t.needs,
        resolvers: &t.resolvers,
    });
    let prompts = server.prompts.iter().map(|p| Taker {
        kind: "prompt",
        name: &p.prompt.name,
        needs: &p.needs,
        resolvers: &p.resolvers,
    });
    let resources = server.resources.iter().map(|r| Taker {
        kind: "resource",
        name: &r.resource.uri,
        needs: &r.needs,
        resolvers: &[],
    });
    let templates = server.templates.iter().map(|t| Taker {
        kind: "resource template",
        name: &t.template.uri_template,
        needs: &t.needs,
        resolvers: &t.resolvers,
    });
    for taker in tools.chain(prompts).chain(resources).chain(templates) {
        let own = taker.needs.iter().map(|need| (need, None));
        let through = taker
            .resolvers
            .iter()
            .flat_map(|r| r.needs.iter().map(move |need| (need, Some(r.key.as_str()))));
        for (need, resolver) in own.chain(through) {
            if !server.state.has(need) {
                return Err(missing(server.server, server.state, &taker, need, resolver));
            }
        }
    }
    Ok(())
}

fn missing(
    server: &str,
    state: &StateMap,
    taker: &Taker<'_>,
    need: &StateNeed,
    resolver: Option<&str>,
) -> BuildError {
    let through = resolver
        .map(|key| format!(" (through its resolver '{key}')"))
        .unwrap_or_default();
    let given: Vec<&str> = state.names().collect();
    let given = match given.as_slice() {
        [] => "the server has none".to_owned(),
        names => format!("the server has only {}", names.join(", ")),
    };
    BuildError(format!(
        "{} '{}'{through} takes State<{}>, and {given}: add .with_state(…) with a {} to \
         McpServer::new({server:?})",
        taker.kind, taker.name, need.name, need.name
    ))
}
