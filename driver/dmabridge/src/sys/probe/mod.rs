//! Machine capability report (`dmabridge info`): which zero-copy paths this
//! machine offers, and for each missing piece one line saying how to fix it.
//!
//! [`Report::gather`] only looks: it reads sysfs and `/proc`, checks device
//! nodes with `access(2)`, opens `/dev/vfio/vfio` (a fresh container claims
//! nothing) and sets up and drops a two-entry io_uring. It never opens a VFIO
//! group (that would claim it) and never loads modules or binds devices; the
//! hints name the commands that do.
//!
//! Every section and item carries a [`Verdict`] and, when it is not
//! [`Verdict::Ok`], a one-line `hint`. The report serializes to JSON (field
//! names as in the structs; verdicts as `"ok"`, `"warning"`, `"no-access"`,
//! `"missing"`) and prints as aligned text through [`std::fmt::Display`].

mod groups;
pub(crate) mod iommu;
mod kernel;
mod memory;
mod overall;
mod text;
mod vfio;

use std::fmt;

use rustix::fs::Access;
use rustix::io::Errno;
use serde::Serialize;

pub use groups::{FunctionReport, GroupReport};
pub use iommu::IommuReport;
pub use kernel::{IoUringReport, KernelReport};
pub use memory::{HeapReport, HeapsReport, MemlockReport, UdmabufReport, MEMLOCK_MIN};
pub use vfio::{ContainerReport, ModuleReport, VfioReport};

/// How to get the nodes the udev rules grant (names the rules in a checkout,
/// the group once installed: see [`crate::sys::hints`]).
fn udev_hint() -> String {
    format!("{}, or run as root", crate::sys::hints::join_group())
}

/// How one check came out, from best to worst (the order is used to pick a
/// section's verdict from its items).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Present and usable by this user.
    Ok,
    /// Usable, but something limits it.
    Warning,
    /// Present, but this user may not use it.
    NoAccess,
    /// Not there.
    Missing,
}

impl Verdict {
    /// How the text report prints it: `ok`, `WARNING`, `NO ACCESS`, `MISSING`.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::Verdict;
    ///
    /// assert_eq!(Verdict::Ok.label(), "ok");
    /// assert_eq!(Verdict::NoAccess.label(), "NO ACCESS");
    /// assert_eq!(Verdict::Missing.to_string(), Verdict::Missing.label());
    /// ```
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warning => "WARNING",
            Verdict::NoAccess => "NO ACCESS",
            Verdict::Missing => "MISSING",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.label())
    }
}

/// The whole report: one field per section, then the zero-copy paths they
/// add up to.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The running kernel.
    pub kernel: KernelReport,
    /// io_uring, which device completions are waited on with.
    pub io_uring: IoUringReport,
    /// `/dev/udmabuf`: memfd pages as dma-bufs.
    pub udmabuf: UdmabufReport,
    /// DMA-BUF heaps in `/dev/dma_heap`.
    pub heaps: HeapsReport,
    /// The IOMMU (groups and units).
    pub iommu: IommuReport,
    /// VFIO: container, modules and PCI functions by IOMMU group.
    pub vfio: VfioReport,
    /// `RLIMIT_MEMLOCK` of this process.
    pub memlock: MemlockReport,
    /// What the sections add up to.
    pub overall: Overall,
}

/// What the sections add up to.
#[derive(Debug, Clone, Serialize)]
pub struct Overall {
    /// The zero-copy paths, available or not.
    pub paths: Vec<ZeroCopyPath>,
    /// One sentence naming the available paths.
    pub summary: String,
    /// Ok if every path is available, warning if some are, missing if none.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// Which zero-copy path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathKind {
    /// memfd pages exported as a dma-buf through udmabuf.
    Udmabuf,
    /// dma-bufs allocated from a DMA-BUF heap.
    Heaps,
    /// Buffers mapped for a device through VFIO (type1 IOMMU).
    Vfio,
}

/// One zero-copy path.
#[derive(Debug, Clone, Serialize)]
pub struct ZeroCopyPath {
    /// Which path.
    pub kind: PathKind,
    /// What it is called in the text report.
    pub name: &'static str,
    /// True if this user can take it now.
    pub available: bool,
    /// What it offers when available, or which sections block it.
    pub detail: String,
    /// Ok, or the worst verdict of the sections that block it.
    pub verdict: Verdict,
    /// How to fix it, when not ok (the first blocking section's hint).
    pub hint: Option<String>,
}

/// What `access(2)` says about a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Absent,
    NoAccess,
    Usable,
}

fn node(path: &str, access: Access) -> Node {
    match rustix::fs::access(path, Access::EXISTS) {
        Err(Errno::NOENT | Errno::NOTDIR) => Node::Absent,
        // EACCES on a parent folder: it may exist, but not for us.
        Err(_) => Node::NoAccess,
        Ok(()) if rustix::fs::access(path, access).is_ok() => Node::Usable,
        Ok(()) => Node::NoAccess,
    }
}

fn hint(verdict: Verdict, text: impl Into<String>) -> Option<String> {
    (verdict != Verdict::Ok).then(|| text.into())
}

impl Report {
    /// Looks at the machine. Takes a few milliseconds and has no lasting
    /// effect; never fails (what cannot be read is reported as missing).
    ///
    /// Reads sysfs and `/proc`, `access(2)` on device nodes, opens
    /// `/dev/vfio/vfio` and sets up an `io_uring_setup(2)` ring (see the module docs).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::{PathKind, Report};
    ///
    /// let report = Report::gather();
    /// let kinds: Vec<PathKind> = report.overall.paths.iter().map(|p| p.kind).collect();
    /// assert_eq!(kinds, [PathKind::Udmabuf, PathKind::Heaps, PathKind::Vfio]);
    /// // The udmabuf path is available exactly when /dev/udmabuf is usable.
    /// assert_eq!(report.overall.paths[0].available, report.udmabuf.accessible);
    /// println!("{report}");
    /// ```
    pub fn gather() -> Report {
        let udmabuf = UdmabufReport::gather();
        let heaps = HeapsReport::gather();
        let iommu = IommuReport::gather();
        let vfio = VfioReport::gather();
        let overall = Overall::new(&udmabuf, &heaps, &iommu, &vfio);
        Report {
            kernel: KernelReport::gather(),
            io_uring: IoUringReport::gather(),
            udmabuf,
            heaps,
            iommu,
            vfio,
            memlock: MemlockReport::gather(),
            overall,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_order_from_best_to_worst() {
        let mut v = [Verdict::Missing, Verdict::Ok, Verdict::NoAccess, Verdict::Warning];
        v.sort();
        assert_eq!(v, [Verdict::Ok, Verdict::Warning, Verdict::NoAccess, Verdict::Missing]);
        assert_eq!(format!("[{:<9}]", Verdict::NoAccess), "[NO ACCESS]");
        assert_eq!(format!("[{:<9}]", Verdict::Ok), "[ok       ]");
    }
}
