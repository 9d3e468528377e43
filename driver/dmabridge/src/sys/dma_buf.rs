//! dma-buf: the kernel's shareable buffer object.
//!
//! A [`DmaBuf`] owns a dma-buf fd (from udmabuf, a DMA-BUF heap, DRM PRIME or
//! a peer process). CPU access to its mapping must be bracketed with
//! `DMA_BUF_IOCTL_SYNC` start/end so that caches and device ownership are
//! handled by the exporter: [`DmaBuf::cpu_access`] returns a guard that does
//! exactly that. Implicit fences can be exported and imported as sync_files.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Mutex;
use std::time::Duration;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use super::access::Access;
use super::ioctl::{ioctl_ptr, ioctl_ptr_again, opcode, restart, Again, Opcode};
use super::mmap::{check_range, MapError, Mapping};
use super::{OsError, OsResult};

/// `DMA_BUF_MAGIC` from `<uapi/linux/magic.h>`: the f_type of the dma-buf
/// pseudo filesystem, which tells a dma-buf fd from any other fd.
const DMA_BUF_MAGIC: i64 = 0x444d_4142;

bitflags::bitflags! {
    /// `DMA_BUF_SYNC_*`: the flags of `struct dma_buf_sync` (and the direction
    /// of the sync_file ioctls). `START` is the absence of `END`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct SyncFlags: u64 {
        const READ = 1 << 0;
        const WRITE = 1 << 1;
        const END = 1 << 2;
    }
}

impl SyncFlags {
    const START: SyncFlags = SyncFlags::empty();
}

#[repr(C)]
struct DmaBufSync {
    flags: u64,
}

#[repr(C)]
struct DmaBufSyncFile {
    flags: u32,
    fd: i32,
}

const DMA_BUF_IOCTL_SYNC: Opcode = opcode::write::<DmaBufSync>(b'b', 0);
const DMA_BUF_IOCTL_EXPORT_SYNC_FILE: Opcode = opcode::read_write::<DmaBufSyncFile>(b'b', 2);
const DMA_BUF_IOCTL_IMPORT_SYNC_FILE: Opcode = opcode::write::<DmaBufSyncFile>(b'b', 3);

/// The `DMA_BUF_SYNC_*` direction bits of an access.
fn sync_flags(dir: Access) -> SyncFlags {
    match dir {
        Access::Read => SyncFlags::READ,
        Access::Write => SyncFlags::WRITE,
        Access::ReadWrite => SyncFlags::READ | SyncFlags::WRITE,
    }
}

/// A dma-buf file descriptor.
#[derive(Debug)]
pub struct DmaBuf {
    fd: OwnedFd,
}

