//! Format and frame rate of a queue.

use super::raw::*;
use super::{BufType, FourCc, PixFormat, VideoDevice};
use crate::sys::OsResult;

impl VideoDevice {
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
}
