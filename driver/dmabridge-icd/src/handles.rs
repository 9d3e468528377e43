//! Handles: a handle is the address of a [`Header`] (the dispatch pointer
//! the loaders jump through, a second word reserved for cl_khr_icd2, a type
//! tag, a generation), and an object is an [`Obj`] inside an `Arc` that
//! names its header.
//!
//! Headers are type-stable: they are carved from slabs that are never
//! freed, and a header's dispatch pointer is never changed, so whatever the
//! application passes, a loader that reads the dispatch word of a handle
//! (ocl-icd does, before the ICD sees the call) reaches the ICD, released
//! handles included. A released object's header goes into a quarantine and
//! is reused for a new object only after [`QUARANTINE`] other headers have
//! been released, with its generation counted up.
//!
//! Validation never dereferences the caller's pointer: a handle is looked up
//! by address in the registry of live objects, which holds a `Weak` of each;
//! a released object (strong count 0) no longer upgrades and its entry is
//! removed, so NULL, released and wrong-type handles all answer the kind's
//! `CL_INVALID_*` code. (A handle released so long ago that its header was
//! reused names the new object, as a reused address would in any ICD.)
//!
//! The Rust object itself ([`Obj::inner`]) lives in an allocation of its own,
//! outside the `Arc`: the borrows of `hazard.rs` read it while the `Arc` may
//! already be on its way to drop (which takes `&mut` of the `Obj`), so the
//! borrowed bytes must be none of the `Obj`'s.
//!
//! Reference counts: the CL reference count is the `Arc` strong count (the
//! application's references plus the implicit ones other objects hold, e.g.
//! a queue on its context, so that `CL_QUEUE_CONTEXT` stays valid after
//! `clReleaseContext`). The references the application owns are counted in
//! `app_refs` too, so that an extra `clRelease*` answers an error instead of
//! taking a reference some other object holds.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::c_void;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use dmabridge::runtime::device::Device;
use dmabridge::runtime::platform::Platform;
use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::*;

use crate::dispatch::DISPATCH;
use crate::entry::ClRes;
use crate::hazard;
use dmabridge::sync;

/// What a handle is.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// `cl_platform_id`.
    Platform = 1,
    /// `cl_device_id`.
    Device,
    /// `cl_context`.
    Context,
    /// `cl_command_queue`.
    Queue,
    /// `cl_event`.
    Event,
    /// `cl_mem` (buffers and sub-buffers).
    Mem,
    /// `cl_program`.
    Program,
    /// `cl_kernel`.
    Kernel,
}

/// How many kinds there are (the per-thread cache has a line for each).
const KINDS: usize = Tag::Kernel as usize;

impl Tag {
    /// Whether objects of this kind may be borrowed by [`with`] (their
    /// destruction then waits for borrowers): contexts, which the hot USM and
    /// SVM entry points name.
    const fn borrowable(self) -> bool {
        matches!(self, Tag::Context)
    }
}

/// The first words of every C object: what a handle points to.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    /// The ICD dispatch table (the loaders read this word). Never changed:
    /// a stale handle still reaches the ICD.
    dispatch: *const cl_icd_dispatch,
    /// Reserved for the loader's per-platform data of cl_khr_icd2; never
    /// read or written by dmabridge (icd2 is not advertised).
    icd2: *mut c_void,
    /// The kind of the object the header was last given to (a [`Tag`]).
    tag: AtomicU32,
    /// Counts the objects the header was given to: a cached lookup answers
    /// only for the generation it was made for.
    generation: AtomicU32,
}

// SAFETY: `dispatch` points to an immutable static and `icd2` is an opaque
// word nobody in this crate dereferences; the rest are atomics.
unsafe impl Send for Header {}
// SAFETY: as above; the two pointers are never written after construction.
unsafe impl Sync for Header {}

