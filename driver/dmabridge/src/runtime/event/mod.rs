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

use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

use crate::cl_err;
use crate::error::{code, ClError, ClErrorKind, ClResult};

use super::context::Context;
use super::queue::Queue;

/// `cl_command_type` values (`CL_EVENT_COMMAND_TYPE`).
pub mod command_type {
    /// `CL_COMMAND_USER`: a user event.
    pub const USER: u32 = 0x1204;
    /// `CL_COMMAND_MARKER`.
    pub const MARKER: u32 = 0x11FE;
    /// `CL_COMMAND_BARRIER`.
    pub const BARRIER: u32 = 0x1205;
    /// `CL_COMMAND_SVM_FREE`.
    pub const SVM_FREE: u32 = 0x1209;
    /// `CL_COMMAND_SVM_MEMCPY`.
    pub const SVM_MEMCPY: u32 = 0x120A;
    /// `CL_COMMAND_SVM_MEMFILL`.
    pub const SVM_MEMFILL: u32 = 0x120B;
    /// `CL_COMMAND_SVM_MAP`.
    pub const SVM_MAP: u32 = 0x120C;
    /// `CL_COMMAND_SVM_UNMAP`.
    pub const SVM_UNMAP: u32 = 0x120D;
    /// `CL_COMMAND_MIGRATE_SVM_MEM_OBJECTS`.
    pub const MIGRATE_SVM_MEM_OBJECTS: u32 = 0x120E;
    /// `CL_COMMAND_MEMFILL_INTEL` (`clEnqueueMemFillINTEL`).
    pub const MEMFILL_INTEL: u32 = 0x4204;
    /// `CL_COMMAND_MEMCPY_INTEL` (`clEnqueueMemcpyINTEL`).
    pub const MEMCPY_INTEL: u32 = 0x4205;
    /// `CL_COMMAND_MIGRATEMEM_INTEL` (`clEnqueueMigrateMemINTEL`).
    pub const MIGRATEMEM_INTEL: u32 = 0x4206;
    /// `CL_COMMAND_MEMADVISE_INTEL` (`clEnqueueMemAdviseINTEL`).
    pub const MEMADVISE_INTEL: u32 = 0x4207;

    /// `CL_COMMAND_NDRANGE_KERNEL`.
    pub const NDRANGE_KERNEL: u32 = 0x11F0;
    /// `CL_COMMAND_TASK`.
    pub const TASK: u32 = 0x11F1;
    /// `CL_COMMAND_NATIVE_KERNEL`.
    pub const NATIVE_KERNEL: u32 = 0x11F2;

    /// `CL_COMMAND_READ_BUFFER`.
    pub const READ_BUFFER: u32 = 0x11F3;
    /// `CL_COMMAND_WRITE_BUFFER`.
    pub const WRITE_BUFFER: u32 = 0x11F4;
    /// `CL_COMMAND_COPY_BUFFER`.
    pub const COPY_BUFFER: u32 = 0x11F5;
    /// `CL_COMMAND_MAP_BUFFER`.
    pub const MAP_BUFFER: u32 = 0x11FB;
    /// `CL_COMMAND_UNMAP_MEM_OBJECT`.
    pub const UNMAP_MEM_OBJECT: u32 = 0x11FD;
    /// `CL_COMMAND_READ_BUFFER_RECT`.
    pub const READ_BUFFER_RECT: u32 = 0x1201;
    /// `CL_COMMAND_WRITE_BUFFER_RECT`.
    pub const WRITE_BUFFER_RECT: u32 = 0x1202;
    /// `CL_COMMAND_COPY_BUFFER_RECT`.
    pub const COPY_BUFFER_RECT: u32 = 0x1203;
    /// `CL_COMMAND_FILL_BUFFER`.
    pub const FILL_BUFFER: u32 = 0x1207;

