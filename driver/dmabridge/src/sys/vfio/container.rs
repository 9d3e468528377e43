//! The VFIO container: one IOMMU context (type1 v2) and its DMA mappings.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use vfio_bindings::bindings::vfio as uapi;

use super::group::Group;
use super::VfioError;
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
    pub vaddr: u64,
    /// Device-visible address.
    pub iova: u64,
    /// Length in bytes.
    pub size: u64,
    /// The device may read.
    pub read: bool,
    /// The device may write.
    pub write: bool,
}

/// What the IOMMU offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IommuInfo {
    /// Bitmap of supported IOVA page sizes.
    pub page_sizes: u64,
    /// Usable IOVA ranges, inclusive `(start, end)`; empty if not reported.
    pub iova_ranges: Vec<(u64, u64)>,
}

#[derive(Default)]
struct State {
    iommu_set: bool,
    groups: HashMap<u32, Weak<Group>>,
    maps: BTreeMap<u64, DmaMapping>,
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
    pub fn group_of(self: &Arc<Self>, address: PciAddress) -> Result<Arc<Group>, VfioError> {
        Group::for_device(self, address)
    }

    /// Opens the device at `address`: its group is opened and attached first.
    pub fn device(self: &Arc<Self>, address: PciAddress) -> Result<super::Device, VfioError> {
        self.group_of(address)?.device(address)
    }

    pub(super) fn cached_group(&self, number: u32) -> Option<Arc<Group>> {
        self.state.lock().unwrap().groups.get(&number).and_then(Weak::upgrade)
    }

    /// Called by a group once it is attached: the first group lets us choose
    /// the IOMMU model.
    pub(super) fn attached(&self, group: &Arc<Group>) -> Result<(), VfioError> {
        let mut st = self.state.lock().unwrap();
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
    pub(super) fn detached(&self, number: u32) {
        let mut st = self.state.lock().unwrap();
        st.groups.remove(&number);
        if st.groups.is_empty() {
            st.iommu_set = false;
            st.maps.clear();
        }
    }

    /// Page sizes and usable IOVA ranges (needs at least one attached group).
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
                    iova_ranges.push((u64_at(o), u64_at(o + 8)));
                }
            }
            cap = u32_at(cap + 4) as usize;
        }
        Ok(IommuInfo { page_sizes, iova_ranges })
    }

    /// Maps `size` bytes of `mapping` from `offset` at `iova` for the devices
    /// of this container (`VFIO_IOMMU_MAP_DMA`): the pages are pinned and
    /// counted against the memlock limit.
    pub fn map_dma(
        &self,
        mapping: &Mapping,
        offset: usize,
        size: u64,
        iova: u64,
        read: bool,
        write: bool,
    ) -> Result<DmaMapping, VfioError> {
        if offset.checked_add(size as usize).is_none_or(|end| end > mapping.len()) {
            return Err(VfioError::Unaligned { vaddr: mapping.as_ptr() as u64 + offset as u64, iova, size });
        }
        // SAFETY: the range lies inside `mapping`, a shared mapping whose
        // bytes Rust only reaches through raw pointers, so device writes into
        // it cannot invalidate Rust references.
        unsafe { self.map_dma_raw(mapping.as_ptr().add(offset) as u64, size, iova, read, write) }
    }

    /// Maps process memory at `vaddr` for DMA.
    ///
    /// # Safety
    /// With `write`, the device may change those bytes at any time: no Rust
    /// reference may point into the range while it is mapped.
    pub unsafe fn map_dma_raw(
        &self,
        vaddr: u64,
        size: u64,
        iova: u64,
        read: bool,
        write: bool,
    ) -> Result<DmaMapping, VfioError> {
        let page = page_size() as u64;
        if size == 0 || vaddr % page != 0 || iova % page != 0 || size % page != 0 {
            return Err(VfioError::Unaligned { vaddr, iova, size });
        }
        let mut st = self.state.lock().unwrap();
        let end = iova.checked_add(size).ok_or(VfioError::IovaInUse { iova, size })?;
        if st.maps.range(..end).next_back().is_some_and(|(_, m)| m.iova + m.size > iova) {
            return Err(VfioError::IovaInUse { iova, size });
        }
        let mut flags = 0;
        if read {
            flags |= uapi::VFIO_DMA_MAP_FLAG_READ;
        }
        if write {
            flags |= uapi::VFIO_DMA_MAP_FLAG_WRITE;
        }
        let mut arg = uapi::vfio_iommu_type1_dma_map {
            argsz: std::mem::size_of::<uapi::vfio_iommu_type1_dma_map>() as u32,
            flags,
            vaddr,
            iova,
            size,
        };
        // SAFETY: VFIO_IOMMU_MAP_DMA reads one `vfio_iommu_type1_dma_map`;
        // the caller vouches for the memory (see the function's contract).
        unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_IOMMU_MAP_DMA, &mut arg) }.map_err(|e| match e {
            Errno::EXIST => VfioError::IovaInUse { iova, size },
            Errno::NOMEM => VfioError::MemlockLimit { size },
            Errno::FAULT => VfioError::NotPinnable { vaddr },
            e => OsError::new("VFIO_IOMMU_MAP_DMA", e).into(),
        })?;
        let m = DmaMapping { vaddr, iova, size, read, write };
        st.maps.insert(iova, m);
        Ok(m)
    }

    /// Removes the mapping that starts at `iova` and is `size` long
    /// (`VFIO_IOMMU_UNMAP_DMA`). Unmapping what was never mapped is an
    /// error, not a silent no-op.
    pub fn unmap_dma(&self, iova: u64, size: u64) -> Result<(), VfioError> {
        let mut st = self.state.lock().unwrap();
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
    pub fn unmap_dma_unchecked(&self, iova: u64, size: u64) -> Result<u64, VfioError> {
        let mut st = self.state.lock().unwrap();
        let unmapped = self.kernel_unmap(iova, size)?;
        st.maps.retain(|_, m| m.iova + m.size <= iova || m.iova >= iova + unmapped);
        Ok(unmapped)
    }

    /// `VFIO_IOMMU_UNMAP_DMA`; returns the bytes the kernel unmapped.
    fn kernel_unmap(&self, iova: u64, size: u64) -> Result<u64, VfioError> {
        let mut arg = uapi::vfio_iommu_type1_dma_unmap {
            argsz: std::mem::size_of::<uapi::vfio_iommu_type1_dma_unmap>() as u32,
            flags: 0,
            iova,
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
    pub fn mappings(&self) -> Vec<DmaMapping> {
        self.state.lock().unwrap().maps.values().copied().collect()
    }
}

impl AsFd for Container {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
