//! A user's OpenCL C kernel on each frame, in place of the built-in
//! conversion (`dmabridge capture --kernel FILE.cl[:NAME]`): compiled by
//! PoCL ([`runtime::program`](crate::runtime::program)), run on a dmabridge
//! queue of the CPU device on the frame where the driver wrote it, into an
//! RGBA image of the converter's own. Nothing is copied: a buffer frame is
//! passed as its pages, a USM frame as its address.
//!
//! The kernel takes the arguments of the built-in `yuyv_to_rgba_strided`
//! ([`FRAME_KERNEL_SIGNATURE`]) and runs over one work-item per pair of
//! pixels, `{ceil(width / 2), height}`, as `examples/cl/yuyv_to_rgba.cl`
//! does (its output is the built-in's, byte for byte).

use std::sync::Arc;

use super::convert::{frame_to_convert, run_bracketed_with, RgbaUsm};
use super::frame::Storage;
use super::stream::Stream;
use super::PipelineError;
use crate::ext::khr_external::memory as khr_memory;
use crate::runtime::context::Context;
use crate::runtime::device::DeviceType;
use crate::runtime::kernel::NdRange;
use crate::runtime::program::pocl::{self, kernel::ArgClass};
use crate::runtime::program::{Kernel, Program};
use crate::runtime::queue::{Queue, QueueProps};
use crate::sys::access::Access;
use crate::sys::v4l2::{FourCc, PixFormat};

/// The arguments a frame kernel takes, in order: the YUYV frame at its
/// line pitch (`src_stride`, V4L2's `bytesperline`), the RGBA image (4
/// bytes a pixel, `dst_stride` = width x 4), the frame's size.
pub const FRAME_KERNEL_SIGNATURE: &str = "kernel void NAME(global const uchar *src, global uchar *dst, \
     uint width, uint height, uint src_stride, uint dst_stride)";

/// Runs a kernel from OpenCL C source on YUYV frames (see the module).
pub struct KernelConverter {
    queue: Arc<Queue>,
    kernel: Kernel,
    ctx: Arc<Context>,
    format: PixFormat,
    range: NdRange,
    rgba: RgbaUsm,
}

impl std::fmt::Debug for KernelConverter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelConverter").field("kernel", &self.kernel.name()).finish_non_exhaustive()
    }
}

/// `PipelineError::Unsupported` saying what is wrong with the kernel and
/// what it must look like.
fn not_a_frame_kernel(name: &str, what: String) -> PipelineError {
    PipelineError::Unsupported(format!(
        "kernel {name:?} {what}: a frame kernel is `{FRAME_KERNEL_SIGNATURE}` (examples/cl/yuyv_to_rgba.cl is one)"
    ))
}