impl DmaBuf {
    /// Takes ownership of `fd` after checking that it is a dma-buf; any other
    /// fd is refused with `EBADF` (op `"fstatfs dma-buf"`).
    ///
    /// Checks the fd with `fstatfs(2)` (`f_type == DMA_BUF_MAGIC`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::dma_buf::DmaBuf;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// let memfd = Memfd::create(c"pages", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// // Another owner's dma-buf fd, here one made through udmabuf, is accepted.
    /// match Udmabuf::open() {
    ///     Ok(u) => {
    ///         let fd = u.create(memfd.as_fd(), 0, 4096)?.into_fd();
    ///         assert_eq!(DmaBuf::from_fd(fd)?.size()?, 4096);
    ///     }
    ///     Err(e) => println!("{e}"),
    /// }
    /// // A memfd is not a dma-buf.
    /// let err = DmaBuf::from_fd(memfd.into_fd()).unwrap_err();
    /// assert_eq!((err.op, err.errno), ("fstatfs dma-buf", rustix::io::Errno::BADF));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_fd(fd: OwnedFd) -> OsResult<DmaBuf> {
        let st = rustix::fs::fstatfs(&fd).map_err(OsError::tag("fstatfs dma-buf"))?;
        if st.f_type as i64 != DMA_BUF_MAGIC {
            return Err(OsError::new("fstatfs dma-buf", Errno::BADF));
        }
        Ok(DmaBuf { fd })
    }

    /// Wraps an fd the kernel just returned as a dma-buf.
    pub(crate) fn from_kernel(fd: OwnedFd) -> DmaBuf {
        DmaBuf { fd }
    }

    /// Size in bytes (a dma-buf answers `lseek(SEEK_END)` with its size).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// assert_eq!(buf.size()?, 8192);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn size(&self) -> OsResult<u64> {
        let size = rustix::fs::seek(&self.fd, SeekFrom::End(0)).map_err(OsError::tag("lseek dma-buf"))?;
        rustix::fs::seek(&self.fd, SeekFrom::Start(0)).map_err(OsError::tag("lseek dma-buf"))?;
        Ok(size)
    }

    /// The dma-buf's inode number: the same buffer has the same inode through
    /// every fd that refers to it (dup, SCM_RIGHTS, /proc/PID/fdinfo).
    ///
    /// Wraps `fstat(2)` (`st_ino`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let dup = buf.try_clone()?;
    /// assert_eq!(buf.inode()?, dup.inode()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn inode(&self) -> OsResult<u64> {
        Ok(rustix::fs::fstat(&self.fd).map_err(OsError::tag("fstat dma-buf"))?.st_ino)
    }

    /// True if `self` and `other` are the same kernel buffer.
    ///
    /// Wraps `fstat(2)` on both fds.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// assert!(buf.same_buffer(&buf.try_clone()?)?);
    /// // The same pages exported again make a second, distinct dma-buf.
    /// let other = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// assert!(!buf.same_buffer(&other)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn same_buffer(&self, other: &DmaBuf) -> OsResult<bool> {
        Ok(self.inode()? == other.inode()?)
    }

    /// Maps the whole buffer, shared.
    ///
    /// Safe because a dma-buf cannot lose pages under its mappings: its size
    /// is fixed when it is exported. CPU accesses still belong between
    /// [`DmaBuf::cpu_access`] start and end.
    ///
    /// Wraps `lseek(2)` for the size, then `mmap(2)` with `MAP_SHARED`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// memfd.map(0, 8192, Access::Write)?.write_bytes(0, b"pixels");
    /// let map = buf.map(Access::Read)?;
    /// assert_eq!(map.len(), 8192);
    /// let access = buf.cpu_access(Access::Read)?;
    /// let mut out = [0u8; 6];
    /// map.read_bytes(0, &mut out);
    /// access.end()?;
    /// assert_eq!(&out, b"pixels");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map(&self, access: Access) -> OsResult<Mapping> {
        let size = self.size()?;
        let len = usize::try_from(size).map_err(|_| OsError::new("mmap dma-buf", Errno::OVERFLOW))?;
        // A dma-buf's size is set by the exporter at export (`dma_buf->size`)
        // and its pages kept for as long as any mapping holds the buffer.
        // SAFETY: the mapping covers exactly the buffer, which cannot shrink,
        // whoever else holds its fd.
        unsafe { Mapping::shared(self.fd.as_fd(), 0, len, access) }
    }

    /// Maps `len` bytes from `offset`.
    ///
    /// The range must lie inside the buffer ([`MapError::OutOfBounds`],
    /// checked without overflow); `offset` must be a page multiple (the
    /// kernel's `EINVAL` otherwise).
    ///
    /// Wraps `lseek(2)` for the size, then `mmap(2)` with `MAP_SHARED`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::mmap::MapError;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let second_page = buf.map_range(4096, 4096, Access::ReadWrite)?;
    /// let access = buf.cpu_access(Access::Write)?;
    /// second_page.write_u32(0, 42);
    /// access.end()?;
    /// assert_eq!(memfd.map(4096, 4096, Access::Read)?.read_u32(0), 42);
    /// // Ranges past the end are refused before the kernel is asked.
    /// let past = buf.map_range(4096, 8192, Access::Read).unwrap_err();
    /// assert_eq!(past, MapError::OutOfBounds { offset: 4096, len: 8192, size: 8192 });
    /// assert!(matches!(buf.map_range(u64::MAX, usize::MAX, Access::Read), Err(MapError::OutOfBounds { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map_range(&self, offset: u64, len: usize, access: Access) -> Result<Mapping, MapError> {
        check_range(offset, len, self.size()?)?;
        // SAFETY: the range lies inside the buffer (checked just above, and
        // the kernel checks again), whose size is fixed for its whole life;
        // see `map`.
        Ok(unsafe { Mapping::shared(self.fd.as_fd(), offset, len, access) }?)
    }

    /// Begins CPU access (`DMA_BUF_IOCTL_SYNC` start); the guard ends it when
    /// dropped or on [`CpuAccess::end`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let map = buf.map(Access::ReadWrite)?;
    /// {
    ///     let _access = buf.cpu_access(Access::Write)?;
    ///     map.write_bytes(0, b"frame 1");
    /// } // DMA_BUF_IOCTL_SYNC end is issued here.
    /// let mut out = [0u8; 7];
    /// memfd.map(0, 4096, Access::Read)?.read_bytes(0, &mut out);
    /// assert_eq!(&out, b"frame 1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cpu_access(&self, dir: Access) -> OsResult<CpuAccess<'_>> {
        self.begin_cpu_access(dir)?;
        Ok(CpuAccess { buf: self, dir, ended: false })
    }

    /// Begins CPU access without a guard (`DMA_BUF_IOCTL_SYNC` start), for
    /// an access whose end is issued elsewhere (a map ended by its unmap):
    /// pair it with [`DmaBuf::end_cpu_access`] of the same direction.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// buf.begin_cpu_access(Access::Read)?;
    /// buf.end_cpu_access(Access::Read)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn begin_cpu_access(&self, dir: Access) -> OsResult<()> {
        self.sync(SyncFlags::START | sync_flags(dir))
    }

    /// Ends CPU access begun by [`DmaBuf::begin_cpu_access`]
    /// (`DMA_BUF_IOCTL_SYNC` with `DMA_BUF_SYNC_END`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// buf.begin_cpu_access(Access::ReadWrite)?;
    /// buf.end_cpu_access(Access::ReadWrite)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn end_cpu_access(&self, dir: Access) -> OsResult<()> {
        self.sync(SyncFlags::END | sync_flags(dir))
    }

    /// The access mode the dma-buf's file was opened with (`O_ACCMODE` of
    /// its status flags): an exporter may hand out read-only dma-bufs
    /// (e.g. a DMA-BUF heap allocation or `VIDIOC_EXPBUF` with `O_RDONLY`,
    /// a PRIME export without `DRM_RDWR`), whose mappings cannot be
    /// writable.
    ///
    /// Wraps `fcntl(2)` `F_GETFL`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// // udmabuf exports read-write dma-bufs.
    /// assert_eq!(udmabuf.create(memfd.as_fd(), 0, 4096)?.access_mode()?, Access::ReadWrite);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn access_mode(&self) -> OsResult<Access> {
        use rustix::fs::OFlags;
        let flags = rustix::fs::fcntl_getfl(&self.fd).map_err(OsError::tag("fcntl F_GETFL dma-buf"))?;
        Ok(match flags & OFlags::RWMODE {
            m if m == OFlags::RDONLY => Access::Read,
            m if m == OFlags::WRONLY => Access::Write,
            _ => Access::ReadWrite,
        })
    }

    /// The name of the kernel driver that exported the buffer (`exp_name`
    /// in `/proc/self/fdinfo`), e.g. `udmabuf`, `system` (the DMA-BUF system
    /// heap), `vb2_vmalloc`, `drm_gem_shmem` or `vgem`; `None` if the kernel
    /// does not say.
    ///
    /// Reads `/proc/self/fdinfo/<fd>`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// assert_eq!(buf.exporter().as_deref(), Some("udmabuf"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exporter(&self) -> Option<String> {
        use std::os::fd::AsRawFd;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", self.fd.as_raw_fd())).ok()?;
        info.lines().find_map(|l| l.strip_prefix("exp_name:")).map(|v| v.trim().to_string())
    }

    fn sync(&self, flags: SyncFlags) -> OsResult<()> {
        let mut arg = DmaBufSync { flags: flags.bits() };
        // Restarted on EINTR and EAGAIN, as the kernel asks: a signal while the start waits for the buffer's fences
        // must not fail the access, nor leave an end undone (the bracket unbalanced, stale cache lines on a
        // non-coherent machine).
        // SAFETY: DMA_BUF_IOCTL_SYNC reads one `struct dma_buf_sync` (`DmaBufSync`); `self.fd` is a dma-buf.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DMA_BUF_IOCTL_SYNC, &mut arg) }
            .map(drop)
            .map_err(OsError::tag("DMA_BUF_IOCTL_SYNC"))
    }

    /// Exports the buffer's implicit fences as a sync_file
    /// (`DMA_BUF_IOCTL_EXPORT_SYNC_FILE`): `Read` waits for writers, `Write`
    /// for every user.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// // Kernels before 6.0 lack the ioctl (ENOTTY).
    /// match buf.export_sync_file(Access::Write) {
    ///     // No device uses the buffer: its fences are all signalled.
    ///     Ok(fence) => assert!(fence.is_signaled()?),
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export_sync_file(&self, dir: Access) -> OsResult<SyncFile> {
        let mut arg = DmaBufSyncFile { flags: sync_flags(dir).bits() as u32, fd: -1 };
        // SAFETY: the ioctl reads `flags` and writes a new fd into `fd` of a
        // `struct dma_buf_export_sync_file`, which `DmaBufSyncFile` mirrors.
        unsafe { ioctl_ptr(self.fd.as_fd(), DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &mut arg) }
            .map_err(OsError::tag("DMA_BUF_IOCTL_EXPORT_SYNC_FILE"))?;
        // SAFETY: on success the kernel installed a new fd that nobody else
        // owns; we take ownership exactly once.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(arg.fd) };
        Ok(SyncFile { fd })
    }

    /// Adds `fence` to the buffer's implicit fences
    /// (`DMA_BUF_IOCTL_IMPORT_SYNC_FILE`): `Write` makes later users wait for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// // Kernels before 6.0 lack the ioctls (ENOTTY).
    /// match buf.export_sync_file(Access::Read) {
    ///     Ok(fence) => {
    ///         buf.import_sync_file(&fence, Access::Write)?;
    ///         assert!(buf.export_sync_file(Access::Write)?.is_signaled()?);
    ///     }
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn import_sync_file(&self, fence: &SyncFile, dir: Access) -> OsResult<()> {
        use std::os::fd::AsRawFd;
        let mut arg = DmaBufSyncFile { flags: sync_flags(dir).bits() as u32, fd: fence.fd.as_raw_fd() };
        // SAFETY: the ioctl reads a `struct dma_buf_import_sync_file`; the fd
        // in it is borrowed from `fence`, which outlives the call.
        unsafe { ioctl_ptr(self.fd.as_fd(), DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &mut arg) }
            .map(drop)
            .map_err(OsError::tag("DMA_BUF_IOCTL_IMPORT_SYNC_FILE"))
    }

    /// Gives up the wrapper, keeping the fd.
    ///
    /// No system call: the fd stays open.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::dma_buf::DmaBuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let fd = buf.into_fd();
    /// // The fd is still a dma-buf, e.g. to pass to another process.
    /// assert_eq!(DmaBuf::from_fd(fd)?.size()?, 8192);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }

    /// A second fd for the same buffer (`F_DUPFD_CLOEXEC`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use std::os::fd::AsRawFd;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let dup = buf.try_clone()?;
    /// assert_ne!(dup.as_fd().as_raw_fd(), buf.as_fd().as_raw_fd());
    /// assert!(dup.same_buffer(&buf)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_clone(&self) -> OsResult<DmaBuf> {
        Ok(DmaBuf {
            fd: self
                .fd
                .try_clone()
                .map_err(|e| OsError::new("dup dma-buf", Errno::from_io_error(&e).unwrap_or(Errno::BADF)))?,
        })
    }
}

