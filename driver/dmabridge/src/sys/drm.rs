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

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::dma_buf::DmaBuf;
use super::ioctl::{ioctl_ptr_again, opcode, Opcode};
use super::{page_size, OsError};

/// The folder of DRM device nodes.
pub const DRI_DIR: &str = "/dev/dri";

/// The name vgem reports in `DRM_IOCTL_VERSION`.
pub const VGEM_DRIVER: &str = "vgem";

// uapi/drm/drm.h and drm_mode.h. `__kernel_size_t` is `usize` and pointers
// are 64 bits on the targets this crate supports (x86_64, aarch64).
#[repr(C)]
struct DrmVersion {
    version_major: i32,
    version_minor: i32,
    version_patchlevel: i32,
    name_len: usize,
    name: *mut u8,
    date_len: usize,
    date: *mut u8,
    desc_len: usize,
    desc: *mut u8,
}

#[repr(C)]
struct DrmGemClose {
    handle: u32,
    pad: u32,
}

#[repr(C)]
struct DrmPrimeHandle {
    handle: u32,
    flags: u32,
    fd: i32,
}

#[repr(C)]
struct DrmModeCreateDumb {
    height: u32,
    width: u32,
    bpp: u32,
    flags: u32,
    handle: u32,
    pitch: u32,
    size: u64,
}

// The ioctl numbers encode these sizes; a layout slip would change them.
const _: () = assert!(std::mem::size_of::<DrmVersion>() == 16 + 6 * std::mem::size_of::<usize>());
const _: () = assert!(std::mem::size_of::<DrmGemClose>() == 8);
const _: () = assert!(std::mem::size_of::<DrmPrimeHandle>() == 12);
const _: () = assert!(std::mem::size_of::<DrmModeCreateDumb>() == 32);

const DRM_IOCTL_VERSION: Opcode = opcode::read_write::<DrmVersion>(b'd', 0x00);
const DRM_IOCTL_GEM_CLOSE: Opcode = opcode::write::<DrmGemClose>(b'd', 0x09);
const DRM_IOCTL_PRIME_HANDLE_TO_FD: Opcode = opcode::read_write::<DrmPrimeHandle>(b'd', 0x2d);
const DRM_IOCTL_PRIME_FD_TO_HANDLE: Opcode = opcode::read_write::<DrmPrimeHandle>(b'd', 0x2e);
const DRM_IOCTL_MODE_CREATE_DUMB: Opcode = opcode::read_write::<DrmModeCreateDumb>(b'd', 0xb2);

/// Minors from 128 up are render nodes (`renderD128`, ...).
const RENDER_MINOR_BASE: u32 = 128;

