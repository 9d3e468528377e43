//! A zero-copy video pipeline on a V4L2 device: frames stream straight
//! between the driver and dmabridge memory, and a built-in kernel converts
//! them on a dmabridge queue.
//!
//! A [`Stream`] is one buffer queue of a device — capture (the driver writes
//! frames) or output (the driver reads them) — whose buffers are dmabridge
//! allocations ([`FrameMemory`]): USM host or shared allocations, or buffer
//! objects, exported as dma-bufs (`cl_dmabridge_dma_buf_export`) and queued
//! with `V4L2_MEMORY_DMABUF`, so the driver reads and writes their pages
//! itself. A [`Converter`] runs the CPU device's `yuyv_to_rgba` built-in on
//! a dequeued frame, in place, inside a `DMA_BUF_IOCTL_SYNC` bracket.
//! The other direction works too: the driver's own buffers, exported with
//! `VIDIOC_EXPBUF`, imported with `clImportMemoryARM`
//! ([`FrameMemory::Driver`]). [`Stream::bytes_copied`] counts the frame
//! bytes dmabridge moved (the buffers' per-location transfer counters): 0
//! on both paths.
//!
//! [`hdmi_loopback`] wires a capture device's HDMI input to an output
//! device's HDMI output the way vivid (the kernel's virtual video driver)
//! offers it, so that a capture returns exactly the frames an output
//! consumed.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::io::Errno;

use crate::error::ClError;
use crate::ext::{arm_import, dma_buf_export, usm};
use crate::runtime::buffer::{mem_flags, store::Location, Buffer};
use crate::runtime::context::Context;
use crate::runtime::event::Event;
use crate::runtime::kernel::{self, Kernel};
use crate::runtime::queue::{Queue, QueueProps};
use crate::sys::access::Access;
use crate::sys::dma_buf::DmaBuf;
use crate::sys::v4l2::{BufType, Dequeued, DvTimings, FourCc, Memory, PixFormat, Port, VideoDevice};
use crate::sys::OsError;

/// Why a pipeline step failed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// No `/dev/video*` node captures video.
    #[error("no V4L2 capture device: load vivid (`modprobe vivid`) or run `make demo`, which uses the QEMU guest")]
    NoCaptureDevice,
    /// No output node shares the capture node's device.
    #[error("no V4L2 output device beside {0} (same bus_info): vivid has one (`modprobe vivid`)")]
    NoOutputDevice(PathBuf),
    /// Another open file streams from the device or holds its buffers.
    #[error(
        "{path} is busy ({op} answered EBUSY): another program is streaming from it or holds its buffers; \
         stop it (`fuser {path}` names it) and try again"
    )]
    Busy {
        /// The device node.
        path: PathBuf,
        /// The ioctl that answered `EBUSY`.
        op: &'static str,
    },
    /// The node does not capture (or output) single-planar video with
    /// streaming I/O.
    #[error("{path} is not a video {what} device with streaming I/O (device caps {caps:#x})")]
    WrongKind {
        /// The device node.
        path: PathBuf,
        /// `"capture"` or `"output"`.
        what: &'static str,
        /// Its `V4L2_CAP_*` bits.
        caps: u32,
    },
    /// The driver chose another format, size or layout than asked for.
    #[error("{path} does not offer {asked}: it chose {got}")]
    FormatRefused {
        /// The device node.
        path: PathBuf,
        /// What was asked for.
        asked: String,
        /// What the driver answered.
        got: String,
    },
    /// A V4L2 call failed.
    #[error("{path}: {error}")]
    Device {
        /// The device node.
        path: PathBuf,
        /// The failed call.
        error: OsError,
    },
    /// An allocation, export or kernel of the runtime failed.
    #[error(transparent)]
    Cl(#[from] ClError),
    /// The device cannot do what was asked (e.g. no HDMI loopback).
    #[error("{0}")]
    Unsupported(String),
    /// The device handed no frame back in the time it was given.
    #[error("{path} gave no frame back within {waited:?}: the device stalled (is its stream running?)")]
    Stalled {
        /// The device node.
        path: PathBuf,
        /// How long it was waited for.
        waited: Duration,
    },
}

