//! Buffer entry points (`runtime::buffer`: creation, sub-buffers, queries,
//! destructor callbacks, and the commands of `commands`, `rect` and `map`).

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::ext;
use dmabridge::runtime::buffer::rect::{self, CopyRect, HostRect};
use dmabridge::runtime::buffer::{commands, map, mem_info, Buffer};
use dmabridge::runtime::event::command_type;
use dmabridge::runtime::image::Image;
use opencl_sys::*;

use super::context::ContextObj;
use super::event::return_event;
use super::queue::queue;
use crate::entry::{object, pattern_bytes, slice, status, wait_list, Cl, ClRes};
use crate::handles::{self, Kind, Obj, Tag};
use crate::info::{get_info, Handles};

/// A buffer, sub-buffer or image, with the objects its info answers name
/// (its context, a sub-buffer's parent, an image's buffer: kept alive so
/// those handles stay valid) and the properties it was created with.
#[derive(Debug)]
pub struct MemObj {
    /// The core buffer; for an image, the storage holding its pixels.
    pub buffer: Arc<Buffer>,
    /// The core image, for an image (`None` for buffers).
    pub image: Option<Arc<Image>>,
    /// Its context's object.
    pub context: Arc<Obj<ContextObj>>,
    /// A sub-buffer's parent object, or the buffer object an image was made
    /// from.
    pub(crate) parent: Option<Arc<Obj<MemObj>>>,
    /// `CL_MEM_PROPERTIES`: as given, with its 0 (empty for NULL and for
    /// `clCreateBuffer`).
    pub(crate) properties: Vec<cl_mem_properties>,
}

impl Kind for MemObj {
    const TAG: Tag = Tag::Mem;
    const INVALID: cl_int = CL_INVALID_MEM_OBJECT;

    fn notifier(&self) -> crate::notify::Notifier {
        self.context.inner.notify
    }
}

/// The buffer object behind a handle: an image is `CL_INVALID_MEM_OBJECT`
/// where a buffer is asked for.
pub(crate) fn mem(handle: cl_mem) -> ClRes<Arc<Obj<MemObj>>> {
    let m = handles::get::<MemObj>(handle.cast())?;
    if m.inner.image.is_some() {
        return Err(CL_INVALID_MEM_OBJECT);
    }
    Ok(m)
}

/// The memory object behind a handle, buffer or image (the entry points
/// of every `cl_mem`: info, destructor callbacks, unmap, migration).
pub(crate) fn mem_object(handle: cl_mem) -> ClRes<Arc<Obj<MemObj>>> {
    handles::get::<MemObj>(handle.cast())
}

/// The application's `user_data`, handed back untouched.
pub(crate) struct UserData(pub(crate) *mut c_void);
// SAFETY: an opaque word only passed back to the application's callback,
// which OpenCL allows to run on any thread.
unsafe impl Send for UserData {}

fn new_buffer(
    context: cl_context,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
    properties: Vec<cl_mem_properties>,
) -> ClRes<cl_mem> {
    let ctx = handles::get::<ContextObj>(context.cast())?;
    // The C contract of `clCreateBuffer`: with USE_HOST_PTR the application
    // keeps `host_ptr` valid for `size` bytes for the buffer's life and
    // touches it only while mapped; with COPY_HOST_PTR it is readable now.
    // SAFETY: that contract is `ext::create_buffer`'s.
    let buffer = unsafe { ext::create_buffer(&ctx.inner.ctx, flags, size, host_ptr.cast()) }.cl()?;
    Ok(buffer_handle(buffer, ctx, properties))
}

/// The handle of a new buffer (not a sub-buffer) of `context`, with its
/// `CL_MEM_PROPERTIES`.
pub(crate) fn buffer_handle(
    buffer: Arc<Buffer>,
    context: Arc<Obj<ContextObj>>,
    properties: Vec<cl_mem_properties>,
) -> cl_mem {
    let obj = MemObj { buffer, image: None, context, parent: None, properties };
    handles::into_handle(handles::new_object(obj)).cast()
}

