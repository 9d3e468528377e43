//! The process-wide locks a child of `fork` may need, taken around every
//! `fork` so that no other thread holds one when the process is copied.
//!
//! The child of a multi-threaded process has only the forking thread. A lock
//! another thread held at the fork stays locked in the child forever, and the
//! child's first call that needs it hangs. The platform's first build and the
//! registries that live for the process (dma-buf exports, host imports, BAR buffers and their surfaces,
//! I/O ranges, wait-signal doorbells and interrupt fds) are reached by calls a
//! child may make (freeing memory whose pages were exported, importing host
//! memory, any copy or fill, which checks the I/O ranges). Each declares its
//! lock here ([`ACROSS_FORK`]); the first use of any of them installs one
//! `pthread_atfork` set ([`install`]) whose prepare handler takes every lock
//! in [`Rank`] order, and whose parent and child handlers give them back, on
//! the forking thread that holds them.
//!
//! Why a rank: a thread may hold one registry's lock while it takes another's
//! (a BAR buffer holds the surface list across opening the BAR, which
//! registers an I/O range). The handler must take them in the order the code
//! nests them, or it could wait for a lock whose holder waits for one the
//! handler already has.
//!
//! Why the rows are linked in (`linkme`) rather than registered at run time:
//! a thread registering one lock while it holds another would have to wait
//! for a fork in progress, whose handler may wait for the lock it holds. The
//! table is whole before `main`.
//!
//! Not here, for the reasons their modules give: the ICD's handle registry
//! and hazard slots (their own handlers), the forking thread's io_uring and
//! the transfer helpers (per process, by `getpid`). Per-device and
//! per-context locks are not taken: a child works in contexts of its own.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Once;

use linkme::distributed_slice;

/// The order in which the fork handler takes the locks: a lock may be held
/// while one of a later rank is taken, never the other way round. One lock
/// per rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// The platform's first build (`runtime::platform`), which opens the
    /// devices and registers their interrupt fds and I/O ranges (below).
    /// First: the registries are used only once the platform exists (each
    /// of their users builds it before it takes their locks).
    Platform,
    /// The surfaces of the live external physical buffers (`ext::amd_bus`):
    /// held while the BAR is opened (below).
    Surfaces,
    /// The open BAR mappings of external physical buffers: held while one is
    /// opened, which registers its I/O range (last).
    OpenBars,
    /// The dma-buf exports of heap pages (`memory::exports`): held while an
    /// import pins the pages.
    Exports,
    /// Live host imports (`ext::arm_import`).
    HostImports,
    /// The interrupt fds of remote devices (`ext::amd_bus::signal`).
    IrqFds,
    /// The doorbells of wait-signal commands under way.
    Doorbells,
    /// I/O memory ranges (`runtime::transfer::io`), written by a BAR's
    /// opening and read by every copy and fill that meets one.
    IoRanges,
}

impl Rank {
    /// Every rank, in order.
    #[cfg(test)]
    const ALL: [Rank; 8] = [
        Rank::Platform,
        Rank::Surfaces,
        Rank::OpenBars,
        Rank::Exports,
        Rank::HostImports,
        Rank::IrqFds,
        Rank::Doorbells,
        Rank::IoRanges,
    ];
}

/// A process-wide lock, as the fork handler takes it.
pub(crate) struct ForkLock {
    pub(crate) rank: Rank,
    /// Takes the lock (for writing, if it is a reader-writer lock) and
    /// returns its guard, which gives it back when dropped.
    pub(crate) take: fn() -> Box<dyn Any>,
}

/// Every [`ForkLock`] of the library, one row per process-wide registry.
#[distributed_slice]
pub(crate) static ACROSS_FORK: [ForkLock];

/// Installs the fork handlers, once per process. Every registry calls it
/// before it takes its lock (an atomic load once installed), so that the
/// handlers are in place before any of the locks can be held.
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Not rustix: it has no pthread_atfork (a libc function, not a
        // system call).
        // SAFETY: the handlers take and give back the locks of the table on
        // the forking thread only; the child's handler only drops guards
        // (unlock, free), which glibc and musl allow there, having made
        // malloc usable in the child before user handlers run.
        let rc = unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
        if rc != 0 {
            log::warn!("pthread_atfork: error {rc}; a forked child may wait forever for a registry's lock");
        }
    });
}

thread_local! {
    /// The guards the forking thread holds across a `fork`, in rank order.
    static HELD: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Takes every lock of the table, in rank order. The library never calls
/// `fork` (nor runs the application's code) under one of these locks, so
/// the forking thread holds none of them here.
extern "C" fn before_fork() {
    let mut rows: Vec<&ForkLock> = ACROSS_FORK.iter().collect();
    rows.sort_by_key(|r| r.rank);
    let guards: Vec<Box<dyn Any>> = rows.iter().map(|r| (r.take)()).collect();
    let _ = HELD.try_with(|h| *h.borrow_mut() = guards);
}

/// Gives the locks back, last taken first: in the parent, and in the child,
/// where the forking thread is the same thread and owns them.
extern "C" fn after_fork() {
    let _ = HELD.try_with(|h| {
        let mut held = h.borrow_mut();
        while let Some(guard) = held.pop() {
            drop(guard);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::forked;
    use std::time::Duration;

    /// Each rank has exactly one lock in the table.
    #[test]
    fn every_rank_has_one_lock() {
        let mut ranks: Vec<Rank> = ACROSS_FORK.iter().map(|r| r.rank).collect();
        ranks.sort();
        assert_eq!(ranks, Rank::ALL);
    }

    /// For every lock of the table: another thread holds it when the process
    /// forks (it lets go 300 ms later); the child takes it at once. Without
    /// the handlers the child copied a held lock and waits forever.
    #[test]
    fn a_forked_child_takes_every_registry_lock_another_thread_held() {
        if !forked::alone_in_a_child("sys::fork::tests::a_forked_child_takes_every_registry_lock_another_thread_held") {
            return;
        }
        install();
        for row in ACROSS_FORK.iter() {
            let (held_tx, held_rx) = std::sync::mpsc::channel();
            let take = row.take;
            let holder = std::thread::spawn(move || {
                let guard = take();
                held_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
                drop(guard);
            });
            held_rx.recv().unwrap();
            // SAFETY: the child only takes and drops one lock, then leaves
            // with `_exit`; the one other thread of this process holds that
            // lock on purpose and lets go by itself.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
            if pid == 0 {
                drop(take());
                // SAFETY: ends the child without running the parent's atexit work.
                unsafe { libc::_exit(0) };
            }
            let what = format!("the child, for the lock of rank {:?}", row.rank);
            let code = forked::exit_code(pid, Duration::from_secs(20), &what);
            holder.join().unwrap();
            assert_eq!(code, 0);
        }
    }
}
