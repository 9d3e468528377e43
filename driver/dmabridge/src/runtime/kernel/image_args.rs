//! Image arguments of kernels (`clSetKernelArg` with an image `cl_mem`):
//! the built-ins' image forms and, through the ICD, OpenCL C kernels'
//! `image2d_t`/`image3d_t` arguments.
//!
//! An image is dmabridge memory like a buffer: a launch places the image's
//! storage (a buffer) on the queue's device exactly as it places a buffer
//! argument — made current there before the kernel runs, imported dma-bufs
//! bracketed, written there afterwards — and passes the kernel an
//! [`ImageAt`]: that address and the image, whose format, size and pitches
//! say where each pixel is. No pixel is copied.

use std::sync::Arc;

use super::{ArgKind, Kernel, KernelArgValue};
use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::image::Image;
use crate::sys::addr::HostAddr;

/// An image argument as a running kernel sees it: its pixels at `ptr` (the
/// storage's bytes on the queue's device, from offset 0), laid out as
/// `image` says (`row_pitch`, `slice_pitch`, `format`, `extent`).
#[derive(Debug, Clone)]
pub struct ImageAt {
    /// The address of pixel (0, 0, 0).
    pub ptr: HostAddr,
    /// The image (held while the launch runs).
    pub image: Arc<Image>,
}

impl Kernel {
    /// `clSetKernelArg` with an image object for an image argument: a
    /// launch passes the image's pixels where they lie on the queue's device
    /// ([`ImageAt`]), made current there first, and holds the image until
    /// the argument is set again.
    ///
    /// Errors: `CL_INVALID_ARG_INDEX` for an index past the last argument;
    /// `CL_INVALID_ARG_VALUE` if the argument is not an image;
    /// `CL_INVALID_MEM_OBJECT` for an image of another context.
    ///
    /// ```
    /// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let yuyv = ImageFormat::new(order::YUYV_INTEL, data_type::UNORM_INT8);
    /// // SAFETY: no host pointer.
    /// let img = unsafe { Image::create(&ctx, 0, yuyv, &ImageDesc::new(mem_object::IMAGE2D, [64, 8, 1]), std::ptr::null_mut()) }?;
    /// let k = Kernel::builtin(&ctx, cpu, "yuyv_to_rgba_image")?;
    /// k.set_arg_image(0, &img)?;
    /// assert_eq!(k.set_arg_image(2, &img).unwrap_err().code(), -49); // CL_INVALID_ARG_INDEX
    /// let copy = Kernel::builtin(&ctx, cpu, "copy_bytes")?;
    /// assert_eq!(copy.set_arg_image(0, &img).unwrap_err().code(), -50); // CL_INVALID_ARG_VALUE: a pointer
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_arg_image(&self, index: u32, image: &Arc<Image>) -> ClResult<()> {
        match self.kind(index)? {
            ArgKind::Image if !Arc::ptr_eq(image.context(), self.context()) => {
                cl_err!(InvalidMemObject, "argument {index}: the image belongs to another context than the kernel")
            }
            ArgKind::Image => {
                self.state().args[index as usize] = Some(KernelArgValue::Image(image.clone()));
                Ok(())
            }
            ArgKind::Pointer => cl_err!(
                InvalidArgValue,
                "argument {index} is a pointer, not an image: pass a buffer (clCreateImage over a buffer makes an image of its bytes, not the reverse)"
            ),
            ArgKind::Scalar(n) => cl_err!(InvalidArgValue, "argument {index} is a {n}-byte scalar, not an image"),
        }
    }
}
