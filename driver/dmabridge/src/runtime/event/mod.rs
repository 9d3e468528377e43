//! Events (`cl_event`): the execution status of a command or of a user
//! event, its profiling times and callbacks, and `clWaitForEvents`.
//!
//! An [`Event`] is an `Arc` (clone = `clRetainEvent`, drop =
//! `clReleaseEvent`). Its status only moves forward — `CL_QUEUED` (3),
//! `CL_SUBMITTED` (2), `CL_RUNNING` (1), then `CL_COMPLETE` (0) or a negative
//! error code, both terminal. The status is mirrored in an atomic so that
//! polling it takes no lock; waiting uses the event's mutex and condition
//! variable. Callbacks, and the hooks queues register to learn that a wait
//! list has resolved, run on the thread that moves the status, after the
//! event's lock is released.
//!
//! Events of a command point back at their queue through a `Weak`, so that an
//! event kept by the application does not keep its queue (and the queue's
//! worker threads) alive.

// This file: the `Event` type and its public API.
/// Callbacks and hooks, and the order in which they become due.
mod callbacks;
/// The error a terminal status stands for.
mod errors;
/// The shared state behind an event and its forward-only status machine.
mod state;
/// Constants, name tables, `EventStatus`, `ProfilingTimes`, the clock.
mod types;

#[cfg(test)]
pub(crate) mod tests;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::cl_err;
use crate::error::ClResult;

use super::context::Context;
use super::queue::Queue;

pub use errors::error_kind_from_code;
pub(crate) use errors::status_error;
pub(crate) use types::now_ns;
pub use types::{command_type, exec_status, profiling_info, EventStatus, ProfilingTimes};

use crate::sync;
use callbacks::Pending;
use state::EventInner;

/// An event (`cl_event`). Clone to retain, drop to release.
#[derive(Clone)]
pub struct Event(Arc<EventInner>);

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Event {}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("command_type", &command_type::name(self.0.command_type))
            .field("status", &self.status())
            .finish()
    }
}

/// A callback of `clSetEventCallback`: the event and the status it is called for.
pub type EventCallback = Box<dyn FnOnce(&Event, i32) + Send>;

/// An internal hook, run once with the terminal status of the event.
pub(crate) type Hook = Box<dyn FnOnce(i32) + Send>;

