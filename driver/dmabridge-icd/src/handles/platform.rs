//! The platform and its devices: static objects, for the life of the
//! process.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use dmabridge::runtime::device::Device;
use dmabridge::runtime::platform::Platform;
use opencl_sys::*;

use super::{handle_of, new_object, Header, Kind, Obj, Tag};
use crate::entry::ClRes;

/// The platform object (static: one per process).
#[repr(C)]
#[derive(Debug)]
pub struct PlatformObj {
    header: Header,
}

/// The `cl_platform_id`.
pub static PLATFORM: PlatformObj = PlatformObj { header: Header::new(Tag::Platform) };

/// The platform handle.
pub fn platform_handle() -> cl_platform_id {
    &PLATFORM as *const PlatformObj as cl_platform_id
}

/// Checks a platform argument: ours, or NULL where `null_ok` (the
/// implementation-defined choice for NULL is this platform).
pub fn check_platform(p: cl_platform_id, null_ok: bool) -> ClRes<()> {
    if (p.is_null() && null_ok) || p == platform_handle() {
        Ok(())
    } else {
        Err(CL_INVALID_PLATFORM)
    }
}

/// A device (root devices only: they live as long as the process).
#[derive(Debug)]
pub struct DeviceObj {
    /// The core device.
    pub device: Arc<Device>,
}

impl Kind for DeviceObj {
    const TAG: Tag = Tag::Device;
    const INVALID: cl_int = CL_INVALID_DEVICE;
}

/// The device objects, in the platform's order (index = `Device::index`).
pub fn devices() -> &'static [Arc<Obj<DeviceObj>>] {
    static DEVICES: OnceLock<Vec<Arc<Obj<DeviceObj>>>> = OnceLock::new();
    // The platform first, outside the once-cell: its build can take seconds,
    // and a child forked meanwhile would find the cell's initialisation
    // under way forever (a fork waits for the platform's build instead:
    // see the library's `sys::fork`).
    let platform = Platform::get();
    DEVICES.get_or_init(|| platform.devices().iter().map(|d| new_object(DeviceObj { device: d.clone() })).collect())
}

/// The device behind `handle` (`CL_INVALID_DEVICE` for NULL or anything
/// else), without a reference: root devices live as long as the process,
/// and a scan of their few handles costs less than counting one.
pub fn device(handle: *const c_void) -> ClRes<&'static Obj<DeviceObj>> {
    devices().iter().find(|d| handle_of(d).cast_const() == handle).map(|d| &**d).ok_or(CL_INVALID_DEVICE)
}

/// The handle of a core device.
pub fn device_handle(device: &Device) -> cl_device_id {
    devices().get(device.index as usize).map_or(std::ptr::null_mut(), |d| handle_of(d).cast())
}

/// The core devices of a device list (`CL_INVALID_VALUE` for NULL or an
/// empty list, `CL_INVALID_DEVICE` for an entry that is not a device).
///
/// # Safety
/// A non-NULL `list` holds `num` readable `cl_device_id`s.
pub unsafe fn device_list(num: cl_uint, list: *const cl_device_id) -> ClRes<Vec<Arc<Device>>> {
    if num == 0 || list.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract; the list is non-NULL with `num` entries.
    let handles = unsafe { crate::entry::slice(list, num as usize) };
    handles.iter().map(|&h| device(h.cast()).map(|d| d.inner.device.clone())).collect()
}
