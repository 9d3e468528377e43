//! Borrowing an object for one call without touching its reference count.
//!
//! The hot entry points (USM and SVM allocation and free) name their context
//! by handle. Looking it up as an `Arc` costs two atomic read-modify-writes
//! per call (upgrade, drop) — a third of the C path's overhead over the Rust
//! API. Instead, such a call *protects* the handle's address for its
//! duration, a hazard pointer with one slot per thread, and borrows the
//! object; an object that may be borrowed this way waits, when it is
//! destroyed, until no thread protects its address any more
//! ([`wait_unprotected`], from the object's `Drop`, before its fields go).
//!
//! The protocol is the classic store-then-check on both sides:
//! * a caller stores the address in its slot, then checks that the object
//!   is alive (its `Arc` strong count is not 0) before it touches it;
//! * a destroyer has already brought the strong count to 0, then scans the
//!   slots and waits while one holds the address.
//!
//! Either the destroyer sees the caller's slot (and waits) or the caller sees
//! the count at 0 (and answers the invalid-handle error). That needs a full
//! barrier between each side's store and load. On the caller's side, the
//! fast one, it is made by the destroyer: `membarrier(PRIVATE_EXPEDITED)`
//! makes every running thread of the process execute a full barrier, so the
//! caller needs only a compiler fence (asymmetric fences, as in folly's and
//! `haphazard`'s hazard pointers). Where `membarrier` cannot be registered
//! (old kernels, seccomp), both sides use a `SeqCst` fence instead. Where it
//! was registered but fails later (a seccomp filter installed by one thread
//! afterwards, ENOMEM), a fence on the destroyer's side alone orders nothing
//! on the callers': the destroyer cannot know that no caller still reads
//! the object, so the object is kept, never freed (and the failure logged).
//!
//! After a `fork`, the child has only the forking thread: a handler
//! (`pthread_atfork`) gives back the slots of the parent's other threads,
//! which would otherwise be waited for forever.
//!
//! Written here rather than taken from `haphazard`: that crate protects
//! pointers loaded from an `AtomicPtr` and retires objects it owns; here the
//! pointer comes from the application and the object is owned by an `Arc`
//! whose last drop must stay synchronous (destructor callbacks run at
//! release), so only its ~40 lines of slot handling would be reused.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Duration;

use dmabridge::sys::addr::HostAddr;
use rustix::io::Errno;
use rustix::thread::{membarrier, MembarrierCommand};

/// One thread's hazard slot: the address it protects, or 0. Alone on its
/// cache lines: each borrow writes it twice, and two threads whose slots
/// shared a line would take it from each other on every call.
#[derive(Debug)]
#[repr(align(128))]
struct Slot {
    /// The protected address.
    hazard: AtomicUsize,
    /// Whether a live thread owns the slot (slots are reused, never freed).
    owned: AtomicBool,
    /// The slot handed out before this one (the list only grows).
    next: *const Slot,
}

// SAFETY: `next` points to a leaked, immutable-after-publication `Slot` (or
// is NULL); the other fields are atomics.
unsafe impl Sync for Slot {}

/// The newest of every slot ever handed out, linked through `next`. A list
/// without a lock: leaked, because a destroyer may read a slot whose thread
/// has just exited, and lock-free, because the child of a `fork` must walk
/// it although a thread that does not exist there may have been adding a
/// slot (see [`after_fork_in_child`]).
static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(ptr::null_mut());

/// Every slot, newest first.
fn slots() -> impl Iterator<Item = &'static Slot> {
    let head = SLOTS.load(Ordering::Acquire);
    // SAFETY: the list holds leaked slots, each published (Release) after its
    // `next` was written.
    std::iter::successors(unsafe { head.as_ref() }, |s| unsafe { s.next.as_ref() })
}

/// Undecided, or how the two sides order their store before their load.
const UNDECIDED: u8 = 0;
/// Callers use a compiler fence, destroyers `membarrier` (registered).
const ASYMMETRIC: u8 = 1;
/// Both sides use a `SeqCst` fence (`membarrier` could not be registered).
const SYMMETRIC: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(UNDECIDED);
static DECIDE: Once = Once::new();

/// Whether callers may use a compiler fence (`membarrier` registered),
/// decided once, by the first caller, before any slot is used.
fn asymmetric() -> bool {
    DECIDE.call_once(|| {
        let mode = match membarrier(MembarrierCommand::RegisterPrivateExpedited) {
            Ok(()) => ASYMMETRIC,
            Err(e) => {
                log::debug!("membarrier(REGISTER_PRIVATE_EXPEDITED): {e}; handle borrows use SeqCst fences");
                SYMMETRIC
            }
        };
        MODE.store(mode, Ordering::Relaxed);
    });
    MODE.load(Ordering::Relaxed) == ASYMMETRIC
}

/// This thread's hazard state, a field of its `PerThread`: the slot it
/// claimed (on its first borrow; given back when the thread exits) and
/// whether a borrow holds it.
pub(crate) struct Local {
    slot: Cell<Option<&'static Slot>>,
    /// Set while this thread holds a [`Protected`] (no nesting: one slot).
    busy: Cell<bool>,
    /// [`asymmetric`], read when the slot was claimed (it never changes
    /// once decided): the hot path reads it here, beside the slot.
    asymmetric: Cell<bool>,
}