impl Header {
    const fn new(tag: Tag) -> Header {
        Header {
            dispatch: &DISPATCH,
            icd2: std::ptr::null_mut(),
            tag: AtomicU32::new(tag as u32),
            generation: AtomicU32::new(0),
        }
    }
}

/// A kind of C object: its tag and the error an invalid handle answers.
pub trait Kind: Any + Send + Sync + Sized {
    /// Its tag.
    const TAG: Tag;
    /// `CL_INVALID_CONTEXT`, `CL_INVALID_COMMAND_QUEUE`, ...
    const INVALID: cl_int;

    /// The `pfn_notify` of the object's context (none for objects of no
    /// context): a failed call on the object reports its message there.
    fn notifier(&self) -> crate::notify::Notifier {
        crate::notify::Notifier::NONE
    }
}

/// A C object: its header (the handle), the application's reference count
/// and the Rust object.
#[derive(Debug)]
pub struct Obj<T> {
    header: &'static Header,
    tag: Tag,
    app_refs: AtomicUsize,
    /// The object behind the handle.
    pub inner: Inner<T>,
}

/// The Rust object of an [`Obj`], in an allocation of its own (see the
/// module doc); dereferences to it.
pub struct Inner<T> {
    ptr: NonNull<T>,
}

// SAFETY: `Inner` owns its `T` as a `Box` would.
unsafe impl<T: Send> Send for Inner<T> {}
// SAFETY: as above; it gives out only `&T`.
unsafe impl<T: Sync> Sync for Inner<T> {}

impl<T> Deref for Inner<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the allocation lives until the `Obj` that holds this
        // `Inner` drops, which cannot happen while `self` is borrowed.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Inner<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        T::fmt(self, f)
    }
}

impl<T> Drop for Obj<T> {
    fn drop(&mut self) {
        // The strong count is 0: no new borrow starts; a borrowable kind
        // waits for the running ones before its object goes.
        let data = self.inner.ptr;
        if !self.tag.borrowable() || hazard::wait_unprotected(data.as_ptr() as usize) {
            // SAFETY: the allocation `new_object` leaked from a `Box`,
            // freed once, here; no borrow of it is left (just waited for).
            drop(unsafe { Box::from_raw(data.as_ptr()) });
        } else {
            log::error!("a released {:?} is kept in memory: whether a thread still uses it cannot be known", self.tag);
        }
        // The header goes back only now: until here a lookup of the handle
        // finds the registry's `Weak`, which no longer upgrades.
        let mut registry = sync::lock(registry());
        let entry = registry.live.remove(&(self.header as *const Header as usize));
        registry.quarantine.push_back(self.header);
        drop(registry);
        drop(entry);
    }
}

/// How many released headers wait before the oldest is reused: a stale
/// handle keeps answering `CL_INVALID_*` for at least this many releases.
pub const QUARANTINE: usize = 4096;

/// Headers per slab.
const SLAB: usize = 256;

/// What the registry (and a thread's cache) knows of a live object.
#[derive(Clone)]
struct Entry {
    /// Upgrades exactly while the object is alive; keeps the `Arc`'s memory
    /// (not the [`Inner`]), so its count can be read after the release.
    weak: Weak<dyn Any + Send + Sync>,
    /// The object's [`Inner`] allocation, for borrows: read here rather
    /// than from the `Obj`, which may be dropping.
    data: *const (),
    /// `TypeId` of the `Obj<T>`: kinds that share a tag (in tests) differ.
    type_id: TypeId,
}

// SAFETY: `data` is only an address until a borrow proves the object alive
// (`with`); the `Weak` is `Send`.
unsafe impl Send for Entry {}

impl Entry {
    fn of<T: Kind>(obj: &Arc<Obj<T>>) -> Entry {
        Entry {
            weak: Arc::downgrade(obj) as Weak<dyn Any + Send + Sync>,
            data: obj.inner.ptr.as_ptr() as *const (),
            type_id: TypeId::of::<Obj<T>>(),
        }
    }

