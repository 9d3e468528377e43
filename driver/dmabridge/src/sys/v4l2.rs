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

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::dma_buf::DmaBuf;
use super::ioctl::{ioctl_ptr, opcode, Opcode};
use super::{OsError, OsResult};

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
    /// `V4L2_PIX_FMT_UYVY`: packed YUV 4:2:2, U Y0 V Y1.
    pub const UYVY: FourCc = FourCc::new(*b"UYVY");
    /// `V4L2_PIX_FMT_RGB24`: packed R G B.
    pub const RGB24: FourCc = FourCc::new(*b"RGB3");

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

#[repr(C)]
struct RawCapability {
    driver: [u8; 16],
    card: [u8; 32],
    bus_info: [u8; 32],
    version: u32,
    capabilities: u32,
    device_caps: u32,
    reserved: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawPixFormat {
    width: u32,
    height: u32,
    pixelformat: u32,
    field: u32,
    bytesperline: u32,
    sizeimage: u32,
    colorspace: u32,
    priv_: u32,
    flags: u32,
    ycbcr_enc: u32,
    quantization: u32,
    xfer_func: u32,
}

/// `struct v4l2_format`: the type, then a union of 200 bytes that holds
/// pointers (`struct v4l2_window`), hence aligned to 8.
#[repr(C)]
struct RawFormat {
    type_: u32,
    pad: u32,
    fmt: [u64; 25],
}

#[repr(C)]
struct RawRequestBuffers {
    count: u32,
    type_: u32,
    memory: u32,
    capabilities: u32,
    flags: u8,
    reserved: [u8; 3],
}

#[repr(C)]
#[derive(Default)]
struct RawBuffer {
    index: u32,
    type_: u32,
    bytesused: u32,
    flags: u32,
    field: u32,
    pad: u32,
    tv_sec: i64,
    tv_usec: i64,
    timecode: [u32; 4],
    sequence: u32,
    memory: u32,
    /// `m.offset` / `m.userptr` / `m.planes` / `m.fd`.
    m: u64,
    length: u32,
    reserved2: u32,
    request_fd: i32,
    pad2: u32,
}

#[repr(C)]
#[derive(Default)]
struct RawExportBuffer {
    type_: u32,
    index: u32,
    plane: u32,
    flags: u32,
    fd: i32,
    reserved: [u32; 11],
}

/// `struct v4l2_streamparm` with the capture/output member (same layout).
#[repr(C)]
struct RawStreamParm {
    type_: u32,
    capability: u32,
    mode: u32,
    numerator: u32,
    denominator: u32,
    extendedmode: u32,
    buffers: u32,
    reserved: [u32; 4],
    raw: [u32; 40],
}

impl Default for RawStreamParm {
    fn default() -> Self {
        // SAFETY: zeroes are a valid `struct v4l2_streamparm` (integers only).
        unsafe { std::mem::zeroed() }
    }
}

/// `struct v4l2_input` and `struct v4l2_output` share their first fields.
#[repr(C)]
struct RawInput {
    index: u32,
    name: [u8; 32],
    type_: u32,
    audioset: u32,
    tuner: u32,
    std: u64,
    status: u32,
    capabilities: u32,
    reserved: [u32; 3],
}

/// The two enumerations of [`VideoDevice::ports`].
trait RawPort {
    /// The structure asking for port `index`.
    fn at(index: u32) -> Self;
    /// What the driver answered.
    fn port(&self) -> Port;
}

impl RawPort for RawInput {
    fn at(index: u32) -> Self {
        // SAFETY: zeroes are a valid `struct v4l2_input` (integers, bytes).
        RawInput { index, ..unsafe { std::mem::zeroed() } }
    }

    fn port(&self) -> Port {
        Port { index: self.index, name: c_str(&self.name), capabilities: self.capabilities }
    }
}

impl RawPort for RawOutput {
    fn at(index: u32) -> Self {
        // SAFETY: zeroes are a valid `struct v4l2_output` (integers, bytes).
        RawOutput { index, ..unsafe { std::mem::zeroed() } }
    }

