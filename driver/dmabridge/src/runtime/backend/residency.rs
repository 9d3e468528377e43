//! Long-lived residency: host ranges that stay pinned and mapped in a
//! [`DmaDomain`] until they are evicted, so that commands on its devices
//! use their bus addresses without mapping them per command.
//!
//! Each resident range is `{address, length, IOVA, reference count}` and is
//! mapped (read and write) over the pages it spans. Its IOVA equals its
//! process address when the devices' DMA mask reaches the last byte and that
//! IOVA range is free in the domain ("the same pointer works on host and
//! device"); otherwise it comes from the domain's IOVA allocator. Ranges that
//! share a page with another resident range are mapped again at a second IOVA
//! (VFIO pins a page once per mapping), so the identity IOVA goes to the first
//! of them only; USM device allocations of an edu device own their pages, so
//! they never share.
//!
//! The heap allocations that commands on a domain's devices reach (a kernel
//! launch's, a USM migration's) are kept resident here too
//! (`keep_resident`), until they are freed or their heap goes.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::domain::DmaDomain;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::{AllocInfo, AllocKind};
use crate::runtime::context::Context;
use crate::sync;
use crate::sys::access::Access;
use crate::sys::addr::{HostAddr, Iova};
use crate::sys::page_size;
use crate::sys::vfio::VfioError;

/// One resident range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    /// Process address of the first byte made resident.
    pub addr: HostAddr,
    /// Its length in bytes.
    pub len: usize,
    /// Bus address of `addr`.
    pub iova: Iova,
    /// How many [`DmaDomain::make_resident`] calls it has outlived.
    pub refs: usize,
    /// The mapping: first page, and bytes (whole pages).
    span_start: HostAddr,
    span_len: u64,
}

impl Resident {
    /// True if `[addr, addr + len)` lies inside the range.
    fn covers(&self, addr: HostAddr, len: usize) -> bool {
        addr >= self.addr && addr.checked_add(len).is_some_and(|e| e <= self.addr + self.len)
    }

    fn iova_of(&self, addr: HostAddr) -> Iova {
        self.iova + (addr - self.addr) as u64
    }
}

/// The resident ranges of a domain, by start address.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    ranges: BTreeMap<HostAddr, Resident>,
    /// Shorter ranges that a longer one at the same address replaced (see
    /// [`DmaDomain::make_resident_via`]): still mapped, since commands may
    /// use their bus addresses, and unmapped with the range that replaced
    /// them.
    superseded: BTreeMap<HostAddr, Vec<Resident>>,
    /// Ranges unmapped because their memory's device was lost
    /// ([`DmaDomain::revoke_within`]), with the references their owners
    /// will still give back through [`DmaDomain::evict`].
    revoked: BTreeMap<HostAddr, usize>,
}

impl Registry {
    fn find(&self, addr: HostAddr, len: usize) -> Option<&Resident> {
        // Ranges may overlap (neighbours sharing pages, sub-ranges made
        // resident on their own): look at every one starting at or before.
        self.ranges.range(..=addr).rev().map(|(_, r)| r).find(|r| r.covers(addr, len.max(1)))
    }
}

