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

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::table::{slot_meta, slot_size, slot_word, Record, Table, CHUNK, FREE, LARGE};
use super::vaspace::{ReserveError, VaSpace, GRANULE};
use crate::sys::dma_buf::DmaBuf;
use crate::sys::udmabuf::{Udmabuf, UdmabufError};
use crate::sys::{page_size, OsError};

/// Smallest size class (and so the smallest alignment of any allocation).
pub const MIN_CLASS: usize = 64;
/// Largest pooled size; anything bigger gets its own memfd.
pub const MAX_POOLED: usize = 1 << 20;
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
    pub base: usize,
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
    /// use dmabridge::memory::heap::{AllocInfo, AllocMeta};
    /// let a = AllocInfo { base: 0x1000, size: 100, meta: AllocMeta::HOST };
    /// assert!(a.contains(0x1000) && a.contains(0x1000 + 99));
    /// assert!(!a.contains(0x1000 + 100) && !a.contains(0xfff));
    /// ```
    pub fn contains(&self, ptr: usize) -> bool {
        ptr.wrapping_sub(self.base) < self.size
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
    Unknown(usize),
    /// The pointer is inside an allocation, not at its start.
    #[error("{ptr:#x} points inside the allocation at {base:#x}: free takes the pointer the allocation returned")]
    Interior {
        /// Pointer given.
        ptr: usize,
        /// The allocation's start.
        base: usize,
    },
}

/// Why an allocation could not be exported as a dma-buf.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The pointer is not in a live allocation.
    #[error("{0:#x} is not inside an allocation of this heap")]
    Unknown(usize),
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

struct Chunk {
    start: usize,
    /// Slots never handed out start at `bump`.
    bump: u32,
    free: Vec<u32>,
    live: u32,
    /// Pages (indices from the chunk's start) that an exported dma-buf maps:
    /// closed to new allocations until no allocation is left in them and
    /// they have been handed back to the system.
    exported: BTreeSet<u32>,
    /// Slots in exported pages that are not allocated (freed, or skipped
    /// when the page was closed): free again once their pages are handed back.
    held: Vec<u32>,
}

impl Chunk {
    fn new(start: usize) -> Chunk {
        Chunk { start, bump: 0, free: Vec::new(), live: 0, exported: BTreeSet::new(), held: Vec::new() }
    }

    /// True if a slot can be handed out.
    fn has_room(&self, nslots: u32) -> bool {
        !self.free.is_empty() || self.bump < nslots
    }

    /// True if any page in `pages` is exported.
    fn touches_exported(&self, pages: Range<u32>) -> bool {
        !self.exported.is_empty() && self.exported.range(pages).next().is_some()
    }
}

/// The pages (indices from a chunk's start, `page` bytes each) that slot
/// `slot` of a `csize`-byte class spans.
fn slot_pages(csize: usize, slot: u32, page: usize) -> Range<u32> {
    let start = slot as usize * csize;
    (start / page) as u32..(start + csize).div_ceil(page) as u32
}

/// The slots of a `csize`-byte class (of `nslots`) that page `p` holds part of.
fn page_slots(csize: usize, p: u32, page: usize, nslots: u32) -> Range<u32> {
    let start = p as usize * page;
    (start / csize) as u32..((start + page).div_ceil(csize) as u32).min(nslots)
}

#[derive(Default)]
struct Class {
    /// Index = the record's `class_slot`; `None` where a chunk was released.
    chunks: Vec<Option<Chunk>>,
    /// Indices of chunks with a free slot.
    with_room: Vec<u32>,
    vacant: Vec<u32>,
}

/// One pool's lock and state, on cache lines of its own: the pools of one
/// class for neighbouring shards lie side by side, and threads of those
/// shards write them at once.
#[repr(align(128))]
struct Pool(Mutex<Class>);

struct Large {
    granules: usize,
    /// A dma-buf was exported from it: its granules are reused only once
    /// their pages have been handed back (fresh pages for the next user).
    exported: bool,
}

/// Free runs of granules, start -> length.
struct Granules {
    free: BTreeMap<usize, usize>,
}

impl Granules {
    /// Takes `n` granules whose first one's address (`offset` granules in)
    /// is a multiple of `align` granules.
    fn take(&mut self, n: usize, align: usize, offset: usize) -> Option<usize> {
        let (&start, &len, at) = self.free.iter().find_map(|(s, l)| {
            let at = s.checked_add(offset)?.checked_next_multiple_of(align)?.checked_sub(offset)?;
            (at.checked_add(n)? <= s + l).then_some((s, l, at))
        })?;
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        if at + n < start + len {
            self.free.insert(at + n, start + len - at - n);
        }
        Some(at)
    }

