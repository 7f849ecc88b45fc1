//! `cargo xtask architecture [--check]`: the shape rules of issue #29 over every
//! `crates/*/src` file, measured with `syn` rather than by eye.
//!
//! - a file holds at most [`MAX_FILE_LINES`] non-test lines (the lines before its first
//!   `#[cfg(test)]`);
//! - a non-test function is at most [`MAX_FN_LINES`] lines, unless it is listed in
//!   [`FLAT_TABLES`] (a flat decision table, one arm per case, which splitting would only
//!   scatter);
//! - no two files of one crate import each other: file A names an item of file B (a private
//!   `use`, or a path starting `crate::`, `super::`, `self::` or a child module's name) while
//!   B names one of A's. Declaring `mod b;` is not an import, and neither is a re-export
//!   (`pub use b::Item`, `pub(crate) use`): that is the facade a module shows, and a path
//!   through it is followed to the file that defines the item.
//! - no cycle of imports of any length among a crate's files (issue #50): each strongly
//!   connected component of that graph is reported with one shortest cycle through it;
//! - no glob import of the crate's own modules outside tests (`use super::inner::*`): a glob
//!   hides which items, and so which files, a file depends on, and with them a cycle.
//!
//! Without `--check` it prints what it found; with it (as CI runs it), it fails when anything
//! breaks a rule.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// The most non-test lines a source file holds.
const MAX_FILE_LINES: usize = 1_000;
/// The most lines a non-test function spans.
const MAX_FN_LINES: usize = 120;
/// Functions allowed past [`MAX_FN_LINES`]: `(file, function)`, each a flat decision table.
const FLAT_TABLES: &[(&str, &str)] = &[];

/// One source file of a crate: its module path and what it names.
struct Module {
    file: PathBuf,
    /// `["service", "session"]` for `src/service/session.rs`; empty for the crate root.
    path: Vec<String>,
    non_test_lines: usize,
    long_fns: Vec<(String, usize)>,
    /// Non-test glob imports of the crate's own modules, with their lines.
    globs: Vec<(String, usize)>,
    /// The module paths (absolute, within the crate) this file's paths name.
    names: BTreeSet<Vec<String>>,
    /// What this file's `use` items bring in, by the name they bring it in as: a path through
    /// a re-export leads to the file that defines the item, not to the one re-exporting it.
    uses: BTreeMap<String, Vec<String>>,
}

pub(crate) fn architecture(args: &[String]) -> Result<(), String> {
    let check = args.iter().any(|a| a == "--check");
    let root = crate::workspace_root();
    let mut problems = Vec::new();
    let mut crates: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    for krate in crates {
        problems.extend(crate_problems(&krate.join("src"), &root)?);
    }
    for p in &problems {
        println!("{p}");
    }
    if problems.is_empty() {
        println!("architecture: every file and function within its bounds, no import circle");
        Ok(())
    } else if check {
        Err(format!(
            "{} architecture problem(s) (issue #29 rules; see xtask/src/architecture.rs)",
            problems.len()
        ))
    } else {
        println!("architecture: {} problem(s)", problems.len());
        Ok(())
    }
}

/// What breaks a rule in the crate whose sources are under `src` (paths shown relative to
/// `root`).
fn crate_problems(src: &Path, root: &Path) -> Result<Vec<String>, String> {
    let modules = read_crate(src)?;
    let mut problems = Vec::new();
    for m in &modules {
        let shown = m.file.strip_prefix(root).unwrap_or(&m.file).display();
        if m.non_test_lines > MAX_FILE_LINES {
            problems.push(format!(
                "{shown}: {} non-test lines (at most {MAX_FILE_LINES})",
                m.non_test_lines
            ));
        }
        for (glob, line) in &m.globs {
            problems.push(format!(
                "{shown}:{line}: `use {glob}` hides which files it names: import the items by name"
            ));
        }
        for (name, lines) in &m.long_fns {
            problems.push(format!(
                "{shown}: fn {name} spans {lines} lines (at most {MAX_FN_LINES})"
            ));
        }
    }
    problems.extend(circles(&modules, root));
    Ok(problems)
}