impl Local {
    /// No slot yet, not busy.
    pub(crate) const fn new() -> Local {
        Local { slot: Cell::new(None), busy: Cell::new(false), asymmetric: Cell::new(false) }
    }

    /// This thread's slot, claimed on the first call.
    #[inline(always)]
    fn slot(&self) -> &'static Slot {
        match self.slot.get() {
            Some(slot) => slot,
            None => self.claim_slot(),
        }
    }

    /// Claims this thread's slot, once the fence mode is decided.
    #[cold]
    #[inline(never)]
    fn claim_slot(&self) -> &'static Slot {
        self.asymmetric.set(asymmetric());
        let slot = claim();
        self.slot.set(Some(slot));
        slot
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.get() {
            let _ = MINE.try_with(|m| m.set(ptr::null()));
            slot.hazard.store(0, Ordering::Release);
            slot.owned.store(false, Ordering::Release);
        }
    }
}

/// A free slot for the calling thread: one a thread that exited gave back,
/// or a new one.
fn claim() -> &'static Slot {
    static AT_FORK: Once = Once::new();
    AT_FORK.call_once(|| {
        // SAFETY: registers a handler that only touches atomics of leaked
        // slots and makes a system call (async-signal-safe, as the child of
        // a multi-threaded fork requires).
        let rc = unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
        if rc != 0 {
            log::warn!("pthread_atfork: error {rc}; a forked child may wait for its parent's threads");
        }
    });
    let free = slots().find(|s| s.owned.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok());
    let slot = free.unwrap_or_else(|| {
        let slot: *mut Slot =
            Box::leak(Box::new(Slot { hazard: AtomicUsize::new(0), owned: AtomicBool::new(true), next: ptr::null() }));
        let mut head = SLOTS.load(Ordering::Acquire);
        loop {
            // SAFETY: `slot` is not published yet: this thread owns it.
            unsafe { (*slot).next = head };
            match SLOTS.compare_exchange_weak(head, slot, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => head = now,
            }
        }
        // SAFETY: leaked, so valid for 'static; no longer written.
        unsafe { &*slot }
    });
    let _ = MINE.try_with(|m| m.set(slot));
    slot
}

thread_local! {
    /// The slot this thread's [`Local`] holds (NULL before the first claim):
    /// readable without touching the rest of the thread's state, as the fork
    /// handler needs (a thread-local without destructor).
    static MINE: Cell<*const Slot> = const { Cell::new(ptr::null()) };
}

/// The child of a `fork` has one thread, the forking one: the slots of the
/// parent's other threads belong to threads that do not exist here and would
/// never be cleared, so a destroyer would wait for them forever. They are
/// given back; the forking thread's own slot stays its.
extern "C" fn after_fork_in_child() {
    let mine = MINE.try_with(Cell::get).unwrap_or(ptr::null());
    for slot in slots().filter(|&s| !ptr::eq(s, mine)) {
        slot.hazard.store(0, Ordering::Relaxed);
        slot.owned.store(false, Ordering::Release);
    }
    // The child has a memory map of its own: make sure its registration
    // holds (a no-op where the kernel copied it). If it fails, `membarrier`
    // fails too and `wait_unprotected` keeps the objects (never frees).
    if MODE.load(Ordering::Relaxed) == ASYMMETRIC {
        let _ = membarrier(MembarrierCommand::RegisterPrivateExpedited);
    }
}

/// `addr`, protected on this thread until dropped.
#[derive(Debug)]
pub(crate) struct Protected<'a> {
    slot: &'static Slot,
    busy: &'a Cell<bool>,
}

impl Drop for Protected<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.slot.hazard.store(0, Ordering::Release);
        self.busy.set(false);
    }
}

/// Protects `addr` on the thread of `local` (the calling thread's): from
/// now until the result drops, an object at `addr` that is alive *after*
/// this call returns cannot be destroyed (its destroyer waits in
/// [`wait_unprotected`]).
///
/// `None` when this thread already protects an address (a nested call):
/// the caller then takes a counted reference instead.
#[inline(always)]
pub(crate) fn protect(local: &Local, addr: HostAddr) -> Option<Protected<'_>> {
    if local.busy.replace(true) {
        return None;
    }
    // Claimed after the mode was decided (`claim_slot`), so that the mode
    // read below is the final one.
    let slot = local.slot();
    slot.hazard.store(addr.0, Ordering::Relaxed);
    // The store must be ordered before the caller's liveness check: the
    // destroyer's membarrier supplies the hardware barrier, this fence keeps
    // the compiler from moving the check above the store.
    if local.asymmetric.get() {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
    Some(Protected { slot, busy: &local.busy })
}

