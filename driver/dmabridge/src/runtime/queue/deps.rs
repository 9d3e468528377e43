//! The wait-list state of a queued command ([`Deps`]): a counter of
//! unresolved events and an error flag, shared with the hooks the command
//! registers on the events it waits for. Kept apart from the scheduler it
//! feeds: this is the only code that runs on *other* events' threads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::runtime::event::Event;

use super::scheduler::Shared;

/// The wait-list state of a queued command, shared with the hooks on the
/// events it waits for.
pub(super) struct Deps {
    pub(super) seq: u64,
    pub(super) event: Event,
    /// Unresolved events, plus one while the enqueue registers hooks.
    pub(super) pending: AtomicUsize,
    /// An event whose errors propagate ended with a negative status.
    pub(super) failed: AtomicBool,
}

impl Deps {
    /// Wait for `e`; with `propagate`, an error status of `e` fails the command.
    pub(super) fn add(self: &Arc<Self>, e: &Event, propagate: bool, shared: &Arc<Shared>) {
        match e.finished() {
            Some(s) => {
                if propagate && s < 0 {
                    self.failed.store(true, Ordering::Release);
                }
            }
            None => {
                self.pending.fetch_add(1, Ordering::AcqRel);
                let (deps, shared) = (self.clone(), shared.clone());
                e.on_finish(Box::new(move |s| deps.resolve(s, propagate, &shared)));
            }
        }
    }

    /// One awaited event finished with `status`; the last makes the command runnable.
    pub(super) fn resolve(&self, status: i32, propagate: bool, shared: &Arc<Shared>) {
        if propagate && status < 0 {
            self.failed.store(true, Ordering::Release);
        }
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            if !self.failed.load(Ordering::Acquire) {
                self.event.mark_submitted();
            }
            shared.make_ready(self.seq);
        }
    }

    pub(super) fn resolved(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }
}
