//! What runs when an event's status moves: application callbacks
//! (`clSetEventCallback`), the internal hooks queues use to learn that a wait
//! list resolved ([`Event::on_finish`]), and the order in which they become
//! due. Separate from the status machine that fires them.

use std::sync::atomic::Ordering;

use super::{Event, EventCallback, Hook};
use crate::sync;

pub(super) enum Pending {
    /// A `clSetEventCallback` callback for the status `at`.
    User { at: i32, f: EventCallback },
    /// A hook run when the event reaches a terminal status.
    Hook(Hook),
}

impl Event {
    /// Run `hook` with the terminal status (`CL_COMPLETE` or an error code)
    /// once the event finishes — at once, on this thread, if it has. Queues
    /// use it to learn that a wait list resolved (including events of other
    /// queues and user events). A user event released unset runs its hooks
    /// with `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
    pub(crate) fn on_finish(&self, hook: Hook) {
        let mut st = sync::lock(&self.0.state);
        let cur = self.0.status.load(Ordering::Acquire);
        if cur <= 0 {
            drop(st);
            hook(cur);
        } else {
            st.pending.push(Pending::Hook(hook));
        }
    }
}

/// Remove from `pending` what is due at status `to`: hooks first (they only
/// schedule commands), then callbacks by status (submitted, running,
/// complete), each status in registration order.
pub(super) fn take_due(pending: &mut Vec<Pending>, to: i32) -> Vec<Pending> {
    if pending.is_empty() {
        return Vec::new();
    }
    let (mut due, keep): (Vec<Pending>, Vec<Pending>) = std::mem::take(pending).into_iter().partition(|p| match p {
        Pending::User { at, .. } => to <= *at,
        Pending::Hook(_) => to <= 0,
    });
    *pending = keep;
    due.sort_by_key(|p| match p {
        Pending::Hook(_) => i32::MIN,
        Pending::User { at, .. } => -at,
    });
    due
}
