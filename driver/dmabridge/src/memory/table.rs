//! The allocation table: which allocation holds a pointer, answered with a
//! few atomic loads and no lock, so that readers never block each other (nor
//! writers them).
//!
//! The table covers one [`VaSpace`](super::vaspace::VaSpace): a directory maps
//! each granule to the granule where its allocation (or pool chunk) starts,
//! and a record per starting granule says what is there. Records are
//! type-stable: once created they live as long as the table, and are reused,
//! so a reader racing with a free (a caller bug) reads a stale or empty record,
//! never freed memory. Slot arrays of pool chunks are kept likewise.

use crate::sync;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What a granule holds.
pub(crate) const FREE: u8 = 0;
pub(crate) const CHUNK: u8 = 1;
pub(crate) const LARGE: u8 = 2;

/// A slot word: bits 0..32 the requested size (0: the slot is free), bits
/// 32..64 the packed [`AllocMeta`](super::heap::AllocMeta).
pub(crate) fn slot_word(size: usize, meta: u32) -> u64 {
    debug_assert!(size > 0 && size <= u32::MAX as usize);
    size as u64 | (meta as u64) << 32
}

pub(crate) fn slot_size(word: u64) -> usize {
    (word & 0xffff_ffff) as usize
}

pub(crate) fn slot_meta(word: u64) -> u32 {
    (word >> 32) as u32
}

/// What starts at a granule: a pool chunk of one size class, or a large
/// allocation. Every field is atomic; the heap changes them under its locks
/// and publishes with release stores, readers load with acquire.
#[derive(Default)]
pub(crate) struct Record {
    pub kind: AtomicU8,
    /// Chunk: size-class index.
    pub class: AtomicU8,
    /// Chunk: the shard whose pool of the class holds it.
    pub shard: AtomicU8,
    /// Chunk: index of the chunk's state in its class (read under the class lock).
    pub class_slot: AtomicU32,
    /// Large: requested size.
    pub size: AtomicUsize,
    /// Large: packed meta.
    pub meta: AtomicU32,
    /// Chunk: the slot words; see `Table::slots`. The array's first word is
    /// its length (so that pointer and length are read together).
    slots: AtomicPtr<AtomicU64>,
}

/// The directory and the records of one reservation.
pub(crate) struct Table {
    /// Granule -> starting granule + 1 (0: nothing there).
    dir: Box<[AtomicU32]>,
    /// Starting granule -> its record (null until first used).
    records: Box<[AtomicPtr<Record>]>,
    /// Slot arrays replaced when a granule changed size class, kept until
    /// the table is dropped (see the module comment).
    retired: Mutex<Vec<*mut AtomicU64>>,
}

// SAFETY: the raw pointers are to heap objects owned by the table (records
// and slot arrays), freed only in `Drop`; all shared access goes through
// atomics, and `retired` is behind a mutex.
unsafe impl Send for Table {}
// SAFETY: as above.
unsafe impl Sync for Table {}

impl Table {
    pub fn new(granules: usize) -> Table {
        Table {
            dir: (0..granules).map(|_| AtomicU32::new(0)).collect(),
            records: (0..granules).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            retired: Mutex::new(Vec::new()),
        }
    }

    /// The starting granule of whatever covers granule `g`.
    #[inline]
    pub fn start_of(&self, g: usize) -> Option<usize> {
        match self.dir.get(g)?.load(Ordering::Acquire) {
            0 => None,
            s => Some(s as usize - 1),
        }
    }

    /// The record at starting granule `start`, if one was ever created.
    #[inline]
    pub fn record(&self, start: usize) -> Option<&Record> {
        let p = self.records.get(start)?.load(Ordering::Acquire);
        // SAFETY: non-null record pointers come from `Box::into_raw` in
        // `record_mut` and stay valid until the table is dropped; the
        // returned reference borrows `self`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// The record at `start`, created if needed (writers only, under the
    /// heap's lock for that granule).
    pub fn record_mut(&self, start: usize) -> &Record {
        if let Some(r) = self.record(start) {
            return r;
        }
        let fresh = Box::into_raw(Box::<Record>::default());
        match self.records[start].compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: we just published `fresh`, which lives until `Drop`.
            Ok(_) => unsafe { &*fresh },
            Err(existing) => {
                // SAFETY: `fresh` was never shared; `existing` is a published
                // record that lives until `Drop`.
                unsafe {
                    drop(Box::from_raw(fresh));
                    &*existing
                }
            }
        }
    }

    /// Points granules `start..start + n` at `start`.
    pub fn cover(&self, start: usize, n: usize) {
        for g in start..start + n {
            self.dir[g].store(start as u32 + 1, Ordering::Release);
        }
    }

    /// Clears granules `start..start + n`.
    pub fn uncover(&self, start: usize, n: usize) {
        for g in start..start + n {
            self.dir[g].store(0, Ordering::Release);
        }
    }

    /// The slot words of a chunk record.
    #[inline]
    pub fn slots<'a>(&'a self, rec: &'a Record) -> &'a [AtomicU64] {
        let p = rec.slots.load(Ordering::Acquire);
        if p.is_null() {
            return &[];
        }
        // Arrays are retired, never freed, before `Drop`: a racing reader may
        // see a stale array, but always a valid one.
        // SAFETY: `p` is an array from `set_slots` whose first word holds the
        // number of slot words after it (set before publication, never changed).
        unsafe {
            let n = (*p).load(Ordering::Relaxed) as usize;
            std::slice::from_raw_parts(p.add(1), n)
        }
    }

    /// Gives a chunk record `n` cleared slot words, reusing its array when
    /// the size fits (writers only).
    pub fn set_slots(&self, rec: &Record, n: usize) {
        let old = rec.slots.load(Ordering::Acquire);
        if !old.is_null() {
            let words = self.slots(rec);
            if words.len() == n {
                for w in words {
                    w.store(0, Ordering::Relaxed);
                }
                return;
            }
        }
        let fresh: Box<[AtomicU64]> =
            std::iter::once(AtomicU64::new(n as u64)).chain((0..n).map(|_| AtomicU64::new(0))).collect();
        rec.slots.store(Box::into_raw(fresh) as *mut AtomicU64, Ordering::Release);
        if !old.is_null() {
            sync::lock(&self.retired).push(old);
        }
    }
}

/// Frees a slot array made by `set_slots`.
///
/// # Safety
/// `p` came from `set_slots`, is freed once, and nobody reads it any more.
unsafe fn free_slots(p: *mut AtomicU64) {
    // SAFETY: the first word is the count of words after it, so the boxed
    // slice had `n + 1` elements.
    unsafe {
        let n = (*p).load(Ordering::Relaxed) as usize;
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n + 1)));
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        for r in self.records.iter() {
            let p = r.load(Ordering::Acquire);
            if p.is_null() {
                continue;
            }
            // SAFETY: the table is being dropped, nobody reads any more; every
            // record and live slot array came from `Box::into_raw` and is
            // freed exactly once here.
            unsafe {
                let rec = Box::from_raw(p);
                let s = rec.slots.load(Ordering::Acquire);
                if !s.is_null() {
                    free_slots(s);
                }
            }
        }
        for p in sync::get_mut(&mut self.retired).drain(..) {
            // SAFETY: retired arrays are no longer reachable and freed once.
            unsafe { free_slots(p) };
        }
    }
}
