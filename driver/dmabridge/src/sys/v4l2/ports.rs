//! Inputs, outputs and DV timings (HDMI).

use rustix::io::Errno;

use super::raw::*;
use super::{DvTimings, Port, VideoDevice};
use crate::sys::ioctl::Opcode;
use crate::sys::OsResult;

impl VideoDevice {
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
}
