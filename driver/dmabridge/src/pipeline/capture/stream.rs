//! A streaming buffer queue of a V4L2 device whose buffers are a
//! stream's frames.

use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::frame::{new_frame, Frame, FrameMemory, Storage};
use super::{on, PipelineError};
use crate::ext::khr_external::memory::{self as khr_memory, MemProperties};
use crate::ext::{arm_import, usm};
use crate::runtime::buffer::{mem_flags, store::Location};
use crate::runtime::context::Context;
use crate::sys::v4l2::{BufType, Dequeued, FourCc, Memory, PixFormat, VideoDevice};

/// What a stream asks of its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamConfig {
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in lines.
    pub height: u32,
    /// Pixel format.
    pub fourcc: FourCc,
    /// Frames per second (`VIDIOC_S_PARM`); `None` keeps the device's.
    pub fps: Option<u32>,
    /// How many buffers to ask for.
    pub buffers: u32,
    /// Where the frames live.
    pub memory: FrameMemory,
}

impl Default for StreamConfig {
    /// 640x480 YUYV at the device's rate, 4 buffer objects.
    fn default() -> StreamConfig {
        StreamConfig {
            width: 640,
            height: 480,
            fourcc: FourCc::YUYV,
            fps: None,
            buffers: 4,
            memory: FrameMemory::Buffer,
        }
    }
}

/// One streaming buffer queue of a V4L2 device, its buffers dmabridge
/// memory queued as dma-bufs (`V4L2_MEMORY_DMABUF`), or the driver's own
/// imported into dmabridge ([`FrameMemory::Driver`], `V4L2_MEMORY_MMAP`).
///
/// Dropping it stops streaming and frees the driver's queue (so the driver
/// lets go of every dma-buf), then frees the frames.
pub struct Stream {
    pub(super) dev: VideoDevice,
    pub(super) ty: BufType,
    memory: Memory,
    pub(super) format: PixFormat,
    pub(super) ctx: Arc<Context>,
    pub(super) frames: Vec<Frame>,
    pub(super) queued: Vec<bool>,
    /// When [`Stream::dequeue`] last handed each frame back.
    pub(super) handed_back: Vec<Option<Instant>>,
    streaming: bool,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.dev.path())
            .field("type", &self.ty)
            .field("format", &self.format)
            .field("frames", &self.frames.len())
            .finish_non_exhaustive()
    }
}

impl Stream {
    /// A capture stream on `dev`: sets the format and rate of `cfg`
    /// (exactly, or [`PipelineError::FormatRefused`]), allocates
    /// `cfg.buffers` frames of `cfg.memory` in `ctx`, exports them and
    /// prepares the driver's queue for them. Nothing is queued yet.
    ///
    /// ```no_run
    /// use dmabridge::pipeline::capture::{find_capture_device, Stream, StreamConfig};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// assert_eq!(stream.format().width, 640);
    /// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
    /// ```
    pub fn capture(ctx: &Arc<Context>, dev: VideoDevice, cfg: &StreamConfig) -> Result<Stream, PipelineError> {
        Stream::new(ctx, dev, BufType::Capture, cfg)
    }

    /// An output stream on `dev`, as [`Stream::capture`]: the driver
    /// consumes the frames queued with [`Stream::queue`].
    ///
    /// ```no_run
    /// use dmabridge::pipeline::capture::{find_capture_device, find_output_beside, Stream, StreamConfig};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let output = find_output_beside(&find_capture_device(None)?)?;
    /// let stream = Stream::output(&ctx, output, &StreamConfig::default())?;
    /// assert_eq!(stream.frames().len(), 4);
    /// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
    /// ```
    pub fn output(ctx: &Arc<Context>, dev: VideoDevice, cfg: &StreamConfig) -> Result<Stream, PipelineError> {
        Stream::new(ctx, dev, BufType::Output, cfg)
    }

