//! Command queues (`cl_command_queue`): in-order and out-of-order execution
//! of host-side work closures, wait lists across queues, markers, barriers,
//! `clFinish`, and waiting for the commands that may use an allocation.
//!
//! # Design
//!
//! A [`Queue`] owns a scheduler shared with its worker threads. Every
//! command that is enqueued and not yet finished is a *live* entry, in
//! enqueue order, holding its event, the [`CommandUse`] it declared and its
//! work. A command waits for its wait list through hooks on those events
//! ([`Event`]s of any queue of the context, or user events): a counter of
//! unresolved events, and a flag set when one that propagates errors ends
//! with a negative status. No thread ever blocks on a dependency.
//!
//! * In-order queue: the oldest live command runs once its wait list
//!   resolved and nothing else runs; one worker thread at most.
//! * Out-of-order queue: a command runs as soon as its wait list resolved, on
//!   up to `max(2, compute_units)` workers. A barrier makes every later
//!   command wait for it; a marker or barrier with an empty wait list waits
//!   for every earlier command (without taking on their errors).
//!
//! Workers are created on demand (when a command is runnable and no idle
//! worker can take it), sleep on a condition variable while the queue
//! lives, and are joined when the queue is dropped, once they have run every
//! command runnable at that point. A command whose wait list resolves after
//! the queue was dropped still runs, on a worker started for it that exits
//! as soon as nothing is runnable: a dropped queue keeps no thread waiting
//! for a user event that may never be set (and a user event released unset
//! fails the commands waiting on it, see [`Event`]).
//!
//! **Inline path.** A blocking command whose wait list has finished runs on
//! the calling thread when every earlier command of the queue has finished
//! (on an out-of-order queue: when no barrier is pending): no thread
//! handoff, one allocation (the event), two round trips of the queue's lock
//! and three of the event's, and the clock read only when profiling.
//!
//! **Asynchronous commands** ([`Queue::enqueue_async_with_use`], module
//! `completion`): the work only starts the command on another executor and
//! hands it a [`Completion`], which that executor's thread calls when the
//! command ended. It counts as running until then. One that can start at
//! once starts on the enqueuing thread (as the inline path, but without
//! blocking), so a launch costs no hand-off to a worker and none back.

// This file: the `Queue` type and its public API.
/// Asynchronous commands: `AsyncWork` starts them, a `Completion` ends them.
mod completion;
/// The wait-list state of a queued command and the hooks on its events.
mod deps;
/// `CL_QUEUE_PROPERTIES`: the bits and `QueueProps`.
mod props;
/// Context-wide functions: `queues_of`, `wait_for_context_commands_using`, `check_wait_list`.
mod registry;
/// Scheduler state, worker threads and `run_and_complete`.
mod scheduler;
/// The enqueue path: inline commands, markers and barriers, wait-list hooks.
mod submit;
/// `CommandUse`, the memory a command may access.
mod usage;

#[cfg(test)]
mod tests;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use crate::cl_err;
use crate::error::ClResult;

use super::context::Context;
use super::device::Device;
use super::event::{command_type, Event};

pub use completion::{AsyncWork, Completion};
pub use props::{properties, QueueProps};
pub use registry::{check_wait_list, queues_of, wait_for_context_commands_using};
pub use usage::{CommandUse, UsedRange};

use registry::NEXT_ID;
use scheduler::{Run, Shared, State};
use submit::Kind;

/// The work of a command: runs once, on a worker or the enqueuing thread.
/// `Err` carries the negative CL code the command's event ends with; a panic
/// ends it with `CL_OUT_OF_RESOURCES` (it does not unwind into the queue).
pub type Work = Box<dyn FnOnce() -> Result<(), i32> + Send>;

/// A command queue (`cl_command_queue`), held as `Arc<Queue>`: clone to
/// retain (`clRetainCommandQueue`), drop to release (`clReleaseCommandQueue`).
pub struct Queue {
    context: Arc<Context>,
    device: Arc<Device>,
    props: QueueProps,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("id", &self.shared.id)
            .field("device", &self.device.name)
            .field("props", &self.props)
            .finish()
    }
}

