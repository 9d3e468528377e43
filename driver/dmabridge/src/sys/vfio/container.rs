//! The VFIO container: one IOMMU context (type1 v2) and its DMA mappings.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use vfio_bindings::bindings::vfio as uapi;

use super::group::Group;
use super::VfioError;
use crate::sync;
use crate::sys::access::Access;
use crate::sys::addr::{HostAddr, Iova};
use crate::sys::ioctl::{ioctl_int, ioctl_ptr, opcode, Opcode};
use crate::sys::mmap::Mapping;
use crate::sys::pci::PciAddress;
use crate::sys::{page_size, OsError};

const fn vfio_io(n: u8) -> Opcode {
    opcode::none(b';', 100 + n)
}
pub(super) const VFIO_GET_API_VERSION: Opcode = vfio_io(0);
pub(super) const VFIO_CHECK_EXTENSION: Opcode = vfio_io(1);
pub(super) const VFIO_SET_IOMMU: Opcode = vfio_io(2);
pub(super) const VFIO_IOMMU_GET_INFO: Opcode = vfio_io(12);
pub(super) const VFIO_IOMMU_MAP_DMA: Opcode = vfio_io(13);
pub(super) const VFIO_IOMMU_UNMAP_DMA: Opcode = vfio_io(14);

/// `VFIO_IOMMU_INFO_CAPS` and the IOVA-range capability id (uapi/linux/vfio.h).
const VFIO_IOMMU_INFO_CAPS: u32 = 1 << 1;
const VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE: u16 = 1;

/// One DMA mapping made through this container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaMapping {
    /// Process address of the first byte.
    pub vaddr: HostAddr,
    /// Device-visible address.
    pub iova: Iova,
    /// Length in bytes.
    pub size: u64,
    /// What the device may do: read the memory, write it, or both.
    pub access: Access,
}

/// What the IOMMU offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IommuInfo {
    /// Bitmap of supported IOVA page sizes.
    pub page_sizes: u64,
    /// Usable IOVA ranges, first to last address inclusive (as the kernel
    /// reports them: one may end at the top of the address space); empty if
    /// not reported.
    pub iova_ranges: Vec<RangeInclusive<Iova>>,
}

#[derive(Default)]
struct State {
    iommu_set: bool,
    groups: HashMap<u32, Weak<Group>>,
    maps: BTreeMap<Iova, DmaMapping>,
}

/// `/dev/vfio/vfio` with the type1 v2 IOMMU.
pub struct Container {
    fd: OwnedFd,
    state: Mutex<State>,
}

impl std::fmt::Debug for Container {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Container").field("fd", &self.fd).finish_non_exhaustive()
    }
}

impl Container {
    /// Opens a new container and checks the API version and type1 v2 support.
    ///
    /// Wraps `open(2)` of `/dev/vfio/vfio`, `VFIO_GET_API_VERSION` and
    /// `VFIO_CHECK_EXTENSION(VFIO_TYPE1v2_IOMMU)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::{Container, VfioError};
    ///
    /// match Container::open() {
    ///     Ok(container) => assert!(container.mappings().is_empty()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// if !std::path::Path::new("/dev/vfio/vfio").exists() {
    ///     assert_eq!(Container::open().unwrap_err(), VfioError::NoVfio);
    /// }
    /// ```
    pub fn open() -> Result<Arc<Container>, VfioError> {
        let fd =
            rustix::fs::open("/dev/vfio/vfio", OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(|e| match e {
                Errno::NOENT => VfioError::NoVfio,
                e => OsError::new("open /dev/vfio/vfio", e).into(),
            })?;
        // SAFETY: VFIO_GET_API_VERSION takes no argument.
        let version =
            unsafe { ioctl_int(fd.as_fd(), VFIO_GET_API_VERSION, 0) }.map_err(OsError::tag("VFIO_GET_API_VERSION"))?;
        if version != uapi::VFIO_API_VERSION as i32 {
            return Err(VfioError::ApiVersion(version));
        }
        // SAFETY: VFIO_CHECK_EXTENSION takes an integer extension id.
        let has = unsafe { ioctl_int(fd.as_fd(), VFIO_CHECK_EXTENSION, uapi::VFIO_TYPE1v2_IOMMU as usize) }
            .map_err(OsError::tag("VFIO_CHECK_EXTENSION"))?;
        if has <= 0 {
            return Err(VfioError::NoType1v2);
        }
        Ok(Arc::new(Container { fd, state: Mutex::new(State::default()) }))
    }

    /// The group of `address`, opened and attached to this container (or the
    /// one already attached).
    ///
    /// Reads sysfs, then `open(2)` of `/dev/vfio/N`, `VFIO_GROUP_GET_STATUS`,
    /// `VFIO_GROUP_SET_CONTAINER` and, for the first group, `VFIO_SET_IOMMU`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::sys::addr::{HostAddr, Iova};
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// # let Some(group) = dmabridge::sys::doc_support::or_skip(container.group_of(f.address)) else { return Ok(()) };
    /// assert_eq!(Some(group.number()), f.iommu_group);
    /// // The group stays attached while it is held: asking again gives the same one.
    /// assert!(Arc::ptr_eq(&group, &container.group_of(f.address)?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn group_of(self: &Arc<Self>, address: PciAddress) -> Result<Arc<Group>, VfioError> {
        Group::for_device(self, address)
    }

