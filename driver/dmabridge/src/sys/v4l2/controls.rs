//! Controls, found and set by name.

use rustix::io::Errno;

use super::raw::*;
use super::{c_str, Control, VideoDevice};
use crate::sys::OsResult;

impl VideoDevice {
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
    /// A driver may read a control back other than it was set: vivid keeps
    /// Brightness per input and reads it back 128 higher per input index,
    /// so the example selects input 0 first (its input outlives the process
    /// that chose it).
    ///
    /// ```no_run
    /// use dmabridge::sys::v4l2::VideoDevice;
    /// let dev = VideoDevice::open("/dev/video0".as_ref())?;
    /// dev.set_input(0)?;
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
}
