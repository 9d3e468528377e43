//! The YUYV to RGBA conversion with images: each frame is a 2D
//! `CL_YUYV_INTEL` image at the frame's own row pitch (V4L2's
//! `bytesperline`) over the frame's memory, converted by the built-in
//! `yuyv_to_rgba_image` into a `CL_RGBA` image — the same bytes as
//! [`Converter`](super::Converter)'s buffer path, nothing copied.
//!
//! How a frame becomes an image depends on where it lives:
//! - the driver's buffers imported the Khronos way (`DriverKhr`): the
//!   frame's dma-buf is imported as an image
//!   (`clCreateImageWithProperties` with
//!   `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`), each conversion between
//!   acquire and release;
//! - the driver's buffers imported with `clImportMemoryARM` (`Driver`) and
//!   dmabridge's exported buffer objects (`Buffer`): an image over the
//!   frame's buffer (`image_desc.mem_object`, `cl_khr_image2d_from_buffer`);
//! - USM frames have no memory object to make an image of: refused.
//!
//! Each frame's image is made on its first conversion and kept.

use std::os::fd::AsFd;
use std::sync::Arc;

use super::convert::{frame_to_convert, run_bracketed};
use super::frame::Storage;
use super::stream::Stream;
use super::PipelineError;
use crate::ext::khr_external::{image as khr_image, memory as khr_memory};
use crate::runtime::buffer::mem_flags;
use crate::runtime::context::Context;
use crate::runtime::device::DeviceType;
use crate::runtime::image::format::{data_type, order, ImageFormat};
use crate::runtime::image::{mem_object, Image, ImageDesc};
use crate::runtime::kernel::Kernel;
use crate::runtime::queue::{Queue, QueueProps};
use crate::sys::access::Access;
use crate::sys::v4l2::{FourCc, PixFormat};

/// Converts YUYV frames to RGBA through images (see the module), into an
/// RGBA image of its own.
///
/// Fields drop in order: the queue is finished in `Drop`, then the kernel
/// (which holds the images it was given), the images, and last the memory
/// under the RGBA image.
pub struct ImageConverter {
    ctx: Arc<Context>,
    queue: Arc<Queue>,
    kernel: Arc<Kernel>,
    format: PixFormat,
    /// Each frame's image, by buffer index, once made.
    frames: Vec<Option<Arc<Image>>>,
    /// The RGBA image, over `rgba_mem` (`CL_MEM_USE_HOST_PTR`: USM memory
    /// cannot be a host pointer, so plain memory of the process).
    rgba: Arc<Image>,
    rgba_mem: HostBlock,
}

/// Memory of the process under the RGBA image: written only by the kernel
/// through the image, read only by [`ImageConverter::convert`] after the
/// kernel finished; held as an address (not a `Box`, which would claim it
/// unaliased while the kernel writes it) and freed when dropped.
struct HostBlock {
    ptr: usize,
    len: usize,
}

impl HostBlock {
    fn zeroed(len: usize) -> HostBlock {
        HostBlock { ptr: Box::into_raw(vec![0u8; len].into_boxed_slice()) as *mut u8 as usize, len }
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        let slice = std::ptr::slice_from_raw_parts_mut(self.ptr as *mut u8, self.len);
        // SAFETY: made by `Box::into_raw` of a boxed slice of `len` bytes in
        // `zeroed`, freed only here.
        drop(unsafe { Box::from_raw(slice) });
    }
}

impl std::fmt::Debug for ImageConverter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageConverter").field("format", &self.format).finish_non_exhaustive()
    }
}

