//! What a name at the start of a path means in one module: the crate
//! (`crate`, an `extern crate self as NAME`), the module itself or an
//! ancestor (`self`, `super`), a child module, or what a `use` of the
//! module binds (a rename too). Everything else (std, other crates, local
//! items and variables) is outside the crate's layers and is left alone.

use std::collections::HashMap;

/// A `use` binding: the path as written and the module it was written in.
#[derive(Debug, Clone)]
struct Binding {
    segments: Vec<String>,
}

/// The names one module (a file or an inline `mod { }`) sees.
#[derive(Debug, Default)]
pub struct Scope {
    /// The module's path from the crate root (empty for the root).
    pub module: Vec<String>,
    /// Its child modules (`mod name;` and `mod name { }`).
    pub children: Vec<String>,
    /// What its `use` items bind, by the name they bind.
    uses: HashMap<String, Binding>,
    /// Names of the crate itself (`extern crate self as NAME`, in the root).
    pub crate_aliases: Vec<String>,
}

impl Scope {
    /// An empty scope for `module`.
    pub fn new(module: Vec<String>, crate_aliases: Vec<String>) -> Scope {
        Scope { module, crate_aliases, ..Scope::default() }
    }

    /// Records that a `use` of this module binds `name` to `segments`.
    pub fn bind(&mut self, name: String, segments: Vec<String>) {
        self.uses.insert(name, Binding { segments });
    }

    /// The absolute path (from the crate root) that `segments`, written in
    /// this module, names, or `None` when it starts outside the crate. A
    /// path whose first name is bound by a `use` is resolved through that
    /// `use` (and so on, up to a depth that only a cycle reaches).
    pub fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        self.resolve_depth(segments, 0)
    }

    fn resolve_depth(&self, segments: &[String], depth: usize) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut abs: Vec<String> = match first.as_str() {
            "crate" | "$crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut m = self.module.clone();
                m.pop()?;
                m
            }
            name if self.crate_aliases.iter().any(|a| a == name) => Vec::new(),
            name if self.children.iter().any(|c| c == name) => {
                let mut m = self.module.clone();
                m.push(name.to_string());
                m
            }
            name => {
                let binding = self.uses.get(name)?;
                if depth > 16 {
                    return None;
                }
                let mut abs = self.resolve_depth(&binding.segments, depth + 1)?;
                abs.extend(rest.iter().cloned());
                return Some(abs);
            }
        };
        // `super::super::x`, `self::super::x`: each further `super` goes up once more.
        let mut rest = rest.iter().peekable();
        while rest.peek().is_some_and(|s| *s == "super") {
            abs.pop()?;
            rest.next();
        }
        abs.extend(rest.cloned());
        Some(abs)
    }
}
