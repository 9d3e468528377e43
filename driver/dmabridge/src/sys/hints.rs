//! The commands and files that messages name as fixes, as this copy of
//! dmabridge can reach them.
//!
//! A build in the source tree names the tree's tools (`kmod-helpers/dmabridge-kmod`,
//! `udev/70-dmabridge.rules`, `make demo`); an installed copy (a Debian
//! package, `make install`) has none of them, and names what was installed
//! instead (`dmabridge-kmod` in sbin, the group `dmabridge`, the docs under
//! `PREFIX/share/doc/dmabridge`). Which one applies is decided once, at run
//! time, from the file this code was loaded from (the `dmabridge` command,
//! the ICD library or any program linking the crate): read from
//! `/proc/self/maps`, so the same build answers right in the tree and once
//! copied out of it, and `make install` needs no build of its own. A file
//! that lies under a folder holding `Cargo.toml` and
//! `kmod-helpers/dmabridge-kmod` is a checkout's; anything else, including a
//! process whose maps cannot be read, is installed (a message then never
//! names a path that does not exist there).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where this copy of dmabridge runs from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Built in the source tree at this path: messages name its tools.
    Checkout(PathBuf),
    /// Installed: messages name the installed commands; `udev_notes` is the
    /// installed udev notes (`PREFIX/share/doc/dmabridge/udev.md`) when they
    /// are there.
    Installed {
        /// The installed udev notes, when found next to this file's prefix.
        udev_notes: Option<PathBuf>,
    },
}

impl Layout {
    /// The layout of a program or library loaded from `file`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::hints::Layout;
    /// let l = Layout::of_file(std::path::Path::new("/nonexistent/usr/bin/dmabridge"));
    /// assert_eq!(l, Layout::Installed { udev_notes: None });
    /// ```
    pub fn of_file(file: &Path) -> Layout {
        if let Some(tree) = file
            .ancestors()
            .skip(1)
            .find(|d| d.join("Cargo.toml").is_file() && d.join("kmod-helpers/dmabridge-kmod").is_file())
        {
            return Layout::Checkout(tree.to_path_buf());
        }
        // PREFIX/bin/dmabridge, PREFIX/lib[/<triplet>]/libdmabridge_icd.so.1:
        // the prefix is above the last bin, sbin or lib* folder.
        let prefix = file.ancestors().skip(1).find_map(|d| {
            let name = d.file_name()?.to_str()?;
            matches!(name, "bin" | "sbin" | "lib" | "lib64").then(|| d.parent()).flatten()
        });
        let udev_notes = prefix.map(|p| p.join("share/doc/dmabridge/udev.md")).filter(|p| p.is_file());
        Layout::Installed { udev_notes }
    }

    /// The layout of the running code, found once per process.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::hints::Layout;
    /// match Layout::current() {
    ///     Layout::Checkout(tree) => assert!(tree.join("kmod-helpers/dmabridge-kmod").is_file()),
    ///     Layout::Installed { udev_notes } => println!("installed; udev notes: {udev_notes:?}"),
    /// }
    /// ```
    pub fn current() -> &'static Layout {
        static LAYOUT: OnceLock<Layout> = OnceLock::new();
        LAYOUT.get_or_init(|| match loaded_from() {
            Some(file) => Layout::of_file(&file),
            None => Layout::Installed { udev_notes: None },
        })
    }
}

/// The file (executable or shared library) this function's code was
/// mapped from: the mapping of `/proc/self/maps` that holds its address.
fn loaded_from() -> Option<PathBuf> {
    let here = loaded_from as fn() -> Option<PathBuf> as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        // start-end perms offset dev inode path
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
        let path = fields.nth(4)?.trim_start();
        ((start..end).contains(&here) && path.starts_with('/'))
            .then(|| PathBuf::from(path.strip_suffix(" (deleted)").unwrap_or(path)))
    })
}

/// The command that loads modules, binds functions to vfio-pci and raises
/// memlock limits: `kmod-helpers/dmabridge-kmod` in a checkout,
/// `dmabridge-kmod` (installed in sbin) otherwise.
///
/// # Examples
///
/// ```
/// assert!(dmabridge::sys::hints::kmod().ends_with("dmabridge-kmod"));
/// ```
pub fn kmod() -> &'static str {
    match Layout::current() {
        Layout::Checkout(_) => "kmod-helpers/dmabridge-kmod",
        Layout::Installed { .. } => "dmabridge-kmod",
    }
}

/// How a user gets the device nodes the udev rules grant.
///
/// # Examples
///
/// ```
/// assert!(dmabridge::sys::hints::join_group().starts_with("add your user to the group"));
/// ```
pub fn join_group() -> &'static str {
    match Layout::current() {
        Layout::Checkout(_) => "add your user to the group of udev/70-dmabridge.rules",
        Layout::Installed { .. } => {
            "add your user to the group dmabridge (usermod -aG dmabridge USER, then log in again)"
        }
    }
}

/// Where the udev notes are (rules, group, memlock limits for logins and
/// services).
///
/// # Examples
///
/// ```
/// assert!(dmabridge::sys::hints::udev_notes().contains("udev"));
/// ```
pub fn udev_notes() -> &'static str {
    static NOTES: OnceLock<String> = OnceLock::new();
    NOTES.get_or_init(|| match Layout::current() {
        Layout::Checkout(_) => "udev/README.md".to_owned(),
        Layout::Installed { udev_notes: Some(p) } => p.display().to_string(),
        Layout::Installed { udev_notes: None } => "udev.md in dmabridge's docs".to_owned(),
    })
}

/// `text` in a checkout, nothing when installed: for the clauses that name
/// what only the source tree has (`make demo`, the QEMU rig).
///
/// # Examples
///
/// ```
/// let s = dmabridge::sys::hints::checkout_only(" or run `make demo`");
/// assert!(s.is_empty() || s == " or run `make demo`");
/// ```
pub fn checkout_only(text: &'static str) -> &'static str {
    match Layout::current() {
        Layout::Checkout(_) => text,
        Layout::Installed { .. } => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_test_is_in_the_checkout() {
        let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
        assert_eq!(Layout::current(), &Layout::Checkout(tree));
        assert_eq!(kmod(), "kmod-helpers/dmabridge-kmod");
    }

    #[test]
    fn a_file_outside_any_tree_is_installed_and_finds_its_prefix_docs() {
        let root = std::env::temp_dir().join(format!("dmabridge-hints-{}", std::process::id()));
        let docs = root.join("usr/share/doc/dmabridge");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("udev.md"), "").unwrap();
        let icd = root.join("usr/lib/x86_64-linux-gnu/libdmabridge_icd.so.1");
        let cli = root.join("usr/bin/dmabridge");
        let want = Layout::Installed { udev_notes: Some(docs.join("udev.md")) };
        assert_eq!(Layout::of_file(&icd), want);
        assert_eq!(Layout::of_file(&cli), want);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
