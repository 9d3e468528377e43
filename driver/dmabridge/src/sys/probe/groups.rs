//! IOMMU groups and their PCI functions, as VFIO sees them.

use rustix::fs::Access;
use serde::Serialize;

use super::{node, udev_hint, Node, Verdict};
use crate::sys::pci::{PciFunction, EDU_ID, IVSHMEM_ID};

/// One IOMMU group and its PCI functions.
#[derive(Debug, Clone, Serialize)]
pub struct GroupReport {
    /// The group number.
    pub group: u32,
    /// Its VFIO node, `/dev/vfio/N` (present only while a member is bound to
    /// vfio-pci).
    pub node: String,
    /// True if the node exists.
    pub node_present: bool,
    /// True if this user may open it read-write.
    pub node_accessible: bool,
    /// True if every member is bound to vfio-pci, to a driver that does no
    /// DMA of its own (pci-stub, pcieport) or to none, as VFIO requires.
    pub viable: bool,
    /// Its functions.
    pub functions: Vec<FunctionReport>,
    /// `None` if no member is bound to vfio-pci (VFIO does not concern the
    /// group); else ok, no-access, warning (not viable) or missing (no node).
    pub verdict: Option<Verdict>,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// One PCI function.
#[derive(Debug, Clone, Serialize)]
pub struct FunctionReport {
    /// Address, ids, driver and IOMMU group, as sysfs shows them.
    #[serde(flatten)]
    pub function: PciFunction,
    /// `vendor:device` in hex, e.g. `1234:11e8`.
    pub id: String,
    /// `"edu"` or `"ivshmem"` for the devices dmabridge knows.
    pub known: Option<&'static str>,
    /// `None` for functions VFIO does not concern (host drivers, not known);
    /// for functions bound to vfio-pci, the group's verdict; for known
    /// functions not bound, missing.
    pub verdict: Option<Verdict>,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
    /// How to use it, when usable but not used: an ivshmem function bound to
    /// vfio-pci that `DMABRIDGE_BAR_DEVICE` does not name.
    pub note: Option<String>,
}

/// The variable that makes a PCI BAR device memory (read here without
/// parsing it fully: the probe layer sits below the runtime that does).
const BAR_DEVICE_ENV: &str = "DMABRIDGE_BAR_DEVICE";

/// True if `DMABRIDGE_BAR_DEVICE` has an entry for `address`.
fn bar_configured(address: crate::sys::pci::PciAddress) -> bool {
    std::env::var(BAR_DEVICE_ENV)
        .is_ok_and(|v| v.split(';').any(|e| e.split(',').next().and_then(|a| a.trim().parse().ok()) == Some(address)))
}

impl FunctionReport {
    pub(super) fn new(function: PciFunction) -> FunctionReport {
        let id = (function.vendor, function.device);
        let known = match id {
            EDU_ID => Some("edu"),
            IVSHMEM_ID => Some("ivshmem"),
            _ => None,
        };
        FunctionReport {
            id: format!("{:04x}:{:04x}", id.0, id.1),
            known,
            function,
            verdict: None,
            hint: None,
            note: None,
        }
    }

    /// True if VFIO can hand this function to a user-space driver now.
    ///
    /// No system call: reads the verdict the report gathered.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::VfioReport;
    ///
    /// let vfio = VfioReport::gather();
    /// for group in &vfio.groups {
    ///     for f in &group.functions {
    ///         if f.usable() {
    ///             // Usable means bound to vfio-pci in a viable group whose node opens.
    ///             assert!(f.function.is_vfio_bound() && group.viable && group.node_accessible);
    ///         }
    ///     }
    /// }
    /// ```
    pub fn usable(&self) -> bool {
        self.function.is_vfio_bound() && self.verdict == Some(Verdict::Ok)
    }
}

impl GroupReport {
    pub(super) fn new(group: u32, functions: Vec<PciFunction>) -> GroupReport {
        let node_path = format!("/dev/vfio/{group}");
        let state = node(&node_path, Access::READ_OK | Access::WRITE_OK);
        // VFIO takes a group only if no member has a driver doing DMA of its own.
        let harmless =
            |f: &PciFunction| matches!(f.driver.as_deref(), None | Some("vfio-pci" | "pci-stub" | "pcieport"));
        let blockers: Vec<String> = functions.iter().filter(|f| !harmless(f)).map(|f| f.address.to_string()).collect();
        let viable = blockers.is_empty();
        let bound = functions.iter().any(|f| f.is_vfio_bound());
        let mut functions: Vec<FunctionReport> = functions.into_iter().map(FunctionReport::new).collect();
        let (verdict, hint) = match (bound, state, viable) {
            (false, _, _) => (None, None),
            (true, Node::Absent, _) => (
                Some(Verdict::Missing),
                Some(format!(
                    "vfio-pci drives a member but {node_path} does not exist: check devtmpfs and udev (ls -l /dev/vfio)"
                )),
            ),
            (true, Node::NoAccess, _) => (Some(Verdict::NoAccess), Some(udev_hint())),
            (true, Node::Usable, false) => (
                Some(Verdict::Warning),
                Some(format!(
                    "group {group} is not viable (members with DMA drivers): {} bind {}",
                    crate::sys::hints::kmod(),
                    blockers.join(" ")
                )),
            ),
            (true, Node::Usable, true) => (Some(Verdict::Ok), None),
        };
        for f in &mut functions {
            if f.function.is_vfio_bound() {
                f.verdict = verdict;
                f.hint = hint.clone();
                if f.known == Some("ivshmem") && verdict == Some(Verdict::Ok) && !bar_configured(f.function.address) {
                    f.note = Some(format!(
                        "set {BAR_DEVICE_ENV}={},bar=2 to use its BAR as device memory (add ,engine=EDU-ADDRESS for peer-to-peer copies by an edu)",
                        f.function.address
                    ));
                }
            } else if f.known.is_some() {
                f.verdict = Some(Verdict::Missing);
                f.hint = Some(format!("{} bind {}", crate::sys::hints::kmod(), f.function.address));
            }
        }
        GroupReport {
            group,
            node: node_path,
            node_present: state != Node::Absent,
            node_accessible: state == Node::Usable,
            viable,
            functions,
            verdict,
            hint,
        }
    }
}
