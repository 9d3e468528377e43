//! `cl_khr_semaphore` with `cl_khr_external_semaphore_sync_fd`: binary
//! semaphores, imported from a sync_file fd (another driver's fence: a
//! GPU's, a display's, a capture driver's) or signalled by a queue of the
//! same context.
//!
//! A wait ([`enqueue_wait`]) holds its queue until the semaphore is
//! signalled: a command that sleeps on the worker thread in
//! `io_uring_enter` until the sync_file is readable
//! ([`runtime::fence`](crate::runtime::fence)), or whose wait list holds the
//! signalling command. A binary semaphore's wait consumes its signal: the
//! semaphore is unsignalled again, and a wait with no signal pending (no
//! fence imported, none enqueued since the last wait) is
//! `CL_INVALID_OPERATION`, since it could never end. A signal
//! ([`enqueue_signal`]) completes once its wait list did — with an empty
//! list, once every command enqueued before it on its queue did — and a wait
//! starts likewise; the commands after either start only once it completed:
//! the extension's order, which holds on an out-of-order queue too
//! ([`Queue::enqueue_ordered`]). No export: see [the module above](super).

use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex, Weak};

use super::device_list;
use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::event::Event;
use crate::runtime::fence::wait_sync_file;
use crate::runtime::info::InfoValue;
use crate::runtime::queue::{check_wait_list, Queue};
use crate::sync;
use crate::sys::dma_buf::SyncFile;

/// `CL_SEMAPHORE_TYPE_BINARY_KHR`.
pub const SEMAPHORE_TYPE_BINARY_KHR: u32 = 1;
/// `CL_COMMAND_SEMAPHORE_WAIT_KHR`.
pub const COMMAND_SEMAPHORE_WAIT_KHR: u32 = 0x2042;
/// `CL_COMMAND_SEMAPHORE_SIGNAL_KHR`.
pub const COMMAND_SEMAPHORE_SIGNAL_KHR: u32 = 0x2043;

/// `cl_semaphore_info_khr` (and the property names).
pub mod semaphore_info {
    /// `CL_SEMAPHORE_CONTEXT_KHR`.
    pub const CONTEXT: u32 = 0x2039;
    /// `CL_SEMAPHORE_REFERENCE_COUNT_KHR` (the C face's).
    pub const REFERENCE_COUNT: u32 = 0x203A;
    /// `CL_SEMAPHORE_PROPERTIES_KHR` (the C face's: as given).
    pub const PROPERTIES: u32 = 0x203B;
    /// `CL_SEMAPHORE_PAYLOAD_KHR`.
    pub const PAYLOAD: u32 = 0x203C;
    /// `CL_SEMAPHORE_TYPE_KHR`, also a property.
    pub const TYPE: u32 = 0x203D;
    /// `CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR`, also a property.
    pub const EXPORT_HANDLE_TYPES: u32 = 0x203F;
    /// `CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR`, also a property (the current
    /// Khronos headers' value).
    pub const DEVICE_HANDLE_LIST: u32 = 0x2053;
    /// The same query and property as Debian's `opencl-c-headers`
    /// (2023.02.06) spell it: `CL_DEVICE_HANDLE_LIST_KHR`. Both are taken.
    pub const DEVICE_HANDLE_LIST_2023: u32 = 0x2051;
    /// `CL_SEMAPHORE_EXPORTABLE_KHR`: false, nothing exports.
    pub const EXPORTABLE: u32 = 0x2054;
}

/// The properties of `clCreateSemaphoreWithPropertiesKHR`.
#[derive(Debug, Default)]
pub struct SemaphoreProperties<'a> {
    /// `CL_SEMAPHORE_TYPE_KHR` (required).
    pub ty: Option<u64>,
    /// `CL_SEMAPHORE_HANDLE_SYNC_FD_KHR`: the fence to import.
    pub sync_fd: Option<BorrowedFd<'a>>,
    /// `CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR`.
    pub devices: Option<Vec<Arc<Device>>>,
    /// `CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR`: the handle types asked for.
    pub export_types: Option<Vec<u64>>,
}

/// What a binary semaphore holds.
#[derive(Debug)]
enum Signal {
    /// Nothing: a wait now would never end.
    None,
    /// An imported fence.
    Fence(SyncFile),
    /// The command of a queue that signals it.
    Command(Event),
}

/// A binary semaphore (`cl_semaphore_khr`).
#[derive(Debug)]
pub struct Semaphore {
    context: Arc<Context>,
    devices: Vec<Arc<Device>>,
    signal: Mutex<Signal>,
}

