//! The creation rules of images (`clCreateImage`, OpenCL 3.0 "Image
//! Objects" and `cl_image_desc`): flags, format, descriptor, limits and the
//! pitches, with every size computed without wrapping.

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::buffer::{check_exclusive, mem_flags, Buffer};
use crate::runtime::context::Context;

use super::format::{order, supported_formats, ImageFormat};
use super::{image_limits, mem_object::*, ImageDesc, ImageLimits, KERNEL_READ_AND_WRITE};

/// A checked descriptor: pitches filled in, the element size and the bytes
/// the storage needs.
pub(super) struct Checked {
    pub desc: ImageDesc,
    pub element_size: usize,
    pub size: usize,
}

/// `CL_INVALID_IMAGE_SIZE` for a product that overflows.
fn mul(a: usize, b: usize, what: &str) -> ClResult<usize> {
    match a.checked_mul(b) {
        Some(v) => Ok(v),
        None => cl_err!(InvalidImageSize, "{what} ({a} x {b}) overflows size_t: no memory is that large"),
    }
}

/// The flags `clCreateImage` takes: a buffer's, and `CL_MEM_KERNEL_READ_AND_WRITE`.
pub(super) fn check_flags(flags: u64) -> ClResult<()> {
    check_exclusive(flags & !KERNEL_READ_AND_WRITE)?;
    if flags & mem_flags::USE_HOST_PTR != 0 && flags & (mem_flags::ALLOC_HOST_PTR | mem_flags::COPY_HOST_PTR) != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x}: CL_MEM_USE_HOST_PTR excludes CL_MEM_ALLOC_HOST_PTR and CL_MEM_COPY_HOST_PTR"
        );
    }
    Ok(())
}

/// The flags of an image made from `buffer_flags`' buffer (OpenCL 3.0:
/// access and host access left out are inherited, host pointer flags are
/// the buffer's and may not be given, and an access the buffer excludes is
/// `CL_INVALID_VALUE`).
pub(super) fn inherit_flags(flags: u64, buffer_flags: u64) -> ClResult<u64> {
    use mem_flags::*;
    check_flags(flags)?;
    if flags & HOST_PTR != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x}: an image from a buffer takes no CL_MEM_USE/ALLOC/COPY_HOST_PTR (it has the buffer's)"
        );
    }
    let (b, f) = (buffer_flags, flags);
    let access_conflict = (b & WRITE_ONLY != 0 && f & (READ_WRITE | READ_ONLY) != 0)
        || (b & READ_ONLY != 0 && f & (READ_WRITE | WRITE_ONLY) != 0);
    let host_conflict = (b & HOST_WRITE_ONLY != 0 && f & HOST_READ_ONLY != 0)
        || (b & HOST_READ_ONLY != 0 && f & HOST_WRITE_ONLY != 0)
        || (b & HOST_NO_ACCESS != 0 && f & (HOST_READ_ONLY | HOST_WRITE_ONLY) != 0);
    if access_conflict || host_conflict {
        return cl_err!(
            InvalidValue,
            "flags {f:#x} ask for an access the buffer's flags {b:#x} exclude: leave them out to inherit the buffer's"
        );
    }
    let access = if f & ACCESS != 0 { f & ACCESS } else { b & ACCESS };
    let host = if f & HOST_ACCESS != 0 { f & HOST_ACCESS } else { b & HOST_ACCESS };
    Ok(access | host | (b & HOST_PTR) | (f & KERNEL_READ_AND_WRITE))
}

