//! The layering check: each workspace crate may depend only on crates listed before it in
//! DESIGN.md's table, and only on the third-party crates its row allows.

use serde_json::Value;

/// The layer table, bottom to top, with the third-party crates each layer may use directly.
/// `None` means any (the facade and transports pull in what their features need).
const LAYERS: &[(&str, Option<&[&str]>)] = &[
    ("mcp-types", Some(&["serde", "serde_json"])),
    ("mcp-skills", Some(&["ring", "serde_json"])),
    (
        "mcp-state-seal",
        Some(&["ring", "serde", "serde_json", "base64", "zeroize"]),
    ),
    ("mcp-server-core", None),
    ("mcp-server-macros", Some(&["syn", "quote", "proc-macro2"])),
    ("mcp-client", None),
    ("mcp-transport-http", None),
    ("mcp-transport-stdio", None),
    (
        "mcp-store-redis",
        Some(&[
            "redis",
            "serde",
            "serde_json",
            "tokio",
            "tracing",
            "futures-util",
            // Feature `tls` (rediss://): the crypto provider rustls needs, ring as elsewhere.
            "rustls",
        ]),
    ),
    // The gateway kit: servers mounted in process and upstreams proxied over the transports
    // (above both of them and the client).
    ("mcp-proxy", Some(&["serde_json", "tokio", "tracing"])),
    ("mcp", None),
    (
        "mcp-term",
        Some(&[
            "clap",
            "serde",
            "serde_json",
            "ring",
            "base64",
            "tokio",
            "url",
            // One span over a call's rounds (`mcp::client::call_span`, instrumented with
            // `tracing::Instrument`), for `--otel`; already in the graph through mcp.
            "tracing",
        ]),
    ),
];

/// Crates of the workspace that are not part of the layering (tooling, examples, benches).
const EXEMPT: &[&str] = &[
    "xtask",
    "xtask-setup",
    "wasm-seal",
    "mcp-examples",
    "mcp-guides",
    // Test support (a misbehaving network), never published.
    "mcp-faults",
];

/// The prefix every published package carries on crates.io (`keel-mcp-types`); the table
/// names the crates without it.
pub(crate) const PACKAGE_PREFIX: &str = "keel-";

fn rank(package: &str) -> Option<usize> {
    let name = package.strip_prefix(PACKAGE_PREFIX)?;
    LAYERS.iter().position(|(n, _)| *n == name)
}

pub(crate) fn check() -> Result<(), String> {
    let metadata = crate::metadata()?;
    let violations = violations(&metadata);
    if violations.is_empty() {
        println!("layers: ok");
        Ok(())
    } else {
        Err(format!(
            "layering violations:\n  {}",
            violations.join("\n  ")
        ))
    }
}

/// Every rule the workspace in `metadata` breaks, one sentence each.
fn violations(metadata: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    for package in &packages {
        let Some(name) = package["name"].as_str() else {
            continue;
        };
        if EXEMPT.contains(&name) || name.starts_with("example-") || name.ends_with("-bench") {
            continue;
        }
        let Some(own) = rank(name) else {
            if rank(&format!("{PACKAGE_PREFIX}{name}")).is_some() {
                problems.push(format!(
                    "crate `{name}` lacks the `{PACKAGE_PREFIX}` prefix every published package carries (name = \"{PACKAGE_PREFIX}{name}\")"
                ));
            } else {
                problems.push(format!("crate `{name}` is not in the layer table; add it to xtask/src/layers.rs and docs/architecture.md"));
            }
            continue;
        };
        let allowed = LAYERS[own].1;
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            // Tests may reach upward (a server crate's tests may use the client); shipped code may not.
            if dep["kind"].as_str() == Some("dev") {
                continue;
            }
            match rank(dep_name) {
                Some(theirs) if theirs >= own => problems.push(format!(
                    "`{name}` depends on `{dep_name}`, which is at or above it in the layer table"
                )),
                Some(_) => {}
                None if members.contains(&dep_name) => problems.push(format!(
                    "`{name}` depends on workspace crate `{dep_name}`, which has no layer"
                )),
                None => {
                    if let Some(allowed) = allowed
                        && !allowed.contains(&dep_name)
                    {
                        problems.push(format!(
                            "`{name}` depends on `{dep_name}`; its layer allows only {allowed:?}"
                        ));
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Value {
        let deps: Vec<Value> = deps
            .iter()
            .map(|(n, kind)| json!({"name": n, "kind": kind}))
            .collect();
        json!({"name": name, "dependencies": deps})
    }

    #[test]
    fn an_upward_edge_is_reported() {
        let metadata = json!({"packages": [
            package("keel-mcp-types", &[("serde", None)]),
            package("keel-mcp-state-seal", &[("keel-mcp-server-core", None)]),
            package("keel-mcp-server-core", &[("keel-mcp-types", None)]),
        ]});
        assert_eq!(
            violations(&metadata),
            [
                "`keel-mcp-state-seal` depends on `keel-mcp-server-core`, which is at or above it in the layer table"
            ]
        );
    }

    #[test]
    fn a_third_party_crate_outside_the_row_is_reported_but_dev_dependencies_are_free() {
        let metadata = json!({"packages": [
            package("keel-mcp-types", &[("serde", None), ("tokio", None), ("boon", Some("dev"))]),
        ]});
        assert_eq!(
            violations(&metadata),
            [
                "`keel-mcp-types` depends on `tokio`; its layer allows only [\"serde\", \"serde_json\"]"
            ]
        );
    }

    #[test]
    fn an_unknown_workspace_crate_is_reported() {
        let metadata = json!({"packages": [package("keel-mcp-extra", &[])]});
        assert_eq!(violations(&metadata).len(), 1);
    }

    #[test]
    fn a_published_crate_without_the_prefix_is_reported() {
        let metadata = json!({"packages": [package("mcp-types", &[("serde", None)])]});
        assert_eq!(
            violations(&metadata),
            [
                "crate `mcp-types` lacks the `keel-` prefix every published package carries (name = \"keel-mcp-types\")"
            ]
        );
    }
}
