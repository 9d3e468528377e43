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

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::{self, JoinHandle};

use crate::cl_err;
use crate::error::{code, ClResult};

use super::context::Context;
use super::device::Device;
use super::event::{command_type, exec_status, status_error, Event};

/// `cl_command_queue_properties` bits (`CL_QUEUE_PROPERTIES`).
pub mod properties {
    /// `CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE`.
    pub const OUT_OF_ORDER_EXEC_MODE_ENABLE: u64 = 1 << 0;
    /// `CL_QUEUE_PROFILING_ENABLE`.
    pub const PROFILING_ENABLE: u64 = 1 << 1;
    /// `CL_QUEUE_ON_DEVICE` (device-side enqueue: not supported).
    pub const ON_DEVICE: u64 = 1 << 2;
    /// `CL_QUEUE_ON_DEVICE_DEFAULT` (not supported).
    pub const ON_DEVICE_DEFAULT: u64 = 1 << 3;
}

/// The properties of a queue (`CL_QUEUE_PROPERTIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueProps {
    /// `CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE`.
    pub out_of_order: bool,
    /// `CL_QUEUE_PROFILING_ENABLE`.
    pub profiling: bool,
}

impl QueueProps {
    /// The properties of a `CL_QUEUE_PROPERTIES` bit field
    /// (`clCreateCommandQueueWithProperties`): `CL_INVALID_QUEUE_PROPERTIES`
    /// for on-device queues, `CL_INVALID_VALUE` for unknown bits.
    ///
    /// ```
    /// use dmabridge::runtime::queue::{properties, QueueProps};
    /// let props = QueueProps::from_bits(properties::OUT_OF_ORDER_EXEC_MODE_ENABLE)?;
    /// assert!(props.out_of_order && !props.profiling);
    /// assert!(QueueProps::from_bits(properties::ON_DEVICE).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn from_bits(bits: u64) -> ClResult<QueueProps> {
        use properties::*;
        let known = OUT_OF_ORDER_EXEC_MODE_ENABLE | PROFILING_ENABLE | ON_DEVICE | ON_DEVICE_DEFAULT;
        if bits & !known != 0 {
            return cl_err!(InvalidValue, "CL_QUEUE_PROPERTIES {bits:#x} has unknown bits {:#x}", bits & !known);
        }
        if bits & (ON_DEVICE | ON_DEVICE_DEFAULT) != 0 {
            return cl_err!(
                InvalidQueueProperties,
                "CL_QUEUE_PROPERTIES {bits:#x}: on-device queues are not supported"
            );
        }
        Ok(QueueProps {
            out_of_order: bits & OUT_OF_ORDER_EXEC_MODE_ENABLE != 0,
            profiling: bits & PROFILING_ENABLE != 0,
        })
    }

    /// The `CL_QUEUE_PROPERTIES` bit field (`clGetCommandQueueInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::queue::{properties, QueueProps};
    /// let props = QueueProps { out_of_order: false, profiling: true };
    /// assert_eq!(props.bits(), properties::PROFILING_ENABLE);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn bits(self) -> u64 {
        (if self.out_of_order { properties::OUT_OF_ORDER_EXEC_MODE_ENABLE } else { 0 })
            | (if self.profiling { properties::PROFILING_ENABLE } else { 0 })
    }
}

/// The memory a command may access, so that freeing an allocation can wait
/// for the commands that use it (`clMemBlockingFreeINTEL`). Ranges are
/// `(start address, length in bytes)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandUse {
    /// No memory (markers, barriers).
    Nothing,
    /// One range (a fill, a map, an advice).
    Range(usize, usize),
    /// Two ranges (a copy's destination and source).
    Pair([(usize, usize); 2]),
    /// Any number of ranges (a migration, a kernel's pointer arguments).
    Ranges(Vec<(usize, usize)>),
    /// Every USM allocation of the flagged types, plus explicit ranges (a
    /// kernel with indirect access: its pointer arguments and `USM_PTRS`).
    /// SVM allocations count as shared ones (`clGetMemAllocInfoINTEL`
    /// reports them as `CL_MEM_TYPE_SHARED_INTEL`).
    Kinds {
        /// `CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL`.
        host: bool,
        /// `CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL`.
        device: bool,
        /// `CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL` (and SVM).
        shared: bool,
        /// Ranges used besides.
        ranges: Vec<(usize, usize)>,
    },
    /// Any memory (work that did not say).
    All,
}

impl CommandUse {
    /// True if the command may access a byte of `[start, start + len)`
    /// (an empty range counts as its first byte).
    ///
    /// The test behind `clMemBlockingFreeINTEL` (seed 000).
    ///
    /// ```
    /// use dmabridge::runtime::queue::CommandUse;
    /// let copy = CommandUse::Pair([(0x1000, 16), (0x2000, 16)]);
    /// assert!(copy.touches(0x100f, 1));
    /// assert!(!copy.touches(0x1010, 0x100));
    /// assert!(!CommandUse::Nothing.touches(0x1000, 16));
    /// assert!(CommandUse::All.touches(0, 1));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn touches(&self, start: usize, len: usize) -> bool {
        let end = start.saturating_add(len.max(1));
        let hit = |&(s, l): &(usize, usize)| s < end && start < s.saturating_add(l.max(1));
        match self {
            CommandUse::Nothing => false,
            CommandUse::Range(s, l) => hit(&(*s, *l)),
            CommandUse::Pair(r) => r.iter().any(hit),
            CommandUse::Ranges(r) => r.iter().any(hit),
            // The type of the memory is unknown here: any flag may cover it.
            CommandUse::Kinds { host, device, shared, ranges } => *host || *device || *shared || ranges.iter().any(hit),
            CommandUse::All => true,
        }
    }

    /// True if the command may access a byte of the allocation
    /// `[start, start + len)` of type `kind`: as [`CommandUse::touches`],
    /// except that [`CommandUse::Kinds`] covers only allocations of its types.
    ///
    /// The test behind `clMemBlockingFreeINTEL` (seed 000): a kernel with
    /// indirect access counts as using all allocations of its types.
    ///
    /// ```
    /// use dmabridge::memory::heap::AllocKind;
    /// use dmabridge::runtime::queue::CommandUse;
    /// let k = CommandUse::Kinds { host: true, device: false, shared: false, ranges: vec![(0x9000, 8)] };
    /// assert!(k.touches_alloc(0x1000, 64, AllocKind::Host));
    /// assert!(!k.touches_alloc(0x1000, 64, AllocKind::Device));
    /// assert!(k.touches_alloc(0x9000, 64, AllocKind::Device), "an explicit range");
    /// assert!(CommandUse::Range(0x1000, 1).touches_alloc(0x1000, 64, AllocKind::Svm));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn touches_alloc(&self, start: usize, len: usize, kind: crate::memory::heap::AllocKind) -> bool {
        use crate::memory::heap::AllocKind;
        match self {
            CommandUse::Kinds { host, device, shared, ranges } => {
                let by_kind = match kind {
                    AllocKind::Host => *host,
                    AllocKind::Device => *device,
                    AllocKind::Shared | AllocKind::Svm => *shared,
                };
                by_kind || ranges.iter().any(|&(s, l)| CommandUse::Range(s, l).touches(start, len))
            }
            other => other.touches(start, len),
        }
    }
}

