//! The buffer queues: dma-bufs and the driver's own buffers, queued,
//! exported, dequeued; streaming on and off.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::OFlags;
use rustix::io::Errno;

use super::raw::*;
use super::{BufType, Dequeued, Memory, VideoDevice};
use crate::sys::dma_buf::DmaBuf;
use crate::sys::{OsError, OsResult};

impl VideoDevice {
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
