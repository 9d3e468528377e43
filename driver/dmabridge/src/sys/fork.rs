//! No `fork` copies the process while a thread is inside one of the
//! library's process-wide sections.
//!
//! The child of a multi-threaded process has only the forking thread. A lock
//! another thread held at the fork stays locked in the child forever, and a
//! once-cell another thread was filling stays "being filled": the child's
//! first call that needs either hangs. The platform's first build and the
//! registries that live for the process (dma-buf exports, host imports, BAR
//! buffers and their surfaces, wait-signal doorbells and interrupt fds, I/O
//! ranges) are reached by calls a child may make (building the platform,
//! freeing memory whose pages were exported, importing host memory, any copy
//! or fill, which checks the I/O ranges). Each enters a [`section`] before it
//! takes its lock (or fills its cell) and leaves it after: a section holds
//! the read side of one process-wide gate. One `pthread_atfork` set,
//! installed at the first section, takes the gate's write side before every
//! fork, so a fork waits until no thread is inside any section (and holds
//! new ones off), and gives it back in parent and child.
//!
//! Why one gate and not each registry's lock taken around the fork: those
//! nest (an external buffer holds its surface list while it opens the BAR,
//! which registers an I/O range), so a handler taking them one by one must
//! follow an order the code keeps everywhere, and a table of them would link
//! every registry into every program that links the handler. Sections nest
//! freely: only a thread's outermost one takes the gate (a thread-local
//! depth), so a nested one never waits behind a fork that waits for it.
//!
//! Not here, for the reasons their modules give: the ICD's handle registry
//! and hazard slots (their own handlers), the forking thread's io_uring and
//! the transfer helpers (per process, by `getpid`). Per-device and
//! per-context locks are not sections: a child works in contexts of its own.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::{Once, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::sync;

/// Read: a thread is inside a section. Written by the forking thread.
static GATE: RwLock<()> = RwLock::new(());

thread_local! {
    /// The thread's section depth, and its hold of the gate while above 0.
    static DEPTH: RefCell<(usize, Option<RwLockReadGuard<'static, ()>>)> = const { RefCell::new((0, None)) };
    /// The gate, held by the forking thread across a `fork`.
    static FORKING: RefCell<Option<RwLockWriteGuard<'static, ()>>> = const { RefCell::new(None) };
}

/// A process-wide section of the calling thread: no fork copies the process
/// while it lives. Not `Send`: it ends on the thread that entered it.
#[derive(Debug)]
pub(crate) struct Section(PhantomData<*const ()>);

/// Enters a section (see the module): the thread's first waits while a fork
/// is under way; nested ones cost a thread-local count.
pub(crate) fn section() -> Section {
    install();
    // In a thread-local destructor (DEPTH gone): no gate, as without the
    // handlers; such a late call is no registry's.
    let _ = DEPTH.try_with(|d| {
        let mut d = d.borrow_mut();
        if d.0 == 0 {
            d.1 = Some(sync::read(&GATE));
        }
        d.0 += 1;
    });
    Section(PhantomData)
}

impl Drop for Section {
    fn drop(&mut self) {
        let _ = DEPTH.try_with(|d| {
            let mut d = d.borrow_mut();
            d.0 = d.0.saturating_sub(1);
            if d.0 == 0 {
                d.1 = None;
            }
        });
    }
}

/// A lock's guard inside a section: the section is entered before the lock
/// is taken and left after it is given back.
#[derive(Debug)]
pub(crate) struct Guarded<G> {
    // Dropped first (fields drop in declaration order).
    guard: G,
    _section: Section,
}

/// Enters a section, then takes a lock with `take`.
pub(crate) fn guarded<G>(take: impl FnOnce() -> G) -> Guarded<G> {
    let section = section();
    Guarded { guard: take(), _section: section }
}

impl<G: Deref> Deref for Guarded<G> {
    type Target = G::Target;
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut> DerefMut for Guarded<G> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

/// Installs the fork handlers, once per process (an atomic load after).
fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Not rustix: it has no pthread_atfork (a libc function, not a
        // system call).
        // SAFETY: the handlers take and give back one lock on the forking
        // thread only; the child's handler only unlocks it (an atomic store
        // and a futex wake), which is allowed there.
        let rc = unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
        if rc != 0 {
            log::warn!("pthread_atfork: error {rc}; a forked child may wait forever for a registry's lock");
        }
    });
}

/// Takes the gate: waits until no thread is inside a section. Skipped if
/// the forking thread is inside one itself (only its own code could fork
/// there, e.g. a logger: waiting would wait for itself).
extern "C" fn before_fork() {
    let inside = DEPTH.try_with(|d| d.borrow().0 > 0).unwrap_or(true);
    if !inside {
        let gate = sync::write(&GATE);
        let _ = FORKING.try_with(|f| *f.borrow_mut() = Some(gate));
    }
}

/// Gives the gate back: in the parent, and in the child, where the forking
/// thread is the same thread and owns it.
extern "C" fn after_fork() {
    let _ = FORKING.try_with(|f| f.borrow_mut().take());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::forked;

    /// A once-cell another thread is filling inside a section (as the
    /// platform's first build is) when the process forks: the fork waits
    /// for it, and the child finds it filled. Without the handlers the child
    /// found it being filled forever.
    #[test]
    fn a_fork_waits_for_a_once_cell_being_filled_in_a_section() {
        use std::sync::OnceLock;
        use std::time::Duration;
        if !forked::alone_in_a_child("sys::fork::tests::a_fork_waits_for_a_once_cell_being_filled_in_a_section") {
            return;
        }
        static CELL: OnceLock<u32> = OnceLock::new();
        let (filling_tx, filling_rx) = std::sync::mpsc::channel();
        let filler = std::thread::spawn(move || {
            let _section = section();
            *CELL.get_or_init(|| {
                filling_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
                7
            })
        });
        filling_rx.recv().unwrap();
        // SAFETY: the child only reads the cell, then leaves with `_exit`;
        // the one other thread of this process fills it by itself.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let value = {
                let _section = section();
                *CELL.get_or_init(|| 0)
            };
            // SAFETY: ends the child without running the parent's atexit work.
            unsafe { libc::_exit(if value == 7 { 0 } else { 1 }) };
        }
        let code = forked::exit_code(pid, Duration::from_secs(20), "the child, for the once-cell");
        assert_eq!(filler.join().unwrap(), 7);
        assert_eq!(code, 0, "the child found the cell filled");
    }

    /// Sections nest: the inner one does not wait for the gate (a fork
    /// waiting for the outer one would otherwise hold it off forever), and
    /// the gate is free once the outer one ends.
    #[test]
    fn sections_nest_and_the_gate_is_free_after_the_outermost() {
        if !forked::alone_in_a_child("sys::fork::tests::sections_nest_and_the_gate_is_free_after_the_outermost") {
            return;
        }
        let outer = section();
        let inner = section();
        drop(inner);
        assert!(GATE.try_write().is_err(), "the outer section still holds the gate");
        drop(outer);
        assert!(GATE.try_write().is_ok(), "no section left");
        // Guards in any order: the gate goes with the last.
        let (a, b) = (section(), section());
        drop(a);
        assert!(GATE.try_write().is_err());
        drop(b);
        assert!(GATE.try_write().is_ok());
    }
}