/// Why a DRM operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DrmError {
    /// No DRM node is driven by vgem.
    #[error("no vgem device in /dev/dri: load vgem (kmod-helpers/dmabridge-kmod load vgem) or run in the QEMU guest with --module vgem")]
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
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
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
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
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
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
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
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let name = dev.path().file_name().unwrap().to_string_lossy().into_owned();
    /// assert_eq!(dev.is_render_node(), name.starts_with("renderD"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_render_node(&self) -> bool {
        self.render
    }

    /// Creates a dumb buffer of `width` × `height` pixels of `bpp` bits
    /// (`DRM_IOCTL_MODE_CREATE_DUMB`), after checking the kernel's geometry
    /// rules. It is closed when dropped (and no import shares its handle).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmError;
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Geometry the kernel would refuse is refused up front.
    /// let err = dev.create_dumb(0, 48, 32).unwrap_err();
    /// assert_eq!(err, DrmError::BadDumbGeometry { width: 0, height: 48, bpp: 32 });
    /// match dev.create_dumb(64, 48, 32) {
    ///     Ok(buf) => assert!(buf.size() >= 64 * 48 * 4),
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_dumb(&self, width: u32, height: u32, bpp: u32) -> Result<DumbBuffer<'_>, DrmError> {
        if !dumb_geometry_ok(width, height, bpp) {
            return Err(DrmError::BadDumbGeometry { width, height, bpp });
        }
        self.create_dumb_unchecked(width, height, bpp)
    }

    /// `DRM_IOCTL_MODE_CREATE_DUMB` without the up-front checks: the kernel's
    /// own answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmError;
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // The kernel's own answers: render nodes refuse dumb buffers, primary nodes
    /// // refuse a zero width.
    /// let err = dev.create_dumb_unchecked(0, 48, 32).unwrap_err();
    /// if dev.is_render_node() {
    ///     assert_eq!(err, DrmError::RenderNode(dev.path().to_owned()));
    /// } else {
    ///     assert_eq!(err, DrmError::BadDumbGeometry { width: 0, height: 48, bpp: 32 });
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_dumb_unchecked(&self, width: u32, height: u32, bpp: u32) -> Result<DumbBuffer<'_>, DrmError> {
        let mut arg = DrmModeCreateDumb { height, width, bpp, flags: 0, handle: 0, pitch: 0, size: 0 };
        // SAFETY: DRM_IOCTL_MODE_CREATE_DUMB reads and writes one
        // `struct drm_mode_create_dumb`, which `DrmModeCreateDumb` mirrors
        // (size checked at compile time); `self.fd` is a DRM node.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DRM_IOCTL_MODE_CREATE_DUMB, &mut arg) }.map_err(|e| match e {
            Errno::NOSYS => DrmError::NoDumbBuffers(self.version.name.clone()),
            Errno::ACCESS if self.render => DrmError::RenderNode(self.path.clone()),
            Errno::INVAL => DrmError::BadDumbGeometry { width, height, bpp },
            Errno::NOMEM => DrmError::OutOfMemory { width, height, bpp },
            e => OsError::new("DRM_IOCTL_MODE_CREATE_DUMB", e).into(),
        })?;
        self.hold(arg.handle);
        Ok(DumbBuffer { dev: self, handle: arg.handle, width, height, bpp, pitch: arg.pitch, size: arg.size })
    }

    /// Exports a dumb buffer as a dma-buf (`DRM_IOCTL_PRIME_HANDLE_TO_FD`).
    /// Use `PrimeFlags::CLOEXEC | PrimeFlags::RDWR` for a buffer the CPU will
    /// write through a mapping. Exporting the same buffer again gives another
    /// fd for the same dma-buf.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::drm::PrimeFlags;
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let dma_buf = dev.export(&buf, PrimeFlags::CLOEXEC | PrimeFlags::RDWR)?;
    /// assert_eq!(dma_buf.size()?, buf.size());
    /// let map = dma_buf.map(Access::ReadWrite)?;
    /// let access = dma_buf.cpu_access(Access::Write)?;
    /// map.write_u32(0, 0xff00_00ff);
    /// access.end()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export(&self, buf: &DumbBuffer<'_>, flags: PrimeFlags) -> Result<DmaBuf, DrmError> {
        if !std::ptr::eq(buf.dev, self) {
            return Err(DrmError::ForeignBuffer);
        }
        let mut arg = DrmPrimeHandle { handle: buf.handle, flags: flags.bits(), fd: -1 };
        // SAFETY: DRM_IOCTL_PRIME_HANDLE_TO_FD reads `handle` and `flags` and
        // writes `fd` of one `struct drm_prime_handle`, which `DrmPrimeHandle`
        // mirrors; the handle is alive (held by `buf`) on this very file.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut arg) }
            .map_err(OsError::tag("DRM_IOCTL_PRIME_HANDLE_TO_FD"))?;
        // SAFETY: on success the kernel installed a new dma-buf fd in `arg.fd`
        // that nobody else owns; we take ownership exactly once.
        Ok(DmaBuf::from_kernel(unsafe { OwnedFd::from_raw_fd(arg.fd) }))
    }

    /// Imports a dma-buf (`DRM_IOCTL_PRIME_FD_TO_HANDLE`). If the buffer
    /// already has a handle on this device (it was exported from here, or
    /// imported before), that same handle is returned and shared: it is
    /// closed only when every [`DumbBuffer`] and [`GemHandle`] holding it is
    /// gone.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::PrimeFlags;
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let dma_buf = dev.export(&buf, PrimeFlags::CLOEXEC)?;
    /// // The buffer already has a handle on this device: the import shares it.
    /// let gem = dev.import(&dma_buf)?;
    /// assert_eq!(gem.handle(), buf.handle());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn import(&self, buf: &DmaBuf) -> Result<GemHandle<'_>, DrmError> {
        let mut arg = DrmPrimeHandle { handle: 0, flags: 0, fd: buf.as_fd().as_raw_fd() };
        // SAFETY: DRM_IOCTL_PRIME_FD_TO_HANDLE reads `fd` and writes `handle`
        // of one `struct drm_prime_handle`; the fd is borrowed from `buf`,
        // which outlives the call, and the kernel takes its own reference.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DRM_IOCTL_PRIME_FD_TO_HANDLE, &mut arg) }.map_err(|e| match e {
            Errno::BADF | Errno::FAULT => DrmError::Os(OsError::new("DRM_IOCTL_PRIME_FD_TO_HANDLE", e)),
            e => DrmError::ImportRefused { driver: self.version.name.clone(), errno: e },
        })?;
        self.hold(arg.handle);
        Ok(GemHandle { dev: self, handle: arg.handle })
    }

    /// Counts one more holder of `handle`.
    fn hold(&self, handle: u32) {
        *self.handles.lock().unwrap_or_else(|p| p.into_inner()).entry(handle).or_insert(0) += 1;
    }

    /// Drops one holder of `handle`, closing it (`DRM_IOCTL_GEM_CLOSE`) when
    /// it was the last. Returns whether it was closed.
    fn release(&self, handle: u32) -> Result<bool, OsError> {
        let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
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

/// The kernel's dumb-buffer geometry rules (drm_mode_create_dumb in
/// drivers/gpu/drm/drm_dumb_buffers.c): non-zero sizes, and the 32-bit size
/// computation must neither overflow nor wrap when page-aligned.
fn dumb_geometry_ok(width: u32, height: u32, bpp: u32) -> bool {
    if width == 0 || height == 0 || bpp == 0 || bpp > u32::MAX - 8 {
        return false;
    }
    let cpp = bpp.div_ceil(8);
    let Some(size) = cpp.checked_mul(width).and_then(|stride| stride.checked_mul(height)) else { return false };
    (size as u64).next_multiple_of(page_size() as u64) <= u32::MAX as u64
}

/// Asks the driver behind `fd` for its name, description and version
/// (`DRM_IOCTL_VERSION`, twice: once for the lengths, once for the text).
fn version(fd: BorrowedFd<'_>) -> Result<DriverVersion, OsError> {
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

/// A dumb buffer: a GEM object on a [`DrmDevice`], closed on drop.
#[derive(Debug)]
pub struct DumbBuffer<'dev> {
    dev: &'dev DrmDevice,
    handle: u32,
    width: u32,
    height: u32,
    bpp: u32,
    pitch: u32,
    size: u64,
}

impl DumbBuffer<'_> {
    /// The GEM handle (valid on its device's open file only).
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // GEM handles start at 1.
    /// assert_ne!(buf.handle(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// Width in pixels.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// assert_eq!(buf.width(), 64);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// assert_eq!(buf.height(), 48);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Bits per pixel.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// assert_eq!(buf.bpp(), 32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bpp(&self) -> u32 {
        self.bpp
    }

    /// Bytes per row, as the driver chose it.
    ///
    /// No system call: the pitch `DRM_IOCTL_MODE_CREATE_DUMB` returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// assert!(buf.pitch() >= buf.width() * 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pitch(&self) -> u32 {
        self.pitch
    }

    /// Size in bytes, as the driver allocated it (at least `pitch × height`,
    /// rounded up to a page).
    ///
    /// No system call: the size `DRM_IOCTL_MODE_CREATE_DUMB` returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// assert!(buf.size() >= u64::from(buf.pitch()) * u64::from(buf.height()));
    /// assert_eq!(buf.size() % dmabridge::sys::page_size() as u64, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The device it lives on.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// assert!(std::ptr::eq(buf.device(), &dev));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(&self) -> &DrmDevice {
        self.dev
    }
}

