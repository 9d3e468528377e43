//! The memfd-backed heap behind host and shared allocations.
//!
//! Every allocation lives in the pages of one sparse memfd mapped as a
//! [`VaSpace`], so that any of them can be exported as a dma-buf (udmabuf over
//! the pages it spans) and pinned into an IOMMU domain, and any interior
//! pointer finds its allocation through the lock-free allocation table. Sizes up to
//! 1 MiB come from 2 MiB pool chunks of one power-of-two size class each (as
//! NEO serves small allocations); a chunk that empties is handed back to the
//! system (hole punched) unless it is the last one of its class with room.
//! Each class has one pool of chunks per shard, and a thread allocates from
//! its shard's pool (a free goes back to the pool of its chunk), so threads
//! that allocate and free do not contend for one lock.
//! Larger sizes take whole granules, handed back when freed.
//!
//! A dma-buf exported from an allocation may outlive it (udmabuf holds the
//! pages, not the allocation). So that no later allocation ever shows through
//! it, exported pages are never handed out again as they are: when the last
//! allocation in them is freed they are handed back to the system (hole
//! punched), which leaves the dma-buf with the old pages and the heap with
//! fresh ones; until then a pool page that an export maps takes no new
//! allocation (see [`Heap::export_dmabuf`]).
//!
//! One idea a file: the heap's types and its allocate, look up and free
//! paths here; `pool` (size-class chunks per shard, large granules, page
//! closing for exports), `export` (dma-bufs of allocations).

mod export;
mod pool;

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::table::{slot_meta, slot_size, slot_word, Record, Table, CHUNK, FREE, LARGE};
use super::vaspace::{ReserveError, VaSpace, GRANULE};
use crate::sync;
use crate::sys::addr::HostAddr;
use crate::sys::dma_buf::DmaBuf;
use crate::sys::udmabuf::{Udmabuf, UdmabufError};
use crate::sys::{page_size, OsError};
use pool::{Class, Granules, Large, Pool};

/// Smallest size class (and so the smallest alignment of any allocation).
pub const MIN_CLASS: usize = 64;
/// Largest pooled size; anything bigger gets its own memfd.
pub(crate) const MAX_POOLED: usize = 1 << 20;
const NUM_CLASSES: usize = (MAX_POOLED / MIN_CLASS).trailing_zeros() as usize + 1;
/// Pools per size class. A thread allocates from one of them (its shard,
/// [`shard`]) and a free goes to the pool of the chunk it is in, so threads
/// that allocate and free their own memory never take the same lock (and
/// write no shared cache line), however many use one size class.
pub(crate) const SHARDS: usize = 8;
/// Default reservation: 64 GiB of address space (no memory).
pub const DEFAULT_GRANULES: usize = 32 * 1024;

fn class_size(c: usize) -> usize {
    MIN_CLASS << c
}

/// The calling thread's shard (below [`SHARDS`]): threads get them in turn
/// as they first ask, so the first [`SHARDS`] threads of a process all
/// differ. A free finds the shard of its allocation instead
/// ([`Heap::shard_of`]), which spreads a context's free gate
/// ([`FreeGate`](crate::runtime::free_gate::FreeGate)).
pub(crate) fn shard() -> usize {
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.try_with(|s| *s).unwrap_or(0)
}

/// The USM allocation types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllocKind {
    /// Host allocation.
    Host,
    /// Device allocation.
    Device,
    /// Shared allocation.
    Shared,
    /// SVM allocation (`clSVMAlloc`); `flags` holds its SVM flags.
    Svm,
}

/// What the table remembers about an allocation besides its extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocMeta {
    /// Its type.
    pub kind: AllocKind,
    /// The device it is associated with (an index the runtime assigns).
    pub device: Option<u16>,
    /// `CL_MEM_ALLOC_FLAGS_INTEL` bits (the low 8 are all there are).
    pub flags: u8,
}

