//! The gateway's tool list: each upstream's tools read page by page (within a deadline, a
//! page cap and a tool cap), merged in mount order under their qualified names, and served
//! in pages whose cursors name the catalog's generation.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use mcp_types::ErrorObject;
use mcp_types::param_header::ParamHeader;
use mcp_types::tools::{ListToolsResult, Tool};

use crate::error::GatewayError;
use crate::failure::UpstreamFailure;
use crate::upstream::Mounted;

/// Where a qualified tool name goes: the mount's index and the upstream's own name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    /// The mount, in mount order.
    pub upstream: usize,
    /// The tool's name at the upstream.
    pub name: Arc<str>,
}

/// One snapshot of the gateway's tools.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Counts the snapshots; a cursor of an older one is refused.
    pub generation: u64,
    /// The tools under their qualified names, in mount order.
    pub tools: Vec<Tool>,
    /// Qualified name to upstream.
    pub routes: HashMap<String, Route>,
    /// The mounts whose tools are missing (they did not answer their list).
    pub missing: Vec<usize>,
}

/// Reads every tool of `mount`: page after page until the last, at most its page cap, its
/// first `max_tools` tools, all within its call timeout. A tool whose `x-mcp-header`
/// annotations are invalid, or whose name repeats one already read, is left out with a
/// warning.
pub(crate) async fn fetch(mount: &Mounted) -> Result<Vec<Tool>, UpstreamFailure> {
    let deadline = mount.limits.call_timeout;
    tokio::time::timeout(deadline, read_pages(mount))
        .await
        .unwrap_or(Err(UpstreamFailure::Deadline(deadline)))
}

