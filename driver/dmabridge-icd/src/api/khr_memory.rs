//! `cl_khr_external_memory` + `cl_khr_external_memory_dma_buf`
//! ([`dmabridge::ext::khr_external::memory`]): the property list of
//! `clCreateBufferWithProperties` read as C gives it (a device list inside
//! the pairs), and the acquire/release entry points, reached through
//! `clGetExtensionFunctionAddressForPlatform`.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use dmabridge::error::ClResult;
use dmabridge::ext::khr_external::{memory, DEVICE_HANDLE_LIST_KHR, EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR};
use dmabridge::runtime::buffer::Buffer;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::queue::Queue;
use opencl_sys::*;

use super::context::ContextObj;
use super::event::return_event;
use super::memobj::{buffer_handle, mem_object};
use super::queue::queue;
use crate::entry::{slice, status, wait_list, Cl, ClRes};
use crate::handles::{self, DeviceObj};

/// The longest property list read (a guard against a list without its 0).
const MAX_PROPERTIES: usize = 4096;

/// A zero-terminated property list with device lists in it, read as C
/// gives it: `(name, value)` pairs, except that `CL_DEVICE_HANDLE_LIST_KHR`
/// is followed by device handles up to `CL_DEVICE_HANDLE_LIST_END_KHR`.
#[derive(Debug, Default)]
pub(crate) struct PropertyList {
    /// Every word read, with the terminating 0 (empty for NULL).
    pub raw: Vec<u64>,
    /// The plain pairs, in order.
    pub pairs: Vec<(u64, u64)>,
    /// The devices of `CL_DEVICE_HANDLE_LIST_KHR`, if given.
    pub devices: Option<Vec<Arc<Device>>>,
}

/// Reads `props` (NULL: empty); a name in `list_names` starts a device
/// list. `CL_INVALID_PROPERTY` for a device list given twice or a list
/// longer than [`MAX_PROPERTIES`] words, `CL_INVALID_DEVICE` for a handle
/// in the device list that is no device.
///
/// # Safety
/// `props` is NULL or a zero-terminated list as described.
pub(crate) unsafe fn read_properties(props: *const u64, list_names: &[u64]) -> ClRes<PropertyList> {
    let mut out = PropertyList::default();
    if props.is_null() {
        return Ok(out);
    }
    let mut i = 0;
    // SAFETY: the caller's contract: every word up to the terminating 0 is
    // readable, and a name is followed by its value (or its device list).
    let at = |i: usize| unsafe { props.add(i).read_unaligned() };
    loop {
        if i >= MAX_PROPERTIES {
            return Err(CL_INVALID_PROPERTY);
        }
        let name = at(i);
        out.raw.push(name);
        i += 1;
        if name == 0 {
            return Ok(out);
        }
        if list_names.contains(&name) {
            if out.devices.is_some() {
                return Err(CL_INVALID_PROPERTY);
            }
            let mut devices = Vec::new();
            loop {
                if i >= MAX_PROPERTIES {
                    return Err(CL_INVALID_PROPERTY);
                }
                let h = at(i);
                out.raw.push(h);
                i += 1;
                if h == 0 {
                    break;
                }
                let d = handles::get::<DeviceObj>(h as usize as *const std::ffi::c_void)?;
                devices.push(d.inner.device.clone());
            }
            out.devices = Some(devices);
            continue;
        }
        let value = at(i);
        out.raw.push(value);
        i += 1;
        out.pairs.push((name, value));
    }
}

/// The properties of `clCreateBufferWithProperties` and
/// `clCreateImageWithProperties`: `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`
/// (the fd) and `CL_MEM_DEVICE_HANDLE_LIST_KHR`; any other property, or one
/// given twice, is `CL_INVALID_PROPERTY`, a negative fd `CL_INVALID_VALUE`.
///
/// # Safety
/// `properties` is NULL or a zero-terminated list; the fd in it stays open
/// during the call (the import duplicates it).
pub(crate) unsafe fn external_properties(
    properties: *const cl_mem_properties,
) -> ClRes<(PropertyList, memory::MemProperties<'static>)> {
    // SAFETY: the caller's contract.
    let mut list = unsafe { read_properties(properties, &[DEVICE_HANDLE_LIST_KHR]) }?;
    let mut fd = None;
    for &(name, value) in &list.pairs {
        if name != u64::from(EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR) || fd.replace(value).is_some() {
            return Err(CL_INVALID_PROPERTY);
        }
    }
    let fd = match fd.map(|v| v as i64) {
        None => None,
        Some(v) if !(0..=i64::from(i32::MAX)).contains(&v) => return Err(CL_INVALID_VALUE),
        // SAFETY: the application keeps the fd open during the call (the
        // caller's contract; the props do not outlive the entry point).
        Some(v) => Some(unsafe { BorrowedFd::borrow_raw(v as i32) }),
    };
    let props = memory::MemProperties { dma_buf: fd, devices: list.devices.take() };
    Ok((list, props))
}

