//! The YUYV to RGBA conversion of a dequeued frame, in place, on a
//! dmabridge queue.

use std::sync::Arc;

use super::frame::Storage;
use super::stream::Stream;
use super::PipelineError;
use crate::ext::khr_external::memory as khr_memory;
use crate::ext::usm;
use crate::runtime::context::Context;
use crate::runtime::event::Event;
use crate::runtime::kernel::{self, Kernel};
use crate::runtime::queue::{Queue, QueueProps};
use crate::sys::access::Access;
use crate::sys::v4l2::{FourCc, PixFormat};

/// Converts YUYV frames to RGBA with the CPU device's `yuyv_to_rgba`
/// built-in on a dmabridge queue, reading the frame where the driver wrote
/// it, into an RGBA image of its own (a USM host allocation).
pub struct Converter {
    ctx: Arc<Context>,
    queue: Arc<Queue>,
    kernel: Arc<Kernel>,
    width: u32,
    height: u32,
    rgba: RgbaUsm,
}

/// The RGBA image a converter writes: a USM host allocation of its
/// context (4 bytes a pixel, rows packed), freed when dropped (after the
/// converter's `Drop` finished its queue).
pub(super) struct RgbaUsm {
    ctx: Arc<Context>,
    ptr: usize,
    len: usize,
}

impl RgbaUsm {
    pub(super) fn new(ctx: &Arc<Context>, width: u32, height: u32) -> Result<RgbaUsm, PipelineError> {
        let len = width as usize * height as usize * 4;
        let ptr = usm::host_mem_alloc(ctx, &[], len.max(1), 0)?.as_ptr() as usize;
        Ok(RgbaUsm { ctx: ctx.clone(), ptr, len })
    }

    /// Its address, for a kernel argument.
    pub(super) fn ptr(&self) -> *const u8 {
        self.ptr as *const u8
    }

    /// Its bytes, once the kernel that wrote them finished.
    ///
    /// # Safety
    /// No command writes the image while the slice lives (the converter's
    /// `&self` borrow keeps the next conversion away).
    pub(super) unsafe fn bytes(&self) -> &[u8] {
        // SAFETY: this USM allocation of `len` bytes lives as long as
        // `self`; the caller keeps writers away.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for RgbaUsm {
    fn drop(&mut self) {
        if let Err(e) = usm::mem_free(&self.ctx, self.ptr as *mut u8) {
            log::warn!("freeing the RGBA image: {e}");
        }
    }
}

impl std::fmt::Debug for Converter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Converter").field("width", &self.width).field("height", &self.height).finish_non_exhaustive()
    }
}

impl Converter {
    /// A converter for frames of `format` (YUYV, lines of exactly twice the
    /// width in bytes), on a queue of `ctx`'s CPU device.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// let converter = Converter::new(&ctx, &stream.format())?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn new(ctx: &Arc<Context>, format: &PixFormat) -> Result<Converter, PipelineError> {
        if format.fourcc != FourCc::YUYV || u64::from(format.bytes_per_line) != u64::from(format.width) * 2 {
            return Err(PipelineError::Unsupported(format!(
                "yuyv_to_rgba converts YUYV frames with lines of {} bytes; this one is {} with lines of {} bytes",
                u64::from(format.width) * 2,
                format.fourcc,
                format.bytes_per_line
            )));
        }
        let cpu = ctx
            .devices()
            .iter()
            .find(|d| d.device_type == crate::runtime::device::DeviceType::Cpu)
            .ok_or_else(|| PipelineError::Unsupported("the context has no CPU device to convert on".into()))?;
        let queue = Queue::new(ctx, cpu, QueueProps::default())?;
        let kernel = Kernel::builtin(ctx, cpu, "yuyv_to_rgba")?;
        let rgba = RgbaUsm::new(ctx, format.width, format.height)?;
        Ok(Converter { ctx: ctx.clone(), queue, kernel, width: format.width, height: format.height, rgba })
    }

    /// Converts frame `index` of `stream`, which must be dequeued (the
    /// application's), and returns the RGBA image (4 bytes a pixel, row
    /// after row). The frame's dma-buf is bracketed for CPU reads while the
    /// kernel runs; no frame byte is copied.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// let mut converter = Converter::new(&ctx, &stream.format())?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// let frame = stream.dequeue(Duration::from_secs(5))?;
    /// let rgba = converter.convert(&stream, frame.index)?;
    /// assert_eq!(rgba.len(), 640 * 480 * 4);
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn convert(&mut self, stream: &Stream, index: u32) -> Result<&[u8], PipelineError> {
        let frame = frame_to_convert(stream, index, &self.ctx, (self.width, self.height, None))?;
        match &frame.storage {
            Storage::Usm(p) => self.kernel.set_arg_mem_pointer(0, *p as *const u8)?,
            Storage::Buffer(b) => self.kernel.set_arg_buffer(0, b)?,
        }
        self.kernel.set_arg_mem_pointer(1, self.rgba.ptr())?;
        self.kernel.set_arg_scalar(2, &self.width.to_ne_bytes())?;
        self.kernel.set_arg_scalar(3, &self.height.to_ne_bytes())?;
        let cpu = frame
            .dmabuf
            .cpu_access(Access::Read)
            .map_err(|error| PipelineError::Device { path: stream.dev.path().to_owned(), error })?;
        // A frame imported the Khronos way is used between acquire and
        // release (which also waits for the driver's fences on it).
        let external = match &frame.storage {
            Storage::Buffer(b) if khr_memory::is_external(b) => Some(std::slice::from_ref(b)),
            _ => None,
        };
        // Both hold the extents the built-in checks (the frame's whole
        // pages, width x height x 4) until the launch ends.
        // SAFETY: the frame is dequeued (the driver does not write it), and
        // `&mut self` keeps the RGBA image to this launch.
        unsafe { run_bracketed(&self.queue, &self.kernel, self.height as usize, external) }?;
        cpu.end().map_err(|error| PipelineError::Device { path: stream.dev.path().to_owned(), error })?;
        // SAFETY: the finished kernel wrote the image; `&self` borrowed for
        // the slice's life keeps the next conversion from writing it.
        Ok(unsafe { self.rgba.bytes() })
    }
}