impl AsFd for DmaBuf {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A mapping of a dma-buf made on first use: [`DmaBuf::map_lazily`] only
/// reserves the address range (no page, no page table), and
/// [`LazyMap::ensure`] maps the dma-buf over it the first time the CPU needs
/// it. Exporters whose `mmap` sets up every page at once (the DMA-BUF heaps
/// call `remap_pfn_range` over the whole buffer) then cost nothing until
/// used. Unmapped when dropped.
#[derive(Debug)]
pub struct LazyMap {
    dma_buf: DmaBuf,
    ptr: NonNull<u8>,
    len: usize,
    access: Access,
    /// `Some(true)` once mapped; `Some(false)` while only reserved; `None`
    /// if a failed mapping lost the range, or found it taken (then it is
    /// not unmapped).
    state: Mutex<Option<bool>>,
}

// SAFETY: the address range is owned by the `LazyMap` (reserved at creation,
// unmapped once in `Drop`); the bytes are only reached through raw pointers
// by `unsafe` code under its own contract, never through references, and the
// mapping state is behind a mutex.
unsafe impl Send for LazyMap {}
// SAFETY: as for `Send`: `&LazyMap` offers `ensure` (serialised by the
// mutex) and the address, never a reference into the bytes.
unsafe impl Sync for LazyMap {}

impl DmaBuf {
    /// Reserves `len` bytes of address space for a mapping of the dma-buf
    /// from its first byte, made by [`LazyMap::ensure`] on first use. The
    /// lazy map keeps its own fd of the buffer.
    ///
    /// Errors: [`MapError::OutOfBounds`] for a `len` of 0 or past the end of
    /// the buffer; the kernel's, for the reservation (`mmap` of `PROT_NONE`
    /// anonymous memory) or if the first page cannot be mapped (probed now,
    /// so that an exporter without `mmap` is refused up front).
    ///
    /// Wraps `mmap(2)` (a `PROT_NONE` reservation).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    /// use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// memfd.map(0, 8192, Access::Write)?.write_bytes(4096, b"late");
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let lazy = buf.map_lazily(8192, Access::Read)?;
    /// assert!(!lazy.is_mapped());
    /// lazy.ensure()?;
    /// let mut out = [0u8; 4];
    /// // SAFETY: mapped, 8192 bytes; read into `out`, which nothing else uses.
    /// unsafe { std::ptr::copy_nonoverlapping(lazy.as_ptr().add(4096), out.as_mut_ptr(), 4) };
    /// assert_eq!(&out, b"late");
    /// assert!(buf.map_lazily(8193, Access::Read).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map_lazily(&self, len: usize, access: Access) -> Result<LazyMap, MapError> {
        let size = self.size()?;
        if len == 0 {
            return Err(MapError::OutOfBounds { offset: 0, len, size });
        }
        check_range(0, len, size)?;
        // The exporter must map at all: probe one page now.
        drop(self.map_range(0, len.min(super::page_size()), access)?);
        let dma_buf = self.try_clone()?;
        // SAFETY: a null hint lets the kernel pick a fresh range, so nothing
        // is overlapped; the reservation holds no memory and is owned by the
        // `LazyMap`, which unmaps it once.
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::empty(),
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
            )
        }
        .map_err(OsError::tag("mmap reservation"))?;
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(OsError::new("mmap reservation", Errno::FAULT))?;
        Ok(LazyMap { dma_buf, ptr, len, access, state: Mutex::new(Some(false)) })
    }
}

