//! Entry points of the seeds' extensions that the runtime does not offer yet:
//! `cl_amd_bus_addressable_memory` (in AMD's header order, not the text's
//! section 5.4.4 typo).
//! They are reachable through `clGetExtensionFunctionAddressForPlatform`
//! with the public headers' signatures, so that an application that looks
//! them up gets a function rather than NULL, and are not advertised in any
//! extension string. Each validates its first handle (an invalid one
//! answers its kind's `CL_INVALID_*` code), then answers
//! `CL_INVALID_OPERATION`; none touches its other arguments.

use opencl_sys::*;

use super::queue::QueueObj;
use crate::entry::unsupported_for;

/// `cl_bus_address_amd` (AMD's `CL/cl_ext.h`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct cl_bus_address_amd {
    /// The bus address of the buffer's memory.
    pub surface_bus_address: cl_ulong,
    /// The bus address of its signal (marker) location.
    pub marker_bus_address: cl_ulong,
}

/// Signature of `clEnqueueWaitSignalAMD`.
#[allow(non_camel_case_types)]
pub type clEnqueueWaitSignalAMD_fn =
    Option<unsafe extern "C" fn(cl_command_queue, cl_mem, cl_uint, cl_uint, *const cl_event, *mut cl_event) -> cl_int>;
/// Signature of `clEnqueueWriteSignalAMD`.
#[allow(non_camel_case_types)]
pub type clEnqueueWriteSignalAMD_fn = Option<
    unsafe extern "C" fn(
        cl_command_queue,
        cl_mem,
        cl_uint,
        cl_ulong,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
>;
/// Signature of `clEnqueueMakeBuffersResidentAMD` (AMD's order:
/// `blocking_make_resident` before `bus_addresses`).
#[allow(non_camel_case_types)]
pub type clEnqueueMakeBuffersResidentAMD_fn = Option<
    unsafe extern "C" fn(
        cl_command_queue,
        cl_uint,
        *mut cl_mem,
        cl_bool,
        *mut cl_bus_address_amd,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
>;

/// The queue must be live; then the extension is not available.
fn queue_then_unsupported(name: &str, queue: cl_command_queue) -> cl_int {
    unsupported_for::<QueueObj>(name, queue.cast(), CL_INVALID_OPERATION)
}

/// `clEnqueueWaitSignalAMD`: `CL_INVALID_COMMAND_QUEUE` or
/// `CL_INVALID_OPERATION` (no bus-addressable memory yet).
pub(crate) unsafe extern "C" fn clEnqueueWaitSignalAMD(
    command_queue: cl_command_queue,
    _mem_object: cl_mem,
    _value: cl_uint,
    _num_events: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    queue_then_unsupported("clEnqueueWaitSignalAMD", command_queue)
}

/// `clEnqueueWriteSignalAMD`: `CL_INVALID_COMMAND_QUEUE` or
/// `CL_INVALID_OPERATION` (no bus-addressable memory yet).
pub(crate) unsafe extern "C" fn clEnqueueWriteSignalAMD(
    command_queue: cl_command_queue,
    _mem_object: cl_mem,
    _value: cl_uint,
    _offset: cl_ulong,
    _num_events: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    queue_then_unsupported("clEnqueueWriteSignalAMD", command_queue)
}

/// `clEnqueueMakeBuffersResidentAMD`: `CL_INVALID_COMMAND_QUEUE` or
/// `CL_INVALID_OPERATION` (no bus-addressable memory yet).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn clEnqueueMakeBuffersResidentAMD(
    command_queue: cl_command_queue,
    _num_mem_objects: cl_uint,
    _mem_objects: *mut cl_mem,
    _blocking_make_resident: cl_bool,
    _bus_addresses: *mut cl_bus_address_amd,
    _num_events: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    queue_then_unsupported("clEnqueueMakeBuffersResidentAMD", command_queue)
}
