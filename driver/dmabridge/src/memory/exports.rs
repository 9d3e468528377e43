//! The export registry: the dma-bufs dmabridge made from its own memfd
//! pages (udmabuf exports of heap pages), by the dma-buf's inode.
//!
//! The heap records each export ([`note`]) and forgets it before those
//! memfd pages change ([`forget`]: a hole punched hands them back, or the
//! memfd goes). An importer that cannot use a dma-buf's own mapping (VFIO
//! cannot pin the PFN mapping of a udmabuf) asks the registry
//! ([`lock`] and [`Exports::find`]) for the memfd pages behind it, and pins
//! those instead. The registry lives with the heap, whose pages it
//! describes; `cl_arm_import_memory` is its reader, and so are the commands
//! that touch those pages on the CPU ([`fences`]: the fences other drivers
//! attached to the exports).

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::sync;
use crate::sys::access::Access;
use crate::sys::dma_buf::{DmaBuf, SyncFile};
use crate::sys::fork;

/// A dma-buf dmabridge exported from memfd pages: the memfd (a dup, one
/// for every record of that memfd), the range of it the dma-buf maps, and,
/// for an export whose fences the registry watches ([`watch_fences`]), a
/// duplicate of the dma-buf, whose implicit fences (another driver's work
/// on the pages) [`fences`] reads.
#[derive(Debug)]
pub(crate) struct ExportRecord {
    dma_buf: Option<DmaBuf>,
    memfd: Arc<OwnedFd>,
    memfd_inode: u64,
    offset: u64,
    len: u64,
}

impl ExportRecord {
    /// The memfd whose pages the dma-buf maps.
    pub fn memfd(&self) -> BorrowedFd<'_> {
        self.memfd.as_fd()
    }

    /// Where in the memfd the dma-buf's first byte is.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

/// dmabridge's live exports of memfd pages, by the dma-buf's inode (unique
/// among live dma-bufs, and never reused while the record lives: records go
/// when their memfd pages are handed back or the memfd is dropped).
static EXPORTS: Mutex<Option<HashMap<u64, ExportRecord>>> = Mutex::new(None);
/// The number of records, read without the lock on the heap's hot paths.
static EXPORT_COUNT: AtomicUsize = AtomicUsize::new(0);

