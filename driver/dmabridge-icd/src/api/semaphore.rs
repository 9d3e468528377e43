//! `cl_khr_semaphore`, `cl_khr_external_semaphore` and
//! `cl_khr_external_semaphore_sync_fd`
//! ([`dmabridge::ext::khr_external::semaphore`]): semaphore handles, their
//! property list read as C gives it, and the entry points, reached through
//! `clGetExtensionFunctionAddressForPlatform`. Nothing exports:
//! `clGetSemaphoreHandleForTypeKHR` answers `CL_INVALID_VALUE` (no handle
//! type is in any semaphore's export list).

use std::ffi::c_void;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use dmabridge::ext::khr_external::semaphore::{self, semaphore_info, Semaphore, SemaphoreProperties};
use dmabridge::ext::khr_external::SEMAPHORE_HANDLE_SYNC_FD_KHR;
use opencl_sys::*;

use super::context::ContextObj;
use super::event::return_event;
use super::khr_memory::{read_properties, Enqueue};
use super::queue::queue;
use crate::entry::{object, slice, status, wait_list, Cl, ClRes};
use crate::handles::{self, Kind, Obj, Tag};
use crate::info::{get_info, Handles};

/// A semaphore, with its context's object and its properties as given.
#[derive(Debug)]
pub struct SemaphoreObj {
    sema: Arc<Semaphore>,
    context: Arc<Obj<ContextObj>>,
    properties: Vec<u64>,
}

impl Kind for SemaphoreObj {
    const TAG: Tag = Tag::Semaphore;
    const INVALID: cl_int = CL_INVALID_SEMAPHORE_KHR;

    fn notifier(&self) -> crate::notify::Notifier {
        self.context.inner.notify
    }
}

/// An fd property value: `CL_INVALID_PROPERTY` unless it is a
/// non-negative `int`.
///
/// # Safety
/// A valid fd stays open for the call.
unsafe fn fd_of<'a>(value: u64) -> ClRes<BorrowedFd<'a>> {
    match i32::try_from(value as i64) {
        // SAFETY: the caller's contract.
        Ok(fd) if fd >= 0 => Ok(unsafe { BorrowedFd::borrow_raw(fd) }),
        _ => Err(CL_INVALID_PROPERTY),
    }
}

/// `clCreateSemaphoreWithPropertiesKHR`: `CL_SEMAPHORE_TYPE_KHR`,
/// `CL_SEMAPHORE_HANDLE_SYNC_FD_KHR` (import), the device list and the
/// export types (ended by 0); any other property, or one given twice, is
/// `CL_INVALID_PROPERTY`; NULL properties are `CL_INVALID_VALUE` (no type).
pub(crate) unsafe extern "C" fn clCreateSemaphoreWithPropertiesKHR(
    context: cl_context,
    sema_props: *const cl_semaphore_properties_khr,
    errcode_ret: *mut cl_int,
) -> cl_semaphore_khr {
    // SAFETY: the C contract of `errcode_ret` and `sema_props`.
    unsafe {
        object("clCreateSemaphoreWithPropertiesKHR", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            // Debian's header names the device list CL_DEVICE_HANDLE_LIST_KHR,
            // current Khronos headers CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR.
            let names = [semaphore_info::DEVICE_HANDLE_LIST, semaphore_info::DEVICE_HANDLE_LIST_2023].map(u64::from);
            let list = read_properties(sema_props, &names)?;
            let mut props = SemaphoreProperties { devices: list.devices, ..Default::default() };
            for &(name, value) in &list.pairs {
                match name {
                    n if n == u64::from(semaphore_info::TYPE) && props.ty.is_none() => props.ty = Some(value),
                    n if n == u64::from(SEMAPHORE_HANDLE_SYNC_FD_KHR) && props.sync_fd.is_none() => {
                        props.sync_fd = Some(fd_of(value)?)
                    }
                    // The export list is read as one pair per type: any type
                    // asked for is refused anyway (no export).
                    n if n == u64::from(semaphore_info::EXPORT_HANDLE_TYPES) && props.export_types.is_none() => {
                        props.export_types = Some(if value == 0 { Vec::new() } else { vec![value] })
                    }
                    _ => return Err(CL_INVALID_PROPERTY),
                }
            }
            let sema = semaphore::create(&ctx.inner.ctx, &props).cl()?;
            let obj = SemaphoreObj { sema, context: ctx, properties: list.raw };
            Ok(handles::into_handle(handles::new_object(obj)).cast())
        })
    }
}

fn sema(handle: cl_semaphore_khr) -> ClRes<Arc<Obj<SemaphoreObj>>> {
    handles::get::<SemaphoreObj>(handle.cast())
}

/// The semaphores of a `(num, list)` pair: `CL_INVALID_VALUE` for none or
/// a count without a list, `CL_INVALID_SEMAPHORE_KHR` for a bad handle.
///
/// # Safety
/// `list` is NULL or readable for `num` handles.
unsafe fn semaphores(num: cl_uint, list: *const cl_semaphore_khr) -> ClRes<Vec<Arc<Semaphore>>> {
    if num == 0 || list.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    let hs = unsafe { slice(list, num as usize) };
    hs.iter().map(|&h| sema(h).map(|s| s.inner.sema.clone())).collect()
}