fn on(dev: &VideoDevice) -> impl Fn(OsError) -> PipelineError + '_ {
    move |error| match error.errno {
        Errno::BUSY => PipelineError::Busy { path: dev.path().to_owned(), op: error.op },
        _ => PipelineError::Device { path: dev.path().to_owned(), error },
    }
}

/// Where a stream's frames live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameMemory {
    /// USM host allocations (`clHostMemAllocINTEL`), page-aligned.
    UsmHost,
    /// USM shared allocations (`clSharedMemAllocINTEL`), page-aligned.
    UsmShared,
    /// Buffer objects (`CL_MEM_ALLOC_HOST_PTR`): their host pages.
    Buffer,
    /// The driver's own buffers (`V4L2_MEMORY_MMAP`), exported with
    /// `VIDIOC_EXPBUF` and imported as buffer objects with
    /// `clImportMemoryARM(CL_IMPORT_TYPE_DMA_BUF_ARM)`.
    Driver,
}

impl std::str::FromStr for FrameMemory {
    type Err = String;

    fn from_str(s: &str) -> Result<FrameMemory, String> {
        match s {
            "usm-host" => Ok(FrameMemory::UsmHost),
            "usm-shared" => Ok(FrameMemory::UsmShared),
            "buffer" => Ok(FrameMemory::Buffer),
            "driver" => Ok(FrameMemory::Driver),
            _ => Err(format!("{s:?} is not a frame memory (usm-host, usm-shared, buffer or driver)")),
        }
    }
}

enum Storage {
    /// A USM allocation's address.
    Usm(usize),
    Buffer(Arc<Buffer>),
}

/// One buffer of a stream: dmabridge memory and the dma-buf of its pages.
pub struct Frame {
    dmabuf: DmaBuf,
    storage: Storage,
    len: usize,
}

impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frame").field("len", &self.len).finish_non_exhaustive()
    }
}

