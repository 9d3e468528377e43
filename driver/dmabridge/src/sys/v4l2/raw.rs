//! The `<linux/videodev2.h>` structures and ioctl numbers this module
//! uses, mirrored for x86-64/arm64 Linux (sizes checked at compile time
//! against the ioctl numbers the header defines).

use super::{c_str, Port};
use crate::sys::ioctl::{opcode, Opcode};

#[repr(C)]
pub(super) struct RawCapability {
    pub(super) driver: [u8; 16],
    pub(super) card: [u8; 32],
    pub(super) bus_info: [u8; 32],
    pub(super) version: u32,
    pub(super) capabilities: u32,
    pub(super) device_caps: u32,
    pub(super) reserved: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(super) struct RawPixFormat {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) pixelformat: u32,
    pub(super) field: u32,
    pub(super) bytesperline: u32,
    pub(super) sizeimage: u32,
    pub(super) colorspace: u32,
    pub(super) priv_: u32,
    pub(super) flags: u32,
    pub(super) ycbcr_enc: u32,
    pub(super) quantization: u32,
    pub(super) xfer_func: u32,
}

/// `struct v4l2_format`: the type, then a union of 200 bytes that holds
/// pointers (`struct v4l2_window`), hence aligned to 8.
#[repr(C)]
pub(super) struct RawFormat {
    pub(super) type_: u32,
    pub(super) pad: u32,
    pub(super) fmt: [u64; 25],
}

#[repr(C)]
pub(super) struct RawRequestBuffers {
    pub(super) count: u32,
    pub(super) type_: u32,
    pub(super) memory: u32,
    pub(super) capabilities: u32,
    pub(super) flags: u8,
    pub(super) reserved: [u8; 3],
}