    /// Whether this is an `Obj<T>`.
    fn is<T: Kind>(&self) -> bool {
        self.type_id == TypeId::of::<Obj<T>>()
    }

    /// The object, counted, if alive and an `Obj<T>`.
    fn upgrade<T: Kind>(&self) -> Option<Arc<Obj<T>>> {
        self.weak.upgrade()?.downcast::<Obj<T>>().ok()
    }

    /// `data` protected for this thread, if the object is alive (after the
    /// protection, so it stays so until the result drops).
    fn protect(&self) -> Option<hazard::Protected> {
        let protected = hazard::protect(self.data as usize)?;
        (self.weak.strong_count() > 0).then_some(protected)
    }
}

/// The live objects by handle, and the headers.
struct Registry {
    /// Each live object, by its header's address.
    live: BTreeMap<usize, Entry>,
    /// Headers of released objects, oldest first.
    quarantine: VecDeque<&'static Header>,
    /// The newest slab's headers not handed out yet.
    fresh: &'static [Header],
}

impl Registry {
    /// A header for a new object of kind `tag`.
    fn header(&mut self, tag: Tag) -> &'static Header {
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
    fn find(&self, handle: *const c_void) -> Option<(&'static Header, &Entry)> {
        let entry = self.live.get(&(handle as usize))?;
        // SAFETY: the registry's keys are addresses of headers, which are
        // never freed.
        Some((unsafe { &*handle.cast::<Header>() }, entry))
    }
}

fn registry() -> &'static Mutex<Registry> {
    static LIVE: Mutex<Registry> =
        Mutex::new(Registry { live: BTreeMap::new(), quarantine: VecDeque::new(), fresh: &[] });
    &LIVE
}

/// A new object of kind `T`, registered, with no application reference yet
/// (see [`into_handle`]).
pub fn new_object<T: Kind>(inner: T) -> Arc<Obj<T>> {
    let inner = Inner { ptr: NonNull::from(Box::leak(Box::new(inner))) };
    let mut registry = sync::lock(registry());
    let header = registry.header(T::TAG);
    let obj = Arc::new(Obj { header, tag: T::TAG, app_refs: AtomicUsize::new(0), inner });
    registry.live.insert(header as *const Header as usize, Entry::of(&obj));
    drop(registry);
    obj
}

/// The handle of `obj`, given to the application with one reference it
/// owns (released by [`release`]).
pub fn into_handle<T: Kind>(obj: Arc<Obj<T>>) -> *mut c_void {
    obj.app_refs.fetch_add(1, Ordering::AcqRel);
    let handle = handle_of(&obj);
    // The reference now counted in `app_refs`, given back by `release`.
    std::mem::forget(obj);
    handle
}