    fn new(ctx: &Arc<Context>, dev: VideoDevice, ty: BufType, cfg: &StreamConfig) -> Result<Stream, PipelineError> {
        let (fits, what) = match ty {
            BufType::Capture => (dev.capability().captures(), "capture"),
            BufType::Output => (dev.capability().outputs(), "output"),
        };
        if !fits {
            return Err(PipelineError::WrongKind {
                path: dev.path().to_owned(),
                what,
                caps: dev.capability().device_caps,
            });
        }
        let format = dev.set_format(ty, cfg.width, cfg.height, cfg.fourcc).map_err(on(&dev))?;
        if (format.width, format.height, format.fourcc) != (cfg.width, cfg.height, cfg.fourcc) {
            return Err(PipelineError::FormatRefused {
                path: dev.path().to_owned(),
                asked: format!("{}x{} {}", cfg.width, cfg.height, cfg.fourcc),
                got: format!("{}x{} {}", format.width, format.height, format.fourcc),
            });
        }
        if let Some(fps) = cfg.fps {
            dev.set_frame_rate(ty, fps).map_err(on(&dev))?;
        }
        let memory = match cfg.memory {
            FrameMemory::Driver | FrameMemory::DriverKhr => Memory::Mmap,
            _ => Memory::DmaBuf,
        };
        let granted = dev.request_buffers(ty, memory, cfg.buffers.max(1)).map_err(on(&dev))?;
        let mut stream = Stream {
            dev,
            ty,
            memory,
            format,
            ctx: ctx.clone(),
            frames: Vec::new(),
            queued: Vec::new(),
            handed_back: Vec::new(),
            streaming: false,
        };
        let len = (format.size_image as usize).next_multiple_of(crate::sys::page_size());
        for i in 0..granted {
            let frame = match cfg.memory {
                FrameMemory::Driver => stream.import_driver_buffer(i, false)?,
                FrameMemory::DriverKhr => stream.import_driver_buffer(i, true)?,
                m => new_frame(ctx, m, len)?,
            };
            stream.frames.push(frame);
            stream.queued.push(false);
            stream.handed_back.push(None);
        }
        Ok(stream)
    }

    /// Driver buffer `index` exported as a dma-buf and imported as a buffer
    /// object of the image's size.
    fn import_driver_buffer(&self, index: u32, khr: bool) -> Result<Frame, PipelineError> {
        let len = self.dev.buffer_length(self.ty, Memory::Mmap, index).map_err(on(&self.dev))? as usize;
        let dmabuf = self.dev.export_buffer(self.ty, index).map_err(on(&self.dev))?;
        let size = self.format.size_image as usize;
        let buffer = if khr {
            let props = MemProperties { dma_buf: Some(dmabuf.as_fd()), devices: None };
            // SAFETY: no host pointer.
            unsafe {
                khr_memory::create_buffer_with_properties(&self.ctx, &props, mem_flags::READ_WRITE, size, null_mut())
            }?
        } else {
            arm_import::import_dma_buf(&self.ctx, mem_flags::READ_WRITE, dmabuf.as_fd(), size)?
        };
        Ok(Frame { dmabuf, storage: Storage::Buffer(buffer), len })
    }

