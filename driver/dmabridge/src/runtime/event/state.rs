//! The shared state behind an [`Event`]: its lock-protected part (profiling
//! times, pending callbacks, waiters), the status mirrored in an atomic, the
//! status machine that only moves forward ([`Event::advance`]) and the
//! crate-internal transitions and waits built on it. Separate from the
//! public API so that the locking and ordering rules live in one place.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use crate::error::code;
use crate::runtime::context::Context;
use crate::runtime::queue::Queue;
use crate::sync;

use super::callbacks::{take_due, Pending};
use super::{exec_status, now_ns, Event};

pub(super) struct State {
    /// Queued, submit, start, end, complete (when profiling).
    pub(super) times: [u64; 5],
    /// Callbacks and hooks not yet due.
    pub(super) pending: Vec<Pending>,
    /// Threads blocked in `wait_done` (notify only when there are some).
    pub(super) waiters: usize,
}

pub(super) struct EventInner {
    pub(super) context: Arc<Context>,
    pub(super) command_type: u32,
    /// The queue of a command; `None` for user events.
    pub(super) queue: Option<Weak<Queue>>,
    pub(super) profiling: bool,
    /// `EventStatus::as_cl`; written under `state`, read without it.
    pub(super) status: AtomicI32,
    pub(super) state: Mutex<State>,
    pub(super) done: Condvar,
}

impl Drop for EventInner {
    fn drop(&mut self) {
        // Only a user event released before its status was set can end here
        // unfinished (a queue keeps the events of its pending commands). The
        // commands waiting on it could never run: fail them instead of
        // leaving them (and their queue) stuck. Application callbacks are
        // dropped without being called.
        if *self.status.get_mut() <= 0 {
            return;
        }
        let pending = std::mem::take(&mut sync::get_mut(&mut self.state).pending);
        for p in pending {
            if let Pending::Hook(h) = p {
                h(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
            }
        }
    }
}

impl Event {
    pub(super) fn with(
        context: &Arc<Context>,
        command_type: u32,
        queue: Option<Weak<Queue>>,
        profiling: bool,
        status: i32,
    ) -> Event {
        let mut times = [0; 5];
        if profiling {
            times[0] = now_ns();
        }
        Event(Arc::new(EventInner {
            context: context.clone(),
            command_type,
            queue,
            profiling,
            status: AtomicI32::new(status),
            state: Mutex::new(State { times, pending: Vec::new(), waiters: 0 }),
            done: Condvar::new(),
        }))
    }

    /// The terminal status if the event has finished, without locking.
    pub(crate) fn finished(&self) -> Option<i32> {
        let s = self.0.status.load(Ordering::Acquire);
        (s <= 0).then_some(s)
    }

    /// Block until the event finishes; its terminal status.
    pub(crate) fn wait_done(&self) -> i32 {
        if let Some(s) = self.finished() {
            return s;
        }
        let mut st = sync::lock(&self.0.state);
        st.waiters += 1;
        loop {
            let s = self.0.status.load(Ordering::Acquire);
            if s <= 0 {
                st.waiters -= 1;
                return s;
            }
            st = sync::wait(&self.0.done, st);
        }
    }

    /// The command's wait list resolved: `CL_SUBMITTED` (no-op if already past).
    pub(crate) fn mark_submitted(&self) {
        self.advance(exec_status::SUBMITTED);
    }

    /// The command started executing: `CL_RUNNING` (no-op if already past).
    pub(crate) fn mark_running(&self) {
        self.advance(exec_status::RUNNING);
    }

    /// The command finished: `CL_COMPLETE` for `Ok`, the (negative) code for
    /// `Err` (a non-negative code becomes `CL_OUT_OF_RESOURCES`). No-op if
    /// already finished.
    pub(crate) fn complete(&self, result: Result<(), i32>) {
        self.advance(match result {
            Ok(()) => exec_status::COMPLETE,
            Err(c) if c < 0 => c,
            Err(_) => code::OUT_OF_RESOURCES,
        });
    }

    /// Move the status forward to `to` (a `cl_int` status); false (and
    /// nothing changes) if the event is finished or already at or past `to`.
    /// Fills the profiling timestamps of every status passed, wakes waiters
    /// and runs the callbacks and hooks that became due, outside the lock.
    pub(super) fn advance(&self, to: i32) -> bool {
        let inner = &*self.0;
        let mut st = sync::lock(&inner.state);
        let cur = inner.status.load(Ordering::Acquire);
        if cur <= 0 || to >= cur {
            return false;
        }
        if inner.profiling {
            let now = now_ns();
            let reached = to.max(0);
            // Status 2 stamps submit, 1 stamps start, 0 (or an error) end and complete.
            for (status, slots) in [(2, 1..2), (1, 2..3), (0, 3..5)] {
                if cur > status && reached <= status {
                    st.times[slots].fill(now);
                }
            }
        }
        inner.status.store(to, Ordering::Release);
        let wake = to <= 0 && st.waiters > 0;
        let due = take_due(&mut st.pending, to);
        drop(st);
        if wake {
            inner.done.notify_all();
        }
        for p in due {
            match p {
                Pending::Hook(h) => h(to),
                Pending::User { at, f } => f(self, if to < 0 { to } else { at }),
            }
        }
        true
    }
}
