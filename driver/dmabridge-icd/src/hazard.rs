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
//! (old kernels, seccomp), both sides use a `SeqCst` fence instead.
//!
//! Written here rather than taken from `haphazard`: that crate protects
//! pointers loaded from an `AtomicPtr` and retires objects it owns; here the
//! pointer comes from the application and the object is owned by an `Arc`
//! whose last drop must stay synchronous (destructor callbacks run at
//! release), so only its ~40 lines of slot handling would be reused.

use std::cell::Cell;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rustix::thread::{membarrier, MembarrierCommand};

use crate::entry::lock;

/// One thread's hazard slot: the address it protects, or 0.
#[derive(Debug, Default)]
struct Slot {
    /// The protected address.
    hazard: AtomicUsize,
    /// Whether a live thread owns the slot (slots are reused, never freed).
    owned: AtomicBool,
}

/// Every slot ever handed out (leaked: a destroyer may read a slot whose
/// thread has just exited).
static SLOTS: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());

/// Whether callers may use a compiler fence (`membarrier` registered), decided
/// once, by the first caller, before any slot is used.
static ASYMMETRIC: OnceLock<bool> = OnceLock::new();

fn asymmetric() -> bool {
    *ASYMMETRIC.get_or_init(|| match membarrier(MembarrierCommand::RegisterPrivateExpedited) {
        Ok(()) => true,
        Err(e) => {
            log::debug!("membarrier(REGISTER_PRIVATE_EXPEDITED): {e}; handle borrows use SeqCst fences");
            false
        }
    })
}

/// This thread's claim on a slot; gives it back when the thread exits.
struct Owner(&'static Slot);

impl Owner {
    fn claim() -> Owner {
        let mut slots = lock(&SLOTS);
        let free =
            slots.iter().find(|s| s.owned.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok());
        let slot = match free {
            Some(s) => *s,
            None => {
                let s: &'static Slot =
                    Box::leak(Box::new(Slot { hazard: AtomicUsize::new(0), owned: AtomicBool::new(true) }));
                slots.push(s);
                s
            }
        };
        Owner(slot)
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.hazard.store(0, Ordering::Release);
        self.0.owned.store(false, Ordering::Release);
    }
}

thread_local! {
    static OWNER: Owner = Owner::claim();
    /// Set while this thread holds a [`Protected`] (no nesting: one slot).
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// `addr`, protected on this thread until dropped.
#[derive(Debug)]
pub(crate) struct Protected {
    slot: &'static Slot,
}

impl Drop for Protected {
    fn drop(&mut self) {
        self.slot.hazard.store(0, Ordering::Release);
        let _ = BUSY.try_with(|b| b.set(false));
    }
}

/// Protects `addr` on this thread: from now until the result drops, an
/// object at `addr` that is alive *after* this call returns cannot be
/// destroyed (its destroyer waits in [`wait_unprotected`]).
///
/// `None` when this thread already protects an address (a nested call) or
/// is exiting: the caller then takes a counted reference instead.
pub(crate) fn protect(addr: usize) -> Option<Protected> {
    let asymmetric = asymmetric();
    if BUSY.try_with(|b| b.replace(true)).ok()? {
        return None;
    }
    let Ok(slot) = OWNER.try_with(|o| o.0) else {
        let _ = BUSY.try_with(|b| b.set(false));
        return None;
    };
    slot.hazard.store(addr, Ordering::Relaxed);
    // The store must be ordered before the caller's liveness check: the
    // destroyer's membarrier supplies the hardware barrier, this fence keeps
    // the compiler from moving the check above the store.
    if asymmetric {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
    Some(Protected { slot })
}

/// Waits until no other thread protects `addr`. Called by an object that
/// [`protect`] callers may borrow, when its strong count has reached 0 and
/// before its fields are dropped. The calling thread's own slot is not
/// waited for: a thread never destroys the object it is borrowing (the
/// borrowing entry points release no handles).
pub(crate) fn wait_unprotected(addr: usize) {
    // Decided here too if no caller has yet: both sides must agree.
    if asymmetric() {
        // Registered by the first `protect`, before any slot existed; the
        // command cannot fail after registration (EINVAL/EPERM are only
        // for unregistered or unsupported commands).
        if let Err(e) = membarrier(MembarrierCommand::PrivateExpedited) {
            log::error!("membarrier(PRIVATE_EXPEDITED) failed after registration: {e}");
            fence(Ordering::SeqCst);
        }
    } else {
        fence(Ordering::SeqCst);
    }
    let mine = OWNER.try_with(|o| o.0 as *const Slot).ok();
    // A snapshot: a slot claimed after this lock is taken belongs to a thread
    // that will see the count at 0 (the lock orders it after our decrement).
    let slots: Vec<&'static Slot> = lock(&SLOTS).clone();
    for slot in slots {
        if Some(slot as *const Slot) == mine {
            continue;
        }
        let mut spins = 0u32;
        while slot.hazard.load(Ordering::Acquire) == addr {
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
}
