//! Context entry points (`runtime::context`, `runtime::info`).

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::info::{self, context_param};
use opencl_sys::*;

use crate::entry::{object, status, write_opt, Cl, ClRes};
use crate::handles::{self, check_platform, Kind, Tag};
use crate::info::{get_info, Handles};
use crate::notify::Notifier;

/// A context: the core context and the properties it was created with
/// (what `CL_CONTEXT_PROPERTIES` answers).
#[derive(Debug)]
pub struct ContextObj {
    /// The core context.
    pub ctx: Arc<Context>,
    /// The properties array as given, with its terminating 0 (empty if NULL).
    properties: Vec<cl_context_properties>,
    /// The `pfn_notify` and `user_data` of its creation.
    pub notify: Notifier,
}

impl Kind for ContextObj {
    const TAG: Tag = Tag::Context;
    const INVALID: cl_int = CL_INVALID_CONTEXT;

    fn notifier(&self) -> Notifier {
        self.notify
    }
}

/// The `pfn_notify` of `clCreateContext*`: called with the message of a
/// failed call on the context or one of its objects (`notify.rs`).
type Notify = Option<unsafe extern "C" fn(*const c_char, *const c_void, usize, *mut c_void)>;

/// Reads a zero-terminated context property list: `CL_CONTEXT_PLATFORM`
/// (ours, `CL_INVALID_PLATFORM` otherwise) is the only property;
/// `CL_INVALID_PROPERTY` for any other or a repeated name.
///
/// # Safety
/// `props` is NULL or a zero-terminated list of pairs.
unsafe fn context_properties(props: *const cl_context_properties) -> ClRes<Vec<cl_context_properties>> {
    let mut out = Vec::new();
    if props.is_null() {
        return Ok(out);
    }
    let mut platform_seen = false;
    for i in (0..).step_by(2) {
        // SAFETY: the list is zero-terminated; we stop at the 0 name.
        let name = unsafe { props.add(i).read_unaligned() };
        out.push(name);
        if name == 0 {
            break;
        }
        // SAFETY: a non-zero name is followed by its value.
        let value = unsafe { props.add(i + 1).read_unaligned() };
        out.push(value);
        match name {
            n if n == CL_CONTEXT_PLATFORM as cl_context_properties && !platform_seen => {
                platform_seen = true;
                check_platform(value as cl_platform_id, false)?;
            }
            _ => return Err(CL_INVALID_PROPERTY),
        }
    }
    Ok(out)
}

fn new_context(
    devices: &[Arc<Device>],
    properties: Vec<cl_context_properties>,
    notify: Notify,
    user_data: *mut c_void,
) -> ClRes<cl_context> {
    if notify.is_none() && !user_data.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    let ctx = Context::new(devices).cl()?;
    let notify = Notifier::new(notify, user_data);
    Ok(handles::into_handle(handles::new_object(ContextObj { ctx, properties, notify })).cast())
}

/// `clCreateContext`.
pub(crate) unsafe extern "C" fn clCreateContext(
    properties: *const cl_context_properties,
    num_devices: cl_uint,
    devices: *const cl_device_id,
    pfn_notify: Notify,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    // SAFETY: the C contract of `errcode_ret`, `properties` and `devices`.
    unsafe {
        object("clCreateContext", errcode_ret, || {
            let props = context_properties(properties)?;
            let devs = handles::device_list(num_devices, devices)?;
            new_context(&devs, props, pfn_notify, user_data)
        })
    }
}

/// `clCreateContextFromType`.
pub(crate) unsafe extern "C" fn clCreateContextFromType(
    properties: *const cl_context_properties,
    device_type: cl_device_type,
    pfn_notify: Notify,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    // SAFETY: the C contract of `errcode_ret` and `properties`.
    unsafe {
        object("clCreateContextFromType", errcode_ret, || {
            let props = context_properties(properties)?;
            let devs = super::device::devices_of_type(device_type)?;
            new_context(&devs, props, pfn_notify, user_data)
        })
    }
}