impl Queue {
    /// A queue on `device` of `context` (`clCreateCommandQueueWithProperties`).
    /// Fails with `CL_INVALID_DEVICE` if the device is not in the context.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{properties, Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let props = QueueProps::from_bits(properties::OUT_OF_ORDER_EXEC_MODE_ENABLE | properties::PROFILING_ENABLE)?;
    /// let queue = Queue::new(&ctx, cpu, props)?;
    /// assert!(queue.props().out_of_order);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn new(context: &Arc<Context>, device: &Arc<Device>, props: QueueProps) -> ClResult<Arc<Queue>> {
        if !context.has_device(device) {
            return cl_err!(InvalidDevice, "device \"{}\" (index {}) is not in the context", device.name, device.index);
        }
        let max_workers = if props.out_of_order { (device.compute_units as usize).max(2) } else { 1 };
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            out_of_order: props.out_of_order,
            max_workers,
            state: Mutex::new(State::default()),
            work: Condvar::new(),
        });
        let q = Arc::new(Queue { context: context.clone(), device: device.clone(), props, shared });
        context.add_queue(&q);
        Ok(q)
    }

    /// `CL_QUEUE_CONTEXT` (`clGetCommandQueueInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// assert!(std::sync::Arc::ptr_eq(queue.context(), &ctx));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// `CL_QUEUE_DEVICE` (`clGetCommandQueueInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// assert!(std::sync::Arc::ptr_eq(queue.device(), cpu));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// `CL_QUEUE_PROPERTIES` (`clGetCommandQueueInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// assert_eq!(queue.props().bits(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn props(&self) -> QueueProps {
        self.props
    }

    /// `CL_QUEUE_REFERENCE_COUNT` (`clGetCommandQueueInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let retained = queue.clone();
    /// assert_eq!(queue.reference_count(), 2);
    /// drop(retained);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn reference_count(self: &Arc<Self>) -> usize {
        Arc::strong_count(self)
    }

    /// Enqueue a command (the core of every `clEnqueue*`) that may access
    /// any memory ([`CommandUse::All`]); see [`Queue::enqueue_with_use`].
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use dmabridge::runtime::event::{command_type, EventStatus};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let ran = Arc::new(AtomicBool::new(false));
    /// let flag = ran.clone();
    /// let work = Box::new(move || {
    ///     flag.store(true, Ordering::SeqCst);
    ///     Ok(())
    /// });
    /// // Blocking: returns once the work ran.
    /// let ev = queue.enqueue(command_type::NATIVE_KERNEL, &[], true, work)?;
    /// assert!(ran.load(Ordering::SeqCst));
    /// assert_eq!(ev.status(), EventStatus::Complete);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn enqueue(
        self: &Arc<Self>,
        command_type: u32,
        wait_list: &[Event],
        blocking: bool,
        work: Box<dyn FnOnce() -> Result<(), i32> + Send>,
    ) -> ClResult<Event> {
        self.submit(command_type, wait_list, &[], blocking, Some(Run::Sync(work)), CommandUse::All, Kind::Command)
    }

    /// Enqueue a command of `command_type` that runs `work` once every event
    /// of `wait_list` finished (and, on an in-order queue, every earlier
    /// command), and declares the memory it may access. Its event ends with
    /// `CL_COMPLETE`, with `work`'s error code, or with
    /// `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST` without running `work`
    /// if an event of the wait list ended with an error.
    ///
    /// Fails with `CL_INVALID_CONTEXT` if a wait-list event belongs to
    /// another context. A blocking enqueue returns once the command finished,
    /// and fails with the error its event ended with (see
    /// [`error_kind_from_code`](super::event::error_kind_from_code)); it runs
    /// on the calling thread when nothing else is pending (see the module
    /// documentation).
    ///
    /// ```
    /// use dmabridge::runtime::event::{command_type, Event};
    /// use dmabridge::runtime::queue::CommandUse;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let buf = vec![0u8; 4096];
    /// let usage = CommandUse::range(dmabridge::sys::addr::HostAddr::of(buf.as_ptr()), buf.len());
    /// let ev = queue.enqueue_with_use(command_type::NATIVE_KERNEL, &[], false, usage, Box::new(|| Ok(())))?;
    /// Event::wait(&[ev])?;
    /// // A command whose work fails ends with its (negative) error code.
    /// let fails = Box::new(|| Err(-5));
    /// let failed = queue.enqueue_with_use(command_type::NATIVE_KERNEL, &[], false, CommandUse::Nothing, fails)?;
    /// assert!(Event::wait(&[failed]).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn enqueue_with_use(
        self: &Arc<Self>,
        command_type: u32,
        wait_list: &[Event],
        blocking: bool,
        usage: CommandUse,
        work: Box<dyn FnOnce() -> Result<(), i32> + Send>,
    ) -> ClResult<Event> {
        self.submit(command_type, wait_list, &[], blocking, Some(Run::Sync(work)), usage, Kind::Command)
    }

    /// Enqueue an asynchronous command (non-blocking): `work` starts it
    /// without blocking and hands the [`Completion`] to whatever runs it,
    /// which calls it once the command ended, from any thread. Ordered,
    /// waited for and accounted like a command of
    /// [`Queue::enqueue_with_use`], and running until the completion is
    /// called: an in-order queue starts nothing after it before then. When
    /// it can start at once (its wait list finished and, in order, nothing
    /// else is pending), `work` runs on the calling thread before this
    /// returns, so that no worker thread is woken.
    ///
    /// ```
    /// use dmabridge::runtime::event::{command_type, Event};
    /// use dmabridge::runtime::queue::{CommandUse, Queue, QueueProps};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// // The executor: a thread that ends the command later.
    /// let ev = queue.enqueue_async_with_use(command_type::NDRANGE_KERNEL, &[], CommandUse::Nothing, Box::new(|done| {
    ///     std::thread::spawn(move || done.complete(Ok(())));
    /// }))?;
    /// Event::wait(&[ev])?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn enqueue_async_with_use(
        self: &Arc<Self>,
        command_type: u32,
        wait_list: &[Event],
        usage: CommandUse,
        work: AsyncWork,
    ) -> ClResult<Event> {
        self.submit(command_type, wait_list, &[], false, Some(Run::Async(work)), usage, Kind::Command)
    }

    /// `clEnqueueMarkerWithWaitList`: an event that completes once
    /// `wait_list` finished — or, for an empty list, once every command
    /// enqueued before it finished.
    ///
    /// ```
    /// use dmabridge::runtime::event::{command_type, Event};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let gate = Event::user(&ctx);
    /// queue.enqueue(command_type::NATIVE_KERNEL, &[gate.clone()], false, Box::new(|| Ok(())))?;
    /// // An empty wait list: the marker completes once every earlier command did.
    /// let marker = queue.enqueue_marker(&[])?;
    /// assert!(!marker.status().is_terminal());
    /// gate.set_user_status(0)?;
    /// Event::wait(&[marker])?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn enqueue_marker(self: &Arc<Self>, wait_list: &[Event]) -> ClResult<Event> {
        self.submit(command_type::MARKER, wait_list, &[], false, None, CommandUse::Nothing, Kind::Marker)
    }

    /// `clEnqueueBarrierWithWaitList`: like a marker, and every command
    /// enqueued after it waits for it.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::{command_type, Event}, platform::Platform};
    /// use dmabridge::runtime::queue::{properties, Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::from_bits(properties::OUT_OF_ORDER_EXEC_MODE_ENABLE)?)?;
    /// let gate = Event::user(&ctx);
    /// queue.enqueue(command_type::NATIVE_KERNEL, &[gate.clone()], false, Box::new(|| Ok(())))?;
    /// let barrier = queue.enqueue_barrier(&[])?;
    /// // Waits for the barrier, even on an out-of-order queue.
    /// let after = queue.enqueue(command_type::NATIVE_KERNEL, &[], false, Box::new(|| Ok(())))?;
    /// assert!(!after.status().is_terminal());
    /// gate.set_user_status(0)?;
    /// Event::wait(&[barrier, after])?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn enqueue_barrier(self: &Arc<Self>, wait_list: &[Event]) -> ClResult<Event> {
        self.submit(command_type::BARRIER, wait_list, &[], false, None, CommandUse::Nothing, Kind::Barrier)
    }

    /// A command of `command_type` ordered like a barrier on any queue: it
    /// runs `work` once `wait_list` finished — or, for an empty list, once
    /// every command enqueued before it finished — and once `also` finished
    /// (events the command itself needs, which do not count as its wait
    /// list), and every command enqueued after it waits for it. The order
    /// `cl_khr_semaphore` gives its wait and signal commands: on an
    /// out-of-order queue a plain command would run as soon as its own wait
    /// list allowed.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, event::{command_type, Event}, platform::Platform};
    /// use dmabridge::runtime::queue::{properties, Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::from_bits(properties::OUT_OF_ORDER_EXEC_MODE_ENABLE)?)?;
    /// let gate = Event::user(&ctx);
    /// queue.enqueue(command_type::NATIVE_KERNEL, &[gate.clone()], false, Box::new(|| Ok(())))?;
    /// let ordered = queue.enqueue_ordered(command_type::NATIVE_KERNEL, &[], &[], Box::new(|| Ok(())))?;
    /// // Waits for the command before it, even on an out-of-order queue.
    /// assert!(!ordered.status().is_terminal());
    /// gate.set_user_status(0)?;
    /// Event::wait(&[ordered])?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn enqueue_ordered(
        self: &Arc<Self>,
        command_type: u32,
        wait_list: &[Event],
        also: &[Event],
        work: Box<dyn FnOnce() -> Result<(), i32> + Send>,
    ) -> ClResult<Event> {
        self.submit(command_type, wait_list, also, false, Some(Run::Sync(work)), CommandUse::Nothing, Kind::Barrier)
    }

    /// `clFlush`: commands are submitted as they are enqueued, so only a check.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// queue.flush()?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn flush(&self) -> ClResult<()> {
        Ok(())
    }

    /// `clFinish`: block until every command enqueued so far finished.
    ///
    /// ```
    /// use dmabridge::runtime::event::command_type;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// for _ in 0..4 {
    ///     queue.enqueue(command_type::NATIVE_KERNEL, &[], false, Box::new(|| Ok(())))?;
    /// }
    /// queue.finish()?;
    /// assert_eq!(queue.pending_commands(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn finish(&self) -> ClResult<()> {
        let events: Vec<Event> = {
            let st = self.shared.lock();
            if self.props.out_of_order {
                st.live.iter().map(|l| l.event.clone()).collect()
            } else {
                // In order, the newest finishes last.
                st.live.back().map(|l| l.event.clone()).into_iter().collect()
            }
        };
        for e in &events {
            e.wait_done();
        }
        Ok(())
    }

    /// Block until every command enqueued so far whose [`CommandUse`]
    /// satisfies `pred` finished (for `clMemBlockingFreeINTEL`:
    /// `|u| u.touches(base, size)`).
    ///
    /// ```
    /// use dmabridge::runtime::{event::command_type, queue::CommandUse};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let buf = vec![0u8; 64];
    /// let addr = buf.as_ptr() as usize;
    /// let usage = CommandUse::range(dmabridge::sys::addr::HostAddr(addr), 64);
    /// queue.enqueue_with_use(command_type::NATIVE_KERNEL, &[], false, usage, Box::new(|| Ok(())))?;
    /// queue.wait_for_commands_using(|u| u.touches(dmabridge::sys::addr::HostAddr(addr), 64));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn wait_for_commands_using(&self, pred: impl Fn(&CommandUse) -> bool) {
        let events: Vec<Event> = {
            let st = self.shared.lock();
            st.live.iter().filter(|l| pred(&l.usage)).map(|l| l.event.clone()).collect()
        };
        for e in &events {
            e.wait_done();
        }
    }

    /// The number of commands enqueued and not yet finished.
    ///
    /// No OpenCL function of its own: the commands whose events are not yet `CL_COMPLETE` or an error.
    ///
    /// ```
    /// use dmabridge::runtime::event::{command_type, Event};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let gate = Event::user(&ctx);
    /// queue.enqueue(command_type::NATIVE_KERNEL, &[gate.clone()], false, Box::new(|| Ok(())))?;
    /// assert_eq!(queue.pending_commands(), 1);
    /// gate.set_user_status(0)?;
    /// queue.finish()?;
    /// assert_eq!(queue.pending_commands(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn pending_commands(&self) -> usize {
        self.shared.lock().live.iter().filter(|l| l.event.finished().is_none()).count()
    }
}

impl Drop for Queue {
    /// `clReleaseCommandQueue` of the last reference: the commands that are
    /// runnable now run to completion before this returns; commands still
    /// waiting on events run when those finish, on a worker started then.
    fn drop(&mut self) {
        self.context.forget_dropped_queues();
        let handles = {
            let mut st = self.shared.lock();
            st.shutdown = true;
            std::mem::take(&mut st.handles)
        };
        self.shared.work.notify_all();
        let me = thread::current().id();
        for h in handles {
            // A worker dropping the last reference (in a callback) cannot
            // join itself; it exits once it finds nothing runnable.
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }
}
