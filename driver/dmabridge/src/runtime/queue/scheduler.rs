//! The scheduler of a queue: its state (live commands, the ready list, the
//! pending barrier, worker counts), the [`Shared`] part that workers and the
//! hooks of commands hold, the worker threads, and [`run_and_complete`], what
//! a worker and the inline path both do with a command. Separate from the
//! queue's public API ([`Queue`](super::Queue)), which drives it.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use crate::error::code;
use crate::runtime::event::Event;
use crate::sync;

use super::completion::{self, AsyncWork};
use super::deps::Deps;
use super::{CommandUse, Work};

/// What a command does when it runs: `Sync` work ends with the command;
/// `Async` work starts it, and its completion ends it ([`completion`]).
pub(super) enum Run {
    Sync(Work),
    Async(AsyncWork),
}

/// A command enqueued and not yet finished.
pub(super) struct Live {
    pub(super) seq: u64,
    pub(super) event: Event,
    pub(super) usage: CommandUse,
    pub(super) work: Option<Run>,
    /// `None` for a command running inline on the enqueuing thread.
    pub(super) deps: Option<Arc<Deps>>,
    pub(super) started: bool,
}

/// A command a worker took.
struct Job {
    seq: u64,
    event: Event,
    work: Option<Run>,
    failed: bool,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) next_seq: u64,
    /// Live commands in enqueue (`seq`) order.
    pub(super) live: VecDeque<Live>,
    /// Out-of-order: runnable commands not yet taken.
    ready: VecDeque<u64>,
    /// Commands executing (on workers or inline).
    pub(super) running: usize,
    /// Out-of-order: the last barrier, which later commands wait for.
    pub(super) barrier: Option<Event>,
    workers: usize,
    idle: usize,
    /// The queue was dropped: workers exit once nothing is runnable.
    pub(super) shutdown: bool,
    pub(super) handles: Vec<JoinHandle<()>>,
}

impl State {
    fn index(&self, seq: u64) -> Option<usize> {
        self.live.binary_search_by_key(&seq, |l| l.seq).ok()
    }

    fn head_runnable(&self) -> bool {
        self.running == 0
            && self.live.front().is_some_and(|l| !l.started && l.deps.as_ref().is_some_and(|d| d.resolved()))
    }

    pub(super) fn pending_barrier(&self) -> bool {
        self.barrier.as_ref().is_some_and(|b| b.finished().is_none())
    }
}

/// The scheduler, shared by a queue, its workers and the hooks of its commands.
pub(super) struct Shared {
    pub(super) id: u64,
    pub(super) out_of_order: bool,
    pub(super) max_workers: usize,
    pub(super) state: Mutex<State>,
    pub(super) work: Condvar,
}

fn run_work(work: Option<Work>) -> Result<(), i32> {
    match work {
        None => Ok(()),
        Some(w) => catch_unwind(AssertUnwindSafe(w)).unwrap_or(Err(code::OUT_OF_RESOURCES)),
    }
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        sync::lock(&self.state)
    }

    /// Wake or count in a worker if something is runnable; true if the
    /// caller must start one (after unlocking).
    pub(super) fn kick(&self, st: &mut State) -> bool {
        let runnable = if self.out_of_order { st.ready.len() } else { usize::from(st.head_runnable()) };
        if runnable == 0 {
            return false;
        }
        if st.idle > 0 {
            self.work.notify_one();
        }
        if runnable > st.idle && st.workers < self.max_workers {
            st.workers += 1;
            return true;
        }
        false
    }

    /// The command `seq` has resolved its wait list.
    pub(super) fn make_ready(self: &Arc<Self>, seq: u64) {
        let mut st = self.lock();
        if self.out_of_order {
            st.ready.push_back(seq);
        }
        let spawn = self.kick(&mut st);
        drop(st);
        if spawn {
            self.spawn_worker();
        }
    }

    /// Start a worker already counted in `workers`.
    pub(super) fn spawn_worker(self: &Arc<Self>) {
        let shared = self.clone();
        let spawned = thread::Builder::new().name(format!("dmabq-{}", self.id)).spawn(move || shared.worker(false));
        match spawned {
            Ok(h) => {
                let mut st = self.lock();
                // After the queue is dropped nobody joins: the worker exits
                // by itself once nothing is runnable.
                if !st.shutdown {
                    st.handles.push(h);
                }
            }
            // No thread: run what is runnable here rather than never.
            Err(_) => self.worker(true),
        }
    }

    /// Take a runnable command.
    fn claim(&self, st: &mut State) -> Option<Job> {
        let i = if self.out_of_order {
            let seq = st.ready.pop_front()?;
            st.index(seq)?
        } else if st.head_runnable() {
            0
        } else {
            return None;
        };
        st.running += 1;
        let l = &mut st.live[i];
        l.started = true;
        let failed = l.deps.as_ref().is_some_and(|d| d.failed.load(Ordering::Acquire));
        Some(Job { seq: l.seq, event: l.event.clone(), work: l.work.take(), failed })
    }

    /// Remove a finished command. (Dropping it under the lock is fine: its
    /// event finished, so no hook or callback is left to run.)
    pub(super) fn retire(&self, st: &mut State, seq: u64) {
        st.running -= 1;
        if let Some(i) = st.index(seq) {
            st.live.remove(i);
        }
    }

    /// Retire the finished command `seq` outside a worker (inline, or by
    /// an asynchronous command's completion) and start what was waiting
    /// behind it: commands enqueued meanwhile queued up behind this one.
    pub(super) fn retire_and_kick(self: &Arc<Self>, seq: u64) {
        let mut st = self.lock();
        self.retire(&mut st, seq);
        let spawn = self.kick(&mut st);
        drop(st);
        if spawn {
            self.spawn_worker();
        }
    }

    /// A worker: run runnable commands; sleep while there are none and the
    /// queue lives; exit when there are none and the queue is dropped (or
    /// at once with `exit_when_idle`). Counted in `workers` by its starter.
    fn worker(self: &Arc<Self>, exit_when_idle: bool) {
        let mut st = self.lock();
        loop {
            if let Some(job) = self.claim(&mut st) {
                drop(st);
                let Job { seq, event, work, failed } = job;
                let work = match work {
                    Some(Run::Sync(w)) => Some(w),
                    None => None,
                    // Retired by its completion, maybe on another thread.
                    Some(Run::Async(w)) => {
                        completion::start(self, seq, &event, w, failed);
                        st = self.lock();
                        continue;
                    }
                };
                run_and_complete(&event, work, failed);
                st = self.lock();
                self.retire(&mut st, seq);
                continue;
            }
            if st.shutdown || exit_when_idle {
                st.workers -= 1;
                return;
            }
            st.idle += 1;
            st = sync::wait(&self.work, st);
            st.idle -= 1;
        }
    }
}

/// Run `work` (or skip it when the wait list failed) and finish `event`:
/// what a worker and the inline path both do with a command. `work` and
/// what it holds (buffers, an import's locked pages) are released before
/// the event finishes: whoever waited for it may then unmap the memory.
pub(super) fn run_and_complete(event: &Event, work: Option<Work>, wait_list_failed: bool) {
    let result = if wait_list_failed {
        drop(work);
        Err(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    } else {
        event.mark_submitted();
        event.mark_running();
        run_work(work)
    };
    event.complete(result);
}