/// The destroyer's half of the store-then-check: a full barrier on every
/// thread of the process that may be between its slot store and its
/// liveness check. `false` when that could not be had: `membarrier` can
/// fail after registration (a seccomp filter is per thread, so a thread
/// that installed one later gets EPERM while others succeed; the kernel may
/// answer ENOMEM), and then a `SeqCst` fence on this side alone orders
/// nothing on the callers' side (they use a compiler fence).
fn barrier_on_all_threads() -> bool {
    if !asymmetric() {
        fence(Ordering::SeqCst);
        return true;
    }
    // ENOMEM and EAGAIN may pass; EPERM (a seccomp filter) will not.
    for attempt in 0..3 {
        match membarrier(MembarrierCommand::PrivateExpedited) {
            Ok(()) => return true,
            Err(e) if matches!(e, Errno::NOMEM | Errno::AGAIN | Errno::INTR) && attempt < 2 => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => {
                log::error!(
                    "membarrier(PRIVATE_EXPEDITED) failed after registration ({e}; a seccomp filter on this \
                     thread that refuses membarrier answers EPERM): the object is kept, not freed, because \
                     a thread may still be using it; allow membarrier to free released contexts"
                );
                return false;
            }
        }
    }
    false
}

/// Waits until no other thread protects `addr`. Called by an object that
/// [`protect`] callers may borrow, when its strong count has reached 0 and
/// before its fields are dropped. The calling thread's own slot is not
/// waited for: a thread never destroys the object it is borrowing (the
/// borrowing entry points release no handles).
///
/// `false` when it cannot be known that no thread still uses the object
/// (see [`barrier_on_all_threads`]): the caller must then never free it.
#[must_use]
pub(crate) fn wait_unprotected(addr: HostAddr) -> bool {
    if !barrier_on_all_threads() {
        return false;
    }
    let mine = MINE.try_with(Cell::get).unwrap_or(ptr::null());
    // The list as it is now: a slot added later belongs to a thread whose
    // liveness check comes after the barrier above, so it sees the count at 0.
    for slot in slots().filter(|&s| !ptr::eq(s, mine)) {
        let mut spins = 0u32;
        while slot.hazard.load(Ordering::Acquire) == addr.0 {
            // A borrowing call is short (an allocation or a free): spin a
            // little, then yield, then sleep.
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else if spins < 128 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use opencl_sys::{cl_int, CL_INVALID_CONTEXT};

    use crate::handles::{into_handle, new_object, release, with, Kind, Tag};

    /// Installs a seccomp filter on the calling thread (only) under which
    /// `membarrier` answers EPERM, as an application's sandboxing thread may.
    fn refuse_membarrier_on_this_thread() {
        use libc::{sock_filter, sock_fprog, BPF_ABS, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
        let op = |code: u32, jt: u8, jf: u8, k: u32| sock_filter { code: code as u16, jt, jf, k };
        let mut filter = [
            // Load seccomp_data.nr (offset 0).
            op(BPF_LD | BPF_W | BPF_ABS, 0, 0, 0),
            op(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, libc::SYS_membarrier as u32),
            op(BPF_RET | BPF_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
            op(BPF_RET | BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
        ];
        let prog = sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
        // SAFETY: prctl and seccomp with valid arguments; `prog` outlives the
        // call, which copies the filter. Without SECCOMP_FILTER_FLAG_TSYNC
        // the filter applies to this thread only.
        unsafe {
            assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0, "PR_SET_NO_NEW_PRIVS");
            let rc = libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog as *const sock_fprog);
            assert_eq!(rc, 0, "seccomp(SET_MODE_FILTER): {}", std::io::Error::last_os_error());
        }
        let refused = rustix::thread::membarrier(rustix::thread::MembarrierCommand::PrivateExpedited);
        assert_eq!(refused, Err(rustix::io::Errno::PERM), "the filter refuses membarrier");
    }

    #[test]
    fn a_failed_membarrier_never_frees_an_object() {
        static DROPPED: AtomicBool = AtomicBool::new(false);
        #[derive(Debug)]
        struct Kept;
        impl Drop for Kept {
            fn drop(&mut self) {
                DROPPED.store(true, Ordering::SeqCst);
            }
        }
        impl Kind for Kept {
            const TAG: Tag = Tag::Context;
            const INVALID: cl_int = CL_INVALID_CONTEXT;
        }

        let h = into_handle(new_object(Kept)) as usize;
        // The first borrow registers membarrier: callers use compiler fences.
        with::<Kept, _>(h as *const _, |_| Ok(())).unwrap();
        if !super::asymmetric() {
            println!("membarrier cannot be registered here: both sides use SeqCst fences, nothing to test");
            return;
        }
        // Another thread, sandboxed after registration, releases the object:
        // its membarrier fails, so it cannot know that no thread reads it.
        let released = std::thread::spawn(move || {
            refuse_membarrier_on_this_thread();
            release::<Kept>(h as *const _)
        });
        assert_eq!(released.join().unwrap(), Ok(()));
        assert!(!DROPPED.load(Ordering::SeqCst), "the object was freed although membarrier failed");
        assert_eq!(with::<Kept, _>(h as *const _, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT, "still released");
    }
}
