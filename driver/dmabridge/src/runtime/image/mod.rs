//! Image objects (`cl_mem` of the `CL_MEM_OBJECT_IMAGE*` types): 1D, 1D
//! buffer, 1D array, 2D, 2D array and 3D images, their formats
//! ([`mod@format`]), commands ([`commands`]) and fill colours ([`fill`]).
//!
//! An image is dmabridge memory like a buffer: its pixels are linear, row
//! after row at [`Image::row_pitch`] and slice after slice at
//! [`Image::slice_pitch`], in the bytes of a [`Buffer`] — its *storage* —
//! from offset 0. So an image has the buffer's linked allocations, can be
//! exported as a dma-buf ([`Image::storage`]`.export_dmabuf`), and its
//! commands are the buffer's rectangle commands (`buffer::rect`) with
//! pixel coordinates turned into bytes; there is no second copy engine.
//! A 1D array's array index plays the part of a row (its stride is the
//! slice pitch), so every type is a (row, slice) rectangle in its storage.
//!
//! # Making an image over memory that already exists
//!
//! Images from buffers (`cl_khr_image2d_from_buffer`, 1D image buffers) and
//! from imported memory (a dma-buf imported as a buffer, `clImportMemoryARM`)
//! are made with [`Image::over_buffer`]: give the buffer (imports make one
//! with `ext::arm_import` or `ext::khr_external` first), the format, and an
//! [`ImageDesc`] whose `row_pitch` (and `slice_pitch`) are the pitches of
//! the memory as it is laid out — 0 means packed. `over_buffer` checks the
//! descriptor and the format, that the pixels fit in the buffer, and the
//! flag rules between the image and the buffer; the image then holds the
//! buffer (its `CL_MEM_ASSOCIATED_MEMOBJECT` when `desc.buffer` names it)
//! and every command runs on the buffer's pages in place: zero copy.
//!
//! ```
//! use dmabridge::runtime::buffer::Buffer;
//! use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
//! use dmabridge::runtime::{context::Context, platform::Platform};
//! let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
//! // SAFETY: no host pointer.
//! let frame = unsafe { Buffer::create(&ctx, 0, 640 * 4 * 480, std::ptr::null_mut()) }?;
//! let desc = ImageDesc { row_pitch: 640 * 4, ..ImageDesc::new(mem_object::IMAGE2D, [640, 480, 1]) };
//! let rgba = ImageFormat::new(order::RGBA, data_type::UNORM_INT8);
//! let img = Image::over_buffer(&ctx, 0, rgba, &desc, frame.clone())?;
//! assert!(std::sync::Arc::ptr_eq(img.storage(), &frame));
//! # Ok::<(), dmabridge::error::ClError>(())
//! ```

pub mod commands;
pub mod fill;
pub mod format;
mod from_buffer;
pub mod sampler;
mod validate;

use std::sync::{Arc, Mutex};

use crate::cl_err;
use crate::error::ClResult;
use crate::sync;

use super::buffer::{mem_flags, mem_info, Buffer};
use super::context::Context;
use super::device::{Device, DeviceType};
use super::info::InfoValue;
use format::ImageFormat;

/// `cl_mem_object_type` values of images.
pub mod mem_object {
    /// `CL_MEM_OBJECT_IMAGE2D`.
    pub const IMAGE2D: u32 = 0x10F1;
    /// `CL_MEM_OBJECT_IMAGE3D`.
    pub const IMAGE3D: u32 = 0x10F2;
    /// `CL_MEM_OBJECT_IMAGE2D_ARRAY`.
    pub const IMAGE2D_ARRAY: u32 = 0x10F3;
    /// `CL_MEM_OBJECT_IMAGE1D`.
    pub const IMAGE1D: u32 = 0x10F4;
    /// `CL_MEM_OBJECT_IMAGE1D_ARRAY`.
    pub const IMAGE1D_ARRAY: u32 = 0x10F5;
    /// `CL_MEM_OBJECT_IMAGE1D_BUFFER`.
    pub const IMAGE1D_BUFFER: u32 = 0x10F6;
    /// Every image type.
    pub const ALL: [u32; 6] = [IMAGE2D, IMAGE3D, IMAGE2D_ARRAY, IMAGE1D, IMAGE1D_ARRAY, IMAGE1D_BUFFER];
}

