//! Image and sampler arguments of kernels from source, as PoCL takes them:
//! PoCL's own `cl_mem` and `cl_sampler` objects, made for one launch over
//! dmabridge's pages and released after it.
//!
//! **No copy.** A PoCL image is created with `CL_MEM_USE_HOST_PTR` over the
//! address where the launch placed the dmabridge image's pixels, at the
//! image's own row and slice pitches. Measured with PoCL 3.1 (Debian's
//! `pocl-opencl-icd`, pthread device): such an image is used in place —
//! a kernel's `write_image*` lands in the memfd's pages (a second mapping
//! sees it once the launch's event completes, before any read, map or
//! finish), host writes to those pages are what `read_image*` returns, at
//! any row pitch that holds a row and at host pointers aligned to 4 bytes
//! only; `CL_MEM_HOST_PTR` answers the pointer given and a map returns it.
//! PoCL's documentation does not promise it, so `tests/icd/images_ext_test.c`
//! pins it, and each launch checks that PoCL kept the pointer
//! (`CL_MEM_HOST_PTR`) and refuses the launch (`CL_INVALID_OPERATION`,
//! logged) if it did not: never a silent copy whose writes would be lost.
//! PoCL reports `CL_DEVICE_IMAGE_PITCH_ALIGNMENT` 0 (no
//! `cl_khr_image2d_from_buffer`): a 1D image buffer is made over a PoCL
//! buffer that uses the same pages in place.
//!
//! **Formats.** PoCL's formats are fewer than dmabridge's (no `CL_RG`, no
//! video formats): an image whose format PoCL lacks is refused when it is
//! set as an argument ([`supports`]), with the reason.

use std::sync::OnceLock;

use crate::runtime::image::format::ImageFormat;
use crate::runtime::image::mem_object;
use crate::runtime::kernel::ImageAt;
use opencl_sys::*;

use super::{call, check, create, Pocl};

/// PoCL's formats for each image type, asked once.
static FORMATS: OnceLock<Vec<(cl_mem_object_type, Vec<ImageFormat>)>> = OnceLock::new();

/// True if PoCL can make an image of `format` and `image_type`.
pub fn supports(p: &Pocl, format: ImageFormat, image_type: cl_mem_object_type) -> bool {
    let all = FORMATS.get_or_init(|| mem_object::ALL.iter().map(|&t| (t, formats_of(p, t))).collect());
    all.iter().any(|(t, f)| *t == image_type && f.contains(&format))
}

fn formats_of(p: &Pocl, image_type: cl_mem_object_type) -> Vec<ImageFormat> {
    let mut n: cl_uint = 0;
    // SAFETY: PoCL's context; a count answer only.
    let counted = unsafe {
        call!(p, clGetSupportedImageFormats(p.context, CL_MEM_READ_WRITE, image_type, 0, std::ptr::null_mut(), &mut n))
    };
    if check(counted).is_err() || n == 0 {
        return Vec::new();
    }
    let mut f = vec![cl_image_format { image_channel_order: 0, image_channel_data_type: 0 }; n as usize];
    // SAFETY: room for `n` formats.
    let listed = unsafe {
        call!(
            p,
            clGetSupportedImageFormats(
                p.context,
                CL_MEM_READ_WRITE,
                image_type,
                n,
                f.as_mut_ptr(),
                std::ptr::null_mut()
            )
        )
    };
    if check(listed).is_err() {
        return Vec::new();
    }
    f.iter().map(|f| ImageFormat::new(f.image_channel_order, f.image_channel_data_type)).collect()
}

/// A PoCL image over dmabridge's pixels (and the PoCL buffer under a 1D
/// image buffer), released when dropped.
#[derive(Debug)]
pub struct PoclImage {
    pub(crate) mem: cl_mem,
    buffer: Option<cl_mem>,
}

impl Drop for PoclImage {
    fn drop(&mut self) {
        if let Some(p) = super::get() {
            // SAFETY: our references to PoCL's objects.
            unsafe {
                call!(p, clReleaseMemObject(self.mem));
                if let Some(b) = self.buffer {
                    call!(p, clReleaseMemObject(b));
                }
            }
        }
    }
}

