//! The allocations of one buffer and where its data is: DPC++'s linked
//! allocation commands (seed 003) on dmabridge's devices.
//!
//! A buffer (and every sub-buffer of it) has one store. Nothing is
//! allocated when the buffer is created; the store creates an allocation for
//! a *location* — the host, or a device — the first time a command uses the
//! buffer there:
//!
//! * **Host pages.** The host allocation and the device allocation of every
//!   device with host-unified memory are *linked*: they are the same pages.
//!   The pages are the user's (`CL_MEM_USE_HOST_PTR`: no allocation at all),
//!   or come from the context's buffer heap (memfd-backed, so they can be
//!   exported as a dma-buf), allocated by whichever of the linked pair is
//!   first used. A linked device allocation created after the host one
//!   reuses its pages (DPC++: "created with `USE_HOST_PTR`"); a host
//!   allocation created after its linked device allocation is not allocated
//!   but obtained by mapping the device's pages. Only one side is active at a
//!   time and the switch is map/unmap, which moves no byte.
//! * **Local memory.** A device without host-unified memory (a PCI BAR
//!   device) gets an *unlinked* allocation in its own memory, created without
//!   a host pointer. Its data is initialised by a separate transfer when the
//!   first access does not discard it; transfers are reads and writes between
//!   it and the host pages; a device-to-device transfer goes through the host
//!   pages (for a linked destination: "map B, read A into it, unmap B").
//!
//! Which locations hold the current data is tracked for the whole buffer:
//! the host pages (and so every linked device), and the set of devices whose
//! local copy is current. Transfers happen inside the commands, in execution
//! order, under the store's lock; allocations happen at enqueue, so that an
//! allocation failure is the enqueue's error — except the host allocation a
//! transfer between two unlinked devices needs as its intermediary, made
//! when that transfer runs (its failure is the command's status). A call
//! that fails after allocating undoes what it allocated.
//!
//! Every allocation and every transferred byte is counted per location
//! ([`LocationStats`]): the tests prove which path of the seed's table ran.
//!
//! **Imported memory** (`clImportMemoryARM`, seed 004) is the store's host
//! pages for its whole life, like `CL_MEM_USE_HOST_PTR`'s, with three
//! differences: every device's allocation is made at import (linked; a
//! device behind an IOMMU gets the pages resident then, so that a device
//! that cannot reach them fails the import rather than a later command);
//! a device without host-unified memory is never given an unlinked copy
//! (the seed forbids copies: the import refuses such a context); and an
//! imported dma-buf is synchronised around every CPU access
//! (`Store::cpu_sync`, counted by
//! [`Buffer::cpu_syncs`](super::Buffer::cpu_syncs)) and may be read-only.
//!
//! **Remote memory** (`CL_MEM_EXTERNAL_PHYSICAL_AMD`, seed 002: another
//! device's PCI BAR, mapped for the CPU and resident for peer-to-peer DMA)
//! is the store's host pages for its whole life too, and the one storage of
//! every device: each device's allocation is *linked* to it, whether or not
//! the device has host-unified memory. A device with local memory (the BAR
//! device) writes it through its engine, peer-to-peer, or by the CPU
//! through the mapping — never into a copy of its own, which the remote
//! device would not see, nor by first reading the remote memory (it is
//! write-only). What keeps the remote memory mapped is dropped after every
//! device's residency of it is evicted (`Store::new_remote`). Once the
//! remote function is lost (removed, unbound:
//! [`lost`](crate::runtime::backend::lost)), its mapping is inert
//! anonymous memory: every command on the buffer, whichever device runs
//! it, then fails with `CL_DEVICE_NOT_AVAILABLE` (`Store::make_current`,
//! which each command calls before it touches the memory) instead of
//! writing bytes that reach nobody.
//!
//! This follows the seed with one deliberate difference: DPC++ links a host
//! allocation with at most one device allocation, because one native memory
//! object owns the pages. Here the pages belong to the store, so every
//! host-unified device of the context links to the same host pages — the
//! seed's criterion ("linked if and only if the device has host-unified
//! memory") holds for each of them.
//!
//! One idea a file: the store, its locations and their currency here;
//! `alloc` (allocating and undoing locations), `imported` (imported and
//! remote memory, CPU-access bracketing).

mod alloc;
mod imported;

use std::sync::{Arc, Mutex, MutexGuard};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::AllocMeta;
use crate::runtime::backend::device_copy;
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::transfer;
use crate::sync;
use crate::sys::access::Access;
use crate::sys::addr::HostAddr;
use crate::sys::dma_buf::{DmaBuf, LazyMap};