/// `cl_image_info` values (`clGetImageInfo`).
pub mod image_info {
    /// `CL_IMAGE_FORMAT`.
    pub const FORMAT: u32 = 0x1110;
    /// `CL_IMAGE_ELEMENT_SIZE`.
    pub const ELEMENT_SIZE: u32 = 0x1111;
    /// `CL_IMAGE_ROW_PITCH`.
    pub const ROW_PITCH: u32 = 0x1112;
    /// `CL_IMAGE_SLICE_PITCH`.
    pub const SLICE_PITCH: u32 = 0x1113;
    /// `CL_IMAGE_WIDTH`.
    pub const WIDTH: u32 = 0x1114;
    /// `CL_IMAGE_HEIGHT`.
    pub const HEIGHT: u32 = 0x1115;
    /// `CL_IMAGE_DEPTH`.
    pub const DEPTH: u32 = 0x1116;
    /// `CL_IMAGE_ARRAY_SIZE`.
    pub const ARRAY_SIZE: u32 = 0x1117;
    /// `CL_IMAGE_BUFFER`.
    pub const BUFFER: u32 = 0x1118;
    /// `CL_IMAGE_NUM_MIP_LEVELS`.
    pub const NUM_MIP_LEVELS: u32 = 0x1119;
    /// `CL_IMAGE_NUM_SAMPLES`.
    pub const NUM_SAMPLES: u32 = 0x111A;
}

/// `CL_MEM_KERNEL_READ_AND_WRITE`: an image flag (`clGetSupportedImageFormats`
/// and `clCreateImage`) asking for formats kernels both read and write.
pub const KERNEL_READ_AND_WRITE: u64 = 1 << 12;

/// The limits of the image support of a device (`CL_DEVICE_IMAGE*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// `CL_DEVICE_IMAGE2D_MAX_WIDTH` and `_HEIGHT`.
    pub max_2d: usize,
    /// `CL_DEVICE_IMAGE3D_MAX_WIDTH`, `_HEIGHT` and `_DEPTH`.
    pub max_3d: usize,
    /// `CL_DEVICE_IMAGE_MAX_BUFFER_SIZE` (pixels).
    pub max_buffer: usize,
    /// `CL_DEVICE_IMAGE_MAX_ARRAY_SIZE`.
    pub max_array: usize,
}

/// The CPU device's limits: the full-profile minimums or above (the
/// storage is linear host memory: only `CL_DEVICE_MAX_MEM_ALLOC_SIZE`
/// really bounds an image, and creation checks that too).
pub(crate) const CPU_LIMITS: ImageLimits =
    ImageLimits { max_2d: 16384, max_3d: 2048, max_buffer: 1 << 27, max_array: 2048 };

/// The image limits of `device`, `None` if it has no image support
/// (`CL_DEVICE_IMAGE_SUPPORT` false). Only the CPU device supports images:
/// edu's and the BAR device's kernels are built-in kernels that take no
/// image arguments, and OpenCL asks a device with image support for
/// `CL_DEVICE_MAX_READ_IMAGE_ARGS` ≥ 8 and samplers; their queues refuse
/// image commands (`CL_INVALID_OPERATION`), while the image's memory is
/// still shared with them like any buffer's.
///
/// ```
/// use dmabridge::runtime::image::image_limits;
/// use dmabridge::runtime::platform::Platform;
/// assert!(image_limits(Platform::get().cpu()).is_some());
/// ```
pub fn image_limits(device: &Device) -> Option<ImageLimits> {
    (device.device_type == DeviceType::Cpu).then_some(CPU_LIMITS)
}

