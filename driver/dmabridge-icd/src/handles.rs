//! Handles: every C object starts with a [`Header`] (the dispatch pointer the
//! loaders jump through, a second word reserved for cl_khr_icd2, a type
//! tag), and a handle is the address of an [`Obj`] inside an `Arc`.
//!
//! Validation never dereferences the caller's pointer: a handle is looked up
//! by address in the registry of live objects, which holds a `Weak` of each;
//! a released object (strong count 0) no longer upgrades and is removed
//! before its memory can be reused, so NULL, released and wrong-type handles
//! all answer the kind's `CL_INVALID_*` code.
//!
//! Reference counts: the CL reference count is the `Arc` strong count (the
//! application's references plus the implicit ones other objects hold, e.g.
//! a queue on its context, so that `CL_QUEUE_CONTEXT` stays valid after
//! `clReleaseContext`). The references the application owns are counted in
//! `app_refs` too, so that an extra `clRelease*` answers an error instead of
//! taking a reference some other object holds.

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use dmabridge::runtime::device::Device;
use dmabridge::runtime::platform::Platform;
use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::*;

use crate::dispatch::DISPATCH;
use crate::entry::{lock, ClRes};
use crate::hazard;

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

impl Tag {
    /// Whether objects of this kind may be borrowed by [`with`] (their
    /// destruction then waits for borrowers): contexts, which the hot USM and
    /// SVM entry points name.
    const fn borrowable(self) -> bool {
        matches!(self, Tag::Context)
    }
}

/// The first words of every C object.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    /// The ICD dispatch table (the loaders read this word).
    dispatch: *const cl_icd_dispatch,
    /// Reserved for the loader's per-platform data of cl_khr_icd2; never
    /// read or written by dmabridge (icd2 is not advertised).
    icd2: *mut c_void,
    /// The object's kind.
    tag: Tag,
}

// SAFETY: `dispatch` points to an immutable static and `icd2` is an opaque
// word nobody in this crate dereferences: sharing them is sound.
unsafe impl Send for Header {}
// SAFETY: as above; the header is never mutated after construction.
unsafe impl Sync for Header {}

impl Header {
    const fn new(tag: Tag) -> Header {
        Header { dispatch: &DISPATCH, icd2: std::ptr::null_mut(), tag }
    }

    /// Whether this header is one of ours (dispatch identity and tag).
    fn is(&self, tag: Tag) -> bool {
        std::ptr::eq(self.dispatch, &DISPATCH) && self.tag == tag
    }
}

/// A kind of C object: its tag and the error an invalid handle answers.
pub trait Kind: Any + Send + Sync + Sized {
    /// Its tag.
    const TAG: Tag;
    /// `CL_INVALID_CONTEXT`, `CL_INVALID_COMMAND_QUEUE`, ...
    const INVALID: cl_int;
}

/// A C object: the header first, then the application's reference count and
/// the Rust object.
#[repr(C)]
#[derive(Debug)]
pub struct Obj<T> {
    header: Header,
    app_refs: AtomicUsize,
    /// The object behind the handle.
    pub inner: T,
}

impl<T> Drop for Obj<T> {
    fn drop(&mut self) {
        if self.header.tag.borrowable() {
            // The strong count is 0: no new borrow starts; wait for the
            // running ones before the fields go.
            hazard::wait_unprotected(self as *const Obj<T> as usize);
        }
        // The registry's `Weak` keeps the memory until the entry is gone, so
        // the address cannot be reused by a new object before this removal.
        let entry = lock(registry()).remove(&(self as *const Obj<T> as usize));
        drop(entry);
    }
}

type Registry = BTreeMap<usize, Weak<dyn Any + Send + Sync>>;

fn registry() -> &'static Mutex<Registry> {
    static LIVE: Mutex<Registry> = Mutex::new(BTreeMap::new());
    &LIVE
}

/// A new object of kind `T`, registered, with no application reference yet
/// (see [`into_handle`]).
pub fn new_object<T: Kind>(inner: T) -> Arc<Obj<T>> {
    let obj = Arc::new(Obj { header: Header::new(T::TAG), app_refs: AtomicUsize::new(0), inner });
    let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(&obj) as Weak<dyn Any + Send + Sync>;
    lock(registry()).insert(Arc::as_ptr(&obj) as usize, weak);
    obj
}

/// The handle of `obj`, given to the application with one reference it
/// owns (released by [`release`]).
pub fn into_handle<T: Kind>(obj: Arc<Obj<T>>) -> *mut c_void {
    obj.app_refs.fetch_add(1, Ordering::AcqRel);
    Arc::into_raw(obj) as *mut c_void
}

/// The handle of `obj` without a new reference: for answers (info queries,
/// callbacks) about an object something else keeps alive.
pub fn handle_of<T>(obj: &Arc<Obj<T>>) -> *mut c_void {
    Arc::as_ptr(obj) as *mut c_void
}

thread_local! {
    /// The last handle this thread found in the registry, and its object:
    /// the registry's own answer again, without its lock, while the object
    /// lives (calls on one context or queue come in runs). The `Weak` keeps
    /// the object's memory, as the registry's does, so the address cannot
    /// name another object while it is cached; it upgrades exactly while
    /// the object is alive, which is exactly while the registry holds it.
    static LAST: std::cell::RefCell<Option<(usize, Weak<dyn Any + Send + Sync>)>> =
        const { std::cell::RefCell::new(None) };
}