/// `clCreateBufferWithProperties`: `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`
/// (the fd) and `CL_MEM_DEVICE_HANDLE_LIST_KHR`; any other property, or one
/// given twice, is `CL_INVALID_PROPERTY`, a negative fd `CL_INVALID_VALUE`.
/// The list is kept as given for `CL_MEM_PROPERTIES`.
pub(crate) unsafe extern "C" fn clCreateBufferWithProperties(
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut std::ffi::c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the C contract of `errcode_ret` and `properties`.
    unsafe {
        crate::entry::object("clCreateBufferWithProperties", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            let (list, props) = external_properties(properties)?;
            // SAFETY: `clCreateBuffer`'s contract of `host_ptr` (refused
            // with a dma-buf).
            let buffer =
                memory::create_buffer_with_properties(&ctx.inner.ctx, &props, flags, size, host_ptr.cast()).cl()?;
            Ok(buffer_handle(buffer, ctx, list.raw))
        })
    }
}

/// The buffers of a `(num_mem_objects, mem_objects)` pair:
/// `CL_INVALID_VALUE` when the count and the pointer disagree (0 with a
/// list, a count without one), `CL_INVALID_MEM_OBJECT` for a bad handle.
///
/// # Safety
/// `mem_objects` is NULL or readable for `num` handles.
unsafe fn buffers(num: cl_uint, mem_objects: *const cl_mem) -> ClRes<Vec<Arc<Buffer>>> {
    if (num == 0) != mem_objects.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract; `num > 0` implies a non-NULL list.
    let hs = unsafe { slice(mem_objects, num as usize) };
    // An image counts as its storage, which an import made external.
    hs.iter().map(|&h| mem_object(h).map(|m| m.inner.buffer.clone())).collect()
}

/// The signature both entry points share.
#[allow(non_camel_case_types)]
pub type clEnqueueExternalMemObjectsKHR_fn = Option<
    unsafe extern "C" fn(cl_command_queue, cl_uint, *const cl_mem, cl_uint, *const cl_event, *mut cl_event) -> cl_int,
>;

/// A core enqueue function over objects of type `T`.
pub(crate) type Enqueue<T> = fn(&Arc<Queue>, &[Arc<T>], &[Event]) -> ClResult<Event>;

/// The body both entry points share: the checks of the C face, then `f`.
///
/// # Safety
/// The C contract of the lists and `event`.
#[allow(clippy::too_many_arguments)]
unsafe fn enqueue(
    name: &str,
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    f: Enqueue<Buffer>,
) -> cl_int {
    status(name, || {
        let q = queue(command_queue)?;
        // SAFETY: the caller's contract.
        unsafe {
            let bufs = buffers(num_mem_objects, mem_objects)?;
            let wait = wait_list(num_events, event_wait_list)?;
            let ev = f(&q.inner.queue, &bufs, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueAcquireExternalMemObjectsKHR`.
pub(crate) unsafe extern "C" fn clEnqueueAcquireExternalMemObjectsKHR(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let name = "clEnqueueAcquireExternalMemObjectsKHR";
    // SAFETY: the C contract of the lists and `event`.
    unsafe {
        enqueue(
            name,
            command_queue,
            num_mem_objects,
            mem_objects,
            num_events,
            event_wait_list,
            event,
            memory::enqueue_acquire,
        )
    }
}

/// `clEnqueueReleaseExternalMemObjectsKHR`.
pub(crate) unsafe extern "C" fn clEnqueueReleaseExternalMemObjectsKHR(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    num_events: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let name = "clEnqueueReleaseExternalMemObjectsKHR";
    // SAFETY: the C contract of the lists and `event`.
    unsafe {
        enqueue(
            name,
            command_queue,
            num_mem_objects,
            mem_objects,
            num_events,
            event_wait_list,
            event,
            memory::enqueue_release,
        )
    }
}