/// A `cl_image_desc` (with `mem_object` as `buffer`).
#[derive(Debug, Clone, Default)]
pub struct ImageDesc {
    /// `image_type`: a [`mem_object`] value.
    pub image_type: u32,
    /// `image_width`.
    pub width: usize,
    /// `image_height`.
    pub height: usize,
    /// `image_depth`.
    pub depth: usize,
    /// `image_array_size`.
    pub array_size: usize,
    /// `image_row_pitch`: 0 is packed.
    pub row_pitch: usize,
    /// `image_slice_pitch`: 0 is packed.
    pub slice_pitch: usize,
    /// `num_mip_levels` (must be 0).
    pub num_mip_levels: u32,
    /// `num_samples` (must be 0).
    pub num_samples: u32,
    /// `mem_object`: the buffer of a 1D image buffer (or of a 2D image from
    /// a buffer).
    pub buffer: Option<Arc<Buffer>>,
}

impl ImageDesc {
    /// A descriptor of `image_type` with `size` = (width, height, depth)
    /// for 1D/2D/3D types, (width, array size, -) for a 1D array and
    /// (width, height, array size) for a 2D array; packed pitches.
    ///
    /// ```
    /// use dmabridge::runtime::image::{mem_object, ImageDesc};
    /// let d = ImageDesc::new(mem_object::IMAGE2D_ARRAY, [64, 32, 4]);
    /// assert_eq!((d.width, d.height, d.array_size, d.depth), (64, 32, 4, 0));
    /// ```
    pub fn new(image_type: u32, size: [usize; 3]) -> ImageDesc {
        use mem_object::*;
        let [w, h, d] = size;
        let mut desc = ImageDesc { image_type, width: w, ..ImageDesc::default() };
        match image_type {
            IMAGE1D_ARRAY => desc.array_size = h,
            IMAGE2D => desc.height = h,
            IMAGE2D_ARRAY => (desc.height, desc.array_size) = (h, d),
            IMAGE3D => (desc.height, desc.depth) = (h, d),
            _ => {}
        }
        desc
    }
}

/// An image object. Created by [`Image::create`] or [`Image::over_buffer`];
/// held as `Arc<Image>`.
pub struct Image {
    context: Arc<Context>,
    flags: u64,
    format: ImageFormat,
    /// The descriptor as created, with the pitches of the storage.
    desc: ImageDesc,
    element_size: usize,
    /// The pixels, from offset 0 (see the module's documentation); its
    /// `CL_MEM_HOST_PTR` is the image's (a `USE_HOST_PTR` image's, or that
    /// of the buffer an image was made from).
    storage: Arc<Buffer>,
    /// The image this one views (a 2D image made from a 2D image).
    view_of: Option<Arc<Image>>,
    destructors: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("type", &format_args!("{:#x}", self.desc.image_type))
            .field("format", &self.format)
            .field("size", &[self.desc.width, self.desc.height, self.desc.depth, self.desc.array_size])
            .field("row_pitch", &self.desc.row_pitch)
            .finish_non_exhaustive()
    }
}

