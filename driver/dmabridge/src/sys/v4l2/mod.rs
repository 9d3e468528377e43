//! V4L2 video devices (`/dev/videoN`): the ioctls of a zero-copy capture and
//! output pipeline.
//!
//! A [`VideoDevice`] owns the open device node. It negotiates a single-planar
//! format and frame rate, picks inputs, outputs and DV timings (HDMI), finds
//! and sets controls by name, and streams buffers of two kinds: dma-bufs that
//! someone else owns, queued with `V4L2_MEMORY_DMABUF` (the driver reads or
//! writes their pages directly), and the driver's own buffers
//! (`V4L2_MEMORY_MMAP`), exported as dma-bufs with `VIDIOC_EXPBUF`.
//!
//! The structures mirror `<linux/videodev2.h>` of x86-64/arm64 Linux (their
//! sizes are checked at compile time against the ioctl numbers the header
//! defines). The node is opened non-blocking: [`VideoDevice::dequeue`] waits
//! with `poll(2)` and a timeout, so a driver that stops producing is an error,
//! never a hang.
//!
//! One idea a file: the types and [`VideoDevice`]'s opening here; `raw`
//! (the kernel's structures and ioctl numbers), `format`, `ports` (inputs,
//! outputs, DV timings), `controls`, `streaming` (the buffer queues).

mod controls;
mod format;
mod ports;
mod raw;
mod streaming;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

use super::ioctl::{ioctl_ptr, Opcode};
use super::{OsError, OsResult};
use raw::*;

/// `V4L2_CAP_*` bits of [`Capability::device_caps`].
pub mod caps {
    /// `V4L2_CAP_VIDEO_CAPTURE`: single-planar video capture.
    pub const VIDEO_CAPTURE: u32 = 0x0000_0001;
    /// `V4L2_CAP_VIDEO_OUTPUT`: single-planar video output.
    pub const VIDEO_OUTPUT: u32 = 0x0000_0002;
    /// `V4L2_CAP_STREAMING`: the streaming I/O ioctls.
    pub const STREAMING: u32 = 0x0400_0000;
    /// `V4L2_CAP_DEVICE_CAPS`: `device_caps` is set.
    pub const DEVICE_CAPS: u32 = 0x8000_0000;
}

/// `V4L2_BUF_FLAG_ERROR`: the driver flagged the frame as corrupted.
pub const BUF_FLAG_ERROR: u32 = 0x0000_0040;

/// A pixel format code (`V4L2_PIX_FMT_*`, four ASCII characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FourCc(pub u32);

impl FourCc {
    /// `V4L2_PIX_FMT_YUYV`: packed YUV 4:2:2, Y0 U Y1 V.
    pub const YUYV: FourCc = FourCc::new(*b"YUYV");

    /// The code of four characters (`v4l2_fourcc(a, b, c, d)`).
    ///
    /// No system call.
    ///
    /// ```
    /// use dmabridge::sys::v4l2::FourCc;
    /// assert_eq!(FourCc::new(*b"YUYV"), FourCc::YUYV);
    /// assert_eq!(FourCc::YUYV.0, 0x5659_5559);
    /// assert_eq!(FourCc::YUYV.to_string(), "YUYV");
    /// ```
    pub const fn new(c: [u8; 4]) -> FourCc {
        FourCc(u32::from_le_bytes(c))
    }
}

impl std::fmt::Display for FourCc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0.to_le_bytes();
        if b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
            write!(f, "{}", String::from_utf8_lossy(&b).trim_end())
        } else {
            write!(f, "{:#010x}", self.0)
        }
    }
}

/// The direction of a buffer queue (`enum v4l2_buf_type`, single-planar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum BufType {
    /// `V4L2_BUF_TYPE_VIDEO_CAPTURE`: the driver fills buffers.
    Capture = 1,
    /// `V4L2_BUF_TYPE_VIDEO_OUTPUT`: the driver consumes buffers.
    Output = 2,
}