impl LazyMap {
    /// The address of the dma-buf's first byte once mapped (the range is
    /// reserved, and faults, before [`LazyMap::ensure`]).
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert_eq!(lazy.as_ptr() as usize % 4096, 0);
    /// assert_eq!(lazy.len(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The dma-buf it maps (its own fd of it).
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert!(lazy.dma_buf().same_buffer(&buf)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dma_buf(&self) -> &DmaBuf {
        &self.dma_buf
    }

    /// Its length in bytes.
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert_eq!(lazy.len(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True once [`LazyMap::ensure`] mapped the dma-buf.
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert!(!lazy.is_mapped());
    /// lazy.ensure()?;
    /// assert!(lazy.is_mapped());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_mapped(&self) -> bool {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) == Some(true)
    }

    /// Maps the dma-buf over the reserved range if it is not yet mapped.
    /// Several threads may call it: one maps, the others wait.
    ///
    /// Wraps `mmap(2)` with `MAP_SHARED | MAP_FIXED` over the reservation.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// lazy.ensure()?;
    /// lazy.ensure()?; // once mapped, nothing more to do
    /// // SAFETY: mapped for reading and writing, 4096 bytes, not shared with Rust references.
    /// unsafe { lazy.as_ptr().write_volatile(7) };
    /// assert_eq!(memfd.map(0, 4096, Access::Read)?.read_u32(0) & 0xff, 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ensure(&self) -> OsResult<()> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match *state {
            Some(true) => return Ok(()),
            None => return Err(OsError::new("mmap dma-buf (its range was lost)", Errno::NOMEM)),
            Some(false) => {}
        }
        use rustix::mm::MapFlags;
        // SAFETY: MAP_FIXED replaces only our own reservation (`ptr`, `len`);
        // the dma-buf is at least `len` bytes (checked at creation) and cannot
        // shrink, so the mapping stays backed.
        let mapped = unsafe {
            rustix::mm::mmap(
                self.ptr.as_ptr().cast(),
                self.len,
                self.access.prot(),
                MapFlags::SHARED | MapFlags::FIXED,
                self.dma_buf.as_fd(),
                0,
            )
        };
        match mapped {
            Ok(_) => {
                *state = Some(true);
                Ok(())
            }
            Err(e) => {
                // A failed MAP_FIXED may have unmapped the reservation: take
                // the range back, or give it up (never unmapping what another
                // mapping may now hold).
                // SAFETY: MAP_FIXED_NOREPLACE maps only where nothing is.
                let again = unsafe {
                    rustix::mm::mmap_anonymous(
                        self.ptr.as_ptr().cast(),
                        self.len,
                        rustix::mm::ProtFlags::empty(),
                        MapFlags::PRIVATE | MapFlags::NORESERVE | MapFlags::FIXED_NOREPLACE,
                    )
                };
                match again {
                    // Reserved again: the failed mapping had dropped it.
                    Ok(_) => {}
                    // Something is mapped there (EEXIST): our reservation,
                    // kept by a kernel that undoes a failed MAP_FIXED, or —
                    // where the kernel unmaps first — another thread's
                    // mapping made meanwhile. They cannot be told apart, so
                    // the range is given up and never unmapped: at worst a
                    // reservation's address space is lost, never another's
                    // memory.
                    Err(_) => *state = None,
                }
                Err(OsError::new("mmap dma-buf", e))
            }
        }
    }
}

