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

use std::fmt;
use std::path::Path;

use rustix::fs::Access;
use rustix::io::Errno;
use rustix::process::Resource;
use serde::Serialize;

use super::dma_heap::{self, HEAP_DIR};
use super::pci::{PciFunction, EDU_ID, IVSHMEM_ID};
use super::udmabuf::{Limits, Udmabuf};
use super::vfio::{Container, VfioError};

const UDMABUF_HINT: &str =
    "load the udmabuf module (kmod-helpers/dmabridge-kmod load udmabuf) or run `make demo`, which uses the QEMU guest";
const UDEV_HINT: &str = "add your user to the group of udev/70-dmabridge.rules, or run as root";
const HEAPS_HINT: &str =
    "the kernel needs CONFIG_DMABUF_HEAPS_SYSTEM (or the CMA heap); run `make demo` for a guest that has it";
const IOMMU_HINT: &str = "boot with intel_iommu=on / amd_iommu=on";
const VFIO_HINT: &str =
    "load vfio-pci (kmod-helpers/dmabridge-kmod load vfio-pci) or run `make demo`, which uses the QEMU guest";
const VFIO_MODULES_HINT: &str = "kmod-helpers/dmabridge-kmod load vfio-pci vfio_iommu_type1";
const MEMLOCK_HINT: &str = "kmod-helpers/dmabridge-kmod memlock --raise unlimited, or ulimit -l unlimited";
const IO_URING_NOSYS_HINT: &str =
    "the kernel has no io_uring (CONFIG_IO_URING), which device completions wait on: use one with it, or `make demo`";
const IO_URING_SYSCTL_HINT: &str =
    "sysctl -w kernel.io_uring_disabled=0, or add your user to the group in kernel.io_uring_group";
const IO_URING_SECCOMP_HINT: &str =
    "io_uring_setup was refused, likely by a seccomp filter: in a container, allow io_uring in its seccomp profile";
const OVERALL_HINT: &str =
    "fix what the sections above name, or run `make demo`, which uses a QEMU guest that has every path";

/// The memlock limit below which pinning device memory is likely to fail
/// (the udmabuf default size limit: one full-size buffer).
pub const MEMLOCK_MIN: u64 = 64 << 20;

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

