//! SVM entry points (`ext::svm`, `ext::svm_commands`).

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::ext::{svm, svm_commands};
use dmabridge::runtime::queue::Queue;
use opencl_sys::*;

use super::context::ContextObj;
use super::event::return_event;
use super::queue::queue;
use crate::entry::{pattern_bytes, slice, status, status_with, wait_list, Cl};
use crate::handles;

/// `clSVMAlloc`: NULL on any error (it has no error code).
pub(crate) unsafe extern "C" fn clSVMAlloc(
    context: cl_context,
    flags: cl_svm_mem_flags,
    size: usize,
    alignment: cl_uint,
) -> *mut c_void {
    let mut code = 0;
    // SAFETY: `code` is a local.
    unsafe {
        crate::entry::object_with::<ContextObj, _>("clSVMAlloc", &mut code, context.cast(), |ctx| {
            Ok(svm::svm_alloc(&ctx.ctx, flags, size, alignment).cl()?.as_ptr().cast())
        })
    }
}

/// `clSVMFree`: ignores an invalid context and pointers that are not SVM
/// allocations of it.
pub(crate) unsafe extern "C" fn clSVMFree(context: cl_context, svm_pointer: *mut c_void) {
    status_with::<ContextObj>("clSVMFree", context.cast(), |ctx| {
        svm::svm_free(&ctx.ctx, svm_pointer.cast());
        Ok(())
    });
}

/// The callback of `clEnqueueSVMFree`.
type SvmFreeFn = Option<unsafe extern "C" fn(cl_command_queue, cl_uint, *mut *mut c_void, *mut c_void)>;

/// The application's `user_data`, handed back untouched.
struct UserData(*mut c_void);
// SAFETY: an opaque word only passed back to the application's callback.
unsafe impl Send for UserData {}

/// `clEnqueueSVMFree`.
pub(crate) unsafe extern "C" fn clEnqueueSVMFree(
    command_queue: cl_command_queue,
    num_svm_pointers: cl_uint,
    svm_pointers: *mut *mut c_void,
    pfn_free_func: SvmFreeFn,
    user_data: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueSVMFree", || {
        let q = queue(command_queue)?;
        if (num_svm_pointers == 0) != svm_pointers.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: the wait list, `svm_pointers` holding
        // `num_svm_pointers` entries, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ptrs: Vec<*mut u8> = slice(svm_pointers, num_svm_pointers as usize).iter().map(|p| p.cast()).collect();
            let callback = pfn_free_func.map(|f| {
                let (keep, data) = (q.clone(), UserData(user_data));
                Box::new(move |_: &Arc<Queue>, ptrs: &[*mut u8]| {
                    let data = data;
                    let mut list: Vec<*mut c_void> = ptrs.iter().map(|p| p.cast()).collect();
                    // SAFETY: the application's callback with the arguments
                    // OpenCL defines; `keep` keeps the queue handle valid.
                    f(handles::handle_of(&keep).cast(), list.len() as cl_uint, list.as_mut_ptr(), data.0);
                }) as svm_commands::SvmFreeCallback
            });
            let ev = svm_commands::enqueue_svm_free(&q.inner.queue, &ptrs, callback, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueSVMMemcpy`.
pub(crate) unsafe extern "C" fn clEnqueueSVMMemcpy(
    command_queue: cl_command_queue,
    blocking_copy: cl_bool,
    dst_ptr: *mut c_void,
    src_ptr: *const c_void,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueSVMMemcpy", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract: the wait list, both pointers valid for
        // `size` bytes until the command completes, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = svm_commands::enqueue_svm_memcpy(
                &q.inner.queue,
                blocking_copy != CL_FALSE,
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

/// `clEnqueueSVMMemFill`.
pub(crate) unsafe extern "C" fn clEnqueueSVMMemFill(
    command_queue: cl_command_queue,
    svm_ptr: *mut c_void,
    pattern: *const c_void,
    pattern_size: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueSVMMemFill", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract: the wait list, `pattern` holding
        // `pattern_size` bytes (or NULL), `svm_ptr` valid for `size` bytes, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let pattern = pattern_bytes(pattern, pattern_size)?;
            let ev = svm_commands::enqueue_svm_mem_fill(&q.inner.queue, svm_ptr.cast(), pattern, size, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueSVMMap`.
pub(crate) unsafe extern "C" fn clEnqueueSVMMap(
    command_queue: cl_command_queue,
    blocking_map: cl_bool,
    flags: cl_map_flags,
    svm_ptr: *mut c_void,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueSVMMap", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = svm_commands::enqueue_svm_map(
                &q.inner.queue,
                blocking_map != CL_FALSE,
                flags,
                svm_ptr.cast(),
                size,
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueSVMUnmap`.
pub(crate) unsafe extern "C" fn clEnqueueSVMUnmap(
    command_queue: cl_command_queue,
    svm_ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueSVMUnmap", || {
        let q = queue(command_queue)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = svm_commands::enqueue_svm_unmap(&q.inner.queue, svm_ptr.cast(), &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueSVMMigrateMem` (`sizes` may be NULL: whole allocations).
pub(crate) unsafe extern "C" fn clEnqueueSVMMigrateMem(
    command_queue: cl_command_queue,
    num_svm_pointers: cl_uint,
    svm_pointers: *mut *const c_void,
    sizes: *const usize,
    flags: cl_mem_migration_flags,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueSVMMigrateMem", || {
        let q = queue(command_queue)?;
        if num_svm_pointers == 0 || svm_pointers.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: the wait list, `svm_pointers` (and `sizes`
        // when given) holding `num_svm_pointers` entries, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let n = num_svm_pointers as usize;
            let ptrs: Vec<*const u8> = slice(svm_pointers, n).iter().map(|p| p.cast()).collect();
            let sizes = (!sizes.is_null()).then(|| slice(sizes, n));
            let ev = svm_commands::enqueue_svm_migrate_mem(&q.inner.queue, &ptrs, sizes, flags, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}
