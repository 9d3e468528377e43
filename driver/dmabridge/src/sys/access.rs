//! Which ways bytes may be accessed: one enum for a mapping's protection, a
//! device's DMA mapping (`VFIO_DMA_MAP_FLAG_READ`/`WRITE`) and the direction
//! of a dma-buf CPU-access bracket (`DMA_BUF_SYNC_READ`/`WRITE`), which were
//! the same idea three times (an `Access`, a `SyncDir` and `(read, write)`
//! bools).
//!
//! No system call anywhere here.

use rustix::mm::ProtFlags;

/// Read, write, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Write only (a mapping is made read-write: x86 has no write-only pages).
    Write,
    /// Read and write.
    ReadWrite,
}

impl Access {
    pub(crate) fn prot(self) -> ProtFlags {
        match self {
            Access::Read => ProtFlags::READ,
            Access::Write | Access::ReadWrite => ProtFlags::READ | ProtFlags::WRITE,
        }
    }

    /// True if the access reads: the direction of a device's DMA mapping or
    /// a dma-buf sync (a mapping is always readable: see [`Access::Write`]).
    ///
    /// ```
    /// use dmabridge::sys::access::Access;
    ///
    /// assert!(Access::Read.reads());
    /// assert!(!Access::Write.reads());
    /// assert!(Access::ReadWrite.reads());
    /// ```
    pub fn reads(self) -> bool {
        !matches!(self, Access::Write)
    }

    /// True if writes are allowed.
    ///
    /// No system call: whether the mapping gets `PROT_WRITE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::mmap::Access;
    ///
    /// assert!(!Access::Read.writable());
    /// assert!(Access::Write.writable());
    /// assert!(Access::ReadWrite.writable());
    /// ```
    pub fn writable(self) -> bool {
        !matches!(self, Access::Read)
    }
}