    /// Opens the device at `address`: its group is opened and attached first.
    ///
    /// As [`Container::group_of`], then `VFIO_GROUP_GET_DEVICE_FD` and
    /// `VFIO_DEVICE_GET_INFO`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::addr::{HostAddr, Iova};
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// match container.device(f.address) {
    ///     Ok(device) => assert_eq!(device.address(), f.address),
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(self: &Arc<Self>, address: PciAddress) -> Result<super::Device, VfioError> {
        self.group_of(address)?.device(address)
    }

    pub(super) fn cached_group(&self, number: u32) -> Option<Arc<Group>> {
        sync::lock(&self.state).groups.get(&number).and_then(Weak::upgrade)
    }

    /// Called by a group once it is attached: the first group lets us choose
    /// the IOMMU model.
    pub(super) fn attached(&self, group: &Arc<Group>) -> Result<(), VfioError> {
        let mut st = sync::lock(&self.state);
        if !st.iommu_set {
            // SAFETY: VFIO_SET_IOMMU takes an integer IOMMU type.
            unsafe { ioctl_int(self.fd.as_fd(), VFIO_SET_IOMMU, uapi::VFIO_TYPE1v2_IOMMU as usize) }
                .map_err(OsError::tag("VFIO_SET_IOMMU"))?;
            st.iommu_set = true;
        }
        st.groups.insert(group.number(), Arc::downgrade(group));
        Ok(())
    }

    /// Called when a group closes. The kernel tears the IOMMU down (and with
    /// it every DMA mapping) when the last group leaves a container.
    /// `group` is the one closing: a dead group replaced under the same
    /// number (see `Group::for_device`) leaves its successor's entry alone.
    pub(super) fn detached(&self, number: u32, group: *const Group) {
        let mut st = sync::lock(&self.state);
        if st.groups.get(&number).is_some_and(|w| !std::ptr::eq(w.as_ptr(), group) && w.strong_count() > 0) {
            return;
        }
        st.groups.remove(&number);
        if st.groups.is_empty() {
            st.iommu_set = false;
            st.maps.clear();
        }
    }