use super::bracket::Bracket;
use super::restrictions::Restrictions;
pub use imported::CpuSyncs;
pub(crate) use imported::{CpuSync, Imported, RemoteKeep};

/// Where an allocation of a buffer lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    /// The host (the buffer's host allocation).
    Host,
    /// The device with this platform index.
    Device(u16),
}

/// What a buffer did at one location: the observable trace of the seed's
/// table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LocationStats {
    /// Allocation commands run here (0 or 1: allocations are made once).
    pub allocations: u64,
    /// Fresh memory those allocations took (0 for a host allocation over the
    /// user's pointer, a linked device allocation reusing the host pages, or
    /// a host allocation obtained by mapping its linked device allocation).
    pub bytes_allocated: u64,
    /// Bytes transferred into this location's memory from another
    /// allocation of the buffer.
    pub bytes_in: u64,
    /// Bytes transferred out of this location's memory into another
    /// allocation of the buffer.
    pub bytes_out: u64,
    /// Host allocations obtained by mapping the linked device allocation
    /// instead of allocating (host location only).
    pub obtained_by_mapping: u64,
}

/// Who owns the host pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PagesOwner {
    /// The application (`CL_MEM_USE_HOST_PTR`).
    User,
    /// The buffer heap of the context, allocated for this store.
    Heap,
}

/// A device's allocation of the buffer.
#[derive(Debug)]
struct DeviceAlloc {
    device: Arc<Device>,
    /// `Some(ptr)` for an unlinked allocation in the device's local memory.
    local: Option<usize>,
}

/// The mutable state of a store.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// The host pages: (address, owner).
    pages: Option<(usize, PagesOwner)>,
    /// The host allocation exists (allocated, the user's, or mapped).
    host_alloc: bool,
    devices: Vec<DeviceAlloc>,
    /// The buffer holds data (initialised, or written once); before that,
    /// every location is trivially current and nothing is transferred.
    defined: bool,
    /// The host pages hold the current data.
    pages_current: bool,
    /// Devices whose local allocation holds the current data.
    local_current: Vec<u16>,
    stats: Vec<(Location, LocationStats)>,
}

impl State {
    fn stats_mut(&mut self, loc: Location) -> &mut LocationStats {
        match self.stats.iter().position(|(l, _)| *l == loc) {
            Some(i) => &mut self.stats[i].1,
            None => {
                self.stats.push((loc, LocationStats::default()));
                &mut self.stats.last_mut().expect("just pushed").1
            }
        }
    }

    /// True if the host pages hold the only current copy of defined data
    /// (then they must stay).
    fn pages_current_matters(&self) -> bool {
        self.defined && self.pages_current && self.local_current.is_empty()
    }

    fn device(&self, index: u16) -> Option<&DeviceAlloc> {
        self.devices.iter().find(|d| d.device.index == index)
    }
}

/// The allocations of a buffer and its sub-buffers.
#[derive(Debug)]
pub(crate) struct Store {
    context: Arc<Context>,
    size: usize,
    /// `CL_MEM_USE_HOST_PTR`'s pointer, or the imported memory's address.
    user_ptr: Option<usize>,
    state: Mutex<State>,
    /// Imported memory (then `user_ptr` is its address).
    imported: Option<Imported>,
    /// Remote memory (then `user_ptr` is its address): what keeps it mapped
    /// and usable, dropped after [`Store`]'s `drop` has evicted every
    /// device's residency of it (fields drop after `Drop::drop`).
    remote: Option<Box<dyn RemoteKeep>>,
    /// What its creator forbids on the memory.
    restrictions: Restrictions,
    /// Memory used only between an acquire and a release, on some devices.
    bracket: Option<Bracket>,
    /// The dma-bufs the store's host pages were exported as (a duplicate of
    /// each), whose fences other drivers' work attaches: see
    /// [`Store::wait_export_fences`].
    exports: Mutex<Vec<DmaBuf>>,
}

/// The memory a command works on at its location.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placed {
    /// The store's first byte there.
    pub base: HostAddr,
    /// The device whose engine moves bytes there (`None`: the CPU).
    pub local_device: Option<u16>,
}

