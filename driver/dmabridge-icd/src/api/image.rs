//! Image entry points (`runtime::image`): creation (with the deprecated 2D
//! and 3D forms), `clGetImageInfo` and the image commands. An image is a
//! `cl_mem` like a buffer ([`MemObj`] with its `image` set, `buffer` its
//! storage), so retain, release, `clGetMemObjectInfo`, destructor
//! callbacks and `clEnqueueUnmapMemObject` are the buffer's entry points.

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::ext::khr_external::image::create_image_with_properties;
use dmabridge::ext::khr_external::memory::MemProperties;
use dmabridge::runtime::image::format::ImageFormat;
use dmabridge::runtime::image::{commands, mem_object, Image, ImageDesc};
use opencl_sys::*;

use super::context::ContextObj;
use super::event::return_event;
use super::khr_memory::external_properties;
use super::memobj::{mem, mem_object, MemObj};
use super::queue::queue;
use crate::entry::{object, status, wait_list, write_opt, Cl, ClRes};
use crate::handles::{self, Obj};
use crate::info::{get_info, Handles};

/// The image object behind a handle: a buffer (or anything else) is
/// `CL_INVALID_MEM_OBJECT`.
pub(crate) fn image(handle: cl_mem) -> ClRes<(Arc<Obj<MemObj>>, Arc<Image>)> {
    let m = mem_object(handle)?;
    let image = m.inner.image.clone().ok_or(CL_INVALID_MEM_OBJECT)?;
    Ok((m, image))
}

