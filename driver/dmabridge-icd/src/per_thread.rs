//! Everything the ICD keeps per thread, in one thread-local.
//!
//! The ICD is a shared library loaded with `dlopen`, so each access to a
//! thread-local of it is a call to the dynamic linker's `__tls_get_addr`
//! (the general-dynamic TLS model; the initial-exec model, a plain load
//! from the thread pointer as an executable's thread-locals get, cannot be
//! chosen on stable Rust: `-Z tls-model` and `#[thread_local]` are
//! unstable). With one thread-local per concern (the call's note, its
//! message, the handle cache, the hazard slot) an alloc+free pair made ten
//! such calls. Here they are fields of one [`PerThread`]: an entry point
//! finds it once ([`Call::begin`](crate::notify::Call::begin)) and hands it
//! to the lookups of the hot paths ([`crate::entry::object_with`],
//! [`crate::entry::status_with`]).

use std::cell::{Cell, RefCell};

use crate::handles::HandleCache;
use crate::hazard;
use crate::notify::{Message, Note};

/// One thread's state (see the module doc).
pub(crate) struct PerThread {
    /// What the current call noted (`notify.rs`).
    pub(crate) note: Cell<Note>,
    /// The last error message of the current call, with its code.
    pub(crate) message: RefCell<Message>,
    /// The last lookup of each kind (`handles.rs`).
    pub(crate) cache: RefCell<HandleCache>,
    /// The hazard slot and whether a borrow holds it (`hazard.rs`).
    pub(crate) hazard: hazard::Local,
}

thread_local! {
    static PER_THREAD: PerThread = const {
        PerThread {
            note: Cell::new(Note::FRESH),
            message: RefCell::new(None),
            cache: RefCell::new(HandleCache::EMPTY),
            hazard: hazard::Local::new(),
        }
    };
}

/// Runs `f` on this thread's state; `None` (and `f` not run) while the
/// thread is exiting and the state is gone.
pub(crate) fn with<R>(f: impl FnOnce(&PerThread) -> R) -> Option<R> {
    #[cfg(test)]
    tests::count_lookup();
    PER_THREAD.try_with(f).ok()
}

/// This thread's state, as a pointer valid until the thread's thread-local
/// destructors run (NULL once they have); see [`with_pointer`] for its use.
pub(crate) fn pointer() -> *const PerThread {
    #[cfg(test)]
    tests::count_lookup();
    PER_THREAD.try_with(|p| p as *const PerThread).unwrap_or(std::ptr::null())
}

/// The state behind `p`, a [`pointer`] of this thread, for as long as the
/// caller's borrow `'a` (bounded by something that stays on this thread's
/// stack during one entry point's call).
///
/// # Safety
/// `p` is NULL or came from [`pointer`] on this thread, during the entry
/// point call that `'a` lies within.
pub(crate) unsafe fn with_pointer<'a>(p: *const PerThread) -> Option<&'a PerThread> {
    // SAFETY: a non-NULL `p` is this thread's `PER_THREAD`, alive when it
    // was taken. It is dropped only by this thread's thread-local
    // destructors, which run one after another, never during an entry point
    // call that started while it was alive (a call from a later destructor
    // finds `pointer` NULL). `PerThread` is not `Sync`, and `'a` stays on
    // this thread.
    unsafe { p.as_ref() }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::ffi::c_void;

    use opencl_sys::*;

    use crate::api::context::{clCreateContext, clReleaseContext};
    use crate::api::svm::{clSVMAlloc, clSVMFree};
    use crate::api::usm::{clDeviceMemAllocINTEL, clHostMemAllocINTEL, clMemFreeINTEL, clSharedMemAllocINTEL};
    use crate::handles::{devices, handle_of};

    thread_local! {
        /// How often this thread looked its state up.
        static LOOKUPS: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn count_lookup() {
        LOOKUPS.with(|n| n.set(n.get() + 1));
    }

    /// The lookups of the state `f` made on this thread.
    fn lookups(f: impl FnOnce()) -> usize {
        let before = LOOKUPS.with(Cell::get);
        f();
        LOOKUPS.with(Cell::get) - before
    }

    #[test]
    fn the_hot_entry_points_look_the_thread_state_up_once_per_call() {
        let cpu: cl_device_id = handle_of(&devices()[0]).cast();
        let mut err = CL_SUCCESS;
        // SAFETY: one valid device handle, no properties or callback, `err`
        // a local; every pointer below is an allocation made here.
        unsafe {
            let ctx = clCreateContext(std::ptr::null(), 1, &cpu, None, std::ptr::null_mut(), &mut err);
            assert_eq!(err, CL_SUCCESS);
            // The first calls fill the handle cache (a registry lookup):
            // what is counted is the steady state.
            for _ in 0..2 {
                let p = clHostMemAllocINTEL(ctx, std::ptr::null(), 4096, 0, &mut err);
                assert_eq!(clMemFreeINTEL(ctx, p), CL_SUCCESS);
            }
            let mut p: *mut c_void = std::ptr::null_mut();
            let once = "one look at the thread's state per call";
            assert_eq!(lookups(|| p = clHostMemAllocINTEL(ctx, std::ptr::null(), 4096, 0, &mut err)), 1, "{once}");
            assert_eq!(err, CL_SUCCESS);
            assert_eq!(lookups(|| err = clMemFreeINTEL(ctx, p)), 1, "{once}");
            assert_eq!(err, CL_SUCCESS);
            assert_eq!(
                lookups(|| p = clDeviceMemAllocINTEL(ctx, cpu, std::ptr::null(), 4096, 0, &mut err)),
                1,
                "{once}"
            );
            assert_eq!((err, clMemFreeINTEL(ctx, p)), (CL_SUCCESS, CL_SUCCESS));
            assert_eq!(
                lookups(|| p = clSharedMemAllocINTEL(ctx, cpu, std::ptr::null(), 4096, 0, &mut err)),
                1,
                "{once}"
            );
            assert_eq!((err, clMemFreeINTEL(ctx, p)), (CL_SUCCESS, CL_SUCCESS));
            assert_eq!(lookups(|| p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 4096, 0)), 1, "{once}");
            assert!(!p.is_null());
            assert_eq!(lookups(|| clSVMFree(ctx, p)), 1, "{once}");
            assert_eq!(clReleaseContext(ctx), CL_SUCCESS);
        }
    }
}