#[repr(C)]
#[derive(Default)]
pub(super) struct RawBuffer {
    pub(super) index: u32,
    pub(super) type_: u32,
    pub(super) bytesused: u32,
    pub(super) flags: u32,
    pub(super) field: u32,
    pub(super) pad: u32,
    pub(super) tv_sec: i64,
    pub(super) tv_usec: i64,
    pub(super) timecode: [u32; 4],
    pub(super) sequence: u32,
    pub(super) memory: u32,
    /// `m.offset` / `m.userptr` / `m.planes` / `m.fd`.
    pub(super) m: u64,
    pub(super) length: u32,
    pub(super) reserved2: u32,
    pub(super) request_fd: i32,
    pub(super) pad2: u32,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct RawExportBuffer {
    pub(super) type_: u32,
    pub(super) index: u32,
    pub(super) plane: u32,
    pub(super) flags: u32,
    pub(super) fd: i32,
    pub(super) reserved: [u32; 11],
}

/// `struct v4l2_streamparm` with the capture/output member (same layout).
#[repr(C)]
pub(super) struct RawStreamParm {
    pub(super) type_: u32,
    pub(super) capability: u32,
    pub(super) mode: u32,
    pub(super) numerator: u32,
    pub(super) denominator: u32,
    pub(super) extendedmode: u32,
    pub(super) buffers: u32,
    pub(super) reserved: [u32; 4],
    pub(super) raw: [u32; 40],
}

impl Default for RawStreamParm {
    fn default() -> Self {
        // SAFETY: zeroes are a valid `struct v4l2_streamparm` (integers only).
        unsafe { std::mem::zeroed() }
    }
}

/// `struct v4l2_input` and `struct v4l2_output` share their first fields.
#[repr(C)]
pub(super) struct RawInput {
    pub(super) index: u32,
    pub(super) name: [u8; 32],
    pub(super) type_: u32,
    pub(super) audioset: u32,
    pub(super) tuner: u32,
    pub(super) std: u64,
    pub(super) status: u32,
    pub(super) capabilities: u32,
    pub(super) reserved: [u32; 3],
}

/// The two enumerations of [`VideoDevice::ports`].
pub(super) trait RawPort {
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
pub(super) struct RawOutput {
    pub(super) index: u32,
    pub(super) name: [u8; 32],
    pub(super) type_: u32,
    pub(super) audioset: u32,
    pub(super) modulator: u32,
    pub(super) std: u64,
    pub(super) capabilities: u32,
    pub(super) reserved: [u32; 3],
}

/// `struct v4l2_dv_timings` (packed): the type, then `struct
/// v4l2_bt_timings` in a union of 128 bytes.
#[repr(C, packed)]
#[derive(Clone, Copy)]
pub(super) struct RawDvTimings {
    pub(super) type_: u32,
    pub(super) bt: [u8; 128],
}

#[repr(C)]
pub(super) struct RawEnumDvTimings {
    pub(super) index: u32,
    pub(super) pad: u32,
    pub(super) reserved: [u32; 2],
    pub(super) timings: RawDvTimings,
}

#[repr(C)]
pub(super) struct RawQueryExtCtrl {
    pub(super) id: u32,
    pub(super) type_: u32,
    pub(super) name: [u8; 32],
    pub(super) minimum: i64,
    pub(super) maximum: i64,
    pub(super) step: u64,
    pub(super) default_value: i64,
    pub(super) flags: u32,
    pub(super) elem_size: u32,
    pub(super) elems: u32,
    pub(super) nr_of_dims: u32,
    pub(super) dims: [u32; 4],
    pub(super) reserved: [u32; 32],
}

#[repr(C, packed)]
pub(super) struct RawQueryMenu {
    pub(super) id: u32,
    pub(super) index: u32,
    pub(super) name: [u8; 32],
    pub(super) reserved: u32,
}

#[repr(C)]
pub(super) struct RawControl {
    pub(super) id: u32,
    pub(super) value: i32,
}

pub(super) const VIDIOC_QUERYCAP: Opcode = opcode::read::<RawCapability>(b'V', 0);
pub(super) const VIDIOC_G_FMT: Opcode = opcode::read_write::<RawFormat>(b'V', 4);
pub(super) const VIDIOC_S_FMT: Opcode = opcode::read_write::<RawFormat>(b'V', 5);
pub(super) const VIDIOC_REQBUFS: Opcode = opcode::read_write::<RawRequestBuffers>(b'V', 8);
pub(super) const VIDIOC_QUERYBUF: Opcode = opcode::read_write::<RawBuffer>(b'V', 9);
pub(super) const VIDIOC_QBUF: Opcode = opcode::read_write::<RawBuffer>(b'V', 15);
pub(super) const VIDIOC_EXPBUF: Opcode = opcode::read_write::<RawExportBuffer>(b'V', 16);
pub(super) const VIDIOC_DQBUF: Opcode = opcode::read_write::<RawBuffer>(b'V', 17);
pub(super) const VIDIOC_STREAMON: Opcode = opcode::write::<i32>(b'V', 18);
pub(super) const VIDIOC_STREAMOFF: Opcode = opcode::write::<i32>(b'V', 19);
pub(super) const VIDIOC_G_PARM: Opcode = opcode::read_write::<RawStreamParm>(b'V', 21);
pub(super) const VIDIOC_S_PARM: Opcode = opcode::read_write::<RawStreamParm>(b'V', 22);
pub(super) const VIDIOC_ENUMINPUT: Opcode = opcode::read_write::<RawInput>(b'V', 26);
pub(super) const VIDIOC_S_CTRL: Opcode = opcode::read_write::<RawControl>(b'V', 28);
pub(super) const VIDIOC_G_CTRL: Opcode = opcode::read_write::<RawControl>(b'V', 27);
pub(super) const VIDIOC_QUERYMENU: Opcode = opcode::read_write::<RawQueryMenu>(b'V', 37);
pub(super) const VIDIOC_S_INPUT: Opcode = opcode::read_write::<i32>(b'V', 39);
pub(super) const VIDIOC_S_OUTPUT: Opcode = opcode::read_write::<i32>(b'V', 47);
pub(super) const VIDIOC_ENUMOUTPUT: Opcode = opcode::read_write::<RawOutput>(b'V', 48);
pub(super) const VIDIOC_S_DV_TIMINGS: Opcode = opcode::read_write::<RawDvTimings>(b'V', 87);
pub(super) const VIDIOC_ENUM_DV_TIMINGS: Opcode = opcode::read_write::<RawEnumDvTimings>(b'V', 98);
pub(super) const VIDIOC_QUERY_EXT_CTRL: Opcode = opcode::read_write::<RawQueryExtCtrl>(b'V', 103);

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

pub(super) const V4L2_CTRL_FLAG_NEXT_CTRL: u32 = 0x8000_0000;
pub(super) const V4L2_CTRL_FLAG_NEXT_COMPOUND: u32 = 0x4000_0000;
pub(super) const V4L2_FIELD_NONE: u32 = 1;