/// `clCreateBuffer`.
pub(crate) unsafe extern "C" fn clCreateBuffer(
    context: cl_context,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the C contract of `errcode_ret`.
    unsafe { object("clCreateBuffer", errcode_ret, || new_buffer(context, flags, size, host_ptr, Vec::new())) }
}

/// `clCreateSubBuffer` (`CL_BUFFER_CREATE_TYPE_REGION`: `buffer_create_info`
/// is a `cl_buffer_region`).
pub(crate) unsafe extern "C" fn clCreateSubBuffer(
    buffer: cl_mem,
    flags: cl_mem_flags,
    buffer_create_type: cl_buffer_create_type,
    buffer_create_info: *const c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the C contract of `errcode_ret` and `buffer_create_info`.
    unsafe {
        object("clCreateSubBuffer", errcode_ret, || {
            let parent = mem(buffer)?;
            // The create type is checked first: only then is the layout of
            // `buffer_create_info` known.
            if buffer_create_type != CL_BUFFER_CREATE_TYPE_REGION || buffer_create_info.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            let region = buffer_create_info.cast::<cl_buffer_region>().read_unaligned();
            let sub =
                Buffer::create_sub_buffer(&parent.inner.buffer, flags, buffer_create_type, region.origin, region.size)
                    .cl()?;
            let obj = MemObj {
                buffer: sub,
                image: None,
                context: parent.inner.context.clone(),
                parent: Some(parent),
                properties: Vec::new(),
            };
            Ok(handles::into_handle(handles::new_object(obj)).cast())
        })
    }
}

/// `clRetainMemObject`.
pub(crate) unsafe extern "C" fn clRetainMemObject(memobj: cl_mem) -> cl_int {
    status("clRetainMemObject", || handles::retain::<MemObj>(memobj.cast()))
}

/// `clReleaseMemObject`: the buffer's memory (and its destructor callbacks)
/// goes once no queued command, sub-buffer or other object holds it.
pub(crate) unsafe extern "C" fn clReleaseMemObject(memobj: cl_mem) -> cl_int {
    status("clReleaseMemObject", || handles::release::<MemObj>(memobj.cast()))
}

/// `clGetMemObjectInfo`: the core's answers; the properties as given and
/// the handle's reference count are the ICD's.
pub(crate) unsafe extern "C" fn clGetMemObjectInfo(
    memobj: cl_mem,
    param_name: cl_mem_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetMemObjectInfo", param_value_size, param_value, param_value_size_ret, || {
            let m = mem_object(memobj)?;
            let value = match (param_name, &m.inner.image) {
                (mem_info::REFERENCE_COUNT, _) => crate::info::reference_count(&m),
                (mem_info::PROPERTIES, _) => crate::info::properties(&m.inner.properties),
                (_, Some(image)) => image.mem_info(param_name).cl()?,
                (_, None) => m.inner.buffer.info(param_name).cl()?,
            };
            Ok((value, Handles { mem: m.inner.parent.clone(), ..Handles::of_context(&m.inner.context) }))
        })
    }
}

/// The C callback of `clSetMemObjectDestructorCallback`.
type MemNotify = Option<unsafe extern "C" fn(cl_mem, *mut c_void)>;

/// `clSetMemObjectDestructorCallback`: the callback runs (with no dmabridge
/// lock held) once the buffer's memory is released, with the handle the
/// buffer had (for identification only: the object is gone by then).
pub(crate) unsafe extern "C" fn clSetMemObjectDestructorCallback(
    memobj: cl_mem,
    pfn_notify: MemNotify,
    user_data: *mut c_void,
) -> cl_int {
    status("clSetMemObjectDestructorCallback", || {
        let m = mem_object(memobj)?;
        let f = pfn_notify.ok_or(CL_INVALID_VALUE)?;
        let (handle, data) = (handles::handle_of(&m) as usize, UserData(user_data));
        let callback = Box::new(move || {
            let data = data;
            // SAFETY: the application's callback with the arguments OpenCL
            // defines; the handle is passed as a value, never dereferenced.
            unsafe { f(handle as cl_mem, data.0) };
        });
        match &m.inner.image {
            Some(image) => image.set_destructor_callback(callback),
            None => m.inner.buffer.set_destructor_callback(callback),
        }
        Ok(())
    })
}