impl Store {
    /// A store of `size` bytes; `user_ptr` for `CL_MEM_USE_HOST_PTR`.
    pub fn new(context: &Arc<Context>, size: usize, user_ptr: Option<usize>) -> Store {
        let state = State { defined: user_ptr.is_some(), pages_current: user_ptr.is_some(), ..State::default() };
        Store {
            context: context.clone(),
            size,
            user_ptr,
            state: Mutex::new(state),
            imported: None,
            remote: None,
            restrictions: Restrictions::default(),
            bracket: None,
            exports: Mutex::default(),
        }
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// True for remote memory (another device's BAR, [`Store::new_remote`]):
    /// I/O memory, which only the runtime's own copies reach (a compiled
    /// kernel's loads and stores on it are refused).
    pub(crate) fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// Keeps a duplicate of `dma_buf`, an export of the store's host pages,
    /// so that CPU accesses wait for the fences other drivers attach to it
    /// ([`wait_export_fences`](Self::wait_export_fences)).
    pub fn note_export(&self, dma_buf: &DmaBuf) -> ClResult<()> {
        let dup = dma_buf.try_clone().map_err(|e| {
            ClError::new(ClErrorKind::OutOfResources, format!("keeping a duplicate of the exported dma-buf: {e}"))
        })?;
        let mut exports = sync::lock(&self.exports);
        // An export nobody else holds any more (no fd in any process, no
        // importing driver or its pending job: only our duplicate's
        // reference is left) can get no new fences; keeping it would cost an
        // fd per export of a buffer exported again and again (once per
        // frame, say), so it goes. Where the kernel does not tell, it stays.
        exports.retain(|d| d.file_refs() != Some(1));
        exports.push(dup);
        Ok(())
    }

    /// Waits, through the thread's io_uring, for the fences other drivers
    /// attached to the dma-bufs the store was exported as (a GPU or an
    /// encoder that imported one and still writes or reads it: the writers'
    /// fences for a read, every user's for a write), before a CPU access of
    /// `dir`. Nothing to wait for without exports, or on kernels without
    /// `DMA_BUF_IOCTL_EXPORT_SYNC_FILE` (before 6.0). The error is a command
    /// status.
    pub fn wait_export_fences(&self, dir: Access) -> Result<(), i32> {
        let fences: Vec<_> = {
            let exports = sync::lock(&self.exports);
            exports.iter().filter_map(|d| d.export_sync_file(dir).ok()).collect()
        };
        for fence in &fences {
            crate::runtime::fence::wait_sync_file(fence, || false)?;
        }
        Ok(())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        sync::lock(&self.state)
    }

    /// The counters of `loc`.
    pub fn stats(&self, loc: Location) -> LocationStats {
        let st = self.lock();
        st.stats.iter().find(|(l, _)| *l == loc).map_or_else(LocationStats::default, |(_, s)| *s)
    }

    /// `Some(true)` if `device` has a linked allocation of the buffer,
    /// `Some(false)` if an unlinked one, `None` if none yet.
    pub fn linked(&self, device: &Device) -> Option<bool> {
        self.lock().device(device.index).map(|d| d.local.is_none())
    }

    /// Makes the data current at `at` (a location whose allocation exists),
    /// transferring it from where it is unless `discard` (the command
    /// overwrites the whole buffer). Runs inside a command; the error is the
    /// command's status.
    ///
    /// Remote memory whose function was lost fails here, with
    /// `CL_DEVICE_NOT_AVAILABLE` ([`check_remote`](Self::check_remote)):
    /// every command reaches the memory only after this call.
    pub fn make_current(&self, st: &mut State, at: Location, discard: bool) -> Result<(), i32> {
        self.check_remote()?;
        let local_here = match at {
            Location::Device(i) => st.device(i).and_then(|d| d.local.map(|p| (d.device.clone(), p))),
            Location::Host => None,
        };
        let current = match &local_here {
            None => st.pages_current,
            Some((d, _)) => st.local_current.contains(&d.index),
        };
        if !st.defined || discard || current {
            return Ok(());
        }
        if !st.pages_current {
            // The data is only in some device's local memory: read it into
            // the host pages (allocated now if no one needed them yet).
            // Between two unlinked devices, the host allocation is the
            // intermediary (created now if the host never used the buffer).
            let from = *st.local_current.first().expect("defined data is somewhere");
            let pages = match st.pages {
                Some((p, _)) => p,
                None => self.host_alloc_locked(st).map_err(|e| e.code())?,
            };
            let (dev, src) = {
                let d = st.device(from).expect("current local allocations exist");
                (d.device.clone(), d.local.expect("local"))
            };
            // SAFETY: `src` is the device's allocation and `pages` the host
            // pages, both `size` bytes, distinct memory; the store's lock
            // keeps every other command of this buffer out.
            unsafe { device_copy(&dev, pages as *mut u8, src as *const u8, self.size) }?;
            st.stats_mut(Location::Device(from)).bytes_out += self.size as u64;
            let into = if local_here.is_none() { at } else { Location::Host };
            st.stats_mut(into).bytes_in += self.size as u64;
            st.pages_current = true;
        }
        if let Some((dev, dst)) = local_here {
            // Current pages are the user's (USE_HOST_PTR, maybe not yet
            // recorded) or exist already: `pages` allocates nothing here.
            let pages = self.pages(st, Location::Host).map_err(|e| e.code())?;
            // SAFETY: as above, the other way.
            unsafe { device_copy(&dev, dst as *mut u8, pages as *const u8, self.size) }?;
            st.stats_mut(at).bytes_in += self.size as u64;
            st.local_current.push(dev.index);
        }
        Ok(())
    }

    /// Makes the data current in the host pages now, on the calling thread
    /// (for an export). The host allocation must exist.
    pub(crate) fn make_host_current(&self) -> ClResult<()> {
        let mut st = self.lock();
        self.make_current(&mut st, Location::Host, false).map_err(|c| {
            ClError::new(
                ClErrorKind::from_code(c).unwrap_or(ClErrorKind::OutOfResources),
                "moving a buffer's data into its host pages failed",
            )
        })
    }

    /// Records that a command wrote the buffer at `at`: that location alone
    /// is current.
    pub fn wrote(&self, st: &mut State, at: Location) {
        st.defined = true;
        let local = match at {
            Location::Device(i) => st.device(i).and_then(|d| d.local).map(|_| i),
            Location::Host => None,
        };
        st.local_current.clear();
        match local {
            Some(i) => {
                st.local_current.push(i);
                st.pages_current = false;
            }
            None => st.pages_current = true,
        }
    }

    /// Initialises the store from `src` (`CL_MEM_COPY_HOST_PTR`): the host
    /// allocation is made now, as the data must be kept.
    ///
    /// # Safety
    /// `src` must be valid for reads of the store's size.
    pub(crate) unsafe fn init_from(&self, src: *const u8) -> ClResult<()> {
        let mut st = self.lock();
        let p = self.host_alloc_locked(&mut st)?;
        // SAFETY: `p` is the store's fresh host pages (`size` bytes); the
        // caller guarantees `src`.
        unsafe { transfer::copy(p as *mut u8, src, self.size) };
        st.stats_mut(Location::Host).bytes_in += self.size as u64;
        self.wrote(&mut st, Location::Host);
        Ok(())
    }
}

impl Store {
    /// Gives back the host pages just allocated for `loc` (undoing a
    /// failed first allocation there).
    fn release_pages(&self, st: &mut State, loc: Location) {
        match st.pages {
            Some((p, PagesOwner::Heap)) => {
                if let Ok(heap) = self.context.buffer_heap() {
                    if let Err(e) = heap.free(HostAddr(p)) {
                        log::error!("freeing a buffer's host pages: {e}");
                    }
                }
                let s = st.stats_mut(loc);
                s.bytes_allocated = s.bytes_allocated.saturating_sub(self.size as u64);
                // Gone pages hold nothing current (callers only release them
                // when another copy is current, or none is defined).
                st.pages_current = false;
            }
            Some((_, PagesOwner::User)) | None => {}
        }
        st.pages = None;
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let st = sync::get_mut(&mut self.state);
        let pages = st.pages.map(|(p, _)| p);
        for d in st.devices.drain(..) {
            // A linked allocation on a device behind an IOMMU made the pages
            // resident there (`device_alloc_locked`).
            if let (None, Some(domain), Some(p)) = (d.local, d.device.dma_domain(), pages) {
                if let Err(e) = domain.evict(HostAddr(p)) {
                    log::error!("evicting a buffer's pages from {:?}'s IOMMU domain: {e}", d.device.name);
                }
            }
            if let (Some(p), Some(local)) = (d.local, d.device.local_memory()) {
                if let Err(e) = local.free(p as *const u8) {
                    log::error!("freeing a buffer's memory on {:?}: {e}", d.device.name);
                }
            }
        }
        if let Some((p, PagesOwner::Heap)) = st.pages.take() {
            if let Ok(heap) = self.context.buffer_heap() {
                if let Err(e) = heap.free(HostAddr(p)) {
                    log::error!("freeing a buffer's host pages: {e}");
                }
            }
        }
    }
}
