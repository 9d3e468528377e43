//! The pools behind the heap: 2 MiB chunks of one size class each, per
//! shard, and whole granules for large allocations; allocating from them,
//! freeing into them, and closing or reopening the pages an export maps.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::*;

pub(super) struct Chunk {
    pub(super) start: usize,
    /// Slots never handed out start at `bump`.
    pub(super) bump: u32,
    pub(super) free: Vec<u32>,
    pub(super) live: u32,
    /// Pages (indices from the chunk's start) that an exported dma-buf maps:
    /// closed to new allocations until no allocation is left in them and
    /// they have been handed back to the system.
    pub(super) exported: BTreeSet<u32>,
    /// Slots in exported pages that are not allocated (freed, or skipped
    /// when the page was closed): free again once their pages are handed back.
    pub(super) held: Vec<u32>,
}

impl Chunk {
    pub(super) fn new(start: usize) -> Chunk {
        Chunk { start, bump: 0, free: Vec::new(), live: 0, exported: BTreeSet::new(), held: Vec::new() }
    }

    /// True if a slot can be handed out.
    pub(super) fn has_room(&self, nslots: u32) -> bool {
        !self.free.is_empty() || self.bump < nslots
    }

    /// True if any page in `pages` is exported.
    pub(super) fn touches_exported(&self, pages: Range<u32>) -> bool {
        !self.exported.is_empty() && self.exported.range(pages).next().is_some()
    }
}

/// The pages (indices from a chunk's start, `page` bytes each) that slot
/// `slot` of a `csize`-byte class spans.
pub(super) fn slot_pages(csize: usize, slot: u32, page: usize) -> Range<u32> {
    let start = slot as usize * csize;
    (start / page) as u32..(start + csize).div_ceil(page) as u32
}

/// The slots of a `csize`-byte class (of `nslots`) that page `p` holds part of.
pub(super) fn page_slots(csize: usize, p: u32, page: usize, nslots: u32) -> Range<u32> {
    let start = p as usize * page;
    (start / csize) as u32..((start + page).div_ceil(csize) as u32).min(nslots)
}

#[derive(Default)]
pub(super) struct Class {
    /// Index = the record's `class_slot`; `None` where a chunk was released.
    pub(super) chunks: Vec<Option<Chunk>>,
    /// Indices of chunks with a free slot.
    pub(super) with_room: Vec<u32>,
    pub(super) vacant: Vec<u32>,
}

/// One pool's lock and state, on cache lines of its own: the pools of one
/// class for neighbouring shards lie side by side, and threads of those
/// shards write them at once.
#[repr(align(128))]
pub(super) struct Pool(pub(super) Mutex<Class>);

pub(super) struct Large {
    pub(super) granules: usize,
    /// A dma-buf was exported from it: its granules are reused only once
    /// their pages have been handed back (fresh pages for the next user).
    pub(super) exported: bool,
}

/// Free runs of granules, start -> length.
pub(super) struct Granules {
    pub(super) free: BTreeMap<usize, usize>,
}

impl Granules {
    /// Takes `n` granules whose first one's address (`offset` granules in)
    /// is a multiple of `align` granules.
    pub(super) fn take(&mut self, n: usize, align: usize, offset: usize) -> Option<usize> {
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

    pub(super) fn give(&mut self, start: usize, n: usize) {
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

impl Heap {
    /// The pool of size class `c` in shard `s`.
    pub(super) fn pool(&self, c: usize, s: usize) -> &Mutex<Class> {
        &self.classes[c * SHARDS + s].0
    }

    pub(super) fn alloc_pooled(&self, c: usize, size: usize, meta: AllocMeta) -> Result<usize, AllocError> {
        let csize = class_size(c);
        let s = shard();
        let mut cls = sync::lock(self.pool(c, s));
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
        Ok(self.va.granule_addr(start).0 + slot as usize * csize)
    }

    pub(super) fn new_chunk(&self, c: usize, s: usize, cls: &mut Class, size: usize) -> Result<usize, AllocError> {
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

    pub(super) fn alloc_large(&self, size: usize, align: usize, meta: AllocMeta) -> Result<usize, AllocError> {
        let n = size.div_ceil(GRANULE);
        let align_g = (align / GRANULE).max(1);
        let oom = AllocError::OutOfAddressSpace { size, reserved: self.va.len() };
        if n > self.va.granules() {
            return Err(oom);
        }
        let base_g = self.va.base().0 / GRANULE;
        let mut large = sync::lock(&self.large);
        let start = sync::lock(&self.granules).take(n, align_g, base_g).ok_or(oom)?;
        large.insert(start, Large { granules: n, exported: false });
        let rec = self.table.record_mut(start);
        rec.size.store(size, Ordering::Relaxed);
        rec.meta.store(meta.pack(), Ordering::Relaxed);
        rec.kind.store(LARGE, Ordering::Release);
        self.table.cover(start, n);
        Ok(self.va.granule_addr(start).0)
    }

    /// True if `rec` is a chunk of the pool of class `c` in shard `s`
    /// (checked under that pool's lock, which every change of it takes).
    pub(super) fn is_chunk_of(&self, rec: &Record, c: usize, s: usize) -> bool {
        rec.kind.load(Ordering::Acquire) == CHUNK
            && rec.class.load(Ordering::Acquire) as usize == c
            && rec.shard.load(Ordering::Acquire) as usize == s
    }

    pub(super) fn free_pooled(&self, ptr: HostAddr, start: usize) -> Result<AllocInfo, FreeError> {
        let rec = self.table.record(start).ok_or(FreeError::Unknown(ptr))?;
        let (c, s) = (rec.class.load(Ordering::Acquire) as usize, rec.shard.load(Ordering::Acquire) as usize);
        let mut cls = sync::lock(self.pool(c, s));
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
    pub(super) fn reopen_pages(&self, rec: &Record, chunk: &mut Chunk, csize: usize, pages: Range<u32>) {
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
    pub(super) fn close_pages(&self, cls: &mut Class, ci: usize, csize: usize, bytes: Range<usize>) {
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

    pub(super) fn release_chunk(&self, cls: &mut Class, ci: usize) {
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
        sync::lock(&self.granules).give(chunk.start, 1);
    }

    pub(super) fn free_large(&self, ptr: HostAddr, start: usize) -> Result<AllocInfo, FreeError> {
        let mut large = sync::lock(&self.large);
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
        sync::lock(&self.granules).give(start, l.granules);
        Ok(info)
    }
}