/// The handle of a new image of `context` (`parent`: the buffer object
/// it was made from), with its `CL_MEM_PROPERTIES`. Images made by
/// extensions (from imported memory) are handed to C here too.
pub(crate) fn image_handle(
    image: Arc<Image>,
    context: Arc<Obj<ContextObj>>,
    parent: Option<Arc<Obj<MemObj>>>,
    properties: Vec<cl_mem_properties>,
) -> cl_mem {
    let buffer = image.storage().clone();
    let obj = MemObj { buffer, image: Some(image), context, parent, properties };
    handles::into_handle(handles::new_object(obj)).cast()
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

/// The common path of every creation entry point.
///
/// # Safety
/// `format` and `desc` NULL or readable; `host_ptr` as `clCreateImage`.
unsafe fn new_image(
    context: cl_context,
    properties: Vec<cl_mem_properties>,
    ext: &MemProperties<'_>,
    flags: cl_mem_flags,
    format: *const cl_image_format,
    desc: *const _cl_image_desc,
    host_ptr: *mut c_void,
) -> ClRes<cl_mem> {
    let ctx = handles::get::<ContextObj>(context.cast())?;
    if format.is_null() {
        return Err(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    }
    if desc.is_null() {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    // SAFETY: the C contract: both are readable structures.
    let (f, d) = unsafe { (format.read_unaligned(), desc.read_unaligned()) };
    let format = ImageFormat::new(f.image_channel_order, f.image_channel_data_type);
    // `mem_object` (OpenCL 2.0's name of the union) is `buffer`'s word.
    let handle = d.buffer;
    let parent = if handle.is_null() {
        None
    } else {
        // A buffer for a 1D image buffer (or a 2D image from a buffer), an
        // image for a 2D image from an image; an invalid handle there is a
        // descriptor error.
        let p = mem_object(handle).map_err(|_| CL_INVALID_IMAGE_DESCRIPTOR)?;
        if p.inner.image.is_some() && d.image_type != mem_object::IMAGE2D {
            return Err(CL_INVALID_IMAGE_DESCRIPTOR);
        }
        Some(p)
    };
    let desc = ImageDesc {
        image_type: d.image_type,
        width: d.image_width,
        height: d.image_height,
        depth: d.image_depth,
        array_size: d.image_array_size,
        row_pitch: d.image_row_pitch,
        slice_pitch: d.image_slice_pitch,
        num_mip_levels: d.num_mip_levels,
        num_samples: d.num_samples,
        buffer: parent.as_ref().map(|p| p.inner.buffer.clone()),
    };
    // A 2D image from a 2D image views its pixels.
    if let Some(of) = parent.as_ref().and_then(|p| p.inner.image.clone()) {
        let image = Image::view(&ctx.inner.ctx, flags, format, &ImageDesc { buffer: None, ..desc }, &of).cl()?;
        // (The flags that take a host pointer were CL_INVALID_VALUE above.)
        if !host_ptr.is_null() {
            return Err(CL_INVALID_HOST_PTR);
        }
        return Ok(image_handle(image, ctx, parent, properties));
    }
    // (Without a dma-buf in `ext`, `Image::create`.)
    // SAFETY: `clCreateImage`'s contract of `host_ptr`, for the bytes the
    // descriptor's pitches span.
    let image =
        unsafe { create_image_with_properties(&ctx.inner.ctx, ext, flags, format, &desc, host_ptr.cast()) }.cl()?;
    Ok(image_handle(image, ctx, parent, properties))
}

/// `clCreateImage`.
pub(crate) unsafe extern "C" fn clCreateImage(
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the C contract of every pointer.
    unsafe {
        object("clCreateImage", errcode_ret, || {
            new_image(context, Vec::new(), &MemProperties::default(), flags, image_format, image_desc.cast(), host_ptr)
        })
    }
}

/// `clCreateImageWithProperties`: the properties of `cl_khr_external_memory`
/// (`CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`: a dma-buf imported as the
/// image, at the descriptor's pitches; `CL_MEM_DEVICE_HANDLE_LIST_KHR`), any
/// other is `CL_INVALID_PROPERTY`; the list is kept as given for
/// `CL_MEM_PROPERTIES`.
pub(crate) unsafe extern "C" fn clCreateImageWithProperties(
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the C contract of every pointer.
    unsafe {
        object("clCreateImageWithProperties", errcode_ret, || {
            handles::get::<ContextObj>(context.cast())?;
            let (list, ext) = external_properties(properties)?;
            new_image(context, list.raw, &ext, flags, image_format, image_desc.cast(), host_ptr)
        })
    }
}

/// `clCreateImage2D` (deprecated by OpenCL 1.2): `clCreateImage` with a 2D
/// descriptor.
pub(crate) unsafe extern "C" fn clCreateImage2D(
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_width: usize,
    image_height: usize,
    image_row_pitch: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: an all-zero `cl_image_desc` is valid (integers and a NULL handle).
    let mut desc: _cl_image_desc = unsafe { std::mem::zeroed() };
    desc.image_type = mem_object::IMAGE2D;
    (desc.image_width, desc.image_height, desc.image_row_pitch) = (image_width, image_height, image_row_pitch);
    // SAFETY: the C contract of every pointer; `desc` is ours.
    unsafe {
        object("clCreateImage2D", errcode_ret, || {
            new_image(context, Vec::new(), &MemProperties::default(), flags, image_format, &desc, host_ptr)
        })
    }
}

/// `clCreateImage3D` (deprecated by OpenCL 1.2): `clCreateImage` with a 3D
/// descriptor.
pub(crate) unsafe extern "C" fn clCreateImage3D(
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_width: usize,
    image_height: usize,
    image_depth: usize,
    image_row_pitch: usize,
    image_slice_pitch: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: an all-zero `cl_image_desc` is valid (integers and a NULL handle).
    let mut desc: _cl_image_desc = unsafe { std::mem::zeroed() };
    desc.image_type = mem_object::IMAGE3D;
    (desc.image_width, desc.image_height, desc.image_depth) = (image_width, image_height, image_depth);
    (desc.image_row_pitch, desc.image_slice_pitch) = (image_row_pitch, image_slice_pitch);
    // SAFETY: the C contract of every pointer; `desc` is ours.
    unsafe {
        object("clCreateImage3D", errcode_ret, || {
            // "CL_INVALID_IMAGE_SIZE if ... image_depth <= 1" (a 3D image of
            // one slice is a 2D image: clCreateImage2D).
            if image_depth <= 1 {
                return dmabridge::cl_err!(
                    InvalidImageSize,
                    "clCreateImage3D: image_depth {image_depth} must be above 1 (one slice is a 2D image)"
                )
                .cl();
            }
            new_image(context, Vec::new(), &MemProperties::default(), flags, image_format, &desc, host_ptr)
        })
    }
}

/// `clGetImageInfo`.
pub(crate) unsafe extern "C" fn clGetImageInfo(
    image_: cl_mem,
    param_name: cl_image_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetImageInfo", param_value_size, param_value, param_value_size_ret, || {
            let (m, img) = image(image_)?;
            let value = img.image_info(param_name).cl()?;
            Ok((value, Handles { mem: m.inner.parent.clone(), ..Handles::of_context(&m.inner.context) }))
        })
    }
}