/// Every `.rs` file under `src`, parsed.
fn read_crate(src: &Path) -> Result<Vec<Module>, String> {
    let mut files = Vec::new();
    walk(src, &mut files)?;
    files.sort();
    let mut modules = Vec::new();
    let mut test_files: Vec<Vec<String>> = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let syntax = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let path = module_path(src, &file);
        let non_test_lines = text
            .lines()
            .position(|l| l.starts_with("#[cfg(test)]"))
            .unwrap_or_else(|| text.lines().count());
        let children = syntax
            .items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Mod(m) => Some(m.ident.to_string()),
                _ => None,
            })
            .collect();
        // `#[cfg(test)] mod tests;`: that file is test code, measured by no rule.
        for item in &syntax.items {
            if let syn::Item::Mod(m) = item
                && m.content.is_none()
                && is_test(&m.attrs)
            {
                let mut child = path.clone();
                child.push(m.ident.to_string());
                test_files.push(child);
            }
        }
        let mut visitor = Visitor {
            here: path.clone(),
            depth: path.len(),
            children,
            names: BTreeSet::new(),
            uses: BTreeMap::new(),
            long_fns: Vec::new(),
            globs: Vec::new(),
            file: file.clone(),
        };
        visitor.visit_file(&syntax);
        let uses = std::mem::take(&mut visitor.uses);
        modules.push(Module {
            file,
            path,
            non_test_lines,
            long_fns: visitor.long_fns,
            globs: visitor.globs,
            names: visitor.names,
            uses,
        });
    }
    modules.retain(|m| !test_files.iter().any(|t| m.path.starts_with(t)));
    Ok(modules)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    for entry in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `src/a/b.rs` → `[a, b]`; `src/a/mod.rs` → `[a]`; `src/lib.rs`, `src/main.rs` → `[]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod")) {
        parts.pop();
    }
    if parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main") {
        parts.clear();
    }
    parts
}

struct Visitor {
    /// The module the visitor is in: the file's, or an inline module's within it.
    here: Vec<String>,
    /// The file's own module depth (`here` is longer inside an inline module).
    depth: usize,
    /// The modules this file declares (`mod x;`): a path starting with one is relative.
    children: BTreeSet<String>,
    names: BTreeSet<Vec<String>>,
    uses: BTreeMap<String, Vec<String>>,
    long_fns: Vec<(String, usize)>,
    globs: Vec<(String, usize)>,
    file: PathBuf,
}

impl Visitor {
    /// Records the absolute module path a path starting with `crate`, `super` or `self`
    /// names (the whole path: the owning file is found later by its longest prefix).
    fn name(&mut self, segments: &[String]) {
        if let Some(absolute) = self.absolute(segments) {
            self.names.insert(absolute);
        }
    }

    /// The path within the crate that `segments` names from this file, if it is one.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let (mut absolute, mut rest) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "super" | "self" => (self.here.clone(), &segments[1..]),
            // A child module's name alone may be a local variable; `child::item` is a path.
            child if self.children.contains(child) && segments.len() > 1 => {
                (self.here.clone(), segments)
            }
            _ => return None,
        };
        if first == "super" {
            absolute.pop();
        }
        while let Some(next) = rest.first() {
            if next == "super" {
                absolute.pop();
                rest = &rest[1..];
            } else {
                break;
            }
        }
        absolute.extend(rest.iter().cloned());
        Some(absolute)
    }

    fn depth_of_file(&self) -> usize {
        self.depth
    }

    fn measure(&mut self, name: String, span: proc_macro2::Span) {
        let lines = span.end().line.saturating_sub(span.start().line) + 1;
        let file = self.file.to_string_lossy().into_owned();
        let allowed = FLAT_TABLES
            .iter()
            .any(|(f, n)| file.ends_with(f) && *n == name);
        if lines > MAX_FN_LINES && !allowed {
            self.long_fns.push((name, lines));
        }
    }
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        (a.path().is_ident("cfg") && a.meta.to_token_stream_string().contains("test"))
            || a.path().is_ident("test")
            || a.path().segments.last().is_some_and(|s| s.ident == "test")
    })
}

trait MetaText {
    fn to_token_stream_string(&self) -> String;
}

impl MetaText for syn::Meta {
    fn to_token_stream_string(&self) -> String {
        quote::ToTokens::to_token_stream(self).to_string()
    }
}

/// Flattens a `use` tree into its paths.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            if n.ident != "self" {
                path.push(n.ident.to_string());
            }
            let alias = path.last().cloned().unwrap_or_default();
            out.push((alias, path));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((r.rename.to_string(), path));
        }
        // A glob brings in no name of its own: the empty alias marks it.
        syn::UseTree::Glob(_) => out.push((String::new(), prefix.clone())),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                use_paths(item, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Visitor {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) {
            return;
        }
        // An inline module is part of this file; its `self`/`super` are relative to it.
        if item.content.is_some() {
            self.here.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.here.pop();
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        self.measure(item.sig.ident.to_string(), item.span());
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        self.measure(item.sig.ident.to_string(), item.span());
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if item.default.is_some() {
            self.measure(item.sig.ident.to_string(), item.span());
        }
        syn::visit::visit_trait_item_fn(self, item);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test(&item.attrs) {
            return;
        }
        syn::visit::visit_item_impl(self, item);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if is_test(&item.attrs) {
            return;
        }
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        let reexport = !matches!(item.vis, syn::Visibility::Inherited);
        for (alias, path) in paths {
            if let Some(absolute) = self.absolute(&path) {
                // A prelude (by convention imported whole) holds only re-exports of `core` and
                // `alloc` items, so its glob names no file of the crate.
                if alias.is_empty() && !reexport && path.last().is_none_or(|last| last != "prelude")
                {
                    let shown = if path.is_empty() {
                        "self".to_owned()
                    } else {
                        path.join("::")
                    };
                    self.globs
                        .push((format!("{shown}::*"), item.span().start().line));
                }
                if self.here.len() == self.depth_of_file() {
                    self.uses.insert(alias, absolute.clone());
                }
                if !reexport {
                    self.names.insert(absolute);
                }
            }
        }
    }

    /// `pub(super)` and `pub(in crate::x)` name where an item is visible, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.name(&segments);
        syn::visit::visit_path(self, path);
    }
}

/// Import cycles among the files of one crate, of any length: each strongly connected
/// component of the "names an item of" graph, shown as one shortest cycle through it.
fn circles(modules: &[Module], root: &Path) -> Vec<String> {
    // The file owning a module path: the module with the longest matching prefix, followed
    // through that file's `use` when the next segment is a name it only brings in.
    let owner = |path: &[String]| -> Option<usize> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let (i, m) = modules
                .iter()
                .enumerate()
                .filter(|(_, m)| path.starts_with(&m.path))
                .max_by_key(|(_, m)| m.path.len())?;
            let Some(next) = path.get(m.path.len()) else {
                return Some(i);
            };
            match m.uses.get(next) {
                Some(target) if *target != path[..=m.path.len()] => {
                    let mut through = target.clone();
                    through.extend(path[m.path.len() + 1..].iter().cloned());
                    path = through;
                }
                _ => return Some(i),
            }
        }
        None
    };
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i, m) in modules.iter().enumerate() {
        for name in &m.names {
            // A path naming exactly a module (not an item in it) is `mod x;`-like only
            // when it is one's own child declared here; a `use` of the module itself counts.
            if let Some(j) = owner(name)
                && j != i
            {
                if std::env::var_os("ARCHITECTURE_DEBUG").is_some() {
                    eprintln!(
                        "{} -> {}: {}",
                        m.file.display(),
                        modules[j].file.display(),
                        name.join("::")
                    );
                }
                edges.entry(i).or_default().insert(j);
            }
        }
    }
    let shown = |i: usize| {
        modules[i]
            .file
            .strip_prefix(root)
            .unwrap_or(&modules[i].file)
            .display()
            .to_string()
    };
    let mut out = Vec::new();
    for component in strongly_connected(modules.len(), &edges) {
        let cycle = shortest_cycle(component[0], &component, &edges);
        let mut shown_cycle: Vec<String> = cycle.iter().map(|&i| shown(i)).collect();
        shown_cycle.push(shown(cycle[0]));
        let rest: Vec<String> = component
            .iter()
            .filter(|i| !cycle.contains(i))
            .map(|&i| shown(i))
            .collect();
        let also = if rest.is_empty() {
            String::new()
        } else {
            format!(" (in the same knot: {})", rest.join(", "))
        };
        out.push(format!(
            "import cycle of {} files: {}{also}",
            component.len(),
            shown_cycle.join(" -> ")
        ));
    }
    out
}

/// The strongly connected components of more than one file (Tarjan's algorithm, iterative),
/// each sorted, in order of their first file.
fn strongly_connected(n: usize, edges: &BTreeMap<usize, BTreeSet<usize>>) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    let empty = BTreeSet::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        // (node, its successors not yet walked)
        let mut work: Vec<(usize, Vec<usize>)> = Vec::new();
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        work.push((
            root,
            edges.get(&root).unwrap_or(&empty).iter().copied().collect(),
        ));
        while let Some((v, successors)) = work.last_mut() {
            let v = *v;
            if let Some(w) = successors.pop() {
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, edges.get(&w).unwrap_or(&empty).iter().copied().collect()));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some((parent, _)) = work.last() {
                low[*parent] = low[*parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort_unstable();
                    components.push(component);
                }
            }
        }
    }
    components.sort();
    components
}

/// The shortest cycle through `from` inside `component` (breadth first), as the files in order.
fn shortest_cycle(
    from: usize,
    component: &[usize],
    edges: &BTreeMap<usize, BTreeSet<usize>>,
) -> Vec<usize> {
    let inside: BTreeSet<usize> = component.iter().copied().collect();
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for &w in edges.get(&v).into_iter().flatten() {
            if !inside.contains(&w) {
                continue;
            }
            if w == from {
                let mut path = vec![v];
                let mut at = v;
                while at != from {
                    at = came_from[&at];
                    path.push(at);
                }
                path.reverse();
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = came_from.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    // A strongly connected component always has a cycle through each of its files.
    component.to_vec()
}

#[cfg(test)]
mod tests {
    use super::crate_problems;
    use std::fs;
    use std::path::{Path, PathBuf};

    /// A crate under a fresh directory of `target/`, its files given as (path, text).
    fn planted(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/architecture-tests")
            .join(name);
        let _ = fs::remove_dir_all(&root);
        for (path, text) in files {
            let file = root.join("src").join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, text).unwrap();
        }
        root
    }

    #[test]
    fn a_three_file_cycle_is_found_where_no_pair_imports_each_other() {
        let root = planted(
            "three",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("a.rs", "use crate::b::B;\npub struct A(pub B);\n"),
                ("b.rs", "use crate::c::C;\npub struct B(pub C);\n"),
                ("c.rs", "pub struct C(pub Option<Box<crate::a::A>>);\n"),
            ],
        );
        let problems = crate_problems(&root.join("src"), &root).unwrap();
        assert_eq!(
            problems,
            ["import cycle of 3 files: src/a.rs -> src/b.rs -> src/c.rs -> src/a.rs"]
        );
    }

    #[test]
    fn the_same_files_without_the_back_edge_pass() {
        let root = planted(
            "chain",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("a.rs", "use crate::b::B;\npub struct A(pub B);\n"),
                ("b.rs", "use crate::c::C;\npub struct B(pub C);\n"),
                ("c.rs", "pub struct C;\n"),
            ],
        );
        assert_eq!(
            crate_problems(&root.join("src"), &root).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_glob_of_a_sibling_is_refused_and_a_cycle_through_a_re_export_is_followed() {
        let root = planted(
            "glob",
            &[
                ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
                (
                    "a.rs",
                    "use super::b::*;\npub struct A;\npub fn f() -> B { B }\n",
                ),
                (
                    "b.rs",
                    "pub struct B;\npub fn g() -> crate::A { crate::A }\n",
                ),
            ],
        );
        let problems = crate_problems(&root.join("src"), &root).unwrap();
        assert_eq!(
            problems,
            [
                "src/a.rs:1: `use super::b::*` hides which files it names: import the items by name",
                "import cycle of 2 files: src/a.rs -> src/b.rs -> src/a.rs",
            ]
        );
    }

    #[test]
    fn test_code_and_a_prelude_glob_are_left_alone() {
        let root = planted(
            "tests",
            &[
                (
                    "lib.rs",
                    "mod prelude { pub(crate) use core::fmt; }\nmod a;\n#[cfg(test)]\nmod tests;\n",
                ),
                (
                    "a.rs",
                    "use crate::prelude::*;\npub struct A;\n#[cfg(test)]\nmod t { use super::*; }\n",
                ),
                ("tests.rs", "use crate::a::*;\n"),
            ],
        );
        assert_eq!(
            crate_problems(&root.join("src"), &root).unwrap(),
            Vec::<String>::new()
        );
    }
}
