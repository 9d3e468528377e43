//! dma-buf: the kernel's shareable buffer object.
//!
//! A [`DmaBuf`] owns a dma-buf fd (from udmabuf, a DMA-BUF heap, DRM PRIME or
//! a peer process). CPU access to its mapping must be bracketed with
//! `DMA_BUF_IOCTL_SYNC` start/end so that caches and device ownership are
//! handled by the exporter: [`DmaBuf::cpu_access`] returns a guard that does
//! exactly that. Implicit fences can be exported and imported as sync_files.

//!
//! One idea a file: the buffer, its size, identity and mappings here;
//! `sync` (CPU access bracketed by `DMA_BUF_IOCTL_SYNC`), `fence` (implicit
//! fences as sync_files), `lazy` (a mapping made on first use).

mod fence;
mod lazy;
mod sync;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use super::mmap::{check_range, Access, MapError, Mapping};
use super::{OsError, OsResult};
pub use fence::SyncFile;
pub use lazy::{LazyMap, CHUNK};
pub use sync::CpuAccess;

/// `DMA_BUF_MAGIC` from `<uapi/linux/magic.h>`: the f_type of the dma-buf
/// pseudo filesystem, which tells a dma-buf fd from any other fd.
const DMA_BUF_MAGIC: i64 = 0x444d_4142;

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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
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
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
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
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::mmap::MapError;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
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
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
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
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// assert_eq!(buf.exporter().as_deref(), Some("udmabuf"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exporter(&self) -> Option<String> {
        self.fdinfo_field("exp_name:")
    }

    /// The value of the line `key` of `/proc/self/fdinfo/<fd>`, trimmed.
    fn fdinfo_field(&self, key: &str) -> Option<String> {
        use std::os::fd::AsRawFd;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", self.fd.as_raw_fd())).ok()?;
        info.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().to_string())
    }

    /// How many references the dma-buf's file has (`count` in
    /// `/proc/self/fdinfo`, which leaves out procfs's own): each fd of any
    /// process (a `dup` included) and each driver that imported it hold one.
    /// `Some(1)` means this fd is the only holder left. `None` if the kernel
    /// does not say.
    ///
    /// Reads `/proc/self/fdinfo/<fd>`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// let memfd = Memfd::create(c"frame", 4096)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// assert_eq!(buf.file_refs(), Some(1));
    /// let dup = buf.try_clone()?;
    /// assert_eq!(buf.file_refs(), Some(2));
    /// drop(dup);
    /// assert_eq!(buf.file_refs(), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn file_refs(&self) -> Option<u64> {
        self.fdinfo_field("count:")?.parse().ok()
    }

    /// Gives up the wrapper, keeping the fd.
    ///
    /// No system call: the fd stays open.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::dma_buf::DmaBuf;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use std::os::fd::AsRawFd;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