impl Frame {
    /// The dma-buf the driver reads or writes (its pages are the frame's).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// println!("{} bytes", stream.frames()[0].dmabuf().size().unwrap());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn dmabuf(&self) -> &DmaBuf {
        &self.dmabuf
    }

    /// The USM allocation holding the frame (`None` for a buffer object).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let cfg = StreamConfig { memory: FrameMemory::UsmHost, ..StreamConfig::default() };
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &cfg)?;
    /// assert!(stream.frames()[0].usm_ptr().is_some());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn usm_ptr(&self) -> Option<*mut u8> {
        match self.storage {
            Storage::Usm(p) => Some(p as *mut u8),
            Storage::Buffer(_) => None,
        }
    }

    /// The buffer object holding the frame (`None` for USM).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// assert!(stream.frames()[0].buffer().is_some());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn buffer(&self) -> Option<&Arc<Buffer>> {
        match &self.storage {
            Storage::Usm(_) => None,
            Storage::Buffer(b) => Some(b),
        }
    }

    /// Bytes of the frame's memory handed to the driver (the format's
    /// image size, in whole pages).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// assert!(stream.frames()[0].len() >= stream.format().size_image as usize);
    /// # Ok::<(), PipelineError>(())
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }
}

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
    dev: VideoDevice,
    ty: BufType,
    memory: Memory,
    format: PixFormat,
    ctx: Arc<Context>,
    frames: Vec<Frame>,
    queued: Vec<bool>,
    /// When [`Stream::dequeue`] last handed each frame back.
    handed_back: Vec<Option<Instant>>,
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
            FrameMemory::Driver => Memory::Mmap,
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
                FrameMemory::Driver => stream.import_driver_buffer(i)?,
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
    fn import_driver_buffer(&self, index: u32) -> Result<Frame, PipelineError> {
        let len = self.dev.buffer_length(self.ty, Memory::Mmap, index).map_err(on(&self.dev))? as usize;
        let dmabuf = self.dev.export_buffer(self.ty, index).map_err(on(&self.dev))?;
        let size = self.format.size_image as usize;
        let buffer = arm_import::import_dma_buf(&self.ctx, mem_flags::READ_WRITE, dmabuf.as_fd(), size)?;
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

/// A frame of `len` bytes (whole pages) in `memory`, exported.
fn new_frame(ctx: &Arc<Context>, memory: FrameMemory, len: usize) -> Result<Frame, PipelineError> {
    let ptr = match memory {
        FrameMemory::UsmHost => usm::host_mem_alloc(ctx, &[], len, 0)?,
        FrameMemory::UsmShared => usm::shared_mem_alloc(ctx, None, &[], len, 0)?,
        FrameMemory::Driver => {
            return Err(PipelineError::Unsupported("driver buffers are imported, not allocated".into()))
        }
        FrameMemory::Buffer => {
            // SAFETY: no host pointer.
            let b = unsafe { Buffer::create(ctx, mem_flags::ALLOC_HOST_PTR, len, std::ptr::null_mut()) }?;
            let dmabuf = dma_buf_export::export_buffer(&b, &[])?.dmabuf;
            return Ok(Frame { dmabuf, storage: Storage::Buffer(b), len });
        }
    };
    match dma_buf_export::export_mem_alloc(ctx, ptr.as_ptr(), &[]) {
        // Page-aligned and a whole number of pages: the dma-buf is exactly it.
        Ok(e) if e.offset == 0 => Ok(Frame { dmabuf: e.dmabuf, storage: Storage::Usm(ptr.as_ptr() as usize), len }),
        r => {
            if let Err(e) = usm::mem_free(ctx, ptr.as_ptr()) {
                log::warn!("freeing a frame whose export failed: {e}");
            }
            match r {
                Err(e) => Err(e.into()),
                Ok(e) => Err(PipelineError::Unsupported(format!(
                    "the frame's dma-buf starts {} bytes before it (not page-aligned)",
                    e.offset
                ))),
            }
        }
    }
}

/// Converts YUYV frames to RGBA with the CPU device's `yuyv_to_rgba`
/// built-in on a dmabridge queue, reading the frame where the driver wrote
/// it, into an RGBA image of its own (a USM host allocation).
pub struct Converter {
    ctx: Arc<Context>,
    queue: Arc<Queue>,
    kernel: Arc<Kernel>,
    width: u32,
    height: u32,
    rgba: usize,
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
        let rgba_len = format.width as usize * format.height as usize * 4;
        let rgba = usm::host_mem_alloc(ctx, &[], rgba_len.max(1), 0)?.as_ptr() as usize;
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
        let Some(frame) = stream.frames.get(index as usize) else {
            return Err(PipelineError::Unsupported(format!(
                "no frame {index}: the stream has {}",
                stream.frames.len()
            )));
        };
        if stream.is_queued(index) {
            return Err(PipelineError::Unsupported(format!("frame {index} is queued: the driver owns it")));
        }
        let f = stream.format;
        if (f.width, f.height, f.fourcc) != (self.width, self.height, FourCc::YUYV)
            || !Arc::ptr_eq(&stream.ctx, &self.ctx)
        {
            return Err(PipelineError::Unsupported(format!(
                "this converter takes {}x{} YUYV frames of its own context; the stream's are {}x{} {}",
                self.width, self.height, f.width, f.height, f.fourcc
            )));
        }
        match &frame.storage {
            Storage::Usm(p) => self.kernel.set_arg_mem_pointer(0, *p as *const u8)?,
            Storage::Buffer(b) => self.kernel.set_arg_buffer(0, b)?,
        }
        self.kernel.set_arg_mem_pointer(1, self.rgba as *const u8)?;
        self.kernel.set_arg_scalar(2, &self.width.to_ne_bytes())?;
        self.kernel.set_arg_scalar(3, &self.height.to_ne_bytes())?;
        let cpu = frame
            .dmabuf
            .cpu_access(Access::Read)
            .map_err(|error| PipelineError::Device { path: stream.dev.path().to_owned(), error })?;
        let rows = self.height as usize;
        // The frame is dequeued, so the driver does not write it, and `&mut
        // self` keeps the RGBA image to this launch; both hold the extents
        // the built-in checks (the frame's whole pages, width x height x 4).
        // SAFETY: as above; both stay allocated until the wait below returns.
        let event = unsafe { kernel::enqueue_nd_range(&self.queue, &self.kernel, rows, &[]) }?;
        Event::wait(&[event])?;
        cpu.end().map_err(|error| PipelineError::Device { path: stream.dev.path().to_owned(), error })?;
        let len = self.width as usize * self.height as usize * 4;
        // SAFETY: the image is this converter's USM allocation of `len`
        // bytes, written by the finished kernel; `&self` borrowed for the
        // slice's life keeps the next conversion from writing it.
        Ok(unsafe { std::slice::from_raw_parts(self.rgba as *const u8, len) })
    }
}