impl Drop for DumbBuffer<'_> {
    fn drop(&mut self) {
        // Nothing to report to from drop; a failed close leaves the object
        // to be freed when the device's file is closed.
        let _ = self.dev.release(self.handle);
    }
}

/// A GEM handle from an import, closed on drop once no other [`GemHandle`]
/// or [`DumbBuffer`] of the same device shares it.
#[derive(Debug)]
pub struct GemHandle<'dev> {
    dev: &'dev DrmDevice,
    handle: u32,
}

impl GemHandle<'_> {
    /// The handle number (valid on its device's open file only).
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::PrimeFlags;
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let gem = dev.import(&dev.export(&buf, PrimeFlags::CLOEXEC)?)?;
    /// assert_eq!(gem.handle(), buf.handle());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The device it lives on.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::PrimeFlags;
    /// use dmabridge::sys::drm::DrmDevice;
    ///
    /// // vgem, the virtual GEM driver, where this machine has it.
    /// let dev = match DrmDevice::open_vgem() {
    ///     Ok(d) => d,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // Dumb buffers need the primary node (cardN).
    /// let buf = match dev.create_dumb(64, 48, 32) {
    ///     Ok(b) => b,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let gem = dev.import(&dev.export(&buf, PrimeFlags::CLOEXEC)?)?;
    /// assert!(std::ptr::eq(gem.device(), &dev));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(&self) -> &DrmDevice {
        self.dev
    }
}

impl Drop for GemHandle<'_> {
    fn drop(&mut self) {
        // See `DumbBuffer`'s drop.
        let _ = self.dev.release(self.handle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
