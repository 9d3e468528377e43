//! VFIO: user-space drivers for PCI functions behind an IOMMU.
//!
//! [`Container`] is an IOMMU context (type1 v2) into which [`Group`]s are put;
//! a group hands out [`Device`]s; a device exposes regions (BARs, config
//! space), interrupts onto eventfds, and reset. DMA mappings are made on the
//! container.
//!
//! Written over the raw ioctls (with the uapi structs of `vfio-bindings`)
//! rather than the `vfio-ioctls` crate: that crate's region reads and writes
//! only log failures instead of returning them, it has no BAR mmap helper, and
//! it pulls in vmm-sys-util; every error here must reach the caller.

mod container;
mod device;
mod group;

pub use container::{Container, DmaMapping, IommuInfo};
pub use device::{Device, IrqFlags, IrqInfo, IrqKind, Region, RegionFlags, RegionInfo};
pub use group::Group;

use crate::sys::addr::{HostAddr, Iova};
use crate::sys::pci::PciAddress;
use crate::sys::OsError;

/// Why a VFIO operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VfioError {
    /// No `/dev/vfio/vfio`.
    #[error(
        "no /dev/vfio/vfio: load vfio-pci ({kmod} load vfio-pci){demo}",
        kmod = crate::sys::hints::kmod(),
        demo = crate::sys::hints::checkout_only(" or run `make demo`, which uses the QEMU guest")
    )]
    NoVfio,
    /// The function does not exist.
    #[error("no PCI function {0}")]
    NoDevice(PciAddress),
    /// The function is not in an IOMMU group: the IOMMU is off, or (with an
    /// SMMU) no driver has probed the function yet.
    #[error(
        "{0} is in no IOMMU group: bind it to vfio-pci first ({kmod} bind {0}; with an SMMU a function joins its group when a driver probes it), or the IOMMU is off: {hint}",
        hint = crate::sys::probe::iommu::IOMMU_HINT,
        kmod = crate::sys::hints::kmod()
    )]
    NoIommuGroup(PciAddress),
    /// The function is not bound to vfio-pci.
    #[error("{address} is bound to {driver}, not vfio-pci: run {kmod} bind {address}", kmod = crate::sys::hints::kmod())]
    NotBoundToVfio {
        /// The function.
        address: PciAddress,
        /// Its current driver ("no driver" if none).
        driver: String,
    },
    /// A group with a member not bound to vfio-pci (or not released).
    #[error("IOMMU group {0} is not viable: bind every function of the group to vfio-pci")]
    GroupNotViable(u32),
    /// The group node cannot be opened by this user.
    #[error("cannot open /dev/vfio/{0} ({1}): {join}, or run as root", join = crate::sys::hints::join_group())]
    NoAccess(u32, rustix::io::Errno),
    /// The group is already open (by this or another process).
    #[error("IOMMU group {0} is already in use (EBUSY): another process or container holds it")]
    GroupBusy(u32),
    /// The kernel lacks the type1 v2 IOMMU driver.
    #[error("VFIO has no type1v2 IOMMU: load vfio_iommu_type1")]
    NoType1v2,
    /// The VFIO API version is not the one this crate speaks.
    #[error("VFIO API version {0}, expected 0")]
    ApiVersion(i32),
    /// A region index the device does not have.
    #[error("the device has no region {0}")]
    NoRegion(u32),
    /// A region that cannot be mapped.
    #[error("region {0} cannot be mmapped (no VFIO_REGION_INFO_FLAG_MMAP)")]
    RegionNotMappable(u32),
    /// An access outside a region.
    #[error("access {offset:#x}+{len} is outside region {index} ({size} bytes)")]
    OutsideRegion {
        /// Region index.
        index: u32,
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: usize,
        /// Region size.
        size: u64,
    },
    /// The function does not decode memory (Memory Space Enable clear in
    /// PCI_COMMAND, or a power state other than D0): vfio-pci would answer
    /// every access to a mapping of its BARs with SIGBUS.
    #[error("{0} does not decode memory (PCI_COMMAND bit 1 clear, or not in power state D0): a mapping of its BARs would kill the process (SIGBUS) at the first access; set Memory Space Enable (config_write_u16(4, command | 2)) or reset the function")]
    MemoryDisabled(PciAddress),
    /// A config-space write that would stop the function decoding memory.
    #[error("the config write at {offset:#x} ({len} bytes) would stop {address} decoding memory (Memory Space Enable cleared, or a power state other than D0): any access to a mapping of its BARs would then kill the process (SIGBUS); keep PCI_COMMAND bit 1 set and PMCSR in D0, or use the unsafe Device::write_region_unchecked")]
    WouldDisableMemory {
        /// The function.
        address: PciAddress,
        /// Config-space offset written.
        offset: u64,
        /// Bytes written.
        len: usize,
    },
    /// A DMA range that is not inside the mapping it names.
    #[error("DMA range {offset:#x}+{size:#x} is not inside the mapping ({len:#x} bytes)")]
    OutsideMapping {
        /// Offset into the mapping asked for.
        offset: usize,
        /// Size asked for.
        size: u64,
        /// The mapping's length.
        len: usize,
    },
    /// An IRQ index the device does not have, or more vectors than it has.
    #[error("the device has no interrupt {index} with {count} vectors")]
    NoIrq {
        /// IRQ index.
        index: u32,
        /// Vectors asked for.
        count: usize,
    },
    /// The IOVA range is already mapped in the container.
    #[error("IOVA range {iova:#x}+{size:#x} overlaps an existing mapping")]
    IovaInUse {
        /// IOVA asked for.
        iova: Iova,
        /// Size asked for.
        size: u64,
    },
    /// Unmap of a range that was never mapped.
    #[error("IOVA range {iova:#x}+{size:#x} is not mapped")]
    NotMapped {
        /// IOVA asked for.
        iova: Iova,
        /// Size asked for.
        size: u64,
    },
    /// A DMA mapping that is not page aligned or empty.
    #[error("DMA mapping {vaddr:#x} -> {iova:#x} +{size:#x} must be non-empty and page aligned")]
    Unaligned {
        /// Process address.
        vaddr: HostAddr,
        /// IOVA.
        iova: Iova,
        /// Size.
        size: u64,
    },
    /// The memory cannot be pinned: VFIO pins pages through the process's
    /// page tables and refuses PFN-mapped RAM, such as a dma-buf's mmap.
    #[error("memory at {vaddr:#x} cannot be pinned for DMA (EFAULT): it is unmapped or PFN-mapped RAM such as a dma-buf mmap; map the memfd's own mapping of the same pages instead")]
    NotPinnable {
        /// Process address.
        vaddr: HostAddr,
    },
    /// The memlock limit forbids pinning that much.
    #[error("pinning {size} bytes exceeds the memlock limit (RLIMIT_MEMLOCK; ENOMEM): {detail}")]
    MemlockLimit {
        /// Bytes asked for.
        size: u64,
        /// The limit, what is charged already and how to raise it
        /// ([`memlock_usage`](crate::sys::vm::memlock_usage)).
        detail: String,
    },
    /// The function has no reset method vfio-pci can use.
    #[error(
        "{0} cannot be reset: it has no FLR or PM reset and shares its bus; reset it by removing and rescanning it"
    )]
    ResetUnsupported(PciAddress),
    /// A system call failed.
    #[error(transparent)]
    Os(#[from] OsError),
}