/// The body both enqueue entry points share: the checks of the C face,
/// then `f` (binary semaphores: the payloads, which may be NULL, are not
/// read).
///
/// # Safety
/// The C contract of the lists and `event`.
unsafe fn enqueue(
    name: &str,
    command_queue: cl_command_queue,
    (num, list): (cl_uint, *const cl_semaphore_khr),
    (num_events, event_wait_list): (cl_uint, *const cl_event),
    event: *mut cl_event,
    f: Enqueue<Semaphore>,
) -> cl_int {
    status(name, || {
        let q = queue(command_queue)?;
        // SAFETY: the caller's contract.
        unsafe {
            let sems = semaphores(num, list)?;
            let wait = wait_list(num_events, event_wait_list)?;
            let ev = f(&q.inner.queue, &sems, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueWaitSemaphoresKHR`.
pub(crate) unsafe extern "C" fn clEnqueueWaitSemaphoresKHR(
    command_queue: cl_command_queue,
    num_sema_objects: cl_uint,
    sema_objects: *const cl_semaphore_khr,
    _sema_payload_list: *const cl_semaphore_payload_khr,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let (sems, wait) = ((num_sema_objects, sema_objects), (num_events, event_wait_list));
    // SAFETY: the C contract of the lists and `event`.
    unsafe { enqueue("clEnqueueWaitSemaphoresKHR", command_queue, sems, wait, event, semaphore::enqueue_wait) }
}

/// `clEnqueueSignalSemaphoresKHR`.
pub(crate) unsafe extern "C" fn clEnqueueSignalSemaphoresKHR(
    command_queue: cl_command_queue,
    num_sema_objects: cl_uint,
    sema_objects: *const cl_semaphore_khr,
    _sema_payload_list: *const cl_semaphore_payload_khr,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let (sems, wait) = ((num_sema_objects, sema_objects), (num_events, event_wait_list));
    // SAFETY: the C contract of the lists and `event`.
    unsafe { enqueue("clEnqueueSignalSemaphoresKHR", command_queue, sems, wait, event, semaphore::enqueue_signal) }
}

/// `clGetSemaphoreInfoKHR`: the core's answers; the reference count and the
/// properties as given are the ICD's.
pub(crate) unsafe extern "C" fn clGetSemaphoreInfoKHR(
    sema_object: cl_semaphore_khr,
    param_name: cl_semaphore_info_khr,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetSemaphoreInfoKHR", param_value_size, param_value, param_value_size_ret, || {
            let s = sema(sema_object)?;
            let value = match param_name {
                semaphore_info::REFERENCE_COUNT => crate::info::reference_count(&s),
                semaphore_info::PROPERTIES => crate::info::properties(&s.inner.properties),
                _ => s.inner.sema.info(param_name).cl()?,
            };
            Ok((value, Handles::of_context(&s.inner.context)))
        })
    }
}

/// `clRetainSemaphoreKHR`.
pub(crate) unsafe extern "C" fn clRetainSemaphoreKHR(sema_object: cl_semaphore_khr) -> cl_int {
    status("clRetainSemaphoreKHR", || handles::retain::<SemaphoreObj>(sema_object.cast()))
}

/// `clReleaseSemaphoreKHR`.
pub(crate) unsafe extern "C" fn clReleaseSemaphoreKHR(sema_object: cl_semaphore_khr) -> cl_int {
    status("clReleaseSemaphoreKHR", || handles::release::<SemaphoreObj>(sema_object.cast()))
}

/// `clGetSemaphoreHandleForTypeKHR`: no semaphore exports a handle, so a
/// valid semaphore answers `CL_INVALID_VALUE` for every type.
pub(crate) unsafe extern "C" fn clGetSemaphoreHandleForTypeKHR(
    sema_object: cl_semaphore_khr,
    _device: cl_device_id,
    _handle_type: cl_external_semaphore_handle_type_khr,
    _handle_size: usize,
    _handle_ptr: *mut c_void,
    _handle_size_ret: *mut usize,
) -> cl_int {
    status("clGetSemaphoreHandleForTypeKHR", || {
        sema(sema_object)?;
        Err(CL_INVALID_VALUE)
    })
}

/// `clReImportSemaphoreSyncFdKHR`: the semaphore takes a new fence (a
/// duplicate of `fd`; no re-import property is defined: any is
/// `CL_INVALID_PROPERTY`).
pub(crate) unsafe extern "C" fn clReImportSemaphoreSyncFdKHR(
    sema_object: cl_semaphore_khr,
    reimport_props: *mut cl_semaphore_reimport_properties_khr,
    fd: std::ffi::c_int,
) -> cl_int {
    status("clReImportSemaphoreSyncFdKHR", || {
        let s = sema(sema_object)?;
        // SAFETY: the C contract: NULL or a zero-terminated list.
        if !reimport_props.is_null() && unsafe { reimport_props.read_unaligned() } != 0 {
            return Err(CL_INVALID_PROPERTY);
        }
        if fd < 0 {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the application keeps `fd` open during the call; it is
        // duplicated.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        s.inner.sema.reimport_sync_fd(fd).cl()
    })
}