    fn give(&mut self, start: usize, n: usize) {
        let (mut s, mut e) = (start, start + n);
        if let Some((&ps, &pl)) = self.free.range(..s).next_back() {
            if ps + pl == s {
                self.free.remove(&ps);
                s = ps;
            }
        }
        if let Some(&nl) = self.free.get(&e) {
            self.free.remove(&e);
            e += nl;
        }
        self.free.insert(s, e - s);
    }
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
pub type DropHook = Box<dyn FnOnce(usize, usize) + Send + Sync>;

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
    /// use dmabridge::memory::heap::{AllocMeta, Heap, DEFAULT_GRANULES};
    /// use dmabridge::memory::vaspace::GRANULE;
    /// let heap = Heap::new()?;
    /// assert_eq!(heap.stats().live, 0);
    /// let p = heap.alloc(64, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// assert!(heap.owns_range(p));
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
        let mut hooks = self.drop_hooks.lock().unwrap();
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
    /// heap.for_each_allocation(|i| if i.meta.kind == AllocKind::Device { devices.push(i.base) });
    /// assert_eq!(devices, [b]);
    /// # let _ = a;
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn for_each_allocation(&self, mut f: impl FnMut(&AllocInfo)) {
        for (pool, cls) in self.classes.iter().enumerate() {
            let csize = class_size(pool / SHARDS);
            let cls = cls.0.lock().unwrap();
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
        let large = self.large.lock().unwrap();
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
    /// use dmabridge::memory::heap::{AllocMeta, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    /// assert!(heap.owns_range(p));
    /// heap.free(p).unwrap();
    /// assert!(heap.owns_range(p), "freed, but still the heap's address");
    /// let mine = [0u8; 8];
    /// assert!(!heap.owns_range(mine.as_ptr() as usize));
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn owns_range(&self, ptr: usize) -> bool {
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

    /// The pool of size class `c` in shard `s`.
    fn pool(&self, c: usize, s: usize) -> &Mutex<Class> {
        &self.classes[c * SHARDS + s].0
    }

    fn alloc_pooled(&self, c: usize, size: usize, meta: AllocMeta) -> Result<usize, AllocError> {
        let csize = class_size(c);
        let s = shard();
        let mut cls = self.pool(c, s).lock().unwrap();
        let ci = match cls.with_room.last() {
            Some(&i) => i as usize,
            None => self.new_chunk(c, s, &mut cls, size)?,
        };
        let nslots = (GRANULE / csize) as u32;
        let chunk = cls.chunks[ci].as_mut().expect("chunks with room exist");
        let slot = match chunk.free.pop() {
            Some(s) => s,
            None => {
                chunk.bump += 1;
                chunk.bump - 1
            }
        };
        chunk.live += 1;
        let start = chunk.start;
        if !chunk.has_room(nslots) {
            cls.with_room.pop();
        }
        let rec = self.table.record(start).expect("chunk records exist");
        self.table.slots(rec)[slot as usize].store(slot_word(size, meta.pack()), Ordering::Release);
        Ok(self.va.granule_addr(start) + slot as usize * csize)
    }

    fn new_chunk(&self, c: usize, s: usize, cls: &mut Class, size: usize) -> Result<usize, AllocError> {
        let start = self
            .granules
            .lock()
            .unwrap()
            .take(1, 1, 0)
            .ok_or(AllocError::OutOfAddressSpace { size, reserved: self.va.len() })?;
        let ci = match cls.vacant.pop() {
            Some(i) => i as usize,
            None => {
                cls.chunks.push(None);
                cls.chunks.len() - 1
            }
        };
        cls.chunks[ci] = Some(Chunk::new(start));
        cls.with_room.push(ci as u32);
        let rec = self.table.record_mut(start);
        self.table.set_slots(rec, GRANULE / class_size(c));
        rec.class.store(c as u8, Ordering::Relaxed);
        rec.shard.store(s as u8, Ordering::Relaxed);
        rec.class_slot.store(ci as u32, Ordering::Relaxed);
        rec.kind.store(CHUNK, Ordering::Release);
        self.table.cover(start, 1);
        Ok(ci)
    }

    fn alloc_large(&self, size: usize, align: usize, meta: AllocMeta) -> Result<usize, AllocError> {
        let n = size.div_ceil(GRANULE);
        let align_g = (align / GRANULE).max(1);
        let oom = AllocError::OutOfAddressSpace { size, reserved: self.va.len() };
        if n > self.va.granules() {
            return Err(oom);
        }
        let base_g = self.va.base() / GRANULE;
        let mut large = self.large.lock().unwrap();
        let start = self.granules.lock().unwrap().take(n, align_g, base_g).ok_or(oom)?;
        large.insert(start, Large { granules: n, exported: false });
        let rec = self.table.record_mut(start);
        rec.size.store(size, Ordering::Relaxed);
        rec.meta.store(meta.pack(), Ordering::Relaxed);
        rec.kind.store(LARGE, Ordering::Release);
        self.table.cover(start, n);
        Ok(self.va.granule_addr(start))
    }

    /// The allocation that `ptr` points into, if any. Lock-free: a few
    /// atomic loads.
    ///
    /// Serves `clGetMemAllocInfoINTEL` (seed 000), and every USM and SVM
    /// command that takes a pointer into an allocation.
    ///
    /// ```
    /// use dmabridge::memory::heap::{AllocInfo, AllocMeta, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(1000, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// assert_eq!(heap.lookup(p + 999), Some(AllocInfo { base: p, size: 1000, meta: AllocMeta::HOST }));
    /// assert_eq!(heap.lookup(p + 1000), None, "past its end");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup(&self, ptr: usize) -> Option<AllocInfo> {
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
    /// use dmabridge::memory::heap::{AllocMeta, FreeError, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(1000, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// assert_eq!(heap.free(p + 8), Err(FreeError::Interior { ptr: p + 8, base: p }));
    /// assert_eq!(heap.free(p)?.size, 1000);
    /// assert!(heap.free(p).is_err(), "double free");
    /// assert_eq!(heap.lookup(p), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn free(&self, ptr: usize) -> Result<AllocInfo, FreeError> {
        let info = self.lookup(ptr).ok_or(FreeError::Unknown(ptr))?;
        if info.base != ptr {
            return Err(FreeError::Interior { ptr, base: info.base });
        }
        let g = self.va.granule_of(ptr).ok_or(FreeError::Unknown(ptr))?;
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
    pub(crate) fn shard_of(&self, ptr: usize) -> usize {
        let g = self.va.granule_of(ptr);
        let rec = g.and_then(|g| self.table.start_of(g)).and_then(|start| self.table.record(start));
        match rec {
            Some(rec) if rec.kind.load(Ordering::Acquire) == CHUNK => {
                rec.shard.load(Ordering::Relaxed) as usize % SHARDS
            }
            _ => ptr / GRANULE % SHARDS,
        }
    }

    /// True if `rec` is a chunk of the pool of class `c` in shard `s`
    /// (checked under that pool's lock, which every change of it takes).
    fn is_chunk_of(&self, rec: &Record, c: usize, s: usize) -> bool {
        rec.kind.load(Ordering::Acquire) == CHUNK
            && rec.class.load(Ordering::Acquire) as usize == c
            && rec.shard.load(Ordering::Acquire) as usize == s
    }

    fn free_pooled(&self, ptr: usize, start: usize) -> Result<AllocInfo, FreeError> {
        let rec = self.table.record(start).ok_or(FreeError::Unknown(ptr))?;
        let (c, s) = (rec.class.load(Ordering::Acquire) as usize, rec.shard.load(Ordering::Acquire) as usize);
        let mut cls = self.pool(c, s).lock().unwrap();
        // Re-check under the lock: the chunk may have changed hands since
        // the lock-free lookup (only by a racing free of the same pointer).
        if !self.is_chunk_of(rec, c, s) {
            return Err(FreeError::Unknown(ptr));
        }
        let csize = class_size(c);
        let base = self.va.granule_addr(start);
        let slot = (ptr - base) / csize;
        let word = self.table.slots(rec)[slot].swap(0, Ordering::AcqRel);
        if slot_size(word) == 0 {
            return Err(FreeError::Unknown(ptr));
        }
        let info = AllocInfo { base: ptr, size: slot_size(word), meta: AllocMeta::unpack(slot_meta(word)) };
        let ci = rec.class_slot.load(Ordering::Relaxed) as usize;
        let nslots = (GRANULE / csize) as u32;
        let chunk = cls.chunks[ci].as_mut().expect("a live chunk has state");
        let had_room = chunk.has_room(nslots);
        chunk.live -= 1;
        let pages = slot_pages(csize, slot as u32, self.page);
        if chunk.touches_exported(pages.clone()) {
            // A dma-buf may still map the slot's pages: they go back to the
            // system (detached from the dma-buf) before the slot is reused.
            chunk.held.push(slot as u32);
            self.reopen_pages(rec, chunk, csize, pages);
        } else {
            chunk.free.push(slot as u32);
        }
        let empty = chunk.live == 0;
        let has_room = chunk.has_room(nslots);
        if has_room && !had_room {
            cls.with_room.push(ci as u32);
        }
        // Give an empty chunk back unless it is the class's only one with
        // room (or has none: its slots are held by exports).
        if empty && (cls.with_room.len() > 1 || !has_room) {
            self.release_chunk(&mut cls, ci);
        }
        Ok(info)
    }

    /// Hands back to the system the exported pages among `pages` that no
    /// allocation uses any more, and frees the held slots that lay only in
    /// such pages. The pages of a dma-buf stay with it: the heap gets fresh
    /// (zero) pages at the same offsets of its memfd. A page that cannot be
    /// handed back stays closed (its slots are never reused).
    fn reopen_pages(&self, rec: &Record, chunk: &mut Chunk, csize: usize, pages: Range<u32>) {
        let page = self.page;
        let nslots = (GRANULE / csize) as u32;
        let words = self.table.slots(rec);
        let idle = |p: u32| page_slots(csize, p, page, nslots).all(|s| words[s as usize].load(Ordering::Acquire) == 0);
        let mut done: Vec<u32> = Vec::new();
        for p in pages {
            if chunk.exported.contains(&p) && idle(p) {
                done.push(p);
            }
        }
        // One punch per run of adjacent pages.
        let mut reopened = false;
        for run in done.chunk_by(|a, b| a + 1 == *b) {
            let (first, n) = (run[0] as usize, run.len());
            match self.va.punch(chunk.start * GRANULE + first * page, n * page) {
                Ok(()) => {
                    for p in run {
                        chunk.exported.remove(p);
                    }
                    reopened = true;
                }
                Err(e) => log::warn!(
                    "handing back {n} exported page(s) of the heap failed ({e}): they stay out of use, so that no \
                     later allocation shows through a dma-buf that may still map them"
                ),
            }
        }
        if reopened {
            let exported = &chunk.exported;
            let (back, still): (Vec<u32>, Vec<u32>) =
                chunk.held.iter().partition(|&&s| exported.range(slot_pages(csize, s, page)).next().is_none());
            chunk.held = still;
            chunk.free.extend(back);
        }
    }

    /// Takes the non-allocated slots of the chunk's pages in `bytes` (offsets
    /// from the chunk's start) out of use, and marks the pages exported: no
    /// later allocation may land in pages that a dma-buf maps.
    fn close_pages(&self, cls: &mut Class, ci: usize, csize: usize, bytes: Range<usize>) {
        let page = self.page;
        let nslots = (GRANULE / csize) as u32;
        let chunk = cls.chunks[ci].as_mut().expect("a live chunk has state");
        let had_room = chunk.has_room(nslots);
        for p in (bytes.start / page) as u32..bytes.end.div_ceil(page) as u32 {
            if !chunk.exported.insert(p) {
                continue;
            }
            let slots = page_slots(csize, p, page, nslots);
            if chunk.bump < slots.end {
                // Never handed out: those before the page stay free, those in
                // it are held, and the bump pointer moves past the page.
                chunk.free.extend(chunk.bump..slots.start.max(chunk.bump));
                chunk.held.extend(slots.start.max(chunk.bump)..slots.end);
                chunk.bump = slots.end;
            }
            let (inside, outside): (Vec<u32>, Vec<u32>) = chunk.free.iter().partition(|s| slots.contains(s));
            chunk.free = outside;
            chunk.held.extend(inside);
        }
        if had_room && !chunk.has_room(nslots) {
            cls.with_room.retain(|&i| i as usize != ci);
        }
    }

    fn release_chunk(&self, cls: &mut Class, ci: usize) {
        let chunk = cls.chunks[ci].take().expect("released once");
        cls.with_room.retain(|&i| i as usize != ci);
        cls.vacant.push(ci as u32);
        let rec = self.table.record(chunk.start).expect("chunk records exist");
        self.table.uncover(chunk.start, 1);
        rec.kind.store(FREE, Ordering::Release);
        // A failed punch only costs memory until the range is reused —
        // unless a dma-buf may still map some of its pages: then the range
        // is never reused.
        if let Err(e) = self.va.punch(chunk.start * GRANULE, GRANULE) {
            if !chunk.exported.is_empty() {
                log::warn!(
                    "handing back an emptied pool chunk with exported pages failed ({e}): its range stays unused"
                );
                return;
            }
        }
        self.granules.lock().unwrap().give(chunk.start, 1);
    }

    fn free_large(&self, ptr: usize, start: usize) -> Result<AllocInfo, FreeError> {
        let mut large = self.large.lock().unwrap();
        let rec = self.table.record(start).ok_or(FreeError::Unknown(ptr))?;
        if rec.kind.load(Ordering::Acquire) != LARGE || !large.contains_key(&start) {
            return Err(FreeError::Unknown(ptr));
        }
        let info = AllocInfo {
            base: ptr,
            size: rec.size.load(Ordering::Acquire),
            meta: AllocMeta::unpack(rec.meta.load(Ordering::Acquire)),
        };
        let l = large.remove(&start).expect("checked above");
        self.table.uncover(start, l.granules);
        rec.kind.store(FREE, Ordering::Release);
        // The punch also detaches the pages from any dma-buf exported from
        // the allocation: the next user of the range gets fresh pages.
        let punched = self.va.punch(start * GRANULE, l.granules * GRANULE);
        drop(large);
        if let (Err(e), true) = (punched, l.exported) {
            log::warn!("handing back a freed, exported allocation's pages failed ({e}): its range stays unused");
            return Ok(info);
        }
        self.granules.lock().unwrap().give(start, l.granules);
        Ok(info)
    }

    /// Gives every empty pool chunk back to the system.
    ///
    /// No OpenCL function of its own: returns the memory the pools keep for
    /// reuse (e.g. when the application frees everything).
    ///
    /// ```
    /// use dmabridge::memory::heap::{AllocMeta, Heap};
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(100, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// heap.free(p)?;
    /// assert_eq!(heap.stats().chunks, 1, "the last chunk of a class is kept");
    /// heap.trim();
    /// assert_eq!(heap.stats().chunks, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trim(&self) {
        for cls in self.classes.iter() {
            let mut cls = cls.0.lock().unwrap();
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
    /// use dmabridge::memory::heap::{AllocMeta, ExportError, Heap};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// let heap = Heap::with_granules(4)?;
    /// let p = heap.alloc(3 << 20, 0, AllocMeta::HOST)?.as_ptr() as usize;
    /// // Only where /dev/udmabuf exists.
    /// if let Ok(udmabuf) = Udmabuf::open() {
    ///     let dmabuf = heap.export_dmabuf(&udmabuf, p + 1)?;
    ///     assert_eq!(dmabuf.size()?, 3 << 20, "the pages it spans");
    ///     assert!(matches!(heap.export_dmabuf(&udmabuf, 8), Err(ExportError::Unknown(8))));
    ///     // SAFETY: a live 3 MiB allocation that only this example uses.
    ///     unsafe { (p as *mut u8).write(7) };
    ///     heap.free(p)?;
    ///     let q = heap.alloc(3 << 20, 0, AllocMeta::HOST)?.as_ptr();
    ///     // SAFETY: as above.
    ///     assert_eq!(unsafe { q.read() }, 0, "fresh pages, not the dma-buf's");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export_dmabuf(&self, udmabuf: &Udmabuf, ptr: usize) -> Result<DmaBuf, ExportError> {
        self.export_with(ptr, |memfd, offset, len| {
            let dmabuf = udmabuf.create(memfd, offset, len)?;
            // Imports of it (clImportMemoryARM) pin these memfd pages.
            crate::ext::arm_import::note_export(&dmabuf, memfd, offset, len);
            Ok(dmabuf)
        })
    }

    /// The bookkeeping of [`export_dmabuf`](Self::export_dmabuf) around
    /// `create(memfd, offset, len)`, which makes the export of the pages at
    /// `offset..offset + len` of the heap's memfd; the pages are marked
    /// exported only if it succeeds.
    fn export_with<T>(
        &self,
        ptr: usize,
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
            let mut cls = self.pool(c, s).lock().unwrap();
            if !self.is_chunk_of(rec, c, s) || self.lookup(ptr) != Some(info) {
                return Err(unknown());
            }
            let dmabuf = create(self.va.memfd(), first as u64, (end - first) as u64)?;
            let ci = rec.class_slot.load(Ordering::Relaxed) as usize;
            self.close_pages(&mut cls, ci, class_size(c), first - chunk_start..end - chunk_start);
            Ok(dmabuf)
        } else {
            let mut large = self.large.lock().unwrap();
            if rec.kind.load(Ordering::Acquire) != LARGE || self.lookup(ptr) != Some(info) {
                return Err(unknown());
            }
            let l = large.get_mut(&start).ok_or_else(unknown)?;
            let dmabuf = create(self.va.memfd(), first as u64, (end - first) as u64)?;
            l.exported = true;
            Ok(dmabuf)
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
            let cls = cls.0.lock().unwrap();
            for c in cls.chunks.iter().flatten() {
                s.chunks += 1;
                s.live += c.live as usize;
            }
        }
        let large = self.large.lock().unwrap();
        s.large = large.len();
        s.live += large.len();
        s.resident_bytes = self.va.resident_bytes().unwrap_or(0);
        s
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        let (start, len) = (self.va.base(), self.va.len());
        for (_, hook) in self.drop_hooks.get_mut().map(std::mem::take).unwrap_or_default() {
            hook(start, len);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn lookups_find_every_interior_pointer_and_nothing_else() {
        let h = Heap::with_granules(64).unwrap();
        let sizes = [1usize, 63, 64, 65, 1000, 4096, 5000, 1 << 20, (1 << 20) + 1, 5 << 20];
        let ptrs: Vec<usize> =
            sizes.iter().map(|&s| h.alloc(s, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
        for (&p, &s) in ptrs.iter().zip(&sizes) {
            assert_eq!(p % MIN_CLASS, 0);
            let want = AllocInfo { base: p, size: s, meta: AllocMeta::HOST };
            assert_eq!(h.lookup(p), Some(want));
            assert_eq!(h.lookup(p + s / 2), Some(want));
            assert_eq!(h.lookup(p + s - 1), Some(want));
            assert_ne!(h.lookup(p + s).map(|i| i.base), Some(p), "one past the end is not inside");
            // The memory is there and private to the allocation.
            // SAFETY: p..p+s is a live allocation of this test.
            unsafe { std::ptr::write_bytes(p as *mut u8, s as u8, s) };
        }
        for (&p, &s) in ptrs.iter().zip(&sizes) {
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, s) };
            assert!(bytes.iter().all(|&b| b == s as u8), "allocation of {s} bytes was overwritten");
        }
        assert_eq!(h.lookup(0), None);
        assert_eq!(h.lookup(&h as *const _ as usize), None);
        assert_eq!(h.stats().live, sizes.len());
        for p in ptrs {
            h.free(p).unwrap();
        }
        assert_eq!(h.stats().live, 0);
    }

    #[test]
    fn bad_frees_change_nothing() {
        let h = Heap::with_granules(8).unwrap();
        let p = h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        let big = h.alloc(3 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert_eq!(h.free(p + 8), Err(FreeError::Interior { ptr: p + 8, base: p }));
        assert_eq!(h.free(big + 4096), Err(FreeError::Interior { ptr: big + 4096, base: big }));
        assert_eq!(h.free(12345), Err(FreeError::Unknown(12345)));
        let other = Heap::with_granules(8).unwrap();
        let q = other.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert_eq!(h.free(q), Err(FreeError::Unknown(q)), "another heap's pointer");
        assert_eq!(h.lookup(p).unwrap().size, 100);
        assert_eq!(h.free(p).unwrap().size, 100);
        assert_eq!(h.free(p), Err(FreeError::Unknown(p)), "double free");
        assert_eq!(h.free(big).unwrap().size, 3 << 20);
        assert_eq!(h.free(big), Err(FreeError::Unknown(big)));
        assert_eq!(other.lookup(q).unwrap().size, 100);
    }

    #[test]
    fn alignment_and_meta_are_kept() {
        let h = Heap::with_granules(32).unwrap();
        let meta = AllocMeta { kind: AllocKind::Shared, device: Some(3), flags: 0b101 };
        for align in [1usize, 64, 256, 4096, 1 << 16, 1 << 21, 1 << 22] {
            let p = h.alloc(10, align, meta).unwrap().as_ptr() as usize;
            assert_eq!(p % align, 0, "align {align}");
            assert_eq!(h.lookup(p + 9).unwrap().meta, meta);
            h.free(p).unwrap();
        }
        assert_eq!(h.alloc(0, 0, meta), Err(AllocError::ZeroSize));
        assert_eq!(h.alloc(8, 24, meta), Err(AllocError::BadAlignment(24)));
        assert!(matches!(h.alloc(64 << 20, 0, meta), Err(AllocError::OutOfAddressSpace { .. })));
        assert_eq!((h.stats().live, h.stats().large), (0, 0));
    }

    #[test]
    fn empty_chunks_go_back_to_the_system() {
        const MIB: u64 = 1 << 20;
        let h = Heap::with_granules(16).unwrap();
        // The 1 MiB class has two slots per chunk: five allocations, three chunks.
        let ps: Vec<usize> = (0..5).map(|_| h.alloc(1 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
        assert_eq!(h.stats().chunks, 3);
        assert_eq!(h.stats().resident_bytes, 0, "nothing is resident before it is touched");
        for p in &ps {
            // SAFETY: a live 1 MiB allocation.
            unsafe { std::ptr::write_bytes(*p as *mut u8, 1, 1 << 20) };
        }
        assert_eq!(h.stats().resident_bytes, 5 * MIB);
        for p in &ps {
            h.free(*p).unwrap();
        }
        assert_eq!(h.stats().chunks, 1, "one empty chunk stays warm");
        assert_eq!(h.stats().resident_bytes, MIB, "freed chunks' pages went back");
        h.trim();
        assert_eq!(h.stats().chunks, 0);
        assert_eq!(h.stats().resident_bytes, 0);
        // Large allocations hand their pages back when freed.
        let big = h.alloc(5 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        // SAFETY: a live 5 MiB allocation.
        unsafe { std::ptr::write_bytes(big as *mut u8, 1, 5 << 20) };
        assert_eq!(h.stats().resident_bytes, 5 * MIB);
        h.free(big).unwrap();
        assert_eq!(h.stats().resident_bytes, 0);
        // The address space is reusable.
        let p = h.alloc(1 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert!(h.lookup(p).is_some());
    }

    #[test]
    fn threads_allocate_look_up_and_free_at_once() {
        let h = Heap::new().unwrap();
        std::thread::scope(|s| {
            for t in 0..4usize {
                let h = &h;
                s.spawn(move || {
                    let mut live = Vec::new();
                    for i in 0..5000usize {
                        let size = [24, 100, 4096, 70_000, 3 << 20][(i + t) % 5];
                        let p = h.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
                        // SAFETY: a fresh allocation of `size` bytes.
                        unsafe { *(p as *mut u8) = t as u8 };
                        live.push((p, size));
                        if i % 3 == 0 {
                            let (q, qs) = live.swap_remove(i % live.len());
                            assert_eq!(h.lookup(q + qs - 1).unwrap().base, q);
                            // SAFETY: still live.
                            assert_eq!(unsafe { *(q as *const u8) }, t as u8);
                            h.free(q).unwrap();
                        }
                    }
                    for (p, _) in live {
                        h.free(p).unwrap();
                    }
                });
            }
        });
        assert_eq!(h.stats().live, 0);
        assert_eq!(h.stats().large, 0);
    }

    /// Runs `f` on a new thread of another shard than the caller's while
    /// the caller still holds `held`, and waits up to a minute for it:
    /// false if it did not finish (blocked on something `held` holds).
    /// `held` is let go before this returns either way.
    pub(crate) fn finishes_on_another_shard<G>(held: G, f: impl Fn() + Send + Sync) -> bool {
        let mine = shard();
        let f = &f;
        std::thread::scope(|s| {
            let finished = loop {
                let (tx, rx) = std::sync::mpsc::channel();
                s.spawn(move || {
                    if shard() == mine {
                        return tx.send(false).unwrap();
                    }
                    f();
                    let _ = tx.send(true);
                });
                match rx.recv_timeout(std::time::Duration::from_secs(60)) {
                    Ok(true) => break true,
                    Ok(false) => continue,
                    Err(_) => break false,
                }
            };
            // A blocked thread finishes once `held` goes; the scope joins it.
            drop(held);
            finished
        })
    }

    #[test]
    fn threads_of_different_shards_allocate_and_free_without_a_shared_lock() {
        let h = Heap::with_granules(16).unwrap();
        let p = h.alloc(4096, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        let c = (4096 / MIN_CLASS).trailing_zeros() as usize;
        // Hold this thread's pool of the 4 KiB class (and nothing else):
        // a thread of another shard allocates and frees in that class.
        let held = h.pool(c, shard()).lock().unwrap();
        let done = finishes_on_another_shard(held, || {
            for _ in 0..1000 {
                let q = h.alloc(4096, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
                h.free(q).unwrap();
            }
        });
        assert!(done, "another shard's thread waited for this thread's pool lock");
        // A free from another thread goes back to the allocating shard's pool.
        assert!(finishes_on_another_shard((), || assert_eq!(h.free(p).unwrap().size, 4096)));
        assert_eq!(h.stats().live, 0);
    }

    #[test]
    fn the_shard_of_an_allocation_is_its_allocating_threads_from_any_thread() {
        let h = Heap::with_granules(16).unwrap();
        let small = h.alloc(4096, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        let large = h.alloc(3 * GRANULE, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        let mine = shard();
        std::thread::spawn(move || {
            assert_eq!(h.shard_of(small), mine, "the pool the allocation came from");
            assert!(h.shard_of(large) < SHARDS && h.shard_of(usize::MAX) < SHARDS);
            h.free(small).unwrap();
            h.free(large).unwrap();
        })
        .join()
        .unwrap();
    }

    /// Marks the allocation at `p` exported, as `export_dmabuf` does after
    /// udmabuf made the dma-buf (udmabuf exists only in the guest; the guest
    /// tests check the dma-buf side). Returns the exported byte range.
    fn mark_exported(h: &Heap, p: usize) -> (usize, usize) {
        h.export_with(p, |_, offset, len| Ok((h.va.base() + offset as usize, len as usize))).unwrap()
    }

    /// The `n` bytes at `p`.
    ///
    /// # Safety
    /// `p..p + n` lies in a heap's mapping, which outlives the call.
    unsafe fn bytes(p: usize, n: usize) -> Vec<u8> {
        // SAFETY: forwarded to the caller.
        unsafe { std::slice::from_raw_parts(p as *const u8, n) }.to_vec()
    }

    #[test]
    fn a_sub_page_export_closes_its_page_until_it_empties() {
        let h = Heap::with_granules(4).unwrap();
        let page = page_size();
        let a = h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        let n = h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        let (first, len) = mark_exported(&h, a + 5);
        assert_eq!((first, len), (a / page * page, page));
        assert_eq!(n / page * page, first, "the neighbour shares the exported page");
        // SAFETY: `a` and `n` are live 100-byte allocations of this test.
        unsafe { (a as *mut u8).write_bytes(0xa1, 100) };
        h.free(a).unwrap();
        let later: Vec<usize> = (0..100).map(|_| h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
        assert!(later.iter().all(|&p| p / page * page != first), "no new allocation in a closed page");
        // SAFETY: the freed slot lies in the heap's mapping.
        assert_eq!(unsafe { bytes(a, 100) }, [0xa1; 100], "not handed back while the neighbour lives");
        assert_eq!(h.stats().live, 101);
        h.free(n).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { bytes(a, 100) }, [0; 100], "emptied: handed back (fresh pages)");
        let again: Vec<usize> = (0..64).map(|_| h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
        assert!(again.iter().any(|&p| p / page * page == first), "the page is open again");
        for p in later.into_iter().chain(again) {
            h.free(p).unwrap();
        }
        assert_eq!(h.stats().live, 0);
        h.trim();
        assert_eq!((h.stats().chunks, h.stats().resident_bytes), (0, 0));
    }

    #[test]
    fn freed_exported_slots_and_large_allocations_get_fresh_pages() {
        let h = Heap::with_granules(8).unwrap();
        // A page slot, a two-page slot exported in part, a 1 MiB slot, and a
        // large allocation.
        for size in [4096usize, 5000, 1 << 20, 3 << 20] {
            let p = h.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
            // SAFETY: a live allocation of `size` bytes.
            unsafe { (p as *mut u8).write_bytes(0x11, size) };
            let (first, len) = mark_exported(&h, p);
            assert_eq!((first, len), (p, size.next_multiple_of(page_size())));
            h.free(p).unwrap();
            // SAFETY: the freed range lies in the heap's mapping.
            assert!(unsafe { bytes(p, size) }.iter().all(|&b| b == 0), "{size}: handed back on free");
            let q = h.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
            assert_eq!(q, p, "{size}: the slot is free again at once");
            h.free(q).unwrap();
        }
        assert_eq!(h.stats().live, 0);
        h.trim();
        assert_eq!(h.stats().resident_bytes, 0);
    }

    #[test]
    fn a_chunk_of_closed_pages_is_released_when_it_empties() {
        let h = Heap::with_granules(4).unwrap();
        let page = page_size();
        // 64-byte slots: one per page exported closes every page of the chunk.
        let mut live = Vec::new();
        for k in 0..GRANULE / page {
            let p = h.alloc(64, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
            assert_eq!(p % page, 0, "the first slot of page {k}: the others were closed");
            mark_exported(&h, p);
            live.push(p);
        }
        assert_eq!(h.stats().chunks, 1);
        // The chunk is closed: the next allocation takes a new one.
        let other = h.alloc(64, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert_eq!(h.stats().chunks, 2);
        assert_ne!(other / GRANULE, live[0] / GRANULE);
        for p in live {
            h.free(p).unwrap();
        }
        // Emptied, and another chunk of the class has room: released.
        assert_eq!(h.stats().chunks, 1);
        h.free(other).unwrap();
        assert_eq!(h.stats().live, 0);
    }
}