impl Drop for Converter {
    fn drop(&mut self) {
        if let Err(e) = self.queue.finish() {
            log::warn!("finishing the conversion queue: {e}");
        }
        if let Err(e) = usm::mem_free(&self.ctx, self.rgba as *mut u8) {
            log::warn!("freeing the RGBA image: {e}");
        }
    }
}

/// The device `path` names, or the first `/dev/video*` node that captures
/// video with streaming I/O; [`PipelineError::NoCaptureDevice`] if there
/// is none, [`PipelineError::WrongKind`] if `path` does not capture.
///
/// ```
/// use dmabridge::pipeline::capture::{find_capture_device, PipelineError};
/// match find_capture_device(None) {
///     Ok(dev) => println!("capturing from {}", dev.path().display()),
///     Err(e) => assert!(matches!(e, PipelineError::NoCaptureDevice | PipelineError::Device { .. })),
/// }
/// ```
pub fn find_capture_device(path: Option<&Path>) -> Result<VideoDevice, PipelineError> {
    if let Some(path) = path {
        let dev = VideoDevice::open(path).map_err(|error| PipelineError::Device { path: path.to_owned(), error })?;
        if !dev.capability().captures() {
            return Err(PipelineError::WrongKind {
                path: path.to_owned(),
                what: "capture",
                caps: dev.capability().device_caps,
            });
        }
        return Ok(dev);
    }
    VideoDevice::list()
        .iter()
        .filter_map(|p| VideoDevice::open(p).ok())
        .find(|d| d.capability().captures())
        .ok_or(PipelineError::NoCaptureDevice)
}

/// The first output node of the same device as `capture` (the same
/// `bus_info`, e.g. vivid's `vid-out` beside its `vid-cap`).
///
/// ```no_run
/// use dmabridge::pipeline::capture::{find_capture_device, find_output_beside};
/// let output = find_output_beside(&find_capture_device(None)?)?;
/// println!("{}", output.path().display());
/// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
/// ```
pub fn find_output_beside(capture: &VideoDevice) -> Result<VideoDevice, PipelineError> {
    VideoDevice::list()
        .iter()
        .filter_map(|p| VideoDevice::open(p).ok())
        .find(|d| d.capability().outputs() && d.capability().bus_info == capture.capability().bus_info)
        .ok_or_else(|| PipelineError::NoOutputDevice(capture.path().to_owned()))
}

/// Connects `output`'s HDMI output to `capture`'s HDMI input, as vivid
/// offers it: selects the HDMI input and output, sets both to the DV
/// timings of `width`x`height` closest to `fps`, and sets the capture
/// device's `"<input> Is Connected To"` menu control to the item naming
/// the output, and its `"OSD Text Mode"` to `"None"` (no counters drawn
/// over the image). From then on the capture side returns exactly the
/// frames the output consumes. Returns the timings.
///
/// ```no_run
/// use dmabridge::pipeline::capture::{find_capture_device, find_output_beside, hdmi_loopback};
/// let capture = find_capture_device(None)?;
/// let output = find_output_beside(&capture)?;
/// let timings = hdmi_loopback(&capture, &output, 640, 480, 60.0)?;
/// println!("{:.2} frames/s", timings.fps());
/// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
/// ```
pub fn hdmi_loopback(
    capture: &VideoDevice,
    output: &VideoDevice,
    width: u32,
    height: u32,
    fps: f64,
) -> Result<DvTimings, PipelineError> {
    let input = hdmi(capture, capture.inputs(), "input")?;
    capture.set_input(input.index).map_err(on(capture))?;
    let (out, timings) = hdmi_output(output, width, height, fps)?;
    capture.set_dv_timings(&timings).map_err(on(capture))?;
    let name = format!("{} Is Connected To", input.name);
    let control = capture.find_control(&name).map_err(on(capture))?.ok_or_else(|| {
        PipelineError::Unsupported(format!("{} has no control {name:?} (not vivid?)", capture.path().display()))
    })?;
    let item = capture
        .menu_items(&control)
        .map_err(on(capture))?
        .into_iter()
        .find(|(_, n)| n.ends_with(&out.name))
        .ok_or_else(|| {
            PipelineError::Unsupported(format!("control {name:?} offers no item naming output {:?}", out.name))
        })?;
    capture.set_control(control.id, item.0 as i32).map_err(on(capture))?;
    // vivid draws its counters over the captured image unless told not to.
    if let Some(osd) = capture.find_control("OSD Text Mode").map_err(on(capture))? {
        let items = capture.menu_items(&osd).map_err(on(capture))?;
        if let Some((none, _)) = items.iter().find(|(_, n)| n == "None") {
            capture.set_control(osd.id, *none as i32).map_err(on(capture))?;
        }
    }
    Ok(timings)
}