/// The dimensions that must not be 0 for the type, and the limits check.
fn check_dims(desc: &ImageDesc, l: &ImageLimits) -> ClResult<bool> {
    let d = desc;
    let zero = |what: &str| {
        cl_err!(InvalidImageDescriptor, "{what} is 0: a {} image needs at least 1", type_name(d.image_type))
    };
    if d.width == 0 {
        return zero("image_width");
    }
    if matches!(d.image_type, IMAGE2D | IMAGE2D_ARRAY | IMAGE3D) && d.height == 0 {
        return zero("image_height");
    }
    if d.image_type == IMAGE3D && d.depth == 0 {
        return zero("image_depth");
    }
    if matches!(d.image_type, IMAGE1D_ARRAY | IMAGE2D_ARRAY) && d.array_size == 0 {
        return zero("image_array_size");
    }
    Ok(match d.image_type {
        IMAGE1D => d.width <= l.max_2d,
        IMAGE1D_BUFFER => d.width <= l.max_buffer,
        IMAGE1D_ARRAY => d.width <= l.max_2d && d.array_size <= l.max_array,
        IMAGE2D => d.width <= l.max_2d && d.height <= l.max_2d,
        IMAGE2D_ARRAY => d.width <= l.max_2d && d.height <= l.max_2d && d.array_size <= l.max_array,
        _ => d.width <= l.max_3d && d.height <= l.max_3d && d.depth <= l.max_3d,
    })
}

/// The `CL_MEM_OBJECT_*` name of an image type, for messages.
pub(crate) fn type_name(t: u32) -> &'static str {
    match t {
        IMAGE1D => "CL_MEM_OBJECT_IMAGE1D",
        IMAGE1D_BUFFER => "CL_MEM_OBJECT_IMAGE1D_BUFFER",
        IMAGE1D_ARRAY => "CL_MEM_OBJECT_IMAGE1D_ARRAY",
        IMAGE2D => "CL_MEM_OBJECT_IMAGE2D",
        IMAGE2D_ARRAY => "CL_MEM_OBJECT_IMAGE2D_ARRAY",
        IMAGE3D => "CL_MEM_OBJECT_IMAGE3D",
        _ => "unknown",
    }
}