/// The handle of `obj` without a new reference: for answers (info queries,
/// callbacks) about an object something else keeps alive.
pub fn handle_of<T>(obj: &Arc<Obj<T>>) -> *mut c_void {
    obj.header as *const Header as *mut c_void
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

thread_local! {
    /// The last lookup of each kind on this thread (one line per [`Tag`]).
    static CACHE: RefCell<[Option<Cached>; KINDS]> = const { RefCell::new([const { None }; KINDS]) };
}

/// Runs `f` on this thread's cached entry of `handle` as an `Obj<T>`, if
/// it is the entry of the header's current generation.
fn cached<T: Kind, R>(handle: *const c_void, f: impl FnOnce(&Entry) -> Option<R>) -> Option<R> {
    // `try_with`: during thread teardown the cache may be gone; the
    // registry still answers.
    CACHE
        .try_with(|c| {
            let c = c.borrow();
            let hit = c[T::TAG as usize - 1].as_ref().filter(|e| {
                std::ptr::eq(e.header, handle.cast())
                    && e.entry.is::<T>()
                    && e.header.generation.load(Ordering::Relaxed) == e.generation
            })?;
            f(&hit.entry)
        })
        .ok()
        .flatten()
}

/// Remembers `entry` as this thread's last lookup of kind `T`.
fn remember<T: Kind>(header: &'static Header, entry: Entry) {
    let cached = Cached { header, generation: header.generation.load(Ordering::Relaxed), entry };
    // Replacing a cached `Weak` runs no object's `Drop` (a `Weak` only frees
    // memory), so nothing can re-enter the cache here.
    let _ = CACHE.try_with(|c| c.borrow_mut()[T::TAG as usize - 1] = Some(cached));
}

/// The live object of kind `T` behind `handle`, or `T::INVALID` for NULL, a
/// released object, an address that was never a handle, or another kind.
pub fn get<T: Kind>(handle: *const c_void) -> ClRes<Arc<Obj<T>>> {
    if handle.is_null() {
        return Err(T::INVALID);
    }
    if let Some(obj) = cached::<T, _>(handle, Entry::upgrade::<T>) {
        crate::notify::note_context(obj.inner.notifier());
        return Ok(obj);
    }
    let registry = sync::lock(registry());
    let (header, entry) = registry.find(handle).filter(|(_, e)| e.is::<T>()).ok_or(T::INVALID)?;
    let obj = entry.upgrade::<T>().ok_or(T::INVALID)?;
    let entry = entry.clone();
    drop(registry);
    remember::<T>(header, entry);
    crate::notify::note_context(obj.inner.notifier());
    Ok(obj)
}

/// Runs `f` on the live object of kind `T` behind `handle`, borrowed for the
/// call without taking a reference (see `hazard.rs`); errors as [`get`].
/// For the hot entry points of borrowable kinds ([`Tag`]); any other kind,
/// or a nested call, takes a counted reference instead.
pub fn with<T: Kind, R>(handle: *const c_void, f: impl FnOnce(&T) -> ClRes<R>) -> ClRes<R> {
    if handle.is_null() {
        return Err(T::INVALID);
    }
    if T::TAG.borrowable() {
        let borrowed = cached::<T, _>(handle, |e| Some((e.protect()?, e.data))).or_else(|| {
            let registry = sync::lock(registry());
            let (header, entry) = registry.find(handle).filter(|(_, e)| e.is::<T>())?;
            let protected = entry.protect()?;
            let (data, entry) = (entry.data, entry.clone());
            drop(registry);
            remember::<T>(header, entry);
            Some((protected, data))
        });
        if let Some((_protected, data)) = borrowed {
            // SAFETY: `data` is the `Inner` allocation of an `Obj<T>` (the entry's `TypeId`) whose strong count was
            // above 0 after `data` was protected: `Obj::drop` waits until `_protected` drops (after `f`) before it
            // frees the allocation, and writes none of it before (the `&mut` of the drop covers the `Obj`, not this).
            let obj = unsafe { &*(data as *const T) };
            crate::notify::note_context(obj.notifier());
            return f(obj);
        }
    }
    f(&get::<T>(handle)?.inner)
}

/// `clRetain*`.
pub fn retain<T: Kind>(handle: *const c_void) -> ClRes<()> {
    into_handle(get::<T>(handle)?);
    Ok(())
}

/// `clRelease*`: gives back one reference the application owns
/// (`T::INVALID` when it owns none any more).
pub fn release<T: Kind>(handle: *const c_void) -> ClRes<()> {
    let obj = get::<T>(handle)?;
    obj.app_refs.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).map_err(|_| T::INVALID)?;
    // SAFETY: `app_refs` counted a strong reference that `into_handle` leaked
    // (`mem::forget`) of this same allocation; it is given back once. `obj`
    // holds another, so the count stays positive until `obj` drops.
    unsafe { Arc::decrement_strong_count(Arc::as_ptr(&obj)) };
    drop(obj);
    Ok(())
}

