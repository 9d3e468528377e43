//! The image commands: `clEnqueueReadImage`, `WriteImage`, `CopyImage`,
//! `FillImage`, `MapImage`, `CopyImageToBuffer` and `CopyBufferToImage`.
//! Each turns pixel coordinates into a byte rectangle of the image's
//! storage and runs the buffer's rectangle command (`buffer::rect`,
//! `buffer::map`) under the image command's type: the same allocation,
//! transfer, synchronisation and overlap rules as buffers.

use std::ptr::NonNull;
use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::buffer::rect::{self, CopyRect, HostRect};
use crate::runtime::buffer::{map, Buffer};
use crate::runtime::event::{command_type, Event};
use crate::runtime::queue::Queue;

use super::fill::{pixel_bytes, FillColor};
use super::mem_object::*;
use super::validate::type_name;
use super::{image_limits, Image};

/// The queue's device must support images and share the image's context.
fn check_queue(queue: &Queue, image: &Image, name: &str) -> ClResult<()> {
    if !Arc::ptr_eq(queue.context(), image.context()) {
        return cl_err!(InvalidContext, "{name} and the command queue belong to different contexts");
    }
    if image_limits(queue.device()).is_none() {
        return cl_err!(
            InvalidOperation,
            "device {:?} has no image support (CL_DEVICE_IMAGE_SUPPORT is false: its kernels take no images): \
             enqueue image commands on the CPU device's queue — the image's memory is shared with {:?} like a buffer's",
            queue.device().name,
            queue.device().name
        );
    }
    Ok(())
}

/// The origin and region rules of one image (`CL_INVALID_VALUE`): no zero
/// extent, the components the type does not have 0 (origin) and 1
/// (region), inside the image. Returns the byte origin and region of its
/// storage rectangle.
fn byte_rect(image: &Image, origin: [usize; 3], region: [usize; 3], name: &str) -> ClResult<([usize; 3], [usize; 3])> {
    let t = image.image_type();
    if region.contains(&0) {
        return cl_err!(InvalidValue, "region {region:?} has a zero extent");
    }
    let dims = match t {
        IMAGE1D | IMAGE1D_BUFFER => 1,
        IMAGE1D_ARRAY | IMAGE2D => 2,
        _ => 3,
    };
    if (dims..3).any(|i| origin[i] != 0 || region[i] != 1) {
        return cl_err!(
            InvalidValue,
            "{name} is a {} image: its origin {origin:?} must have 0 and its region {region:?} 1 past dimension {dims}",
            type_name(t)
        );
    }
    let extent = image.extent();
    for i in 0..3 {
        if origin[i].checked_add(region[i]).is_none_or(|end| end > extent[i]) {
            return cl_err!(
                InvalidValue,
                "origin {origin:?} + region {region:?} runs out of the {} image's {extent:?} pixels ({name})",
                type_name(t)
            );
        }
    }
    let e = image.element_size();
    // Inside the image, so the products are below its byte size.
    Ok(([origin[0] * e, origin[1], origin[2]], [region[0] * e, region[1], region[2]]))
}

/// The host rectangle of a read or write: the host pitches (0 = packed)
/// with their rules, and the storage's.
fn host_rect(
    image: &Image,
    origin: [usize; 3],
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
) -> ClResult<HostRect> {
    let (bo, br) = byte_rect(image, origin, region, "image")?;
    let t = image.image_type();
    if matches!(t, IMAGE1D | IMAGE1D_BUFFER | IMAGE2D) && slice_pitch != 0 {
        return cl_err!(InvalidValue, "slice_pitch {slice_pitch} must be 0 for a {} image", type_name(t));
    }
    let row = if row_pitch == 0 { br[0] } else { row_pitch };
    if row < br[0] {
        return cl_err!(InvalidValue, "row_pitch {row_pitch} is below the region's row ({} bytes)", br[0]);
    }
    let (host_row, host_slice) = if t == IMAGE1D_ARRAY {
        // The array index is the host's "row": its stride is the slice pitch.
        let s = if slice_pitch == 0 { row } else { slice_pitch };
        if s < row {
            return cl_err!(InvalidValue, "slice_pitch {slice_pitch} is below the row pitch ({row})");
        }
        (s, 0)
    } else {
        (row, slice_pitch)
    };
    let (row_p, slice_p) = image.rect_pitches();
    Ok(HostRect {
        buffer_origin: bo,
        host_origin: [0; 3],
        region: br,
        buffer_row_pitch: row_p,
        buffer_slice_pitch: slice_p,
        host_row_pitch: host_row,
        host_slice_pitch: host_slice,
    })
}

