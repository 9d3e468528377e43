//! The second check: no crate-visible function takes or returns an address
//! as a bare integer, and no crate-visible struct field or enum variant field
//! holds one.
//!
//! Process addresses, IOVAs and bus addresses have their own types in the
//! library (`sys::addr::{HostAddr, Iova, BusAddr}`); a `u64`/`usize` beside
//! another one of the same width is how they got mixed up. The check goes by
//! names, so it has no false positives on sizes and offsets: a parameter
//! named `addr`, `address`, `iova`, `bus`, `ptr` or `vaddr` (or ending in
//! `_addr`, `_address`, `_iova`, `_ptr`, `_vaddr`) typed `u64` or `usize`,
//! or a function named that way (`bus_address`, `iova`) returning one (or
//! an `Option` of one). A field is checked by the same names and also
//! `base` (or ending in `_base`: a field that says where something starts),
//! when it is `pub` or `pub(crate)` in a crate-visible struct, or a named
//! field of a crate-visible enum's variant. Crate-visible means `pub` or
//! `pub(crate)`, and every method of a trait; `extern "C"` functions (the C
//! boundary converts at its edge) and `#[cfg(test)]` items are not checked.

use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};
use syn::{Attribute, Fields, FnArg, Pat, ReturnType, Signature, Type, Visibility};

/// A function or field that carries an address as a bare integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BareAddress {
    /// The file it is in.
    pub file: PathBuf,
    /// 1-based line of the parameter (or of the function's name, for a
    /// return type).
    pub line: usize,
    /// The function, or the type whose field it is.
    pub function: String,
    /// What is bare: `parameter iova: u64`, `returns u64` or `field base: usize`.
    pub what: String,
}

impl std::fmt::Display for BareAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {} {}: an address as a bare integer; take HostAddr, Iova or BusAddr (sys::addr), or a Span of one",
            self.file.display(),
            self.line,
            self.function,
            self.what
        )
    }
}

/// Every bare address in the `.rs` files under `src`, by file and line.
pub fn check(src: &Path) -> Result<Vec<BareAddress>, String> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
        let parsed =
            syn::parse_file(&text).map_err(|e| format!("{}: not Rust that syn parses: {e}", file.display()))?;
        let mut v = Visitor { file: &file, out: &mut out, in_trait: false };
        v.visit_file(&parsed);
    }
    Ok(out)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("reading {}: {e}", dir.display()))?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// True if the name says it holds an address.
fn names_address(name: &str) -> bool {
    const WHOLE: [&str; 6] = ["addr", "address", "iova", "bus", "ptr", "vaddr"];
    let name = name.trim_start_matches('_');
    WHOLE.contains(&name) || WHOLE.iter().any(|w| name.ends_with(&format!("_{w}")) && *w != "bus")
}

/// True if a field's name says it holds an address: as a parameter's, or
/// `base`.
fn field_names_address(name: &str) -> bool {
    let bare = name.trim_start_matches('_');
    names_address(name) || bare == "base" || bare.ends_with("_base")
}

/// True for `u64`, `usize`, or (for a return) `Option` of one.
fn is_bare(ty: &Type, option_too: bool) -> bool {
    let Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last() else { return false };
    if last.ident == "u64" || last.ident == "usize" {
        return p.path.segments.len() == 1;
    }
    if option_too && last.ident == "Option" {
        if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
            return a.args.iter().any(|g| matches!(g, syn::GenericArgument::Type(t) if is_bare(t, false)));
        }
    }
    false
}

fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Path>().is_ok_and(|p| p.is_ident("test")))
}

/// `pub` or `pub(crate)`; `pub(super)`, `pub(in …)` and private are not
/// crate-visible.
fn crate_visible(vis: &Visibility) -> bool {
    match vis {
        Visibility::Public(_) => true,
        Visibility::Restricted(r) => r.in_token.is_none() && r.path.is_ident("crate"),
        Visibility::Inherited => false,
    }
}

struct Visitor<'a> {
    file: &'a Path,
    out: &'a mut Vec<BareAddress>,
    in_trait: bool,
}

impl Visitor<'_> {
    fn signature(&mut self, sig: &Signature) {
        if sig.abi.is_some() {
            return;
        }
        let function = sig.ident.to_string();
        for arg in &sig.inputs {
            let FnArg::Typed(t) = arg else { continue };
            let Pat::Ident(name) = &*t.pat else { continue };
            if names_address(&name.ident.to_string()) && is_bare(&t.ty, false) {
                self.out.push(BareAddress {
                    file: self.file.to_path_buf(),
                    line: name.ident.span().start().line,
                    function: function.clone(),
                    what: format!("parameter {}: {}", name.ident, type_name(&t.ty)),
                });
            }
        }
        if let ReturnType::Type(_, ty) = &sig.output {
            if names_address(&function) && is_bare(ty, true) {
                self.out.push(BareAddress {
                    file: self.file.to_path_buf(),
                    line: sig.ident.span().start().line,
                    function,
                    what: format!("returns {}", type_name(ty)),
                });
            }
        }
    }
}

impl Visitor<'_> {
    /// The named fields of `fields` that hold a bare address; `all` for an
    /// enum variant's (as visible as the enum), else the crate-visible ones.
    fn fields(&mut self, owner: &str, fields: &Fields, all: bool) {
        let Fields::Named(named) = fields else { return };
        for f in &named.named {
            let Some(name) = &f.ident else { continue };
            if (all || crate_visible(&f.vis)) && field_names_address(&name.to_string()) && is_bare(&f.ty, true) {
                self.out.push(BareAddress {
                    file: self.file.to_path_buf(),
                    line: name.span().start().line,
                    function: owner.to_string(),
                    what: format!("field {name}: {}", type_name(&f.ty)),
                });
            }
        }
    }
}

fn type_name(ty: &Type) -> String {
    quote_free(ty)
}

/// The type as written, without spaces syn's printer puts in.
fn quote_free(ty: &Type) -> String {
    use quote::ToTokens;
    ty.to_token_stream().to_string().replace(' ', "")
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        if !is_test(&s.attrs) && crate_visible(&s.vis) {
            self.fields(&s.ident.to_string(), &s.fields, false);
        }
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        if !is_test(&e.attrs) && crate_visible(&e.vis) {
            for v in &e.variants {
                self.fields(&format!("{}::{}", e.ident, v.ident), &v.fields, true);
            }
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) && crate_visible(&f.vis) {
            self.signature(&f.sig);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test(&i.attrs) {
            return;
        }
        // A trait's methods are checked at the trait (the impl must follow it).
        if i.trait_.is_none() {
            visit::visit_item_impl(self, i);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) && crate_visible(&f.vis) {
            self.signature(&f.sig);
        }
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if !is_test(&t.attrs) {
            self.in_trait = true;
            visit::visit_item_trait(self, t);
            self.in_trait = false;
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if self.in_trait && !is_test(&f.attrs) {
            self.signature(&f.sig);
        }
    }
}