impl Image {
    /// `clCreateImage`: an image whose storage is a new buffer of the
    /// context (nothing allocated until first use, as for buffers), or the
    /// application's memory with `CL_MEM_USE_HOST_PTR` (zero copy: the
    /// storage's host pages are `host_ptr`, at the pitches given), or a copy
    /// of it with `CL_MEM_COPY_HOST_PTR` (kept at the pitches given). A 1D
    /// image buffer's storage is `desc.buffer` (see [`Image::over_buffer`]).
    ///
    /// Errors:
    /// - `CL_INVALID_VALUE`: unknown or exclusive flags;
    /// - `CL_INVALID_IMAGE_FORMAT_DESCRIPTOR`: an unknown channel order or
    ///   type, or a pair no format is;
    /// - `CL_INVALID_IMAGE_DESCRIPTOR`: an unknown type, a zero size of the
    ///   type's dimensions, mip levels or samples, pitches with no host
    ///   pointer, pitches too small or not multiples of the element (row) size, a
    ///   buffer given for a type that takes none or missing for a 1D image
    ///   buffer;
    /// - `CL_INVALID_IMAGE_SIZE`: a size above every image device's limits
    ///   ([`image_limits`]), or bytes above `CL_DEVICE_MAX_MEM_ALLOC_SIZE`
    ///   or overflowing `usize`;
    /// - `CL_IMAGE_FORMAT_NOT_SUPPORTED`: a valid format not in
    ///   [`format::supported_formats`] for the type;
    /// - `CL_INVALID_HOST_PTR`: as `clCreateBuffer`;
    /// - `CL_INVALID_OPERATION`: no device of the context supports images.
    ///
    /// # Safety
    /// As [`Buffer::create`] for `host_ptr` with the image's size in bytes
    /// (the pitch times the rows and slices).
    ///
    /// ```
    /// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let rgba = ImageFormat::new(order::RGBA, data_type::UNORM_INT8);
    /// // SAFETY: no host pointer.
    /// let img = unsafe { Image::create(&ctx, 0, rgba, &ImageDesc::new(mem_object::IMAGE2D, [16, 8, 1]), std::ptr::null_mut()) }?;
    /// assert_eq!((img.row_pitch(), img.slice_pitch()), (64, 0));
    /// // SAFETY: no host pointer.
    /// let bad = unsafe { Image::create(&ctx, 0, rgba, &ImageDesc::new(mem_object::IMAGE2D, [16, 0, 1]), std::ptr::null_mut()) };
    /// assert_eq!(bad.unwrap_err().code(), -40); // CL_INVALID_IMAGE_SIZE
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn create(
        ctx: &Arc<Context>,
        flags: u64,
        format: ImageFormat,
        desc: &ImageDesc,
        host_ptr: *mut u8,
    ) -> ClResult<Arc<Image>> {
        if desc.image_type == mem_object::IMAGE1D_BUFFER || desc.buffer.is_some() {
            let Some(buffer) = desc.buffer.clone() else {
                return cl_err!(
                    InvalidImageDescriptor,
                    "a CL_MEM_OBJECT_IMAGE1D_BUFFER image needs its buffer in image_desc->mem_object"
                );
            };
            // The host pointer flags are CL_INVALID_VALUE for an image from
            // another memory object (checked first: with them a host_ptr is
            // no CL_INVALID_HOST_PTR case), a host_ptr without them is
            // CL_INVALID_HOST_PTR.
            if flags & mem_flags::HOST_PTR != 0 {
                return cl_err!(
                    InvalidValue,
                    "flags {flags:#x}: an image from a buffer takes no CL_MEM_USE/ALLOC/COPY_HOST_PTR (it has the buffer's)"
                );
            }
            if !host_ptr.is_null() {
                return cl_err!(
                    InvalidHostPtr,
                    "an image over a buffer takes no host_ptr: its pixels are the buffer's"
                );
            }
            return Image::over_buffer(ctx, flags, format, desc, buffer);
        }
        let v = validate::check(ctx, flags, format, desc, !host_ptr.is_null(), None)?;
        let buffer_flags = flags & !KERNEL_READ_AND_WRITE;
        // SAFETY: the caller's contract, for the `v.size` bytes the pitches span.
        let storage = unsafe { Buffer::create(ctx, buffer_flags, v.size, host_ptr) }?;
        let flags = storage.flags() | (flags & KERNEL_READ_AND_WRITE);
        Ok(Image::wrap(ctx, flags, format, v.desc, v.element_size, storage))
    }