/// [`LAST`]'s object if it is `handle`'s and alive.
fn cached(handle: usize) -> Option<Arc<dyn Any + Send + Sync>> {
    // `try_with`: during thread teardown the cache may be gone; the
    // registry still answers.
    LAST.try_with(|last| match &*last.borrow() {
        Some((h, weak)) if *h == handle => weak.upgrade(),
        _ => None,
    })
    .ok()
    .flatten()
}

/// The live object of kind `T` behind `handle`, or `T::INVALID` for NULL, a
/// released object, an address that was never a handle, or another kind.
pub fn get<T: Kind>(handle: *const c_void) -> ClRes<Arc<Obj<T>>> {
    if handle.is_null() {
        return Err(T::INVALID);
    }
    let any = cached(handle as usize).or_else(|| {
        let any = lock(registry()).get(&(handle as usize)).and_then(Weak::upgrade)?;
        // Replacing the cached `Weak` runs no object's `Drop` (a `Weak`
        // only frees memory), so nothing can re-enter the cache here.
        let _ = LAST.try_with(|last| *last.borrow_mut() = Some((handle as usize, Arc::downgrade(&any))));
        Some(any)
    });
    let obj = any.ok_or(T::INVALID)?.downcast::<Obj<T>>().map_err(|_| T::INVALID)?;
    if !obj.header.is(T::TAG) {
        return Err(T::INVALID);
    }
    Ok(obj)
}

/// Runs `f` on the live object of kind `T` behind `handle`, borrowed for the
/// call without taking a reference (see `hazard.rs`); errors as
/// [`get`]. For the hot entry points of borrowable kinds ([`Tag`]); any
/// other kind, or a nested call, takes a counted reference instead.
pub fn with<T: Kind, R>(handle: *const c_void, f: impl FnOnce(&Obj<T>) -> ClRes<R>) -> ClRes<R> {
    if handle.is_null() {
        return Err(T::INVALID);
    }
    let addr = handle as usize;
    let Some(_protected) = T::TAG.borrowable().then(|| hazard::protect(addr)).flatten() else {
        return f(&*get::<T>(handle)?);
    };
    // The object is alive (strong count > 0) now that `addr` is protected:
    // it stays so until `_protected` drops. The `Weak` that answers keeps its
    // memory, so reading the count of a released object is sound.
    let alive = |weak: &Weak<dyn Any + Send + Sync>| (weak.strong_count() > 0).then_some(weak.as_ptr());
    let cached = LAST
        .try_with(|last| match &*last.borrow() {
            Some((h, weak)) if *h == addr => Some(alive(weak)),
            _ => None,
        })
        .ok()
        .flatten();
    let ptr = match cached {
        Some(p) => p,
        None => {
            let registry = lock(registry());
            let weak = registry.get(&addr);
            let p = weak.and_then(alive);
            if let Some(weak) = weak.filter(|_| p.is_some()) {
                let weak = weak.clone();
                drop(registry);
                // Replacing the cached `Weak` runs no object's `Drop`.
                let _ = LAST.try_with(|last| *last.borrow_mut() = Some((addr, weak)));
            }
            p
        }
    };
    let ptr = ptr.ok_or(T::INVALID)?;
    // `ptr` is the data of an `Arc` whose strong count was above 0 after
    // `addr` was protected, so its destruction had not begun; a wrong kind
    // fails the downcast below before any field is read.
    // SAFETY: a borrowable kind's `Obj::drop` waits until `_protected` drops
    // (after this borrow) before dropping fields; the memory outlives `Drop`.
    let any: &(dyn Any + Send + Sync) = unsafe { &*ptr };
    let obj = any.downcast_ref::<Obj<T>>().ok_or(T::INVALID)?;
    if !obj.header.is(T::TAG) {
        return Err(T::INVALID);
    }
    f(obj)
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
    // with `Arc::into_raw` of this same allocation; it is given back once.
    // `obj` holds another, so the count stays positive until `obj` drops.
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
    handles.iter().map(|&h| get::<DeviceObj>(h.cast()).map(|d| d.inner.device.clone())).collect()
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
        assert_eq!(with::<Thing, _>(h, |t| Ok(t.inner.0)).unwrap(), 5, "from the registry");
        assert_eq!(with::<Thing, _>(h, |t| Ok(t.inner.0)).unwrap(), 5, "from the cache");
        assert_eq!(with::<DeviceObj, _>(h, |_| Ok(())).unwrap_err(), CL_INVALID_DEVICE, "another kind");
        assert_eq!(with::<Thing, _>(std::ptr::null(), |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
        let stack = 0u64;
        assert_eq!(
            with::<Thing, _>(&stack as *const u64 as *const c_void, |_| Ok(())).unwrap_err(),
            CL_INVALID_CONTEXT
        );
        // A nested borrow (one slot per thread) takes a counted reference.
        let nested = with::<Thing, _>(h, |outer| with::<Thing, _>(h, |inner| Ok(outer.inner.0 + inner.inner.0)));
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
        // The cached `Weak` keeps the freed object's memory: a new object
        // cannot take its address while the cache names it.
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
