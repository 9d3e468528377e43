//! A DMA domain: one VFIO container (one IOMMU context) and the IOVA space
//! its devices share.
//!
//! Every device of a container sees the same IOVAs, so the IOVA allocator
//! belongs to the domain, not to a device; its window is the smallest DMA
//! mask of the domain's devices (edu: 28 bits), minus the IOMMU's holes.
//!
//! Host memory is made reachable for one operation through [`SpanMap`]: the
//! pages covering a byte range are pinned and mapped at a fresh IOVA, and
//! unmapped (and the IOVA given back) when the guard drops, on every path.
//! Memory that stays mapped across commands is made resident instead
//! ([`super::residency`]).

use std::sync::{Arc, Mutex};

use super::residency::Registry;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::iova::IovaAllocator;
use crate::sync;
use crate::sys::access::Access;
use crate::sys::addr::{HostAddr, Iova};
use crate::sys::page_size;
use crate::sys::vfio::{Container, VfioError};

/// A VFIO container and the IOVA allocator of its address space.
pub struct DmaDomain {
    container: Arc<Container>,
    dma_mask: u64,
    /// Created on first use: the IOMMU's usable ranges can only be read
    /// once a group is attached.
    iova: Mutex<Option<IovaAllocator>>,
    /// Host ranges mapped until evicted ([`super::residency`]).
    pub(super) residency: Mutex<Registry>,
}

impl std::fmt::Debug for DmaDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaDomain").field("dma_mask", &format_args!("{:#x}", self.dma_mask)).finish_non_exhaustive()
    }
}

impl DmaDomain {
    /// A domain over `container` whose devices drive addresses up to
    /// `dma_mask`.
    ///
    /// No OpenCL function of its own: made once by device discovery
    /// (`clGetDeviceIDs`) for the accelerators that share a container.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::backend::{domain::DmaDomain, edu::DEFAULT_DMA_MASK};
    /// use dmabridge::sys::vfio::Container;
    /// // Only where VFIO is available (/dev/vfio/vfio).
    /// if let Ok(container) = Container::open() {
    ///     let domain = DmaDomain::new(container.clone(), DEFAULT_DMA_MASK);
    ///     assert!(Arc::ptr_eq(domain.container(), &container));
    ///     assert_eq!(domain.dma_mask(), DEFAULT_DMA_MASK);
    ///     assert_eq!(domain.iova_allocated_bytes(), 0, "IOVAs are handed out per operation");
    /// }
    /// ```
    pub fn new(container: Arc<Container>, dma_mask: u64) -> Arc<DmaDomain> {
        Arc::new(DmaDomain { container, dma_mask, iova: Mutex::new(None), residency: Mutex::new(Registry::default()) })
    }

    /// The container.
    ///
    /// No OpenCL function of its own: where the platform's accelerators
    /// are opened and their DMA mappings made.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// // Only with accelerators (VFIO); the host has none.
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     assert!(domain.container().iommu_info().is_ok(), "a group is attached");
    /// }
    /// ```
    pub fn container(&self) -> &Arc<Container> {
        &self.container
    }