    /// The device.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// println!("{}", stream.device().path().display());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn device(&self) -> &VideoDevice {
        &self.dev
    }

    /// The format the driver agreed to.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// assert_eq!(stream.format().bytes_per_line, 640 * 2);
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn format(&self) -> PixFormat {
        self.format
    }

    /// The frames, by buffer index.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// println!("{} frames", stream.frames().len());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// True while the driver holds frame `index` (queued, not yet
    /// dequeued); false for an index past the last frame.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// stream.queue(0)?;
    /// assert!(stream.is_queued(0) && !stream.is_queued(1));
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn is_queued(&self, index: u32) -> bool {
        self.queued.get(index as usize).copied().unwrap_or(false)
    }

    /// Hands frame `index` to the driver: to fill (capture), or to consume
    /// its whole image (output). `CL_INVALID_VALUE`-like misuse (an index
    /// past the last frame, a frame already queued) is
    /// [`PipelineError::Unsupported`].
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// stream.queue(0)?;
    /// assert!(stream.queue(0).is_err(), "already queued");
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn queue(&mut self, index: u32) -> Result<(), PipelineError> {
        let Some(frame) = self.frames.get(index as usize) else {
            return Err(PipelineError::Unsupported(format!("no frame {index}: the stream has {}", self.frames.len())));
        };
        if self.queued[index as usize] {
            return Err(PipelineError::Unsupported(format!("frame {index} is already queued")));
        }
        let used = match self.ty {
            BufType::Capture => 0,
            BufType::Output => self.format.size_image,
        };
        let len = u32::try_from(frame.len).unwrap_or(u32::MAX);
        match self.memory {
            Memory::Mmap => self.dev.queue_mmap(self.ty, index, used),
            Memory::DmaBuf => self.dev.queue_dmabuf(self.ty, index, frame.dmabuf.as_fd(), len, used),
        }
        .map_err(on(&self.dev))?;
        self.queued[index as usize] = true;
        Ok(())
    }

    /// Queues every frame the driver does not hold.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// stream.queue_all()?;
    /// assert!((0..stream.frames().len() as u32).all(|i| stream.is_queued(i)));
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn queue_all(&mut self) -> Result<(), PipelineError> {
        for i in 0..self.frames.len() as u32 {
            if !self.is_queued(i) {
                self.queue(i)?;
            }
        }
        Ok(())
    }

    /// Starts streaming (`VIDIOC_STREAMON`).
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn start(&mut self) -> Result<(), PipelineError> {
        self.dev.stream_on(self.ty).map_err(on(&self.dev))?;
        self.streaming = true;
        Ok(())
    }

    /// Waits up to `timeout` for the driver to hand back a frame (filled,
    /// or consumed); the frame is the application's until queued again.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// let frame = stream.dequeue(Duration::from_secs(5))?;
    /// stream.queue(frame.index)?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn dequeue(&mut self, timeout: Duration) -> Result<Dequeued, PipelineError> {
        let d = self.dev.dequeue(self.ty, self.memory, timeout).map_err(on(&self.dev))?;
        if let Some(q) = self.queued.get_mut(d.index as usize) {
            *q = false;
        }
        if let Some(t) = self.handed_back.get_mut(d.index as usize) {
            *t = Some(Instant::now());
        }
        Ok(d)
    }

    /// Stops streaming (`VIDIOC_STREAMOFF`): the driver gives every frame
    /// back.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// stream.stop()?;
    /// assert!(!stream.is_queued(0));
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn stop(&mut self) -> Result<(), PipelineError> {
        self.dev.stream_off(self.ty).map_err(on(&self.dev))?;
        self.streaming = false;
        self.queued.iter_mut().for_each(|q| *q = false);
        Ok(())
    }

    /// Frame bytes dmabridge moved for this stream: what the frames' buffer
    /// objects transferred between their locations (in and out, host and
    /// every device); USM frames are never moved. 0 on the zero-copy path.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// assert_eq!(stream.bytes_copied(), 0);
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn bytes_copied(&self) -> u64 {
        let locations: Vec<Location> = std::iter::once(Location::Host)
            .chain(self.ctx.devices().iter().map(|d| Location::Device(d.index)))
            .collect();
        self.frames
            .iter()
            .filter_map(Frame::buffer)
            .flat_map(|b| locations.iter().map(move |&l| b.stats(l)))
            .map(|s| s.bytes_in + s.bytes_out)
            .sum()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.streaming {
            if let Err(e) = self.dev.stream_off(self.ty) {
                log::warn!("{}: stopping the stream: {e}", self.dev.path().display());
            }
        }
        // Frees the driver's queue: it drops its references to our dma-bufs
        // (its own buffers live on while our imports hold them).
        if let Err(e) = self.dev.request_buffers(self.ty, self.memory, 0) {
            log::warn!("{}: freeing the buffer queue: {e}", self.dev.path().display());
        }
        for frame in &self.frames {
            if let Storage::Usm(p) = frame.storage {
                if let Err(e) = usm::mem_free(&self.ctx, p as *mut u8) {
                    log::warn!("freeing a frame's USM allocation: {e}");
                }
            }
        }
    }
}
