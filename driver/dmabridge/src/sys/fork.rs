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
//! takes its lock (or fills its cell) and leaves it after. One
//! `pthread_atfork` set, installed at the first section, waits before every
//! fork until no other thread is inside a section, holds new ones off across
//! the fork, and lets them in again in parent and child.
//!
//! Why one gate and not each registry's lock taken around the fork: those
//! nest (an external buffer holds its surface list while it opens the BAR,
//! which registers an I/O range), so a handler taking them one by one must
//! follow an order the code keeps everywhere, and a table of them would link
//! every registry into every program that links the handler.
//!
//! Why a waiting fork does not hold sections off: a thread inside a section
//! may wait for a lock (a device's, a context's) whose holder is about to
//! enter a section of its own; were that entry held off until the fork, the
//! fork would wait for the first thread, which waits for the second, which
//! waits for the fork. So sections enter freely while a fork waits, and are
//! held off only while it happens (no thread is then inside one, none
//! waits for it). The price: a process whose threads are inside sections
//! without a break makes its forks wait that long; sections are short.
//!
//! Not here, for the reasons their modules give: the ICD's handle registry
//! and hazard slots (their own handlers), the forking thread's io_uring and
//! the transfer helpers (per process, by `getpid`). Per-device and
//! per-context locks are not sections: a child works in contexts of its own.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard, Once};

use crate::sync;

/// The sections open, all threads together, and the forks waiting for them.
/// The forking thread holds this lock across the fork: no section opens or
/// closes then.
static OPEN: Mutex<Open> = Mutex::new(Open { sections: 0, forks_waiting: 0 });
/// Signalled when a section closes while a fork waits.
static CLOSED: Condvar = Condvar::new();

#[derive(Debug)]
struct Open {
    sections: usize,
    forks_waiting: usize,
}

thread_local! {
    /// How many of the open sections are the calling thread's.
    static MINE: Cell<usize> = const { Cell::new(0) };
    /// [`OPEN`]'s lock, held by the forking thread across a `fork`.
    static FORKING: RefCell<Option<MutexGuard<'static, Open>>> = const { RefCell::new(None) };
}

/// A process-wide section of the calling thread: no fork copies the process
/// while it lives. Not `Send`: it closes on the thread that opened it.
#[derive(Debug)]
pub(crate) struct Section(PhantomData<*const ()>);

/// Opens a section (see the module): waits only while a fork happens.
pub(crate) fn section() -> Section {
    install();
    sync::lock(&OPEN).sections += 1;
    let _ = MINE.try_with(|m| m.set(m.get() + 1));
    Section(PhantomData)
}

impl Drop for Section {
    fn drop(&mut self) {
        let _ = MINE.try_with(|m| m.set(m.get().saturating_sub(1)));
        let mut open = sync::lock(&OPEN);
        open.sections = open.sections.saturating_sub(1);
        if open.forks_waiting > 0 {
            CLOSED.notify_all();
        }
    }
}

/// A lock's guard inside a section: the section is opened before the lock
/// is taken and closed after it is given back.
#[derive(Debug)]
pub(crate) struct Guarded<G> {
    // Dropped first (fields drop in declaration order).
    guard: G,
    _section: Section,
}

/// Opens a section, then takes a lock with `take`.
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

/// Waits until the only open sections are the forking thread's own (none,
/// unless its own code forks inside one: a logger, say), then holds
/// [`OPEN`]'s lock across the fork.
extern "C" fn before_fork() {
    let mine = MINE.try_with(Cell::get).unwrap_or(0);
    let mut open = sync::lock(&OPEN);
    open.forks_waiting += 1;
    while open.sections > mine {
        open = sync::wait(&CLOSED, open);
    }
    open.forks_waiting -= 1;
    let _ = FORKING.try_with(|f| *f.borrow_mut() = Some(open));
}

/// Lets sections open again: in the parent, and in the child, where the
/// forking thread is the same thread and owns the lock.
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
        // SAFETY: the child only reads the cell; the one other thread of
        // this process fills it by itself.
        let pid = unsafe {
            forked::fork_child(|| {
                let _section = section();
                i32::from(*CELL.get_or_init(|| 0) != 7)
            })
        };
        let code = forked::exit_code(pid, Duration::from_secs(20), "the child, for the once-cell");
        assert_eq!(filler.join().unwrap(), 7);
        assert_eq!(code, 0, "the child found the cell filled");
    }

    /// Sections nest and count per thread; a fork in a thread with sections
    /// of its own open waits for the other threads' only (it would wait for
    /// itself), and is woken when one of those closes.
    #[test]
    fn a_fork_inside_a_section_of_its_own_does_not_wait_for_itself() {
        use std::sync::mpsc::channel;
        use std::time::Duration;
        if !forked::alone_in_a_child("sys::fork::tests::a_fork_inside_a_section_of_its_own_does_not_wait_for_itself") {
            return;
        }
        // Another thread's section, closed 300 ms later: the fork waits for
        // that one alone.
        let (inside_tx, inside_rx) = channel();
        let other = std::thread::spawn(move || {
            let _section = section();
            inside_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
        });
        inside_rx.recv().unwrap();
        let (done_tx, done_rx) = channel();
        let forker = std::thread::spawn(move || {
            let (outer, inner) = (section(), section());
            assert_eq!((sync::lock(&OPEN).sections, MINE.with(Cell::get)), (3, 2));
            // SAFETY: the child does nothing.
            let pid = unsafe { forked::fork_child(|| 0) };
            drop((outer, inner));
            done_tx.send(forked::exit_code(pid, Duration::from_secs(20), "the child")).unwrap();
        });
        let code = done_rx.recv_timeout(Duration::from_secs(20)).expect("the fork waited for its own sections");
        assert_eq!(code, 0);
        forker.join().unwrap();
        other.join().unwrap();
        assert_eq!(sync::lock(&OPEN).sections, 0);
    }

    /// A thread inside a section waits for a lock whose holder opens a
    /// section of its own while a fork waits: the holder gets in, lets go,
    /// and the fork follows. Had a waiting fork held sections off, the three
    /// would wait for one another forever.
    #[test]
    fn a_waiting_fork_lets_a_lock_holder_into_a_section() {
        use std::sync::mpsc::channel;
        use std::time::Duration;
        if !forked::alone_in_a_child("sys::fork::tests::a_waiting_fork_lets_a_lock_holder_into_a_section") {
            return;
        }
        static L: Mutex<()> = Mutex::new(());
        let (held_tx, held_rx) = channel();
        let (inside_tx, inside_rx) = channel();
        let (done_tx, done_rx) = channel();
        let holder = std::thread::spawn(move || {
            let l = sync::lock(&L);
            held_tx.send(()).unwrap();
            // Long enough for the fork below to be waiting.
            std::thread::sleep(Duration::from_millis(300));
            let _section = section();
            drop(l);
        });
        held_rx.recv().unwrap();
        let waiter = std::thread::spawn(move || {
            let _section = section();
            inside_tx.send(()).unwrap();
            drop(sync::lock(&L));
        });
        inside_rx.recv().unwrap();
        let forker = std::thread::spawn(move || {
            // SAFETY: the child does nothing.
            let pid = unsafe { forked::fork_child(|| 0) };
            done_tx.send(forked::exit_code(pid, Duration::from_secs(20), "the child")).unwrap();
        });
        let code = done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the fork, the lock holder and the waiter wait for one another");
        assert_eq!(code, 0);
        for t in [holder, waiter, forker] {
            t.join().unwrap();
        }
    }
}
