//! Command-queue entry points (`runtime::queue`, `runtime::info`).

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::runtime::info::{self, queue_param};
use dmabridge::runtime::queue::{Queue, QueueProps};
use opencl_sys::*;

use super::context::ContextObj;
use super::event::return_event;
use crate::entry::{object, status, wait_list, Cl, ClRes};
use crate::handles::{self, DeviceObj, Kind, Obj, Tag};
use crate::info::{get_info, Handles};

/// A command queue, with the context object it holds (so that
/// `CL_QUEUE_CONTEXT` answers a live handle) and the properties array it
/// was created with.
#[derive(Debug)]
pub struct QueueObj {
    /// The core queue.
    pub queue: Arc<Queue>,
    /// Its context's object.
    pub context: Arc<Obj<ContextObj>>,
    /// `CL_QUEUE_PROPERTIES_ARRAY`: as given, with its 0 (empty for NULL
    /// and for `clCreateCommandQueue`).
    properties: Vec<cl_queue_properties>,
}

impl Kind for QueueObj {
    const TAG: Tag = Tag::Queue;
    const INVALID: cl_int = CL_INVALID_COMMAND_QUEUE;

    fn notifier(&self) -> crate::notify::Notifier {
        self.context.inner.notify
    }
}

/// The queue object behind a handle.
pub(crate) fn queue(handle: cl_command_queue) -> ClRes<Arc<Obj<QueueObj>>> {
    handles::get::<QueueObj>(handle.cast())
}

fn new_queue(
    context: cl_context,
    device: cl_device_id,
    bits: cl_command_queue_properties,
    properties: Vec<cl_queue_properties>,
) -> ClRes<cl_command_queue> {
    let ctx = handles::get::<ContextObj>(context.cast())?;
    let dev = handles::get::<DeviceObj>(device.cast())?;
    let props = QueueProps::from_bits(bits).cl()?;
    let q = Queue::new(&ctx.inner.ctx, &dev.inner.device, props).cl()?;
    Ok(handles::into_handle(handles::new_object(QueueObj { queue: q, context: ctx, properties })).cast())
}

/// `clCreateCommandQueueWithProperties`: `CL_QUEUE_PROPERTIES` is the only
/// property (`CL_QUEUE_SIZE` needs an on-device queue, which is refused).
pub(crate) unsafe extern "C" fn clCreateCommandQueueWithProperties(
    context: cl_context,
    device: cl_device_id,
    properties: *const cl_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    // SAFETY: the C contract of `errcode_ret` and `properties`.
    unsafe {
        object("clCreateCommandQueueWithProperties", errcode_ret, || {
            let mut list = Vec::new();
            let mut bits = None;
            if !properties.is_null() {
                for i in (0..).step_by(2) {
                    let name = properties.add(i).read_unaligned();
                    list.push(name);
                    if name == 0 {
                        break;
                    }
                    let value = properties.add(i + 1).read_unaligned();
                    list.push(value);
                    match name as cl_uint {
                        CL_QUEUE_PROPERTIES if bits.is_none() => bits = Some(value),
                        _ => return Err(CL_INVALID_VALUE),
                    }
                }
            }
            new_queue(context, device, bits.unwrap_or(0), list)
        })
    }
}

/// `clCreateCommandQueue` (OpenCL 1.x).
pub(crate) unsafe extern "C" fn clCreateCommandQueue(
    context: cl_context,
    device: cl_device_id,
    properties: cl_command_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    // SAFETY: the C contract of `errcode_ret`.
    unsafe { object("clCreateCommandQueue", errcode_ret, || new_queue(context, device, properties, Vec::new())) }
}

/// `clRetainCommandQueue`.
pub(crate) unsafe extern "C" fn clRetainCommandQueue(command_queue: cl_command_queue) -> cl_int {
    status("clRetainCommandQueue", || handles::retain::<QueueObj>(command_queue.cast()))
}