/// Selects `output`'s HDMI output and sets it to the DV timings of
/// `width`x`height` closest to `fps`; returns the output and the timings.
/// (An HDMI output takes any size its timings allow; an analog one only its
/// standard's.)
///
/// ```no_run
/// use dmabridge::pipeline::capture::{find_capture_device, find_output_beside, hdmi_output};
/// let output = find_output_beside(&find_capture_device(None)?)?;
/// let (port, timings) = hdmi_output(&output, 1280, 720, 60.0)?;
/// println!("{}: {:.2} frames/s", port.name, timings.fps());
/// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
/// ```
pub fn hdmi_output(
    output: &VideoDevice,
    width: u32,
    height: u32,
    fps: f64,
) -> Result<(Port, DvTimings), PipelineError> {
    let out = hdmi(output, output.outputs(), "output")?;
    output.set_output(out.index).map_err(on(output))?;
    let timings = output
        .dv_timings_list()
        .map_err(on(output))?
        .into_iter()
        .filter(|t| (t.width(), t.height()) == (width, height))
        .min_by(|a, b| (a.fps() - fps).abs().total_cmp(&(b.fps() - fps).abs()))
        .ok_or_else(|| {
            PipelineError::Unsupported(format!("{} has no HDMI timings of {width}x{height}", output.path().display()))
        })?;
    output.set_dv_timings(&timings).map_err(on(output))?;
    Ok((out, timings))
}

/// An output queue that shows another stream's frames: the same dma-bufs
/// queued to the output device (`V4L2_MEMORY_DMABUF`), so a captured frame
/// reaches the output with no copy. Slot `i` of the sink carries frame `i`
/// of the source. A frame the sink shows goes back to the source's queue
/// only after [`Sink::take_back`] returned it: queued earlier, the capture
/// would overwrite it while the output reads it.
pub struct Sink {
    dev: VideoDevice,
    format: PixFormat,
    showing: Vec<bool>,
    streaming: bool,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").field("device", &self.dev.path()).field("format", &self.format).finish_non_exhaustive()
    }
}