    /// An image whose storage is `buffer`, from offset 0 — the way to make
    /// images from buffers and from imported memory (see the module's
    /// documentation). `desc.buffer`, if set, must be `buffer` (it becomes
    /// `CL_IMAGE_BUFFER` and `CL_MEM_ASSOCIATED_MEMOBJECT`); the pitches are
    /// the memory's (0: packed). Flags left out are the buffer's.
    ///
    /// Errors as [`Image::create`], and `CL_INVALID_VALUE` for a host
    /// pointer flag or an access the buffer's flags exclude (OpenCL 3.0,
    /// images from another memory object), `CL_INVALID_IMAGE_SIZE` for a 1D
    /// image buffer wider than `CL_DEVICE_IMAGE_MAX_BUFFER_SIZE`, and
    /// `CL_INVALID_IMAGE_DESCRIPTOR` when the pixels do not fit in the buffer.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 1024, std::ptr::null_mut()) }?;
    /// let r8 = ImageFormat::new(order::R, data_type::UNSIGNED_INT8);
    /// let desc = dmabridge::runtime::image::ImageDesc { buffer: Some(b.clone()), ..ImageDesc::new(mem_object::IMAGE1D_BUFFER, [1024, 1, 1]) };
    /// assert!(Image::over_buffer(&ctx, 0, r8, &desc, b.clone()).is_ok());
    /// let wide = ImageDesc { width: 1025, ..desc };
    /// assert!(Image::over_buffer(&ctx, 0, r8, &wide, b).is_err()); // does not fit
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn over_buffer(
        ctx: &Arc<Context>,
        flags: u64,
        format: ImageFormat,
        desc: &ImageDesc,
        buffer: Arc<Buffer>,
    ) -> ClResult<Arc<Image>> {
        if !Arc::ptr_eq(buffer.context(), ctx) {
            return cl_err!(InvalidContext, "the image's buffer belongs to another context");
        }
        if desc.buffer.as_ref().is_some_and(|b| !Arc::ptr_eq(b, &buffer)) {
            return cl_err!(InvalidImageDescriptor, "image_desc->mem_object is not the buffer the image is made over");
        }
        let flags = validate::inherit_flags(flags, buffer.flags())?;
        from_buffer::check(ctx, format, desc, &buffer)?;
        // Pitches over existing memory are the memory's: allowed without a
        // host pointer.
        let v = validate::check(ctx, flags, format, desc, true, Some(&buffer))?;
        Ok(Image::wrap(ctx, flags, format, v.desc, v.element_size, buffer))
    }

    /// A 2D image made from the 2D image `of`: the same pixels (shared
    /// storage, same pitches) seen with another, compatible channel order
    /// (OpenCL 3.0, images from images: the descriptor and the data type
    /// must match `of`'s, the order must be one of the "Compatible Image
    /// Channel Orders", e.g. `CL_sRGBA` over `CL_RGBA`; otherwise
    /// `CL_INVALID_IMAGE_FORMAT_DESCRIPTOR`). Flags left out are `of`'s.
    pub fn view(
        ctx: &Arc<Context>,
        flags: u64,
        format: ImageFormat,
        desc: &ImageDesc,
        of: &Arc<Image>,
    ) -> ClResult<Arc<Image>> {
        if !Arc::ptr_eq(of.context(), ctx) {
            return cl_err!(InvalidContext, "the image viewed belongs to another context");
        }
        let flags = validate::inherit_flags(flags, of.flags)?;
        validate::check_view(format, desc, of)?;
        let base = ImageDesc { buffer: None, ..of.desc.clone() };
        let mut v = validate::check(ctx, flags, format, &base, true, None)?;
        v.desc.buffer = None;
        let mut image = Image::wrap(ctx, flags, format, v.desc, v.element_size, of.storage.clone());
        if let Some(img) = Arc::get_mut(&mut image) {
            img.view_of = Some(of.clone());
        }
        Ok(image)
    }

    fn wrap(
        ctx: &Arc<Context>,
        flags: u64,
        format: ImageFormat,
        desc: ImageDesc,
        element_size: usize,
        storage: Arc<Buffer>,
    ) -> Arc<Image> {
        Arc::new(Image {
            context: ctx.clone(),
            flags,
            format,
            desc,
            element_size,
            storage,
            view_of: None,
            destructors: Mutex::new(Vec::new()),
        })
    }

    /// The buffer holding the pixels from offset 0: export it as a dma-buf,
    /// map it, or hand it to a kernel as the image's memory.
    pub fn storage(&self) -> &Arc<Buffer> {
        &self.storage
    }

    /// Its context (`CL_MEM_CONTEXT`).
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// `CL_MEM_FLAGS` (with `CL_MEM_READ_WRITE` when no access flag was given).
    pub fn flags(&self) -> u64 {
        self.flags
    }