/// The CL reference count of `obj` as seen by a caller that holds `obj`
/// (a temporary reference from [`get`], not counted).
pub fn reference_count<T>(obj: &Arc<Obj<T>>) -> cl_uint {
    cl_uint::try_from(Arc::strong_count(obj).saturating_sub(1)).unwrap_or(cl_uint::MAX)
}

/// The platform object (static: one per process).
#[repr(C)]
#[derive(Debug)]
pub struct PlatformObj {
    header: Header,
}

/// The `cl_platform_id`.
pub static PLATFORM: PlatformObj = PlatformObj { header: Header::new(Tag::Platform) };

/// The platform handle.
pub fn platform_handle() -> cl_platform_id {
    &PLATFORM as *const PlatformObj as cl_platform_id
}

/// Checks a platform argument: ours, or NULL where `null_ok` (the
/// implementation-defined choice for NULL is this platform).
pub fn check_platform(p: cl_platform_id, null_ok: bool) -> ClRes<()> {
    if (p.is_null() && null_ok) || p == platform_handle() {
        Ok(())
    } else {
        Err(CL_INVALID_PLATFORM)
    }
}

/// A device (root devices only: they live as long as the process).
#[derive(Debug)]
pub struct DeviceObj {
    /// The core device.
    pub device: Arc<Device>,
}

impl Kind for DeviceObj {
    const TAG: Tag = Tag::Device;
    const INVALID: cl_int = CL_INVALID_DEVICE;
}

/// The device objects, in the platform's order (index = `Device::index`).
pub fn devices() -> &'static [Arc<Obj<DeviceObj>>] {
    static DEVICES: OnceLock<Vec<Arc<Obj<DeviceObj>>>> = OnceLock::new();
    DEVICES
        .get_or_init(|| Platform::get().devices().iter().map(|d| new_object(DeviceObj { device: d.clone() })).collect())
}

/// The device behind `handle` (`CL_INVALID_DEVICE` for NULL or anything
/// else), without a reference: root devices live as long as the process,
/// and a scan of their few handles costs less than counting one.
pub fn device(handle: *const c_void) -> ClRes<&'static Obj<DeviceObj>> {
    devices().iter().find(|d| handle_of(d).cast_const() == handle).map(|d| &**d).ok_or(CL_INVALID_DEVICE)
}

/// The handle of a core device.
pub fn device_handle(device: &Device) -> cl_device_id {
    devices().get(device.index as usize).map_or(std::ptr::null_mut(), |d| handle_of(d).cast())
}

