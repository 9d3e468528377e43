//! The uapi structures and ioctl numbers of `drm.h` and `drm_mode.h` this
//! module uses, and the driver version query.

use std::os::fd::BorrowedFd;

use super::DriverVersion;
use crate::sys::ioctl::{ioctl_ptr_again, opcode, Opcode};
use crate::sys::OsError;

// uapi/drm/drm.h and drm_mode.h. `__kernel_size_t` is `usize` and pointers
// are 64 bits on the targets this crate supports (x86_64, aarch64).
#[repr(C)]
pub(super) struct DrmVersion {
    pub(super) version_major: i32,
    pub(super) version_minor: i32,
    pub(super) version_patchlevel: i32,
    pub(super) name_len: usize,
    pub(super) name: *mut u8,
    pub(super) date_len: usize,
    pub(super) date: *mut u8,
    pub(super) desc_len: usize,
    pub(super) desc: *mut u8,
}

#[repr(C)]
pub(super) struct DrmGemClose {
    pub(super) handle: u32,
    pub(super) pad: u32,
}

#[repr(C)]
pub(super) struct DrmPrimeHandle {
    pub(super) handle: u32,
    pub(super) flags: u32,
    pub(super) fd: i32,
}

#[repr(C)]
pub(super) struct DrmModeCreateDumb {
    pub(super) height: u32,
    pub(super) width: u32,
    pub(super) bpp: u32,
    pub(super) flags: u32,
    pub(super) handle: u32,
    pub(super) pitch: u32,
    pub(super) size: u64,
}

// The ioctl numbers encode these sizes; a layout slip would change them.
const _: () = assert!(std::mem::size_of::<DrmVersion>() == 16 + 6 * std::mem::size_of::<usize>());
const _: () = assert!(std::mem::size_of::<DrmGemClose>() == 8);
const _: () = assert!(std::mem::size_of::<DrmPrimeHandle>() == 12);
const _: () = assert!(std::mem::size_of::<DrmModeCreateDumb>() == 32);

pub(super) const DRM_IOCTL_VERSION: Opcode = opcode::read_write::<DrmVersion>(b'd', 0x00);
pub(super) const DRM_IOCTL_GEM_CLOSE: Opcode = opcode::write::<DrmGemClose>(b'd', 0x09);
pub(super) const DRM_IOCTL_PRIME_HANDLE_TO_FD: Opcode = opcode::read_write::<DrmPrimeHandle>(b'd', 0x2d);
pub(super) const DRM_IOCTL_PRIME_FD_TO_HANDLE: Opcode = opcode::read_write::<DrmPrimeHandle>(b'd', 0x2e);
pub(super) const DRM_IOCTL_MODE_CREATE_DUMB: Opcode = opcode::read_write::<DrmModeCreateDumb>(b'd', 0xb2);

/// Minors from 128 up are render nodes (`renderD128`, ...).
pub(super) const RENDER_MINOR_BASE: u32 = 128;

/// Asks the driver behind `fd` for its name, description and version
/// (`DRM_IOCTL_VERSION`, twice: once for the lengths, once for the text).
pub(super) fn version(fd: BorrowedFd<'_>) -> Result<DriverVersion, OsError> {
    let mut arg = DrmVersion {
        version_major: 0,
        version_minor: 0,
        version_patchlevel: 0,
        name_len: 0,
        name: std::ptr::null_mut(),
        date_len: 0,
        date: std::ptr::null_mut(),
        desc_len: 0,
        desc: std::ptr::null_mut(),
    };
    // SAFETY: DRM_IOCTL_VERSION reads and writes one `struct drm_version`,
    // mirrored by `DrmVersion`; with every length 0 the kernel copies no
    // string and only reports the lengths.
    unsafe { ioctl_ptr_again(fd, DRM_IOCTL_VERSION, &mut arg) }.map_err(OsError::tag("DRM_IOCTL_VERSION"))?;
    let mut name = vec![0u8; arg.name_len];
    let mut desc = vec![0u8; arg.desc_len];
    arg.name = name.as_mut_ptr();
    arg.desc = desc.as_mut_ptr();
    arg.date_len = 0;
    // The kernel copies at most the length it is given into each field
    // (drm_copy_field); `date_len` 0 with a null `date` copies no date.
    // SAFETY: as above; `name` and `desc` are live buffers of exactly
    // `name_len` and `desc_len` bytes.
    unsafe { ioctl_ptr_again(fd, DRM_IOCTL_VERSION, &mut arg) }.map_err(OsError::tag("DRM_IOCTL_VERSION"))?;
    name.truncate(arg.name_len);
    desc.truncate(arg.desc_len);
    Ok(DriverVersion {
        name: String::from_utf8_lossy(&name).into_owned(),
        desc: String::from_utf8_lossy(&desc).into_owned(),
        major: arg.version_major,
        minor: arg.version_minor,
        patchlevel: arg.version_patchlevel,
    })
}
