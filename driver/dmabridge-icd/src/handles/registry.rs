//! The registry of live objects by handle, the header slabs and their
//! quarantine, and each thread's cache of its last lookups.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, Once, Weak};

use super::{Header, Kind, Obj, Tag, KINDS};
use crate::hazard;
use crate::per_thread::PerThread;
use dmabridge::sys::addr::HostAddr;

/// How many released headers wait before the oldest is reused: a stale
/// handle keeps answering `CL_INVALID_*` for at least this many releases.
pub const QUARANTINE: usize = 4096;

/// Headers per slab.
pub(super) const SLAB: usize = 256;

/// What the registry (and a thread's cache) knows of a live object.
#[derive(Clone)]
pub(super) struct Entry {
    /// Upgrades exactly while the object is alive; keeps the `Arc`'s memory
    /// (not the [`Inner`]), so its count can be read after the release.
    pub(super) weak: Weak<dyn Any + Send + Sync>,
    /// The object's [`Inner`] allocation, for borrows: read here rather
    /// than from the `Obj`, which may be dropping.
    pub(super) data: *const (),
    /// `TypeId` of the `Obj<T>`: kinds that share a tag (in tests) differ.
    pub(super) type_id: TypeId,
}

// SAFETY: `data` is only an address until a borrow proves the object alive
// (`with`); the `Weak` is `Send`.
unsafe impl Send for Entry {}

impl Entry {
    pub(super) fn of<T: Kind>(obj: &Arc<Obj<T>>) -> Entry {
        Entry {
            weak: Arc::downgrade(obj) as Weak<dyn Any + Send + Sync>,
            data: obj.inner.ptr.as_ptr() as *const (),
            type_id: TypeId::of::<Obj<T>>(),
        }
    }

    /// Whether this is an `Obj<T>`.
    pub(super) fn is<T: Kind>(&self) -> bool {
        self.type_id == TypeId::of::<Obj<T>>()
    }

    /// The object, counted, if alive and an `Obj<T>`.
    pub(super) fn upgrade<T: Kind>(&self) -> Option<Arc<Obj<T>>> {
        self.weak.upgrade()?.downcast::<Obj<T>>().ok()
    }

    /// `data` protected for the thread of `t` (the caller's), if the object
    /// is alive (after the protection, so it stays so until the result drops).
    #[inline(always)]
    pub(super) fn protect<'t>(&self, t: &'t PerThread) -> Option<hazard::Protected<'t>> {
        let protected = hazard::protect(&t.hazard, HostAddr::of(self.data))?;
        (self.weak.strong_count() > 0).then_some(protected)
    }
}

/// The live objects by handle, and the headers.
pub(super) struct Registry {
    /// Each live object, by its header's address.
    pub(super) live: BTreeMap<usize, Entry>,
    /// Headers of released objects, oldest first.
    pub(super) quarantine: VecDeque<&'static Header>,
    /// The newest slab's headers not handed out yet.
    pub(super) fresh: &'static [Header],
}

impl Registry {
    /// A header for a new object of kind `tag`.
    pub(super) fn header(&mut self, tag: Tag) -> &'static Header {
        let header = if self.quarantine.len() > QUARANTINE {
            self.quarantine.pop_front().expect("more than QUARANTINE headers")
        } else {
            if self.fresh.is_empty() {
                // Leaked: headers stay readable for the life of the process.
                self.fresh = Box::leak((0..SLAB).map(|_| Header::new(tag)).collect::<Box<[Header]>>());
            }
            let (first, rest) = self.fresh.split_first().expect("a fresh slab");
            self.fresh = rest;
            first
        };
        header.tag.store(tag as u32, Ordering::Relaxed);
        header.generation.fetch_add(1, Ordering::Relaxed);
        header
    }

    /// The entry of `handle` and its header, if `handle` names a live (or
    /// dropping) object.
    pub(super) fn find(&self, handle: *const c_void) -> Option<(&'static Header, &Entry)> {
        let entry = self.live.get(&(handle as usize))?;
        // SAFETY: the registry's keys are addresses of headers, which are
        // never freed.
        Some((unsafe { &*handle.cast::<Header>() }, entry))
    }
}

static LIVE: Mutex<Registry> = Mutex::new(Registry { live: BTreeMap::new(), quarantine: VecDeque::new(), fresh: &[] });

pub(super) fn registry() -> &'static Mutex<Registry> {
    static AT_FORK: Once = Once::new();
    AT_FORK.call_once(|| {
        // SAFETY: the handlers only take and give back this lock on the
        // forking thread (see `before_fork`).
        let rc = unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
        if rc != 0 {
            log::warn!("pthread_atfork: error {rc}; a forked child may wait for the handle registry forever");
        }
    });
    &LIVE
}

thread_local! {
    /// The registry's lock, held by the forking thread across a `fork`.
    static HELD_ACROSS_FORK: RefCell<Option<MutexGuard<'static, Registry>>> = const { RefCell::new(None) };
}

/// Takes the registry's lock before a `fork`, so that no other thread holds
/// it when the process is copied: the child has only the forking thread, and
/// a lock another thread held would stay locked there forever (every
/// `clCreate*` and uncached lookup of the child would hang; seen under load
/// in tests/icd/fork_test.c, a thread's first lookup landing on the fork).
/// The ICD holds the lock only inside its own calls and never runs the
/// application's code under it, so the forking thread cannot hold it here.
extern "C" fn before_fork() {
    let guard = dmabridge::sync::lock(&LIVE);
    let _ = HELD_ACROSS_FORK.try_with(|h| *h.borrow_mut() = Some(guard));
}

/// Gives the lock back after a `fork`, in the parent and in the child (the
/// same thread in both, which the lock belongs to).
extern "C" fn after_fork() {
    let _ = HELD_ACROSS_FORK.try_with(|h| h.borrow_mut().take());
}

/// A lookup this thread made: the registry's answer again, without its
/// lock, while the object lives (calls on one context or queue come in
/// runs, and a USM allocation names a context and a device).
struct Cached {
    header: &'static Header,
    /// The header's generation when the entry was made.
    generation: u32,
    entry: Entry,
}

/// The last lookup of each kind on a thread (one line per [`Tag`]), a field
/// of its `PerThread`.
pub(crate) struct HandleCache([Option<Cached>; KINDS]);

impl HandleCache {
    /// Nothing cached.
    pub(crate) const EMPTY: HandleCache = HandleCache([const { None }; KINDS]);
}

/// Runs `f` on this thread's cached entry of `handle` as an `Obj<T>`, if
/// it is the entry of the header's current generation.
#[inline(always)]
pub(super) fn cached<T: Kind, R>(
    t: &PerThread,
    handle: *const c_void,
    f: impl FnOnce(&Entry) -> Option<R>,
) -> Option<R> {
    let c = t.cache.borrow();
    let hit = c.0[T::TAG as usize - 1].as_ref().filter(|e| {
        std::ptr::eq(e.header, handle.cast())
            && e.entry.is::<T>()
            && e.header.generation.load(Ordering::Relaxed) == e.generation
    })?;
    f(&hit.entry)
}

/// Remembers `entry` as this thread's last lookup of kind `T`.
pub(super) fn remember<T: Kind>(t: &PerThread, header: &'static Header, entry: Entry) {
    let cached = Cached { header, generation: header.generation.load(Ordering::Relaxed), entry };
    // Replacing a cached `Weak` runs no object's `Drop` (a `Weak` only frees
    // memory), so nothing can re-enter the cache here.
    t.cache.borrow_mut().0[T::TAG as usize - 1] = Some(cached);
}
