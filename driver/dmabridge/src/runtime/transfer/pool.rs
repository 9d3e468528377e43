//! The helper threads that large copies and fills are split across.
//!
//! One process-wide pool, started on the first large transfer: one thread
//! fewer than the cores (at most [`MAX_THREADS`] in all), since the thread
//! that asked takes parts too. A transfer is a [`Job`] of equal parts
//! (the last one shorter) that the caller and the helpers claim one at a
//! time from a shared counter, so a helper that is slow to wake, or a core
//! busy with something else, costs only the parts it did not take. The
//! caller returns once every part is done; a helper that comes late finds
//! no part left and touches only the job itself (kept alive by its `Arc`),
//! never the memory of the transfer.

use crate::sync;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Threads taking part in one transfer, the caller included.
pub(super) const MAX_THREADS: usize = 8;

/// What each part does: its byte range `[offset, offset + len)` of the
/// transfer. Plain data (addresses as integers), so that a job can outlive
/// the caller's borrow without holding a dangling reference.
#[derive(Clone, Copy)]
pub(super) enum Op {
    Copy { dst: usize, src: usize },
    Fill { dst: usize, pattern: [u8; super::MAX_PATTERN], len: usize },
}

pub(super) struct Job {
    op: Op,
    size: usize,
    chunk: usize,
    parts: usize,
    next: AtomicUsize,
    done: Mutex<usize>,
    all_done: Condvar,
}

impl Job {
    /// Claim and run parts until none is left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.parts {
                return;
            }
            let offset = i * self.chunk;
            let len = self.chunk.min(self.size - offset);
            // SAFETY: `offset + len <= size` and the ranges of the parts are
            // disjoint; the caller of `run` keeps `[dst, dst + size)` (and
            // the source) valid until every part is done, which it waits for.
            unsafe { super::run_part(&self.op, offset, len) };
            let mut done = sync::lock(&self.done);
            *done += 1;
            if *done == self.parts {
                self.all_done.notify_all();
            }
        }
    }

    fn has_parts_left(&self) -> bool {
        self.next.load(Ordering::Relaxed) < self.parts
    }
}

struct Pool {
    jobs: Mutex<VecDeque<Arc<Job>>>,
    wake: Condvar,
    /// Helper threads running (set once, when the pool starts).
    helpers: AtomicUsize,
    /// The process that started the helpers. The child of a `fork` has none
    /// of them, and `jobs` may have been locked by one of the parent's
    /// helpers at the fork, never to be unlocked there: a child runs its
    /// transfers on the calling thread alone and never touches `jobs`.
    pid: u32,
}

static POOL: OnceLock<Arc<Pool>> = OnceLock::new();

/// Threads that take part in a transfer, the caller included.
pub(super) fn threads() -> usize {
    pool().helpers.load(Ordering::Relaxed) + 1
}

fn pool() -> &'static Arc<Pool> {
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pool = Arc::new(Pool {
            jobs: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            helpers: AtomicUsize::new(0),
            pid: std::process::id(),
        });
        for k in 0..cores.clamp(1, MAX_THREADS) - 1 {
            let p = pool.clone();
            if let Err(e) = std::thread::Builder::new().name(format!("dmab-xfer-{k}")).spawn(move || helper(&p)) {
                log::warn!("transfer helper thread {k} not started: {e}; large transfers use {k} helpers");
                break;
            }
            pool.helpers.store(k + 1, Ordering::Relaxed);
        }
        pool
    })
}

/// A helper: take parts of whatever job has some left; sleep otherwise.
fn helper(pool: &Pool) {
    let mut jobs = sync::lock(&pool.jobs);
    loop {
        if let Some(job) = jobs.iter().find(|j| j.has_parts_left()).cloned() {
            drop(jobs);
            job.work();
            jobs = sync::lock(&pool.jobs);
            continue;
        }
        jobs = sync::wait(&pool.wake, jobs);
    }
}

/// Run `op` over `size` bytes in parts of `chunk` bytes on the pool and the
/// calling thread; returns when every part is done.
///
/// # Safety
/// The ranges of `op` must be valid for `size` bytes for the whole call, as
/// [`super::run_part`] requires for every part.
pub(super) unsafe fn run(op: Op, size: usize, chunk: usize) {
    debug_assert!(chunk > 0);
    let parts = size.div_ceil(chunk);
    let job = Arc::new(Job {
        op,
        size,
        chunk,
        parts,
        next: AtomicUsize::new(0),
        done: Mutex::new(0),
        all_done: Condvar::new(),
    });
    let pool = pool();
    // getpid(2) once per transfer of at least PARALLEL_THRESHOLD bytes.
    let shared = parts > 1 && pool.helpers.load(Ordering::Relaxed) > 0 && pool.pid == std::process::id();
    if shared {
        sync::lock(&pool.jobs).push_back(job.clone());
        pool.wake.notify_all();
    }
    job.work();
    let mut done = sync::lock(&job.done);
    while *done < parts {
        done = sync::wait(&job.all_done, done);
    }
    drop(done);
    if shared {
        sync::lock(&pool.jobs).retain(|j| !Arc::ptr_eq(j, &job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::forked;
    use std::time::Duration;

    /// A helper of the parent holds the job list's lock when the process
    /// forks (here for as long as the test lasts; in a program, while it
    /// looks for work): the child's large fill must not wait for it.
    #[test]
    fn a_forked_child_transfers_without_the_parents_helpers() {
        if !forked::alone_in_a_child(
            "runtime::transfer::pool::tests::a_forked_child_transfers_without_the_parents_helpers",
        ) {
            return;
        }
        let pool = pool();
        if pool.helpers.load(Ordering::Relaxed) == 0 {
            println!("one core: no helper threads, nothing to strand");
            return;
        }
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (end_tx, end_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let _jobs = sync::lock(&pool.jobs);
            held_tx.send(()).unwrap();
            let _ = end_rx.recv();
        });
        held_rx.recv().unwrap();
        let size = 4 << 20;
        let mut dst = vec![0u8; size];
        let addr = dst.as_mut_ptr() as usize;
        let child = || {
            let mut pattern = [0u8; crate::runtime::transfer::MAX_PATTERN];
            pattern[0] = 0xa5;
            // SAFETY: `[addr, addr + size)` is the child's copy of `dst`.
            unsafe { run(Op::Fill { dst: addr, pattern, len: 1 }, size, size / 8) };
            // SAFETY: reads the bytes just filled, inside `dst`.
            let ok = unsafe { std::slice::from_raw_parts(addr as *const u8, size) }.iter().all(|&b| b == 0xa5);
            i32::from(!ok)
        };
        // SAFETY: the child fills its own copy of `dst` (valid for `size`
        // bytes); no other thread of this process holds a lock the child
        // needs but the job list's, held on purpose.
        let pid = unsafe { forked::fork_child(child) };
        let code = forked::exit_code(pid, Duration::from_secs(30), "the child's fill (for the job list's lock?)");
        end_tx.send(()).unwrap();
        holder.join().unwrap();
        assert_eq!(code, 0, "the child's fill did not fill");
        drop(dst);
    }
}