/// The registry, held: while it is, no record is forgotten, so the heap
/// cannot hand back the memfd pages of a record found in it.
pub(crate) struct Exports(fork::Guarded<MutexGuard<'static, Option<HashMap<u64, ExportRecord>>>>);

impl Exports {
    /// The record of `dma_buf` if dmabridge exported it and it maps at least
    /// `len` bytes.
    pub fn find(&self, dma_buf: &DmaBuf, len: u64) -> Option<&ExportRecord> {
        let inode = dma_buf.inode().ok()?;
        self.0.as_ref()?.get(&inode).filter(|r| r.len >= len)
    }
}

/// Holds the registry (see [`Exports`]), in a process-wide section (see
/// `sys::fork`).
pub(crate) fn lock() -> Exports {
    Exports(fork::guarded(|| sync::lock(&EXPORTS)))
}

/// Records that `dma_buf` maps the pages `[offset, offset + len)` of
/// `memfd` (a udmabuf export of the heap's pages), so that an import of it
/// on a device behind an IOMMU pins the memfd's pages (which VFIO can)
/// instead of the dma-buf's PFN mapping (which it cannot). Failures only
/// lose the zero-copy path on such devices (logged).
pub(crate) fn note(dma_buf: &DmaBuf, memfd: BorrowedFd<'_>, offset: u64, len: u64) {
    let mut ex = lock();
    let map = ex.0.get_or_insert_with(HashMap::new);
    // A watched export nobody else holds any more (no fd in any process,
    // no importing driver: only our duplicate is left) can be neither
    // imported nor given new fences: its record goes, so that an allocation
    // exported again and again (once per frame, say) does not keep an fd per
    // export. Where the kernel does not tell, it stays.
    map.retain(|_, r| r.dma_buf.as_ref().is_none_or(|d| d.file_refs() != Some(1)));
    let record = (|| -> Result<(u64, ExportRecord), String> {
        let inode = dma_buf.inode().map_err(|e| e.to_string())?;
        let memfd_inode = rustix::fs::fstat(memfd).map_err(|e| e.to_string())?.st_ino;
        // Records of one memfd share one dup of it: exporting the same pages
        // again and again costs no fd each time.
        let memfd = match map.values().find(|r| r.memfd_inode == memfd_inode) {
            Some(r) => r.memfd.clone(),
            None => Arc::new(memfd.try_clone_to_owned().map_err(|e| e.to_string())?),
        };
        Ok((inode, ExportRecord { dma_buf: None, memfd, memfd_inode, offset, len }))
    })();
    if let Err(e) = &record {
        log::warn!("recording a dma-buf export for later imports: {e}");
    }
    if let Ok((inode, record)) = record {
        map.insert(inode, record);
    }
    EXPORT_COUNT.store(map.len(), Ordering::Release);
}

/// Keeps a duplicate of `dma_buf`, an export [`note`] recorded, so that
/// [`fences`] finds the fences other drivers attach to it. For exports
/// that nothing else watches (the heap's exports of USM and SVM
/// allocations; a buffer's store keeps its own exports). The error says
/// why (no record: the pages were handed back meanwhile; no fd left).
pub(crate) fn watch_fences(dma_buf: &DmaBuf) -> Result<(), String> {
    let inode = dma_buf.inode().map_err(|e| e.to_string())?;
    let mut ex = lock();
    let record = ex.0.as_mut().and_then(|m| m.get_mut(&inode)).ok_or("the export is not recorded")?;
    record.dma_buf = Some(dma_buf.try_clone().map_err(|e| e.to_string())?);
    Ok(())
}

/// The implicit fences, as sync_files, of the watched exports of `memfd`'s pages
/// that overlap `[offset, offset + len)`: what a CPU access of `dir` to
/// those pages must wait for (the writers' fences for a read, every user's
/// for a write), as another driver (a GPU, an encoder) that imported an
/// export may still be using them. Empty without exports (no lock taken),
/// and on kernels without `DMA_BUF_IOCTL_EXPORT_SYNC_FILE` (before 6.0).
pub(crate) fn fences(memfd: BorrowedFd<'_>, offset: u64, len: u64, dir: Access) -> Vec<SyncFile> {
    if EXPORT_COUNT.load(Ordering::Acquire) == 0 {
        return Vec::new();
    }
    let Ok(st) = rustix::fs::fstat(memfd) else { return Vec::new() };
    let end = offset.saturating_add(len);
    let ex = lock();
    let Some(map) = ex.0.as_ref() else { return Vec::new() };
    map.values()
        .filter(|r| r.memfd_inode == st.st_ino && r.offset < end && offset < r.offset + r.len)
        .filter_map(|r| r.dma_buf.as_ref()?.export_sync_file(dir).ok())
        .collect()
}

/// Forgets the exports of `memfd`'s pages that overlap `[offset, offset +
/// len)`: the heap is handing them back (a hole is punched, so the memfd
/// gets fresh pages there while the dma-bufs keep the old ones), or the
/// memfd itself goes. Call it before the pages change.
pub(crate) fn forget(memfd: BorrowedFd<'_>, offset: u64, len: u64) {
    if EXPORT_COUNT.load(Ordering::Acquire) == 0 {
        return;
    }
    let Ok(st) = rustix::fs::fstat(memfd) else { return };
    let end = offset.saturating_add(len);
    let mut ex = lock();
    if let Some(map) = ex.0.as_mut() {
        map.retain(|_, r| !(r.memfd_inode == st.st_ino && r.offset < end && offset < r.offset + r.len));
        EXPORT_COUNT.store(map.len(), Ordering::Release);
    }
}

/// The number of recorded exports (records go with their pages).
pub(crate) fn count() -> usize {
    EXPORT_COUNT.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child forked while another thread held the registry takes it at
    /// once (see `sys::fork`): without the fork handler it waited forever.
    #[test]
    fn a_forked_child_takes_the_registry_another_thread_held() {
        crate::sys::forked::a_child_takes_what_another_thread_held(
            "memory::exports::tests::a_forked_child_takes_the_registry_another_thread_held",
            &[("exports", || Box::new(lock()))],
        );
    }
}