/// `clCreateSemaphoreWithPropertiesKHR`: a binary semaphore of `ctx`,
/// signalled by the imported sync_file if one is given (the fd is
/// duplicated: the caller may close it).
///
/// Errors: `CL_INVALID_VALUE` without `CL_SEMAPHORE_TYPE_KHR`;
/// `CL_INVALID_PROPERTY` for a type other than binary, an export handle
/// type (none exists here: see the module above), an empty device list, an
/// fd that cannot be duplicated; `CL_INVALID_DEVICE` for a listed device
/// not in the context.
///
/// ```
/// use dmabridge::ext::khr_external::semaphore::{self, SemaphoreProperties, SEMAPHORE_TYPE_BINARY_KHR};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let s = semaphore::create(&ctx, &SemaphoreProperties { ty: Some(SEMAPHORE_TYPE_BINARY_KHR.into()), ..Default::default() })?;
/// assert_eq!(s.payload(), 0);
/// let err = semaphore::create(&ctx, &SemaphoreProperties::default()).unwrap_err();
/// assert_eq!(err.code(), dmabridge::error::code::INVALID_VALUE);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn create(ctx: &Arc<Context>, props: &SemaphoreProperties<'_>) -> ClResult<Arc<Semaphore>> {
    match props.ty {
        None => {
            return cl_err!(
                InvalidValue,
                "CL_SEMAPHORE_TYPE_KHR is missing from the properties: give CL_SEMAPHORE_TYPE_BINARY_KHR"
            )
        }
        Some(t) if t != u64::from(SEMAPHORE_TYPE_BINARY_KHR) => {
            return cl_err!(
                InvalidProperty,
                "CL_SEMAPHORE_TYPE_KHR {t:#x} is not supported: dmabridge has binary semaphores only \
                 (CL_SEMAPHORE_TYPE_BINARY_KHR)"
            )
        }
        Some(_) => {}
    }
    if let Some(t) = props.export_types.as_ref().and_then(|t| t.first()) {
        return cl_err!(
            InvalidProperty,
            "CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR asks for handle type {t:#x}: dmabridge exports no semaphore (a \
             userspace driver has no kernel fence of its own to signal later; CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR \
             is empty)"
        );
    }
    let devices = device_list(ctx, props.devices.as_deref(), "semaphore")?;
    let signal = match props.sync_fd {
        None => Signal::None,
        Some(fd) => Signal::Fence(SyncFile::from_fd(fd.try_clone_to_owned().map_err(|e| {
            ClError::new(
                ClErrorKind::InvalidProperty,
                format!("the CL_SEMAPHORE_HANDLE_SYNC_FD_KHR fd cannot be duplicated ({e}): pass an open sync_file fd"),
            )
        })?)),
    };
    Ok(Arc::new(Semaphore { context: ctx.clone(), devices, signal: Mutex::new(signal) }))
}

impl Semaphore {
    /// Its context (`CL_SEMAPHORE_CONTEXT_KHR`).
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// The devices that may use it (`CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR`).
    pub fn devices(&self) -> &[Arc<Device>] {
        &self.devices
    }

    /// `CL_SEMAPHORE_PAYLOAD_KHR`: 1 once signalled (an imported fence that
    /// signalled, a signal command that completed), else 0.
    pub fn payload(&self) -> u64 {
        match &*sync::lock(&self.signal) {
            Signal::None => 0,
            Signal::Fence(f) => u64::from(f.is_signaled().unwrap_or(false)),
            Signal::Command(e) => u64::from(e.status().as_cl() == 0),
        }
    }

    /// `clReImportSemaphoreSyncFdKHR`: the semaphore's signal becomes the
    /// fence `fd` (duplicated: the caller may close it), replacing a
    /// pending one.
    ///
    /// Errors: `CL_INVALID_VALUE` for an fd that cannot be duplicated.
    pub fn reimport_sync_fd(&self, fd: BorrowedFd<'_>) -> ClResult<()> {
        let owned = fd.try_clone_to_owned().map_err(|e| {
            ClError::new(ClErrorKind::InvalidValue, format!("the sync_file fd cannot be duplicated ({e})"))
        })?;
        *sync::lock(&self.signal) = Signal::Fence(SyncFile::from_fd(owned));
        Ok(())
    }

    /// `clGetSemaphoreInfoKHR` of the core's parameters (the reference
    /// count and the properties as given are the C face's):
    /// `CL_INVALID_VALUE` for another.
    pub fn info(&self, param: u32) -> ClResult<InfoValue> {
        use semaphore_info::*;
        Ok(match param {
            CONTEXT => InfoValue::Context(self.context.clone()),
            TYPE => InfoValue::U32(SEMAPHORE_TYPE_BINARY_KHR),
            PAYLOAD => InfoValue::U64(self.payload()),
            DEVICE_HANDLE_LIST | DEVICE_HANDLE_LIST_2023 => InfoValue::DeviceIds(self.devices.clone()),
            EXPORTABLE => InfoValue::Bool(false),
            EXPORT_HANDLE_TYPES => InfoValue::U32s(Vec::new()),
            _ => return cl_err!(InvalidValue, "{param:#x} is not a cl_semaphore_info_khr dmabridge answers"),
        })
    }
}

