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
//! a dequeued frame, in place, inside a `DMA_BUF_IOCTL_SYNC` bracket; a
//! [`KernelConverter`] runs a kernel from OpenCL C source there instead
//! (PoCL compiles it).
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
//!
//! One idea a file: [`PipelineError`] here; `frame` (where frames live),
//! `stream` (the buffer queue), `convert` (the built-in kernel on a frame),
//! `convert_image` (the same through images), `convert_kernel` (a kernel
//! from source on a frame),
//! `sink` (an output showing a stream's frames), `devices` (finding the
//! nodes, the HDMI loopback).

mod convert;
mod convert_image;
mod convert_kernel;
mod devices;
mod frame;
mod sink;
mod stream;

use std::path::PathBuf;
use std::time::Duration;

use rustix::io::Errno;

use crate::error::ClError;
use crate::sys::v4l2::VideoDevice;
use crate::sys::OsError;

pub use convert::Converter;
pub use convert_image::ImageConverter;
pub use convert_kernel::{KernelConverter, FRAME_KERNEL_SIGNATURE};
pub use devices::{find_capture_device, find_output_beside, hdmi_loopback, hdmi_output};
pub use frame::{Frame, FrameMemory};
pub use sink::Sink;
pub use stream::{Stream, StreamConfig};

/// Why a pipeline step failed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// No `/dev/video*` node captures video.
    #[error(
        "no V4L2 capture device: load vivid (`modprobe vivid`){demo}",
        demo = crate::sys::hints::checkout_only(" or run `make demo`, which uses the QEMU guest")
    )]
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
    /// A kernel from source did not build: what failed, with the build log.
    #[error(transparent)]
    Build(#[from] crate::runtime::program::BuildError),
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

pub(super) fn on(dev: &VideoDevice) -> impl Fn(OsError) -> PipelineError + '_ {
    move |error| match error.errno {
        Errno::BUSY => PipelineError::Busy { path: dev.path().to_owned(), op: error.op },
        _ => PipelineError::Device { path: dev.path().to_owned(), error },
    }
}
