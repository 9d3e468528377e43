//! `cl_khr_image2d_from_buffer`'s alignment rules (core in OpenCL 2.0): a 2D
//! image made from a buffer (`image_desc.mem_object`) has a row pitch — as
//! given, or `width x element size` when 0 — that is a multiple of the
//! largest `CL_DEVICE_IMAGE_PITCH_ALIGNMENT` of the context's devices with
//! images, and, when the buffer was made with `CL_MEM_USE_HOST_PTR`, a
//! host pointer aligned to the largest `CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT`
//! (both in pixels). Either broken is `CL_INVALID_IMAGE_FORMAT_DESCRIPTOR`,
//! the code clCreateImage names for them.
//!
//! The CPU device answers 1 for both: its kernels read rows at any pitch
//! that holds whole pixels, so a frame's own pitch (V4L2's `bytesperline`,
//! a GStreamer pool's padded stride) is taken as it is; the rules then ask
//! for pitches and host pointers aligned to the element size.

use std::sync::Arc;

use super::format::ImageFormat;
use super::{image_limits, mem_object, ImageDesc};
use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::buffer::{mem_flags, mem_info, Buffer};
use crate::runtime::context::Context;
use crate::runtime::info::{device_info, device_param, InfoValue};

/// The largest answer to `param` (a pixel count) among the context's
/// devices with images; 1 if none answers more.
fn largest(ctx: &Context, param: u32) -> usize {
    ctx.devices()
        .iter()
        .filter(|d| image_limits(d).is_some())
        .filter_map(|d| match device_info(d, param) {
            Ok(InfoValue::U32(v)) => Some(v as usize),
            _ => None,
        })
        .fold(1, usize::max)
}

/// Checks the rules of the module for an image of `format` and `desc` over
/// `buffer`; other images (not 2D, or not from a buffer) pass. A format
/// without an element size passes too: the descriptor checks refuse it.
pub(super) fn check(ctx: &Context, format: ImageFormat, desc: &ImageDesc, buffer: &Arc<Buffer>) -> ClResult<()> {
    if desc.image_type != mem_object::IMAGE2D || desc.buffer.is_none() {
        return Ok(());
    }
    let Ok(element) = format.element_size() else {
        return Ok(());
    };
    let pitch = if desc.row_pitch == 0 { desc.width.saturating_mul(element) } else { desc.row_pitch };
    let pitch_align = largest(ctx, device_param::IMAGE_PITCH_ALIGNMENT).saturating_mul(element);
    if pitch % pitch_align != 0 {
        return cl_err!(
            InvalidImageFormatDescriptor,
            "a 2D image from a buffer needs a row pitch that is a multiple of CL_DEVICE_IMAGE_PITCH_ALIGNMENT pixels \
             ({pitch_align} bytes of this format); {pitch} is not"
        );
    }
    if buffer.flags() & mem_flags::USE_HOST_PTR != 0 {
        let base_align = largest(ctx, device_param::IMAGE_BASE_ADDRESS_ALIGNMENT).saturating_mul(element);
        if let Ok(InfoValue::Usize(host)) = buffer.info(mem_info::HOST_PTR) {
            if host % base_align != 0 {
                return cl_err!(
                    InvalidImageFormatDescriptor,
                    "a 2D image from a CL_MEM_USE_HOST_PTR buffer needs its host_ptr ({host:#x}) aligned to \
                     CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT pixels ({base_align} bytes of this format): make the \
                     buffer over an aligned pointer"
                );
            }
        }
    }
    Ok(())
}
