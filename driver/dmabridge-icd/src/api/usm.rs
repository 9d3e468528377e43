//! cl_intel_unified_shared_memory entry points (`ext::usm`,
//! `ext::usm_commands`), reached through
//! `clGetExtensionFunctionAddressForPlatform` with the signatures of
//! Khronos `CL/cl_ext.h`.

use std::ffi::c_void;

use dmabridge::ext::usm::{self};
use dmabridge::ext::usm_commands;
use opencl_sys::*;

use super::context::ContextObj;
use super::event::return_event;
use super::queue::queue;
use crate::entry::{object_with, pattern_bytes, status, status_with, wait_list, Cl};
use crate::handles::{self};
use crate::info::{get_info, Handles};

/// A zero-terminated `cl_mem_properties_intel` list as (name, value) pairs.
///
/// # Safety
/// `props` is NULL or a zero-terminated list of pairs.
pub(crate) unsafe fn properties(props: *const cl_mem_properties_intel) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if props.is_null() {
        return out;
    }
    for i in (0..).step_by(2) {
        // SAFETY: the list is zero-terminated; reading stops at the 0 name,
        // and a non-zero name is followed by its value.
        let (name, value) = unsafe {
            let name = props.add(i).read_unaligned();
            if name == 0 {
                break;
            }
            (name, props.add(i + 1).read_unaligned())
        };
        out.push((name, value));
    }
    out
}

/// Runs `f` on the property list `props` ([`properties`]), with no list
/// built for the common NULL.
///
/// # Safety
/// `props` is NULL or a zero-terminated list of pairs.
#[inline(always)]
unsafe fn with_properties<R>(props: *const cl_mem_properties_intel, f: impl FnOnce(&[(u64, u64)]) -> R) -> R {
    if props.is_null() {
        f(&[])
    } else {
        // SAFETY: the caller's contract.
        f(&unsafe { properties(props) })
    }
}

/// `clHostMemAllocINTEL`.
pub(crate) unsafe extern "C" fn clHostMemAllocINTEL(
    context: cl_context,
    props: *const cl_mem_properties_intel,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: the C contract of `errcode_ret` and `props`.
    unsafe {
        object_with::<ContextObj, _>("clHostMemAllocINTEL", errcode_ret, context.cast(), |ctx| {
            let p = with_properties(props, |props| usm::host_mem_alloc(&ctx.ctx, props, size, alignment)).cl()?;
            Ok(p.as_ptr().cast())
        })
    }
}

/// `clDeviceMemAllocINTEL`.
pub(crate) unsafe extern "C" fn clDeviceMemAllocINTEL(
    context: cl_context,
    device: cl_device_id,
    props: *const cl_mem_properties_intel,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: the C contract of `errcode_ret` and `props`.
    unsafe {
        object_with::<ContextObj, _>("clDeviceMemAllocINTEL", errcode_ret, context.cast(), |ctx| {
            let dev = handles::device(device.cast())?;
            let device = &dev.inner.device;
            let p =
                with_properties(props, |props| usm::device_mem_alloc(&ctx.ctx, device, props, size, alignment)).cl()?;
            Ok(p.as_ptr().cast())
        })
    }
}

/// `clSharedMemAllocINTEL` (`device` may be NULL).
pub(crate) unsafe extern "C" fn clSharedMemAllocINTEL(
    context: cl_context,
    device: cl_device_id,
    props: *const cl_mem_properties_intel,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: the C contract of `errcode_ret` and `props`.
    unsafe {
        object_with::<ContextObj, _>("clSharedMemAllocINTEL", errcode_ret, context.cast(), |ctx| {
            let dev = if device.is_null() { None } else { Some(handles::device(device.cast())?) };
            let dev = dev.as_ref().map(|d| &d.inner.device);
            let p =
                with_properties(props, |props| usm::shared_mem_alloc(&ctx.ctx, dev, props, size, alignment)).cl()?;
            Ok(p.as_ptr().cast())
        })
    }
}