impl DmaDomain {
    /// Makes `[addr, addr + len)` resident: pins the pages it spans and maps
    /// them read/write at an IOVA (equal to `addr` when the DMA mask and the
    /// free IOVA space allow), or, if a range starting at `addr` is already
    /// resident and at least `len` long, counts one more reference to it. A
    /// shorter range resident at `addr` is superseded: the longer range is
    /// mapped at a new IOVA and takes over its references (plus this one),
    /// and the shorter mapping stays until the last reference is evicted.
    /// Returns the bus address of `addr`.
    ///
    /// The residency half of `clEnqueueMakeBuffersResidentAMD` (seed 002) and
    /// of the device allocations of `clDeviceMemAllocINTEL` (seed 000).
    ///
    /// Errors: `CL_INVALID_VALUE` for an empty or wrapping range, or memory
    /// VFIO cannot pin (not mapped, or PFN-mapped like a dma-buf's mmap);
    /// `CL_OUT_OF_RESOURCES` when no IOVA range is free or the kernel refuses
    /// the mapping (e.g. the memlock limit). A failure leaves nothing mapped.
    ///
    /// # Safety
    /// The devices may write any byte of the spanned pages until the range is
    /// evicted: no Rust reference may point into them meanwhile.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let page = vec![0u8; 8192];
    ///     let addr = HostAddr::of(page.as_ptr());
    ///     // SAFETY: `page` is only read through raw pointers until evicted.
    ///     let iova = unsafe { domain.make_resident(addr, 4096) }?;
    ///     assert_eq!(domain.resident_iova(addr + 10, 1), Some(iova + 10));
    ///     domain.evict(addr)?;
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn make_resident(&self, addr: HostAddr, len: usize) -> ClResult<Iova> {
        // SAFETY: forwarded to the caller; the pages pinned are the ones
        // `addr` shows.
        unsafe { self.make_resident_via(addr, len, addr, Access::ReadWrite) }
    }

    /// True if [`make_resident_via`](Self::make_resident_via) of `addr`,
    /// `len` would pin (and charge against `RLIMIT_MEMLOCK`) the pages of
    /// its span again; false if a range resident at `addr` already covers
    /// it (the call then takes a reference).
    ///
    /// No system call.
    pub(crate) fn would_pin(&self, addr: HostAddr, len: usize) -> bool {
        let reg = sync::lock(&self.residency);
        !matches!(reg.ranges.get(&addr), Some(r) if r.len >= len)
    }

    /// [`DmaDomain::make_resident`] where the pages are pinned through
    /// another mapping of the same memory: `pin_addr` is the address, in a
    /// mapping VFIO can pin (e.g. a memfd's), of the page that `addr` shows
    /// (in one VFIO cannot pin, e.g. a udmabuf dma-buf's PFN mapping), with
    /// the same offset in the page. The range is looked up and evicted by
    /// `addr`, as any other. `access` [`Access::Read`] maps it read-only for
    /// the devices (pages of a read-only mapping cannot be pinned for
    /// writing).
    ///
    /// The residency of a dma-buf imported by `clImportMemoryARM` (seed 004)
    /// whose pages dmabridge itself exported from memfd pages.
    ///
    /// # Safety
    /// As [`DmaDomain::make_resident`]; and the pages covering
    /// `[pin_addr, pin_addr + len)` must be the very pages that cover
    /// `[addr, addr + len)`, else the devices reach other memory than the
    /// CPU at `addr` sees.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let page = vec![0u8; 8192];
    ///     let addr = HostAddr::of(page.as_ptr());
    ///     // SAFETY: the same pages; only read through raw pointers until evicted.
    ///     let iova = unsafe { domain.make_resident_via(addr, 4096, addr, Access::Read) }?;
    ///     assert_eq!(domain.resident_iova(addr, 4096), Some(iova));
    ///     domain.evict(addr)?;
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn make_resident_via(
        &self,
        addr: HostAddr,
        len: usize,
        pin_addr: HostAddr,
        access: Access,
    ) -> ClResult<Iova> {
        let mut reg = sync::lock(&self.residency);
        // A range resident at `addr` takes one more reference if it is long
        // enough; a shorter one is replaced below by a longer mapping (its
        // own stays mapped until the last reference goes: commands may be
        // using its bus addresses).
        let shorter = match reg.ranges.get_mut(&addr) {
            Some(r) if r.len >= len => {
                r.refs += 1;
                return Ok(r.iova);
            }
            Some(r) => Some(*r),
            None => None,
        };
        let page = page_size();
        let span_start = HostAddr(addr.0 & !(page - 1));
        let span_end = addr
            .0
            .checked_add(len)
            .and_then(|e| e.checked_next_multiple_of(page))
            .filter(|_| len > 0)
            .ok_or_else(|| ClError::new(ClErrorKind::InvalidValue, format!("bad host range {addr:#x}+{len:#x}")))?;
        let span_len = (span_end - span_start.0) as u64;
        if pin_addr.0 % page != addr.0 % page || pin_addr.checked_add(len).is_none() {
            return Err(ClError::new(
                ClErrorKind::InvalidValue,
                format!("pin address {pin_addr:#x} is not at {addr:#x}'s offset in a page, or wraps"),
            ));
        }
        let pin_start = HostAddr(pin_addr.0 & !(page - 1));
        // IOVA == VA when the devices reach it and nothing else sits there.
        let span_iova = match self.reserve_iova(Iova(span_start.0 as u64), span_len) {
            true => Iova(span_start.0 as u64),
            false => self.alloc_iova(span_len)?,
        };
        // SAFETY: forwarded to the caller (no Rust reference into the pages
        // while the devices may write them).
        let mapped = unsafe { self.container().map_dma_raw(span_iova, span_len, pin_start, access) };
        if let Err(e) = mapped {
            self.free_iova(span_iova);
            let kind = match e {
                VfioError::NotPinnable { .. } => ClErrorKind::InvalidValue,
                _ => ClErrorKind::OutOfResources,
            };
            return Err(ClError::new(kind, format!("making host range {addr:#x}+{len:#x} resident: {e}")));
        }
        let iova = span_iova + (addr - span_start) as u64;
        let refs = shorter.map_or(1, |r| r.refs + 1);
        if let Some(old) = shorter {
            reg.superseded.entry(addr).or_default().push(old);
        }
        reg.ranges.insert(addr, Resident { addr, len, iova, refs, span_start, span_len });
        Ok(iova)
    }