/// Who allocates a queue's buffers (`enum v4l2_memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Memory {
    /// `V4L2_MEMORY_MMAP`: the driver; export them with
    /// [`VideoDevice::export_buffer`].
    Mmap = 1,
    /// `V4L2_MEMORY_DMABUF`: dma-bufs given at each queueing.
    DmaBuf = 4,
}

fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// What `VIDIOC_QUERYCAP` says about a device node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    /// The driver's name, e.g. `"vivid"`.
    pub driver: String,
    /// The card's name.
    pub card: String,
    /// Where the device is, e.g. `"platform:vivid-000"`; the nodes of one
    /// device share it.
    pub bus_info: String,
    /// The capabilities of this node ([`caps`]; those of the whole device
    /// if the driver gives no per-node set).
    pub device_caps: u32,
}

impl Capability {
    /// True for a node that captures single-planar video with streaming I/O.
    ///
    /// No system call.
    ///
    /// ```
    /// use dmabridge::sys::v4l2::{caps, Capability};
    /// let c = Capability {
    ///     driver: "vivid".into(),
    ///     card: "vivid".into(),
    ///     bus_info: "platform:vivid-000".into(),
    ///     device_caps: caps::VIDEO_CAPTURE | caps::STREAMING,
    /// };
    /// assert!(c.captures() && !c.outputs());
    /// ```
    pub fn captures(&self) -> bool {
        self.device_caps & (caps::VIDEO_CAPTURE | caps::STREAMING) == caps::VIDEO_CAPTURE | caps::STREAMING
    }

    /// True for a node that outputs single-planar video with streaming I/O.
    ///
    /// No system call.
    ///
    /// ```
    /// use dmabridge::sys::v4l2::{caps, Capability};
    /// let c = Capability {
    ///     driver: "vivid".into(),
    ///     card: "vivid".into(),
    ///     bus_info: "platform:vivid-000".into(),
    ///     device_caps: caps::VIDEO_OUTPUT | caps::STREAMING,
    /// };
    /// assert!(c.outputs() && !c.captures());
    /// ```
    pub fn outputs(&self) -> bool {
        self.device_caps & (caps::VIDEO_OUTPUT | caps::STREAMING) == caps::VIDEO_OUTPUT | caps::STREAMING
    }
}

/// A single-planar pixel format (`struct v4l2_pix_format`, the fields a
/// pipeline needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixFormat {
    /// Width in pixels.
    pub width: u32,
    /// Height in lines.
    pub height: u32,
    /// The pixel format.
    pub fourcc: FourCc,
    /// Bytes from one line to the next.
    pub bytes_per_line: u32,
    /// Bytes of one frame: the least a buffer must hold.
    pub size_image: u32,
}

/// A frame the driver handed back (`VIDIOC_DQBUF`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dequeued {
    /// Which buffer.
    pub index: u32,
    /// The driver's frame counter: a gap means dropped frames.
    pub sequence: u32,
    /// Bytes of data in the buffer.
    pub bytes_used: u32,
    /// `V4L2_BUF_FLAG_*` ([`BUF_FLAG_ERROR`] marks a corrupted frame).
    pub flags: u32,
    /// When the frame was captured (or consumed), `CLOCK_MONOTONIC` for
    /// the usual drivers.
    pub timestamp: Duration,
}

impl Dequeued {
    /// Whether the driver flagged the frame as corrupted
    /// ([`BUF_FLAG_ERROR`]: a transfer error, a lost sync): its bytes are
    /// not a picture, and it still has to be queued again.
    pub fn is_corrupted(&self) -> bool {
        self.flags & BUF_FLAG_ERROR != 0
    }
}

/// An input or output of a device (`VIDIOC_ENUMINPUT`/`VIDIOC_ENUMOUTPUT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// Its index for `VIDIOC_S_INPUT`/`VIDIOC_S_OUTPUT`.
    pub index: u32,
    /// Its name, e.g. `"HDMI 000-0"`.
    pub name: String,
    /// `V4L2_IN_CAP_*`/`V4L2_OUT_CAP_*`: 2 means DV timings (HDMI).
    pub capabilities: u32,
}