    /// The constant's name without the `CL_` prefix, for error messages
    /// (`"command"` for a type this module does not list).
    ///
    /// No OpenCL function of its own: names a `CL_COMMAND_*` value.
    ///
    /// ```
    /// use dmabridge::runtime::event::command_type;
    /// assert_eq!(command_type::name(command_type::MEMCPY_INTEL), "COMMAND_MEMCPY_INTEL");
    /// assert_eq!(command_type::name(0), "command");
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn name(command_type: u32) -> &'static str {
        match command_type {
            USER => "COMMAND_USER",
            MARKER => "COMMAND_MARKER",
            BARRIER => "COMMAND_BARRIER",
            SVM_FREE => "COMMAND_SVM_FREE",
            SVM_MEMCPY => "COMMAND_SVM_MEMCPY",
            SVM_MEMFILL => "COMMAND_SVM_MEMFILL",
            SVM_MAP => "COMMAND_SVM_MAP",
            SVM_UNMAP => "COMMAND_SVM_UNMAP",
            MIGRATE_SVM_MEM_OBJECTS => "COMMAND_MIGRATE_SVM_MEM_OBJECTS",
            MEMFILL_INTEL => "COMMAND_MEMFILL_INTEL",
            MEMCPY_INTEL => "COMMAND_MEMCPY_INTEL",
            MIGRATEMEM_INTEL => "COMMAND_MIGRATEMEM_INTEL",
            MEMADVISE_INTEL => "COMMAND_MEMADVISE_INTEL",
            NDRANGE_KERNEL => "COMMAND_NDRANGE_KERNEL",
            TASK => "COMMAND_TASK",
            NATIVE_KERNEL => "COMMAND_NATIVE_KERNEL",
            READ_BUFFER => "COMMAND_READ_BUFFER",
            WRITE_BUFFER => "COMMAND_WRITE_BUFFER",
            COPY_BUFFER => "COMMAND_COPY_BUFFER",
            MAP_BUFFER => "COMMAND_MAP_BUFFER",
            UNMAP_MEM_OBJECT => "COMMAND_UNMAP_MEM_OBJECT",
            READ_BUFFER_RECT => "COMMAND_READ_BUFFER_RECT",
            WRITE_BUFFER_RECT => "COMMAND_WRITE_BUFFER_RECT",
            COPY_BUFFER_RECT => "COMMAND_COPY_BUFFER_RECT",
            FILL_BUFFER => "COMMAND_FILL_BUFFER",
            _ => "command",
        }
    }
}

/// `CL_EVENT_COMMAND_EXECUTION_STATUS` values; also the `command_exec_callback_type`
/// of `clSetEventCallback`.
pub mod exec_status {
    /// `CL_COMPLETE`.
    pub const COMPLETE: i32 = 0;
    /// `CL_RUNNING`.
    pub const RUNNING: i32 = 1;
    /// `CL_SUBMITTED`.
    pub const SUBMITTED: i32 = 2;
    /// `CL_QUEUED`.
    pub const QUEUED: i32 = 3;
}

/// `cl_profiling_info` values (`clGetEventProfilingInfo`).
pub mod profiling_info {
    /// `CL_PROFILING_COMMAND_QUEUED`.
    pub const QUEUED: u32 = 0x1280;
    /// `CL_PROFILING_COMMAND_SUBMIT`.
    pub const SUBMIT: u32 = 0x1281;
    /// `CL_PROFILING_COMMAND_START`.
    pub const START: u32 = 0x1282;
    /// `CL_PROFILING_COMMAND_END`.
    pub const END: u32 = 0x1283;
    /// `CL_PROFILING_COMMAND_COMPLETE`.
    pub const COMPLETE: u32 = 0x1284;
}

/// The execution status of an event (`CL_EVENT_COMMAND_EXECUTION_STATUS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventStatus {
    /// `CL_QUEUED`: enqueued, waiting for its wait list.
    Queued,
    /// `CL_SUBMITTED`: its wait list is complete; waiting for the device.
    Submitted,
    /// `CL_RUNNING`: executing.
    Running,
    /// `CL_COMPLETE`: done.
    Complete,
    /// Terminated abnormally with this (negative) CL error code.
    Error(i32),
}

