//! layercheck: no module of a layered crate names a layer above its own.
//!
//! dmabridge's library keeps one folder per layer (`sys` < `memory` <
//! `runtime` < `ext` < `pipeline`, `layers.conf`). The compiler would
//! enforce the order if the lower layers were a crate of their own; until
//! they are, `make lint` runs this check. It parses every module of the
//! crate from `lib.rs` (following `mod` items to their files), knows each
//! module's path, and resolves every path the code writes — `use` trees,
//! `crate::`, `self::`, `super::` (chained), `use` renames and aliases of
//! aliases, `extern crate self as NAME`, and paths inside macro calls — to
//! the crate-level module it names. A path that resolves into a layer above
//! the module's own is reported with file, line and the path as written.
//!
//! A second check ([`addrs`]) reports crate-visible functions that take or
//! return an address as a bare integer, and crate-visible fields that hold one.
//!
//! Not checked, on purpose: items under `#[cfg(test)]` (unit tests use the
//! library through any layer, like the integration tests; they are not part
//! of the layered library), and doc comments (a link is not a dependency).

pub mod addrs;
mod config;
mod scope;
mod walk;

use std::path::{Path, PathBuf};

pub use config::Config;

/// A path that names a layer above its module's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The file (the source folder joined with its path there).
    pub file: PathBuf,
    /// 1-based line of the path's first name.
    pub line: usize,
    /// The module the path is written in (`crate::memory::heap`).
    pub module: String,
    /// The path as written (`super::super::ext::usm::keep_resident`).
    pub written: String,
    /// What it resolves to (`crate::ext::usm::keep_resident`).
    pub resolved: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {} names {}{}: a layer must not reach up into a higher one",
            self.file.display(),
            self.line,
            self.module,
            self.written,
            if self.written == self.resolved { String::new() } else { format!(" (that is {})", self.resolved) }
        )
    }
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Report {
    /// The paths that reach up, by file and line.
    pub violations: Vec<Violation>,
    /// How many modules and files were read.
    pub modules: usize,
    /// The files read.
    pub files: usize,
    /// How many paths each exception of the configuration let through.
    pub allowed: Vec<usize>,
}

/// Checks the crate whose root is `src/lib.rs`.
pub fn check(src: &Path, config: &Config) -> Result<Report, String> {
    let mut report = Report { allowed: vec![0; config.allow.len()], ..Report::default() };
    walk::crate_from(src, config, &mut report)?;
    report.violations.sort_by(|a, b| (&a.file, a.line, &a.written).cmp(&(&b.file, b.line, &b.written)));
    report.violations.dedup();
    Ok(report)
}