impl AllocMeta {
    /// A host allocation without flags.
    pub const HOST: AllocMeta = AllocMeta { kind: AllocKind::Host, device: None, flags: 0 };

    fn pack(self) -> u32 {
        let kind = match self.kind {
            AllocKind::Host => 1,
            AllocKind::Device => 2,
            AllocKind::Shared => 3,
            AllocKind::Svm => 4,
        };
        let dev = self.device.map_or(0, |d| 1 << 15 | d as u32 & 0x7fff);
        kind | (self.flags as u32) << 8 | dev << 16
    }

    fn unpack(w: u32) -> AllocMeta {
        let kind = match w & 0xff {
            1 => AllocKind::Host,
            2 => AllocKind::Device,
            3 => AllocKind::Shared,
            _ => AllocKind::Svm,
        };
        let device = (w >> 31 != 0).then_some(((w >> 16) & 0x7fff) as u16);
        AllocMeta { kind, device, flags: (w >> 8) as u8 }
    }
}

/// An allocation as the table sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocInfo {
    /// First byte.
    pub base: HostAddr,
    /// Size asked for.
    pub size: usize,
    /// Type, device, flags.
    pub meta: AllocMeta,
}

impl AllocInfo {
    /// True if `ptr` points into the allocation.
    ///
    /// No OpenCL function of its own: the interior-pointer rule of
    /// `clGetMemAllocInfoINTEL` (seed 000), where any byte of an allocation
    /// names it.
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::memory::heap::{AllocInfo, AllocMeta};
    /// let a = AllocInfo { base: HostAddr(0x1000), size: 100, meta: AllocMeta::HOST };
    /// assert!(a.contains(HostAddr(0x1000)) && a.contains(HostAddr(0x1000 + 99)));
    /// assert!(!a.contains(HostAddr(0x1000 + 100)) && !a.contains(HostAddr(0xfff)));
    /// ```
    pub fn contains(&self, ptr: HostAddr) -> bool {
        ptr.0.wrapping_sub(self.base.0) < self.size
    }
}

/// Why an allocation could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// Zero size.
    #[error("an allocation needs a non-zero size")]
    ZeroSize,
    /// Alignment that is not a power of two.
    #[error("alignment {0} is not a power of two")]
    BadAlignment(usize),
    /// The reservation has no room left (or the size is beyond it).
    #[error("no room for {size} bytes in the heap's {reserved}-byte address reservation")]
    OutOfAddressSpace {
        /// Size asked for.
        size: usize,
        /// Size of the reservation.
        reserved: usize,
    },
    /// The kernel refused memory (memfd, ftruncate or mmap).
    #[error("out of host memory: {0}")]
    Os(#[from] OsError),
}

/// Why a free was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FreeError {
    /// The pointer is not the start of a live allocation of this heap
    /// (never allocated here, already freed, or another heap's).
    #[error("{0:#x} is not an allocation of this heap (never allocated here, or already freed)")]
    Unknown(HostAddr),
    /// The pointer is inside an allocation, not at its start.
    #[error("{ptr:#x} points inside the allocation at {base:#x}: free takes the pointer the allocation returned")]
    Interior {
        /// Pointer given.
        ptr: HostAddr,
        /// The allocation's start.
        base: HostAddr,
    },
}

/// Why an allocation could not be exported as a dma-buf.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The pointer is not in a live allocation.
    #[error("{0:#x} is not inside an allocation of this heap")]
    Unknown(HostAddr),
    /// udmabuf refused.
    #[error(transparent)]
    Udmabuf(#[from] UdmabufError),
}

/// Counters, for tests and `dmabridge info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeapStats {
    /// Live allocations.
    pub live: usize,
    /// Pool chunks in use (2 MiB of address space each).
    pub chunks: usize,
    /// Large allocations.
    pub large: usize,
    /// Bytes of memory the heap holds (touched pages not handed back).
    pub resident_bytes: u64,
}