impl EventStatus {
    /// The `cl_int` value `clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)` returns.
    ///
    /// ```
    /// use dmabridge::runtime::event::EventStatus;
    /// assert_eq!(EventStatus::Submitted.as_cl(), 2);
    /// assert_eq!(EventStatus::Error(-5).as_cl(), -5);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn as_cl(self) -> i32 {
        match self {
            EventStatus::Queued => exec_status::QUEUED,
            EventStatus::Submitted => exec_status::SUBMITTED,
            EventStatus::Running => exec_status::RUNNING,
            EventStatus::Complete => exec_status::COMPLETE,
            EventStatus::Error(code) => code,
        }
    }

    /// The status of a `cl_int` value (`None` above `CL_QUEUED`).
    ///
    /// ```
    /// use dmabridge::runtime::event::EventStatus;
    /// assert_eq!(EventStatus::from_cl(0), Some(EventStatus::Complete));
    /// assert_eq!(EventStatus::from_cl(-14), Some(EventStatus::Error(-14)));
    /// assert_eq!(EventStatus::from_cl(4), None);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn from_cl(value: i32) -> Option<EventStatus> {
        Some(match value {
            exec_status::QUEUED => EventStatus::Queued,
            exec_status::SUBMITTED => EventStatus::Submitted,
            exec_status::RUNNING => EventStatus::Running,
            exec_status::COMPLETE => EventStatus::Complete,
            v if v < 0 => EventStatus::Error(v),
            _ => return None,
        })
    }

    /// True for `Complete` and `Error`: the status will not change again.
    ///
    /// The statuses `clWaitForEvents` waits for (`CL_COMPLETE` or a negative code).
    ///
    /// ```
    /// use dmabridge::runtime::event::EventStatus;
    /// assert!(EventStatus::Complete.is_terminal() && EventStatus::Error(-5).is_terminal());
    /// assert!(!EventStatus::Running.is_terminal());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn is_terminal(self) -> bool {
        self.as_cl() <= 0
    }
}

/// The five profiling timestamps of a command, in nanoseconds of
/// `CLOCK_MONOTONIC` (`clGetEventProfilingInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProfilingTimes {
    /// `CL_PROFILING_COMMAND_QUEUED`: when it was enqueued.
    pub queued: u64,
    /// `CL_PROFILING_COMMAND_SUBMIT`: when its wait list resolved.
    pub submit: u64,
    /// `CL_PROFILING_COMMAND_START`: when it started executing.
    pub start: u64,
    /// `CL_PROFILING_COMMAND_END`: when it finished executing.
    pub end: u64,
    /// `CL_PROFILING_COMMAND_COMPLETE`: when it and its child commands
    /// finished (there are no child commands: equal to `end`).
    pub complete: u64,
}

/// A callback of `clSetEventCallback`: the event and the status it is called for.
pub type EventCallback = Box<dyn FnOnce(&Event, i32) + Send>;

/// An internal hook, run once with the terminal status of the event.
pub(crate) type Hook = Box<dyn FnOnce(i32) + Send>;

enum Pending {
    /// A `clSetEventCallback` callback for the status `at`.
    User { at: i32, f: EventCallback },
    /// A hook run when the event reaches a terminal status.
    Hook(Hook),
}

struct State {
    /// Queued, submit, start, end, complete (when profiling).
    times: [u64; 5],
    /// Callbacks and hooks not yet due.
    pending: Vec<Pending>,
    /// Threads blocked in `wait_done` (notify only when there are some).
    waiters: usize,
}

