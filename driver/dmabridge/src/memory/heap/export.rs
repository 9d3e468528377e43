//! Exporting the pages of an allocation as a dma-buf.

use super::*;
use crate::sys::access::Access;
use crate::sys::dma_buf::SyncFile;

impl Heap {
    /// Exports the pages that the allocation holding `ptr` spans as a
    /// dma-buf (udmabuf). For a pooled allocation smaller than a page, the
    /// page also holds the neighbours of the same chunk allocated before the
    /// export.
    ///
    /// The dma-buf may outlive the allocation (udmabuf holds the pages), so
    /// its pages never go to a later allocation: from the export on, a pool
    /// page it maps takes no new allocation; when the last allocation in
    /// exported pages is freed, the pages are handed back to the system —
    /// the dma-buf keeps them, with their last contents, and the heap gets
    /// fresh pages at that place of its memfd for whatever it hands out there
    /// next.
    ///
    /// No OpenCL function of its own: what makes USM, SVM and
    /// `CL_MEM_ALLOC_HOST_PTR` memory shareable with other drivers as a
    /// dma-buf (zero-copy).
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::memory::heap::{AllocMeta, ExportError, Heap};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(3 << 20, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// // Only where /dev/udmabuf exists.
    /// if let Ok(udmabuf) = Udmabuf::open() {
    ///     let dmabuf = heap.export_dmabuf(&udmabuf, HostAddr(p + 1))?;
    ///     assert_eq!(dmabuf.size()?, 3 << 20, "the pages it spans");
    ///     assert!(matches!(heap.export_dmabuf(&udmabuf, HostAddr(8)), Err(ExportError::Unknown(HostAddr(8)))));
    ///     // SAFETY: a live 3 MiB allocation that only this example uses.
    ///     unsafe { (p as *mut u8).write(7) };
    ///     heap.free(HostAddr(p))?;
    ///     let q = heap.alloc(3 << 20, 0, AllocMeta::HOST)?.as_ptr();
    ///     // SAFETY: as above.
    ///     assert_eq!(unsafe { q.read() }, 0, "fresh pages, not the dma-buf's");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export_dmabuf(&self, udmabuf: &Udmabuf, ptr: HostAddr) -> Result<DmaBuf, ExportError> {
        self.export_with(ptr, |memfd, offset, len| {
            let dmabuf = udmabuf.create(memfd, offset, len)?;
            // Imports of it (clImportMemoryARM) pin these memfd pages.
            crate::memory::exports::note(&dmabuf, memfd, offset, len);
            Ok(dmabuf)
        })
    }

    /// The fences other drivers attached to the dma-bufs exported of the
    /// heap's pages under `[addr, addr + len)` ([`export_dmabuf`](Self::export_dmabuf)),
    /// for a CPU access of `dir` to wait for. Empty for a range outside the
    /// heap, and at once (no lock, no system call) while nothing is exported.
    ///
    /// No OpenCL function of its own: what USM and SVM commands wait for
    /// before they touch an exported allocation.
    ///
    /// ```
    /// use dmabridge::memory::heap::{AllocMeta, Heap};
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::addr::HostAddr;
    /// let heap = Heap::with_granules(1)?;
    /// let p = heap.alloc(4096, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// // Not exported: nothing to wait for.
    /// assert!(heap.export_fences(HostAddr(p), 4096, Access::Write).is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export_fences(&self, addr: HostAddr, len: usize, dir: Access) -> Vec<SyncFile> {
        if crate::memory::exports::count() == 0 {
            return Vec::new();
        }
        let Some(offset) = addr.0.checked_sub(self.va.base().0).filter(|o| *o < self.va.len()) else {
            return Vec::new();
        };
        crate::memory::exports::fences(self.va.memfd(), offset as u64, len as u64, dir)
    }

    /// The bookkeeping of [`export_dmabuf`](Self::export_dmabuf) around
    /// `create(memfd, offset, len)`, which makes the export of the pages at
    /// `offset..offset + len` of the heap's memfd; the pages are marked
    /// exported only if it succeeds.
    pub(super) fn export_with<T>(
        &self,
        ptr: HostAddr,
        create: impl FnOnce(BorrowedFd<'_>, u64, u64) -> Result<T, ExportError>,
    ) -> Result<T, ExportError> {
        let unknown = || ExportError::Unknown(ptr);
        let info = self.lookup(ptr).ok_or_else(unknown)?;
        let g = self.va.granule_of(info.base).ok_or_else(unknown)?;
        let start = self.table.start_of(g).ok_or_else(unknown)?;
        let rec = self.table.record(start).ok_or_else(unknown)?;
        let page = self.page;
        // The allocation lies inside the reservation: no overflow.
        let first = (info.base - self.va.base()) / page * page;
        let end = (info.base - self.va.base() + info.size).next_multiple_of(page);
        let chunk_start = start * GRANULE;
        // Hold the lock that guards the allocation's extent while exporting,
        // so that it cannot be freed and its pages reused meanwhile, and
        // record the export under it.
        if rec.kind.load(Ordering::Acquire) == CHUNK {
            let (c, s) = (rec.class.load(Ordering::Acquire) as usize, rec.shard.load(Ordering::Acquire) as usize);
            let mut cls = sync::lock(self.pool(c, s));
            if !self.is_chunk_of(rec, c, s) || self.lookup(ptr) != Some(info) {
                return Err(unknown());
            }
            let dmabuf = create(self.va.memfd(), first as u64, (end - first) as u64)?;
            let ci = rec.class_slot.load(Ordering::Relaxed) as usize;
            self.close_pages(&mut cls, ci, class_size(c), first - chunk_start..end - chunk_start);
            Ok(dmabuf)
        } else {
            let mut large = sync::lock(&self.large);
            if rec.kind.load(Ordering::Acquire) != LARGE || self.lookup(ptr) != Some(info) {
                return Err(unknown());
            }
            let l = large.get_mut(&start).ok_or_else(unknown)?;
            let dmabuf = create(self.va.memfd(), first as u64, (end - first) as u64)?;
            l.exported = true;
            Ok(dmabuf)
        }
    }
}