    /// `CL_IMAGE_FORMAT`.
    pub fn format(&self) -> ImageFormat {
        self.format
    }

    /// The descriptor, with the storage's pitches.
    pub fn desc(&self) -> &ImageDesc {
        &self.desc
    }

    /// `CL_MEM_TYPE`: a [`mem_object`] value.
    pub fn image_type(&self) -> u32 {
        self.desc.image_type
    }

    /// `CL_IMAGE_ELEMENT_SIZE`.
    pub fn element_size(&self) -> usize {
        self.element_size
    }

    /// `CL_IMAGE_ROW_PITCH`: bytes from one row to the next in the storage.
    pub fn row_pitch(&self) -> usize {
        self.desc.row_pitch
    }

    /// `CL_IMAGE_SLICE_PITCH`: bytes from one slice (3D), 2D array layer or
    /// 1D array element to the next; 0 for 1D and 2D images.
    pub fn slice_pitch(&self) -> usize {
        self.desc.slice_pitch
    }

    /// The size in pixels (x, y, z) as commands address it: y is the 1D
    /// array index or the row (an NV12 image has `height * 3 / 2` rows),
    /// z the 2D array layer or the 3D slice; unused dimensions are 1.
    ///
    /// ```
    /// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let nv12 = ImageFormat::new(order::NV12_INTEL, data_type::UNORM_INT8);
    /// // SAFETY: no host pointer.
    /// let frame = unsafe { Image::create(&ctx, 0, nv12, &ImageDesc::new(mem_object::IMAGE2D, [640, 480, 1]), std::ptr::null_mut()) }?;
    /// assert_eq!(frame.extent(), [640, 720, 1]); // Y rows, then CbCr rows
    /// assert_eq!((frame.row_pitch(), frame.byte_size(), frame.storage().size()), (640, 640 * 720, 640 * 720));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn extent(&self) -> [usize; 3] {
        use mem_object::*;
        let d = &self.desc;
        match d.image_type {
            IMAGE1D | IMAGE1D_BUFFER => [d.width, 1, 1],
            IMAGE1D_ARRAY => [d.width, d.array_size, 1],
            IMAGE2D if d.height > 0 && self.format.order == format::order::NV12_INTEL => [d.width, d.height / 2 * 3, 1],
            IMAGE2D => [d.width, d.height, 1],
            IMAGE2D_ARRAY => [d.width, d.height, d.array_size],
            _ => [d.width, d.height, d.depth],
        }
    }

    /// The pitches of the (row, slice) rectangle that commands use in the
    /// storage: a 1D array's elements are its rows.
    pub(crate) fn rect_pitches(&self) -> (usize, usize) {
        let [_, h, d] = self.extent();
        match self.desc.image_type {
            mem_object::IMAGE1D_ARRAY => (self.desc.slice_pitch, self.desc.slice_pitch * h),
            mem_object::IMAGE2D | mem_object::IMAGE1D | mem_object::IMAGE1D_BUFFER => {
                (self.desc.row_pitch, self.desc.row_pitch * h * d)
            }
            _ => (self.desc.row_pitch, self.desc.slice_pitch),
        }
    }

    /// Bytes the pixels span in the storage.
    pub fn byte_size(&self) -> usize {
        let [_, h, d] = self.extent();
        let (row, slice) = self.rect_pitches();
        match self.desc.image_type {
            mem_object::IMAGE1D | mem_object::IMAGE1D_BUFFER => self.desc.width * self.element_size,
            mem_object::IMAGE1D_ARRAY | mem_object::IMAGE2D => row * h,
            _ => slice * d,
        }
    }

    /// `clSetMemObjectDestructorCallback` for an image: `f` runs when the
    /// image is released for the last time, before its storage goes (if
    /// nothing else holds it); in the reverse order of registration.
    pub fn set_destructor_callback(&self, f: Box<dyn FnOnce() + Send>) {
        sync::lock(&self.destructors).push(f);
    }

    /// `clGetImageInfo`.
    ///
    /// Errors: `CL_INVALID_VALUE` for an unknown `param`.
    ///
    /// ```
    /// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, image_info, mem_object, Image, ImageDesc};
    /// use dmabridge::runtime::info::InfoValue;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let f = ImageFormat::new(order::RG, data_type::UNSIGNED_INT16);
    /// // SAFETY: no host pointer.
    /// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE3D, [8, 4, 2]), std::ptr::null_mut()) }?;
    /// assert_eq!(img.image_info(image_info::SLICE_PITCH)?, InfoValue::Usize(8 * 4 * 4));
    /// assert_eq!(img.image_info(image_info::NUM_SAMPLES)?, InfoValue::U32(0));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn image_info(&self, param: u32) -> ClResult<InfoValue> {
        use image_info::*;
        let d = &self.desc;
        Ok(match param {
            FORMAT => InfoValue::U32s(vec![self.format.order, self.format.data_type]),
            ELEMENT_SIZE => InfoValue::Usize(self.element_size),
            ROW_PITCH => InfoValue::Usize(d.row_pitch),
            SLICE_PITCH => InfoValue::Usize(d.slice_pitch),
            WIDTH => InfoValue::Usize(d.width),
            HEIGHT => InfoValue::Usize(d.height),
            DEPTH => InfoValue::Usize(d.depth),
            ARRAY_SIZE => InfoValue::Usize(d.array_size),
            BUFFER => InfoValue::Mem(d.buffer.clone()),
            NUM_MIP_LEVELS | NUM_SAMPLES => InfoValue::U32(0),
            _ => return cl_err!(InvalidValue, "{param:#x} is not a cl_image_info (0x1110..=0x111A)"),
        })
    }

    /// `clGetMemObjectInfo` for an image: `CL_MEM_TYPE` is the image type,
    /// `CL_MEM_SIZE` the bytes of its storage, `CL_MEM_ASSOCIATED_MEMOBJECT`
    /// the buffer of an image made from one.
    ///
    /// Errors: `CL_INVALID_VALUE` for an unknown `param`.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::mem_info;
    /// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
    /// use dmabridge::runtime::info::InfoValue;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let f = ImageFormat::new(order::R, data_type::FLOAT);
    /// // SAFETY: no host pointer.
    /// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE1D_ARRAY, [16, 3, 1]), std::ptr::null_mut()) }?;
    /// assert_eq!(img.mem_info(mem_info::TYPE)?, InfoValue::U32(mem_object::IMAGE1D_ARRAY));
    /// assert_eq!(img.mem_info(mem_info::SIZE)?, InfoValue::Usize(16 * 4 * 3));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn mem_info(self: &Arc<Self>, param: u32) -> ClResult<InfoValue> {
        Ok(match param {
            mem_info::TYPE => InfoValue::U32(self.desc.image_type),
            mem_info::FLAGS => InfoValue::Bits(self.flags),
            mem_info::SIZE => {
                InfoValue::Usize(if self.desc.buffer.is_some() { self.byte_size() } else { self.storage.size() })
            }
            mem_info::MAP_COUNT => InfoValue::U32(self.storage.map_count() as u32),
            mem_info::REFERENCE_COUNT => InfoValue::U32(Arc::strong_count(self) as u32),
            mem_info::ASSOCIATED_MEMOBJECT => {
                InfoValue::Mem(self.desc.buffer.clone().or_else(|| self.view_of.as_ref().map(|p| p.storage.clone())))
            }
            mem_info::OFFSET => InfoValue::Usize(0),
            mem_info::HOST_PTR | mem_info::CONTEXT | mem_info::USES_SVM_POINTER | mem_info::PROPERTIES => {
                self.storage.info(param)?
            }
            _ => return cl_err!(InvalidValue, "{param:#x} is not a cl_mem_info (0x1100..=0x110A)"),
        })
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let callbacks = std::mem::take(sync::get_mut(&mut self.destructors));
        for f in callbacks.into_iter().rev() {
            f();
        }
    }
}
