//! Event entry points (`runtime::event`, `runtime::info`).

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::runtime::event::Event;
use dmabridge::runtime::info::{self, event_param};
use opencl_sys::*;

use super::context::ContextObj;
use super::queue::QueueObj;
use crate::entry::{object, slice, status, Cl, ClRes};
use crate::handles::{self, Kind, Obj, Tag};
use crate::info::{get_info, Handles};

/// An event, with the objects of its context and queue (the event keeps
/// both alive, so its info answers stay valid handles).
#[derive(Debug)]
pub struct EventObj {
    /// The core event.
    pub event: Event,
    /// Its context's object.
    pub context: Arc<Obj<ContextObj>>,
    /// Its queue's object (None for a user event).
    pub queue: Option<Arc<Obj<QueueObj>>>,
}

impl Kind for EventObj {
    const TAG: Tag = Tag::Event;
    const INVALID: cl_int = CL_INVALID_EVENT;

    fn notifier(&self) -> crate::notify::Notifier {
        self.context.inner.notify
    }
}

/// Hands the event of a command enqueued on `queue` to the application
/// through `out` (dropped when `out` is NULL).
///
/// # Safety
/// `out` is NULL or valid for a write of a `cl_event`.
pub(crate) unsafe fn return_event(queue: &Arc<Obj<QueueObj>>, event: Event, out: *mut cl_event) -> ClRes<()> {
    if !out.is_null() {
        let obj = EventObj { event, context: queue.inner.context.clone(), queue: Some(queue.clone()) };
        // SAFETY: non-NULL, so writable by the caller's contract.
        unsafe { out.write_unaligned(handles::into_handle(handles::new_object(obj)).cast()) };
    }
    Ok(())
}

fn event(handle: cl_event) -> ClRes<Arc<Obj<EventObj>>> {
    handles::get::<EventObj>(handle.cast())
}

/// `clWaitForEvents`: `CL_INVALID_VALUE` for an empty list,
/// `CL_INVALID_EVENT` for an entry that is not an event.
pub(crate) unsafe extern "C" fn clWaitForEvents(num_events: cl_uint, event_list: *const cl_event) -> cl_int {
    status("clWaitForEvents", || {
        if num_events == 0 || event_list.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `num_events` readable entries.
        let handles = unsafe { slice(event_list, num_events as usize) };
        let events = handles.iter().map(|&h| event(h).map(|e| e.inner.event.clone())).collect::<ClRes<Vec<_>>>()?;
        Event::wait(&events).cl()
    })
}

/// `clGetEventInfo`.
pub(crate) unsafe extern "C" fn clGetEventInfo(
    ev: cl_event,
    param_name: cl_event_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetEventInfo", param_value_size, param_value, param_value_size_ret, || {
            let e = event(ev)?;
            let value = match param_name {
                event_param::REFERENCE_COUNT => crate::info::reference_count(&e),
                _ => info::event_info(&e.inner.event, param_name).cl()?,
            };
            let handles = Handles { queue: e.inner.queue.clone(), ..Handles::of_context(&e.inner.context) };
            Ok((value, handles))
        })
    }
}

/// `clGetEventProfilingInfo`.
pub(crate) unsafe extern "C" fn clGetEventProfilingInfo(
    ev: cl_event,
    param_name: cl_profiling_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetEventProfilingInfo", param_value_size, param_value, param_value_size_ret, || {
            let e = event(ev)?;
            Ok((info::event_profiling_info(&e.inner.event, param_name).cl()?, Handles::default()))
        })
    }
}

/// `clRetainEvent`.
pub(crate) unsafe extern "C" fn clRetainEvent(ev: cl_event) -> cl_int {
    status("clRetainEvent", || handles::retain::<EventObj>(ev.cast()))
}

/// `clReleaseEvent`.
pub(crate) unsafe extern "C" fn clReleaseEvent(ev: cl_event) -> cl_int {
    status("clReleaseEvent", || handles::release::<EventObj>(ev.cast()))
}

/// `clCreateUserEvent`.
pub(crate) unsafe extern "C" fn clCreateUserEvent(context: cl_context, errcode_ret: *mut cl_int) -> cl_event {
    // SAFETY: the C contract of `errcode_ret`.
    unsafe {
        object("clCreateUserEvent", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            let obj = EventObj { event: Event::user(&ctx.inner.ctx), context: ctx, queue: None };
            Ok(handles::into_handle(handles::new_object(obj)).cast())
        })
    }
}

/// `clSetUserEventStatus`.
pub(crate) unsafe extern "C" fn clSetUserEventStatus(ev: cl_event, execution_status: cl_int) -> cl_int {
    status("clSetUserEventStatus", || event(ev)?.inner.event.set_user_status(execution_status).cl())
}

/// The C callback of `clSetEventCallback`.
type EventNotify = Option<unsafe extern "C" fn(cl_event, cl_int, *mut c_void)>;

/// The application's `user_data`, handed back untouched.
struct UserData(*mut c_void);
// SAFETY: an opaque word only passed back to the application's callback,
// which OpenCL allows to run on any thread.
unsafe impl Send for UserData {}

/// `clSetEventCallback`: the callback gets the event's handle, kept alive
/// until it has run; it runs with no dmabridge lock held, so it may call
/// back into the API.
pub(crate) unsafe extern "C" fn clSetEventCallback(
    ev: cl_event,
    command_exec_callback_type: cl_int,
    pfn_notify: EventNotify,
    user_data: *mut c_void,
) -> cl_int {
    status("clSetEventCallback", || {
        let e = event(ev)?;
        let f = pfn_notify.ok_or(CL_INVALID_VALUE)?;
        let data = UserData(user_data);
        let keep = e.clone();
        let callback = Box::new(move |_: &Event, status: cl_int| {
            let data = data;
            // SAFETY: the application's callback with the arguments OpenCL
            // defines; `keep` keeps the handle valid while it runs.
            unsafe { f(handles::handle_of(&keep).cast(), status, data.0) };
        });
        e.inner.event.set_callback(command_exec_callback_type, callback).cl()
    })
}
