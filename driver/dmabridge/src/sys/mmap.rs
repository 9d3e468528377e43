//! Shared mappings of file descriptors (memfd pages, dma-bufs, VFIO regions).
//!
//! A [`Mapping`] owns its address range and unmaps it on drop. It does not own
//! the fd it came from: the kernel keeps the file alive for as long as the
//! mapping exists.

use std::os::fd::BorrowedFd;
use std::ptr::NonNull;

use rustix::mm::{MapFlags, ProtFlags};

use super::{OsError, OsResult};

/// How a mapping may be accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Write only (mapped read-write: x86 has no write-only pages).
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

    /// True if writes are allowed.
    pub fn writable(self) -> bool {
        !matches!(self, Access::Read)
    }
}

/// A `MAP_SHARED` mapping of a file range; unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    access: Access,
}

// SAFETY: the mapping is plain shared memory; which threads touch it is the
// owner's business, exactly as for a `Vec<u8>` behind raw pointers. Access
// through `&self` only hands out raw pointers or performs volatile/copying
// accesses that the caller synchronises.
unsafe impl Send for Mapping {}
// SAFETY: see `Send`; `&Mapping` offers no interior mutability of Rust-visible
// state, only of the mapped bytes, which are shared with other processes and
// devices anyway.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from `offset` with `MAP_SHARED`.
    pub fn shared(fd: BorrowedFd<'_>, offset: u64, len: usize, access: Access) -> OsResult<Mapping> {
        Self::with_flags(fd, offset, len, access, MapFlags::SHARED)
    }

    /// Like [`Mapping::shared`], with `MAP_POPULATE`: the pages are faulted in
    /// now rather than on first touch.
    pub fn shared_populated(fd: BorrowedFd<'_>, offset: u64, len: usize, access: Access) -> OsResult<Mapping> {
        Self::with_flags(fd, offset, len, access, MapFlags::SHARED | MapFlags::POPULATE)
    }

    fn with_flags(fd: BorrowedFd<'_>, offset: u64, len: usize, access: Access, flags: MapFlags) -> OsResult<Mapping> {
        if len == 0 {
            return Err(OsError::new("mmap", rustix::io::Errno::INVAL));
        }
        // SAFETY: a null hint lets the kernel pick a fresh range, so no
        // existing Rust object is overlapped; the result is owned by the
        // returned `Mapping` and unmapped exactly once, in `Drop`.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, access.prot(), flags, fd, offset) }
            .map_err(OsError::tag("mmap"))?;
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(OsError::new("mmap", rustix::io::Errno::FAULT))?;
        Ok(Mapping { ptr, len, access })
    }

    /// First byte of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: empty mappings cannot be made.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The access the mapping was made with.
    pub fn access(&self) -> Access {
        self.access
    }

    fn check(&self, offset: usize, len: usize) {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "access {offset}+{len} beyond mapping of {} bytes",
            self.len
        );
    }

    /// Copies bytes out of the mapping.
    ///
    /// # Panics
    /// If the range is outside the mapping.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        self.check(offset, out.len());
        // SAFETY: the range is inside the mapping (checked above), which is
        // readable for every `Access`; `out` is a distinct Rust buffer, so the
        // regions cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(self.as_ptr().add(offset), out.as_mut_ptr(), out.len()) }
    }

    /// Copies bytes into the mapping.
    ///
    /// # Panics
    /// If the range is outside the mapping or the mapping is read-only.
    pub fn write_bytes(&self, offset: usize, data: &[u8]) {
        assert!(self.access.writable(), "write to a read-only mapping");
        self.check(offset, data.len());
        // SAFETY: the range is inside a writable mapping (checked above) and
        // `data` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.as_ptr().add(offset), data.len()) }
    }

    /// Reads a naturally aligned 32-bit device register (volatile).
    ///
    /// # Panics
    /// If the offset is out of range or not 4-byte aligned.
    pub fn read_u32(&self, offset: usize) -> u32 {
        self.check(offset, 4);
        assert_eq!(offset % 4, 0, "unaligned register offset {offset:#x}");
        // SAFETY: in range and aligned (checked above); volatile because the
        // bytes may be device registers whose reads have effects.
        unsafe { self.as_ptr().add(offset).cast::<u32>().read_volatile() }
    }

    /// Writes a naturally aligned 32-bit device register (volatile).
    ///
    /// # Panics
    /// If the offset is out of range, not aligned, or the mapping is read-only.
    pub fn write_u32(&self, offset: usize, value: u32) {
        assert!(self.access.writable(), "write to a read-only mapping");
        self.check(offset, 4);
        assert_eq!(offset % 4, 0, "unaligned register offset {offset:#x}");
        // SAFETY: in range, aligned and writable (checked above); volatile so
        // that the store reaches the device exactly once.
        unsafe { self.as_ptr().add(offset).cast::<u32>().write_volatile(value) }
    }

    /// Reads a naturally aligned 64-bit device register (volatile).
    ///
    /// # Panics
    /// If the offset is out of range or not 8-byte aligned.
    pub fn read_u64(&self, offset: usize) -> u64 {
        self.check(offset, 8);
        assert_eq!(offset % 8, 0, "unaligned register offset {offset:#x}");
        // SAFETY: in range and aligned (checked above); volatile as above.
        unsafe { self.as_ptr().add(offset).cast::<u64>().read_volatile() }
    }

    /// Writes a naturally aligned 64-bit device register (volatile).
    ///
    /// # Panics
    /// If the offset is out of range, not aligned, or the mapping is read-only.
    pub fn write_u64(&self, offset: usize, value: u64) {
        assert!(self.access.writable(), "write to a read-only mapping");
        self.check(offset, 8);
        assert_eq!(offset % 8, 0, "unaligned register offset {offset:#x}");
        // SAFETY: in range, aligned and writable (checked above).
        unsafe { self.as_ptr().add(offset).cast::<u64>().write_volatile(value) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // The API only hands out raw pointers, whose users must not outlive the
        // mapping, so no reference into it survives the drop.
        // SAFETY: `ptr`/`len` are exactly the range this object mapped, and
        // nobody else unmaps it.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
