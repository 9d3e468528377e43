//! CPU access to a dma-buf's mapping, bracketed by `DMA_BUF_IOCTL_SYNC`.

use std::os::fd::AsFd;

use super::DmaBuf;
use crate::sys::access::Access;
use crate::sys::ioctl::{ioctl_ptr_again, opcode, Opcode};
use crate::sys::{OsError, OsResult};

bitflags::bitflags! {
    /// `DMA_BUF_SYNC_*`: the flags of `struct dma_buf_sync` (and the direction
    /// of the sync_file ioctls). `START` is the absence of `END`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct SyncFlags: u64 {
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

const DMA_BUF_IOCTL_SYNC: Opcode = opcode::write::<DmaBufSync>(b'b', 0);

/// The `DMA_BUF_SYNC_*` direction bits of an access.
pub(super) fn sync_flags(dir: Access) -> SyncFlags {
    match dir {
        Access::Read => SyncFlags::READ,
        Access::Write => SyncFlags::WRITE,
        Access::ReadWrite => SyncFlags::READ | SyncFlags::WRITE,
    }
}

impl DmaBuf {
    /// Begins CPU access (`DMA_BUF_IOCTL_SYNC` start); the guard ends it when
    /// dropped or on [`CpuAccess::end`].
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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// buf.begin_cpu_access(Access::ReadWrite)?;
    /// buf.end_cpu_access(Access::ReadWrite)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn end_cpu_access(&self, dir: Access) -> OsResult<()> {
        self.sync(SyncFlags::END | sync_flags(dir))
    }

    pub(super) fn sync(&self, flags: SyncFlags) -> OsResult<()> {
        let mut arg = DmaBufSync { flags: flags.bits() };
        // Restarted on EINTR and EAGAIN, as the kernel asks: a signal while the start waits for the buffer's fences
        // must not fail the access, nor leave an end undone (the bracket unbalanced, stale cache lines on a
        // non-coherent machine).
        // SAFETY: DMA_BUF_IOCTL_SYNC reads one `struct dma_buf_sync` (`DmaBufSync`); `self.fd` is a dma-buf.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DMA_BUF_IOCTL_SYNC, &mut arg) }
            .map(drop)
            .map_err(OsError::tag("DMA_BUF_IOCTL_SYNC"))
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
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::access::Access;
    ///
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
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