/// The checks of both commands.
fn checked(queue: &Queue, sems: &[Arc<Semaphore>], wait_list: &[Event], name: &str) -> ClResult<()> {
    if sems.is_empty() {
        return cl_err!(InvalidValue, "{name}: no semaphore given");
    }
    for (i, s) in sems.iter().enumerate() {
        if !Arc::ptr_eq(&s.context, queue.context()) {
            return cl_err!(InvalidContext, "{name}: semaphore {i} and the command queue belong to different contexts");
        }
        if !s.devices.iter().any(|d| Arc::ptr_eq(d, queue.device())) {
            return cl_err!(
                InvalidCommandQueue,
                "{name}: the queue's device {:?} is not in semaphore {i}'s CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR",
                queue.device().name
            );
        }
    }
    check_wait_list(queue.context(), wait_list)
}

/// `clEnqueueWaitSemaphoresKHR`: the commands after it on the queue start
/// only once every semaphore is signalled; each wait consumes its
/// semaphore's signal (binary semaphores: payloads are ignored).
///
/// Errors: `CL_INVALID_VALUE` for no semaphore; `CL_INVALID_CONTEXT` for a
/// semaphore or event of another context; `CL_INVALID_COMMAND_QUEUE` for a
/// queue whose device is not in a semaphore's device list;
/// `CL_INVALID_OPERATION` for a semaphore with no signal pending (see the
/// module). A refused call consumes nothing.
///
/// ```
/// use dmabridge::ext::khr_external::semaphore::{self, SemaphoreProperties, SEMAPHORE_TYPE_BINARY_KHR};
/// use dmabridge::runtime::{context::Context, event::Event, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let q = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let s = semaphore::create(&ctx, &SemaphoreProperties { ty: Some(SEMAPHORE_TYPE_BINARY_KHR.into()), ..Default::default() })?;
/// // Nothing signals it yet: a wait could never end.
/// assert!(semaphore::enqueue_wait(&q, &[s.clone()], &[]).is_err());
/// semaphore::enqueue_signal(&q, &[s.clone()], &[])?;
/// Event::wait(&[semaphore::enqueue_wait(&q, &[s], &[])?])?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_wait(queue: &Arc<Queue>, sems: &[Arc<Semaphore>], wait_list: &[Event]) -> ClResult<Event> {
    let name = "clEnqueueWaitSemaphoresKHR";
    checked(queue, sems, wait_list, name)?;
    let mut states: Vec<_> = sems.iter().map(|s| sync::lock(&s.signal)).collect();
    if let Some(i) = states.iter().position(|s| matches!(**s, Signal::None)) {
        return cl_err!(
            InvalidOperation,
            "{name}: semaphore {i} has no signal pending (no sync_file imported, no clEnqueueSignalSemaphoresKHR \
             since its last wait): the wait could never end"
        );
    }
    let mut fences = Vec::new();
    let mut signals = Vec::new();
    for s in &mut states {
        match std::mem::replace(&mut **s, Signal::None) {
            Signal::Fence(f) => fences.push(f),
            Signal::Command(e) => signals.push(e),
            Signal::None => {}
        }
    }
    let weak: Weak<Queue> = Arc::downgrade(queue);
    let work = Box::new(move || {
        for f in &fences {
            wait_sync_file(f, || weak.strong_count() == 0)?;
        }
        Ok(())
    });
    // The signalling commands are what the wait itself waits for, not its
    // wait list: with an empty list it also waits for every earlier
    // command of its queue (the extension's order, on out-of-order queues
    // too).
    queue.enqueue_ordered(COMMAND_SEMAPHORE_WAIT_KHR, wait_list, &signals, work)
}

/// `clEnqueueSignalSemaphoresKHR`: each semaphore is signalled once the
/// wait list completed — with an empty list, once every command enqueued
/// before this one on the queue did, in or out of order; later commands of
/// the queue wait for the signal. A semaphore signalled already is signalled again (the new
/// signal replaces a pending one).
///
/// Errors: as [`enqueue_wait`]'s, without `CL_INVALID_OPERATION`.
///
/// ```
/// use dmabridge::ext::khr_external::semaphore::{self, SemaphoreProperties, SEMAPHORE_TYPE_BINARY_KHR};
/// use dmabridge::runtime::{context::Context, event::Event, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let q = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let s = semaphore::create(&ctx, &SemaphoreProperties { ty: Some(SEMAPHORE_TYPE_BINARY_KHR.into()), ..Default::default() })?;
/// Event::wait(&[semaphore::enqueue_signal(&q, &[s.clone()], &[])?])?;
/// assert_eq!(s.payload(), 1);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_signal(queue: &Arc<Queue>, sems: &[Arc<Semaphore>], wait_list: &[Event]) -> ClResult<Event> {
    checked(queue, sems, wait_list, "clEnqueueSignalSemaphoresKHR")?;
    let ev = queue.enqueue_ordered(COMMAND_SEMAPHORE_SIGNAL_KHR, wait_list, &[], Box::new(|| Ok(())))?;
    for s in sems {
        *sync::lock(&s.signal) = Signal::Command(ev.clone());
    }
    Ok(ev)
}