/// Frame `index` of `stream` if a converter of `ctx` for `(width, height,
/// line pitch if it must be that)` YUYV frames may convert it: it exists,
/// is dequeued (the application's), and has that format.
pub(super) fn frame_to_convert<'s>(
    stream: &'s Stream,
    index: u32,
    ctx: &Arc<Context>,
    (width, height, pitch): (u32, u32, Option<u32>),
) -> Result<&'s super::Frame, PipelineError> {
    let Some(frame) = stream.frames.get(index as usize) else {
        return Err(PipelineError::Unsupported(format!("no frame {index}: the stream has {}", stream.frames.len())));
    };
    if stream.is_queued(index) {
        return Err(PipelineError::Unsupported(format!("frame {index} is queued: the driver owns it")));
    }
    let f = stream.format;
    if (f.width, f.height, f.fourcc) != (width, height, FourCc::YUYV)
        || pitch.is_some_and(|p| p != f.bytes_per_line)
        || !Arc::ptr_eq(&stream.ctx, ctx)
    {
        return Err(PipelineError::Unsupported(format!(
            "this converter takes {width}x{height} YUYV frames of its own context; the stream's are {}x{} {}",
            f.width, f.height, f.fourcc
        )));
    }
    Ok(frame)
}

/// Runs `kernel` over `rows` on `queue` and waits for it; with `external`
/// (a frame imported the Khronos way) between acquire and release, released
/// even when the launch failed, so that the next frame can be acquired (on
/// the in-order queue the release also ends after the kernel).
///
/// # Safety
/// As `kernel::enqueue_nd_range`: what the arguments point to stays valid
/// and unwritten by others until this returns.
pub(super) unsafe fn run_bracketed(
    queue: &Arc<Queue>,
    kernel: &Arc<Kernel>,
    rows: usize,
    external: Option<&[Arc<crate::runtime::buffer::Buffer>]>,
) -> Result<(), PipelineError> {
    run_bracketed_with(queue, external, || {
        // SAFETY: forwarded to the caller.
        unsafe { kernel::enqueue_nd_range(queue, kernel, rows, &[]) }
    })
}

/// As [`run_bracketed`] with the launch `launch` enqueues on `queue` (a
/// kernel from source: [`KernelConverter`](super::KernelConverter)).
pub(super) fn run_bracketed_with(
    queue: &Arc<Queue>,
    external: Option<&[Arc<crate::runtime::buffer::Buffer>]>,
    launch: impl FnOnce() -> crate::error::ClResult<Event>,
) -> Result<(), PipelineError> {
    if let Some(b) = external {
        khr_memory::enqueue_acquire(queue, b, &[])?;
    }
    let launched = launch();
    let event = match external {
        Some(b) => {
            let released = khr_memory::enqueue_release(queue, b, &[]);
            launched?;
            released?
        }
        None => launched?,
    };
    Event::wait(&[event])?;
    Ok(())
}

impl Drop for Converter {
    fn drop(&mut self) {
        // Before `rgba` is freed (fields drop after this).
        if let Err(e) = self.queue.finish() {
            log::warn!("finishing the conversion queue: {e}");
        }
    }
}
