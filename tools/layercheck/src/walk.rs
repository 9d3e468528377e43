//! The walk: module files from `lib.rs` on, each module's scope, and every
//! path its code writes, checked against the layer order.

use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Attribute, Item, UseTree};

use crate::config::Config;
use crate::scope::Scope;
use crate::{Report, Violation};

/// What the whole walk shares.
struct Walk<'a> {
    config: &'a Config,
    crate_aliases: Vec<String>,
    report: &'a mut Report,
}

/// Walks the crate whose root is `src/lib.rs` into `report`.
pub fn crate_from(src: &Path, config: &Config, report: &mut Report) -> Result<(), String> {
    let root = parse(&src.join("lib.rs"))?;
    let crate_aliases = root
        .items
        .iter()
        .filter_map(|i| match i {
            Item::ExternCrate(e) if e.ident == "self" => e.rename.as_ref().map(|(_, r)| r.to_string()),
            _ => None,
        })
        .collect();
    let mut walk = Walk { config, crate_aliases, report };
    walk.report.files += 1;
    walk.module(Vec::new(), &root.items, src, &src.join("lib.rs"))
}

fn parse(path: &Path) -> Result<syn::File, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    syn::parse_file(&text).map_err(|e| {
        let at = e.span().start();
        format!("{}:{}:{}: not Rust that syn parses: {e}", path.display(), at.line, at.column + 1)
    })
}

/// True for `#[cfg(test)]`: the item is only in the unit-test build.
fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Path>().is_ok_and(|p| p.is_ident("test")))
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// One leaf of a `use` tree: the full path, the name it binds (none for a
/// glob or `_`), and the line of the leaf.
struct UseLeaf {
    path: Vec<String>,
    binds: Option<String>,
    written: String,
    line: usize,
}

fn use_leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    let leaf = |prefix: &[String], ident: &syn::Ident, binds: Option<String>, suffix: String| {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        let written = format!("{}{suffix}", [prefix, &[ident.to_string()]].concat().join("::"));
        UseLeaf { path, binds, written, line: ident.span().start().line }
    };
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            let binds = if n.ident == "self" { prefix.last().cloned() } else { Some(n.ident.to_string()) };
            out.push(leaf(prefix, &n.ident, binds, String::new()));
        }
        UseTree::Rename(r) => {
            let binds = (r.rename != "_").then(|| r.rename.to_string());
            out.push(leaf(prefix, &r.ident, binds, format!(" as {}", r.rename)));
        }
        UseTree::Glob(g) => out.push(UseLeaf {
            path: prefix.clone(),
            binds: None,
            written: format!("{}::*", prefix.join("::")),
            line: g.star_token.span.start().line,
        }),
        UseTree::Group(g) => g.items.iter().for_each(|t| use_leaves(t, prefix, out)),
    }
}

/// Collects the `use` items of one module (in function bodies too), not
/// those of the modules inside it nor those under `#[cfg(test)]`.
#[derive(Default)]
struct Uses(Vec<UseLeaf>);