/// The core devices of a device list (`CL_INVALID_VALUE` for NULL or an
/// empty list, `CL_INVALID_DEVICE` for an entry that is not a device).
///
/// # Safety
/// A non-NULL `list` holds `num` readable `cl_device_id`s.
pub unsafe fn device_list(num: cl_uint, list: *const cl_device_id) -> ClRes<Vec<Arc<Device>>> {
    if num == 0 || list.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract; the list is non-NULL with `num` entries.
    let handles = unsafe { crate::entry::slice(list, num as usize) };
    handles.iter().map(|&h| device(h.cast()).map(|d| d.inner.device.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Thing(u32);
    impl Kind for Thing {
        const TAG: Tag = Tag::Context;
        const INVALID: cl_int = CL_INVALID_CONTEXT;
    }

    #[test]
    fn released_and_foreign_handles_are_refused_without_dereferencing() {
        let h = into_handle(new_object(Thing(7)));
        assert!(get::<Thing>(h).is_ok());
        assert_eq!(get::<DeviceObj>(h).unwrap_err(), CL_INVALID_DEVICE, "another kind");
        retain::<Thing>(h).unwrap();
        release::<Thing>(h).unwrap();
        release::<Thing>(h).unwrap();
        // Freed now: neither lookup nor release may touch it.
        assert_eq!(get::<Thing>(h).unwrap_err(), CL_INVALID_CONTEXT);
        assert_eq!(release::<Thing>(h).unwrap_err(), CL_INVALID_CONTEXT);
        assert_eq!(get::<Thing>(std::ptr::null()).unwrap_err(), CL_INVALID_CONTEXT);
        let stack = 0u64;
        assert_eq!(get::<Thing>(&stack as *const u64 as *const c_void).unwrap_err(), CL_INVALID_CONTEXT);
    }

    #[test]
    fn a_borrow_answers_as_a_lookup_does() {
        let h = into_handle(new_object(Thing(5)));
        assert_eq!(with::<Thing, _>(h, |t| Ok(t.0)).unwrap(), 5, "from the registry");
        assert_eq!(with::<Thing, _>(h, |t| Ok(t.0)).unwrap(), 5, "from the cache");
        assert_eq!(with::<DeviceObj, _>(h, |_| Ok(())).unwrap_err(), CL_INVALID_DEVICE, "another kind");
        assert_eq!(with::<Thing, _>(std::ptr::null(), |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
        let stack = 0u64;
        assert_eq!(
            with::<Thing, _>(&stack as *const u64 as *const c_void, |_| Ok(())).unwrap_err(),
            CL_INVALID_CONTEXT
        );
        // A nested borrow (one slot per thread) takes a counted reference.
        let nested = with::<Thing, _>(h, |outer| with::<Thing, _>(h, |inner| Ok(outer.0 + inner.0)));
        assert_eq!(nested.unwrap(), 10);
        release::<Thing>(h).unwrap();
        assert_eq!(with::<Thing, _>(h, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT, "cached, then freed");
    }

    #[test]
    fn destruction_waits_for_a_borrow_on_another_thread() {
        use std::sync::atomic::AtomicBool;
        use std::sync::mpsc;

        static DROPPED: AtomicBool = AtomicBool::new(false);
        #[derive(Debug)]
        struct Noisy;
        impl Drop for Noisy {
            fn drop(&mut self) {
                DROPPED.store(true, Ordering::SeqCst);
            }
        }
        impl Kind for Noisy {
            const TAG: Tag = Tag::Context;
            const INVALID: cl_int = CL_INVALID_CONTEXT;
        }

        let h = into_handle(new_object(Noisy)) as usize;
        let (borrowed_tx, borrowed_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let borrower = s.spawn(move || {
                with::<Noisy, _>(h as *const c_void, |_| {
                    borrowed_tx.send(()).unwrap();
                    go_rx.recv().unwrap(); // the release has started
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    // Still ours: its fields were not dropped under us.
                    Ok(DROPPED.load(Ordering::SeqCst))
                })
            });
            borrowed_rx.recv().unwrap();
            let releaser = s.spawn(move || release::<Noisy>(h as *const c_void));
            go_tx.send(()).unwrap();
            assert_eq!(borrower.join().unwrap(), Ok(false), "destroyed while borrowed");
            assert_eq!(releaser.join().unwrap(), Ok(()));
        });
        assert!(DROPPED.load(Ordering::SeqCst), "destroyed once the borrow ended");
        assert_eq!(with::<Noisy, _>(h as *const c_void, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
    }

    #[test]
    fn an_extra_release_cannot_take_an_implicit_reference() {
        let obj = new_object(Thing(1));
        let h = into_handle(obj.clone()); // `obj` plays an implicit reference
        release::<Thing>(h).unwrap();
        assert_eq!(release::<Thing>(h).unwrap_err(), CL_INVALID_CONTEXT);
        assert!(get::<Thing>(h).is_ok(), "still alive through the implicit reference");
        assert_eq!(reference_count(&get::<Thing>(h).unwrap()), 1);
        drop(obj);
        assert!(get::<Thing>(h).is_err());
    }

    #[test]
    fn the_per_thread_cache_answers_as_the_registry_does() {
        let a = into_handle(new_object(Thing(1)));
        assert_eq!(get::<Thing>(a).unwrap().inner.0, 1, "now cached");
        assert_eq!(get::<DeviceObj>(a).unwrap_err(), CL_INVALID_DEVICE, "cached, but another kind");
        release::<Thing>(a).unwrap();
        assert_eq!(get::<Thing>(a).unwrap_err(), CL_INVALID_CONTEXT, "cached, then freed");
        // A released object's header is quarantined: a new object gets
        // another handle.
        let b = into_handle(new_object(Thing(2)));
        assert_ne!(a, b);
        assert_eq!(get::<Thing>(b).unwrap().inner.0, 2);
        assert_eq!(get::<Thing>(a).unwrap_err(), CL_INVALID_CONTEXT, "not cached, freed");
        // Another thread has its own cache and the same answers.
        let (ua, ub) = (a as usize, b as usize);
        std::thread::scope(|s| {
            s.spawn(move || {
                assert_eq!(get::<Thing>(ub as *const c_void).unwrap().inner.0, 2);
                assert_eq!(get::<Thing>(ua as *const c_void).unwrap_err(), CL_INVALID_CONTEXT);
            });
        });
        release::<Thing>(b).unwrap();
        assert_eq!(get::<Thing>(b).unwrap_err(), CL_INVALID_CONTEXT);
    }

    /// Runs test `name` of this module alone in a child process of this test
    /// binary, so that no other test's threads hold a lock when it forks;
    /// `true` in that child (run the test), `false` in the parent (done).
    fn alone_in_a_child(name: &str) -> bool {
        const CHILD: &str = "DMABRIDGE_ICD_TEST_CHILD";
        if std::env::var_os(CHILD).is_some() {
            return true;
        }
        let exe = std::env::current_exe().unwrap();
        let full = format!("handles::tests::{name}");
        let out = std::process::Command::new(exe)
            .args([full.as_str(), "--exact", "--test-threads=1", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && text.contains("1 passed"), "{full} in a child process failed:\n{text}");
        false
    }

    #[test]
    fn a_forked_child_does_not_wait_for_its_parents_threads() {
        use std::sync::mpsc;
        if !alone_in_a_child("a_forked_child_does_not_wait_for_its_parents_threads") {
            return;
        }
        let h = into_handle(new_object(Thing(3))) as usize;
        let (borrowing_tx, borrowing_rx) = mpsc::channel();
        let (end_tx, end_rx) = mpsc::channel::<()>();
        // A thread of the parent is inside a borrow of the object when the
        // process forks: the child has no such thread.
        let borrower = std::thread::spawn(move || {
            with::<Thing, _>(h as *const c_void, |_| {
                borrowing_tx.send(()).unwrap();
                let _ = end_rx.recv();
                Ok(())
            })
        });
        borrowing_rx.recv().unwrap();
        // SAFETY: the child calls only `release` (no other thread of this
        // process holds a lock of the ICD: the borrower waits inside its
        // borrow, after its lookup) and `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let ok = release::<Thing>(h as *const c_void).is_ok();
            // SAFETY: ends the child without running the parent's atexit work.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // SAFETY: waitpid on our own child, with a valid status pointer.
        while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
            if std::time::Instant::now() > deadline {
                // SAFETY: our own child, then reaped.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("the child's release still waits after 30 s for a thread of the parent");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child's release failed: {status:#x}");
        end_tx.send(()).unwrap();
        assert_eq!(borrower.join().unwrap(), Ok(()));
        release::<Thing>(h as *const c_void).unwrap();
    }

    #[test]
    fn contexts_and_devices_stay_cached_side_by_side() {
        let Some(device) = devices().first() else { return };
        let (ctx, dev) = (into_handle(new_object(Thing(4))) as usize, handle_of(device) as usize);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            // Both looked up once (the registry answers, the cache learns).
            with::<Thing, _>(ctx as *const c_void, |_| Ok(())).unwrap();
            get::<DeviceObj>(dev as *const c_void).unwrap();
            ready_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            // As clDeviceMemAllocINTEL does: the context, then the device.
            for _ in 0..3 {
                with::<Thing, _>(ctx as *const c_void, |_| get::<DeviceObj>(dev as *const c_void).map(drop)).unwrap();
            }
            done_tx.send(()).unwrap();
        });
        ready_rx.recv().unwrap();
        // With the registry locked, only the per-thread cache can answer.
        let registry = sync::lock(registry());
        go_tx.send(()).unwrap();
        let answered = done_rx.recv_timeout(std::time::Duration::from_secs(30));
        drop(registry);
        worker.join().unwrap();
        assert!(answered.is_ok(), "alternating a context and a device went to the registry's lock");
        release::<Thing>(ctx as *const c_void).unwrap();
    }

    #[test]
    fn a_released_handle_stays_readable_by_the_loader_after_churn() {
        // Alone: another test's live object could take the stale header.
        if !alone_in_a_child("a_released_handle_stays_readable_by_the_loader_after_churn") {
            return;
        }
        let dispatch_word = |h: *mut c_void| {
            // SAFETY: what the loaders do with every handle; headers are
            // never freed, so this reads our memory whatever `h`'s state.
            unsafe { h.cast::<*const cl_icd_dispatch>().read() }
        };
        let stale = into_handle(new_object(Thing(8)));
        release::<Thing>(stale).unwrap();
        // Enough churn that the stale header is reused (the quarantine is
        // FIFO) and released again, among allocations of every size.
        let mut junk = Vec::new();
        for i in 0..2 * QUARANTINE + SLAB {
            let h = into_handle(new_object(Thing(i as u32)));
            junk.push(vec![0u8; 16 + i % 200]);
            release::<Thing>(h).unwrap();
            if junk.len() > 64 {
                junk.clear();
            }
        }
        assert!(std::ptr::eq(dispatch_word(stale), &DISPATCH), "the stale handle's dispatch word changed");
        assert_eq!(get::<Thing>(stale).unwrap_err(), CL_INVALID_CONTEXT);
        assert_eq!(release::<Thing>(stale).unwrap_err(), CL_INVALID_CONTEXT);
        assert_eq!(with::<Thing, _>(stale, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
    }

    #[test]
    fn a_reused_header_answers_for_its_new_object() {
        // Alone: another test's new object could take the header first.
        if !alone_in_a_child("a_reused_header_answers_for_its_new_object") {
            return;
        }
        let first = into_handle(new_object(Thing(1)));
        assert_eq!(with::<Thing, _>(first, |t| Ok(t.0)).unwrap(), 1, "cached");
        let generation = |h: *mut c_void| {
            // SAFETY: a header (never freed).
            unsafe { &*h.cast::<Header>() }.generation.load(Ordering::Relaxed)
        };
        let before = generation(first);
        release::<Thing>(first).unwrap();
        // Churn until the header comes back for a new object.
        let mut again = None;
        for _ in 0..2 * QUARANTINE + SLAB {
            let h = into_handle(new_object(Thing(100)));
            if h == first {
                again = Some(h);
                break;
            }
            release::<Thing>(h).unwrap();
        }
        let again = again.expect("the quarantined header is reused");
        assert_ne!(generation(again), before, "a new generation");
        // This thread's cache still names the old object: the new one answers.
        assert_eq!(with::<Thing, _>(again, |t| Ok(t.0)).unwrap(), 100);
        assert_eq!(get::<Thing>(again).unwrap().inner.0, 100);
        release::<Thing>(again).unwrap();
    }

    #[test]
    fn devices_have_handles() {
        for d in Platform::get().devices() {
            let h = device_handle(d);
            assert!(Arc::ptr_eq(&get::<DeviceObj>(h.cast()).unwrap().inner.device, d));
        }
        assert_eq!(check_platform(platform_handle(), false), Ok(()));
        assert_eq!(check_platform(std::ptr::null_mut(), false), Err(CL_INVALID_PLATFORM));
    }
}