impl Drop for LazyMap {
    fn drop(&mut self) {
        if self.state.get_mut().unwrap_or_else(|p| p.into_inner()).is_some() {
            // SAFETY: our own range (reserved or mapped), unmapped once; no
            // reference into it exists (see `Send`).
            let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}

/// CPU access in progress: `DMA_BUF_IOCTL_SYNC` end is issued when dropped.
#[derive(Debug)]
pub struct CpuAccess<'a> {
    buf: &'a DmaBuf,
    dir: Access,
    ended: bool,
}

impl CpuAccess<'_> {
    /// Ends the access now and reports the kernel's answer (drop ignores it).
    ///
    /// Wraps `DMA_BUF_IOCTL_SYNC` with `DMA_BUF_SYNC_END`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let map = buf.map(Access::ReadWrite)?;
    /// let access = buf.cpu_access(Access::ReadWrite)?;
    /// map.write_u64(0, 7);
    /// assert_eq!(map.read_u64(0), 7);
    /// access.end()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn end(mut self) -> OsResult<()> {
        self.ended = true;
        self.buf.sync(SyncFlags::END | sync_flags(self.dir))
    }
}

impl Drop for CpuAccess<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.buf.sync(SyncFlags::END | sync_flags(self.dir));
        }
    }
}

/// A sync_file: a fence as an fd, readable (POLLIN) once signalled.
#[derive(Debug)]
pub struct SyncFile {
    fd: OwnedFd,
}