    /// Makes `[addr, addr + len)` resident unless a resident range already
    /// covers it (then nothing changes, no reference is counted). Returns
    /// the bus address of `addr`. Errors and safety as
    /// [`DmaDomain::make_resident`].
    ///
    /// What `clEnqueueMigrateMemINTEL` and a kernel launch on an edu queue do
    /// to the allocations they reach (seed 000).
    ///
    /// # Safety
    /// As [`DmaDomain::make_resident`].
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let page = vec![0u8; 4096];
    ///     let addr = HostAddr::of(page.as_ptr());
    ///     // SAFETY: `page` is only read through raw pointers until evicted.
    ///     let a = unsafe { domain.ensure_resident(addr, 100) }?;
    ///     // SAFETY: as above.
    ///     assert_eq!(unsafe { domain.ensure_resident(addr + 1, 10) }?, a + 1);
    ///     domain.evict(addr)?;
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn ensure_resident(&self, addr: HostAddr, len: usize) -> ClResult<Iova> {
        if let Some(iova) = self.resident_iova(addr, len) {
            return Ok(iova);
        }
        // SAFETY: forwarded to the caller. (A racing caller may have made it
        // resident meanwhile: then this counts one reference more, which
        // the eviction at free removes with the rest.)
        unsafe { self.make_resident(addr, len) }
    }

