//! The one lock policy of dmabridge and its faces: every `Mutex`, `RwLock`
//! and `Condvar` wait goes through these functions, which take the lock
//! also when a panic poisoned it.
//!
//! Why not `lock().unwrap()`: the ICD catches every panic at the C boundary
//! and turns it into an error code, so the process lives on after one. A
//! poisoned lock would then fail every later call that takes it: one panic
//! under a heap pool's lock (a user callback of
//! [`Heap::for_each_allocation`](crate::memory::heap::Heap::for_each_allocation),
//! a bug) and no allocation of that size would ever succeed again. Poisoning
//! is a hint, not a safety mechanism: std's guards give memory-safe access
//! either way, so what matters is whether the guarded state still holds its
//! invariants after a panic part-way through a critical section. For each
//! kind of state dmabridge keeps behind a lock, it does:
//!
//! - **Allocators** (heap pools, granules and large allocations, the IOVA
//!   allocator, a BAR device's sub-allocator, a VFIO container's mappings):
//!   a critical section takes a range out of its free structure before it
//!   publishes it, and unpublishes before it gives one back. A panic
//!   part-way leaks the range (never handed out again), it never hands one
//!   out twice.
//! - **Registries and lists** (live queues and doorbells as weak references,
//!   open BARs, exports and imports, destructor callbacks, maps of a
//!   buffer, I/O ranges): entries are inserted and removed whole, each by
//!   one call of a std collection, which leaves the collection valid if it
//!   panics.
//! - **State machines** (events, queue schedulers, the transfer pool, the
//!   edu engine's interrupt state, a store's residency, a dma-buf's sync
//!   state): fields are assigned whole, and no user code runs under these
//!   locks (commands and callbacks run after the guard is dropped), so only
//!   a bug in dmabridge itself could panic under them.
//!
//! In every case the state after a panic is one the code already handles
//! (at worst some memory that is never reused); refusing every later call
//! would turn one failed operation into a dead process. `make lint` checks
//! that no `lock().unwrap()`, `read().unwrap()` or `write().unwrap()` comes
//! back in `driver/*/src`.
//!
//! Not parking_lot: its locks do not poison, which is the same policy, but
//! it is one more dependency of the C library for four functions, and std's
//! `Condvar` pairs only with std's `Mutex`.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The lock of `m`, also when a panic poisoned it (see the module's
/// documentation for why that is sound).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// let m = Arc::new(Mutex::new(1));
/// let m2 = m.clone();
/// let _ = std::thread::spawn(move || {
///     let _g = m2.lock();
///     panic!("poisons the lock");
/// })
/// .join();
/// assert!(m.is_poisoned());
/// *dmabridge::sync::lock(&m) += 1;
/// assert_eq!(*dmabridge::sync::lock(&m), 2);
/// ```
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `l` locked for reading, also when a panic poisoned it.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// `l` locked for writing, also when a panic poisoned it.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv`, giving `guard` back when woken, also when a panic
/// poisoned its mutex meanwhile.
pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// The contents of `m` through an exclusive reference (no locking: in
/// `Drop`), also when a panic poisoned it.
pub fn get_mut<T: ?Sized>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// [`get_mut`] for an `RwLock`.
pub(crate) fn get_mut_rw<T: ?Sized>(l: &mut RwLock<T>) -> &mut T {
    l.get_mut().unwrap_or_else(PoisonError::into_inner)
}