/// `clEnqueueReadImage`.
pub(crate) unsafe extern "C" fn clEnqueueReadImage(
    command_queue: cl_command_queue,
    image_: cl_mem,
    blocking_read: cl_bool,
    origin: *const usize,
    region: *const usize,
    row_pitch: usize,
    slice_pitch: usize,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueReadImage", || {
        let q = queue(command_queue)?;
        let (_m, img) = image(image_)?;
        // SAFETY: the C contract: origin and region, the wait list, `ptr`
        // writable for the host rectangle until the command completes, and
        // `event`.
        unsafe {
            let (o, r) = (triple(origin)?, triple(region)?);
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_read != CL_FALSE;
            let ev = commands::enqueue_read_image(
                &q.inner.queue,
                &img,
                blocking,
                o,
                r,
                row_pitch,
                slice_pitch,
                ptr.cast(),
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueWriteImage`.
pub(crate) unsafe extern "C" fn clEnqueueWriteImage(
    command_queue: cl_command_queue,
    image_: cl_mem,
    blocking_write: cl_bool,
    origin: *const usize,
    region: *const usize,
    input_row_pitch: usize,
    input_slice_pitch: usize,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueWriteImage", || {
        let q = queue(command_queue)?;
        let (_m, img) = image(image_)?;
        // SAFETY: the C contract: as `clEnqueueReadImage`, `ptr` readable.
        unsafe {
            let (o, r) = (triple(origin)?, triple(region)?);
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_write != CL_FALSE;
            let ev = commands::enqueue_write_image(
                &q.inner.queue,
                &img,
                blocking,
                o,
                r,
                input_row_pitch,
                input_slice_pitch,
                ptr.cast(),
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueCopyImage`.
pub(crate) unsafe extern "C" fn clEnqueueCopyImage(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_image: cl_mem,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueCopyImage", || {
        let q = queue(command_queue)?;
        let ((_s, src), (_d, dst)) = (image(src_image)?, image(dst_image)?);
        // SAFETY: the C contract of the three triples, the wait list and `event`.
        unsafe {
            let (so, dof, r) = (triple(src_origin)?, triple(dst_origin)?, triple(region)?);
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = commands::enqueue_copy_image(&q.inner.queue, &src, &dst, so, dof, r, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueFillImage`: `fill_color` is four 32-bit words (`float`,
/// `int` or `uint` by the image's channel type).
pub(crate) unsafe extern "C" fn clEnqueueFillImage(
    command_queue: cl_command_queue,
    image_: cl_mem,
    fill_color: *const c_void,
    origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueFillImage", || {
        let q = queue(command_queue)?;
        let (_m, img) = image(image_)?;
        if fill_color.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `fill_color` holds four 32-bit values;
        // the triples, the wait list and `event`.
        unsafe {
            let c = fill_color.cast::<u32>();
            let color = [0, 1, 2, 3].map(|i| c.add(i).read_unaligned());
            let (o, r) = (triple(origin)?, triple(region)?);
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = commands::enqueue_fill_image(&q.inner.queue, &img, color, o, r, &wait).cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueCopyImageToBuffer`.
pub(crate) unsafe extern "C" fn clEnqueueCopyImageToBuffer(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const usize,
    region: *const usize,
    dst_offset: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueCopyImageToBuffer", || {
        let q = queue(command_queue)?;
        let ((_s, src), dst) = (image(src_image)?, mem(dst_buffer)?);
        // SAFETY: the C contract of the triples, the wait list and `event`.
        unsafe {
            let (so, r) = (triple(src_origin)?, triple(region)?);
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = commands::enqueue_copy_image_to_buffer(
                &q.inner.queue,
                &src,
                &dst.inner.buffer,
                so,
                r,
                dst_offset,
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueCopyBufferToImage`.
pub(crate) unsafe extern "C" fn clEnqueueCopyBufferToImage(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_image: cl_mem,
    src_offset: usize,
    dst_origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueCopyBufferToImage", || {
        let q = queue(command_queue)?;
        let (src, (_d, dst)) = (mem(src_buffer)?, image(dst_image)?);
        // SAFETY: the C contract of the triples, the wait list and `event`.
        unsafe {
            let (dof, r) = (triple(dst_origin)?, triple(region)?);
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = commands::enqueue_copy_buffer_to_image(
                &q.inner.queue,
                &src.inner.buffer,
                &dst,
                src_offset,
                dof,
                r,
                &wait,
            )
            .cl()?;
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueMapImage`: `image_row_pitch` must not be NULL;
/// `image_slice_pitch` may be NULL only for 1D and 2D images.
pub(crate) unsafe extern "C" fn clEnqueueMapImage(
    command_queue: cl_command_queue,
    image_: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    origin: *const usize,
    region: *const usize,
    image_row_pitch: *mut usize,
    image_slice_pitch: *mut usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: the C contract of every pointer.
    unsafe {
        object("clEnqueueMapImage", errcode_ret, || {
            let q = queue(command_queue)?;
            let (_m, img) = image(image_)?;
            let t = img.image_type();
            let needs_slice = matches!(t, mem_object::IMAGE3D | mem_object::IMAGE2D_ARRAY | mem_object::IMAGE1D_ARRAY);
            if image_row_pitch.is_null() || (needs_slice && image_slice_pitch.is_null()) {
                return Err(CL_INVALID_VALUE);
            }
            let (o, r) = (triple(origin)?, triple(region)?);
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let blocking = blocking_map != CL_FALSE;
            let m = commands::enqueue_map_image(&q.inner.queue, &img, blocking, map_flags, o, r, &wait).cl()?;
            image_row_pitch.write_unaligned(m.row_pitch);
            write_opt(image_slice_pitch, m.slice_pitch);
            return_event(&q, m.event, event)?;
            Ok(m.ptr.as_ptr().cast())
        })
    }
}