/// A heap of memfd-backed allocations with lock-free interior lookups.
pub struct Heap {
    va: VaSpace,
    table: Table,
    /// The system's page size (what a dma-buf maps, and what is handed back).
    page: usize,
    granules: Mutex<Granules>,
    /// The pools: size class `c` of shard `s` at `c * SHARDS + s` (see
    /// [`Heap::pool`]).
    classes: Box<[Pool]>,
    large: Mutex<BTreeMap<usize, Large>>,
    /// Run when the heap drops, before its memory is unmapped; by key.
    drop_hooks: Mutex<Vec<(usize, DropHook)>>,
}

/// Called with the heap's reservation (start, length) when the heap drops.
pub type DropHook = Box<dyn FnOnce(HostAddr, usize) + Send + Sync>;

impl std::fmt::Debug for Heap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heap")
            .field("base", &format_args!("{:#x}", self.va.base()))
            .field("len", &self.va.len())
            .finish()
    }
}

impl Heap {
    /// A heap with the default 64 GiB reservation.
    ///
    /// No OpenCL function of its own: each context has one
    /// (`clCreateContext`), and its USM and SVM allocations live in it.
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::memory::heap::{AllocMeta, Heap, DEFAULT_GRANULES};
    /// use dmabridge::memory::vaspace::GRANULE;
    /// let heap = Heap::new()?;
    /// assert_eq!(heap.stats().live, 0);
    /// let p = heap.alloc(64, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// assert!(heap.owns_range(HostAddr(p)));
    /// assert_eq!(DEFAULT_GRANULES * GRANULE, 64 << 30);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Result<Heap, ReserveError> {
        Self::with_granules(DEFAULT_GRANULES)
    }

    /// A heap whose reservation holds `granules` × 2 MiB. A count of 0 or
    /// above [`MAX_GRANULES`](super::vaspace::MAX_GRANULES) (1 TiB) is
    /// refused before anything is reserved or allocated.
    ///
    /// No OpenCL function of its own: a smaller heap than a context's, for
    /// tests and benchmarks.
    ///
    /// ```
    /// use dmabridge::memory::heap::{AllocError, AllocMeta, Heap};
    /// use dmabridge::memory::vaspace::ReserveError;
    /// let heap = Heap::with_granules(2)?;
    /// let e = heap.alloc(8 << 20, 0, AllocMeta::HOST).unwrap_err();
    /// assert!(matches!(e, AllocError::OutOfAddressSpace { reserved, .. } if reserved == 4 << 20));
    /// assert!(matches!(Heap::with_granules(1 << 43), Err(ReserveError::Granules { .. })));
    /// assert!(matches!(Heap::with_granules(0), Err(ReserveError::Granules { .. })));
    /// # Ok::<(), ReserveError>(())
    /// ```
    pub fn with_granules(granules: usize) -> Result<Heap, ReserveError> {
        let va = VaSpace::reserve(granules)?;
        Ok(Heap {
            table: Table::new(granules),
            page: page_size(),
            granules: Mutex::new(Granules { free: BTreeMap::from([(0, granules)]) }),
            classes: (0..NUM_CLASSES * SHARDS).map(|_| Pool(Mutex::new(Class::default()))).collect(),
            large: Mutex::new(BTreeMap::new()),
            drop_hooks: Mutex::new(Vec::new()),
            va,
        })
    }

    /// Runs `hook(start, len)` of the heap's address reservation when the
    /// heap drops, before its memory is unmapped, unless a hook with the same
    /// `key` is already registered (then `hook` is dropped unused). Used to
    /// unpin allocations that are still resident in an IOMMU domain when a
    /// context goes away with live allocations.
    ///
    /// No OpenCL function of its own: the part of `clReleaseContext` that
    /// unpins a context's still-resident USM from an IOMMU domain.
    ///
    /// ```
    /// use std::sync::{atomic::{AtomicUsize, Ordering}, Arc};
    /// use dmabridge::memory::heap::Heap;
    /// let calls = Arc::new(AtomicUsize::new(0));
    /// let heap = Heap::with_granules(4)?;
    /// for _ in 0..2 {
    ///     let c = calls.clone();
    ///     heap.on_drop(7, Box::new(move |_, len| { c.fetch_add(len, Ordering::SeqCst); }));
    /// }
    /// drop(heap);
    /// assert_eq!(calls.load(Ordering::SeqCst), 4 << 21, "once, with the whole reservation");
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn on_drop(&self, key: usize, hook: DropHook) {
        let mut hooks = sync::lock(&self.drop_hooks);
        if !hooks.iter().any(|(k, _)| *k == key) {
            hooks.push((key, hook));
        }
    }

    /// Every live allocation, in no particular order (a snapshot: allocations
    /// made or freed meanwhile may or may not be in it). Walks the pool
    /// chunks' slot words and the large allocations, under each class's lock
    /// in turn; lookups are never blocked. `f` must not allocate or free in
    /// this heap (it runs under those locks).
    ///
    /// Serves `clSetKernelExecInfo`'s `CL_KERNEL_EXEC_INFO_INDIRECT_*_ACCESS_INTEL`
    /// (seed 000): a kernel launched with them reaches every live allocation
    /// of those types.
    ///
    /// ```
    /// use dmabridge::memory::heap::{AllocKind, AllocMeta, Heap};
    /// let heap = Heap::with_granules(8)?;
    /// let dev = AllocMeta { kind: AllocKind::Device, device: Some(1), flags: 0 };
    /// let a = heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    /// let b = heap.alloc(3 << 20, 0, dev).unwrap().as_ptr() as usize;
    /// let mut devices = Vec::new();
    /// heap.for_each_allocation(|i| if i.meta.kind == AllocKind::Device { devices.push(i.base.0) });
    /// assert_eq!(devices, [b]);
    /// # let _ = a;
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn for_each_allocation(&self, mut f: impl FnMut(&AllocInfo)) {
        for (pool, cls) in self.classes.iter().enumerate() {
            let csize = class_size(pool / SHARDS);
            let cls = sync::lock(&cls.0);
            for chunk in cls.chunks.iter().flatten() {
                let Some(rec) = self.table.record(chunk.start) else { continue };
                let base = self.va.granule_addr(chunk.start);
                for (slot, word) in self.table.slots(rec).iter().take(chunk.bump as usize).enumerate() {
                    let word = word.load(Ordering::Acquire);
                    if slot_size(word) != 0 {
                        f(&AllocInfo {
                            base: base + slot * csize,
                            size: slot_size(word),
                            meta: AllocMeta::unpack(slot_meta(word)),
                        });
                    }
                }
            }
        }
        let large = sync::lock(&self.large);
        for &start in large.keys() {
            if let Some(rec) = self.table.record(start) {
                f(&AllocInfo {
                    base: self.va.granule_addr(start),
                    size: rec.size.load(Ordering::Acquire),
                    meta: AllocMeta::unpack(rec.meta.load(Ordering::Acquire)),
                });
            }
        }
    }

    /// True if `ptr` lies in this heap's reservation (allocated or not).
    ///
    /// No OpenCL function of its own: tells the context's memory from the
    /// application's and from a device's local memory, e.g. before a
    /// lookup.
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::memory::heap::{AllocMeta, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    /// assert!(heap.owns_range(HostAddr(p)));
    /// heap.free(HostAddr(p)).unwrap();
    /// assert!(heap.owns_range(HostAddr(p)), "freed, but still the heap's address");
    /// let mine = [0u8; 8];
    /// assert!(!heap.owns_range(HostAddr(mine.as_ptr() as usize)));
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn owns_range(&self, ptr: HostAddr) -> bool {
        self.va.granule_of(ptr).is_some()
    }

    /// Allocates `size` bytes aligned to `align` (0: the heap's minimum, 64).
    ///
    /// Serves `clHostMemAllocINTEL`, `clSharedMemAllocINTEL` and (on
    /// host-unified devices) `clDeviceMemAllocINTEL` of seed 000, and
    /// `clSVMAlloc` of seed 001: `meta` says which.
    ///
    /// ```
    /// use dmabridge::memory::heap::{AllocError, AllocKind, AllocMeta, Heap, MIN_CLASS};
    /// let heap = Heap::with_granules(4)?;
    /// let shared = AllocMeta { kind: AllocKind::Shared, device: Some(0), flags: 0 };
    /// let p = heap.alloc(1000, 256, shared)?;
    /// assert_eq!(p.as_ptr() as usize % 256, 0);
    /// assert_eq!(heap.alloc(1, 0, AllocMeta::HOST)?.as_ptr() as usize % MIN_CLASS, 0);
    /// assert_eq!(heap.alloc(0, 0, AllocMeta::HOST), Err(AllocError::ZeroSize));
    /// assert_eq!(heap.alloc(8, 24, AllocMeta::HOST), Err(AllocError::BadAlignment(24)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn alloc(&self, size: usize, align: usize, meta: AllocMeta) -> Result<NonNull<u8>, AllocError> {
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        if align != 0 && !align.is_power_of_two() {
            return Err(AllocError::BadAlignment(align));
        }
        let need = size.max(align).max(MIN_CLASS);
        let addr = if need <= MAX_POOLED {
            let c = need.next_power_of_two().trailing_zeros() as usize - MIN_CLASS.trailing_zeros() as usize;
            self.alloc_pooled(c, size, meta)?
        } else {
            self.alloc_large(size, align, meta)?
        };
        Ok(NonNull::new(addr as *mut u8).expect("reservation addresses are non-null"))
    }

    /// The allocation that `ptr` points into, if any. Lock-free: a few
    /// atomic loads.
    ///
    /// Serves `clGetMemAllocInfoINTEL` (seed 000), and every USM and SVM
    /// command that takes a pointer into an allocation.
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::memory::heap::{AllocInfo, AllocMeta, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(1000, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// assert_eq!(heap.lookup(HostAddr(p + 999)), Some(AllocInfo { base: HostAddr(p), size: 1000, meta: AllocMeta::HOST }));
    /// assert_eq!(heap.lookup(HostAddr(p + 1000)), None, "past its end");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup(&self, ptr: HostAddr) -> Option<AllocInfo> {
        let g = self.va.granule_of(ptr)?;
        let start = self.table.start_of(g)?;
        let rec = self.table.record(start)?;
        let base = self.va.granule_addr(start);
        match rec.kind.load(Ordering::Acquire) {
            CHUNK => {
                let csize = class_size(rec.class.load(Ordering::Acquire) as usize);
                let slot = (ptr - base) / csize;
                let word = self.table.slots(rec).get(slot)?.load(Ordering::Acquire);
                let info = AllocInfo {
                    base: base + slot * csize,
                    size: slot_size(word),
                    meta: AllocMeta::unpack(slot_meta(word)),
                };
                (info.size != 0 && info.contains(ptr)).then_some(info)
            }
            LARGE => {
                let info = AllocInfo {
                    base,
                    size: rec.size.load(Ordering::Acquire),
                    meta: AllocMeta::unpack(rec.meta.load(Ordering::Acquire)),
                };
                info.contains(ptr).then_some(info)
            }
            _ => None,
        }
    }

    /// Frees the allocation that starts at `ptr`; returns what it was.
    /// Interior pointers, unknown pointers and double frees are refused and
    /// change nothing.
    ///
    /// Serves `clMemFreeINTEL` / `clMemBlockingFreeINTEL` (seed 000) and
    /// `clSVMFree` (seed 001).
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::memory::heap::{AllocMeta, FreeError, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(1000, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// assert_eq!(heap.free(HostAddr(p + 8)), Err(FreeError::Interior { ptr: HostAddr(p + 8), base: HostAddr(p) }));
    /// assert_eq!(heap.free(HostAddr(p))?.size, 1000);
    /// assert!(heap.free(HostAddr(p)).is_err(), "double free");
    /// assert_eq!(heap.lookup(HostAddr(p)), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn free(&self, ptr: HostAddr) -> Result<AllocInfo, FreeError> {
        let g = self.va.granule_of(ptr);
        let info = self.lookup(ptr).ok_or(FreeError::Unknown(ptr))?;
        if info.base != ptr {
            return Err(FreeError::Interior { ptr, base: info.base });
        }
        let g = g.ok_or(FreeError::Unknown(ptr))?;
        let start = self.table.start_of(g).ok_or(FreeError::Unknown(ptr))?;
        let rec = self.table.record(start).ok_or(FreeError::Unknown(ptr))?;
        if rec.kind.load(Ordering::Acquire) == CHUNK {
            self.free_pooled(ptr, start)
        } else {
            self.free_large(ptr, start)
        }
    }

    /// The shard of the pool the allocation at `ptr` came from (the
    /// allocating thread's, [`shard`]); for a large allocation, or a
    /// pointer that is none of this heap's, one taken from the address.
    /// Lock-free, and reads no thread-local: what spreads the frees of a
    /// context over its free gate.
    pub(crate) fn shard_of(&self, ptr: HostAddr) -> usize {
        let g = self.va.granule_of(ptr);
        let rec = g.and_then(|g| self.table.start_of(g)).and_then(|start| self.table.record(start));
        match rec {
            Some(rec) if rec.kind.load(Ordering::Acquire) == CHUNK => {
                rec.shard.load(Ordering::Relaxed) as usize % SHARDS
            }
            _ => ptr.0 / GRANULE % SHARDS,
        }
    }

    /// Gives every empty pool chunk back to the system.
    ///
    /// No OpenCL function of its own: returns the memory the pools keep for
    /// reuse (e.g. when the application frees everything).
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::memory::heap::{AllocMeta, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(100, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// heap.free(HostAddr(p))?;
    /// assert_eq!(heap.stats().chunks, 1, "the last chunk of a class is kept");
    /// heap.trim();
    /// assert_eq!(heap.stats().chunks, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trim(&self) {
        for cls in self.classes.iter() {
            let mut cls = sync::lock(&cls.0);
            let empty: Vec<usize> = cls
                .chunks
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.as_ref().filter(|c| c.live == 0).map(|_| i))
                .collect();
            for ci in empty {
                self.release_chunk(&mut cls, ci);
            }
        }
    }

    /// Counters.
    ///
    /// No OpenCL function of its own: for `dmabridge info` and tests.
    ///
    /// ```
    /// use dmabridge::memory::heap::{AllocMeta, Heap};
    /// let heap = Heap::with_granules(8)?;
    /// let small = heap.alloc(100, 0, AllocMeta::HOST)?.as_ptr();
    /// let large = heap.alloc(3 << 20, 0, AllocMeta::HOST)?.as_ptr();
    /// // SAFETY: `large` is a live 3 MiB allocation, and nothing else refers to it.
    /// unsafe { large.write_bytes(1, 3 << 20) };
    /// let s = heap.stats();
    /// assert_eq!((s.live, s.chunks, s.large), (2, 1, 1));
    /// assert!(s.resident_bytes >= 3 << 20, "the pages written are held");
    /// # let _ = small;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> HeapStats {
        let mut s = HeapStats::default();
        for cls in self.classes.iter() {
            let cls = sync::lock(&cls.0);
            for c in cls.chunks.iter().flatten() {
                s.chunks += 1;
                s.live += c.live as usize;
            }
        }
        let large = sync::lock(&self.large);
        s.large = large.len();
        s.live += large.len();
        s.resident_bytes = self.va.resident_bytes().unwrap_or(0);
        s
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        let (start, len) = (self.va.base(), self.va.len());
        for (_, hook) in std::mem::take(sync::get_mut(&mut self.drop_hooks)) {
            hook(start, len);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