    /// Drops one reference to the range made resident at `addr`; at the
    /// last one, unmaps and unpins its pages and gives its IOVA back, last
    /// in line ([`IovaAllocator::retire`](crate::memory::iova::IovaAllocator::retire)):
    /// it is handed out again only after [`RETIRED_MAX`](crate::memory::iova::RETIRED_MAX)
    /// later evictions or when the IOVA space has no other room, so a device
    /// still using the old bus addresses meanwhile reaches no memory.
    ///
    /// The eviction that `clMemFreeINTEL` of an edu device allocation does
    /// (seed 000).
    ///
    /// Errors: `CL_INVALID_VALUE` if no range starting at `addr` is resident;
    /// `CL_OUT_OF_RESOURCES` if VFIO refuses to unmap (the IOVA then stays
    /// out of circulation).
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     assert!(domain.evict(HostAddr(0x1000)).is_err());
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn evict(&self, addr: HostAddr) -> ClResult<()> {
        let mut reg = sync::lock(&self.residency);
        if let Some(refs) = reg.revoked.get_mut(&addr) {
            // Unmapped already, when its device was lost.
            *refs -= 1;
            if *refs == 0 {
                reg.revoked.remove(&addr);
            }
            return Ok(());
        }
        let Some(r) = reg.ranges.get_mut(&addr) else {
            return Err(ClError::new(ClErrorKind::InvalidValue, format!("{addr:#x} is not resident")));
        };
        r.refs -= 1;
        if r.refs > 0 {
            return Ok(());
        }
        let r = reg.ranges.remove(&addr).expect("found above");
        let old = reg.superseded.remove(&addr).unwrap_or_default();
        old.iter().chain(std::iter::once(&r)).map(|r| self.unmap_resident(r)).fold(Ok(()), Result::and)
    }

    /// Evicts every range that starts inside `[start, start + len)`,
    /// whatever its reference count: an allocation is being freed (or its
    /// heap unmapped), so nothing may stay pinned in it. Returns how many
    /// ranges were evicted.
    ///
    /// What `clMemFreeINTEL`, `clMemBlockingFreeINTEL` and releasing a
    /// context do to resident allocations (seed 000).
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let page = vec![0u8; 4096];
    ///     let addr = HostAddr::of(page.as_ptr());
    ///     // SAFETY: `page` is only read through raw pointers until evicted.
    ///     unsafe { domain.make_resident(addr, 64)?; domain.make_resident(addr, 64)? };
    ///     assert_eq!(domain.evict_within(addr, 4096), 1);
    ///     assert_eq!(domain.resident_iova(addr, 1), None);
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn evict_within(&self, start: HostAddr, len: usize) -> usize {
        let mut reg = sync::lock(&self.residency);
        let end = HostAddr(start.0.saturating_add(len.max(1)));
        let keys: Vec<HostAddr> = reg.ranges.range(start..end).map(|(&k, _)| k).collect();
        for &k in &keys {
            self.remove_and_unmap(&mut reg, k);
        }
        keys.len()
    }

    /// Removes the range at `k` (and those it superseded) whatever its
    /// references, unmaps them (errors logged) and returns it.
    fn remove_and_unmap(&self, reg: &mut Registry, k: HostAddr) -> Resident {
        let r = reg.ranges.remove(&k).expect("a resident range");
        let old = reg.superseded.remove(&k).unwrap_or_default();
        for r in old.iter().chain(std::iter::once(&r)) {
            if let Err(e) = self.unmap_resident(r) {
                log::error!("{e}");
            }
        }
        r
    }

    /// Unmaps every range that overlaps `[start, start + len)` (a BAR
    /// whose device is lost), whatever its reference count, and retires
    /// its bus addresses; the owners' later [`DmaDomain::evict`] calls
    /// succeed quietly. Returns how many ranges were revoked.
    ///
    /// No OpenCL function of its own: what losing a device
    /// ([`super::lost`]) does to the external physical buffers and the
    /// peer-to-peer mapping in its BAR.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     let page = vec![0u8; 8192];
    ///     let addr = HostAddr::of(page.as_ptr());
    ///     // SAFETY: `page` is only read through raw pointers until evicted.
    ///     unsafe { domain.make_resident(addr + 4096, 64)? };
    ///     assert_eq!(domain.revoke_within(addr, 8192), 1);
    ///     assert_eq!(domain.resident_iova(addr + 4096, 1), None);
    ///     domain.evict(addr + 4096)?;
    ///     assert!(domain.evict(addr + 4096).is_err(), "given back once");
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn revoke_within(&self, start: HostAddr, len: usize) -> usize {
        let mut reg = sync::lock(&self.residency);
        let end = HostAddr(start.0.saturating_add(len));
        let keys: Vec<HostAddr> =
            reg.ranges.range(..end).filter(|(_, r)| r.addr + r.len > start).map(|(&k, _)| k).collect();
        for &k in &keys {
            let r = self.remove_and_unmap(&mut reg, k);
            *reg.revoked.entry(k).or_default() += r.refs;
        }
        keys.len()
    }

