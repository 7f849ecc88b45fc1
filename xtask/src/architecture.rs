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
        let modules = read_crate(&krate.join("src"))?;
        for m in &modules {
            let shown = m.file.strip_prefix(&root).unwrap_or(&m.file).display();
            if m.non_test_lines > MAX_FILE_LINES {
                problems.push(format!(
                    "{shown}: {} non-test lines (at most {MAX_FILE_LINES})",
                    m.non_test_lines
                ));
            }
            for (name, lines) in &m.long_fns {
                problems.push(format!(
                    "{shown}: fn {name} spans {lines} lines (at most {MAX_FN_LINES})"
                ));
            }
        }
        problems.extend(circles(&modules, &root));
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

/// Every `.rs` file under `src`, parsed.
fn read_crate(src: &Path) -> Result<Vec<Module>, String> {
    let mut files = Vec::new();
    walk(src, &mut files)?;
    files.sort();
    let mut modules = Vec::new();
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
        let mut visitor = Visitor {
            here: path.clone(),
            depth: path.len(),
            children,
            names: BTreeSet::new(),
            uses: BTreeMap::new(),
            long_fns: Vec::new(),
            file: file.clone(),
        };
        visitor.visit_file(&syntax);
        let uses = std::mem::take(&mut visitor.uses);
        modules.push(Module {
            file,
            path,
            non_test_lines,
            long_fns: visitor.long_fns,
            names: visitor.names,
            uses,
        });
    }
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

/// Pairs of files of one crate that name each other's items.
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
    for (&a, targets) in &edges {
        for &b in targets {
            if a < b && edges.get(&b).is_some_and(|t| t.contains(&a)) {
                out.push(format!("{} and {} import each other", shown(a), shown(b)));
            }
        }
    }
    out
}