/// `clMemFreeINTEL`.
pub(crate) unsafe extern "C" fn clMemFreeINTEL(context: cl_context, ptr: *mut c_void) -> cl_int {
    status_with::<ContextObj>("clMemFreeINTEL", context.cast(), |ctx| usm::mem_free(&ctx.ctx, ptr.cast()).cl())
}

/// `clMemBlockingFreeINTEL`.
///
/// Takes a counted reference to its context, not the borrow of the other
/// USM entry points (`hazard.rs`), on purpose: a borrow makes whoever drops
/// the context's last reference wait until the borrowing call ends, which
/// is sound only for calls that wait for nobody. This one waits for the
/// commands using `ptr`, which run on a queue's thread — and that thread
/// can be the one dropping the last reference (an event callback that
/// releases the context, and the callback's hold on its event, go there):
/// it would wait for this call, and this call for it, forever. The count
/// costs two atomic operations on a call that waits for commands anyway.
/// `threads::blocking_free_while_a_callback_releases_the_context`
/// (tests/icd/threads_test.c) hangs with a borrow here.
pub(crate) unsafe extern "C" fn clMemBlockingFreeINTEL(context: cl_context, ptr: *mut c_void) -> cl_int {
    status("clMemBlockingFreeINTEL", || {
        let ctx = handles::get::<ContextObj>(context.cast())?;
        usm_commands::mem_blocking_free(&ctx.inner.ctx, ptr.cast()).cl()
    })
}

/// `clGetMemAllocInfoINTEL`.
pub(crate) unsafe extern "C" fn clGetMemAllocInfoINTEL(
    context: cl_context,
    ptr: *const c_void,
    param_name: cl_mem_info_intel,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetMemAllocInfoINTEL", param_value_size, param_value, param_value_size_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            let info = usm::get_mem_alloc_info(&ctx.inner.ctx, ptr.cast(), param_name).cl()?;
            Ok((info.into(), Handles::default()))
        })
    }
}

/// `clEnqueueMemFillINTEL`.
pub(crate) unsafe extern "C" fn clEnqueueMemFillINTEL(
    command_queue: cl_command_queue,
    dst_ptr: *mut c_void,
    pattern: *const c_void,
    pattern_size: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueMemFillINTEL", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract: the wait list, `pattern` holding `pattern_size`
        // bytes (or NULL), `dst_ptr` valid for `size` bytes until completion, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let pattern = pattern_bytes(pattern, pattern_size)?;
            let ev = usm_commands::enqueue_mem_fill(&q.inner.queue, dst_ptr.cast(), pattern, size, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueMemcpyINTEL`.
pub(crate) unsafe extern "C" fn clEnqueueMemcpyINTEL(
    command_queue: cl_command_queue,
    blocking: cl_bool,
    dst_ptr: *mut c_void,
    src_ptr: *const c_void,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueMemcpyINTEL", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract: the wait list, `dst_ptr`/`src_ptr` valid
        // for `size` bytes until the command completes, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = usm_commands::enqueue_memcpy(
                &q.inner.queue,
                blocking != CL_FALSE,
                dst_ptr.cast(),
                src_ptr.cast(),
                size,
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueMigrateMemINTEL`.
pub(crate) unsafe extern "C" fn clEnqueueMigrateMemINTEL(
    command_queue: cl_command_queue,
    ptr: *const c_void,
    size: usize,
    flags: cl_mem_migration_flags,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueMigrateMemINTEL", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = usm_commands::enqueue_migrate_mem(&q.inner.queue, ptr.cast(), size, flags, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueMemAdviseINTEL`.
pub(crate) unsafe extern "C" fn clEnqueueMemAdviseINTEL(
    command_queue: cl_command_queue,
    ptr: *const c_void,
    size: usize,
    advice: cl_mem_advice_intel,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueMemAdviseINTEL", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = usm_commands::enqueue_mem_advise(&q.inner.queue, ptr.cast(), size, advice, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}