async fn read_pages(mount: &Mounted) -> Result<Vec<Tool>, UpstreamFailure> {
    let upstream = mount.ns.label();
    let limits = mount.limits;
    let mut tools: Vec<Tool> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cursor = None;
    for _ in 0..limits.max_list_pages {
        let page = mount.list_page(cursor.take()).await?;
        for tool in page.tools {
            if tools.len() >= limits.max_tools {
                tracing::warn!(
                    upstream,
                    max_tools = limits.max_tools,
                    "the upstream lists more tools than the gateway takes; the rest are left out"
                );
                return Ok(tools);
            }
            if let Err(e) = ParamHeader::read_all(&tool.input_schema) {
                tracing::warn!(upstream, tool = %tool.name, error = %e, "a tool with invalid x-mcp-header annotations is left out");
                continue;
            }
            if !seen.insert(tool.name.clone()) {
                tracing::warn!(upstream, tool = %tool.name, "a tool the upstream lists twice is taken once");
                continue;
            }
            tools.push(tool);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    tracing::warn!(
        upstream,
        max_list_pages = limits.max_list_pages,
        "the upstream's tools/list has more pages than the gateway reads; the rest are left out"
    );
    Ok(tools)
}

/// Merges what each mount listed (`None`: it did not answer), in mount order. With
/// `refuse_collisions` a qualified name two mounts expose fails the merge; without, the first
/// mount keeps it and the later one's tool is left out with a warning.
pub(crate) fn merge(
    mounts: &[Arc<Mounted>],
    listed: &[Option<Vec<Tool>>],
    generation: u64,
    refuse_collisions: bool,
) -> Result<Catalog, GatewayError> {
    let mut catalog = Catalog {
        generation,
        ..Catalog::default()
    };
    for (index, (mount, tools)) in mounts.iter().zip(listed).enumerate() {
        let Some(tools) = tools else {
            catalog.missing.push(index);
            continue;
        };
        for tool in tools {
            let qualified = mount.ns.qualify(&tool.name);
            match catalog.routes.entry(qualified) {
                Entry::Occupied(taken) => {
                    let first = mounts[taken.get().upstream].ns.label().to_owned();
                    let second = mount.ns.label().to_owned();
                    if refuse_collisions {
                        return Err(GatewayError::Collision {
                            name: taken.key().clone(),
                            first,
                            second,
                        });
                    }
                    tracing::warn!(tool = %taken.key(), first, second, "two upstreams expose one tool name; the first mount keeps it");
                }
                Entry::Vacant(slot) => {
                    let mut exposed = tool.clone();
                    exposed.name = slot.key().clone();
                    slot.insert(Route {
                        upstream: index,
                        name: tool.name.as_str().into(),
                    });
                    catalog.tools.push(exposed);
                }
            }
        }
    }
    Ok(catalog)
}

impl Catalog {
    /// The page of `tools/list` at `cursor`, `page_size` tools long. A cursor this catalog did
    /// not issue (another generation's, or not one at all) is `-32602 Invalid cursor`.
    pub(crate) fn page(
        &self,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<ListToolsResult, ErrorObject> {
        let page_size = page_size.max(1);
        let start = match cursor {
            None => 0,
            Some(c) => self
                .position(c)
                .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {c:?}")))?,
        };
        let end = start.saturating_add(page_size).min(self.tools.len());
        let next_cursor = (end < self.tools.len()).then(|| format!("{}.{end}", self.generation));
        Ok(ListToolsResult {
            tools: self.tools[start..end].to_vec(),
            next_cursor,
            ..ListToolsResult::default()
        })
    }

    /// The index a cursor of this generation points at.
    fn position(&self, cursor: &str) -> Option<usize> {
        let (generation, index) = cursor.split_once('.')?;
        if generation.parse::<u64>().ok()? != self.generation {
            return None;
        }
        let index = index.parse::<usize>().ok()?;
        (index > 0 && index < self.tools.len()).then_some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::namespace::Namespace;
    use crate::upstream::IntoUpstream;
    use mcp_types::lifecycle::Implementation;
    use serde_json::json;
    use std::time::Duration;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    fn mounts(prefixes: &[&str]) -> Vec<Arc<Mounted>> {
        prefixes
            .iter()
            .map(|p| {
                let service = mcp_server_core::Server::new("t").into_service();
                Arc::new(Mounted::new(
                    Namespace::new(p, '_').unwrap(),
                    service.into_upstream().unwrap(),
                    Implementation::new("hub", "1"),
                    Duration::from_secs(1),
                ))
            })
            .collect()
    }

    #[test]
    fn tools_merge_in_mount_order_under_qualified_names() {
        let m = mounts(&["a", "b", ""]);
        let listed = [
            Some(vec![tool("echo"), tool("x")]),
            None,
            Some(vec![tool("echo")]),
        ];
        let catalog = merge(&m, &listed, 7, true).unwrap();
        let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a_echo", "a_x", "echo"]);
        assert_eq!(
            catalog.routes["a_x"],
            Route {
                upstream: 0,
                name: "x".into()
            }
        );
        assert_eq!(catalog.routes["echo"].upstream, 2);
        assert_eq!(catalog.missing, [1]);
    }

    #[test]
    fn a_collision_is_refused_or_left_to_the_first_mount() {
        let m = mounts(&["", "a", ""]);
        let listed = [Some(vec![tool("a_b")]), Some(vec![tool("b")]), None];
        assert_eq!(
            merge(&m, &listed, 1, true).unwrap_err().to_string(),
            "tool \"a_b\" is exposed by both upstream '(root: t)' and upstream 'a'"
        );
        let kept = merge(&m, &listed, 1, false).unwrap();
        assert_eq!(kept.tools.len(), 1);
        assert_eq!(kept.routes["a_b"].upstream, 0);
    }

    #[test]
    fn pages_carry_the_generation_and_a_stale_or_forged_cursor_is_refused() {
        let m = mounts(&[""]);
        let listed = [Some((0..5).map(|i| tool(&format!("t{i}"))).collect())];
        let catalog = merge(&m, &listed, 3, true).unwrap();
        let first = catalog.page(None, 2).unwrap();
        assert_eq!(first.next_cursor.as_deref(), Some("3.2"));
        let second = catalog.page(Some("3.2"), 2).unwrap();
        assert_eq!(second.tools[0].name, "t2");
        let last = catalog.page(Some("3.4"), 2).unwrap();
        assert_eq!((last.tools.len(), last.next_cursor), (1, None));
        for bad in ["2.2", "3.0", "3.5", "3", "x.1", "3.-1"] {
            let e = catalog.page(Some(bad), 2).unwrap_err();
            assert_eq!(e.code, mcp_types::ErrorCode::INVALID_PARAMS);
            assert_eq!(e.message, format!("Invalid cursor: {bad:?}"));
        }
    }

    #[tokio::test]
    async fn fetch_stops_at_the_tool_cap_and_drops_invalid_header_annotations() {
        let bad_header: Tool = serde_json::from_value(json!({
            "name": "bad",
            "inputSchema": {"type": "object", "properties": {"r": {"type": "object", "x-mcp-header": "R"}}}
        }))
        .unwrap();
        let mut tools = vec![bad_header];
        tools.extend((0..30).map(|i| tool(&format!("t{i:02}"))));
        let service = mcp_server_core::Server::new("many")
            .on_list_tools(move |_ctx, params| {
                let tools = tools.clone();
                async move {
                    // Pages of 4, forever if the reader let it (the cursor never ends after 30).
                    let start: usize = params.cursor.as_deref().map_or(0, |c| c.parse().unwrap());
                    let page: Vec<Tool> =
                        tools.iter().cycle().skip(start).take(4).cloned().collect();
                    Ok(ListToolsResult {
                        tools: page,
                        next_cursor: Some((start + 4).to_string()),
                        ..ListToolsResult::default()
                    })
                }
            })
            .into_service();
        let mut mount = Mounted::new(
            Namespace::new("m", '_').unwrap(),
            service.into_upstream().unwrap(),
            Implementation::new("hub", "1"),
            Duration::from_secs(5),
        );
        mount.limits.max_tools = 10;
        let fetched = fetch(&mount).await.unwrap();
        let names: Vec<&str> = fetched.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "t00", "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09"
            ]
        );
        mount.limits.max_tools = 1000;
        mount.limits.max_list_pages = 3;
        assert_eq!(fetch(&mount).await.unwrap().len(), 11);
    }
}