/// DV timings of a digital video link (`struct v4l2_dv_timings`, BT.656/1120
/// kind): what HDMI inputs and outputs agree on.
#[derive(Clone, Copy)]
pub struct DvTimings(RawDvTimings);

impl std::fmt::Debug for DvTimings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DvTimings({}x{}@{:.2})", self.width(), self.height(), self.fps())
    }
}

impl DvTimings {
    fn u32_at(&self, offset: usize) -> u32 {
        let bt = self.0.bt;
        u32::from_ne_bytes([bt[offset], bt[offset + 1], bt[offset + 2], bt[offset + 3]])
    }

    /// Active pixels per line.
    ///
    /// No system call.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// // DV timings belong to an HDMI input (vivid's default input is a webcam).
    /// dev.set_input(dev.inputs()?.iter().find(|i| i.name.starts_with("HDMI")).map_or(0, |i| i.index))?;
    /// for t in dev.dv_timings_list()? {
    ///     println!("{}x{} at {:.2} frames/s", t.width(), t.height(), t.fps());
    /// }
    /// # dev.set_input(0)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn width(&self) -> u32 {
        self.u32_at(0)
    }

    /// Active lines.
    ///
    /// No system call.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// // DV timings belong to an HDMI input (vivid's default input is a webcam).
    /// dev.set_input(dev.inputs()?.iter().find(|i| i.name.starts_with("HDMI")).map_or(0, |i| i.index))?;
    /// let tallest = dev.dv_timings_list()?.iter().map(|t| t.height()).max();
    /// println!("{tallest:?}");
    /// # dev.set_input(0)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn height(&self) -> u32 {
        self.u32_at(4)
    }

    /// Frames per second: the pixel clock over the total (blanking included)
    /// pixels of a frame; 0 if the timings are incomplete.
    ///
    /// No system call.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// // DV timings belong to an HDMI input (vivid's default input is a webcam).
    /// dev.set_input(dev.inputs()?.iter().find(|i| i.name.starts_with("HDMI")).map_or(0, |i| i.index))?;
    /// let sixty = dev.dv_timings_list()?.into_iter().filter(|t| (t.fps() - 60.0).abs() < 0.1).count();
    /// println!("{sixty} timings run at 60 frames/s");
    /// # dev.set_input(0)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn fps(&self) -> f64 {
        let bt = self.0.bt;
        let pixelclock = u64::from_ne_bytes(bt[16..24].try_into().unwrap_or([0; 8]));
        // Horizontal front porch, sync, back porch; then the vertical ones.
        let h: u64 = (0..3).map(|i| self.u32_at(24 + 4 * i) as u64).sum::<u64>() + self.width() as u64;
        let v: u64 = (3..6).map(|i| self.u32_at(24 + 4 * i) as u64).sum::<u64>() + self.height() as u64;
        match h * v {
            0 => 0.0,
            total => pixelclock as f64 / total as f64,
        }
    }
}

/// A control of a device (`VIDIOC_QUERY_EXT_CTRL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// Its id for [`VideoDevice::set_control`].
    pub id: u32,
    /// Its name, e.g. `"HDMI 000-0 Is Connected To"`.
    pub name: String,
    /// `V4L2_CTRL_TYPE_*` (3 is a menu).
    pub kind: u32,
    /// Smallest value.
    pub minimum: i64,
    /// Largest value.
    pub maximum: i64,
}

/// An open V4L2 device node.
#[derive(Debug)]
pub struct VideoDevice {
    fd: OwnedFd,
    path: PathBuf,
    cap: Capability,
}