impl Sink {
    /// An output queue on `dev` for the frames of `source` (same format;
    /// `fps` frames per second if given and the output has a rate of its
    /// own: an HDMI output runs at its DV timings'), one slot per frame.
    ///
    /// ```no_run
    /// use dmabridge::pipeline::capture::*;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let capture = find_capture_device(None)?;
    /// let output = find_output_beside(&capture)?;
    /// let stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let sink = Sink::new(output, &stream, None)?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn new(dev: VideoDevice, source: &Stream, fps: Option<u32>) -> Result<Sink, PipelineError> {
        if !dev.capability().outputs() {
            return Err(PipelineError::WrongKind {
                path: dev.path().to_owned(),
                what: "output",
                caps: dev.capability().device_caps,
            });
        }
        let f = source.format;
        let format = dev.set_format(BufType::Output, f.width, f.height, f.fourcc).map_err(on(&dev))?;
        if (format.width, format.height, format.fourcc, format.size_image)
            != (f.width, f.height, f.fourcc, f.size_image)
        {
            return Err(PipelineError::FormatRefused {
                path: dev.path().to_owned(),
                asked: format!("{}x{} {}", f.width, f.height, f.fourcc),
                got: format!("{}x{} {} of {} bytes", format.width, format.height, format.fourcc, format.size_image),
            });
        }
        if let Some(fps) = fps {
            match dev.set_frame_rate(BufType::Output, fps) {
                // An HDMI output's rate is its DV timings'.
                Err(e) if e.errno == Errno::NOTTY => {}
                r => r.map(drop).map_err(on(&dev))?,
            }
        }
        let n = source.frames.len() as u32;
        let granted = dev.request_buffers(BufType::Output, Memory::DmaBuf, n).map_err(on(&dev))?;
        if granted < n {
            return Err(PipelineError::Unsupported(format!(
                "{} grants {granted} output buffers, the source has {n} frames",
                dev.path().display()
            )));
        }
        Ok(Sink { dev, format, showing: vec![false; granted as usize], streaming: false })
    }

    /// Queues frame `index` of `source` (dequeued from it: the
    /// application's) for output; streaming starts with the first frame.
    ///
    /// The output starts half a frame period of `source` after
    /// [`Stream::dequeue`] handed that first frame back (this call sleeps
    /// until then, half a second at most), so that the two devices' frame
    /// ticks fall half a period apart. Why: vivid runs its capture and output ticks under one
    /// device lock; started at once they fall on the same jiffy, the output
    /// tick waits for the capture's fill, and it slips past its frame more
    /// often than the capture does — in a loopback every such extra slip
    /// costs a captured frame, for want of a buffer. Measured at 1280x720,
    /// 60 frames/s: ticks 1.2 ms apart, 11 output slips against 7 capture
    /// slips and 7 frames lost; 9 ms apart, about as many output as capture
    /// slips (5/5, 10/10, 5/6, 4/5) and none lost.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// let mut stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let mut sink = Sink::new(output, &stream, None)?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// let frame = stream.dequeue(Duration::from_secs(5))?;
    /// sink.show(&stream, frame.index)?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn show(&mut self, source: &Stream, index: u32) -> Result<(), PipelineError> {
        let (Some(frame), Some(false)) = (source.frames.get(index as usize), self.showing.get(index as usize)) else {
            return Err(PipelineError::Unsupported(format!("frame {index} is not one the sink can take now")));
        };
        if source.is_queued(index) {
            return Err(PipelineError::Unsupported(format!("frame {index} is queued for capture")));
        }
        let len = u32::try_from(frame.len).unwrap_or(u32::MAX);
        self.dev
            .queue_dmabuf(BufType::Output, index, frame.dmabuf.as_fd(), len, self.format.size_image)
            .map_err(on(&self.dev))?;
        self.showing[index as usize] = true;
        if !self.streaming {
            if let Ok((num, den)) = source.dev.frame_rate(source.ty) {
                if num > 0 && den > 0 {
                    // At most half a second: a source slower than 1 frame/s
                    // gains nothing from a longer wait.
                    let half = Duration::from_secs_f64((num as f64 / den as f64 / 2.0).min(0.5));
                    let since = source
                        .handed_back
                        .get(index as usize)
                        .copied()
                        .flatten()
                        .map_or(Duration::ZERO, |t| t.elapsed());
                    std::thread::sleep(half.saturating_sub(since));
                }
            }
            self.dev.stream_on(BufType::Output).map_err(on(&self.dev))?;
            self.streaming = true;
        }
        Ok(())
    }

    /// A frame the output device has consumed, waiting up to `timeout`
    /// (`Ok(None)` when none came back in time): its index in the source,
    /// to be queued there again.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// # let mut stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let mut sink = Sink::new(output, &stream, None)?;
    /// while let Some(shown) = sink.take_back(Duration::ZERO)? {
    ///     stream.queue(shown.index)?;
    /// }
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn take_back(&mut self, timeout: Duration) -> Result<Option<Dequeued>, PipelineError> {
        if !self.showing.contains(&true) {
            return Ok(None);
        }
        match self.dev.dequeue(BufType::Output, Memory::DmaBuf, timeout) {
            Ok(d) => {
                if let Some(s) = self.showing.get_mut(d.index as usize) {
                    *s = false;
                }
                Ok(Some(d))
            }
            Err(e) if e.errno == Errno::TIMEDOUT => Ok(None),
            Err(e) => Err(on(&self.dev)(e)),
        }
    }

    /// Shows frame `index` of `source` (just dequeued from it) on the
    /// output, and hands the frames the output has finished with back to
    /// `source`'s queue — the whole capture → output loopback step.
    ///
    /// It keeps at most [`Sink::DEPTH`] frames on the output, waiting up to
    /// `timeout` for it to give one back when it holds more, and also when
    /// it holds two or more while fewer than two frames are left to capture
    /// into ([`PipelineError::Stalled`] if it gives none). After an error
    /// every frame is still accounted for: queued for capture
    /// ([`Stream::is_queued`]), held by the output ([`Sink::is_showing`]),
    /// or the application's (neither), to queue again or show. Why: the output
    /// consumes a frame per tick of its own clock, at the rate the capture
    /// fills them. Frames the output holds beyond the one it shows and the
    /// next are latency it never works off; they are missing from the
    /// capture queue, and once that queue runs dry at a capture tick the
    /// driver drops the frame (a sequence gap). Measured on vivid at 60
    /// frames/s: left unbounded, the output settled at 4-5 of 6 frames,
    /// and the capture starved 3-7 times in 600 frames; bounded, none.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// let mut stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let mut sink = Sink::new(output, &stream, None)?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// for _ in 0..10 {
    ///     let frame = stream.dequeue(Duration::from_secs(5))?;
    ///     sink.forward(&mut stream, frame.index, Duration::from_secs(5))?;
    ///     assert!(sink.showing() <= Sink::DEPTH);
    /// }
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn forward(&mut self, source: &mut Stream, index: u32, timeout: Duration) -> Result<(), PipelineError> {
        self.show(source, index)?;
        loop {
            // With fewer than two frames left to capture into, a frame the
            // output still holds is worth waiting for, too.
            let capturing = source.queued.iter().filter(|q| **q).count();
            let showing = self.showing();
            let wait = showing > Sink::DEPTH || (capturing < 2 && showing >= 2);
            match self.take_back(if wait { timeout } else { Duration::ZERO })? {
                Some(shown) => source.queue(shown.index)?,
                None if wait => {
                    return Err(PipelineError::Stalled { path: self.dev.path().to_owned(), waited: timeout })
                }
                None => return Ok(()),
            }
        }
    }

    /// How many frames [`Sink::forward`] lets the output hold: the one it
    /// shows and the next.
    pub const DEPTH: usize = 2;

    /// True while the output device holds frame `index` (shown, not yet
    /// taken back).
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// # let stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let sink = Sink::new(output, &stream, None)?;
    /// assert!(!sink.is_showing(0));
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn is_showing(&self, index: u32) -> bool {
        self.showing.get(index as usize).copied().unwrap_or(false)
    }

    /// How many frames the output device holds.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// # let stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let sink = Sink::new(output, &stream, None)?;
    /// assert_eq!(sink.showing(), 0);
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn showing(&self) -> usize {
        self.showing.iter().filter(|s| **s).count()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if self.streaming {
            if let Err(e) = self.dev.stream_off(BufType::Output) {
                log::warn!("{}: stopping the output: {e}", self.dev.path().display());
            }
        }
        if let Err(e) = self.dev.request_buffers(BufType::Output, Memory::DmaBuf, 0) {
            log::warn!("{}: freeing the output queue: {e}", self.dev.path().display());
        }
    }
}

/// The HDMI port (one with DV timings) among `ports` of `dev`.
fn hdmi(dev: &VideoDevice, ports: Result<Vec<Port>, OsError>, what: &str) -> Result<Port, PipelineError> {
    const DV_TIMINGS_CAP: u32 = 2;
    ports
        .map_err(on(dev))?
        .into_iter()
        .find(|p| p.name.starts_with("HDMI") && p.capabilities & DV_TIMINGS_CAP != 0)
        .ok_or_else(|| PipelineError::Unsupported(format!("{} has no HDMI {what}", dev.path().display())))
}