impl PoclImage {
    /// PoCL's image over `at` (see the module). `Err` is the launch's status.
    ///
    /// # Safety
    /// `at.ptr` holds the image's pixels, at its pitches, for as long as the
    /// returned image is used (the launch keeps them).
    pub unsafe fn over(p: &Pocl, at: &ImageAt) -> Result<PoclImage, cl_int> {
        let img = &at.image;
        let d = img.desc();
        let f = img.format();
        let format = cl_image_format { image_channel_order: f.order, image_channel_data_type: f.data_type };
        let flags = CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR;
        let host = at.ptr.as_ptr() as *mut std::ffi::c_void;
        let buffer = match img.image_type() {
            mem_object::IMAGE1D_BUFFER => {
                let bytes = d.width * img.element_size();
                // SAFETY: `host` holds `bytes` bytes (the caller).
                Some(unsafe { create!(p, clCreateBuffer(p.context, flags, bytes, host)) }?)
            }
            _ => None,
        };
        let mut desc: cl_image_desc = cl_image_desc {
            image_type: img.image_type(),
            image_width: d.width,
            image_height: d.height,
            image_depth: d.depth,
            image_array_size: d.array_size,
            image_row_pitch: d.row_pitch,
            image_slice_pitch: d.slice_pitch,
            num_mip_levels: 0,
            num_samples: 0,
            buffer: buffer.unwrap_or(std::ptr::null_mut()),
        };
        if buffer.is_some() {
            // PoCL's buffer is the memory: no host pointer, no pitches.
            (desc.image_row_pitch, desc.image_slice_pitch) = (0, 0);
        }
        let (iflags, ihost) = match buffer {
            Some(_) => (CL_MEM_READ_WRITE, std::ptr::null_mut()),
            None => (flags, host),
        };
        // SAFETY: PoCL's context; `ihost` holds the pixels at the pitches
        // given (the caller), or the buffer does.
        let made = unsafe { create!(p, clCreateImage(p.context, iflags, &format, &desc, ihost)) };
        let mem = match made {
            Ok(m) => m,
            Err(code) => {
                if let Some(b) = buffer {
                    // SAFETY: our reference.
                    unsafe { call!(p, clReleaseMemObject(b)) };
                }
                return Err(code);
            }
        };
        let out = PoclImage { mem, buffer };
        // In place or refused: PoCL must use the pointer it was given.
        let held = out.buffer.unwrap_or(out.mem);
        let mut used: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: our object; one pointer answer.
        check(unsafe {
            call!(
                p,
                clGetMemObjectInfo(
                    held,
                    CL_MEM_HOST_PTR,
                    std::mem::size_of_val(&used),
                    (&mut used as *mut *mut std::ffi::c_void).cast(),
                    std::ptr::null_mut()
                )
            )
        })?;
        if used != host {
            log::warn!(
                "PoCL did not use the image's pages in place (CL_MEM_HOST_PTR {used:?}, not {host:?}): the launch is \
                 refused rather than run on a copy whose writes would be lost"
            );
            return Err(CL_INVALID_OPERATION);
        }
        Ok(out)
    }
}

/// A PoCL sampler, released when dropped.
#[derive(Debug)]
pub struct PoclSampler(pub(crate) cl_sampler);

impl Drop for PoclSampler {
    fn drop(&mut self) {
        if let Some(p) = super::get() {
            // SAFETY: our reference.
            unsafe { call!(p, clReleaseSampler(self.0)) };
        }
    }
}

impl PoclSampler {
    /// PoCL's sampler with these properties (`CL_SAMPLER_NORMALIZED_COORDS`,
    /// `_ADDRESSING_MODE`, `_FILTER_MODE`).
    pub fn new(p: &Pocl, normalized: bool, addressing: u32, filter: u32) -> Result<PoclSampler, cl_int> {
        let props: [cl_sampler_properties; 7] = [
            CL_SAMPLER_NORMALIZED_COORDS as cl_sampler_properties,
            cl_sampler_properties::from(normalized),
            CL_SAMPLER_ADDRESSING_MODE as cl_sampler_properties,
            addressing as cl_sampler_properties,
            CL_SAMPLER_FILTER_MODE as cl_sampler_properties,
            filter as cl_sampler_properties,
            0,
        ];
        // SAFETY: PoCL's context; a zero-terminated list.
        unsafe { create!(p, clCreateSamplerWithProperties(p.context, props.as_ptr())) }.map(PoclSampler)
    }
}