/// The running kernel (`uname`).
#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    /// Release, as `uname -r` prints it.
    pub release: String,
    /// Machine, as `uname -m` prints it.
    pub machine: String,
    /// [`Verdict::Warning`] for kernels older than 5.6 (no DMA-BUF heaps).
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// Whether an io_uring can be set up (`io_uring_setup` with 2 entries).
#[derive(Debug, Clone, Serialize)]
pub struct IoUringReport {
    /// True if the ring was created.
    pub works: bool,
    /// The error if it was not.
    pub error: Option<String>,
    /// `/proc/sys/kernel/io_uring_disabled` (0, 1 or 2), if the kernel has it.
    pub disabled_sysctl: Option<u8>,
    /// Ok, missing (`ENOSYS`), no-access (`EPERM`) or warning (other errors).
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// `/dev/udmabuf`.
#[derive(Debug, Clone, Serialize)]
pub struct UdmabufReport {
    /// The device node.
    pub path: &'static str,
    /// True if the node exists.
    pub present: bool,
    /// True if this user may open it read-write.
    pub accessible: bool,
    /// The module's limits, when the node exists.
    pub limits: Option<Limits>,
    /// Ok, missing or no-access.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// DMA-BUF heaps.
#[derive(Debug, Clone, Serialize)]
pub struct HeapsReport {
    /// The folder of heap nodes.
    pub path: &'static str,
    /// Every heap, by name.
    pub heaps: Vec<HeapReport>,
    /// Ok if every heap is usable, warning if some are, no-access if none
    /// is, missing if there are none.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// One heap, `/dev/dma_heap/NAME`.
#[derive(Debug, Clone, Serialize)]
pub struct HeapReport {
    /// Its name, e.g. `system`.
    pub name: String,
    /// Its node.
    pub path: String,
    /// True if this user may open it (heaps are opened read-only).
    pub accessible: bool,
    /// Ok or no-access.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// The IOMMU.
#[derive(Debug, Clone, Serialize)]
pub struct IommuReport {
    /// True if `/sys/kernel/iommu_groups` has entries.
    pub on: bool,
    /// How many IOMMU groups there are.
    pub groups: usize,
    /// The IOMMU units of `/sys/class/iommu` (e.g. `dmar0`).
    pub units: Vec<String>,
    /// Ok, missing (no groups), or warning (groups but no unit: VFIO's
    /// no-IOMMU mode, without DMA isolation).
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
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
}

/// `RLIMIT_MEMLOCK`, which bounds the memory VFIO and io_uring may pin.
#[derive(Debug, Clone, Serialize)]
pub struct MemlockReport {
    /// The soft limit in bytes; `None` (JSON `"unlimited"`) if unlimited.
    #[serde(serialize_with = "ser_limit")]
    pub soft: Option<u64>,
    /// The hard limit in bytes; `None` (JSON `"unlimited"`) if unlimited.
    #[serde(serialize_with = "ser_limit")]
    pub hard: Option<u64>,
    /// True if this process holds `CAP_IPC_LOCK`, which lets it pin beyond
    /// the limit.
    pub cap_ipc_lock: bool,
    /// Ok, or warning when the soft limit is below [`MEMLOCK_MIN`].
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
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

fn ser_limit<S: serde::Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(n) => s.serialize_u64(*n),
        None => s.serialize_str("unlimited"),
    }
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

fn dir_names(path: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn hint(verdict: Verdict, text: impl Into<String>) -> Option<String> {
    (verdict != Verdict::Ok).then(|| text.into())
}

/// Bytes as the text report prints them: `64 MiB`, `1.5 GiB`, `4096 B`.
fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            return if n % size == 0 {
                format!("{} {unit}", n / size)
            } else {
                format!("{:.1} {unit}", n as f64 / size as f64)
            };
        }
    }
    format!("{n} B")
}

fn limit(v: Option<u64>) -> String {
    v.map_or_else(|| "unlimited".to_owned(), bytes)
}

impl KernelReport {
    /// Reads `uname`.
    pub fn gather() -> KernelReport {
        let u = rustix::system::uname();
        let release = u.release().to_string_lossy().into_owned();
        let machine = u.machine().to_string_lossy().into_owned();
        let mut nums = release.split(|c: char| !c.is_ascii_digit()).map(|s| s.parse::<u32>().unwrap_or(0));
        let version = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
        let verdict = if version < (5, 6) { Verdict::Warning } else { Verdict::Ok };
        let hint = hint(
            verdict,
            "DMA-BUF heaps need Linux 5.6 and dmabridge is tested on 6.12: use a newer kernel, or run `make demo`",
        );
        KernelReport { release, machine, verdict, hint }
    }
}

impl IoUringReport {
    /// Sets up and drops a ring of 2 entries.
    pub fn gather() -> IoUringReport {
        let disabled_sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
            .ok()
            .and_then(|s| s.trim().parse::<u8>().ok());
        let err = match io_uring::IoUring::new(2) {
            Ok(_) => {
                return IoUringReport { works: true, error: None, disabled_sysctl, verdict: Verdict::Ok, hint: None }
            }
            Err(e) => e,
        };
        let (verdict, hint) = match Errno::from_io_error(&err) {
            Some(Errno::NOSYS) => (Verdict::Missing, IO_URING_NOSYS_HINT.to_owned()),
            Some(Errno::PERM | Errno::ACCESS) => (
                Verdict::NoAccess,
                match disabled_sysctl {
                    Some(n @ 1..) => {
                        format!("io_uring is restricted (kernel.io_uring_disabled = {n}): {IO_URING_SYSCTL_HINT}")
                    }
                    _ => IO_URING_SECCOMP_HINT.to_owned(),
                },
            ),
            Some(Errno::NOMEM) => {
                (Verdict::Warning, format!("old kernels charge io_uring rings to memlock: {MEMLOCK_HINT}"))
            }
            _ => (Verdict::Warning, "io_uring_setup failed unexpectedly: see the error above, and dmesg".to_owned()),
        };
        IoUringReport { works: false, error: Some(err.to_string()), disabled_sysctl, verdict, hint: Some(hint) }
    }
}

impl UdmabufReport {
    /// Checks `/dev/udmabuf` and reads the module's limits.
    pub fn gather() -> UdmabufReport {
        let state = node(Udmabuf::PATH, Access::READ_OK | Access::WRITE_OK);
        let (verdict, hint) = match state {
            Node::Absent => (Verdict::Missing, Some(UDMABUF_HINT.to_owned())),
            Node::NoAccess => (Verdict::NoAccess, Some(UDEV_HINT.to_owned())),
            Node::Usable => (Verdict::Ok, None),
        };
        UdmabufReport {
            path: Udmabuf::PATH,
            present: state != Node::Absent,
            accessible: state == Node::Usable,
            limits: (state != Node::Absent).then(Limits::read),
            verdict,
            hint,
        }
    }
}

impl HeapsReport {
    /// Lists the heaps and checks that each can be opened.
    pub fn gather() -> HeapsReport {
        let heaps: Vec<HeapReport> = dma_heap::list()
            .into_iter()
            .map(|name| {
                let path = format!("{HEAP_DIR}/{name}");
                let accessible = node(&path, Access::READ_OK) == Node::Usable;
                let verdict = if accessible { Verdict::Ok } else { Verdict::NoAccess };
                HeapReport { name, path, accessible, verdict, hint: hint(verdict, UDEV_HINT) }
            })
            .collect();
        let usable = heaps.iter().filter(|h| h.accessible).count();
        let (verdict, hint) = match usable {
            _ if heaps.is_empty() => (Verdict::Missing, Some(HEAPS_HINT.to_owned())),
            0 => (Verdict::NoAccess, Some(UDEV_HINT.to_owned())),
            n if n < heaps.len() => (Verdict::Warning, Some(format!("some heaps are not open to you: {UDEV_HINT}"))),
            _ => (Verdict::Ok, None),
        };
        HeapsReport { path: HEAP_DIR, heaps, verdict, hint }
    }
}

impl IommuReport {
    /// Counts `/sys/kernel/iommu_groups` and lists `/sys/class/iommu`.
    pub fn gather() -> IommuReport {
        let groups = dir_names("/sys/kernel/iommu_groups").len();
        let units = dir_names("/sys/class/iommu");
        let (verdict, hint) = match (groups, units.is_empty()) {
            (0, _) => (Verdict::Missing, Some(IOMMU_HINT.to_owned())),
            (_, true) => (
                Verdict::Warning,
                Some(format!(
                    "IOMMU groups but no IOMMU unit: VFIO's no-IOMMU mode gives no DMA isolation; {IOMMU_HINT}"
                )),
            ),
            _ => (Verdict::Ok, None),
        };
        IommuReport { on: groups > 0, groups, units, verdict, hint }
    }
}

impl ContainerReport {
    /// Checks `/dev/vfio/vfio` and, if it can be opened, that a container
    /// offers the type1 v2 IOMMU.
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
            Node::Absent => (Verdict::Missing, VFIO_HINT.to_owned()),
            Node::NoAccess => (Verdict::NoAccess, UDEV_HINT.to_owned()),
            Node::Usable => match Container::open() {
                Ok(_) => {
                    r.type1v2 = true;
                    return r;
                }
                Err(VfioError::NoType1v2) => {
                    (Verdict::Missing, "no type1v2 IOMMU: kmod-helpers/dmabridge-kmod load vfio_iommu_type1".to_owned())
                }
                Err(VfioError::NoVfio) => (Verdict::Missing, VFIO_HINT.to_owned()),
                Err(VfioError::Os(e)) if matches!(e.errno, Errno::ACCESS | Errno::PERM) => {
                    (Verdict::NoAccess, UDEV_HINT.to_owned())
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
    pub fn gather(name: &'static str) -> ModuleReport {
        let loaded = Path::new("/sys/module").join(name).is_dir();
        let verdict = if loaded { Verdict::Ok } else { Verdict::Missing };
        ModuleReport { name, loaded, verdict, hint: hint(verdict, VFIO_MODULES_HINT) }
    }
}

impl FunctionReport {
    fn new(function: PciFunction) -> FunctionReport {
        let id = (function.vendor, function.device);
        let known = match id {
            EDU_ID => Some("edu"),
            IVSHMEM_ID => Some("ivshmem"),
            _ => None,
        };
        FunctionReport { id: format!("{:04x}:{:04x}", id.0, id.1), known, function, verdict: None, hint: None }
    }

    /// True if VFIO can hand this function to a user-space driver now.
    pub fn usable(&self) -> bool {
        self.function.is_vfio_bound() && self.verdict == Some(Verdict::Ok)
    }
}

impl GroupReport {
    fn new(group: u32, functions: Vec<PciFunction>) -> GroupReport {
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
            (true, Node::NoAccess, _) => (Some(Verdict::NoAccess), Some(UDEV_HINT.to_owned())),
            (true, Node::Usable, false) => (
                Some(Verdict::Warning),
                Some(format!(
                    "group {group} is not viable (members with DMA drivers): kmod-helpers/dmabridge-kmod bind {}",
                    blockers.join(" ")
                )),
            ),
            (true, Node::Usable, true) => (Some(Verdict::Ok), None),
        };
        for f in &mut functions {
            if f.function.is_vfio_bound() {
                f.verdict = verdict;
                f.hint = hint.clone();
            } else if f.known.is_some() {
                f.verdict = Some(Verdict::Missing);
                f.hint = Some(format!("kmod-helpers/dmabridge-kmod bind {}", f.function.address));
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

impl VfioReport {
    /// Checks the container and modules, and sorts the PCI functions by
    /// IOMMU group.
    pub fn gather() -> VfioReport {
        let container = ContainerReport::gather();
        let modules = vec![ModuleReport::gather("vfio_pci"), ModuleReport::gather("vfio_iommu_type1")];
        let mut by_group: std::collections::BTreeMap<u32, Vec<PciFunction>> = Default::default();
        let mut ungrouped = Vec::new();
        for f in PciFunction::all() {
            match f.iommu_group {
                Some(g) => by_group.entry(g).or_default().push(f),
                None => {
                    let mut r = FunctionReport::new(f);
                    if r.known.is_some() || r.function.is_vfio_bound() {
                        r.verdict = Some(Verdict::Missing);
                        r.hint = Some(format!("in no IOMMU group, so VFIO cannot take it: {IOMMU_HINT}"));
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
        let functions = || groups.iter().flat_map(|g| &g.functions).chain(&ungrouped);
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
                .unwrap_or_else(|| {
                    "kmod-helpers/dmabridge-kmod bind ADDRESS (edu is 1234:11e8, ivshmem 1af4:1110)".into()
                });
            let hint = format!("no PCI function is usable through VFIO: {fix}");
            (Verdict::Warning, Some(hint))
        };
        VfioReport { container, modules, groups, ungrouped, verdict, hint }
    }

    /// The functions VFIO can hand out now (bound to vfio-pci, group node
    /// open to this user, group viable).
    pub fn usable_functions(&self) -> impl Iterator<Item = &FunctionReport> {
        self.groups.iter().flat_map(|g| &g.functions).chain(&self.ungrouped).filter(|f| f.usable())
    }
}

/// True if bit `cap` is set in this process's effective capabilities.
fn has_capability(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim().to_owned();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << cap) != 0)
}

impl MemlockReport {
    /// Reads `RLIMIT_MEMLOCK` and whether this process holds `CAP_IPC_LOCK`.
    pub fn gather() -> MemlockReport {
        const CAP_IPC_LOCK: u32 = 14;
        let r = rustix::process::getrlimit(Resource::Memlock);
        let verdict = match r.current {
            Some(n) if n < MEMLOCK_MIN => Verdict::Warning,
            _ => Verdict::Ok,
        };
        MemlockReport {
            soft: r.current,
            hard: r.maximum,
            cap_ipc_lock: has_capability(CAP_IPC_LOCK),
            verdict,
            hint: hint(verdict, MEMLOCK_HINT),
        }
    }
}

impl Overall {
    fn new(udmabuf: &UdmabufReport, heaps: &HeapsReport, iommu: &IommuReport, vfio: &VfioReport) -> Overall {
        let path = |kind, name, blockers: Vec<(&'static str, Verdict, &Option<String>)>, offers: String| {
            let blocking: Vec<_> = blockers.into_iter().filter(|(_, v, _)| *v != Verdict::Ok).collect();
            match blocking.iter().map(|(_, v, _)| *v).max() {
                None => ZeroCopyPath { kind, name, available: true, detail: offers, verdict: Verdict::Ok, hint: None },
                Some(worst) => ZeroCopyPath {
                    kind,
                    name,
                    available: false,
                    detail: format!(
                        "blocked by: {}",
                        blocking.iter().map(|(s, _, _)| *s).collect::<Vec<_>>().join(", ")
                    ),
                    verdict: worst,
                    hint: blocking[0].2.clone(),
                },
            }
        };
        let usable_heaps: Vec<&str> = heaps.heaps.iter().filter(|h| h.accessible).map(|h| h.name.as_str()).collect();
        let usable_fns: Vec<String> = vfio
            .usable_functions()
            .map(|f| match f.known {
                Some(k) => format!("{} ({k})", f.function.address),
                None => f.function.address.to_string(),
            })
            .collect();
        let iommu_blocks = if iommu.on { Verdict::Ok } else { iommu.verdict };
        let heaps_verdict = if usable_heaps.is_empty() { heaps.verdict } else { Verdict::Ok };
        let paths = vec![
            path(
                PathKind::Udmabuf,
                "memfd → udmabuf",
                vec![("udmabuf", udmabuf.verdict, &udmabuf.hint)],
                match udmabuf.limits {
                    Some(l) => format!("memfd pages exported as dma-bufs, up to {} each", bytes(l.size_limit)),
                    None => "memfd pages exported as dma-bufs".to_owned(),
                },
            ),
            path(
                PathKind::Heaps,
                "DMA-BUF heaps",
                vec![("heaps", heaps_verdict, &heaps.hint)],
                format!("dma-bufs allocated from {}", usable_heaps.join(", ")),
            ),
            path(
                PathKind::Vfio,
                "VFIO DMA mapping",
                // No-IOMMU mode (a warning) still maps; only a missing IOMMU blocks.
                vec![("iommu", iommu_blocks, &iommu.hint), ("vfio", vfio.verdict, &vfio.hint)],
                format!("buffers mapped for {}", usable_fns.join(", ")),
            ),
        ];
        let available: Vec<&str> = paths.iter().filter(|p| p.available).map(|p| p.name).collect();
        let (verdict, summary) = match available.len() {
            0 => (Verdict::Missing, "no zero-copy path to devices is available".to_owned()),
            n if n == paths.len() => (Verdict::Ok, format!("all {n} zero-copy paths are available")),
            n => (
                Verdict::Warning,
                format!("{n} of {} zero-copy paths available: {}", paths.len(), available.join(", ")),
            ),
        };
        Overall { paths, summary, verdict, hint: hint(verdict, OVERALL_HINT) }
    }
}

impl Report {
    /// Looks at the machine. Takes a few milliseconds and has no lasting
    /// effect; never fails (what cannot be read is reported as missing).
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

/// Writes aligned item lines: verdict column, label column, detail; a hint
/// goes on its own line under the label, once for a run of items that share it.
struct Text<'a, 'b> {
    f: &'a mut fmt::Formatter<'b>,
    last_hint: Option<String>,
}

impl Text<'_, '_> {
    const VERDICT_WIDTH: usize = 10;
    const LABEL_WIDTH: usize = 22;

    fn title(&mut self, title: &str) -> fmt::Result {
        self.last_hint = None;
        writeln!(self.f, "{title}")
    }

    fn item(
        &mut self,
        verdict: Option<Verdict>,
        indent: usize,
        label: &str,
        detail: &str,
        hint: Option<&str>,
    ) -> fmt::Result {
        let verdict = verdict.map_or("-", Verdict::label);
        let label = format!("{:indent$}{label}", "");
        let line = format!("  {verdict:<vw$} {label:<lw$} {detail}", vw = Self::VERDICT_WIDTH, lw = Self::LABEL_WIDTH);
        writeln!(self.f, "{}", line.trim_end())?;
        match hint {
            Some(h) if self.last_hint.as_deref() != Some(h) => {
                writeln!(self.f, "  {:vw$} {:indent$}fix: {h}", "", "", vw = Self::VERDICT_WIDTH)?;
                self.last_hint = Some(h.to_owned());
            }
            Some(_) => {}
            None => self.last_hint = None,
        }
        Ok(())
    }

    fn function(&mut self, f: &FunctionReport, indent: usize) -> fmt::Result {
        let known = f.known.map(|k| format!(" {k}")).unwrap_or_default();
        let driver = f.function.driver.as_deref().unwrap_or("none");
        let detail = format!("{}{known}, driver {driver}", f.id);
        self.item(f.verdict, indent, &f.function.address.to_string(), &detail, f.hint.as_deref())
    }
}

fn access_words(present: bool, accessible: bool, what: &str) -> String {
    match (present, accessible) {
        (false, _) => "not present".to_owned(),
        (true, false) => format!("present, but not {what} for this user"),
        (true, true) => format!("present, {what}"),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut t = Text { f, last_hint: None };
        let (k, io, u, h, m) = (&self.kernel, &self.io_uring, &self.udmabuf, &self.heaps, &self.memlock);

        t.title("Kernel")?;
        t.item(Some(k.verdict), 0, "release", &format!("{} ({})", k.release, k.machine), k.hint.as_deref())?;
        let detail = match &io.error {
            None => "works".to_owned(),
            Some(e) => format!("io_uring_setup failed: {e}"),
        };
        t.item(Some(io.verdict), 0, "io_uring", &detail, io.hint.as_deref())?;

        t.title("udmabuf (memfd pages as dma-bufs)")?;
        t.item(Some(u.verdict), 0, u.path, &access_words(u.present, u.accessible, "read-write"), u.hint.as_deref())?;
        if let Some(l) = u.limits {
            let detail =
                format!("{} per dma-buf (size_limit_mb), {} ranges per list", bytes(l.size_limit), l.list_limit);
            t.item(Some(Verdict::Ok), 0, "limits", &detail, None)?;
        }

        t.title("DMA-BUF heaps")?;
        if h.heaps.is_empty() {
            t.item(Some(h.verdict), 0, h.path, "no heaps", h.hint.as_deref())?;
        }
        for heap in &h.heaps {
            let detail = if heap.accessible { "readable" } else { "not readable for this user" };
            t.item(Some(heap.verdict), 0, &heap.path, detail, heap.hint.as_deref())?;
        }

        t.title("IOMMU")?;
        let i = &self.iommu;
        let detail = match (i.groups, i.units.is_empty()) {
            (0, _) => "no IOMMU groups: the IOMMU is off".to_owned(),
            (n, true) => format!("{n} groups, no IOMMU unit in /sys/class/iommu"),
            (n, false) => format!("{n} groups, units {}", i.units.join(", ")),
        };
        t.item(Some(i.verdict), 0, "groups", &detail, i.hint.as_deref())?;

        t.title("VFIO")?;
        let v = &self.vfio;
        let c = &v.container;
        let mut detail = access_words(c.present, c.accessible, "read-write");
        if c.type1v2 {
            detail.push_str(", type1v2 IOMMU");
        }
        t.item(Some(c.verdict), 0, c.path, &detail, c.hint.as_deref())?;
        for module in &v.modules {
            let detail = if module.loaded { "loaded" } else { "not loaded" };
            t.item(Some(module.verdict), 0, module.name, detail, module.hint.as_deref())?;
        }
        if v.verdict == Verdict::Warning && v.verdict > c.verdict {
            t.item(Some(v.verdict), 0, "devices", "none usable through VFIO", v.hint.as_deref())?;
        }
        for g in &v.groups {
            let detail = if g.node_present {
                let viable = if g.viable { "viable" } else { "not viable" };
                let access = if g.node_accessible { "read-write" } else { "not read-write for this user" };
                format!("{} {access}, {viable}", g.node)
            } else {
                "no member bound to vfio-pci".to_owned()
            };
            t.item(g.verdict, 0, &format!("group {}", g.group), &detail, g.hint.as_deref())?;
            for func in &g.functions {
                t.function(func, 2)?;
            }
        }
        if !v.ungrouped.is_empty() {
            t.item(None, 0, "no IOMMU group", "", None)?;
            for func in &v.ungrouped {
                t.function(func, 2)?;
            }
        }

        t.title("memlock (RLIMIT_MEMLOCK)")?;
        let mut detail = format!("soft {}, hard {}", limit(m.soft), limit(m.hard));
        if m.verdict != Verdict::Ok {
            detail.push_str(&format!(" (below {})", bytes(MEMLOCK_MIN)));
        }
        t.item(Some(m.verdict), 0, "limit", &detail, m.hint.as_deref())?;
        if m.cap_ipc_lock {
            t.item(None, 0, "CAP_IPC_LOCK", "held: processes with it may pin beyond the limit", None)?;
        }

        t.title("Zero-copy paths")?;
        let o = &self.overall;
        for p in &o.paths {
            t.item(Some(p.verdict), 0, p.name, &p.detail, p.hint.as_deref())?;
        }
        t.title("Overall")?;
        t.item(Some(o.verdict), 0, "summary", &o.summary, o.hint.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_like_ulimit() {
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(8 << 20), "8 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(bytes(65536), "64 KiB");
        assert_eq!(bytes(100), "100 B");
        assert_eq!(limit(None), "unlimited");
    }

    #[test]
    fn verdicts_order_from_best_to_worst() {
        let mut v = [Verdict::Missing, Verdict::Ok, Verdict::NoAccess, Verdict::Warning];
        v.sort();
        assert_eq!(v, [Verdict::Ok, Verdict::Warning, Verdict::NoAccess, Verdict::Missing]);
        assert_eq!(format!("[{:<9}]", Verdict::NoAccess), "[NO ACCESS]");
        assert_eq!(format!("[{:<9}]", Verdict::Ok), "[ok       ]");
    }
}