/// `clRetainContext`.
pub(crate) unsafe extern "C" fn clRetainContext(context: cl_context) -> cl_int {
    status("clRetainContext", || handles::retain::<ContextObj>(context.cast()))
}

/// `clReleaseContext`.
pub(crate) unsafe extern "C" fn clReleaseContext(context: cl_context) -> cl_int {
    status("clReleaseContext", || handles::release::<ContextObj>(context.cast()))
}

/// `clGetContextInfo`: the core's answers; the properties as given and the
/// handle's reference count are the ICD's.
pub(crate) unsafe extern "C" fn clGetContextInfo(
    context: cl_context,
    param_name: cl_context_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetContextInfo", param_value_size, param_value, param_value_size_ret, || {
            let obj = handles::get::<ContextObj>(context.cast())?;
            let value = match param_name {
                context_param::PROPERTIES => crate::info::properties(&obj.inner.properties),
                context_param::REFERENCE_COUNT => crate::info::reference_count(&obj),
                _ => info::context_info(&obj.inner.ctx, param_name).cl()?,
            };
            Ok((value, Handles::of_context(&obj)))
        })
    }
}

/// The C callback of `clSetContextDestructorCallback`.
type ContextNotify = Option<unsafe extern "C" fn(cl_context, *mut c_void)>;

/// The application's `user_data`, handed back untouched.
struct UserData(*mut c_void);
// SAFETY: an opaque word only passed back to the application's callback,
// which OpenCL allows to run on any thread.
unsafe impl Send for UserData {}

/// `clSetContextDestructorCallback`: the callback runs (with no dmabridge
/// lock held, in reverse order of registration) when the context is
/// destroyed, i.e. once the application's references and those its queues,
/// buffers, programs, kernels and events hold are all gone; it gets the
/// handle the context had (for identification only: the object is gone).
pub(crate) unsafe extern "C" fn clSetContextDestructorCallback(
    context: cl_context,
    pfn_notify: ContextNotify,
    user_data: *mut c_void,
) -> cl_int {
    status("clSetContextDestructorCallback", || {
        let obj = handles::get::<ContextObj>(context.cast())?;
        let f = pfn_notify.ok_or(CL_INVALID_VALUE)?;
        let (handle, data) = (handles::handle_of(&obj) as usize, UserData(user_data));
        obj.inner.ctx.on_destroy(Box::new(move || {
            let data = data;
            // SAFETY: the application's callback with the arguments OpenCL
            // defines; the handle is passed as a value, never dereferenced.
            unsafe { f(handle as cl_context, data.0) };
        }));
        Ok(())
    })
}

/// `clGetSupportedImageFormats`: the core's list (`runtime::image::format`),
/// after the argument rules: `CL_INVALID_VALUE` for bad `flags` or `image_type`, or
/// `num_entries` 0 with a non-NULL `image_formats`.
pub(crate) unsafe extern "C" fn clGetSupportedImageFormats(
    context: cl_context,
    flags: cl_mem_flags,
    image_type: cl_mem_object_type,
    num_entries: cl_uint,
    image_formats: *mut cl_image_format,
    num_image_formats: *mut cl_uint,
) -> cl_int {
    status("clGetSupportedImageFormats", || {
        let obj = handles::get::<ContextObj>(context.cast())?;
        if num_entries == 0 && !image_formats.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        let formats = obj.inner.ctx.supported_image_formats(flags, image_type).cl()?;
        for (i, f) in formats.iter().take(num_entries as usize).enumerate() {
            let format = cl_image_format { image_channel_order: f.order, image_channel_data_type: f.data_type };
            // SAFETY: the C contract: a non-NULL `image_formats` has room for
            // `num_entries` formats, and `i < num_entries`.
            unsafe { image_formats.add(i).write_unaligned(format) };
        }
        let count = cl_uint::try_from(formats.len()).unwrap_or(cl_uint::MAX);
        // SAFETY: the C contract of `num_image_formats` (NULL or writable).
        unsafe { write_opt(num_image_formats, count) };
        Ok(())
    })
}
