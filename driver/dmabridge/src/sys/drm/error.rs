//! Why a DRM operation failed.

use std::path::PathBuf;

use rustix::io::Errno;

use crate::sys::OsError;

/// Why a DRM operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DrmError {
    /// No DRM node is driven by vgem.
    #[error(
        "no vgem device in /dev/dri: load vgem ({kmod} load vgem){rig}",
        kmod = crate::sys::hints::kmod(),
        rig = crate::sys::hints::checkout_only(" or run in the QEMU guest with --module vgem")
    )]
    NoVgem,
    /// The node does not exist.
    #[error("no DRM node {0}: `ls /dev/dri` shows the nodes this kernel has")]
    NoDevice(PathBuf),
    /// The node exists but this user may not open it read-write.
    #[error("cannot open {0} ({1}): add your user to the group that owns it (`ls -l /dev/dri`; usually video or render), or run as root")]
    NoAccess(PathBuf, Errno),
    /// The file is not a DRM node (`DRM_IOCTL_VERSION` is unknown to it).
    #[error("{0} is not a DRM device node: open one of /dev/dri/cardN or /dev/dri/renderDN")]
    NotDrm(PathBuf),
    /// The driver has no dumb buffers (`ENOSYS`).
    #[error("the {0} driver has no dumb buffers (DRM_IOCTL_MODE_CREATE_DUMB: ENOSYS): use vgem or a KMS driver")]
    NoDumbBuffers(String),
    /// Dumb buffers were asked of a render node, which refuses them (`EACCES`).
    #[error(
        "{0} is a render node, which refuses dumb buffers: open the primary node (/dev/dri/cardN) of the same driver"
    )]
    RenderNode(PathBuf),
    /// Width, height or bpp is zero, or the buffer does not fit in 32 bits.
    #[error("a {width}x{height} dumb buffer at {bpp} bpp is invalid: width, height and bpp must be non-zero and width * ceil(bpp/8) * height, rounded up to a page, must fit in 32 bits")]
    BadDumbGeometry {
        /// Width asked for, in pixels.
        width: u32,
        /// Height asked for, in pixels.
        height: u32,
        /// Bits per pixel asked for.
        bpp: u32,
    },
    /// The driver has no memory for the buffer (`ENOMEM`).
    #[error("the driver has no memory for a {width}x{height} dumb buffer at {bpp} bpp")]
    OutOfMemory {
        /// Width asked for, in pixels.
        width: u32,
        /// Height asked for, in pixels.
        height: u32,
        /// Bits per pixel asked for.
        bpp: u32,
    },
    /// A buffer of one `DrmDevice` was passed to another: GEM handles are
    /// only meaningful on the open file that created them.
    #[error("the buffer belongs to another DrmDevice: GEM handles are per open file; export it from the DrmDevice that created it")]
    ForeignBuffer,
    /// The driver refused to import the dma-buf.
    #[error("the {driver} driver refused to import the dma-buf ({errno}): the exporter may not allow this device to attach (see dmesg)")]
    ImportRefused {
        /// The importing driver.
        driver: String,
        /// The kernel's answer.
        errno: Errno,
    },
    /// A system call failed.
    #[error(transparent)]
    Os(#[from] OsError),
}
