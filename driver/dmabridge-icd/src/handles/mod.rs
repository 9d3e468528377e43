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
//!
//! One idea a file: the header, the object and the handle functions here;
//! `registry` (live objects, header slabs, quarantine, the per-thread
//! cache), `platform` (the platform and device objects).

mod platform;
mod registry;
#[cfg(test)]
mod tests;

use std::any::Any;
use std::ffi::c_void;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use dmabridge::sync;
use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::*;

use crate::dispatch::DISPATCH;
use crate::entry::ClRes;
use crate::hazard;
use crate::per_thread::{self, PerThread};
use dmabridge::sys::addr::HostAddr;
pub use platform::{
    check_platform, device, device_handle, device_list, devices, platform_handle, DeviceObj, PlatformObj, PLATFORM,
};
pub(crate) use registry::HandleCache;
pub use registry::QUARANTINE;
use registry::{cached, registry, remember, Entry};

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
    /// `cl_semaphore_khr`.
    Semaphore,
    /// `cl_sampler`.
    Sampler,
}

/// How many kinds there are (the per-thread cache has a line for each).
const KINDS: usize = Tag::Sampler as usize;

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
        if !self.tag.borrowable() || hazard::wait_unprotected(HostAddr::of(data.as_ptr())) {
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

/// The live object of kind `T` behind `handle`, or `T::INVALID` for NULL, a
/// released object, an address that was never a handle, or another kind.
pub fn get<T: Kind>(handle: *const c_void) -> ClRes<Arc<Obj<T>>> {
    if handle.is_null() {
        return Err(T::INVALID);
    }
    // During thread teardown the thread's state may be gone; the registry
    // still answers.
    let state = per_thread::pointer();
    // SAFETY: this thread's pointer, during this call.
    let state = unsafe { per_thread::with_pointer(state) };
    if let Some(obj) = state.and_then(|t| cached::<T, _>(t, handle, Entry::upgrade::<T>)) {
        note_context(state, obj.inner.notifier());
        return Ok(obj);
    }
    let registry = sync::lock(registry());
    let (header, entry) = registry.find(handle).filter(|(_, e)| e.is::<T>()).ok_or(T::INVALID)?;
    let obj = entry.upgrade::<T>().ok_or(T::INVALID)?;
    let entry = entry.clone();
    drop(registry);
    if let Some(t) = state {
        remember::<T>(t, header, entry);
    }
    note_context(state, obj.inner.notifier());
    Ok(obj)
}

/// Notes `n` as the call's notifier, on `state` if the caller has it.
fn note_context(state: Option<&PerThread>, n: crate::notify::Notifier) {
    match state {
        Some(t) => crate::notify::note_context_in(t, n),
        None => crate::notify::note_context(n),
    }
}

/// Runs `f` on the live object of kind `T` behind `handle`, borrowed for the
/// call without taking a reference (see `hazard.rs`); errors as [`get`].
/// For the hot entry points of borrowable kinds ([`Tag`]); any other kind,
/// or a nested call, takes a counted reference instead.
pub fn with<T: Kind, R>(handle: *const c_void, f: impl FnOnce(&T) -> ClRes<R>) -> ClRes<R> {
    let state = per_thread::pointer();
    // SAFETY: this thread's pointer, during this call.
    with_in(unsafe { per_thread::with_pointer(state) }, handle, f)
}

/// [`with`] on this thread's state `state` (which the entry point found
/// once for the whole call; `None` while the thread is exiting).
///
/// Inlined into the hot entry points: the common case, the thread's cached
/// lookup of the handle, is a handful of instructions; the rest (a first
/// lookup in the registry, a nested call, a kind that is not borrowed) is
/// [`with_uncached`], out of line.
#[inline(always)]
pub(crate) fn with_in<T: Kind, R>(
    state: Option<&PerThread>,
    handle: *const c_void,
    f: impl FnOnce(&T) -> ClRes<R>,
) -> ClRes<R> {
    if let (true, Some(t)) = (T::TAG.borrowable(), state) {
        // (A NULL handle is never cached: headers are not at address 0.)
        if let Some((_protected, data)) = cached::<T, _>(t, handle, |e| Some((e.protect(t)?, e.data))) {
            // SAFETY: as in `with_uncached`: `data` is the `Inner` allocation of a live `Obj<T>`, protected.
            return f(unsafe { borrowed(t, data) });
        }
    }
    with_uncached(state, handle, f)
}

/// The object `T` at `data`, borrowed, its context's notifier noted on `t`.
///
/// # Safety
/// `data` is the `Inner` allocation of an `Obj<T>` whose strong count was
/// above 0 after this thread protected `data`, still protected for `'a`.
#[inline(always)]
unsafe fn borrowed<'a, T: Kind>(t: &PerThread, data: *const ()) -> &'a T {
    // SAFETY: the caller's contract: `Obj::drop` waits until the protection drops before it frees the allocation,
    // and writes none of it before (the `&mut` of the drop covers the `Obj`, not this).
    let obj = unsafe { &*(data as *const T) };
    crate::notify::note_context_in(t, obj.notifier());
    obj
}

/// [`with_in`] without the thread's cached lookup: from the registry
/// (remembered in the cache), or as a counted reference.
#[cold]
#[inline(never)]
fn with_uncached<T: Kind, R>(
    state: Option<&PerThread>,
    handle: *const c_void,
    f: impl FnOnce(&T) -> ClRes<R>,
) -> ClRes<R> {
    if handle.is_null() {
        return Err(T::INVALID);
    }
    if let (true, Some(t)) = (T::TAG.borrowable(), state) {
        // (`with_in` found no borrowable cached entry.)
        let from_registry = (|| {
            let registry = sync::lock(registry());
            let (header, entry) = registry.find(handle).filter(|(_, e)| e.is::<T>())?;
            let protected = entry.protect(t)?;
            let (data, entry) = (entry.data, entry.clone());
            drop(registry);
            remember::<T>(t, header, entry);
            Some((protected, data))
        })();
        if let Some((_protected, data)) = from_registry {
            // SAFETY: `data` is the `Inner` allocation of an `Obj<T>` (the entry's `TypeId`) whose strong count was
            // above 0 after `data` was protected; `_protected` drops after `f`.
            return f(unsafe { borrowed(t, data) });
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