    fn port(&self) -> Port {
        Port { index: self.index, name: c_str(&self.name), capabilities: self.capabilities }
    }
}

#[repr(C)]
struct RawOutput {
    index: u32,
    name: [u8; 32],
    type_: u32,
    audioset: u32,
    modulator: u32,
    std: u64,
    capabilities: u32,
    reserved: [u32; 3],
}

/// `struct v4l2_dv_timings` (packed): the type, then `struct
/// v4l2_bt_timings` in a union of 128 bytes.
#[repr(C, packed)]
#[derive(Clone, Copy)]
struct RawDvTimings {
    type_: u32,
    bt: [u8; 128],
}

#[repr(C)]
struct RawEnumDvTimings {
    index: u32,
    pad: u32,
    reserved: [u32; 2],
    timings: RawDvTimings,
}

#[repr(C)]
struct RawQueryExtCtrl {
    id: u32,
    type_: u32,
    name: [u8; 32],
    minimum: i64,
    maximum: i64,
    step: u64,
    default_value: i64,
    flags: u32,
    elem_size: u32,
    elems: u32,
    nr_of_dims: u32,
    dims: [u32; 4],
    reserved: [u32; 32],
}

#[repr(C, packed)]
struct RawQueryMenu {
    id: u32,
    index: u32,
    name: [u8; 32],
    reserved: u32,
}

#[repr(C)]
struct RawControl {
    id: u32,
    value: i32,
}

const VIDIOC_QUERYCAP: Opcode = opcode::read::<RawCapability>(b'V', 0);
const VIDIOC_G_FMT: Opcode = opcode::read_write::<RawFormat>(b'V', 4);
const VIDIOC_S_FMT: Opcode = opcode::read_write::<RawFormat>(b'V', 5);
const VIDIOC_REQBUFS: Opcode = opcode::read_write::<RawRequestBuffers>(b'V', 8);
const VIDIOC_QUERYBUF: Opcode = opcode::read_write::<RawBuffer>(b'V', 9);
const VIDIOC_QBUF: Opcode = opcode::read_write::<RawBuffer>(b'V', 15);
const VIDIOC_EXPBUF: Opcode = opcode::read_write::<RawExportBuffer>(b'V', 16);
const VIDIOC_DQBUF: Opcode = opcode::read_write::<RawBuffer>(b'V', 17);
const VIDIOC_STREAMON: Opcode = opcode::write::<i32>(b'V', 18);
const VIDIOC_STREAMOFF: Opcode = opcode::write::<i32>(b'V', 19);
const VIDIOC_G_PARM: Opcode = opcode::read_write::<RawStreamParm>(b'V', 21);
const VIDIOC_S_PARM: Opcode = opcode::read_write::<RawStreamParm>(b'V', 22);
const VIDIOC_ENUMINPUT: Opcode = opcode::read_write::<RawInput>(b'V', 26);
const VIDIOC_S_CTRL: Opcode = opcode::read_write::<RawControl>(b'V', 28);
const VIDIOC_G_CTRL: Opcode = opcode::read_write::<RawControl>(b'V', 27);
const VIDIOC_QUERYMENU: Opcode = opcode::read_write::<RawQueryMenu>(b'V', 37);
const VIDIOC_S_INPUT: Opcode = opcode::read_write::<i32>(b'V', 39);
const VIDIOC_S_OUTPUT: Opcode = opcode::read_write::<i32>(b'V', 47);
const VIDIOC_ENUMOUTPUT: Opcode = opcode::read_write::<RawOutput>(b'V', 48);
const VIDIOC_S_DV_TIMINGS: Opcode = opcode::read_write::<RawDvTimings>(b'V', 87);
const VIDIOC_G_DV_TIMINGS: Opcode = opcode::read_write::<RawDvTimings>(b'V', 88);
const VIDIOC_ENUM_DV_TIMINGS: Opcode = opcode::read_write::<RawEnumDvTimings>(b'V', 98);
const VIDIOC_QUERY_EXT_CTRL: Opcode = opcode::read_write::<RawQueryExtCtrl>(b'V', 103);

// The sizes `<linux/videodev2.h>` encodes in these ioctl numbers (64-bit).
const _: () = {
    assert!(size_of::<RawCapability>() == 104);
    assert!(size_of::<RawPixFormat>() == 48);
    assert!(size_of::<RawFormat>() == 208);
    assert!(size_of::<RawRequestBuffers>() == 20);
    assert!(size_of::<RawBuffer>() == 88);
    assert!(size_of::<RawExportBuffer>() == 64);
    assert!(size_of::<RawStreamParm>() == 204);
    assert!(size_of::<RawInput>() == 80);
    assert!(size_of::<RawOutput>() == 72);
    assert!(size_of::<RawDvTimings>() == 132);
    assert!(size_of::<RawEnumDvTimings>() == 148);
    assert!(size_of::<RawQueryExtCtrl>() == 232);
    assert!(size_of::<RawQueryMenu>() == 44);
    assert!(size_of::<RawControl>() == 8);
};

const V4L2_CTRL_FLAG_NEXT_CTRL: u32 = 0x8000_0000;
const V4L2_CTRL_FLAG_NEXT_COMPOUND: u32 = 0x4000_0000;
const V4L2_DV_BT_656_1120: u32 = 0;
const V4L2_FIELD_NONE: u32 = 1;

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