impl KernelConverter {
    /// Builds `source` with `options` for `ctx`'s CPU device and takes its
    /// kernel `name` (`None`: the program's only kernel), for frames of
    /// `format` (YUYV, any line pitch that holds a line).
    ///
    /// Errors: `Unsupported` without PoCL (saying how to install it), for
    /// another format, a program with several kernels and no name, or a
    /// kernel whose arguments are not [`FRAME_KERNEL_SIGNATURE`]'s;
    /// `Build` with the build log when the source does not build; `Cl`
    /// (`CL_INVALID_KERNEL_NAME`) for a name the program lacks.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// let source = std::fs::read_to_string("examples/cl/yuyv_to_rgba.cl").unwrap();
    /// let converter = KernelConverter::new(&ctx, &stream.format(), &source, None, "")?;
    /// assert_eq!(converter.name(), "yuyv_to_rgba");
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn new(
        ctx: &Arc<Context>,
        format: &PixFormat,
        source: &str,
        name: Option<&str>,
        options: &str,
    ) -> Result<KernelConverter, PipelineError> {
        if format.fourcc != FourCc::YUYV {
            return Err(PipelineError::Unsupported(format!("frame kernels take YUYV frames, not {}", format.fourcc)));
        }
        if let Err(u) = pocl::status() {
            return Err(PipelineError::Unsupported(format!(
                "running an OpenCL C kernel on the frames needs PoCL, which compiles it, and PoCL is not available \
                 ({}): {}",
                u.why, u.fix
            )));
        }
        let cpu =
            ctx.devices().iter().find(|d| d.device_type == DeviceType::Cpu).ok_or_else(|| {
                PipelineError::Unsupported("the context has no CPU device to run the kernel on".into())
            })?;
        let program = Program::from_source(ctx, source)?;
        program.build(options)?;
        let name = match name {
            Some(n) => n.to_owned(),
            None => match program.kernel_names()?.as_slice() {
                [one] => one.clone(),
                names => {
                    return Err(PipelineError::Unsupported(format!(
                        "the program has {} kernels ({names:?}): name the one to run (FILE.cl:NAME)",
                        names.len()
                    )))
                }
            },
        };
        let kernel = Kernel::new(&program, &name)?;
        let classes: Vec<ArgClass> = (0..kernel.num_args()).filter_map(|i| kernel.arg_class(i).ok()).collect();
        let expected = [ArgClass::Global, ArgClass::Global, ArgClass::Value, ArgClass::Value, ArgClass::Value];
        if classes.len() != 6 || classes[..5] != expected || classes[5] != ArgClass::Value {
            return Err(not_a_frame_kernel(&name, format!("takes {classes:?}")));
        }
        let (w, h) = (format.width, format.height);
        let scalars = [("width", w), ("height", h), ("src_stride", format.bytes_per_line), ("dst_stride", w * 4)];
        for (i, (what, v)) in scalars.into_iter().enumerate() {
            kernel
                .set_arg_value(i as u32 + 2, &v.to_ne_bytes())
                .map_err(|e| not_a_frame_kernel(&name, format!("refuses a uint {what} as argument {} ({e})", i + 2)))?;
        }
        let range = NdRange::new(&[(w as usize).div_ceil(2).max(1), h as usize], None, None)?;
        let queue = Queue::new(ctx, cpu, QueueProps::default())?;
        let rgba = RgbaUsm::new(ctx, w, h)?;
        kernel.set_arg_pointer(1, rgba.ptr())?;
        Ok(KernelConverter { queue, kernel, ctx: ctx.clone(), format: *format, range, rgba })
    }

    /// The kernel's name.
    ///
    /// See [`KernelConverter::new`].
    pub fn name(&self) -> &str {
        self.kernel.name()
    }

    /// Runs the kernel on frame `index` of `stream`, which must be dequeued
    /// (the application's), and returns the RGBA image (4 bytes a pixel,
    /// row after row). The frame's dma-buf is bracketed for CPU reads while
    /// the kernel runs (and between acquire and release for a Khronos
    /// import); no frame byte is copied.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// let source = std::fs::read_to_string("examples/cl/yuyv_to_rgba.cl").unwrap();
    /// let mut converter = KernelConverter::new(&ctx, &stream.format(), &source, Some("yuyv_to_rgba"), "")?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// let frame = stream.dequeue(Duration::from_secs(5))?;
    /// assert_eq!(converter.convert(&stream, frame.index)?.len(), 640 * 480 * 4);
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn convert(&mut self, stream: &Stream, index: u32) -> Result<&[u8], PipelineError> {
        let f = self.format;
        let frame = frame_to_convert(stream, index, &self.ctx, (f.width, f.height, Some(f.bytes_per_line)))?;
        match &frame.storage {
            Storage::Usm(p) => self.kernel.set_arg_pointer(0, *p as *const u8)?,
            Storage::Buffer(b) => self.kernel.set_arg_buffer(0, b)?,
        }
        let device = |error| PipelineError::Device { path: stream.dev.path().to_owned(), error };
        let cpu = frame.dmabuf.cpu_access(Access::Read).map_err(device)?;
        let external = match &frame.storage {
            Storage::Buffer(b) if khr_memory::is_external(b) => Some(std::slice::from_ref(b)),
            _ => None,
        };
        run_bracketed_with(&self.queue, external, || {
            // SAFETY: the dequeued frame (the driver does not write it) lives as long as
            // the stream; `&mut self` keeps the converter's RGBA image to this launch,
            // which is waited for before this returns.
            unsafe { self.kernel.enqueue(&self.queue, &self.range, &[]) }
        })?;
        cpu.end().map_err(device)?;
        // SAFETY: the finished kernel wrote the image; `&self` borrowed for
        // the slice's life keeps the next conversion from writing it.
        Ok(unsafe { self.rgba.bytes() })
    }
}

impl Drop for KernelConverter {
    fn drop(&mut self) {
        // Before `rgba` is freed (fields drop after this).
        if let Err(e) = self.queue.finish() {
            log::warn!("finishing the kernel's queue: {e}");
        }
    }
}