/// The work of a command: runs once, on a worker or the enqueuing thread.
/// `Err` carries the negative CL code the command's event ends with; a panic
/// ends it with `CL_OUT_OF_RESOURCES` (it does not unwind into the queue).
pub type Work = Box<dyn FnOnce() -> Result<(), i32> + Send>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Command,
    Marker,
    Barrier,
}

/// The wait-list state of a queued command, shared with the hooks on the
/// events it waits for.
struct Deps {
    seq: u64,
    event: Event,
    /// Unresolved events, plus one while the enqueue registers hooks.
    pending: AtomicUsize,
    /// An event whose errors propagate ended with a negative status.
    failed: AtomicBool,
}

impl Deps {
    /// Wait for `e`; with `propagate`, an error status of `e` fails the command.
    fn add(self: &Arc<Self>, e: &Event, propagate: bool, shared: &Arc<Shared>) {
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
    fn resolve(&self, status: i32, propagate: bool, shared: &Arc<Shared>) {
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

    fn resolved(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }
}

/// A command enqueued and not yet finished.
struct Live {
    seq: u64,
    event: Event,
    usage: CommandUse,
    work: Option<Work>,
    /// `None` for a command running inline on the enqueuing thread.
    deps: Option<Arc<Deps>>,
    started: bool,
}

/// A command a worker took.
struct Job {
    seq: u64,
    event: Event,
    work: Option<Work>,
    failed: bool,
}

#[derive(Default)]
struct State {
    next_seq: u64,
    /// Live commands in enqueue (`seq`) order.
    live: VecDeque<Live>,
    /// Out-of-order: runnable commands not yet taken.
    ready: VecDeque<u64>,
    /// Commands executing (on workers or inline).
    running: usize,
    /// Out-of-order: the last barrier, which later commands wait for.
    barrier: Option<Event>,
    workers: usize,
    idle: usize,
    /// The queue was dropped: workers exit once nothing is runnable.
    shutdown: bool,
    handles: Vec<JoinHandle<()>>,
}

impl State {
    fn index(&self, seq: u64) -> Option<usize> {
        self.live.binary_search_by_key(&seq, |l| l.seq).ok()
    }

    fn head_runnable(&self) -> bool {
        self.running == 0
            && self.live.front().is_some_and(|l| !l.started && l.deps.as_ref().is_some_and(|d| d.resolved()))
    }

    fn pending_barrier(&self) -> bool {
        self.barrier.as_ref().is_some_and(|b| b.finished().is_none())
    }
}

/// The scheduler, shared by a queue, its workers and the hooks of its commands.
struct Shared {
    id: u64,
    out_of_order: bool,
    max_workers: usize,
    state: Mutex<State>,
    work: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // No user code runs under these locks (work and callbacks run outside
    // them): a poisoned lock's state is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn run_work(work: Option<Work>) -> Result<(), i32> {
    match work {
        None => Ok(()),
        Some(w) => catch_unwind(AssertUnwindSafe(w)).unwrap_or(Err(code::OUT_OF_RESOURCES)),
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Wake or count in a worker if something is runnable; true if the
    /// caller must start one (after unlocking).
    fn kick(&self, st: &mut State) -> bool {
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
    fn make_ready(self: &Arc<Self>, seq: u64) {
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
    fn spawn_worker(self: &Arc<Self>) {
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
    fn retire(&self, st: &mut State, seq: u64) {
        st.running -= 1;
        if let Some(i) = st.index(seq) {
            st.live.remove(i);
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
                let seq = job.seq;
                execute(job);
                st = self.lock();
                self.retire(&mut st, seq);
                continue;
            }
            if st.shutdown || exit_when_idle {
                st.workers -= 1;
                return;
            }
            st.idle += 1;
            st = self.work.wait(st).unwrap_or_else(PoisonError::into_inner);
            st.idle -= 1;
        }
    }
}

/// Run a taken command and finish its event.
fn execute(job: Job) {
    let Job { event, work, failed, .. } = job;
    run_and_complete(&event, work, failed);
}

/// Run `work` (or skip it when the wait list failed) and finish `event`:
/// what a worker and the inline path both do with a command.
fn run_and_complete(event: &Event, work: Option<Work>, wait_list_failed: bool) {
    let result = if wait_list_failed {
        Err(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    } else {
        event.mark_submitted();
        event.mark_running();
        run_work(work)
    };
    event.complete(result);
}

/// The live queues, with the address of their context.
static REGISTRY: Mutex<Vec<(usize, Weak<Queue>)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The live queues of `context` — a context does not hold its queues, and
/// `clMemBlockingFreeINTEL` must wait for commands on any of them.
///
/// ```
/// use dmabridge::runtime::queue;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let found = queue::queues_of(&ctx);
/// assert!(found.len() == 1 && std::sync::Arc::ptr_eq(&found[0], &queue));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn queues_of(context: &Arc<Context>) -> Vec<Arc<Queue>> {
    let key = Arc::as_ptr(context) as usize;
    // Upgrade under the lock, but let go of nothing under it: dropping the
    // last reference to a queue takes this lock again.
    let found: Vec<Arc<Queue>> =
        lock(&REGISTRY).iter().filter(|(k, _)| *k == key).filter_map(|(_, w)| w.upgrade()).collect();
    found.into_iter().filter(|q| Arc::ptr_eq(&q.context, context)).collect()
}

/// Wait, on every live queue of `context`, for the commands whose
/// [`CommandUse`] satisfies `pred` (`clMemBlockingFreeINTEL`); see
/// [`Queue::wait_for_commands_using`].
///
/// ```
/// use dmabridge::runtime::{event::command_type, queue::{self, CommandUse}};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let buf = vec![0u8; 64];
/// let addr = buf.as_ptr() as usize;
/// queue.enqueue_with_use(command_type::NATIVE_KERNEL, &[], false, CommandUse::Range(addr, 64), Box::new(|| Ok(())))?;
/// // Returns once no command of any queue of `ctx` may still use `buf`.
/// queue::wait_for_context_commands_using(&ctx, |u| u.touches(addr, buf.len()));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn wait_for_context_commands_using(context: &Arc<Context>, pred: impl Fn(&CommandUse) -> bool) {
    for q in queues_of(context) {
        q.wait_for_commands_using(&pred);
    }
}

/// Check a wait list against the context of the command
/// (`CL_INVALID_CONTEXT` for an event of another context). The C face checks
/// the list itself (NULL with a count, count without a list:
/// `CL_INVALID_EVENT_WAIT_LIST`).
///
/// ```
/// use dmabridge::runtime::{context::Context, event::Event, platform::Platform, queue};
/// let ctx = Context::new(Platform::get().devices())?;
/// let other = Context::new(Platform::get().devices())?;
/// queue::check_wait_list(&ctx, &[Event::user(&ctx)])?;
/// assert!(queue::check_wait_list(&ctx, &[Event::user(&other)]).is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn check_wait_list(context: &Arc<Context>, wait_list: &[Event]) -> ClResult<()> {
    match wait_list.iter().position(|e| !Arc::ptr_eq(e.context(), context)) {
        None => Ok(()),
        Some(i) => {
            cl_err!(InvalidContext, "event_wait_list[{i}] belongs to a different context than the command queue")
        }
    }
}

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
        let mut reg = lock(&REGISTRY);
        reg.retain(|(_, w)| w.strong_count() > 0);
        reg.push((Arc::as_ptr(context) as usize, Arc::downgrade(&q)));
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
        self.submit(command_type, wait_list, blocking, Some(work), CommandUse::All, Kind::Command)
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
    /// let usage = CommandUse::Range(buf.as_ptr() as usize, buf.len());
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
        self.submit(command_type, wait_list, blocking, Some(work), usage, Kind::Command)
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
        self.submit(command_type::MARKER, wait_list, false, None, CommandUse::Nothing, Kind::Marker)
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
        self.submit(command_type::BARRIER, wait_list, false, None, CommandUse::Nothing, Kind::Barrier)
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
    /// let usage = CommandUse::Range(addr, 64);
    /// queue.enqueue_with_use(command_type::NATIVE_KERNEL, &[], false, usage, Box::new(|| Ok(())))?;
    /// queue.wait_for_commands_using(|u| u.touches(addr, 64));
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

    fn submit(
        self: &Arc<Self>,
        command_type: u32,
        wait_list: &[Event],
        blocking: bool,
        work: Option<Work>,
        usage: CommandUse,
        kind: Kind,
    ) -> ClResult<Event> {
        check_wait_list(&self.context, wait_list)?;
        let shared = &self.shared;
        let event = Event::for_command(&self.context, command_type, Arc::downgrade(self), self.props.profiling);

        // Has the wait list finished (and did any of it fail)?
        let mut deps_done = true;
        let mut deps_failed = false;
        for e in wait_list {
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
        let inline = blocking
            && deps_done
            && ((shared.out_of_order && kind == Kind::Command && !st.pending_barrier()) || idle());
        if inline {
            st.live.push_back(Live { seq, event: event.clone(), usage, work: None, deps: None, started: true });
            st.running += 1;
            drop(st);
            run_and_complete(&event, work, deps_failed);
            let mut st = shared.lock();
            shared.retire(&mut st, seq);
            // Commands enqueued meanwhile by other threads queued up behind this one.
            let spawn = shared.kick(&mut st);
            drop(st);
            if spawn {
                shared.spawn_worker();
            }
            return match event.finished() {
                Some(s) if s < 0 => Err(status_error(command_type, s)),
                _ => Ok(event),
            };
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
        for e in wait_list {
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

impl Drop for Queue {
    /// `clReleaseCommandQueue` of the last reference: the commands that are
    /// runnable now run to completion before this returns; commands still
    /// waiting on events run when those finish, on a worker started then.
    fn drop(&mut self) {
        lock(&REGISTRY).retain(|(_, w)| w.strong_count() > 0);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ClErrorKind;
    use crate::runtime::device::{DeviceType, UsmCaps};
    use crate::runtime::event::tests::{context, exclusive_lock, shared_lock};
    use crate::runtime::event::{now_ns, profiling_info, EventStatus};
    use crate::runtime::platform::Platform;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    const IN_ORDER: QueueProps = QueueProps { out_of_order: false, profiling: false };
    const OUT_OF_ORDER: QueueProps = QueueProps { out_of_order: true, profiling: false };
    /// A deadline that turns a hang into a failure; never a performance bound.
    const DEADLINE: Duration = Duration::from_secs(20);
    /// How long a test lets a command that must not run have the chance to.
    const SETTLE: Duration = Duration::from_millis(30);

    type Log = Arc<Mutex<Vec<u32>>>;

    fn queue(ctx: &Arc<Context>, props: QueueProps) -> Arc<Queue> {
        Queue::new(ctx, Platform::get().cpu(), props).unwrap()
    }

    fn ok() -> Work {
        Box::new(|| Ok(()))
    }

    fn push(log: &Log, v: u32) -> Work {
        let log = log.clone();
        Box::new(move || {
            log.lock().unwrap().push(v);
            Ok(())
        })
    }

    fn logged(log: &Log) -> Vec<u32> {
        log.lock().unwrap().clone()
    }

    fn wait(e: &Event) {
        Event::wait(std::slice::from_ref(e)).unwrap();
    }

    /// Run `f` on a thread and fail (rather than hang) if it does not return.
    fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        thread::Builder::new().name("dmabq-test".into()).spawn(move || tx.send(f()).unwrap()).unwrap();
        rx.recv_timeout(DEADLINE).unwrap_or_else(|_| panic!("{what} did not return"))
    }

    /// The threads of this process: (tid, name).
    fn threads() -> Vec<(String, String)> {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap().flatten();
        tasks
            .filter_map(|t| {
                let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
                Some((t.file_name().to_string_lossy().into_owned(), comm.trim_end().to_owned()))
            })
            .collect()
    }

    fn threads_named(name: &str) -> usize {
        threads().iter().filter(|(_, n)| n == name).count()
    }

    /// Threads started since `before` that this module's tests own: queue
    /// workers (`dmabq-<queue id>`) and [`within`]'s helpers (`dmabq-test`).
    /// Threads of other tests (libtest's, waiting for the test lock or in
    /// other modules) are not counted.
    fn new_threads_of_ours(before: &[(String, String)]) -> Vec<(String, String)> {
        threads().into_iter().filter(|t| t.1.starts_with("dmabq-") && !before.contains(t)).collect()
    }

    fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !cond() {
            assert!(t0.elapsed() < DEADLINE, "{what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn new_checks_the_device_and_reports_its_info() {
        let _g = shared_lock();
        let ctx = context();
        let cpu = Platform::get().cpu();
        let other = Arc::new(Device {
            index: 9,
            name: "not in the context".into(),
            device_type: DeviceType::Accelerator,
            max_mem_alloc_size: 1 << 20,
            max_alignment: 128,
            host_unified_memory: false,
            usm: UsmCaps { host: 0, device: 0, single_device_shared: 0, cross_device_shared: 0, shared_system: 0 },
            svm: 0,
            compute_units: 1,
        });
        let err = Queue::new(&ctx, &other, IN_ORDER).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::InvalidDevice);
        assert!(err.message.contains("not in the context"), "{err}");
        let props = QueueProps { out_of_order: true, profiling: true };
        let q = Queue::new(&ctx, cpu, props).unwrap();
        assert!(Arc::ptr_eq(q.context(), &ctx) && Arc::ptr_eq(q.device(), cpu));
        assert_eq!(q.props(), props);
        assert_eq!(q.reference_count(), 1);
        let q2 = q.clone();
        assert_eq!(q.reference_count(), 2);
        drop(q2);
        // Events point back at their queue without holding it.
        let events: Vec<Event> = (0..8).map(|_| q.enqueue(command_type::MARKER, &[], false, ok()).unwrap()).collect();
        q.finish().unwrap();
        assert_eq!(q.reference_count(), 1);
        assert!(Arc::ptr_eq(&events[0].queue().unwrap(), &q));
        drop(q);
        assert!(events[0].queue().is_none());
        assert!(!events[0].is_user());
    }

    #[test]
    fn queue_properties_from_and_to_bits() {
        assert_eq!(QueueProps::from_bits(0).unwrap(), IN_ORDER);
        let both = QueueProps::from_bits(3).unwrap();
        assert!(both.out_of_order && both.profiling);
        assert_eq!(both.bits(), 3);
        assert_eq!(QueueProps::from_bits(properties::ON_DEVICE).unwrap_err().kind, ClErrorKind::InvalidQueueProperties);
        assert_eq!(QueueProps::from_bits(1 << 7).unwrap_err().kind, ClErrorKind::InvalidValue);
    }

    #[test]
    fn command_use_ranges_overlap() {
        let u = CommandUse::Pair([(0x1000, 0x100), (0x3000, 0x10)]);
        assert!(u.touches(0x10ff, 1) && u.touches(0xf00, 0x101) && u.touches(0x3008, 0));
        assert!(!u.touches(0x1100, 0x100) && !u.touches(0xf00, 0x100) && !u.touches(0x3010, 4));
        assert!(CommandUse::Range(0x10, 0).touches(0x10, 1));
        assert!(CommandUse::Ranges(vec![(1, 1), (50, 10)]).touches(59, 100));
        assert!(!CommandUse::Ranges(vec![]).touches(0, usize::MAX));
        assert!(CommandUse::All.touches(12345, 1) && !CommandUse::Nothing.touches(0, usize::MAX));
        assert!(CommandUse::Range(usize::MAX - 1, 100).touches(usize::MAX - 1, 1));
    }

    #[test]
    fn in_order_commands_run_one_at_a_time_in_enqueue_order() {
        let _g = shared_lock();
        let ctx = context();
        let q = queue(&ctx, IN_ORDER);
        let gate = Event::user(&ctx);
        let log: Log = Arc::default();
        let busy = Arc::new(AtomicBool::new(false));
        let step = |v: u32| -> Work {
            let (log, busy) = (log.clone(), busy.clone());
            Box::new(move || {
                assert!(!busy.swap(true, Ordering::SeqCst), "two commands of an in-order queue overlap");
                thread::sleep(Duration::from_micros(100));
                log.lock().unwrap().push(v);
                busy.store(false, Ordering::SeqCst);
                Ok(())
            })
        };
        let first = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, step(0)).unwrap();
        let rest: Vec<Event> = (1..40).map(|v| q.enqueue(command_type::MARKER, &[], false, step(v)).unwrap()).collect();
        thread::sleep(SETTLE);
        assert!(logged(&log).is_empty(), "commands ran ahead of one still waiting for its wait list");
        assert_eq!(first.status(), EventStatus::Queued);
        assert_eq!(rest[0].status(), EventStatus::Submitted);
        assert_eq!(q.pending_commands(), 40);
        gate.set_user_status(0).unwrap();
        q.finish().unwrap();
        assert_eq!(logged(&log), (0..40).collect::<Vec<_>>());
        assert!(rest.iter().all(|e| e.status() == EventStatus::Complete));
        assert_eq!(q.pending_commands(), 0);
    }

    #[test]
    fn out_of_order_commands_run_together_once_their_wait_list_resolves() {
        let _g = shared_lock();
        let ctx = context();
        let q = queue(&ctx, OUT_OF_ORDER);
        let gate = Event::user(&ctx);
        let started = Arc::new(AtomicUsize::new(0));
        // Each of the two only completes if the other runs at the same time.
        let (a_tx, a_rx) = mpsc::channel::<()>();
        let (b_tx, b_rx) = mpsc::channel::<()>();
        let meet = |tx: mpsc::Sender<()>, rx: mpsc::Receiver<()>| -> Work {
            let started = started.clone();
            Box::new(move || {
                started.fetch_add(1, Ordering::SeqCst);
                tx.send(()).unwrap();
                rx.recv_timeout(DEADLINE).map_err(|_| code::OUT_OF_RESOURCES)
            })
        };
        let w = std::slice::from_ref(&gate);
        let a = q.enqueue(command_type::USER, w, false, meet(a_tx, b_rx)).unwrap();
        let b = q.enqueue(command_type::USER, w, false, meet(b_tx, a_rx)).unwrap();
        // Not ordered behind them.
        let c = q.enqueue(command_type::MARKER, &[], false, ok()).unwrap();
        within("a command without a wait list", move || wait(&c));
        thread::sleep(SETTLE);
        assert_eq!(started.load(Ordering::SeqCst), 0, "ran before its wait list completed");
        assert_eq!((a.status(), b.status()), (EventStatus::Queued, EventStatus::Queued));
        gate.set_user_status(0).unwrap();
        let q2 = q.clone();
        within("finish", move || q2.finish().unwrap());
        assert_eq!((a.status(), b.status()), (EventStatus::Complete, EventStatus::Complete));
    }

    #[test]
    fn wait_lists_cross_queues() {
        let _g = shared_lock();
        let ctx = context();
        let q1 = queue(&ctx, IN_ORDER);
        let q2 = queue(&ctx, OUT_OF_ORDER);
        let q3 = queue(&ctx, IN_ORDER);
        let gate = Event::user(&ctx);
        let log: Log = Arc::default();
        let e1 = q1.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
        let e2 = q2.enqueue(command_type::USER, std::slice::from_ref(&e1), false, push(&log, 2)).unwrap();
        let e3 = q3.enqueue(command_type::USER, &[e2.clone(), gate.clone()], false, push(&log, 3)).unwrap();
        let e4 = q1.enqueue(command_type::USER, std::slice::from_ref(&e3), false, push(&log, 4)).unwrap();
        thread::sleep(SETTLE);
        assert!(logged(&log).is_empty());
        gate.set_user_status(0).unwrap();
        within("the last command of the chain", move || wait(&e4));
        assert_eq!(logged(&log), [1, 2, 3, 4]);
        // Events of another context are refused.
        let other = Event::user(&context());
        let err = q1.enqueue(command_type::USER, &[e1.clone(), other.clone()], false, ok()).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::InvalidContext);
        assert!(err.message.contains("event_wait_list[1]"), "{err}");
        assert_eq!(check_wait_list(&ctx, &[e1, other]).unwrap_err().kind, ClErrorKind::InvalidContext);
        assert!(check_wait_list(&ctx, &[]).is_ok());
    }

    #[test]
    fn wait_list_errors_fail_dependants_without_running_them() {
        let _g = shared_lock();
        let ctx = context();
        for props in [IN_ORDER, OUT_OF_ORDER] {
            let q = queue(&ctx, props);
            let other = queue(&ctx, props);
            let gate = Event::user(&ctx);
            let log: Log = Arc::default();
            let e1 = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
            let e2 = other.enqueue(command_type::USER, std::slice::from_ref(&e1), false, push(&log, 2)).unwrap();
            let e3 = q.enqueue(command_type::USER, std::slice::from_ref(&e2), false, push(&log, 3)).unwrap();
            gate.set_user_status(code::OUT_OF_RESOURCES).unwrap();
            within("a failed chain", {
                let e3 = e3.clone();
                move || e3.wait_done()
            });
            for e in [&e1, &e2, &e3] {
                assert_eq!(e.status(), EventStatus::Error(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
            }
            assert!(logged(&log).is_empty(), "a command ran although its wait list failed");
            // Blocking, on the inline path (everything finished).
            let err =
                q.enqueue(command_type::MEMCPY_INTEL, std::slice::from_ref(&e3), true, push(&log, 4)).unwrap_err();
            assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
            // Blocking, through a worker: the event fails while the enqueue waits.
            let late = Event::user(&ctx);
            let pending = q.enqueue(command_type::USER, std::slice::from_ref(&late), false, push(&log, 5)).unwrap();
            let setter = {
                let late = late.clone();
                thread::spawn(move || {
                    thread::sleep(SETTLE);
                    late.set_user_status(-9999).unwrap();
                })
            };
            let q2 = q.clone();
            let err = within("a blocking enqueue after a failing event", move || {
                q2.enqueue(command_type::MEMCPY_INTEL, &[pending], true, Box::new(|| Ok(())))
            })
            .unwrap_err();
            setter.join().unwrap();
            assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
            assert!(logged(&log).is_empty());
            // Events of the wait list whose errors do not concern a command: none
            // (order alone does not propagate errors on an in-order queue).
            let failing = q.enqueue(command_type::USER, &[], false, Box::new(|| Err(code::MAP_FAILURE))).unwrap();
            let after = q.enqueue(command_type::USER, &[], false, push(&log, 6)).unwrap();
            q.finish().unwrap();
            assert_eq!(failing.status(), EventStatus::Error(code::MAP_FAILURE));
            assert_eq!(after.status(), EventStatus::Complete);
            assert_eq!(logged(&log), [6]);
        }
    }

    #[test]
    fn releasing_an_unset_user_event_fails_its_dependants() {
        let _g = shared_lock();
        let ctx = context();
        let q = queue(&ctx, IN_ORDER);
        let shared = Arc::downgrade(&q.shared);
        let log: Log = Arc::default();
        let gate = Event::user(&ctx);
        let e = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
        let after = q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap();
        drop(gate);
        within("the dependant of a released user event", move || wait(&after));
        assert_eq!(e.status(), EventStatus::Error(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
        assert_eq!(logged(&log), [2]);
        drop(q);
        assert_eq!(shared.strong_count(), 0, "the queue's scheduler leaked");
    }

    #[test]
    fn failing_work_sets_its_code_and_fails_a_blocking_enqueue() {
        let _g = shared_lock();
        let ctx = context();
        let q = queue(&ctx, IN_ORDER);
        let err =
            q.enqueue(command_type::MEMCPY_INTEL, &[], true, Box::new(|| Err(code::MEM_COPY_OVERLAP))).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::MemCopyOverlap);
        assert!(err.message.contains("COMMAND_MEMCPY_INTEL"), "{err}");
        let e = q.enqueue(command_type::MEMCPY_INTEL, &[], false, Box::new(|| Err(code::MEM_COPY_OVERLAP))).unwrap();
        let err = Event::wait(std::slice::from_ref(&e)).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
        assert_eq!(e.status(), EventStatus::Error(code::MEM_COPY_OVERLAP));
        // A code without a kind, and a panic, both fail the command alone.
        let err = q.enqueue(command_type::USER, &[], true, Box::new(|| Err(-1234))).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::OutOfResources);
        let e = q
            .enqueue(command_type::USER, &[], false, Box::new(|| panic!("work panics (expected by the test)")))
            .unwrap();
        assert_eq!(e.wait_done(), code::OUT_OF_RESOURCES);
        q.enqueue(command_type::USER, &[], true, ok()).unwrap();
    }

    #[test]
    fn callbacks_of_queue_events() {
        let _g = shared_lock();
        let ctx = context();
        let q = queue(&ctx, OUT_OF_ORDER);
        let (tx, rx) = mpsc::channel();
        let cb = |tag: i32| -> crate::runtime::event::EventCallback {
            let tx = tx.clone();
            Box::new(move |_, s| tx.send((tag, s)).unwrap())
        };
        let gate = Event::user(&ctx);
        let e = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
        e.set_callback(exec_status::COMPLETE, cb(0)).unwrap();
        e.set_callback(exec_status::RUNNING, cb(1)).unwrap();
        e.set_callback(exec_status::SUBMITTED, cb(2)).unwrap();
        thread::sleep(SETTLE);
        assert!(rx.try_recv().is_err());
        gate.set_user_status(0).unwrap();
        let got: Vec<_> = (0..3).map(|_| rx.recv_timeout(DEADLINE).unwrap()).collect();
        assert_eq!(got, [(2, 2), (1, 1), (0, 0)]);
        e.set_callback(exec_status::RUNNING, cb(3)).unwrap();
        assert_eq!(rx.try_recv().unwrap(), (3, 1), "not called at once for a status already passed");
        // On error every callback gets the error code.
        let bad = Event::user(&ctx);
        let e = q.enqueue(command_type::USER, std::slice::from_ref(&bad), false, ok()).unwrap();
        e.set_callback(exec_status::SUBMITTED, cb(4)).unwrap();
        e.set_callback(exec_status::COMPLETE, cb(5)).unwrap();
        bad.set_user_status(-5).unwrap();
        let got: Vec<_> = (0..2).map(|_| rx.recv_timeout(DEADLINE).unwrap()).collect();
        assert_eq!(got, [(4, -14), (5, -14)]);
        // Inline: run on the enqueuing thread before the enqueue returns.
        let e = Event::user(&ctx);
        e.set_callback(exec_status::COMPLETE, cb(6)).unwrap();
        e.set_user_status(0).unwrap();
        assert_eq!(rx.try_recv().unwrap(), (6, 0));
    }

    #[test]
    fn profiling_times_are_monotonic_and_only_with_profiling() {
        let _g = shared_lock();
        let ctx = context();
        for out_of_order in [false, true] {
            let q = queue(&ctx, QueueProps { out_of_order, profiling: true });
            // Inline.
            let e = q.enqueue(command_type::USER, &[], true, ok()).unwrap();
            let t = e.profiling_times().unwrap();
            assert!(t.queued > 0 && t.queued <= t.submit && t.submit <= t.start && t.start <= t.end, "{t:?}");
            assert!(t.end <= t.complete);
            // Through a worker, after a wait list.
            let gate = Event::user(&ctx);
            let e = q
                .enqueue(
                    command_type::USER,
                    std::slice::from_ref(&gate),
                    false,
                    Box::new(|| {
                        thread::sleep(Duration::from_millis(2));
                        Ok(())
                    }),
                )
                .unwrap();
            assert_eq!(
                e.profiling_info(profiling_info::QUEUED).unwrap_err().kind,
                ClErrorKind::ProfilingInfoNotAvailable
            );
            thread::sleep(Duration::from_millis(2));
            let released = now_ns();
            gate.set_user_status(0).unwrap();
            wait(&e);
            let t = e.profiling_times().unwrap();
            assert!(t.queued <= t.submit && t.submit <= t.start && t.start <= t.end && t.end <= t.complete, "{t:?}");
            assert!(t.queued < released && t.submit >= released, "submit is when the wait list resolved: {t:?}");
            assert!(t.end - t.start >= 2_000_000, "end - start covers the work: {t:?}");
            assert_eq!(e.profiling_info(profiling_info::END).unwrap(), t.end);
        }
        let q = queue(&ctx, IN_ORDER);
        let e = q.enqueue(command_type::USER, &[], true, ok()).unwrap();
        assert_eq!(e.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
    }

    #[test]
    fn finish_waits_for_every_command() {
        let _g = shared_lock();
        let ctx = context();
        for props in [IN_ORDER, OUT_OF_ORDER] {
            let q = queue(&ctx, props);
            q.finish().unwrap();
            let done = Arc::new(AtomicUsize::new(0));
            for _ in 0..20 {
                let done = done.clone();
                q.enqueue(
                    command_type::USER,
                    &[],
                    false,
                    Box::new(move || {
                        thread::sleep(Duration::from_millis(1));
                        done.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    }),
                )
                .unwrap();
            }
            q.flush().unwrap();
            q.finish().unwrap();
            assert_eq!(done.load(Ordering::SeqCst), 20, "{props:?}");
        }
    }

    #[test]
    fn markers_and_barriers() {
        let _g = shared_lock();
        let ctx = context();
        // Out of order: a marker without a wait list waits for everything
        // before it, without holding back what comes after.
        let q = queue(&ctx, OUT_OF_ORDER);
        let log: Log = Arc::default();
        let gate = Event::user(&ctx);
        let a = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
        let m = q.enqueue_marker(&[]).unwrap();
        assert_eq!(m.command_type(), command_type::MARKER);
        let c = q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap();
        within("a command after a marker", move || wait(&c));
        thread::sleep(SETTLE);
        assert_ne!(m.status(), EventStatus::Complete);
        gate.set_user_status(0).unwrap();
        within("the marker", move || wait(&m));
        assert_eq!(a.status(), EventStatus::Complete);
        assert_eq!(logged(&log), [2, 1]);

        // A barrier holds back everything after it.
        let log: Log = Arc::default();
        let gate = Event::user(&ctx);
        q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
        let b = q.enqueue_barrier(&[]).unwrap();
        assert_eq!(b.command_type(), command_type::BARRIER);
        let c = q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap();
        // Not inline: a barrier is pending.
        let q2 = q.clone();
        let log2 = log.clone();
        let blocking = thread::spawn(move || q2.enqueue(command_type::USER, &[], true, push(&log2, 3)));
        thread::sleep(SETTLE);
        assert!(logged(&log).is_empty(), "ran ahead of a barrier");
        gate.set_user_status(0).unwrap();
        within("a command after a barrier", move || wait(&c));
        blocking.join().unwrap().unwrap();
        let got = logged(&log);
        assert_eq!(got[0], 1);
        assert_eq!(got.len(), 3);

        // A barrier with a wait list waits for that list only.
        let (g1, g2) = (Event::user(&ctx), Event::user(&ctx));
        let a = q.enqueue(command_type::USER, std::slice::from_ref(&g1), false, ok()).unwrap();
        let _b = q.enqueue_barrier(std::slice::from_ref(&g2)).unwrap();
        let c = q.enqueue(command_type::USER, &[], false, ok()).unwrap();
        thread::sleep(SETTLE);
        assert_eq!(c.status(), EventStatus::Queued);
        g2.set_user_status(0).unwrap();
        within("a command after a barrier with a wait list", move || wait(&c));
        assert_eq!(a.status(), EventStatus::Queued);
        g1.set_user_status(0).unwrap();
        q.finish().unwrap();

        // Errors: a marker takes them from its wait list, not from order.
        let bad = Event::user(&ctx);
        let failed = q.enqueue(command_type::USER, std::slice::from_ref(&bad), false, ok()).unwrap();
        let m_list = q.enqueue_marker(std::slice::from_ref(&failed)).unwrap();
        let m_all = q.enqueue_marker(&[]).unwrap();
        bad.set_user_status(-5).unwrap();
        q.finish().unwrap();
        assert_eq!(m_list.status(), EventStatus::Error(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
        assert_eq!(m_all.status(), EventStatus::Complete);

        // In order.
        let q = queue(&ctx, IN_ORDER);
        let gate = Event::user(&ctx);
        q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
        let m = q.enqueue_marker(&[]).unwrap();
        let b = q.enqueue_barrier(&[]).unwrap();
        thread::sleep(SETTLE);
        assert_eq!((m.status(), b.status()), (EventStatus::Submitted, EventStatus::Submitted));
        gate.set_user_status(0).unwrap();
        within("an in-order barrier", move || wait(&b));
        assert_eq!(m.status(), EventStatus::Complete);
    }

    #[test]
    fn waiting_for_the_commands_that_use_memory() {
        let _g = shared_lock();
        let ctx = context();
        let q = queue(&ctx, OUT_OF_ORDER);
        let q_in = queue(&ctx, IN_ORDER);
        let gate = Event::user(&ctx);
        let w = std::slice::from_ref(&gate);
        let a =
            q.enqueue_with_use(command_type::MEMFILL_INTEL, w, false, CommandUse::Range(0x1000, 0x100), ok()).unwrap();
        let pair = CommandUse::Pair([(0x5000, 0x10), (0x6000, 0x10)]);
        let b = q_in.enqueue_with_use(command_type::MEMCPY_INTEL, w, false, pair, ok()).unwrap();
        let q2 = q.clone();
        within("waiting for commands that use nothing pending", move || {
            q2.wait_for_commands_using(|u| u.touches(0x9000, 16));
            q2.wait_for_commands_using(|u| u.touches(0x1100, 16));
        });
        assert_eq!(a.status(), EventStatus::Queued);
        let mut found = queues_of(&ctx);
        assert_eq!(found.len(), 2);
        found.retain(|x| Arc::ptr_eq(x, &q) || Arc::ptr_eq(x, &q_in));
        assert_eq!(found.len(), 2);
        drop(found);
        let setter = {
            let gate = gate.clone();
            thread::spawn(move || {
                thread::sleep(SETTLE);
                gate.set_user_status(0).unwrap();
            })
        };
        let ctx2 = ctx.clone();
        within("waiting for the commands that use a range", move || {
            wait_for_context_commands_using(&ctx2, |u| u.touches(0x6008, 1))
        });
        assert_eq!(b.status(), EventStatus::Complete);
        setter.join().unwrap();
        q.wait_for_commands_using(|u| u.touches(0x1000, 1));
        assert_eq!(a.status(), EventStatus::Complete);
        // Plain `enqueue` may use anything.
        let gate = Event::user(&ctx);
        let e = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
        let (tx, rx) = mpsc::channel();
        let q2 = q.clone();
        let waiter = thread::spawn(move || {
            q2.wait_for_commands_using(|u| u.touches(0xdead_0000, 1));
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(SETTLE).is_err(), "did not wait for a command that may use anything");
        gate.set_user_status(0).unwrap();
        rx.recv_timeout(DEADLINE).unwrap();
        waiter.join().unwrap();
        assert_eq!(e.status(), EventStatus::Complete);
        drop(q);
        assert_eq!(queues_of(&ctx).len(), 1);
        drop(q_in);
        assert!(queues_of(&ctx).is_empty());
    }

    #[test]
    fn blocking_commands_run_inline_when_nothing_is_pending() {
        let _g = shared_lock();
        let ctx = context();
        let me = thread::current().id();
        let ran_on = |tx: &mpsc::Sender<thread::ThreadId>| -> Work {
            let tx = tx.clone();
            Box::new(move || {
                tx.send(thread::current().id()).unwrap();
                Ok(())
            })
        };
        let (tx, rx) = mpsc::channel();
        for props in [IN_ORDER, OUT_OF_ORDER] {
            let q = queue(&ctx, props);
            q.enqueue(command_type::USER, &[], true, ran_on(&tx)).unwrap();
            assert_eq!(rx.recv().unwrap(), me, "a blocking command on an idle queue did not run inline");
            let e = q.enqueue(command_type::USER, &[], false, ran_on(&tx)).unwrap();
            wait(&e);
            assert_ne!(rx.recv().unwrap(), me, "a non-blocking command ran on the enqueuing thread");
            // With a command pending: in order, the blocking command goes to
            // the worker behind it (the gate opens once both are enqueued);
            // out of order, nothing holds it back.
            let gate = Event::user(&ctx);
            q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
            let setter = (!props.out_of_order).then(|| {
                let (gate, q) = (gate.clone(), q.clone());
                thread::spawn(move || {
                    eventually("the blocking command is enqueued", || q.pending_commands() == 2);
                    gate.set_user_status(0).unwrap();
                })
            });
            let e = q.enqueue(command_type::USER, &[], true, ran_on(&tx)).unwrap();
            assert_eq!(e.status(), EventStatus::Complete);
            let on = rx.recv().unwrap();
            if props.out_of_order {
                assert_eq!(on, me, "out of order, a blocking command did not run inline");
                assert_eq!(gate.status(), EventStatus::Submitted);
                gate.set_user_status(0).unwrap();
            } else {
                assert_ne!(on, me, "in order, a blocking command behind a pending one ran inline");
                assert_eq!(gate.status(), EventStatus::Complete, "ran ahead of a pending command");
            }
            if let Some(s) = setter {
                s.join().unwrap();
            }
            q.finish().unwrap();
        }
    }

    #[test]
    fn commands_queued_behind_an_inline_command_run_after_it() {
        let _g = shared_lock();
        let ctx = context();
        for props in [IN_ORDER, OUT_OF_ORDER] {
            let q = queue(&ctx, props);
            let log: Log = Arc::default();
            let (started_tx, started_rx) = mpsc::channel::<()>();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let inline = {
                let (q, log) = (q.clone(), log.clone());
                thread::spawn(move || {
                    let work: Work = Box::new(move || {
                        started_tx.send(()).unwrap();
                        go_rx.recv_timeout(DEADLINE).map_err(|_| code::OUT_OF_RESOURCES)?;
                        log.lock().unwrap().push(1);
                        Ok(())
                    });
                    q.enqueue(command_type::USER, &[], true, work)
                })
            };
            started_rx.recv_timeout(DEADLINE).unwrap();
            // In order it waits for the inline command; out of order, a
            // marker without a wait list does.
            let e = if props.out_of_order {
                q.enqueue_marker(&[]).unwrap()
            } else {
                q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap()
            };
            thread::sleep(SETTLE);
            assert_eq!(e.status(), if props.out_of_order { EventStatus::Queued } else { EventStatus::Submitted });
            go_tx.send(()).unwrap();
            inline.join().unwrap().unwrap();
            within("a command queued behind an inline one", move || wait(&e));
            assert_eq!(logged(&log), if props.out_of_order { vec![1] } else { vec![1, 2] });
        }
    }

    #[test]
    fn concurrent_enqueues_keep_in_order_semantics() {
        let _g = shared_lock();
        let ctx = context();
        for props in [IN_ORDER, OUT_OF_ORDER] {
            let q = queue(&ctx, props);
            let busy = Arc::new(AtomicBool::new(false));
            let overlaps = Arc::new(AtomicUsize::new(0));
            let order: Arc<Mutex<Vec<(u32, u32)>>> = Arc::default();
            let threads: Vec<_> = (0..4u32)
                .map(|t| {
                    let (q, busy, overlaps, order) = (q.clone(), busy.clone(), overlaps.clone(), order.clone());
                    thread::spawn(move || {
                        let mut last = None;
                        for i in 0..300u32 {
                            let (busy, overlaps, order) = (busy.clone(), overlaps.clone(), order.clone());
                            let work: Work = Box::new(move || {
                                if busy.swap(true, Ordering::SeqCst) {
                                    overlaps.fetch_add(1, Ordering::SeqCst);
                                }
                                order.lock().unwrap().push((t, i));
                                thread::yield_now();
                                busy.store(false, Ordering::SeqCst);
                                Ok(())
                            });
                            let wl: Vec<Event> = last.iter().cloned().collect();
                            let e = q.enqueue(command_type::USER, &wl, (i + t) % 3 == 0, work).unwrap();
                            if i % 7 == 0 {
                                last = Some(e);
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            q.finish().unwrap();
            assert_eq!(q.pending_commands(), 0);
            let order = order.lock().unwrap();
            assert_eq!(order.len(), 1200);
            if !props.out_of_order {
                assert_eq!(overlaps.load(Ordering::SeqCst), 0, "commands of an in-order queue overlapped");
                for t in 0..4 {
                    let mine: Vec<u32> = order.iter().filter(|x| x.0 == t).map(|x| x.1).collect();
                    assert!(mine.windows(2).all(|w| w[0] < w[1]), "thread {t}'s commands ran out of enqueue order");
                }
            }
        }
    }

    #[test]
    fn dropping_a_queue_with_pending_commands_neither_hangs_nor_leaks_threads() {
        let _g = exclusive_lock();
        let before = threads();
        let ctx = context();
        let q = queue(&ctx, OUT_OF_ORDER);
        let name = format!("dmabq-{}", q.shared.id);
        let shared = Arc::downgrade(&q.shared);
        let gate = Event::user(&ctx);
        let ran = Arc::new(AtomicUsize::new(0));
        let count = |ran: &Arc<AtomicUsize>| -> Work {
            let ran = ran.clone();
            Box::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
        };
        let runnable: Vec<Event> =
            (0..4).map(|_| q.enqueue(command_type::USER, &[], false, count(&ran)).unwrap()).collect();
        let pending = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, count(&ran)).unwrap();
        // A command holding the last reference to its own queue.
        let q_in = queue(&ctx, IN_ORDER);
        let name_in = format!("dmabq-{}", q_in.shared.id);
        let shared_in = Arc::downgrade(&q_in.shared);
        let holder = q_in.clone();
        let self_drop = q_in
            .enqueue(
                command_type::USER,
                std::slice::from_ref(&gate),
                false,
                Box::new(move || {
                    drop(holder);
                    Ok(())
                }),
            )
            .unwrap();
        drop(q_in);
        let _warm = q.enqueue(command_type::USER, &[], false, ok()).unwrap();
        eventually("workers start", || threads_named(&name) > 0);
        within("dropping a queue with pending commands", move || drop(q));
        assert_eq!(threads_named(&name), 0, "workers outlive their queue");
        assert!(runnable.iter().all(|e| e.status() == EventStatus::Complete), "runnable commands were dropped");
        assert_eq!(pending.status(), EventStatus::Queued);
        assert_eq!(ran.load(Ordering::SeqCst), 4);
        assert!(pending.queue().is_none());
        // Its wait list resolves: it still runs, on a worker that then exits.
        gate.set_user_status(0).unwrap();
        within("a command of a dropped queue", {
            let pending = pending.clone();
            move || wait(&pending)
        });
        within("a command dropping its own queue", move || wait(&self_drop));
        assert_eq!(ran.load(Ordering::SeqCst), 5);
        eventually("late workers exit", || threads_named(&name) == 0 && threads_named(&name_in) == 0);
        eventually("the queues' schedulers are freed", || shared.strong_count() == 0 && shared_in.strong_count() == 0);
        let t0 = Instant::now();
        loop {
            let left = new_threads_of_ours(&before);
            if left.is_empty() {
                break;
            }
            assert!(t0.elapsed() < DEADLINE, "threads of the test left running: {left:?}");
            thread::sleep(Duration::from_millis(1));
        }
        println!("threads: {} before, {} after (other tests may run meanwhile)", before.len(), threads().len());
    }

    #[test]
    fn inline_round_trip_time() {
        let _g = shared_lock();
        let ctx = context();
        let q = queue(&ctx, IN_ORDER);
        let dst = Arc::new(Mutex::new([0u8; 64]));
        let src = [7u8; 64];
        let memcpy = || -> Work {
            let dst = dst.clone();
            Box::new(move || {
                dst.lock().unwrap().copy_from_slice(&src);
                Ok(())
            })
        };
        let rounds = 20_000;
        let mut samples = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let t0 = Instant::now();
            let e = q.enqueue_with_use(command_type::MEMCPY_INTEL, &[], true, CommandUse::Nothing, memcpy()).unwrap();
            samples.push(t0.elapsed());
            debug_assert_eq!(e.status(), EventStatus::Complete);
        }
        samples.sort();
        let mean = samples.iter().sum::<Duration>() / rounds as u32;
        let mut worker = Vec::with_capacity(2000);
        for _ in 0..2000 {
            let t0 = Instant::now();
            let e = q.enqueue(command_type::MEMCPY_INTEL, &[], false, memcpy()).unwrap();
            e.wait_done();
            worker.push(t0.elapsed());
        }
        worker.sort();
        println!(
            "blocking 64-byte memcpy, inline: mean {:?}, median {:?}, p99 {:?}; non-blocking + wait through the worker: median {:?} ({} build)",
            mean,
            samples[rounds / 2],
            samples[rounds * 99 / 100],
            worker[worker.len() / 2],
            if cfg!(debug_assertions) { "debug" } else { "release" }
        );
        assert_eq!(*dst.lock().unwrap(), src);
    }
}
