//! The image form of the CPU device's `yuyv_to_rgba`: `yuyv_to_rgba_image(src,
//! dst)` takes a `CL_YUYV_INTEL` image in and a `CL_RGBA` image out (2D,
//! the same width and height) and converts every line at each image's own
//! row pitch, with the same code as `yuyv_to_rgba_strided`
//! ([`convert_rows`]): a frame converted through images has the same bytes
//! as through buffers.
//!
//! A launch passes an image argument as an [`ImageAt`]: the address of the
//! image's storage on the queue's device and the image, whose format, size
//! and pitches the extents below read. Which image does not fit is said
//! when the launch is enqueued (`CL_INVALID_KERNEL_ARGS`).

use std::ops::Range;

use super::builtin::{convert_rows, Builtin, Extents, IMG};
use super::image_args::ImageAt;
use super::yuyv::Order;
use super::KernelArgValue;
use crate::runtime::image::format::{data_type, order};
use crate::runtime::image::mem_object;

/// `yuyv_to_rgba_image(src image, dst image)`.
pub(super) const YUYV_TO_RGBA_IMAGE: Builtin = Builtin {
    name: "yuyv_to_rgba_image",
    args: &[IMG, IMG],
    extents: yuyv_image_extents,
    disjoint: &[(0, 1)],
    units: |a| geometry(a).map_or(0, |g| g.height),
    run: yuyv_image_units,
    engine: false,
    // As the strided conversions: SIMD lines on one thread.
    split: false,
};

/// What the conversion needs of its two images.
struct Geometry {
    width: usize,
    height: usize,
    src: (usize, usize),
    dst: (usize, usize),
}

fn image(a: &[KernelArgValue], i: usize) -> Option<&ImageAt> {
    match a.get(i) {
        Some(KernelArgValue::ImageAt(at)) => Some(at),
        _ => None,
    }
}

/// Checks the two images and gives (width, height, (src, src pitch), (dst,
/// dst pitch)); `Err` says which image does not fit and why.
fn checked(a: &[KernelArgValue]) -> Result<Geometry, String> {
    let (Some(src), Some(dst)) = (image(a, 0), image(a, 1)) else {
        return Err("both arguments must be images".into());
    };
    let (s, d) = (&src.image, &dst.image);
    if s.image_type() != mem_object::IMAGE2D || d.image_type() != mem_object::IMAGE2D {
        return Err("both images must be 2D images (CL_MEM_OBJECT_IMAGE2D)".into());
    }
    let (sf, df) = (s.format(), d.format());
    if (sf.order, sf.data_type) != (order::YUYV_INTEL, data_type::UNORM_INT8) {
        return Err(format!(
            "argument 0 must be a CL_YUYV_INTEL / CL_UNORM_INT8 image, not order {:#x} / type {:#x}",
            sf.order, sf.data_type
        ));
    }
    if df.order != order::RGBA || !matches!(df.data_type, data_type::UNORM_INT8 | data_type::UNSIGNED_INT8) {
        return Err(format!(
            "argument 1 must be a CL_RGBA image of CL_UNORM_INT8 or CL_UNSIGNED_INT8, not order {:#x} / type {:#x}",
            df.order, df.data_type
        ));
    }
    let ([sw, sh, _], [dw, dh, _]) = (s.extent(), d.extent());
    if (sw, sh) != (dw, dh) {
        return Err(format!("the images differ in size: {sw}x{sh} in, {dw}x{dh} out"));
    }
    Ok(Geometry { width: sw, height: sh, src: (src.ptr.0, s.row_pitch()), dst: (dst.ptr.0, d.row_pitch()) })
}

fn geometry(a: &[KernelArgValue]) -> Option<Geometry> {
    checked(a).ok()
}

/// The bytes each image's lines span: the last line needs only its pixels.
fn yuyv_image_extents(a: &[KernelArgValue]) -> Result<Extents, String> {
    let g = checked(a)?;
    let span = |pitch: usize, line: usize| match g.height {
        0 => Some(0),
        h => (h - 1).checked_mul(pitch)?.checked_add(line),
    };
    let src = span(g.src.1, g.width.div_ceil(2) * 4).ok_or("the YUYV image's size overflows")?;
    let dst = span(g.dst.1, g.width.checked_mul(4).ok_or("width * 4 overflows")?).ok_or("the RGBA size overflows")?;
    Ok(vec![(0, src), (1, dst)])
}

/// # Safety
/// As [`Builtin::run`]: the extents of [`yuyv_image_extents`] are valid,
/// do not overlap, and nothing else writes the lines of `rows`.
unsafe fn yuyv_image_units(a: &[KernelArgValue], rows: Range<usize>) {
    let Some(g) = geometry(a) else { return };
    // SAFETY: every line below the height lies in the extents checked at
    // launch, at each image's own pitch (the caller's contract).
    unsafe { convert_rows(g.src.0 as *const u8, g.dst.0 as *mut u8, g.width, g.src.1, g.dst.1, rows, Order::Rgba) }
}