    /// Page sizes and usable IOVA ranges (needs at least one attached group).
    ///
    /// Wraps `VFIO_IOMMU_GET_INFO` (with the IOVA-range capability).
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// let info = device.group().container().iommu_info()?;
    /// // The IOMMU maps at least the CPU's page size.
    /// assert_ne!(info.page_sizes & dmabridge::sys::page_size() as u64, 0);
    /// for range in info.iova_ranges {
    ///     assert!(range.start() <= range.end());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iommu_info(&self) -> Result<IommuInfo, VfioError> {
        // A 4 KiB, 8-byte aligned buffer: the fixed struct plus capabilities.
        let mut buf = vec![0u64; 512];
        let info = buf.as_mut_ptr().cast::<uapi::vfio_iommu_type1_info>();
        // SAFETY: `buf` is large and aligned enough for the struct.
        unsafe { (*info).argsz = (buf.len() * 8) as u32 };
        // SAFETY: VFIO_IOMMU_GET_INFO reads argsz and writes at most argsz
        // bytes into the buffer, which is that large.
        unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_IOMMU_GET_INFO, info) }
            .map_err(OsError::tag("VFIO_IOMMU_GET_INFO"))?;
        // SAFETY: the kernel filled the struct.
        let (flags, page_sizes, mut cap) =
            unsafe { ((*info).flags, (*info).iova_pgsizes, (*info).cap_offset as usize) };
        let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let u16_at = |o: usize| u16::from_ne_bytes(bytes[o..o + 2].try_into().unwrap());
        let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_ne_bytes(bytes[o..o + 8].try_into().unwrap());
        let mut iova_ranges = Vec::new();
        // Capability chain: header { u16 id; u16 version; u32 next }.
        while flags & VFIO_IOMMU_INFO_CAPS != 0 && cap != 0 && cap + 16 <= bytes.len() {
            if u16_at(cap) == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE {
                let n = u32_at(cap + 8) as usize;
                for i in 0..n {
                    let o = cap + 16 + i * 16;
                    if o + 16 > bytes.len() {
                        break;
                    }
                    iova_ranges.push(Iova(u64_at(o))..=Iova(u64_at(o + 8)));
                }
            }
            cap = u32_at(cap + 4) as usize;
        }
        Ok(IommuInfo { page_sizes, iova_ranges })
    }

    /// Maps `size` bytes of `mapping` from `offset` at `iova` for the devices
    /// of this container (`VFIO_IOMMU_MAP_DMA`): the pages are pinned and
    /// counted against the memlock limit. The range must lie inside the
    /// mapping ([`VfioError::OutsideMapping`], checked without overflow) and be
    /// page aligned ([`VfioError::Unaligned`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::addr::{HostAddr, Iova};
    /// use dmabridge::sys::pci::PciFunction;
    /// use dmabridge::sys::vfio::{Container, VfioError};
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// // DMA mappings need a group in the container.
    /// # let Some(_device) = dmabridge::sys::doc_support::or_skip(container.device(f.address)) else { return Ok(()) };
    /// let memfd = Memfd::create(c"dma", 1 << 16)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let map = memfd.map(0, 1 << 16, Access::ReadWrite)?;
    /// let m = container.map_dma(&map, 0, 1 << 16, Iova(0x10_0000), Access::ReadWrite)?;
    /// assert_eq!(m.vaddr, HostAddr::of(map.as_ptr()));
    /// assert_eq!(container.mappings(), vec![m]);
    /// // A range outside the mapping is refused, whatever the numbers.
    /// let err = container.map_dma(&map, usize::MAX, 1 << 16, Iova(0x20_0000), Access::ReadWrite).unwrap_err();
    /// assert_eq!(err, VfioError::OutsideMapping { offset: usize::MAX, size: 1 << 16, len: 1 << 16 });
    /// assert!(container.map_dma(&map, 4096, u64::MAX, Iova(0x20_0000), Access::ReadWrite).is_err());
    /// container.unmap_dma(Iova(0x10_0000), 1 << 16)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map_dma(
        &self,
        mapping: &Mapping,
        offset: usize,
        size: u64,
        iova: Iova,
        access: Access,
    ) -> Result<DmaMapping, VfioError> {
        let inside = usize::try_from(size)
            .ok()
            .and_then(|size| offset.checked_add(size))
            .is_some_and(|end| end <= mapping.len());
        if !inside {
            return Err(VfioError::OutsideMapping { offset, size, len: mapping.len() });
        }
        // `mapping`'s bytes are reached by Rust only through volatile accesses
        // and raw pointers, never references, so device writes into it cannot
        // invalidate Rust references. VFIO resolves the range to what backs it
        // when it maps (pinning RAM pages), so even after the mapping is
        // dropped the device reaches those pages, never whatever the process
        // maps at the same address later.
        // SAFETY: the range lies inside `mapping` (checked above); see above.
        unsafe { self.map_dma_raw(iova, size, HostAddr::of(mapping.as_ptr().add(offset)), access) }
    }

    /// Maps `size` bytes of process memory at `vaddr` for DMA at `iova`, for
    /// the device to `access` (the argument order of vfio-ioctls'
    /// `vfio_dma_map`: IOVA, size, process address).
    ///
    /// # Safety
    /// With an access that writes, the device may change those bytes at any
    /// time: no Rust reference may point into the range while it is mapped.
    ///
    /// Wraps `VFIO_IOMMU_MAP_DMA`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::VfioError;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::addr::{HostAddr, Iova};
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// // DMA mappings need a group in the container.
    /// # let Some(_device) = dmabridge::sys::doc_support::or_skip(container.device(f.address)) else { return Ok(()) };
    /// // Unaligned ranges are refused before the kernel is asked.
    /// // SAFETY: the call fails its alignment check and maps nothing.
    /// let err = unsafe { container.map_dma_raw(Iova(0x10_0000), 4096, HostAddr(1), Access::Read) }.unwrap_err();
    /// assert_eq!(err, VfioError::Unaligned { vaddr: HostAddr(1), iova: Iova(0x10_0000), size: 4096 });
    ///
    /// let memfd = Memfd::create(c"dma", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let map = memfd.map(0, 4096, Access::ReadWrite)?;
    /// // SAFETY: the range is a shared mapping that outlives the DMA mapping (it
    /// // is unmapped below, before `map` drops), and Rust reaches its bytes only
    /// // through `Mapping`'s raw accesses, never through a reference.
    /// unsafe { container.map_dma_raw(Iova(0x10_0000), 4096, HostAddr::of(map.as_ptr()), Access::ReadWrite) }?;
    /// container.unmap_dma(Iova(0x10_0000), 4096)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn map_dma_raw(
        &self,
        iova: Iova,
        size: u64,
        vaddr: HostAddr,
        access: Access,
    ) -> Result<DmaMapping, VfioError> {
        let page = page_size();
        if size == 0 || !vaddr.is_aligned(page) || !iova.is_aligned(page as u64) || size % page as u64 != 0 {
            return Err(VfioError::Unaligned { vaddr, iova, size });
        }
        let mut st = sync::lock(&self.state);
        let end = iova.checked_add(size).ok_or(VfioError::IovaInUse { iova, size })?;
        if st.maps.range(..end).next_back().is_some_and(|(_, m)| m.iova.0 + m.size > iova.0) {
            return Err(VfioError::IovaInUse { iova, size });
        }
        let mut flags = 0;
        if access.reads() {
            flags |= uapi::VFIO_DMA_MAP_FLAG_READ;
        }
        if access.writable() {
            flags |= uapi::VFIO_DMA_MAP_FLAG_WRITE;
        }
        let mut arg = uapi::vfio_iommu_type1_dma_map {
            argsz: std::mem::size_of::<uapi::vfio_iommu_type1_dma_map>() as u32,
            flags,
            vaddr: vaddr.0 as u64,
            iova: iova.0,
            size,
        };
        // SAFETY: VFIO_IOMMU_MAP_DMA reads one `vfio_iommu_type1_dma_map`;
        // the caller vouches for the memory (see the function's contract).
        unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_IOMMU_MAP_DMA, &mut arg) }.map_err(|e| match e {
            Errno::EXIST => VfioError::IovaInUse { iova, size },
            Errno::NOMEM => VfioError::MemlockLimit { size, detail: crate::sys::vm::memlock_usage(size).to_string() },
            Errno::FAULT => VfioError::NotPinnable { vaddr },
            e => OsError::new("VFIO_IOMMU_MAP_DMA", e).into(),
        })?;
        let m = DmaMapping { vaddr, iova, size, access };
        st.maps.insert(iova, m);
        Ok(m)
    }

    /// Removes the mapping that starts at `iova` and is `size` long
    /// (`VFIO_IOMMU_UNMAP_DMA`). Unmapping what was never mapped is an
    /// error, not a silent no-op.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::VfioError;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::addr::{HostAddr, Iova};
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// // DMA mappings need a group in the container.
    /// # let Some(_device) = dmabridge::sys::doc_support::or_skip(container.device(f.address)) else { return Ok(()) };
    /// let memfd = Memfd::create(c"dma", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let map = memfd.map(0, 8192, Access::Read)?;
    /// container.map_dma(&map, 0, 8192, Iova(0x20_0000), Access::Read)?;
    /// container.unmap_dma(Iova(0x20_0000), 8192)?;
    /// assert!(container.mappings().is_empty());
    /// let err = container.unmap_dma(Iova(0x20_0000), 8192).unwrap_err();
    /// assert_eq!(err, VfioError::NotMapped { iova: Iova(0x20_0000), size: 8192 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unmap_dma(&self, iova: Iova, size: u64) -> Result<(), VfioError> {
        let mut st = sync::lock(&self.state);
        match st.maps.get(&iova) {
            Some(m) if m.size == size => {}
            _ => return Err(VfioError::NotMapped { iova, size }),
        }
        let unmapped = self.kernel_unmap(iova, size)?;
        st.maps.remove(&iova);
        if unmapped != size {
            return Err(VfioError::NotMapped { iova, size });
        }
        Ok(())
    }

    /// `VFIO_IOMMU_UNMAP_DMA` straight to the kernel, bypassing the
    /// container's own table; returns the bytes the kernel unmapped. For
    /// diagnostics and for tests that compare the table with the kernel.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::addr::{HostAddr, Iova};
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// // DMA mappings need a group in the container.
    /// # let Some(_device) = dmabridge::sys::doc_support::or_skip(container.device(f.address)) else { return Ok(()) };
    /// let memfd = Memfd::create(c"dma", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let map = memfd.map(0, 8192, Access::Read)?;
    /// container.map_dma(&map, 0, 4096, Iova(0x30_0000), Access::Read)?;
    /// container.map_dma(&map, 4096, 4096, Iova(0x30_1000), Access::Read)?;
    /// // One call over both mappings: the kernel reports what it unmapped.
    /// assert_eq!(container.unmap_dma_unchecked(Iova(0x30_0000), 8192)?, 8192);
    /// assert!(container.mappings().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unmap_dma_unchecked(&self, iova: Iova, size: u64) -> Result<u64, VfioError> {
        let mut st = sync::lock(&self.state);
        let unmapped = self.kernel_unmap(iova, size)?;
        st.maps.retain(|_, m| m.iova.0 + m.size <= iova.0 || m.iova.0 >= iova.0 + unmapped);
        Ok(unmapped)
    }

    /// `VFIO_IOMMU_UNMAP_DMA`; returns the bytes the kernel unmapped.
    fn kernel_unmap(&self, iova: Iova, size: u64) -> Result<u64, VfioError> {
        let mut arg = uapi::vfio_iommu_type1_dma_unmap {
            argsz: std::mem::size_of::<uapi::vfio_iommu_type1_dma_unmap>() as u32,
            flags: 0,
            iova: iova.0,
            size,
            data: Default::default(),
        };
        // SAFETY: VFIO_IOMMU_UNMAP_DMA reads and updates one
        // `vfio_iommu_type1_dma_unmap` (it writes back the unmapped size).
        unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_IOMMU_UNMAP_DMA, &mut arg) }
            .map_err(OsError::tag("VFIO_IOMMU_UNMAP_DMA"))?;
        Ok(arg.size)
    }

    /// The mappings in force, by IOVA.
    ///
    /// No system call: the container's own table.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::addr::{HostAddr, Iova};
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// // DMA mappings need a group in the container.
    /// # let Some(_device) = dmabridge::sys::doc_support::or_skip(container.device(f.address)) else { return Ok(()) };
    /// let memfd = Memfd::create(c"dma", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let map = memfd.map(0, 8192, Access::Read)?;
    /// let high = container.map_dma(&map, 4096, 4096, Iova(0x50_0000), Access::Read)?;
    /// let low = container.map_dma(&map, 0, 4096, Iova(0x40_0000), Access::Read)?;
    /// assert_eq!(container.mappings(), vec![low, high]);
    /// container.unmap_dma(Iova(0x40_0000), 4096)?;
    /// container.unmap_dma(Iova(0x50_0000), 4096)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mappings(&self) -> Vec<DmaMapping> {
        sync::lock(&self.state).maps.values().copied().collect()
    }
}

impl AsFd for Container {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