struct EventInner {
    context: Arc<Context>,
    command_type: u32,
    /// The queue of a command; `None` for user events.
    queue: Option<Weak<Queue>>,
    profiling: bool,
    /// `EventStatus::as_cl`; written under `state`, read without it.
    status: AtomicI32,
    state: Mutex<State>,
    done: Condvar,
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
        let pending = std::mem::take(&mut self.state.get_mut().unwrap_or_else(PoisonError::into_inner).pending);
        for p in pending {
            if let Pending::Hook(h) = p {
                h(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
            }
        }
    }
}

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

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(crate) fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(t.tv_nsec as u64)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing runs user code under these locks: a poisoned lock only means a
    // panic elsewhere, and the state it guards is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Event {
    fn with(
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
        let mut st = lock(&self.0.state);
        let cur = self.0.status.load(Ordering::Acquire);
        if cur <= exec_status {
            drop(st);
            f(self, if cur < 0 { cur } else { exec_status });
        } else {
            st.pending.push(Pending::User { at: exec_status, f });
        }
        Ok(())
    }

    /// Run `hook` with the terminal status (`CL_COMPLETE` or an error code)
    /// once the event finishes — at once, on this thread, if it has. Queues
    /// use it to learn that a wait list resolved (including events of other
    /// queues and user events). A user event released unset runs its hooks
    /// with `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
    pub(crate) fn on_finish(&self, hook: Hook) {
        let mut st = lock(&self.0.state);
        let cur = self.0.status.load(Ordering::Acquire);
        if cur <= 0 {
            drop(st);
            hook(cur);
        } else {
            st.pending.push(Pending::Hook(hook));
        }
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
        let mut st = lock(&self.0.state);
        st.waiters += 1;
        loop {
            let s = self.0.status.load(Ordering::Acquire);
            if s <= 0 {
                st.waiters -= 1;
                return s;
            }
            st = self.0.done.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
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
        let st = lock(&self.0.state);
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
    fn advance(&self, to: i32) -> bool {
        let inner = &*self.0;
        let mut st = lock(&inner.state);
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

/// Remove from `pending` what is due at status `to`: hooks first (they only
/// schedule commands), then callbacks by status (submitted, running,
/// complete), each status in registration order.
fn take_due(pending: &mut Vec<Pending>, to: i32) -> Vec<Pending> {
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

/// The kind of a CL error code; see [`ClErrorKind::from_code`].
///
/// What a blocking `clEnqueue*` returns for a command whose event ended with `code`.
///
/// ```
/// use dmabridge::error::{code, ClErrorKind};
/// use dmabridge::runtime::event::error_kind_from_code;
/// assert_eq!(error_kind_from_code(code::INVALID_VALUE), Some(ClErrorKind::InvalidValue));
/// assert_eq!(error_kind_from_code(1), None);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn error_kind_from_code(code: i32) -> Option<ClErrorKind> {
    ClErrorKind::from_code(code)
}

/// The error a blocking enqueue returns for a command of `command_type` that
/// ended with the negative `status`: the kind of that code
/// (`CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST` when its wait list
/// failed), or `CL_OUT_OF_RESOURCES` for a code without a kind.
pub(crate) fn status_error(command_type: u32, status: i32) -> ClError {
    let name = command_type::name(command_type);
    match error_kind_from_code(status) {
        Some(ClErrorKind::ExecStatusErrorForEventsInWaitList) => ClError::new(
            ClErrorKind::ExecStatusErrorForEventsInWaitList,
            format!("an event in the wait list of this {name} ended with a negative status; the command did not run"),
        ),
        Some(kind) => ClError::new(kind, format!("the {name} failed with status {status}")),
        None => ClError::new(
            ClErrorKind::OutOfResources,
            format!("the {name} failed with status {status}, which has no ClErrorKind"),
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::runtime::platform::Platform;
    use std::sync::mpsc;
    use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
    use std::time::Duration;

    static TEST_LOCK: RwLock<()> = RwLock::new(());

    /// Held by every event and queue test; the test that counts threads
    /// takes it exclusively.
    pub(crate) fn shared_lock() -> RwLockReadGuard<'static, ()> {
        TEST_LOCK.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Held by a test that must run alone among the event and queue tests.
    pub(crate) fn exclusive_lock() -> RwLockWriteGuard<'static, ()> {
        TEST_LOCK.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn context() -> Arc<Context> {
        Context::new(std::slice::from_ref(Platform::get().cpu())).unwrap()
    }

    /// A command event driven by hand (its queue is gone at once).
    fn command_event(ctx: &Arc<Context>, profiling: bool) -> Event {
        Event::for_command(ctx, command_type::MARKER, Weak::new(), profiling)
    }

    type Log = Arc<Mutex<Vec<(i32, i32)>>>;

    fn logger(log: &Log, tag: i32) -> EventCallback {
        let log = log.clone();
        Box::new(move |_, s| log.lock().unwrap().push((tag, s)))
    }

    #[test]
    fn status_values_are_the_cl_ones() {
        assert_eq!(EventStatus::Queued.as_cl(), 3);
        assert_eq!(EventStatus::Submitted.as_cl(), 2);
        assert_eq!(EventStatus::Running.as_cl(), 1);
        assert_eq!(EventStatus::Complete.as_cl(), 0);
        assert_eq!(EventStatus::Error(-5).as_cl(), -5);
        for s in [3, 2, 1, 0, -14] {
            assert_eq!(EventStatus::from_cl(s).unwrap().as_cl(), s);
        }
        assert_eq!(EventStatus::from_cl(4), None);
        assert!(EventStatus::Error(-1).is_terminal() && EventStatus::Complete.is_terminal());
        assert!(!EventStatus::Running.is_terminal());
    }

    #[test]
    fn user_event_completes_once() {
        let _g = shared_lock();
        let ctx = context();
        let e = Event::user(&ctx);
        assert_eq!(e.status(), EventStatus::Submitted);
        assert_eq!(e.command_type(), command_type::USER);
        assert!(e.is_user() && e.queue().is_none());
        assert!(Arc::ptr_eq(e.context(), &ctx));
        assert_eq!(e.set_user_status(1).unwrap_err().kind, ClErrorKind::InvalidValue);
        assert_eq!(e.set_user_status(3).unwrap_err().kind, ClErrorKind::InvalidValue);
        e.set_user_status(exec_status::COMPLETE).unwrap();
        assert_eq!(e.status(), EventStatus::Complete);
        assert_eq!(e.set_user_status(0).unwrap_err().kind, ClErrorKind::InvalidOperation);
        assert_eq!(e.set_user_status(-5).unwrap_err().kind, ClErrorKind::InvalidOperation);
        assert_eq!(e.status(), EventStatus::Complete);
        Event::wait(&[e.clone(), e]).unwrap();
    }

    #[test]
    fn user_event_error_is_terminal_and_fails_waits() {
        let _g = shared_lock();
        let ctx = context();
        let e = Event::user(&ctx);
        e.set_user_status(code::OUT_OF_RESOURCES).unwrap();
        assert_eq!(e.status(), EventStatus::Error(-5));
        assert_eq!(e.set_user_status(0).unwrap_err().kind, ClErrorKind::InvalidOperation);
        let ok = Event::user(&ctx);
        ok.set_user_status(0).unwrap();
        let err = Event::wait(&[ok, e.clone()]).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
        assert!(err.message.contains("event_list[1]"), "{err}");
        // Internal status moves do not resurrect it either.
        e.complete(Ok(()));
        assert_eq!(e.status(), EventStatus::Error(-5));
    }

    #[test]
    fn only_user_events_take_a_user_status() {
        let _g = shared_lock();
        let ctx = context();
        let e = command_event(&ctx, false);
        assert_eq!(e.set_user_status(0).unwrap_err().kind, ClErrorKind::InvalidEvent);
        assert_eq!(e.status(), EventStatus::Queued);
    }

    #[test]
    fn status_only_moves_forward() {
        let _g = shared_lock();
        let ctx = context();
        let e = command_event(&ctx, false);
        e.mark_running();
        assert_eq!(e.status(), EventStatus::Running);
        e.mark_submitted();
        assert_eq!(e.status(), EventStatus::Running);
        e.complete(Err(code::MEM_COPY_OVERLAP));
        assert_eq!(e.status(), EventStatus::Error(code::MEM_COPY_OVERLAP));
        e.complete(Ok(()));
        e.mark_running();
        assert_eq!(e.status(), EventStatus::Error(code::MEM_COPY_OVERLAP));
        let e = command_event(&ctx, false);
        e.complete(Err(7));
        assert_eq!(e.status(), EventStatus::Error(code::OUT_OF_RESOURCES));
    }

    #[test]
    fn wait_for_events_errors() {
        let _g = shared_lock();
        let a = context();
        let b = context();
        assert_eq!(Event::wait(&[]).unwrap_err().kind, ClErrorKind::InvalidValue);
        let ea = Event::user(&a);
        let eb = Event::user(&b);
        // Rejected before waiting (neither is complete: this would hang).
        let err = Event::wait(&[ea.clone(), eb]).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::InvalidContext);
        assert!(err.message.contains("event_list[1]"), "{err}");
        ea.set_user_status(0).unwrap();
    }

    #[test]
    fn wait_blocks_until_another_thread_completes() {
        let _g = shared_lock();
        let ctx = context();
        let e = Event::user(&ctx);
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let e = e.clone();
            std::thread::spawn(move || {
                let r = Event::wait(std::slice::from_ref(&e));
                tx.send(()).unwrap();
                r
            })
        };
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "wait returned before completion");
        e.set_user_status(0).unwrap();
        rx.recv_timeout(Duration::from_secs(10)).expect("wait did not return after completion");
        waiter.join().unwrap().unwrap();
    }

    #[test]
    fn callbacks_run_in_status_order_and_at_once_when_past() {
        let _g = shared_lock();
        let ctx = context();
        let e = command_event(&ctx, false);
        let log: Log = Arc::default();
        assert_eq!(e.set_callback(exec_status::QUEUED, logger(&log, 0)).unwrap_err().kind, ClErrorKind::InvalidValue);
        assert_eq!(e.set_callback(-1, logger(&log, 0)).unwrap_err().kind, ClErrorKind::InvalidValue);
        e.set_callback(exec_status::COMPLETE, logger(&log, 1)).unwrap();
        e.set_callback(exec_status::RUNNING, logger(&log, 2)).unwrap();
        e.set_callback(exec_status::SUBMITTED, logger(&log, 3)).unwrap();
        e.set_callback(exec_status::COMPLETE, logger(&log, 4)).unwrap();
        assert!(log.lock().unwrap().is_empty());
        // Skipping statuses still calls each callback, earliest status first.
        e.mark_running();
        assert_eq!(*log.lock().unwrap(), [(3, 2), (2, 1)]);
        e.complete(Ok(()));
        assert_eq!(*log.lock().unwrap(), [(3, 2), (2, 1), (1, 0), (4, 0)]);
        // Already past: called at once, with the status asked for.
        e.set_callback(exec_status::SUBMITTED, logger(&log, 5)).unwrap();
        assert_eq!(log.lock().unwrap().last(), Some(&(5, 2)));
        e.complete(Ok(()));
        assert_eq!(log.lock().unwrap().len(), 5, "a callback ran twice");
    }

    #[test]
    fn callbacks_receive_the_error_status() {
        let _g = shared_lock();
        let ctx = context();
        let e = Event::user(&ctx);
        let log: Log = Arc::default();
        // A user event starts at CL_SUBMITTED: that callback runs at once.
        e.set_callback(exec_status::SUBMITTED, logger(&log, 1)).unwrap();
        e.set_callback(exec_status::RUNNING, logger(&log, 2)).unwrap();
        e.set_callback(exec_status::COMPLETE, logger(&log, 3)).unwrap();
        assert_eq!(*log.lock().unwrap(), [(1, 2)]);
        e.set_user_status(-9999).unwrap();
        assert_eq!(*log.lock().unwrap(), [(1, 2), (2, -9999), (3, -9999)]);
        e.set_callback(exec_status::COMPLETE, logger(&log, 4)).unwrap();
        assert_eq!(log.lock().unwrap().last(), Some(&(4, -9999)));
    }

    #[test]
    fn callbacks_run_outside_the_event_lock() {
        let _g = shared_lock();
        let ctx = context();
        let e = Event::user(&ctx);
        let (tx, rx) = mpsc::channel();
        e.set_callback(
            exec_status::COMPLETE,
            Box::new(move |ev, s| {
                // These lock the event: they would deadlock under it.
                let again = tx.clone();
                ev.set_callback(exec_status::COMPLETE, Box::new(move |_, s2| again.send(s2).unwrap())).unwrap();
                assert_eq!(ev.status(), EventStatus::Complete);
                tx.send(s).unwrap();
            }),
        )
        .unwrap();
        e.set_user_status(0).unwrap();
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [0, 0]);
    }

    #[test]
    fn hooks_run_once_finished_and_when_an_unset_user_event_is_released() {
        let _g = shared_lock();
        let ctx = context();
        let log: Log = Arc::default();
        let hook = |tag| -> Hook {
            let log = log.clone();
            Box::new(move |s| log.lock().unwrap().push((tag, s)))
        };
        let e = command_event(&ctx, false);
        e.on_finish(hook(1));
        e.mark_running();
        assert!(log.lock().unwrap().is_empty());
        e.complete(Err(-5));
        e.on_finish(hook(2));
        assert_eq!(*log.lock().unwrap(), [(1, -5), (2, -5)]);
        let u = Event::user(&ctx);
        u.on_finish(hook(3));
        drop(u);
        assert_eq!(log.lock().unwrap().last(), Some(&(3, code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)));
    }

    #[test]
    fn profiling_is_not_available_for_user_events_or_without_profiling() {
        let _g = shared_lock();
        let ctx = context();
        let u = Event::user(&ctx);
        u.set_user_status(0).unwrap();
        assert_eq!(u.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
        let e = command_event(&ctx, false);
        e.complete(Ok(()));
        assert_eq!(e.profiling_info(profiling_info::END).unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
        let p = command_event(&ctx, true);
        assert_eq!(p.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
        p.mark_submitted();
        p.complete(Ok(()));
        let t = p.profiling_times().unwrap();
        assert!(t.queued > 0 && t.queued <= t.submit && t.submit <= t.start && t.start <= t.end);
        assert_eq!(t.end, t.complete);
        assert_eq!(p.profiling_info(profiling_info::START).unwrap(), t.start);
        assert_eq!(p.profiling_info(0x1285).unwrap_err().kind, ClErrorKind::InvalidValue);
        let f = command_event(&ctx, true);
        f.complete(Err(-5));
        assert_eq!(f.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
    }

    #[test]
    fn error_kinds_round_trip_through_codes() {
        for c in [-1, -5, -8, -14, -30, -34, -58, -59, -64] {
            assert_eq!(error_kind_from_code(c).unwrap().code(), c);
        }
        assert_eq!(error_kind_from_code(0), None);
        assert_eq!(error_kind_from_code(-2), Some(ClErrorKind::DeviceNotAvailable));
        assert_eq!(status_error(command_type::MEMCPY_INTEL, -8).kind, ClErrorKind::MemCopyOverlap);
        assert_eq!(status_error(command_type::MEMCPY_INTEL, -14).kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
        assert_eq!(status_error(command_type::MEMCPY_INTEL, -9999).kind, ClErrorKind::OutOfResources);
    }

    #[test]
    fn reference_count_follows_clones() {
        let _g = shared_lock();
        let ctx = context();
        let e = Event::user(&ctx);
        assert_eq!(e.reference_count(), 1);
        let f = e.clone();
        assert_eq!(e.reference_count(), 2);
        assert!(f.ptr_eq(&e) && f == e && f.as_ptr() == e.as_ptr());
        drop(f);
        assert_eq!(e.reference_count(), 1);
        assert_ne!(e, Event::user(&ctx));
    }
}
