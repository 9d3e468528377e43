//! VFIO: the container, the modules, and the PCI functions by IOMMU group.

use std::path::Path;

use rustix::fs::Access;
use rustix::io::Errno;
use serde::Serialize;

use super::groups::{FunctionReport, GroupReport};
use super::iommu::IOMMU_HINT;
use super::{hint, node, udev_hint, Node, Verdict};
use crate::sys::hints;
use crate::sys::pci::PciFunction;
use crate::sys::vfio::{Container, VfioError};

fn vfio_hint() -> String {
    format!(
        "load vfio-pci ({} load vfio-pci){}",
        hints::kmod(),
        hints::checkout_only(" or run `make demo`, which uses the QEMU guest")
    )
}

/// VFIO.
#[derive(Debug, Clone, Serialize)]
pub struct VfioReport {
    /// `/dev/vfio/vfio`.
    pub container: ContainerReport,
    /// `vfio_pci` and `vfio_iommu_type1`.
    pub modules: Vec<ModuleReport>,
    /// PCI functions that sit in an IOMMU group, by group number.
    pub groups: Vec<GroupReport>,
    /// PCI functions in no IOMMU group (all of them when the IOMMU is off).
    pub ungrouped: Vec<FunctionReport>,
    /// The worst of container and modules; a warning if those are fine but
    /// no function is usable through VFIO.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// `/dev/vfio/vfio`.
#[derive(Debug, Clone, Serialize)]
pub struct ContainerReport {
    /// The node.
    pub path: &'static str,
    /// True if it exists.
    pub present: bool,
    /// True if this user may open it read-write.
    pub accessible: bool,
    /// True if a container opened and offers the type1 v2 IOMMU.
    pub type1v2: bool,
    /// Ok, missing or no-access.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// A kernel module, as `/sys/module/NAME` shows it (built-ins with
/// parameters appear there too).
#[derive(Debug, Clone, Serialize)]
pub struct ModuleReport {
    /// Its name, with underscores.
    pub name: &'static str,
    /// True if `/sys/module/NAME` exists.
    pub loaded: bool,
    /// Ok or missing.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

impl ContainerReport {
    /// Checks `/dev/vfio/vfio` and, if it can be opened, that a container
    /// offers the type1 v2 IOMMU.
    ///
    /// Wraps `access(2)` on `/dev/vfio/vfio`, then `open(2)` and
    /// `VFIO_GET_API_VERSION` / `VFIO_CHECK_EXTENSION(VFIO_TYPE1v2_IOMMU)` on it.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::ContainerReport;
    ///
    /// let container = ContainerReport::gather();
    /// assert_eq!(container.present, std::path::Path::new("/dev/vfio/vfio").exists());
    /// // type1 v2 is only checked on a container that opened.
    /// assert!(container.accessible || !container.type1v2);
    /// ```
    pub fn gather() -> ContainerReport {
        const PATH: &str = "/dev/vfio/vfio";
        let state = node(PATH, Access::READ_OK | Access::WRITE_OK);
        let mut r = ContainerReport {
            path: PATH,
            present: state != Node::Absent,
            accessible: state == Node::Usable,
            type1v2: false,
            verdict: Verdict::Ok,
            hint: None,
        };
        let (verdict, hint) = match state {
            Node::Absent => (Verdict::Missing, vfio_hint()),
            Node::NoAccess => (Verdict::NoAccess, udev_hint()),
            Node::Usable => match Container::open() {
                Ok(_) => {
                    r.type1v2 = true;
                    return r;
                }
                Err(VfioError::NoType1v2) => {
                    (Verdict::Missing, format!("no type1v2 IOMMU: {} load vfio_iommu_type1", hints::kmod()))
                }
                Err(VfioError::NoVfio) => (Verdict::Missing, vfio_hint()),
                Err(VfioError::Os(e)) if matches!(e.errno, Errno::ACCESS | Errno::PERM) => {
                    (Verdict::NoAccess, udev_hint())
                }
                Err(e) => (Verdict::Warning, format!("{e}")),
            },
        };
        r.verdict = verdict;
        r.hint = Some(hint);
        r
    }
}

impl ModuleReport {
    /// Checks `/sys/module/NAME`.
    ///
    /// Reads sysfs (`/sys/module/NAME`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::ModuleReport;
    ///
    /// let module = ModuleReport::gather("vfio_pci");
    /// assert_eq!(module.name, "vfio_pci");
    /// assert_eq!(module.loaded, std::path::Path::new("/sys/module/vfio_pci").exists());
    /// ```
    pub fn gather(name: &'static str) -> ModuleReport {
        let loaded = Path::new("/sys/module").join(name).is_dir();
        let verdict = if loaded { Verdict::Ok } else { Verdict::Missing };
        ModuleReport {
            name,
            loaded,
            verdict,
            hint: hint(verdict, format!("{} load vfio-pci vfio_iommu_type1", hints::kmod())),
        }
    }
}

impl VfioReport {
    /// Checks the container and modules, and sorts the PCI functions by
    /// IOMMU group.
    ///
    /// Reads sysfs (`/sys/bus/pci/devices`, `/sys/module`), wraps `access(2)` on
    /// `/dev/vfio/N` and opens `/dev/vfio/vfio` (never a group).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    /// use dmabridge::sys::probe::VfioReport;
    ///
    /// let vfio = VfioReport::gather();
    /// let listed = vfio.groups.iter().map(|g| g.functions.len()).sum::<usize>() + vfio.ungrouped.len();
    /// assert_eq!(listed, PciFunction::all().len());
    /// ```
    pub fn gather() -> VfioReport {
        let container = ContainerReport::gather();
        let modules = vec![ModuleReport::gather("vfio_pci"), ModuleReport::gather("vfio_iommu_type1")];
        let mut by_group: std::collections::BTreeMap<u32, Vec<PciFunction>> = Default::default();
        let mut ungrouped = Vec::new();
        let iommu_on = std::fs::read_dir("/sys/kernel/iommu_groups").is_ok_and(|mut d| d.next().is_some());
        for f in PciFunction::all() {
            match f.iommu_group {
                Some(g) => by_group.entry(g).or_default().push(f),
                None => {
                    let mut r = FunctionReport::new(f);
                    if r.known.is_some() || r.function.is_vfio_bound() {
                        r.verdict = Some(Verdict::Missing);
                        r.hint = Some(if iommu_on && r.function.driver.is_none() {
                            // With an SMMU (arm64) a function joins its group
                            // when a driver probes it: binding it is the fix.
                            format!("{} bind {}", hints::kmod(), r.function.address)
                        } else {
                            format!("in no IOMMU group, so VFIO cannot take it: {IOMMU_HINT}")
                        });
                    }
                    ungrouped.push(r);
                }
            }
        }
        let groups: Vec<GroupReport> = by_group.into_iter().map(|(g, fs)| GroupReport::new(g, fs)).collect();
        let items = || {
            std::iter::once((container.verdict, &container.hint)).chain(modules.iter().map(|m| (m.verdict, &m.hint)))
        };
        let worst = items().map(|(v, _)| v).max().unwrap_or(Verdict::Ok);
        let first_hint = items().find(|(v, _)| *v == worst).and_then(|(_, h)| h.clone());
        let functions = || all_functions(&groups, &ungrouped);
        let (verdict, hint) = if worst != Verdict::Ok {
            (worst, first_hint)
        } else if functions().any(FunctionReport::usable) {
            (Verdict::Ok, None)
        } else {
            // A bound function's own trouble first, then a known one to bind.
            let fix = functions()
                .find(|f| f.function.is_vfio_bound() && f.hint.is_some())
                .or_else(|| functions().find(|f| f.known.is_some() && f.hint.is_some()))
                .and_then(|f| f.hint.clone())
                .unwrap_or_else(|| format!("{} bind ADDRESS (edu is 1234:11e8, ivshmem 1af4:1110)", hints::kmod()));
            let hint = format!("no PCI function is usable through VFIO: {fix}");
            (Verdict::Warning, Some(hint))
        };
        VfioReport { container, modules, groups, ungrouped, verdict, hint }
    }

    /// The functions VFIO can hand out now (bound to vfio-pci, group node
    /// open to this user, group viable).
    ///
    /// No system call: filters what [`VfioReport::gather`] found.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::VfioReport;
    ///
    /// let vfio = VfioReport::gather();
    /// for f in vfio.usable_functions() {
    ///     assert!(f.function.is_vfio_bound());
    ///     println!("usable through VFIO: {}", f.function.address);
    /// }
    /// ```
    pub fn usable_functions(&self) -> impl Iterator<Item = &FunctionReport> {
        all_functions(&self.groups, &self.ungrouped).filter(|f| f.usable())
    }
}

/// Every PCI function: those of the groups in group order, then the ungrouped.
fn all_functions<'a>(
    groups: &'a [GroupReport],
    ungrouped: &'a [FunctionReport],
) -> impl Iterator<Item = &'a FunctionReport> {
    groups.iter().flat_map(|g| &g.functions).chain(ungrouped)
}