/// `clEnqueueReadImage`: the pixels of `region` at `origin` to `ptr`, at
/// `row_pitch` and `slice_pitch` (0: packed; for a 1D array, `slice_pitch`
/// is the stride between its elements).
///
/// Errors: `CL_INVALID_CONTEXT`; `CL_INVALID_OPERATION` (the queue's device
/// has no image support, a `HOST_WRITE_ONLY`/`HOST_NO_ACCESS` image);
/// `CL_INVALID_VALUE` (origin or region rules, out of bounds, pitches, `ptr`
/// NULL); as `clEnqueueReadBufferRect` otherwise.
///
/// # Safety
/// The host rectangle at `ptr` must stay valid for writes until the event
/// completes.
///
/// ```
/// use dmabridge::runtime::image::{commands, format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let pixels: Vec<u8> = (0..32).collect(); // 4x2 RGBA8
/// let f = ImageFormat::new(order::RGBA, data_type::UNORM_INT8);
/// // SAFETY: COPY_HOST_PTR reads `pixels` (32 bytes) now.
/// let img = unsafe { Image::create(&ctx, 1 << 5, f, &ImageDesc::new(mem_object::IMAGE2D, [4, 2, 1]), pixels.as_ptr().cast_mut()) }?;
/// let mut out = [0u8; 8];
/// // SAFETY: blocking; `out` holds 2 pixels.
/// unsafe { commands::enqueue_read_image(&queue, &img, true, [1, 1, 0], [2, 1, 1], 0, 0, out.as_mut_ptr(), &[])? };
/// assert_eq!(out, [20, 21, 22, 23, 24, 25, 26, 27]);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub unsafe fn enqueue_read_image(
    queue: &Arc<Queue>,
    image: &Arc<Image>,
    blocking: bool,
    origin: [usize; 3],
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
    ptr: *mut u8,
    wait_list: &[Event],
) -> ClResult<Event> {
    check_queue(queue, image, "image")?;
    let r = host_rect(image, origin, region, row_pitch, slice_pitch)?;
    // SAFETY: forwarded to the caller.
    unsafe { rect::read_rect(queue, image.storage(), blocking, &r, ptr, wait_list, command_type::READ_IMAGE) }
}

/// `clEnqueueWriteImage`: `ptr`'s pixels into `region` at `origin`.
///
/// Errors as [`enqueue_read_image`], with `CL_INVALID_OPERATION` for a
/// `HOST_READ_ONLY`/`HOST_NO_ACCESS` image.
///
/// # Safety
/// The host rectangle at `ptr` must stay valid for reads until the event
/// completes.
///
/// ```
/// use dmabridge::runtime::image::{commands, format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let f = ImageFormat::new(order::R, data_type::UNSIGNED_INT8);
/// // SAFETY: no host pointer.
/// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE1D, [16, 1, 1]), std::ptr::null_mut()) }?;
/// let data = [9u8; 4];
/// // SAFETY: blocking; `data` holds 4 pixels.
/// unsafe { commands::enqueue_write_image(&queue, &img, true, [12, 0, 0], [4, 1, 1], 0, 0, data.as_ptr(), &[])? };
/// // SAFETY: as above; the region runs out of the image.
/// assert!(unsafe { commands::enqueue_write_image(&queue, &img, true, [13, 0, 0], [4, 1, 1], 0, 0, data.as_ptr(), &[]) }.is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub unsafe fn enqueue_write_image(
    queue: &Arc<Queue>,
    image: &Arc<Image>,
    blocking: bool,
    origin: [usize; 3],
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
    ptr: *const u8,
    wait_list: &[Event],
) -> ClResult<Event> {
    check_queue(queue, image, "image")?;
    let r = host_rect(image, origin, region, row_pitch, slice_pitch)?;
    // SAFETY: forwarded to the caller.
    unsafe { rect::write_rect(queue, image.storage(), blocking, &r, ptr, wait_list, command_type::WRITE_IMAGE) }
}