    /// The bus address of `addr` if a resident range covers all of
    /// `[addr, addr + len)` (an empty range counts as its first byte).
    ///
    /// The lookup behind a resident buffer's bus address
    /// (`clEnqueueMakeBuffersResidentAMD`, seed 002) and behind edu copies
    /// that need no mapping.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     assert_eq!(domain.resident_iova(HostAddr(0x1000), 16), None);
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn resident_iova(&self, addr: HostAddr, len: usize) -> Option<Iova> {
        sync::lock(&self.residency).find(addr, len).map(|r| r.iova_of(addr))
    }

    /// Every resident range, by address.
    ///
    /// No OpenCL function of its own: for tests and `dmabridge info`.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::sys::{access::Access, addr::HostAddr};
    /// if let Some(domain) = Platform::get().dma_domain() {
    ///     for r in domain.residents() {
    ///         println!("{:#x}+{:#x} at IOVA {:#x}", r.addr, r.len, r.iova);
    ///     }
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn residents(&self) -> Vec<Resident> {
        sync::lock(&self.residency).ranges.values().copied().collect()
    }

    fn unmap_resident(&self, r: &Resident) -> ClResult<()> {
        let span_iova = Iova(r.iova.0 - (r.addr - r.span_start) as u64);
        match self.container().unmap_dma(span_iova, r.span_len) {
            Ok(()) => {
                // Devices may still hold these bus addresses: keep them
                // unmapped rather than give them to the next range.
                self.retire_iova(span_iova);
                Ok(())
            }
            Err(e) => Err(ClError::new(
                ClErrorKind::OutOfResources,
                format!("unmapping resident range {:#x}+{:#x} (IOVA {span_iova:#x}): {e}", r.addr, r.len),
            )),
        }
    }
}

/// Unpins whatever of `ctx`'s heap is still resident in `domain` when the
/// heap goes (a context released with live allocations).
pub(crate) fn evict_on_heap_drop(ctx: &Context, domain: &Arc<DmaDomain>) {
    let d = domain.clone();
    let evict = move |start: HostAddr, len| {
        d.evict_within(start, len);
    };
    ctx.heap().on_drop(Arc::as_ptr(domain) as usize, Box::new(evict));
}

/// Makes the USM allocation `info` of `ctx` resident in `domain` unless it
/// already is (no reference counted: it stays resident until it is freed,
/// or its context released). SVM allocations are left alone (their free,
/// `clSVMFree`, does not evict); so are pointers outside the heap. Returns
/// the bus address of `info.base`, or `None` when left alone.
///
/// What `clEnqueueMigrateMemINTEL` and a kernel launch on an edu queue do to
/// the allocations they reach (seed 000): residency is the backend's, so the
/// runtime's launch and the extension's migration share it here. Errors as
/// [`DmaDomain::make_resident`].
pub(crate) fn keep_resident(ctx: &Context, domain: &Arc<DmaDomain>, info: &AllocInfo) -> ClResult<Option<Iova>> {
    if info.meta.kind == AllocKind::Svm {
        return Ok(None);
    }
    // SAFETY: a live USM allocation, reached only through raw pointers;
    // devices write it only through enqueued commands (USM: the host keeps
    // off meanwhile), and it is evicted before its pages are freed.
    let iova = unsafe { domain.ensure_resident(info.base, info.size) }?;
    evict_on_heap_drop(ctx, domain);
    Ok(Some(iova))
}
