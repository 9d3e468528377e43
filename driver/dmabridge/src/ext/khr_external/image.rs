//! `clCreateImageWithProperties` with `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`:
//! a dma-buf as an image — a video frame as a 2D image at the frame's own
//! row pitch (`image_row_pitch`: V4L2's `bytesperline`, DRM's pitch).
//!
//! The dma-buf is imported as a buffer exactly as
//! [`memory::create_buffer_with_properties`] does (the import path of
//! `cl_arm_import_memory`: the same reachability rules and refusals, a
//! read-only dma-buf makes a read-only image, the acquire/release bracket),
//! whole, and the image is made over that buffer from offset 0
//! ([`Image::over_buffer`]): its pixels are the dma-buf's own pages, so a
//! write through the image is a write to the dma-buf — zero copy.
//! Acquire and release take the image (the ICD passes its storage, which
//! carries the bracket state).
//!
//! Rules of the import as for buffers (`CL_INVALID_HOST_PTR`,
//! `CL_INVALID_VALUE` for host-pointer flags, `CL_INVALID_PROPERTY` for a
//! device list without a handle, `CL_INVALID_DEVICE`); an image from a
//! dma-buf takes no `image_desc.mem_object` (`CL_INVALID_IMAGE_DESCRIPTOR`:
//! its memory is the dma-buf); the pitches are the frame's, not a host
//! pointer's, so a pitch is allowed without one; pixels that do not fit in
//! the dma-buf are `over_buffer`'s `CL_INVALID_IMAGE_DESCRIPTOR`. The image's
//! access flags are the imported buffer's (a read-only dma-buf gives a
//! `CL_MEM_READ_ONLY` image whatever `flags` asked).

use std::sync::Arc;

use super::memory::{self, MemProperties};
use crate::cl_err;
use crate::error::ClResult;
use crate::ext::arm_import::IMPORT_MEMORY_WHOLE_ALLOCATION_ARM;
use crate::runtime::buffer::mem_flags;
use crate::runtime::context::Context;
use crate::runtime::image::format::ImageFormat;
use crate::runtime::image::{Image, ImageDesc};

/// `clCreateImageWithProperties` with the properties of
/// `cl_khr_external_memory`: with a dma-buf, the image over its import (see
/// the module); without, [`Image::create`].
///
/// # Safety
/// Without a dma-buf, `Image::create`'s (the host pointer); with one, none
/// (a host pointer is refused).
///
/// ```
/// use dmabridge::ext::khr_external::{image, memory::MemProperties};
/// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::sys::memfd::Memfd;
/// use std::os::fd::AsFd;
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let memfd = Memfd::create(c"not-a-dma-buf", 4096)?;
/// let props = MemProperties { dma_buf: Some(memfd.as_fd()), devices: None };
/// let rgba = ImageFormat::new(order::RGBA, data_type::UNORM_INT8);
/// let desc = ImageDesc { row_pitch: 64, ..ImageDesc::new(mem_object::IMAGE2D, [16, 16, 1]) };
/// // SAFETY: no host pointer.
/// let err = unsafe { image::create_image_with_properties(&ctx, &props, 0, rgba, &desc, std::ptr::null_mut()) }.unwrap_err();
/// assert_eq!(err.code(), dmabridge::error::code::INVALID_VALUE); // a memfd is no dma-buf
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn create_image_with_properties(
    ctx: &Arc<Context>,
    props: &MemProperties<'_>,
    flags: u64,
    format: ImageFormat,
    desc: &ImageDesc,
    host_ptr: *mut u8,
) -> ClResult<Arc<Image>> {
    if props.dma_buf.is_none() {
        if props.devices.is_some() {
            return cl_err!(
                InvalidProperty,
                "CL_MEM_DEVICE_HANDLE_LIST_KHR is given without CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR: the list names \
                 the devices that use imported memory, and nothing is imported"
            );
        }
        // SAFETY: forwarded to the caller.
        return unsafe { Image::create(ctx, flags, format, desc, host_ptr) };
    }
    if desc.buffer.is_some() {
        return cl_err!(
            InvalidImageDescriptor,
            "image_desc.mem_object is set, but an image imported from a dma-buf is the dma-buf's memory: leave it NULL"
        );
    }
    // SAFETY: a host pointer is refused by the import, none is used.
    let storage = unsafe {
        memory::create_buffer_with_properties(ctx, props, flags, IMPORT_MEMORY_WHOLE_ALLOCATION_ARM, host_ptr)
    }?;
    // The access the import settled (read-only for a read-only dma-buf) is
    // the image's: leave it to `over_buffer` to take from the buffer.
    let flags = flags & !(mem_flags::ACCESS | mem_flags::HOST_ACCESS);
    Image::over_buffer(ctx, flags, format, desc, storage)
}