/// `clEnqueueCopyImage`: `region` from `src` at `src_origin` to `dst` at
/// `dst_origin`.
///
/// Errors: `CL_IMAGE_FORMAT_MISMATCH` (different formats);
/// `CL_MEM_COPY_OVERLAP` (the same image, overlapping regions);
/// `CL_INVALID_VALUE` (origin and region rules of each image);
/// `CL_INVALID_CONTEXT`; `CL_INVALID_OPERATION` (no image support).
///
/// ```
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::image::{commands, format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let f = ImageFormat::new(order::RGBA, data_type::FLOAT);
/// // SAFETY: no host pointer.
/// let a = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE2D, [8, 8, 1]), std::ptr::null_mut()) }?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE3D, [8, 8, 2]), std::ptr::null_mut()) }?;
/// Event::wait(&[commands::enqueue_copy_image(&queue, &a, &b, [0; 3], [0, 0, 1], [8, 8, 1], &[])?])?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_copy_image(
    queue: &Arc<Queue>,
    src: &Arc<Image>,
    dst: &Arc<Image>,
    src_origin: [usize; 3],
    dst_origin: [usize; 3],
    region: [usize; 3],
    wait_list: &[Event],
) -> ClResult<Event> {
    check_queue(queue, src, "src_image")?;
    check_queue(queue, dst, "dst_image")?;
    if src.format() != dst.format() {
        return cl_err!(
            ImageFormatMismatch,
            "src_image's format {:?} differs from dst_image's {:?}: a copy moves pixels unconverted",
            src.format(),
            dst.format()
        );
    }
    let (so, sr) = byte_rect(src, src_origin, region, "src_image")?;
    let (dof, _) = byte_rect(dst, dst_origin, region, "dst_image")?;
    let ((srp, ssp), (drp, dsp)) = (src.rect_pitches(), dst.rect_pitches());
    let r = CopyRect {
        src_origin: so,
        dst_origin: dof,
        region: sr,
        src_row_pitch: srp,
        src_slice_pitch: ssp,
        dst_row_pitch: drp,
        dst_slice_pitch: dsp,
    };
    rect::copy_rect(queue, src.storage(), dst.storage(), &r, wait_list, command_type::COPY_IMAGE)
}

/// `clEnqueueFillImage`: every pixel of `region` at `origin` set to
/// `color` (converted as [`pixel_bytes`] says).
///
/// Errors: `CL_INVALID_VALUE` (origin and region rules);
/// `CL_INVALID_OPERATION` (a format no colour converts to, no image support,
/// a read-only imported image); `CL_INVALID_CONTEXT`.
///
/// ```
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::image::{commands, format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let f = ImageFormat::new(order::RGBA, data_type::UNSIGNED_INT8);
/// // SAFETY: no host pointer.
/// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE2D, [4, 4, 1]), std::ptr::null_mut()) }?;
/// Event::wait(&[commands::enqueue_fill_image(&queue, &img, [1, 2, 3, 300], [0; 3], [4, 4, 1], &[])?])?;
/// let mut px = [0u8; 4];
/// // SAFETY: blocking; one pixel.
/// unsafe { commands::enqueue_read_image(&queue, &img, true, [3, 3, 0], [1, 1, 1], 0, 0, px.as_mut_ptr(), &[])? };
/// assert_eq!(px, [1, 2, 3, 255]); // 300 saturates
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_fill_image(
    queue: &Arc<Queue>,
    image: &Arc<Image>,
    color: FillColor,
    origin: [usize; 3],
    region: [usize; 3],
    wait_list: &[Event],
) -> ClResult<Event> {
    check_queue(queue, image, "image")?;
    let (bo, br) = byte_rect(image, origin, region, "image")?;
    let pixel = pixel_bytes(image.format(), color)?;
    let pitches = image.rect_pitches();
    rect::fill_rect(queue, image.storage(), &pixel, bo, br, pitches, wait_list, command_type::FILL_IMAGE)
}

/// A mapped image region: the host address of its first pixel, the row
/// and slice pitches to walk it (`image_row_pitch`, `image_slice_pitch`;
/// the slice pitch is 0 for 1D and 2D images) and the command's event.
#[derive(Debug)]
pub struct MappedImage {
    /// The first pixel of the region.
    pub ptr: NonNull<u8>,
    /// Bytes from one row to the next.
    pub row_pitch: usize,
    /// Bytes from one slice (layer, 1D array element) to the next.
    pub slice_pitch: usize,
    /// The map's event.
    pub event: Event,
}

/// `clEnqueueMapImage`: maps `region` at `origin` for the host. The map is
/// of the storage's bytes from the region's first pixel to its last (the
/// pixels between rows are the image's own), so it is ended by
/// `buffer::map::enqueue_unmap_mem_object` on [`Image::storage`], which the
/// C face's `clEnqueueUnmapMemObject` does.
///
/// Errors: as [`enqueue_read_image`] for the region, and as
/// `clEnqueueMapBuffer` for the flags and host access.
///
/// ```
/// use dmabridge::runtime::buffer::map::{enqueue_unmap_mem_object, map_flags};
/// use dmabridge::runtime::image::{commands, format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let f = ImageFormat::new(order::RG, data_type::UNORM_INT8);
/// // SAFETY: no host pointer.
/// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE2D_ARRAY, [8, 4, 3]), std::ptr::null_mut()) }?;
/// let m = commands::enqueue_map_image(&queue, &img, true, map_flags::WRITE, [0, 0, 1], [8, 4, 2], &[])?;
/// assert_eq!((m.row_pitch, m.slice_pitch), (16, 64));
/// enqueue_unmap_mem_object(&queue, img.storage(), m.ptr.as_ptr(), &[])?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_map_image(
    queue: &Arc<Queue>,
    image: &Arc<Image>,
    blocking: bool,
    map_flags: u64,
    origin: [usize; 3],
    region: [usize; 3],
    wait_list: &[Event],
) -> ClResult<MappedImage> {
    check_queue(queue, image, "image")?;
    let (bo, br) = byte_rect(image, origin, region, "image")?;
    let (rp, sp) = image.rect_pitches();
    // Inside the image: no product or sum overflows its byte size.
    let start = bo[2] * sp + bo[1] * rp + bo[0];
    let end = (bo[2] + br[2] - 1) * sp + (bo[1] + br[1] - 1) * rp + bo[0] + br[0];
    let (ptr, event) = map::map_as(
        queue,
        image.storage(),
        blocking,
        map_flags,
        start,
        end - start,
        wait_list,
        command_type::MAP_IMAGE,
    )?;
    Ok(MappedImage { ptr, row_pitch: image.row_pitch(), slice_pitch: image.slice_pitch(), event })
}