/// Every creation rule. `pitches_allowed`: a host pointer was given or the
/// image is over existing memory (`over`), so non-zero pitches describe
/// it. `over`: the buffer the pixels must fit in.
pub(super) fn check(
    ctx: &Context,
    flags: u64,
    format: ImageFormat,
    desc: &ImageDesc,
    pitches_allowed: bool,
    over: Option<&Buffer>,
) -> ClResult<Checked> {
    check_flags(flags)?;
    let element_size = format.element_size()?;
    if !ALL.contains(&desc.image_type) {
        return cl_err!(
            InvalidImageDescriptor,
            "image_type {:#x} is no image type (CL_MEM_OBJECT_IMAGE*)",
            desc.image_type
        );
    }
    if desc.num_mip_levels != 0 || desc.num_samples != 0 {
        return cl_err!(
            InvalidImageDescriptor,
            "num_mip_levels {} and num_samples {} must be 0 (no mipmaps or multi-sample images here)",
            desc.num_mip_levels,
            desc.num_samples
        );
    }
    if desc.buffer.is_some() && over.is_none()
        || desc.buffer.is_some() && !matches!(desc.image_type, IMAGE1D_BUFFER | IMAGE2D)
    {
        return cl_err!(
            InvalidImageDescriptor,
            "image_desc->mem_object is set for a {} image: only 1D image buffers (and 2D images from buffers) take one",
            type_name(desc.image_type)
        );
    }
    let limits: Vec<ImageLimits> = ctx.devices().iter().filter_map(|d| image_limits(d)).collect();
    if limits.is_empty() {
        return cl_err!(
            InvalidOperation,
            "no device of the context supports images (CL_DEVICE_IMAGE_SUPPORT): add the CPU device to the context"
        );
    }
    let mut fits = false;
    for l in &limits {
        fits |= check_dims(desc, l)?;
    }
    if !fits {
        return cl_err!(
            InvalidImageSize,
            "a {} image of {}x{}x{} (array size {}) exceeds the context's image limits (CL_DEVICE_IMAGE*_MAX_*: {:?})",
            type_name(desc.image_type),
            desc.width,
            desc.height,
            desc.depth,
            desc.array_size,
            limits[0]
        );
    }
    if !supported_formats(desc.image_type).contains(&format) {
        return cl_err!(
            ImageFormatNotSupported,
            "channel order {:#x} with data type {:#x} is not a supported format of {} images (clGetSupportedImageFormats)",
            format.order,
            format.data_type,
            type_name(desc.image_type)
        );
    }
    let even = |v: usize| v % 2 == 0;
    let video_ok = match format.order {
        order::YUYV_INTEL => even(desc.width),
        order::NV12_INTEL => even(desc.width) && even(desc.height),
        _ => true,
    };
    if !video_ok {
        return cl_err!(
            InvalidImageDescriptor,
            "a YUYV image needs an even width, an NV12 image an even width and height (chroma covers 2 pixels): got {}x{}",
            desc.width,
            desc.height
        );
    }
    if !pitches_allowed && (desc.row_pitch != 0 || desc.slice_pitch != 0) {
        return cl_err!(
            InvalidImageDescriptor,
            "image_row_pitch {} / image_slice_pitch {} must be 0 when host_ptr is NULL (dmabridge chooses the layout)",
            desc.row_pitch,
            desc.slice_pitch
        );
    }
    let min_row = mul(desc.width, element_size, "image_width x element size")?;
    let row_pitch = if desc.row_pitch == 0 { min_row } else { desc.row_pitch };
    if row_pitch < min_row || row_pitch % element_size != 0 {
        return cl_err!(
            InvalidImageDescriptor,
            "image_row_pitch {row_pitch} must be at least image_width x element size ({min_row}) and a multiple of the \
             element size ({element_size})"
        );
    }
    let rows = if format.order == order::NV12_INTEL { desc.height / 2 * 3 } else { desc.height };
    let (slice_rows, slices) = match desc.image_type {
        IMAGE1D_ARRAY => (1, desc.array_size),
        IMAGE2D_ARRAY => (rows, desc.array_size),
        IMAGE3D => (rows, desc.depth),
        _ => (0, 0),
    };
    let mut out = desc.clone();
    out.row_pitch = row_pitch;
    let size = if slices > 0 {
        let min_slice = mul(row_pitch, slice_rows, "image_row_pitch x rows")?;
        let slice_pitch = if desc.slice_pitch == 0 { min_slice } else { desc.slice_pitch };
        if slice_pitch < min_slice || slice_pitch % row_pitch != 0 {
            return cl_err!(
                InvalidImageDescriptor,
                "image_slice_pitch {slice_pitch} must be at least {min_slice} (image_row_pitch x {slice_rows}) and a \
                 multiple of image_row_pitch ({row_pitch})"
            );
        }
        out.slice_pitch = slice_pitch;
        mul(slice_pitch, slices, "image_slice_pitch x slices")?
    } else {
        out.slice_pitch = 0;
        match desc.image_type {
            IMAGE2D => mul(row_pitch, rows, "image_row_pitch x image_height")?,
            _ => row_pitch,
        }
    };
    // Only the dimensions of the type are kept (the others read back as 0).
    match desc.image_type {
        IMAGE1D | IMAGE1D_BUFFER => (out.height, out.depth, out.array_size) = (0, 0, 0),
        IMAGE1D_ARRAY => (out.height, out.depth) = (0, 0),
        IMAGE2D => (out.depth, out.array_size) = (0, 0),
        IMAGE2D_ARRAY => out.depth = 0,
        _ => out.array_size = 0,
    }
    let max = ctx.devices().iter().map(|d| d.max_mem_alloc_size).max().unwrap_or(0);
    if size as u64 > max {
        return cl_err!(InvalidImageSize, "the image needs {size} bytes, above CL_DEVICE_MAX_MEM_ALLOC_SIZE ({max})");
    }
    if let Some(b) = over {
        if size > b.size() {
            return cl_err!(
                InvalidImageDescriptor,
                "the image's pixels span {size} bytes at these pitches but its buffer has {}",
                b.size()
            );
        }
    }
    Ok(Checked { desc: out, element_size, size })
}
