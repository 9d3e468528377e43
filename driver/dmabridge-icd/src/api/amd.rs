//! `cl_amd_bus_addressable_memory` (seed 002; `dmabridge::ext::amd_bus`),
//! in AMD's header order (`blocking_make_resident` before `bus_addresses`,
//! not the text's section 5.4.4 typo). `clCreateBuffer` takes the two flags
//! itself (the core's `Buffer::create`). The extension string is listed
//! only where buffers can be made resident (a VFIO domain); the entry
//! points are reachable through `clGetExtensionFunctionAddressForPlatform`
//! everywhere, and answer the seed's codes.

use dmabridge::ext::amd_bus;
use opencl_sys::*;

use super::event::return_event;
use super::memobj::mem;
use super::queue::queue;
use crate::entry::{slice, status, wait_list, Cl};

/// `cl_bus_address_amd` (AMD's `CL/cl_ext.h`): the core's
/// [`amd_bus::BusAddress`], same layout.
#[allow(non_camel_case_types)]
pub type cl_bus_address_amd = amd_bus::BusAddress;

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

/// `clEnqueueWaitSignalAMD`: `CL_INVALID_COMMAND_QUEUE`,
/// `CL_INVALID_MEM_OBJECT` for an invalid handle or a buffer without
/// `CL_MEM_BUS_ADDRESSABLE_AMD`, `CL_INVALID_VALUE` before it is resident.
pub(crate) unsafe extern "C" fn clEnqueueWaitSignalAMD(
    command_queue: cl_command_queue,
    mem_object: cl_mem,
    value: cl_uint,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueWaitSignalAMD", || {
        let q = queue(command_queue)?;
        let m = mem(mem_object)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events, event_wait_list)?;
            let ev = amd_bus::enqueue_wait_signal(&q.inner.queue, &m.inner.buffer, value, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueWriteSignalAMD`: `CL_INVALID_COMMAND_QUEUE`,
/// `CL_INVALID_MEM_OBJECT` (invalid handle, not
/// `CL_MEM_EXTERNAL_PHYSICAL_AMD`), `CL_INVALID_BUFFER_SIZE` (offset past
/// the end), `CL_INVALID_VALUE` (a marker that does not increase).
pub(crate) unsafe extern "C" fn clEnqueueWriteSignalAMD(
    command_queue: cl_command_queue,
    mem_object: cl_mem,
    value: cl_uint,
    offset: cl_ulong,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueWriteSignalAMD", || {
        let q = queue(command_queue)?;
        let m = mem(mem_object)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events, event_wait_list)?;
            let ev = amd_bus::enqueue_write_signal(&q.inner.queue, &m.inner.buffer, value, offset, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueMakeBuffersResidentAMD`: `CL_INVALID_COMMAND_QUEUE`;
/// `CL_INVALID_OPERATION` for NULL `mem_objects` or `bus_addresses` with a
/// count above 0, and for an entry that is not a valid buffer created with
/// `CL_MEM_BUS_ADDRESSABLE_AMD`; `CL_INVALID_VALUE` for a count of 0;
/// `CL_OUT_OF_HOST_MEMORY` when a buffer cannot be made resident (nothing
/// is written to `bus_addresses` then). The addresses are written when the
/// call returns, blocking or not.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn clEnqueueMakeBuffersResidentAMD(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *mut cl_mem,
    blocking_make_resident: cl_bool,
    bus_addresses: *mut cl_bus_address_amd,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueMakeBuffersResidentAMD", || {
        let q = queue(command_queue)?;
        if num_mem_objects > 0 && (mem_objects.is_null() || bus_addresses.is_null()) {
            return Err(CL_INVALID_OPERATION);
        }
        // SAFETY: the C contract: `num_mem_objects` readable handles
        // (non-NULL when the count is above 0, checked above).
        let handles = unsafe { slice(mem_objects.cast_const(), num_mem_objects as usize) };
        let buffers = handles
            .iter()
            .map(|&h| mem(h).map(|m| m.inner.buffer.clone()).map_err(|_| CL_INVALID_OPERATION))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: the C contract of the wait list, `bus_addresses` (room
        // for `num_mem_objects` entries) and `event`.
        unsafe {
            let wait = wait_list(num_events, event_wait_list)?;
            let (at, ev) =
                amd_bus::make_buffers_resident(&q.inner.queue, &buffers, blocking_make_resident != CL_FALSE, &wait)
                    .cl()?;
            for (i, a) in at.into_iter().enumerate() {
                bus_addresses.add(i).write_unaligned(a);
            }
            return_event(&q, ev, event)
        }
    })
}