/// `clEnqueueCopyImageToBuffer`: `region` of `src` at `src_origin` into
/// `dst` at `dst_offset`, packed (rows of `region[0]` pixels).
///
/// Errors: `CL_INVALID_VALUE` (origin and region rules, the bytes past the
/// end of `dst`); `CL_INVALID_CONTEXT`; `CL_INVALID_OPERATION`;
/// `CL_MISALIGNED_SUB_BUFFER_OFFSET`.
///
/// ```
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::image::{commands, format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let f = ImageFormat::new(order::R, data_type::FLOAT);
/// // SAFETY: no host pointer.
/// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE1D_ARRAY, [16, 4, 1]), std::ptr::null_mut()) }?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 256, std::ptr::null_mut()) }?;
/// Event::wait(&[commands::enqueue_copy_image_to_buffer(&queue, &img, &b, [0; 3], [16, 4, 1], 0, &[])?])?;
/// assert!(commands::enqueue_copy_image_to_buffer(&queue, &img, &b, [0; 3], [16, 4, 1], 4, &[]).is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_copy_image_to_buffer(
    queue: &Arc<Queue>,
    src: &Arc<Image>,
    dst: &Arc<Buffer>,
    src_origin: [usize; 3],
    region: [usize; 3],
    dst_offset: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    check_queue(queue, src, "src_image")?;
    let (so, br) = byte_rect(src, src_origin, region, "src_image")?;
    let (srp, ssp) = src.rect_pitches();
    let r = CopyRect {
        src_origin: so,
        dst_origin: [dst_offset, 0, 0],
        region: br,
        src_row_pitch: srp,
        src_slice_pitch: ssp,
        dst_row_pitch: br[0],
        dst_slice_pitch: br[0] * br[1],
    };
    rect::copy_rect(queue, src.storage(), dst, &r, wait_list, command_type::COPY_IMAGE_TO_BUFFER)
}

/// `clEnqueueCopyBufferToImage`: packed pixels of `src` at `src_offset`
/// into `region` of `dst` at `dst_origin`.
///
/// Errors as [`enqueue_copy_image_to_buffer`].
///
/// ```
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::image::{commands, format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let f = ImageFormat::new(order::BGRA, data_type::UNORM_INT8);
/// // SAFETY: no host pointer.
/// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE2D, [4, 4, 1]), std::ptr::null_mut()) }?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// Event::wait(&[commands::enqueue_copy_buffer_to_image(&queue, &b, &img, 0, [0; 3], [4, 4, 1], &[])?])?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_copy_buffer_to_image(
    queue: &Arc<Queue>,
    src: &Arc<Buffer>,
    dst: &Arc<Image>,
    src_offset: usize,
    dst_origin: [usize; 3],
    region: [usize; 3],
    wait_list: &[Event],
) -> ClResult<Event> {
    check_queue(queue, dst, "dst_image")?;
    let (dof, br) = byte_rect(dst, dst_origin, region, "dst_image")?;
    let (drp, dsp) = dst.rect_pitches();
    let r = CopyRect {
        src_origin: [src_offset, 0, 0],
        dst_origin: dof,
        region: br,
        src_row_pitch: br[0],
        src_slice_pitch: br[0] * br[1],
        dst_row_pitch: drp,
        dst_slice_pitch: dsp,
    };
    rect::copy_rect(queue, src, dst.storage(), &r, wait_list, command_type::COPY_BUFFER_TO_IMAGE)
}
