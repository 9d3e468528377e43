//! Implicit fences of a dma-buf exported and imported as sync_files.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use super::sync::sync_flags;
use super::DmaBuf;
use crate::sys::access::Access;
use crate::sys::ioctl::{ioctl_ptr, opcode, restart, Again, Opcode};
use crate::sys::{OsError, OsResult};

#[repr(C)]
struct DmaBufSyncFile {
    flags: u32,
    fd: i32,
}

const DMA_BUF_IOCTL_EXPORT_SYNC_FILE: Opcode = opcode::read_write::<DmaBufSyncFile>(b'b', 2);
const DMA_BUF_IOCTL_IMPORT_SYNC_FILE: Opcode = opcode::write::<DmaBufSyncFile>(b'b', 3);

impl DmaBuf {
    /// Exports the buffer's implicit fences as a sync_file
    /// (`DMA_BUF_IOCTL_EXPORT_SYNC_FILE`): `Read` waits for writers, `Write`
    /// for every user.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::dma_buf::SyncFile;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use std::time::Duration;
    /// use dmabridge::sys::access::Access;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