    /// The highest IOVA handed out.
    ///
    /// No OpenCL function of its own: bounds `CL_DEVICE_MAX_MEM_ALLOC_SIZE`
    /// of the domain's devices (`clGetDeviceInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// // Only with accelerators (VFIO); the host has none.
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     for d in &Platform::get().devices()[1..] {
    ///         if d.dma_domain().is_some() {
    ///             assert!(d.max_mem_alloc_size <= domain.dma_mask());
    ///         }
    ///     }
    /// }
    /// ```
    pub fn dma_mask(&self) -> u64 {
        self.dma_mask
    }

    /// IOVA bytes handed out now (0 when no operation is under way).
    ///
    /// No OpenCL function of its own: shows that commands give their bus
    /// addresses back (tests).
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// // Only with accelerators (VFIO); the host has none.
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let buf = vec![1u8; 4096];
    ///     let before = domain.iova_allocated_bytes();
    ///     // SAFETY: the device may only read `buf`.
    ///     let span = unsafe { domain.map_span(HostAddr::of(buf.as_ptr()), buf.len(), Access::Read) }?;
    ///     assert!(domain.iova_allocated_bytes() > before);
    ///     drop(span);
    ///     assert_eq!(domain.iova_allocated_bytes(), before);
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn iova_allocated_bytes(&self) -> u64 {
        sync::lock(&self.iova).as_ref().map_or(0, IovaAllocator::allocated_bytes)
    }

    fn with_allocator<T>(&self, f: impl FnOnce(&mut IovaAllocator) -> T) -> T {
        let mut guard = sync::lock(&self.iova);
        let alloc = guard.get_or_insert_with(|| {
            let mut a = IovaAllocator::new(self.dma_mask, page_size() as u64).expect("the page size is a power of two");
            if let Ok(info) = self.container.iommu_info() {
                a.restrict_to(&info.iova_ranges);
            }
            a
        });
        f(alloc)
    }

    pub(super) fn alloc_iova(&self, size: u64) -> ClResult<Iova> {
        self.with_allocator(|a| a.alloc(size, page_size() as u64)).map_err(|e| {
            ClError::new(ClErrorKind::OutOfResources, format!("no bus address for {size} bytes of host memory: {e}"))
        })
    }

    /// Claims exactly `[iova, iova + size)` if the devices reach it and it
    /// is free (in the allocator and the IOMMU's usable ranges).
    pub(super) fn reserve_iova(&self, iova: Iova, size: u64) -> bool {
        self.with_allocator(|a| a.reserve(iova, size)).is_ok()
    }

    pub(super) fn free_iova(&self, iova: Iova) {
        if let Some(a) = sync::lock(&self.iova).as_mut() {
            let _ = a.free(iova);
        }
    }

    /// Gives back the IOVA of an evicted resident range, kept out of
    /// circulation as long as the space allows (see
    /// [`IovaAllocator::retire`]): devices may still hold its bus addresses.
    pub(super) fn retire_iova(&self, iova: Iova) {
        if let Some(a) = sync::lock(&self.iova).as_mut() {
            let _ = a.retire(iova);
        }
    }

    /// Pins and maps the pages covering `[addr, addr + len)` at a fresh IOVA;
    /// `access` says what the devices may do. The pages must be mapped
    /// memory of this process (not PFN-mapped, e.g. not a dma-buf's mmap).
    ///
    /// # Safety
    /// With an access that writes, the devices may change any byte of the covering pages
    /// while the guard lives: no Rust reference may point into them.
    ///
    /// No OpenCL function of its own: how a DMA engine reaches host memory
    /// that is not resident for one command (`clEnqueueMemcpyINTEL`,
    /// `clEnqueueCopyBuffer`, `clEnqueueSVMMemcpy` on an edu device).
    ///
    /// ```
    /// use dmabridge::error::ClErrorKind;
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// // Only with accelerators (VFIO); the host has none.
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let buf = vec![1u8; 3 * 4096];
    ///     let addr = HostAddr::of(buf.as_ptr()) + 100;
    ///     // SAFETY: the device may only read `buf`.
    ///     let span = unsafe { domain.map_span(addr, 5000, Access::Read) }?;
    ///     assert!(span.iova_of(addr + 4999).raw() <= domain.dma_mask());
    ///     // SAFETY: as above (and nothing is mapped).
    ///     let empty = unsafe { domain.map_span(addr, 0, Access::Read) };
    ///     assert_eq!(empty.unwrap_err().kind, ClErrorKind::InvalidValue);
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn map_span(&self, addr: HostAddr, len: usize, access: Access) -> ClResult<SpanMap<'_>> {
        let page = page_size();
        let start = HostAddr(addr.0 & !(page - 1));
        let end = addr
            .0
            .checked_add(len)
            .and_then(|e| e.checked_next_multiple_of(page))
            .filter(|_| len > 0)
            .ok_or_else(|| ClError::new(ClErrorKind::InvalidValue, format!("bad host range {addr:#x}+{len:#x}")))?;
        let size = (end - start.0) as u64;
        let iova = self.alloc_iova(size)?;
        // SAFETY: forwarded to the caller.
        match unsafe { self.container.map_dma_raw(iova, size, start, access) } {
            Ok(_) => Ok(SpanMap { domain: self, start, iova, size }),
            Err(e) => {
                self.free_iova(iova);
                let kind = match e {
                    VfioError::NotPinnable { .. } => ClErrorKind::InvalidValue,
                    _ => ClErrorKind::OutOfResources,
                };
                Err(ClError::new(kind, format!("mapping host range {addr:#x}+{len:#x} for DMA: {e}")))
            }
        }
    }
}

/// Host pages mapped for DMA; unmapped when dropped.
#[derive(Debug)]
pub struct SpanMap<'a> {
    domain: &'a DmaDomain,
    start: HostAddr,
    iova: Iova,
    size: u64,
}

impl SpanMap<'_> {
    /// The bus address of the process address `addr`, which must lie in the
    /// mapped pages.
    ///
    /// No OpenCL function of its own: the address a DMA engine is given
    /// for host memory during one command.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// // Only with accelerators (VFIO); the host has none.
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let buf = vec![1u8; 2 * 4096];
    ///     let addr = HostAddr::of(buf.as_ptr());
    ///     // SAFETY: the device may only read `buf`.
    ///     let span = unsafe { domain.map_span(addr, buf.len(), Access::Read) }?;
    ///     assert_eq!(span.iova_of(addr + 4096) - span.iova_of(addr), 4096, "contiguous on the bus");
    ///     assert_eq!(span.iova_of(addr).raw() % 4096, addr.raw() as u64 % 4096, "same offset in the page");
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn iova_of(&self, addr: HostAddr) -> Iova {
        let offset = addr.offset_from(self.start);
        debug_assert!(offset.is_some_and(|o| (o as u64) < self.size), "{addr:?} outside the span");
        self.iova + offset.unwrap_or(0) as u64
    }
}

impl SpanMap<'_> {
    /// Unmaps like dropping, but keeps the bus addresses out of circulation
    /// (see [`IovaAllocator::retire`]): after a transfer failed, or its
    /// device was lost, the device may still hold them.
    pub(crate) fn retire(self) {
        let this = std::mem::ManuallyDrop::new(self);
        match this.domain.container.unmap_dma(this.iova, this.size) {
            Ok(()) => this.domain.retire_iova(this.iova),
            Err(e) => log::error!("unmapping IOVA {:#x}+{:#x}: {e}", this.iova, this.size),
        }
    }
}

impl Drop for SpanMap<'_> {
    fn drop(&mut self) {
        match self.domain.container.unmap_dma(self.iova, self.size) {
            Ok(()) => self.domain.free_iova(self.iova),
            // Still mapped: keep the IOVA out of circulation rather than hand
            // it out twice.
            Err(e) => log::error!("unmapping IOVA {:#x}+{:#x}: {e}", self.iova, self.size),
        }
    }
}
