//! DRM PRIME: GEM buffers as dma-bufs and dma-bufs as GEM buffers.
//!
//! A [`DrmDevice`] is an open DRM node (`/dev/dri/cardN` or `renderDN`). It
//! creates [`DumbBuffer`]s (`DRM_IOCTL_MODE_CREATE_DUMB`), exports them as
//! [`DmaBuf`]s (`DRM_IOCTL_PRIME_HANDLE_TO_FD`) and imports any dma-buf as a
//! [`GemHandle`] (`DRM_IOCTL_PRIME_FD_TO_HANDLE`). Its main use is interop
//! testing with vgem, the virtual GEM driver, which needs no GPU.
//!
//! GEM handles are per open file and **not reference-counted by the kernel**:
//! importing a dma-buf whose object already has a handle on this file (e.g.
//! one's own export) returns that same handle, and a single
//! `DRM_IOCTL_GEM_CLOSE` then closes it for every holder (see the uapi
//! comment on `DRM_IOCTL_GEM_CLOSE`). The device therefore keeps a count of
//! the live [`DumbBuffer`]s and [`GemHandle`]s per handle and closes a handle
//! only when the last of them is dropped.
//!
//! Every ioctl is restarted on `EINTR` and `EAGAIN`, as libdrm's
//! `drmIoctl` does (the crate's `ioctl_ptr_again`).
//!
//! Written over the raw ioctls rather than the `drm` crate (Smithay, 0.15):
//! the five ioctls needed here are small fixed structs, while that crate
//! brings drm-ffi, drm-sys, drm-fourcc and bytemuck, makes dumb buffers plain
//! `Copy` values that are never destroyed on drop, hands out handles without
//! the reference counting above, and asks for a KMS pixel format that vgem
//! does not care about. The raw calls keep the crate's conventions: typed
//! errors, `OsError`, owned fds and RAII.
//!
//! One idea a file: opening a node and its handle counts here; `error`
//! ([`DrmError`]), `raw` (the uapi structures, ioctl numbers and the version
//! query), `buffer` (dumb buffers, PRIME export and import, GEM handles).
//!
//! [`DmaBuf`]: crate::sys::dma_buf::DmaBuf

mod buffer;
mod error;
mod raw;
mod vgem;

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::ioctl::ioctl_ptr_again;
use super::OsError;
use crate::sync;
pub use buffer::{DumbBuffer, GemHandle};
pub use error::DrmError;
use raw::*;
pub use vgem::VgemFence;

/// The folder of DRM device nodes.
pub const DRI_DIR: &str = "/dev/dri";

/// The name vgem reports in `DRM_IOCTL_VERSION`.
pub const VGEM_DRIVER: &str = "vgem";

bitflags::bitflags! {
    /// Flags of a PRIME export (`DRM_CLOEXEC`, `DRM_RDWR`), the only two the
    /// kernel accepts.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::PrimeFlags;
    ///
    /// // DRM_CLOEXEC and DRM_RDWR are O_CLOEXEC and O_RDWR.
    /// let flags = PrimeFlags::CLOEXEC | PrimeFlags::RDWR;
    /// assert_eq!(flags.bits(), 0o2000002);
    /// assert!(flags.contains(PrimeFlags::RDWR));
    /// assert!(flags.contains(PrimeFlags::NONE));
    /// assert!(!PrimeFlags::CLOEXEC.contains(PrimeFlags::RDWR));
    /// assert_eq!(PrimeFlags::NONE, PrimeFlags::empty());
    /// // Bits the kernel does not know are not flags.
    /// assert_eq!(PrimeFlags::from_bits(1 << 30), None);
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct PrimeFlags: u32 {
        /// `DRM_CLOEXEC` (= `O_CLOEXEC`): the fd is closed on exec.
        const CLOEXEC = OFlags::CLOEXEC.bits();
        /// `DRM_RDWR` (= `O_RDWR`): the fd is read-write, so it can be mapped
        /// writable; without it `mmap(PROT_WRITE, MAP_SHARED)` fails with `EACCES`.
        const RDWR = OFlags::RDWR.bits();
    }
}

impl PrimeFlags {
    /// No flags: a read-only dma-buf fd that survives exec (the same as
    /// [`PrimeFlags::empty`]).
    pub const NONE: PrimeFlags = PrimeFlags::empty();
}

/// The driver behind a node, from `DRM_IOCTL_VERSION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverVersion {
    /// Short name, e.g. `"vgem"`.
    pub name: String,
    /// Description, e.g. `"Virtual GEM provider"`.
    pub desc: String,
    /// Major version.
    pub major: i32,
    /// Minor version.
    pub minor: i32,
    /// Patch level.
    pub patchlevel: i32,
}

