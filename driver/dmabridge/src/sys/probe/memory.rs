//! Memory for zero-copy buffers: `/dev/udmabuf`, the DMA-BUF heaps and the
//! memlock limit that bounds pinning.

use rustix::fs::Access;
use rustix::process::Resource;
use serde::Serialize;

use super::{hint, node, udev_hint, Node, Verdict};
use crate::sys::dma_heap::{self, HEAP_DIR};
use crate::sys::udmabuf::{Limits, Udmabuf};
use crate::sys::{hints, vm};

const DEMO: &str = " or run `make demo`, which uses the QEMU guest";

fn udmabuf_hint() -> String {
    format!("load the udmabuf module ({} load udmabuf){}", hints::kmod(), hints::checkout_only(DEMO))
}

fn heaps_hint() -> String {
    format!(
        "the kernel needs CONFIG_DMABUF_HEAPS with CONFIG_DMABUF_HEAPS_SYSTEM, or CONFIG_DMABUF_HEAPS_CMA for a board's CMA area (Debian's arm64 kernels have neither; udmabuf still works){}",
        hints::checkout_only("; run `make demo` for a guest that has it")
    )
}

pub(super) fn memlock_hint() -> String {
    format!(
        "raise RLIMIT_MEMLOCK: LimitMEMLOCK=infinity in a systemd service's unit, \
         `@dmabridge - memlock unlimited` in /etc/security/limits.d/dmabridge.conf for logins ({}), or as root \
         {} memlock --raise unlimited; `ulimit -l` raises it only up to the hard limit",
        hints::udev_notes(),
        hints::kmod()
    )
}

/// The memlock limit below which pinning device memory is likely to fail
/// (the udmabuf default size limit: one full-size buffer).
pub const MEMLOCK_MIN: u64 = 64 << 20;

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

fn ser_limit<S: serde::Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(n) => s.serialize_u64(*n),
        None => s.serialize_str("unlimited"),
    }
}

impl UdmabufReport {
    /// Checks `/dev/udmabuf` and reads the module's limits.
    ///
    /// Wraps `access(2)` on `/dev/udmabuf`; reads `/sys/module/udmabuf/parameters`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::UdmabufReport;
    ///
    /// let udmabuf = UdmabufReport::gather();
    /// assert_eq!(udmabuf.present, std::path::Path::new("/dev/udmabuf").exists());
    /// assert_eq!(udmabuf.limits.is_some(), udmabuf.present);
    /// ```
    pub fn gather() -> UdmabufReport {
        let state = node(Udmabuf::PATH, Access::READ_OK | Access::WRITE_OK);
        let (verdict, hint) = match state {
            Node::Absent => (Verdict::Missing, Some(udmabuf_hint())),
            Node::NoAccess => (Verdict::NoAccess, Some(udev_hint())),
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
    ///
    /// Lists `/dev/dma_heap` and wraps `access(2)` on each heap node.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::dma_heap;
    /// use dmabridge::sys::probe::HeapsReport;
    ///
    /// let heaps = HeapsReport::gather();
    /// let names: Vec<String> = heaps.heaps.iter().map(|h| h.name.clone()).collect();
    /// assert_eq!(names, dma_heap::list());
    /// ```
    pub fn gather() -> HeapsReport {
        let heaps: Vec<HeapReport> = dma_heap::list()
            .into_iter()
            .map(|name| {
                let path = format!("{HEAP_DIR}/{name}");
                let accessible = node(&path, Access::READ_OK) == Node::Usable;
                let verdict = if accessible { Verdict::Ok } else { Verdict::NoAccess };
                HeapReport { name, path, accessible, verdict, hint: hint(verdict, udev_hint()) }
            })
            .collect();
        let usable = heaps.iter().filter(|h| h.accessible).count();
        let (verdict, hint) = match usable {
            _ if heaps.is_empty() => (Verdict::Missing, Some(heaps_hint())),
            0 => (Verdict::NoAccess, Some(udev_hint())),
            n if n < heaps.len() => {
                (Verdict::Warning, Some(format!("some heaps are not open to you: {}", udev_hint())))
            }
            _ => (Verdict::Ok, None),
        };
        HeapsReport { path: HEAP_DIR, heaps, verdict, hint }
    }
}

impl MemlockReport {
    /// Reads `RLIMIT_MEMLOCK` and whether this process holds `CAP_IPC_LOCK`.
    ///
    /// Wraps `getrlimit(RLIMIT_MEMLOCK)`; reads `CapEff` of `/proc/self/status`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::MemlockReport;
    ///
    /// let memlock = MemlockReport::gather();
    /// if let (Some(soft), Some(hard)) = (memlock.soft, memlock.hard) {
    ///     assert!(soft <= hard);
    /// }
    /// ```
    pub fn gather() -> MemlockReport {
        let r = rustix::process::getrlimit(Resource::Memlock);
        let verdict = match r.current {
            Some(n) if n < MEMLOCK_MIN => Verdict::Warning,
            _ => Verdict::Ok,
        };
        MemlockReport {
            soft: r.current,
            hard: r.maximum,
            cap_ipc_lock: vm::has_capability("/proc/self/status", vm::CAP_IPC_LOCK),
            verdict,
            hint: hint(verdict, memlock_hint()),
        }
    }
}