/// `clEnqueueReadBuffer`.
pub(crate) unsafe extern "C" fn clEnqueueReadBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    offset: usize,
    size: usize,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueReadBuffer", || {
        let q = queue(command_queue)?;
        let b = mem(buffer)?;
        // SAFETY: the C contract: the wait list, `ptr` writable for `size`
        // bytes until the command completes, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_read != CL_FALSE;
            let ev = commands::enqueue_read_buffer(
                &q.inner.queue,
                &b.inner.buffer,
                blocking,
                offset,
                size,
                ptr.cast(),
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueWriteBuffer`.
pub(crate) unsafe extern "C" fn clEnqueueWriteBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    offset: usize,
    size: usize,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueWriteBuffer", || {
        let q = queue(command_queue)?;
        let b = mem(buffer)?;
        // SAFETY: the C contract: the wait list, `ptr` readable for `size`
        // bytes until the command completes, and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_write != CL_FALSE;
            let ev = commands::enqueue_write_buffer(
                &q.inner.queue,
                &b.inner.buffer,
                blocking,
                offset,
                size,
                ptr.cast(),
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueCopyBuffer`.
pub(crate) unsafe extern "C" fn clEnqueueCopyBuffer(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueCopyBuffer", || {
        let q = queue(command_queue)?;
        let (src, dst) = (mem(src_buffer)?, mem(dst_buffer)?);
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = commands::enqueue_copy_buffer(
                &q.inner.queue,
                &src.inner.buffer,
                &dst.inner.buffer,
                src_offset,
                dst_offset,
                size,
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// Three `size_t`s (an origin or a region): `CL_INVALID_VALUE` for NULL.
///
/// # Safety
/// `p` is NULL or readable for three `size_t`s.
unsafe fn triple(p: *const usize) -> ClRes<[usize; 3]> {
    if p.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract; `p` is not NULL.
    unsafe { Ok([p.read_unaligned(), p.add(1).read_unaligned(), p.add(2).read_unaligned()]) }
}

/// The geometry of a read or write rectangle.
///
/// # Safety
/// `buffer_origin`, `host_origin` and `region` are NULL or readable for
/// three `size_t`s each.
unsafe fn host_rect(
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    pitches: [usize; 4],
) -> ClRes<HostRect> {
    // SAFETY: forwarded to the caller.
    unsafe {
        Ok(HostRect {
            buffer_origin: triple(buffer_origin)?,
            host_origin: triple(host_origin)?,
            region: triple(region)?,
            buffer_row_pitch: pitches[0],
            buffer_slice_pitch: pitches[1],
            host_row_pitch: pitches[2],
            host_slice_pitch: pitches[3],
        })
    }
}

/// `clEnqueueReadBufferRect`.
pub(crate) unsafe extern "C" fn clEnqueueReadBufferRect(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueReadBufferRect", || {
        let q = queue(command_queue)?;
        let b = mem(buffer)?;
        // SAFETY: the C contract: the three arrays, the wait list, `ptr`
        // writable for the host rectangle until the command completes, and
        // `event`.
        unsafe {
            let pitches = [buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch];
            let r = host_rect(buffer_origin, host_origin, region, pitches)?;
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_read != CL_FALSE;
            let ev = rect::enqueue_read_buffer_rect(&q.inner.queue, &b.inner.buffer, blocking, &r, ptr.cast(), &wait)
                .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueWriteBufferRect`.
pub(crate) unsafe extern "C" fn clEnqueueWriteBufferRect(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueWriteBufferRect", || {
        let q = queue(command_queue)?;
        let b = mem(buffer)?;
        // SAFETY: the C contract: the three arrays, the wait list, `ptr`
        // readable for the host rectangle until the command completes, and
        // `event`.
        unsafe {
            let pitches = [buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch];
            let r = host_rect(buffer_origin, host_origin, region, pitches)?;
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_write != CL_FALSE;
            let ev = rect::enqueue_write_buffer_rect(&q.inner.queue, &b.inner.buffer, blocking, &r, ptr.cast(), &wait)
                .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueCopyBufferRect`.
pub(crate) unsafe extern "C" fn clEnqueueCopyBufferRect(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
    src_row_pitch: usize,
    src_slice_pitch: usize,
    dst_row_pitch: usize,
    dst_slice_pitch: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueCopyBufferRect", || {
        let q = queue(command_queue)?;
        let (src, dst) = (mem(src_buffer)?, mem(dst_buffer)?);
        // SAFETY: the C contract of the three arrays, the wait list and
        // `event`.
        unsafe {
            let r = CopyRect {
                src_origin: triple(src_origin)?,
                dst_origin: triple(dst_origin)?,
                region: triple(region)?,
                src_row_pitch,
                src_slice_pitch,
                dst_row_pitch,
                dst_slice_pitch,
            };
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev =
                rect::enqueue_copy_buffer_rect(&q.inner.queue, &src.inner.buffer, &dst.inner.buffer, &r, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueFillBuffer`: `CL_INVALID_VALUE` for a NULL pattern.
pub(crate) unsafe extern "C" fn clEnqueueFillBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    pattern: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueFillBuffer", || {
        let q = queue(command_queue)?;
        let b = mem(buffer)?;
        if pattern.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `pattern` readable for `pattern_size`
        // bytes now (the core copies it), the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let pattern = pattern_bytes(pattern, pattern_size)?;
            let ev =
                commands::enqueue_fill_buffer(&q.inner.queue, &b.inner.buffer, pattern, offset, size, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueMapBuffer`.
pub(crate) unsafe extern "C" fn clEnqueueMapBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: the C contract of `errcode_ret`.
    unsafe {
        object("clEnqueueMapBuffer", errcode_ret, || {
            let q = queue(command_queue)?;
            let b = mem(buffer)?;
            // SAFETY: the C contract of the wait list and `event`.
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_map != CL_FALSE;
            let (ptr, ev) = map::enqueue_map_buffer_after(
                &q.inner.queue,
                &b.inner.buffer,
                blocking,
                map_flags,
                offset,
                size,
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)?;
            Ok(ptr.as_ptr().cast())
        })
    }
}

/// `clEnqueueUnmapMemObject`.
pub(crate) unsafe extern "C" fn clEnqueueUnmapMemObject(
    command_queue: cl_command_queue,
    memobj: cl_mem,
    mapped_ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueUnmapMemObject", || {
        let q = queue(command_queue)?;
        let m = mem_object(memobj)?;
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = map::enqueue_unmap_mem_object(&q.inner.queue, &m.inner.buffer, mapped_ptr.cast(), &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueMigrateMemObjects`: a buffer moves to a device on its first
/// use there, so the command has nothing to move: after the checks (queue,
/// list, handles of the queue's context, flags, wait list) it is a command
/// of type `CL_COMMAND_MIGRATE_MEM_OBJECTS` that completes once its wait
/// list (and, in order, the commands before it) did. The specification
/// lists no `CL_INVALID_OPERATION` for it: a migration is a hint.
pub(crate) unsafe extern "C" fn clEnqueueMigrateMemObjects(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    flags: cl_mem_migration_flags,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueMigrateMemObjects", || {
        let q = queue(command_queue)?;
        if num_mem_objects == 0 || mem_objects.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `num_mem_objects` readable handles.
        for &m in unsafe { slice(mem_objects, num_mem_objects as usize) } {
            if !Arc::ptr_eq(mem_object(m)?.inner.buffer.context(), q.inner.queue.context()) {
                return Err(CL_INVALID_CONTEXT);
            }
        }
        if flags & !(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) != 0 {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract of the wait list and `event`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev =
                q.inner.queue.enqueue(command_type::MIGRATE_MEM_OBJECTS, &wait, false, Box::new(|| Ok(()))).cl()?;
            return_event(&q, ev, event)
        }
    })
}