impl VideoDevice {
    /// The video device nodes of this machine (`/dev/videoN`), in the order
    /// of N.
    ///
    /// Reads the folder `/dev`.
    ///
    /// ```
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// for path in VideoDevice::list() {
    ///     match VideoDevice::open(&path) {
    ///         Ok(dev) => println!("{}: {}", path.display(), dev.capability().card),
    ///         Err(e) => println!("{}: {e}", path.display()),
    ///     }
    /// }
    /// ```
    pub fn list() -> Vec<PathBuf> {
        let mut nodes: Vec<(u32, PathBuf)> = std::fs::read_dir("/dev")
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let n = e.file_name().to_str()?.strip_prefix("video")?.parse().ok()?;
                        Some((n, e.path()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        nodes.sort();
        nodes.into_iter().map(|(_, p)| p).collect()
    }

    /// Opens a device node (read-write, non-blocking, close-on-exec) and
    /// asks it what it is.
    ///
    /// Wraps `open(2)` and `VIDIOC_QUERYCAP`; a file that is not a V4L2 node
    /// answers `ENOTTY` (op `"VIDIOC_QUERYCAP"`).
    ///
    /// ```
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let err = VideoDevice::open("/dev/null".as_ref()).unwrap_err();
    /// assert_eq!((err.op, err.errno), ("VIDIOC_QUERYCAP", rustix::io::Errno::NOTTY));
    /// let err = VideoDevice::open("/no/such/video".as_ref()).unwrap_err();
    /// assert_eq!(err.errno, rustix::io::Errno::NOENT);
    /// ```
    pub fn open(path: &Path) -> OsResult<VideoDevice> {
        let fd = rustix::fs::open(path, OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty())
            .map_err(OsError::tag("open V4L2 device"))?;
        // SAFETY: zeroes are a valid `struct v4l2_capability`.
        let mut raw: RawCapability = unsafe { std::mem::zeroed() };
        // SAFETY: VIDIOC_QUERYCAP writes one `struct v4l2_capability`,
        // which `RawCapability` mirrors (size checked above).
        unsafe { ioctl_ptr(fd.as_fd(), VIDIOC_QUERYCAP, &mut raw) }.map_err(OsError::tag("VIDIOC_QUERYCAP"))?;
        let device_caps = if raw.capabilities & caps::DEVICE_CAPS != 0 { raw.device_caps } else { raw.capabilities };
        let cap = Capability {
            driver: c_str(&raw.driver),
            card: c_str(&raw.card),
            bus_info: c_str(&raw.bus_info),
            device_caps,
        };
        Ok(VideoDevice { fd, path: path.to_owned(), cap })
    }

    /// The node's path.
    ///
    /// No system call.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// assert_eq!(dev.path(), std::path::Path::new("/dev/video0"));
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What `VIDIOC_QUERYCAP` said when the node was opened.
    ///
    /// No system call.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// println!("{} ({}), capture: {}", dev.capability().card, dev.capability().driver, dev.capability().captures());
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn capability(&self) -> &Capability {
        &self.cap
    }

    fn ioctl<T>(&self, op: &'static str, code: Opcode, arg: &mut T) -> OsResult<i32> {
        // SAFETY: every caller passes the `Raw*` mirror of the structure
        // that `code` (built from that same type's size) reads and writes.
        unsafe { ioctl_ptr(self.fd.as_fd(), code, arg) }.map_err(OsError::tag(op))
    }

    fn pix(raw: &RawFormat) -> PixFormat {
        // SAFETY: the union's first bytes are a `struct v4l2_pix_format`
        // for the single-planar video types this module uses; both are
        // plain integers, and the 200-byte union holds 48.
        let p: RawPixFormat = unsafe { std::ptr::read_unaligned(raw.fmt.as_ptr().cast()) };
        PixFormat {
            width: p.width,
            height: p.height,
            fourcc: FourCc(p.pixelformat),
            bytes_per_line: p.bytesperline,
            size_image: p.sizeimage,
        }
    }
}

impl AsFd for VideoDevice {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