impl<'ast> Visit<'ast> for Uses {
    fn visit_item(&mut self, i: &'ast Item) {
        if !is_test(item_attrs(i)) && !matches!(i, Item::Mod(_)) {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_use(&mut self, i: &'ast syn::ItemUse) {
        use_leaves(&i.tree, &mut Vec::new(), &mut self.0);
    }
}

impl Walk<'_> {
    /// Checks the module `module` made of `items` (from `file`), whose
    /// `mod name;` files are in `dir`, then the modules inside it.
    fn module(&mut self, module: Vec<String>, items: &[Item], dir: &Path, file: &Path) -> Result<(), String> {
        self.report.modules += 1;
        let mut scope = Scope::new(module.clone(), self.crate_aliases.clone());
        for item in items {
            if let Item::Mod(m) = item {
                scope.children.push(m.ident.to_string());
            }
        }
        let mut uses = Uses::default();
        items.iter().for_each(|i| uses.visit_item(i));
        for leaf in &uses.0 {
            if let Some(name) = &leaf.binds {
                scope.bind(name.clone(), leaf.path.clone());
            }
        }
        // The crate root assembles the layers: it may name all of them.
        if !module.is_empty() {
            let mut paths = Paths { walk: self, scope: &scope, file };
            for leaf in &uses.0 {
                paths.check(&leaf.path, &leaf.written, leaf.line);
            }
            items.iter().for_each(|i| paths.visit_item(i));
        }
        for item in items {
            let Item::Mod(m) = item else { continue };
            if is_test(&m.attrs) {
                continue;
            }
            let name = m.ident.to_string();
            let mut child = module.clone();
            child.push(name.clone());
            match &m.content {
                Some((_, inner)) => self.module(child, inner, &dir.join(&name), file)?,
                None => {
                    if m.attrs.iter().any(|a| a.path().is_ident("path")) {
                        return Err(format!(
                            "{}: mod {name} has a #[path]: layercheck does not follow it",
                            file.display()
                        ));
                    }
                    let found = module_file(dir, &name)?;
                    let parsed = parse(&found)?;
                    self.report.files += 1;
                    self.module(child, &parsed.items, &dir.join(&name), &found)?;
                }
            }
        }
        Ok(())
    }
}

/// The file of `mod name;` in `dir`: `name.rs` or `name/mod.rs`.
fn module_file(dir: &Path, name: &str) -> Result<PathBuf, String> {
    for candidate in [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(format!("mod {name}: neither {name}.rs nor {name}/mod.rs in {}", dir.display()))
}

/// Checks the paths of one module's code.
struct Paths<'w, 'a> {
    walk: &'w mut Walk<'a>,
    scope: &'w Scope,
    file: &'w Path,
}

impl Paths<'_, '_> {
    fn check(&mut self, segments: &[String], written: &str, line: usize) {
        let Some(abs) = self.scope.resolve(segments) else { return };
        let Some(target) = abs.first() else { return };
        let config = self.walk.config;
        let module = &self.scope.module;
        if config.rank(Some(target)) <= config.rank(module.first().map(String::as_str)) {
            return;
        }
        if let Some(i) = config.allowed(module, target) {
            self.walk.report.allowed[i] += 1;
            return;
        }
        self.walk.report.violations.push(Violation {
            file: self.file.to_path_buf(),
            line,
            module: format!("crate::{}", module.join("::")),
            written: written.to_string(),
            resolved: format!("crate::{}", abs.join("::")),
        });
    }

    /// Paths inside a macro call's tokens (`format!("{}", crate::x::y())`):
    /// every `name :: name ...` run that does not continue another path.
    fn scan(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let colons = |i: usize| {
            matches!((tts.get(i), tts.get(i + 1)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                    if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
        };
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => self.scan(g.stream()),
                TokenTree::Ident(id) if !(i >= 2 && colons(i - 2)) => {
                    let mut segments = vec![id.to_string()];
                    while colons(i + 1) {
                        let Some(TokenTree::Ident(next)) = tts.get(i + 3) else { break };
                        segments.push(next.to_string());
                        i += 3;
                    }
                    if segments.len() > 1 {
                        self.check(&segments, &segments.join("::"), id.span().start().line);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_, '_> {
    fn visit_item(&mut self, i: &'ast Item) {
        // Modules are checked on their own, with their own scope.
        if !is_test(item_attrs(i)) && !matches!(i, Item::Mod(_)) {
            visit::visit_item(self, i);
        }
    }

    // Checked as leaves, with the module's other uses (see `Walk::module`).
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = p.segments.first().map_or(0, |s| s.ident.span().start().line);
            self.check(&segments, &segments.join("::"), line);
        }
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        visit::visit_macro(self, m);
        self.scan(m.tokens.clone());
    }
}
