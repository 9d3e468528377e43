//! Context entry points (`runtime::context`, `runtime::info`).

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::info::{self, context_param};
use opencl_sys::*;

use crate::entry::{info_bytes, info_value, object, pointer_bytes, status, Cl, ClRes};
use crate::handles::{self, check_platform, device_handle, Kind, Tag};

/// A context: the core context and the properties it was created with
/// (what `CL_CONTEXT_PROPERTIES` answers).
#[derive(Debug)]
pub struct ContextObj {
    /// The core context.
    pub ctx: Arc<Context>,
    /// The properties array as given, with its terminating 0 (empty if NULL).
    properties: Vec<cl_context_properties>,
}

impl Kind for ContextObj {
    const TAG: Tag = Tag::Context;
    const INVALID: cl_int = CL_INVALID_CONTEXT;
}

/// The `pfn_notify` of `clCreateContext*` (never called: dmabridge reports
/// no asynchronous errors).
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
    Ok(handles::into_handle(handles::new_object(ContextObj { ctx, properties })).cast())
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

/// `clGetContextInfo`.
pub(crate) unsafe extern "C" fn clGetContextInfo(
    context: cl_context,
    param_name: cl_context_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    status("clGetContextInfo", || {
        let obj = handles::get::<ContextObj>(context.cast())?;
        let bytes = match param_name {
            context_param::DEVICES => {
                let devs: Vec<*const c_void> =
                    obj.inner.ctx.devices().iter().map(|d| device_handle(d) as *const c_void).collect();
                pointer_bytes(&devs)
            }
            context_param::PROPERTIES => obj.inner.properties.iter().flat_map(|p| p.to_ne_bytes()).collect(),
            context_param::REFERENCE_COUNT => handles::reference_count(&obj).to_ne_bytes().to_vec(),
            _ => {
                let value = info::context_info(&obj.inner.ctx, param_name).cl()?;
                // SAFETY: the C contract of the `param_value` arguments.
                return unsafe { info_value(&value, param_value_size, param_value, param_value_size_ret) };
            }
        };
        // SAFETY: the C contract of the `param_value` arguments.
        unsafe { info_bytes(&bytes, param_value_size, param_value, param_value_size_ret) }
    })
}