/// `clReleaseCommandQueue`: flushes first, as OpenCL asks.
pub(crate) unsafe extern "C" fn clReleaseCommandQueue(command_queue: cl_command_queue) -> cl_int {
    status("clReleaseCommandQueue", || {
        queue(command_queue)?.inner.queue.flush().cl()?;
        handles::release::<QueueObj>(command_queue.cast())
    })
}

/// `clGetCommandQueueInfo`: the core's answers; the properties array as
/// given and the handle's reference count are the ICD's.
pub(crate) unsafe extern "C" fn clGetCommandQueueInfo(
    command_queue: cl_command_queue,
    param_name: cl_command_queue_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetCommandQueueInfo", param_value_size, param_value, param_value_size_ret, || {
            let q = queue(command_queue)?;
            let value = match param_name {
                queue_param::REFERENCE_COUNT => crate::info::reference_count(&q),
                queue_param::PROPERTIES_ARRAY => crate::info::properties(&q.inner.properties),
                _ => info::queue_info(&q.inner.queue, param_name).cl()?,
            };
            Ok((value, Handles::of_context(&q.inner.context)))
        })
    }
}

/// `clFlush`.
pub(crate) unsafe extern "C" fn clFlush(command_queue: cl_command_queue) -> cl_int {
    status("clFlush", || queue(command_queue)?.inner.queue.flush().cl())
}

/// `clFinish`.
pub(crate) unsafe extern "C" fn clFinish(command_queue: cl_command_queue) -> cl_int {
    status("clFinish", || queue(command_queue)?.inner.queue.finish().cl())
}

/// `clEnqueueMarkerWithWaitList`.
pub(crate) unsafe extern "C" fn clEnqueueMarkerWithWaitList(
    command_queue: cl_command_queue,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueMarkerWithWaitList", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            return_event(&q, q.inner.queue.enqueue_marker(&wait).cl()?, event)
        }
    })
}

/// `clEnqueueBarrierWithWaitList`.
pub(crate) unsafe extern "C" fn clEnqueueBarrierWithWaitList(
    command_queue: cl_command_queue,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueBarrierWithWaitList", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            return_event(&q, q.inner.queue.enqueue_barrier(&wait).cl()?, event)
        }
    })
}

/// `clEnqueueMarker` (OpenCL 1.1): a marker after every earlier command.
pub(crate) unsafe extern "C" fn clEnqueueMarker(command_queue: cl_command_queue, event: *mut cl_event) -> cl_int {
    status("clEnqueueMarker", || {
        if event.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        let q = queue(command_queue)?;
        // SAFETY: `event` is non-NULL and writable by the C contract.
        unsafe { return_event(&q, q.inner.queue.enqueue_marker(&[]).cl()?, event) }
    })
}

/// `clEnqueueBarrier` (OpenCL 1.1).
pub(crate) unsafe extern "C" fn clEnqueueBarrier(command_queue: cl_command_queue) -> cl_int {
    status("clEnqueueBarrier", || queue(command_queue)?.inner.queue.enqueue_barrier(&[]).cl().map(drop))
}

/// `clEnqueueWaitForEvents` (OpenCL 1.1): a barrier on the events;
/// `CL_INVALID_VALUE` for an empty list, `CL_INVALID_EVENT` for a bad entry.
pub(crate) unsafe extern "C" fn clEnqueueWaitForEvents(
    command_queue: cl_command_queue,
    num_events: cl_uint,
    event_list: *const cl_event,
) -> cl_int {
    status("clEnqueueWaitForEvents", || {
        let q = queue(command_queue)?;
        if num_events == 0 || event_list.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `num_events` readable entries.
        let wait = unsafe { wait_list(num_events, event_list) }.map_err(|_| CL_INVALID_EVENT)?;
        q.inner.queue.enqueue_barrier(&wait).cl().map(drop)
    })
}