/// The DRM nodes in `/dev/dri`: primary nodes (`cardN`) first, then render
/// nodes (`renderDN`), each in numeric order. Empty if there is no DRM.
///
/// Reads the folder `/dev/dri`.
///
/// # Examples
///
/// ```
/// use dmabridge::sys::drm::{nodes, DRI_DIR};
///
/// let nodes = nodes();
/// assert!(nodes.iter().all(|n| n.starts_with(DRI_DIR)));
/// // Primary nodes come first.
/// let first_render = nodes.iter().position(|n| n.to_string_lossy().contains("renderD")).unwrap_or(nodes.len());
/// assert!(nodes[first_render..].iter().all(|n| n.to_string_lossy().contains("renderD")));
/// ```
pub fn nodes() -> Vec<PathBuf> {
    let mut found: Vec<(u8, u32, PathBuf)> = std::fs::read_dir(DRI_DIR)
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let (kind, num) = if let Some(n) = name.strip_prefix("card") {
                        (0, n)
                    } else if let Some(n) = name.strip_prefix("renderD") {
                        (1, n)
                    } else {
                        return None;
                    };
                    Some((kind, num.parse().ok()?, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.into_iter().map(|(_, _, path)| path).collect()
}

/// True if sysfs says the node's device is vgem's. vgem has no PCI parent and
/// no bound driver (no `device/driver` link on 6.12): its device is the
/// platform (6.15 on: faux) device named `vgem`, so the name of the
/// `device` link's target is what identifies it.
fn sysfs_says_vgem(node: &Path) -> bool {
    let Some(name) = node.file_name() else { return false };
    std::fs::canonicalize(Path::new("/sys/class/drm").join(name).join("device"))
        .is_ok_and(|dev| dev.file_name().is_some_and(|n| n == VGEM_DRIVER))
}

/// An open DRM node.
#[derive(Debug)]
pub struct DrmDevice {
    fd: OwnedFd,
    path: PathBuf,
    version: DriverVersion,
    render: bool,
    /// Live [`DumbBuffer`]s and [`GemHandle`]s per GEM handle.
    handles: Mutex<HashMap<u32, u32>>,
}

impl DrmDevice {
    /// Opens a DRM node read-write and asks for its driver.
    ///
    /// Wraps `open(2)` (`O_RDWR | O_CLOEXEC`), `DRM_IOCTL_VERSION` and `fstat(2)`
    /// (render nodes have minors from 128).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::{nodes, DrmDevice, DrmError};
    ///
    /// for node in nodes() {
    ///     match DrmDevice::open(&node) {
    ///         Ok(dev) => println!("{}: {}", node.display(), dev.driver()),
    ///         Err(e) => println!("{e}"),
    ///     }
    /// }
    /// let missing = "/dev/dri/no-such-node";
    /// assert_eq!(DrmDevice::open(missing).unwrap_err(), DrmError::NoDevice(missing.into()));
    /// // /dev/null does not know DRM_IOCTL_VERSION.
    /// assert_eq!(DrmDevice::open("/dev/null").unwrap_err(), DrmError::NotDrm("/dev/null".into()));
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<DrmDevice, DrmError> {
        let path = path.as_ref();
        let fd = rustix::fs::open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(|e| match e {
            Errno::NOENT | Errno::NXIO | Errno::NODEV => DrmError::NoDevice(path.to_owned()),
            Errno::ACCESS | Errno::PERM => DrmError::NoAccess(path.to_owned(), e),
            e => OsError::new("open DRM node", e).into(),
        })?;
        let version = version(fd.as_fd()).map_err(|e| match e.errno {
            Errno::NOTTY | Errno::INVAL => DrmError::NotDrm(path.to_owned()),
            _ => e.into(),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(OsError::tag("fstat DRM node"))?;
        let render = rustix::fs::minor(st.st_rdev) >= RENDER_MINOR_BASE;
        Ok(DrmDevice { fd, path: path.to_owned(), version, render, handles: Mutex::new(HashMap::new()) })
    }

    /// Opens vgem: the first node of [`nodes`] whose driver (by
    /// `DRM_IOCTL_VERSION`) is `vgem`, so the primary node when it can be
    /// opened, as dumb buffers need it.
    ///
    /// Nodes this user may not open are skipped; if one of them is vgem's by
    /// sysfs and no other vgem node opens, its [`DrmError::NoAccess`] is
    /// returned instead of [`DrmError::NoVgem`].
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::{nodes, DrmDevice, DrmError, VGEM_DRIVER};
    ///
    /// match DrmDevice::open_vgem() {
    ///     Ok(dev) => assert_eq!(dev.driver(), VGEM_DRIVER),
    ///     Err(e) => println!("{e}"),
    /// }
    /// if nodes().is_empty() {
    ///     assert_eq!(DrmDevice::open_vgem().unwrap_err(), DrmError::NoVgem);
    /// }
    /// ```
    pub fn open_vgem() -> Result<DrmDevice, DrmError> {
        let mut denied = None;
        for node in nodes() {
            match DrmDevice::open(&node) {
                Ok(dev) if dev.version.name == VGEM_DRIVER => return Ok(dev),
                Ok(_) => {}
                Err(e @ DrmError::NoAccess(..)) if denied.is_none() && sysfs_says_vgem(&node) => denied = Some(e),
                Err(_) => {}
            }
        }
        Err(denied.unwrap_or(DrmError::NoVgem))
    }

    /// The node's path.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// assert!(dev.path().starts_with(dmabridge::sys::drm::DRI_DIR));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The driver's name, e.g. `"vgem"`.
    ///
    /// No system call: the name `DRM_IOCTL_VERSION` gave at open.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// assert_eq!(dev.driver(), "vgem");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn driver(&self) -> &str {
        &self.version.name
    }

    /// The driver's name, description and version.
    ///
    /// No system call: what `DRM_IOCTL_VERSION` gave at open.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// let v = dev.version();
    /// assert_eq!(v.name, dev.driver());
    /// println!("{} {}.{}.{}: {}", v.name, v.major, v.minor, v.patchlevel, v.desc);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> &DriverVersion {
        &self.version
    }

    /// True for a render node (`renderDN`), false for a primary node (`cardN`).
    ///
    /// No system call: decided at open from the node's minor (`fstat(2)`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// let name = dev.path().file_name().unwrap().to_string_lossy().into_owned();
    /// assert_eq!(dev.is_render_node(), name.starts_with("renderD"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_render_node(&self) -> bool {
        self.render
    }

    /// Counts one more holder of `handle`.
    fn hold(&self, handle: u32) {
        *sync::lock(&self.handles).entry(handle).or_insert(0) += 1;
    }

    /// Drops one holder of `handle`, closing it (`DRM_IOCTL_GEM_CLOSE`) when
    /// it was the last. Returns whether it was closed.
    fn release(&self, handle: u32) -> Result<bool, OsError> {
        let mut handles = sync::lock(&self.handles);
        let Some(count) = handles.get_mut(&handle) else { return Ok(false) };
        *count -= 1;
        if *count > 0 {
            return Ok(false);
        }
        handles.remove(&handle);
        // Closed under the lock, so that an import racing with this close
        // cannot be handed the handle number and then lose it.
        let mut arg = DrmGemClose { handle, pad: 0 };
        // SAFETY: DRM_IOCTL_GEM_CLOSE reads one `struct drm_gem_close`, which
        // `DrmGemClose` mirrors; no other holder of `handle` remains.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DRM_IOCTL_GEM_CLOSE, &mut arg) }
            .map(|_| true)
            .map_err(OsError::tag("DRM_IOCTL_GEM_CLOSE"))
    }
}

impl AsFd for DrmDevice {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::buffer::dumb_geometry_ok;
    use super::*;
    use crate::sys::page_size;

    #[test]
    fn geometry_rules() {
        assert!(dumb_geometry_ok(64, 64, 32));
        assert!(dumb_geometry_ok(1, 1, 1));
        assert!(!dumb_geometry_ok(0, 64, 32));
        assert!(!dumb_geometry_ok(64, 0, 32));
        assert!(!dumb_geometry_ok(64, 64, 0));
        assert!(!dumb_geometry_ok(1, 1, u32::MAX - 7));
        assert!(!dumb_geometry_ok(65536, 65536, 8));
        // 4 GiB minus a page is the largest size that page-aligns in 32 bits.
        let page = page_size() as u32;
        assert!(dumb_geometry_ok(u32::MAX - page + 1, 1, 8));
        assert!(!dumb_geometry_ok(u32::MAX - page + 2, 1, 8));
    }

    #[test]
    fn prime_flags() {
        let f = PrimeFlags::CLOEXEC | PrimeFlags::RDWR;
        assert_eq!(f.bits(), 0o2000002);
        assert!(f.contains(PrimeFlags::RDWR));
        assert!(!PrimeFlags::CLOEXEC.contains(PrimeFlags::RDWR));
    }

    #[test]
    fn missing_node() {
        assert_eq!(
            DrmDevice::open("/dev/dri/no-such-node").unwrap_err(),
            DrmError::NoDevice("/dev/dri/no-such-node".into())
        );
        assert_eq!(DrmDevice::open("/dev/null").unwrap_err(), DrmError::NotDrm("/dev/null".into()));
    }
}