impl SyncFile {
    /// Takes ownership of a sync_file fd.
    ///
    /// No system call: the fd is not checked.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::dma_buf::SyncFile;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// // Kernels before 6.0 cannot export fences (ENOTTY).
    /// match buf.export_sync_file(Access::Write) {
    ///     Ok(fence) => {
    ///         // E.g. a fence fd received from another process.
    ///         let received = SyncFile::from_fd(fence.as_fd().try_clone_to_owned()?);
    ///         assert!(received.is_signaled()?);
    ///     }
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_fd(fd: OwnedFd) -> SyncFile {
        SyncFile { fd }
    }

    /// Waits up to `timeout` for the fence; true if it signalled.
    ///
    /// Wraps `poll(2)` for `POLLIN`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use std::time::Duration;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// // Kernels before 6.0 cannot export fences (ENOTTY).
    /// match buf.export_sync_file(Access::Read) {
    ///     Ok(fence) => assert!(fence.wait(Duration::from_secs(1))?),
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(&self, timeout: Duration) -> OsResult<bool> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
        // A signal (EINTR) restarts the wait for the time left.
        let deadline = std::time::Instant::now().checked_add(timeout);
        let n = restart(Again::Fail, || {
            let left = deadline.map_or(timeout, |d| d.saturating_duration_since(std::time::Instant::now()));
            let ts =
                Timespec { tv_sec: left.as_secs().min(i64::MAX as u64) as i64, tv_nsec: left.subsec_nanos() as i64 };
            poll(&mut fds, Some(&ts))
        })
        .map_err(OsError::tag("poll sync_file"))?;
        Ok(n > 0)
    }

    /// True if the fence has signalled.
    ///
    /// Wraps `poll(2)` with a zero timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let udmabuf = match Udmabuf::open() {
    ///     Ok(u) => u,
    ///     Err(e) => {
    ///         println!("{e}");
    ///         return Ok(());
    ///     }
    /// };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// // Kernels before 6.0 cannot export fences (ENOTTY).
    /// match buf.export_sync_file(Access::Write) {
    ///     // Nothing but the CPU uses the buffer, so nothing is pending.
    ///     Ok(fence) => assert!(fence.is_signaled()?),
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_signaled(&self) -> OsResult<bool> {
        self.wait(Duration::ZERO)
    }
}

impl AsFd for SyncFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