impl Event {
    /// A user event of `context` (`clCreateUserEvent`), in status `CL_SUBMITTED`.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::{Event, EventStatus}, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let ev = Event::user(&ctx);
    /// assert!(ev.is_user());
    /// assert_eq!(ev.status(), EventStatus::Submitted);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn user(context: &Arc<Context>) -> Event {
        Event::with(context, command_type::USER, None, false, exec_status::SUBMITTED)
    }

    /// The event of a command enqueued on `queue`, in status `CL_QUEUED`
    /// (with its queued time taken when `profiling`).
    pub(crate) fn for_command(context: &Arc<Context>, command_type: u32, queue: Weak<Queue>, profiling: bool) -> Event {
        Event::with(context, command_type, Some(queue), profiling, exec_status::QUEUED)
    }

    /// `CL_EVENT_COMMAND_EXECUTION_STATUS` (`clGetEventInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::{Event, EventStatus}, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let ev = Event::user(&ctx);
    /// ev.set_user_status(-5)?;
    /// assert_eq!(ev.status(), EventStatus::Error(-5));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn status(&self) -> EventStatus {
        let s = self.0.status.load(Ordering::Acquire);
        EventStatus::from_cl(s).unwrap_or(EventStatus::Queued)
    }

    /// `CL_EVENT_COMMAND_TYPE` (`clGetEventInfo`); see [`command_type`].
    ///
    /// ```
    /// use dmabridge::runtime::event::command_type;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let marker = queue.enqueue_marker(&[])?;
    /// assert_eq!(marker.command_type(), command_type::MARKER);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn command_type(&self) -> u32 {
        self.0.command_type
    }

    /// `CL_EVENT_CONTEXT` (`clGetEventInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::Event, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// assert!(std::sync::Arc::ptr_eq(Event::user(&ctx).context(), &ctx));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn context(&self) -> &Arc<Context> {
        &self.0.context
    }

    /// `CL_EVENT_COMMAND_QUEUE` (`clGetEventInfo`): the queue of the command,
    /// `None` for a user event or once the queue has been released.
    ///
    /// ```
    /// use dmabridge::runtime::event::Event;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let marker = queue.enqueue_marker(&[])?;
    /// assert!(marker.queue().is_some_and(|q| std::sync::Arc::ptr_eq(&q, &queue)));
    /// assert!(Event::user(&ctx).queue().is_none());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn queue(&self) -> Option<Arc<Queue>> {
        self.0.queue.as_ref().and_then(Weak::upgrade)
    }

    /// True for an event of `clCreateUserEvent`.
    ///
    /// ```
    /// use dmabridge::runtime::event::Event;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// assert!(Event::user(&ctx).is_user());
    /// assert!(!queue.enqueue_marker(&[])?.is_user());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn is_user(&self) -> bool {
        self.0.queue.is_none()
    }

    /// `CL_EVENT_REFERENCE_COUNT` (`clGetEventInfo`): the application's
    /// references plus those a queue holds while the command is pending.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::Event, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let ev = Event::user(&ctx);
    /// let retained = ev.clone();
    /// assert_eq!(ev.reference_count(), 2);
    /// drop(retained);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn reference_count(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    /// True if both are the same event (the same `cl_event` handle).
    ///
    /// No OpenCL function of its own: handle identity, as the C face compares `cl_event`s.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::Event, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let ev = Event::user(&ctx);
    /// assert!(ev.ptr_eq(&ev.clone()));
    /// assert!(!ev.ptr_eq(&Event::user(&ctx)));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn ptr_eq(&self, other: &Event) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The `cl_event` handle: the address of the shared event.
    ///
    /// No OpenCL function of its own: the identity the C face maps to a `cl_event`.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::Event, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let ev = Event::user(&ctx);
    /// assert_eq!(ev.as_ptr(), ev.clone().as_ptr());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn as_ptr(&self) -> *const () {
        Arc::as_ptr(&self.0).cast()
    }

    /// `clSetUserEventStatus`: `CL_COMPLETE` (0) or a negative error code,
    /// once. Fails with `CL_INVALID_EVENT` for an event that is not a user
    /// event, `CL_INVALID_VALUE` for any other status and
    /// `CL_INVALID_OPERATION` if the status was already set.
    ///
    /// ```
    /// use dmabridge::runtime::event::{command_type, Event, EventStatus};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let gate = Event::user(&ctx);
    /// let cmd = queue.enqueue(command_type::NATIVE_KERNEL, &[gate.clone()], false, Box::new(|| Ok(())))?;
    /// gate.set_user_status(0)?; // CL_COMPLETE: releases the command
    /// Event::wait(&[cmd])?;
    /// assert_eq!(gate.status(), EventStatus::Complete);
    /// assert!(gate.set_user_status(0).is_err()); // only once
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_user_status(&self, execution_status: i32) -> ClResult<()> {
        if !self.is_user() {
            return cl_err!(
                InvalidEvent,
                "event is a {} event, not a user event: only user events take clSetUserEventStatus",
                command_type::name(self.0.command_type)
            );
        }
        if execution_status > 0 {
            return cl_err!(
                InvalidValue,
                "execution_status {execution_status} is neither CL_COMPLETE (0) nor a negative error code"
            );
        }
        if !self.advance(execution_status) {
            return cl_err!(
                InvalidOperation,
                "the status of this user event was already set (to {})",
                self.0.status.load(Ordering::Acquire)
            );
        }
        Ok(())
    }

    /// `clSetEventCallback`: call `f` once the status reaches or passes
    /// `exec_status` (`CL_SUBMITTED`, `CL_RUNNING` or `CL_COMPLETE`, else
    /// `CL_INVALID_VALUE`), with `exec_status`, or with the error code if the
    /// command terminates abnormally. Called at once, on this thread, if the
    /// event is already there; otherwise on the thread that moves the status,
    /// after earlier statuses' callbacks and in registration order within a
    /// status.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicI32, Ordering};
    /// use std::sync::Arc;
    /// use dmabridge::runtime::{context::Context, event::{exec_status, Event}, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let ev = Event::user(&ctx);
    /// let seen = Arc::new(AtomicI32::new(1));
    /// let s = seen.clone();
    /// ev.set_callback(exec_status::COMPLETE, Box::new(move |_ev, status| s.store(status, Ordering::SeqCst)))?;
    /// ev.set_user_status(exec_status::COMPLETE)?; // runs the callback on this thread
    /// assert_eq!(seen.load(Ordering::SeqCst), exec_status::COMPLETE);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_callback(&self, exec_status: i32, f: EventCallback) -> ClResult<()> {
        if !matches!(exec_status, exec_status::SUBMITTED | exec_status::RUNNING | exec_status::COMPLETE) {
            return cl_err!(
                InvalidValue,
                "command_exec_callback_type {exec_status} is not CL_SUBMITTED (2), CL_RUNNING (1) or CL_COMPLETE (0)"
            );
        }
        let mut st = sync::lock(&self.0.state);
        let cur = self.0.status.load(Ordering::Acquire);
        if cur <= exec_status {
            drop(st);
            f(self, if cur < 0 { cur } else { exec_status });
        } else {
            st.pending.push(Pending::User { at: exec_status, f });
        }
        Ok(())
    }

    /// `clWaitForEvents`: block until every event finished. Fails with
    /// `CL_INVALID_VALUE` for an empty list, `CL_INVALID_CONTEXT` if the
    /// events belong to different contexts (before waiting), and
    /// `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST` if any of them ended
    /// with a negative status (after waiting for all of them).
    ///
    /// ```
    /// use dmabridge::runtime::event::{command_type, Event};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let a = queue.enqueue(command_type::NATIVE_KERNEL, &[], false, Box::new(|| Ok(())))?;
    /// let b = queue.enqueue_marker(&[])?;
    /// Event::wait(&[a, b])?;
    /// assert!(Event::wait(&[]).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn wait(events: &[Event]) -> ClResult<()> {
        let Some(first) = events.first() else {
            return cl_err!(InvalidValue, "event_list is empty (num_events is 0)");
        };
        if let Some(i) = events.iter().position(|e| !Arc::ptr_eq(e.context(), first.context())) {
            return cl_err!(InvalidContext, "event_list[{i}] belongs to a different context than event_list[0]");
        }
        let mut failed = None;
        for (i, e) in events.iter().enumerate() {
            let s = e.wait_done();
            if s < 0 && failed.is_none() {
                failed = Some((i, e, s));
            }
        }
        match failed {
            None => Ok(()),
            Some((i, e, s)) => cl_err!(
                ExecStatusErrorForEventsInWaitList,
                "event_list[{i}] ({}) ended with error status {s}",
                command_type::name(e.command_type())
            ),
        }
    }

    /// All five profiling timestamps (`clGetEventProfilingInfo`). Fails with
    /// `CL_PROFILING_INFO_NOT_AVAILABLE` for a user event, an event of a
    /// queue without `CL_QUEUE_PROFILING_ENABLE`, or a command that has not
    /// reached `CL_COMPLETE` (including one that failed).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::Event, platform::Platform};
    /// use dmabridge::runtime::queue::{properties, Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::from_bits(properties::PROFILING_ENABLE)?)?;
    /// let marker = queue.enqueue_marker(&[])?;
    /// Event::wait(&[marker.clone()])?;
    /// let t = marker.profiling_times()?;
    /// assert!(t.queued <= t.submit && t.submit <= t.start && t.start <= t.end && t.end == t.complete);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn profiling_times(&self) -> ClResult<ProfilingTimes> {
        if self.is_user() {
            return cl_err!(ProfilingInfoNotAvailable, "event is a user event: user events have no profiling info");
        }
        if !self.0.profiling {
            return cl_err!(
                ProfilingInfoNotAvailable,
                "the event's command queue was created without CL_QUEUE_PROFILING_ENABLE"
            );
        }
        let st = sync::lock(&self.0.state);
        let s = self.0.status.load(Ordering::Acquire);
        if s != exec_status::COMPLETE {
            return cl_err!(
                ProfilingInfoNotAvailable,
                "the event's status is {s}, not CL_COMPLETE: profiling info is available once the command completes"
            );
        }
        let [queued, submit, start, end, complete] = st.times;
        Ok(ProfilingTimes { queued, submit, start, end, complete })
    }

    /// One profiling timestamp (`clGetEventProfilingInfo`): `param` is one of
    /// [`profiling_info`] (else `CL_INVALID_VALUE`); errors as
    /// [`Event::profiling_times`].
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::{profiling_info, Event}, platform::Platform};
    /// use dmabridge::runtime::queue::{properties, Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::from_bits(properties::PROFILING_ENABLE)?)?;
    /// let marker = queue.enqueue_marker(&[])?;
    /// Event::wait(&[marker.clone()])?;
    /// let (start, end) = (marker.profiling_info(profiling_info::START)?, marker.profiling_info(profiling_info::END)?);
    /// assert!(start <= end);
    /// // User events have no profiling info.
    /// assert!(Event::user(&ctx).profiling_info(profiling_info::START).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn profiling_info(&self, param: u32) -> ClResult<u64> {
        if !(profiling_info::QUEUED..=profiling_info::COMPLETE).contains(&param) {
            return cl_err!(InvalidValue, "param_name {param:#x} is not a CL_PROFILING_COMMAND_* value");
        }
        let t = self.profiling_times()?;
        Ok([t.queued, t.submit, t.start, t.end, t.complete][(param - profiling_info::QUEUED) as usize])
    }
}