impl ImageConverter {
    /// A converter for YUYV frames of `format` (any line pitch that holds a
    /// line), on a queue of `ctx`'s CPU device.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// let converter = ImageConverter::new(&ctx, &stream.format())?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn new(ctx: &Arc<Context>, format: &PixFormat) -> Result<ImageConverter, PipelineError> {
        if format.fourcc != FourCc::YUYV {
            return Err(PipelineError::Unsupported(format!(
                "yuyv_to_rgba_image converts YUYV frames, not {}",
                format.fourcc
            )));
        }
        let cpu = ctx
            .devices()
            .iter()
            .find(|d| d.device_type == DeviceType::Cpu)
            .ok_or_else(|| PipelineError::Unsupported("the context has no CPU device to convert on".into()))?;
        let queue = Queue::new(ctx, cpu, QueueProps::default())?;
        let kernel = Kernel::builtin(ctx, cpu, "yuyv_to_rgba_image")?;
        let (w, h) = (format.width as usize, format.height as usize);
        let desc = ImageDesc::new(mem_object::IMAGE2D, [w, h, 1]);
        let len = (w * h * 4).max(1);
        let rgba_mem = HostBlock::zeroed(len);
        let rgba_fmt = ImageFormat::new(order::RGBA, data_type::UNORM_INT8);
        // SAFETY: `rgba_mem` holds the packed image (w * h * 4 bytes) and
        // outlives the image (the last field, dropped after the kernel and
        // the image).
        let rgba = unsafe { Image::create(ctx, mem_flags::USE_HOST_PTR, rgba_fmt, &desc, rgba_mem.ptr as *mut u8) }?;
        Ok(ImageConverter { ctx: ctx.clone(), queue, kernel, format: *format, frames: Vec::new(), rgba, rgba_mem })
    }

    /// The image of frame `index` (made on first use, see the module).
    fn frame_image(&mut self, stream: &Stream, index: u32) -> Result<Arc<Image>, PipelineError> {
        let i = index as usize;
        if let Some(Some(img)) = self.frames.get(i) {
            return Ok(img.clone());
        }
        let frame = &stream.frames[i];
        let f = &self.format;
        let desc = ImageDesc {
            row_pitch: f.bytes_per_line as usize,
            ..ImageDesc::new(mem_object::IMAGE2D, [f.width as usize, f.height as usize, 1])
        };
        let yuyv = ImageFormat::new(order::YUYV_INTEL, data_type::UNORM_INT8);
        let img = match &frame.storage {
            Storage::Buffer(b) if khr_memory::is_external(b) => {
                let props = khr_memory::MemProperties { dma_buf: Some(frame.dmabuf.as_fd()), devices: None };
                // SAFETY: no host pointer.
                unsafe {
                    khr_image::create_image_with_properties(
                        &self.ctx,
                        &props,
                        mem_flags::READ_ONLY,
                        yuyv,
                        &desc,
                        std::ptr::null_mut(),
                    )
                }?
            }
            Storage::Buffer(b) => {
                let desc = ImageDesc { buffer: Some(b.clone()), ..desc };
                Image::over_buffer(&self.ctx, mem_flags::READ_ONLY, yuyv, &desc, b.clone())?
            }
            Storage::Usm(_) => {
                return Err(PipelineError::Unsupported(
                    "frames in USM allocations cannot be images (no memory object to make one of): capture into \
                     buffer objects or the driver's buffers"
                        .into(),
                ))
            }
        };
        if self.frames.len() <= i {
            self.frames.resize(i + 1, None);
        }
        self.frames[i] = Some(img.clone());
        Ok(img)
    }

    /// Converts frame `index` of `stream`, which must be dequeued, and
    /// returns the RGBA image's bytes (4 a pixel, rows packed). The frame's
    /// dma-buf is bracketed for CPU reads while the kernel runs (and between
    /// acquire and release for a Khronos import); no frame byte is copied.
    pub fn convert(&mut self, stream: &Stream, index: u32) -> Result<&[u8], PipelineError> {
        let f = self.format;
        let frame = frame_to_convert(stream, index, &self.ctx, (f.width, f.height, Some(f.bytes_per_line)))?;
        let img = self.frame_image(stream, index)?;
        self.kernel.set_arg_image(0, &img)?;
        self.kernel.set_arg_image(1, &self.rgba)?;
        let device = |error| PipelineError::Device { path: stream.dev.path().to_owned(), error };
        let cpu = frame.dmabuf.cpu_access(Access::Read).map_err(device)?;
        let external = khr_memory::is_external(img.storage()).then(|| std::slice::from_ref(img.storage()));
        // SAFETY: images hold their memory; the frame is dequeued, so the
        // driver does not write it while the kernel reads it.
        unsafe { run_bracketed(&self.queue, &self.kernel, f.height as usize, external) }?;
        cpu.end().map_err(device)?;
        let len = self.format.width as usize * self.format.height as usize * 4;
        // `&self` borrowed for the slice's life keeps the next conversion
        // from writing it.
        // SAFETY: the RGBA image's memory is `rgba_mem`, `len` bytes or more
        // (CL_MEM_USE_HOST_PTR, linked: the finished kernel wrote there).
        Ok(unsafe { std::slice::from_raw_parts(self.rgba_mem.ptr as *const u8, len) })
    }
}

impl Drop for ImageConverter {
    fn drop(&mut self) {
        if let Err(e) = self.queue.finish() {
            log::warn!("finishing the conversion queue: {e}");
        }
    }
}
