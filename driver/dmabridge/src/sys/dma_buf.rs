//! dma-buf: the kernel's shareable buffer object.
//!
//! A [`DmaBuf`] owns a dma-buf fd (from udmabuf, a DMA-BUF heap, DRM PRIME or
//! a peer process). CPU access to its mapping must be bracketed with
//! `DMA_BUF_IOCTL_SYNC` start/end so that caches and device ownership are
//! handled by the exporter: [`DmaBuf::cpu_access`] returns a guard that does
//! exactly that. Implicit fences can be exported and imported as sync_files.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use super::ioctl::{ioctl_ptr, opcode, Opcode};
use super::mmap::{Access, Mapping};
use super::{OsError, OsResult};

/// `DMA_BUF_MAGIC` from `<uapi/linux/magic.h>`: the f_type of the dma-buf
/// pseudo filesystem, which tells a dma-buf fd from any other fd.
const DMA_BUF_MAGIC: i64 = 0x444d_4142;

const SYNC_READ: u64 = 1 << 0;
const SYNC_WRITE: u64 = 1 << 1;
const SYNC_START: u64 = 0;
const SYNC_END: u64 = 1 << 2;

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

/// Which direction of CPU (or fence) access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncDir {
    /// The CPU reads.
    Read,
    /// The CPU writes.
    Write,
    /// The CPU reads and writes.
    ReadWrite,
}

impl SyncDir {
    fn bits(self) -> u64 {
        match self {
            SyncDir::Read => SYNC_READ,
            SyncDir::Write => SYNC_WRITE,
            SyncDir::ReadWrite => SYNC_READ | SYNC_WRITE,
        }
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
    pub fn size(&self) -> OsResult<u64> {
        let size = rustix::fs::seek(&self.fd, SeekFrom::End(0)).map_err(OsError::tag("lseek dma-buf"))?;
        rustix::fs::seek(&self.fd, SeekFrom::Start(0)).map_err(OsError::tag("lseek dma-buf"))?;
        Ok(size)
    }

    /// The dma-buf's inode number: the same buffer has the same inode through
    /// every fd that refers to it (dup, SCM_RIGHTS, /proc/PID/fdinfo).
    pub fn inode(&self) -> OsResult<u64> {
        Ok(rustix::fs::fstat(&self.fd).map_err(OsError::tag("fstat dma-buf"))?.st_ino)
    }

    /// True if `self` and `other` are the same kernel buffer.
    pub fn same_buffer(&self, other: &DmaBuf) -> OsResult<bool> {
        Ok(self.inode()? == other.inode()?)
    }

    /// Maps the whole buffer, shared.
    pub fn map(&self, access: Access) -> OsResult<Mapping> {
        let size = self.size()?;
        Mapping::shared(self.fd.as_fd(), 0, size as usize, access)
    }

    /// Maps `len` bytes from `offset`.
    pub fn map_range(&self, offset: u64, len: usize, access: Access) -> OsResult<Mapping> {
        Mapping::shared(self.fd.as_fd(), offset, len, access)
    }

    /// Begins CPU access (`DMA_BUF_IOCTL_SYNC` start); the guard ends it when
    /// dropped or on [`CpuAccess::end`].
    pub fn cpu_access(&self, dir: SyncDir) -> OsResult<CpuAccess<'_>> {
        self.sync(SYNC_START | dir.bits())?;
        Ok(CpuAccess { buf: self, dir, ended: false })
    }

    fn sync(&self, flags: u64) -> OsResult<()> {
        let mut arg = DmaBufSync { flags };
        // SAFETY: DMA_BUF_IOCTL_SYNC reads one `struct dma_buf_sync`, which
        // `DmaBufSync` mirrors; `self.fd` is a dma-buf.
        unsafe { ioctl_ptr(self.fd.as_fd(), DMA_BUF_IOCTL_SYNC, &mut arg) }
            .map(drop)
            .map_err(OsError::tag("DMA_BUF_IOCTL_SYNC"))
    }

    /// Exports the buffer's implicit fences as a sync_file
    /// (`DMA_BUF_IOCTL_EXPORT_SYNC_FILE`): `Read` waits for writers, `Write`
    /// for every user.
    pub fn export_sync_file(&self, dir: SyncDir) -> OsResult<SyncFile> {
        let mut arg = DmaBufSyncFile { flags: dir.bits() as u32, fd: -1 };
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
    pub fn import_sync_file(&self, fence: &SyncFile, dir: SyncDir) -> OsResult<()> {
        use std::os::fd::AsRawFd;
        let mut arg = DmaBufSyncFile { flags: dir.bits() as u32, fd: fence.fd.as_raw_fd() };
        // SAFETY: the ioctl reads a `struct dma_buf_import_sync_file`; the fd
        // in it is borrowed from `fence`, which outlives the call.
        unsafe { ioctl_ptr(self.fd.as_fd(), DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &mut arg) }
            .map(drop)
            .map_err(OsError::tag("DMA_BUF_IOCTL_IMPORT_SYNC_FILE"))
    }

    /// Gives up the wrapper, keeping the fd.
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }

    /// A second fd for the same buffer (`F_DUPFD_CLOEXEC`).
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

/// CPU access in progress: `DMA_BUF_IOCTL_SYNC` end is issued when dropped.
#[derive(Debug)]
pub struct CpuAccess<'a> {
    buf: &'a DmaBuf,
    dir: SyncDir,
    ended: bool,
}

impl CpuAccess<'_> {
    /// Ends the access now and reports the kernel's answer (drop ignores it).
    pub fn end(mut self) -> OsResult<()> {
        self.ended = true;
        self.buf.sync(SYNC_END | self.dir.bits())
    }
}

impl Drop for CpuAccess<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.buf.sync(SYNC_END | self.dir.bits());
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
    pub fn from_fd(fd: OwnedFd) -> SyncFile {
        SyncFile { fd }
    }

    /// Waits up to `timeout` for the fence; true if it signalled.
    pub fn wait(&self, timeout: Duration) -> OsResult<bool> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
        let ts = Timespec { tv_sec: timeout.as_secs() as i64, tv_nsec: timeout.subsec_nanos() as i64 };
        let n = poll(&mut fds, Some(&ts)).map_err(OsError::tag("poll sync_file"))?;
        Ok(n > 0)
    }

    /// True if the fence has signalled.
    pub fn is_signaled(&self) -> OsResult<bool> {
        self.wait(Duration::ZERO)
    }
}

impl AsFd for SyncFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
