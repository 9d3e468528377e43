//! Enqueueing a command ([`Queue`]'s `submit`, behind every `enqueue*`):
//! the inline path for blocking commands, the order markers and barriers
//! impose on an out-of-order queue, and the registration of wait-list hooks.
//! The one place where a command enters the scheduler.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

use crate::error::ClResult;
use crate::runtime::event::{exec_status, status_error, Event};

use super::completion;
use super::deps::Deps;
use super::scheduler::{run_and_complete, Live, Run};
use super::{check_wait_list, CommandUse, Queue};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Command,
    Marker,
    Barrier,
}

impl Queue {
    /// `also`: events the command needs besides its wait list, which do
    /// not make a marker or barrier's wait list non-empty.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn submit(
        self: &Arc<Self>,
        command_type: u32,
        wait_list: &[Event],
        also: &[Event],
        blocking: bool,
        work: Option<Run>,
        usage: CommandUse,
        kind: Kind,
    ) -> ClResult<Event> {
        check_wait_list(&self.context, wait_list)?;
        let work = self.unless_lost(work);
        let shared = &self.shared;
        let event = Event::for_command(&self.context, command_type, Arc::downgrade(self), self.props.profiling);

        // Has the wait list finished (and did any of it fail)?
        let mut deps_done = true;
        let mut deps_failed = false;
        for e in wait_list.iter().chain(also) {
            match e.finished() {
                Some(s) => deps_failed |= s < 0,
                None => {
                    deps_done = false;
                    break;
                }
            }
        }

        let mut st = shared.lock();
        let seq = st.next_seq;
        st.next_seq += 1;
        // Nothing pending: every live command finished (a worker may not have
        // retired the last one yet).
        let idle = || st.live.iter().all(|l| l.event.finished().is_some());
        // An asynchronous command only starts here (it must not block), so
        // it too runs inline when it can start at once: then no worker is
        // woken and the executor's thread completes it.
        let started_async = matches!(work, Some(Run::Async(_)));
        let inline = (blocking || started_async)
            && deps_done
            && ((shared.out_of_order && kind == Kind::Command && !st.pending_barrier()) || idle());
        if inline {
            st.live.push_back(Live { seq, event: event.clone(), usage, work: None, deps: None, started: true });
            st.running += 1;
            drop(st);
            match work {
                // Retired by its completion.
                Some(Run::Async(w)) => completion::start(shared, seq, &event, w, deps_failed),
                work => {
                    let work = if let Some(Run::Sync(w)) = work { Some(w) } else { None };
                    run_and_complete(&event, work, deps_failed);
                    shared.retire_and_kick(seq);
                }
            }
            if blocking {
                let s = event.wait_done();
                if s < 0 {
                    return Err(status_error(command_type, s));
                }
            }
            return Ok(event);
        }

        // Out of order, order comes from barriers and from markers and
        // barriers without a wait list; it does not carry errors.
        let mut after: Vec<Event> = Vec::new();
        if shared.out_of_order {
            if st.pending_barrier() {
                after.extend(st.barrier.clone());
            } else {
                st.barrier = None;
            }
            if kind != Kind::Command && wait_list.is_empty() {
                after.extend(st.live.iter().map(|l| l.event.clone()));
            }
            if kind == Kind::Barrier {
                st.barrier = Some(event.clone());
            }
        }
        let deps =
            Arc::new(Deps { seq, event: event.clone(), pending: AtomicUsize::new(1), failed: AtomicBool::new(false) });
        st.live.push_back(Live { seq, event: event.clone(), usage, work, deps: Some(deps.clone()), started: false });
        drop(st);
        for e in wait_list.iter().chain(also) {
            deps.add(e, true, shared);
        }
        for e in &after {
            deps.add(e, false, shared);
        }
        drop(after);
        deps.resolve(exec_status::COMPLETE, false, shared);
        drop(deps);

        if blocking {
            let s = event.wait_done();
            if s < 0 {
                return Err(status_error(command_type, s));
            }
        }
        Ok(event)
    }
}

impl Queue {
    /// `work` made to fail with `CL_DEVICE_NOT_AVAILABLE` (and the reason in
    /// the log) instead of running once the queue's device is lost
    /// ([`lost`](crate::runtime::backend::lost)): commands queued before the
    /// loss end with a negative status without touching the device; those
    /// running then fail in the engine. Devices that cannot be lost (the CPU
    /// device) run `work` as it is.
    fn unless_lost(&self, work: Option<Run>) -> Option<Run> {
        let work = work?;
        let Some(backend) = self.device.backend().filter(|b| b.loss().is_some()) else { return Some(work) };
        let lost = move || {
            let e = backend.loss().and_then(|l| l.check(backend.name()).err())?;
            log::warn!("{e}");
            Some(e.code())
        };
        Some(match work {
            Run::Sync(w) => Run::Sync(Box::new(move || match lost() {
                Some(code) => Err(code),
                None => w(),
            })),
            Run::Async(w) => Run::Async(Box::new(move |done| match lost() {
                Some(code) => done.complete(Err(code)),
                None => w(done),
            })),
        })
    }
}