    /// The current format of the `ty` queue.
    ///
    /// Wraps `VIDIOC_G_FMT`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// let f = dev.format(BufType::Capture)?;
    /// println!("{}x{} {}", f.width, f.height, f.fourcc);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn format(&self, ty: BufType) -> OsResult<PixFormat> {
        let mut raw = RawFormat { type_: ty as u32, pad: 0, fmt: [0; 25] };
        self.ioctl("VIDIOC_G_FMT", VIDIOC_G_FMT, &mut raw)?;
        Ok(Self::pix(&raw))
    }

    /// Asks for `width`x`height` in `fourcc` (progressive) on the `ty`
    /// queue; returns what the driver chose, which may differ (the caller
    /// checks). `EBUSY` while buffers are allocated, by this or another
    /// open file.
    ///
    /// Wraps `VIDIOC_S_FMT`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, FourCc, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// let f = dev.set_format(BufType::Capture, 640, 480, FourCc::YUYV)?;
    /// assert!(f.size_image >= 640 * 480 * 2);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn set_format(&self, ty: BufType, width: u32, height: u32, fourcc: FourCc) -> OsResult<PixFormat> {
        let mut raw = RawFormat { type_: ty as u32, pad: 0, fmt: [0; 25] };
        let pix = RawPixFormat { width, height, pixelformat: fourcc.0, field: V4L2_FIELD_NONE, ..Default::default() };
        // SAFETY: the 200-byte union starts with the 48-byte pix format.
        unsafe { std::ptr::write_unaligned(raw.fmt.as_mut_ptr().cast(), pix) };
        self.ioctl("VIDIOC_S_FMT", VIDIOC_S_FMT, &mut raw)?;
        Ok(Self::pix(&raw))
    }

    /// Sets the frame rate of the `ty` stream to `fps` frames per second
    /// (a time per frame of 1/`fps`); returns the rate the driver chose as
    /// (numerator, denominator) of the time per frame.
    ///
    /// Wraps `VIDIOC_S_PARM`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// let (num, den) = dev.set_frame_rate(BufType::Capture, 60)?;
    /// println!("{:.2} frames/s", den as f64 / num as f64);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn set_frame_rate(&self, ty: BufType, fps: u32) -> OsResult<(u32, u32)> {
        let mut raw = RawStreamParm { type_: ty as u32, numerator: 1, denominator: fps, ..Default::default() };
        self.ioctl("VIDIOC_S_PARM", VIDIOC_S_PARM, &mut raw)?;
        Ok((raw.numerator, raw.denominator))
    }

    /// The frame rate of the `ty` stream as (numerator, denominator) of the
    /// time per frame.
    ///
    /// Wraps `VIDIOC_G_PARM`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// let (num, den) = dev.frame_rate(BufType::Capture)?;
    /// println!("{num}/{den} s per frame");
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn frame_rate(&self, ty: BufType) -> OsResult<(u32, u32)> {
        let mut raw = RawStreamParm { type_: ty as u32, ..Default::default() };
        self.ioctl("VIDIOC_G_PARM", VIDIOC_G_PARM, &mut raw)?;
        Ok((raw.numerator, raw.denominator))
    }

    /// The inputs of a capture node.
    ///
    /// Wraps `VIDIOC_ENUMINPUT` (index 0, 1, ... until `EINVAL`).
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// let hdmi = dev.inputs()?.into_iter().find(|i| i.name.starts_with("HDMI"));
    /// println!("{hdmi:?}");
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn inputs(&self) -> OsResult<Vec<Port>> {
        self.ports::<RawInput>("VIDIOC_ENUMINPUT", VIDIOC_ENUMINPUT)
    }

    /// The outputs of an output node.
    ///
    /// Wraps `VIDIOC_ENUMOUTPUT` (index 0, 1, ... until `EINVAL`).
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video1".as_ref())?;
    /// for o in dev.outputs()? {
    ///     println!("output {}: {}", o.index, o.name);
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn outputs(&self) -> OsResult<Vec<Port>> {
        self.ports::<RawOutput>("VIDIOC_ENUMOUTPUT", VIDIOC_ENUMOUTPUT)
    }

    /// Index 0, 1, ... of `VIDIOC_ENUMINPUT` or `VIDIOC_ENUMOUTPUT` until
    /// `EINVAL`.
    fn ports<T: RawPort>(&self, op: &'static str, code: Opcode) -> OsResult<Vec<Port>> {
        let mut ports = Vec::new();
        for index in 0.. {
            let mut raw = T::at(index);
            match self.ioctl(op, code, &mut raw) {
                Ok(_) => ports.push(raw.port()),
                Err(e) if e.errno == Errno::INVAL => break,
                Err(e) => return Err(e),
            }
        }
        Ok(ports)
    }

    /// Selects input `index` of a capture node.
    ///
    /// Wraps `VIDIOC_S_INPUT`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.set_input(0)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn set_input(&self, index: u32) -> OsResult<()> {
        let mut i = index as i32;
        self.ioctl("VIDIOC_S_INPUT", VIDIOC_S_INPUT, &mut i).map(drop)
    }

    /// Selects output `index` of an output node.
    ///
    /// Wraps `VIDIOC_S_OUTPUT`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video1".as_ref())?;
    /// dev.set_output(0)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn set_output(&self, index: u32) -> OsResult<()> {
        let mut i = index as i32;
        self.ioctl("VIDIOC_S_OUTPUT", VIDIOC_S_OUTPUT, &mut i).map(drop)
    }

    /// The DV timings the current (HDMI) input or output supports.
    ///
    /// Wraps `VIDIOC_ENUM_DV_TIMINGS` (index 0, 1, ... until `EINVAL`);
    /// `ENODATA` for an input or output without DV timings.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// // DV timings belong to an HDMI input: select one first (vivid's default
    /// // input is a webcam, which answers ENODATA).
    /// if let Some(hdmi) = dev.inputs()?.into_iter().find(|i| i.name.starts_with("HDMI")) {
    ///     dev.set_input(hdmi.index)?;
    ///     println!("{:?}", dev.dv_timings_list()?);
    ///     dev.set_input(0)?; // back to the webcam
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn dv_timings_list(&self) -> OsResult<Vec<DvTimings>> {
        let mut list = Vec::new();
        for index in 0.. {
            let mut raw =
                RawEnumDvTimings { index, pad: 0, reserved: [0; 2], timings: RawDvTimings { type_: 0, bt: [0; 128] } };
            match self.ioctl("VIDIOC_ENUM_DV_TIMINGS", VIDIOC_ENUM_DV_TIMINGS, &mut raw) {
                Ok(_) => list.push(DvTimings(raw.timings)),
                Err(e) if e.errno == Errno::INVAL && index > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(list)
    }

    /// The current DV timings.
    ///
    /// Wraps `VIDIOC_G_DV_TIMINGS`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// // DV timings belong to an HDMI input: select one first (vivid's default
    /// // input is a webcam, which answers ENODATA).
    /// if let Some(hdmi) = dev.inputs()?.into_iter().find(|i| i.name.starts_with("HDMI")) {
    ///     dev.set_input(hdmi.index)?;
    ///     println!("{:?}", dev.dv_timings()?);
    ///     dev.set_input(0)?; // back to the webcam
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn dv_timings(&self) -> OsResult<DvTimings> {
        let mut raw = RawDvTimings { type_: V4L2_DV_BT_656_1120, bt: [0; 128] };
        self.ioctl("VIDIOC_G_DV_TIMINGS", VIDIOC_G_DV_TIMINGS, &mut raw)?;
        Ok(DvTimings(raw))
    }

    /// Sets the DV timings of the current (HDMI) input or output; the
    /// format follows them (its size becomes the active size).
    ///
    /// Wraps `VIDIOC_S_DV_TIMINGS`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// // DV timings belong to an HDMI input: select one first (vivid's default
    /// // input is a webcam, which answers ENODATA).
    /// if let Some(hdmi) = dev.inputs()?.into_iter().find(|i| i.name.starts_with("HDMI")) {
    ///     dev.set_input(hdmi.index)?;
    ///     if let Some(t) = dev.dv_timings_list()?.into_iter().find(|t| t.width() == 1280 && t.height() == 720) {
    ///         dev.set_dv_timings(&t)?;
    ///     }
    ///     dev.set_input(0)?; // back to the webcam
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn set_dv_timings(&self, timings: &DvTimings) -> OsResult<()> {
        let mut raw = timings.0;
        self.ioctl("VIDIOC_S_DV_TIMINGS", VIDIOC_S_DV_TIMINGS, &mut raw).map(drop)
    }

    /// The control named `name` (as `VIDIOC_QUERY_EXT_CTRL` spells it),
    /// if the device has one.
    ///
    /// Wraps `VIDIOC_QUERY_EXT_CTRL` with `V4L2_CTRL_FLAG_NEXT_CTRL`, from
    /// the first control to the last.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// println!("{:?}", dev.find_control("Brightness")?);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn find_control(&self, name: &str) -> OsResult<Option<Control>> {
        let mut id = 0;
        loop {
            // SAFETY: zeroes are a valid `struct v4l2_query_ext_ctrl`.
            let mut raw: RawQueryExtCtrl = unsafe { std::mem::zeroed() };
            raw.id = id | V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND;
            match self.ioctl("VIDIOC_QUERY_EXT_CTRL", VIDIOC_QUERY_EXT_CTRL, &mut raw) {
                Ok(_) => {}
                Err(e) if e.errno == Errno::INVAL => return Ok(None),
                Err(e) => return Err(e),
            }
            if c_str(&raw.name) == name {
                return Ok(Some(Control {
                    id: raw.id,
                    name: name.to_owned(),
                    kind: raw.type_,
                    minimum: raw.minimum,
                    maximum: raw.maximum,
                }));
            }
            if raw.id <= id {
                return Ok(None);
            }
            id = raw.id;
        }
    }

    /// The items of menu control `control` as (value, name); none for a
    /// control that is not a menu.
    ///
    /// Wraps `VIDIOC_QUERYMENU` for every value from its minimum to its
    /// maximum, at most 1024 of them (values the driver skips are left
    /// out).
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// if let Some(c) = dev.find_control("HDMI 000-0 Is Connected To")? {
    ///     println!("{:?}", dev.menu_items(&c)?);
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn menu_items(&self, control: &Control) -> OsResult<Vec<(i64, String)>> {
        const MENU: u32 = 3;
        let mut items = Vec::new();
        if control.kind != MENU {
            return Ok(items);
        }
        let first = control.minimum.max(0);
        for value in first..=control.maximum.min(first + 1023) {
            let mut raw = RawQueryMenu { id: control.id, index: value as u32, name: [0; 32], reserved: 0 };
            match self.ioctl("VIDIOC_QUERYMENU", VIDIOC_QUERYMENU, &mut raw) {
                Ok(_) => items.push((value, c_str(&{ raw.name }))),
                Err(e) if e.errno == Errno::INVAL => {}
                Err(e) => return Err(e),
            }
        }
        Ok(items)
    }

    /// Sets control `id` to `value`.
    ///
    /// Wraps `VIDIOC_S_CTRL`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// if let Some(c) = dev.find_control("Brightness")? {
    ///     dev.set_control(c.id, 128)?;
    ///     assert_eq!(dev.control(c.id)?, 128);
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn set_control(&self, id: u32, value: i32) -> OsResult<()> {
        let mut raw = RawControl { id, value };
        self.ioctl("VIDIOC_S_CTRL", VIDIOC_S_CTRL, &mut raw).map(drop)
    }

    /// The value of control `id`.
    ///
    /// Wraps `VIDIOC_G_CTRL`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// if let Some(c) = dev.find_control("Brightness")? {
    ///     println!("brightness {}", dev.control(c.id)?);
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn control(&self, id: u32) -> OsResult<i32> {
        let mut raw = RawControl { id, value: 0 };
        self.ioctl("VIDIOC_G_CTRL", VIDIOC_G_CTRL, &mut raw)?;
        Ok(raw.value)
    }

    /// Allocates (`Memory::Mmap`) or prepares (`Memory::DmaBuf`) `count`
    /// buffers for the `ty` queue; returns how many the driver granted
    /// (possibly more or fewer). 0 frees them (streaming must be off).
    /// `EBUSY` if another open file owns the queue.
    ///
    /// Wraps `VIDIOC_REQBUFS`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, Memory, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// let n = dev.request_buffers(BufType::Capture, Memory::DmaBuf, 4)?;
    /// assert!(n >= 1);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn request_buffers(&self, ty: BufType, memory: Memory, count: u32) -> OsResult<u32> {
        let mut raw = RawRequestBuffers {
            count,
            type_: ty as u32,
            memory: memory as u32,
            capabilities: 0,
            flags: 0,
            reserved: [0; 3],
        };
        self.ioctl("VIDIOC_REQBUFS", VIDIOC_REQBUFS, &mut raw)?;
        Ok(raw.count)
    }

    /// The length in bytes of driver buffer `index` of the `ty` queue.
    ///
    /// Wraps `VIDIOC_QUERYBUF`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, Memory, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.request_buffers(BufType::Capture, Memory::Mmap, 2)?;
    /// println!("{} bytes", dev.buffer_length(BufType::Capture, Memory::Mmap, 0)?);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn buffer_length(&self, ty: BufType, memory: Memory, index: u32) -> OsResult<u32> {
        let mut raw = RawBuffer { index, type_: ty as u32, memory: memory as u32, ..Default::default() };
        self.ioctl("VIDIOC_QUERYBUF", VIDIOC_QUERYBUF, &mut raw)?;
        Ok(raw.length)
    }

    /// Queues dma-buf `dmabuf` as buffer `index` of the `ty` queue: the
    /// driver writes a frame into its first `length` bytes (capture) or
    /// reads `bytes_used` bytes from it (output), directly, with no copy.
    /// The kernel refuses a dma-buf smaller than `length`, and checks that
    /// `length` holds a frame. The caller keeps the fd; the driver holds
    /// its own reference to the dma-buf until the buffer is dequeued or the
    /// queue freed, and accesses its pages meanwhile.
    ///
    /// Wraps `VIDIOC_QBUF` with `V4L2_MEMORY_DMABUF`.
    ///
    /// ```no_run
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::v4l2::{BufType, FourCc, Memory, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// let f = dev.set_format(BufType::Capture, 640, 480, FourCc::YUYV)?;
    /// dev.request_buffers(BufType::Capture, Memory::DmaBuf, 1)?;
    /// // A dma-buf over memfd pages (udmabuf: every kernel of the rig has it,
    /// // DMA-BUF heaps not the arm64 one).
    /// let len = (f.size_image as u64).next_multiple_of(4096);
    /// let pages = Memfd::create(c"frame", len)?;
    /// pages.add_seals(Seals::SHRINK)?;
    /// let frame = Udmabuf::open()?.create(pages.as_fd(), 0, len)?;
    /// dev.queue_dmabuf(BufType::Capture, 0, frame.as_fd(), f.size_image, 0)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn queue_dmabuf(
        &self,
        ty: BufType,
        index: u32,
        dmabuf: BorrowedFd<'_>,
        length: u32,
        bytes_used: u32,
    ) -> OsResult<()> {
        let mut raw = RawBuffer {
            index,
            type_: ty as u32,
            memory: Memory::DmaBuf as u32,
            m: dmabuf.as_raw_fd() as u32 as u64,
            length,
            bytesused: bytes_used,
            field: V4L2_FIELD_NONE,
            ..Default::default()
        };
        self.ioctl("VIDIOC_QBUF", VIDIOC_QBUF, &mut raw).map(drop)
    }

    /// Queues driver buffer `index` of the `ty` queue (`bytes_used` bytes
    /// of data for an output queue, ignored for capture).
    ///
    /// Wraps `VIDIOC_QBUF` with `V4L2_MEMORY_MMAP`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, Memory, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.request_buffers(BufType::Capture, Memory::Mmap, 2)?;
    /// dev.queue_mmap(BufType::Capture, 0, 0)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn queue_mmap(&self, ty: BufType, index: u32, bytes_used: u32) -> OsResult<()> {
        let mut raw = RawBuffer {
            index,
            type_: ty as u32,
            memory: Memory::Mmap as u32,
            bytesused: bytes_used,
            field: V4L2_FIELD_NONE,
            ..Default::default()
        };
        self.ioctl("VIDIOC_QBUF", VIDIOC_QBUF, &mut raw).map(drop)
    }

    /// Driver buffer `index` of the `ty` queue as a dma-buf (read-write,
    /// close-on-exec): its pages, no copy.
    ///
    /// Wraps `VIDIOC_EXPBUF`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, Memory, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.request_buffers(BufType::Capture, Memory::Mmap, 2)?;
    /// let dmabuf = dev.export_buffer(BufType::Capture, 0)?;
    /// println!("{} bytes", dmabuf.size()?);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn export_buffer(&self, ty: BufType, index: u32) -> OsResult<DmaBuf> {
        let mut raw = RawExportBuffer {
            type_: ty as u32,
            index,
            flags: (OFlags::RDWR | OFlags::CLOEXEC).bits(),
            ..Default::default()
        };
        self.ioctl("VIDIOC_EXPBUF", VIDIOC_EXPBUF, &mut raw)?;
        // SAFETY: on success the kernel stored a new dma-buf fd in
        // `raw.fd` that nobody else owns.
        Ok(DmaBuf::from_kernel(unsafe { OwnedFd::from_raw_fd(raw.fd) }))
    }

    /// Waits up to `timeout` for the driver to hand back a buffer of the
    /// `ty` queue, and takes it. A wait that ends without one fails with
    /// `ETIMEDOUT` (op `"VIDIOC_DQBUF (waiting)"`).
    ///
    /// Wraps `poll(2)` and `VIDIOC_DQBUF`.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use dmabridge::sys::v4l2::{BufType, Memory, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.request_buffers(BufType::Capture, Memory::Mmap, 2)?;
    /// dev.queue_mmap(BufType::Capture, 0, 0)?;
    /// dev.stream_on(BufType::Capture)?;
    /// let frame = dev.dequeue(BufType::Capture, Memory::Mmap, Duration::from_secs(5))?;
    /// println!("frame {} in buffer {}", frame.sequence, frame.index);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn dequeue(&self, ty: BufType, memory: Memory, timeout: Duration) -> OsResult<Dequeued> {
        // A timeout too long to add to now waits without a deadline.
        let deadline = std::time::Instant::now().checked_add(timeout);
        let events = match ty {
            BufType::Capture => PollFlags::IN,
            BufType::Output => PollFlags::OUT,
        };
        loop {
            // Wait first: a pipeline usually asks before the frame is there,
            // and a ready one answers the poll at once (two calls either way).
            let left = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
            let mut fds = [PollFd::new(&self.fd, events)];
            let ts = left.map(|l| Timespec {
                tv_sec: l.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: l.subsec_nanos() as i64,
            });
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                // Nothing ready and the time is up: no DQBUF to learn it
                // again (a pipeline polls this way once a frame).
                Ok(0) if deadline.is_some_and(|d| std::time::Instant::now() >= d) => {
                    return Err(OsError::new("VIDIOC_DQBUF (waiting)", Errno::TIMEDOUT))
                }
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(OsError::new("poll V4L2 device", e)),
            }
            let mut raw = RawBuffer { type_: ty as u32, memory: memory as u32, ..Default::default() };
            match self.ioctl("VIDIOC_DQBUF", VIDIOC_DQBUF, &mut raw) {
                Ok(_) => {
                    return Ok(Dequeued {
                        index: raw.index,
                        sequence: raw.sequence,
                        bytes_used: raw.bytesused,
                        flags: raw.flags,
                        timestamp: Duration::new(
                            raw.tv_sec.max(0) as u64,
                            (raw.tv_usec.clamp(0, 999_999) * 1000) as u32,
                        ),
                    })
                }
                Err(e) if e.errno == Errno::AGAIN => {}
                Err(e) => return Err(e),
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return Err(OsError::new("VIDIOC_DQBUF (waiting)", Errno::TIMEDOUT));
            }
        }
    }

    /// Starts streaming on the `ty` queue.
    ///
    /// Wraps `VIDIOC_STREAMON`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, Memory, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.request_buffers(BufType::Capture, Memory::Mmap, 2)?;
    /// dev.stream_on(BufType::Capture)?;
    /// dev.stream_off(BufType::Capture)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn stream_on(&self, ty: BufType) -> OsResult<()> {
        let mut t = ty as i32;
        self.ioctl("VIDIOC_STREAMON", VIDIOC_STREAMON, &mut t).map(drop)
    }

    /// Stops streaming on the `ty` queue: every queued buffer comes back to
    /// the application (not through `VIDIOC_DQBUF`), and the driver holds
    /// none of them any more.
    ///
    /// Wraps `VIDIOC_STREAMOFF`.
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::{BufType, VideoDevice};
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.stream_off(BufType::Capture)?;
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn stream_off(&self, ty: BufType) -> OsResult<()> {
        let mut t = ty as i32;
        self.ioctl("VIDIOC_STREAMOFF", VIDIOC_STREAMOFF, &mut t).map(drop)
    }
}

impl AsFd for VideoDevice {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
