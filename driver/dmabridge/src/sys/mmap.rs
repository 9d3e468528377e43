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
    ///
    /// Wraps `mmap(2)`; `munmap(2)` on drop.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::{Access, Mapping};
    ///
    /// let m = Memfd::create(c"shared", 4096)?;
    /// let a = Mapping::shared(m.as_fd(), 0, 4096, Access::ReadWrite)?;
    /// let b = Mapping::shared(m.as_fd(), 0, 4096, Access::Read)?;
    /// a.write_u32(0, 0xdead_beef);
    /// assert_eq!(b.read_u32(0), 0xdead_beef);
    /// // Empty mappings are refused.
    /// assert_eq!(Mapping::shared(m.as_fd(), 0, 0, Access::Read).unwrap_err().errno, rustix::io::Errno::INVAL);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn shared(fd: BorrowedFd<'_>, offset: u64, len: usize, access: Access) -> OsResult<Mapping> {
        Self::with_flags(fd, offset, len, access, MapFlags::SHARED)
    }

    /// Like [`Mapping::shared`], with `MAP_POPULATE`: the pages are faulted in
    /// now rather than on first touch.
    ///
    /// Wraps `mmap(2)` with `MAP_SHARED | MAP_POPULATE`; `munmap(2)` on drop.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::{Access, Mapping};
    ///
    /// let m = Memfd::create(c"populated", 8192)?;
    /// let map = Mapping::shared_populated(m.as_fd(), 0, 8192, Access::Read)?;
    /// assert_eq!(map.len(), 8192);
    /// assert_eq!(map.read_u64(4096), 0);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// No system call: the address `mmap(2)` returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"ptr", 4096)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(0, &[7]);
    /// let p = map.as_ptr();
    /// assert_eq!(p as usize % dmabridge::sys::page_size(), 0);
    /// // SAFETY: `p` is the first byte of a live, readable 4096-byte mapping that
    /// // outlives this read, and no Rust reference points into the mapping.
    /// let first = unsafe { p.read() };
    /// assert_eq!(first, 7);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let page = dmabridge::sys::page_size();
    /// let m = Memfd::create(c"len", 3 * page as u64)?;
    /// assert_eq!(m.map(page as u64, 2 * page, Access::Read)?.len(), 2 * page);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: empty mappings cannot be made.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"nonempty", 4096)?;
    /// assert!(!m.map(0, 4096, Access::Read)?.is_empty());
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The access the mapping was made with.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"access", 4096)?;
    /// assert_eq!(m.map(0, 4096, Access::Read)?.access(), Access::Read);
    /// assert_eq!(m.map(0, 4096, Access::Write)?.access(), Access::Write);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// No system call: a copy out of the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"read", 4096)?;
    /// m.map(0, 4096, Access::Write)?.write_bytes(100, b"abc");
    /// let mut out = [0u8; 3];
    /// m.map(0, 4096, Access::Read)?.read_bytes(100, &mut out);
    /// assert_eq!(&out, b"abc");
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// No system call: a copy into the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"write", 4096)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(4090, b"end");
    /// let mut out = [0u8; 3];
    /// map.read_bytes(4090, &mut out);
    /// assert_eq!(&out, b"end");
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// No system call: a volatile load from the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"r32", 4096)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(8, &0x1234_5678u32.to_ne_bytes());
    /// assert_eq!(map.read_u32(8), 0x1234_5678);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// No system call: a volatile store to the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"w32", 4096)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_u32(12, 0xcafe_f00d);
    /// let mut out = [0u8; 4];
    /// map.read_bytes(12, &mut out);
    /// assert_eq!(u32::from_ne_bytes(out), 0xcafe_f00d);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// No system call: a volatile load from the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"r64", 4096)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(16, &u64::MAX.to_ne_bytes());
    /// assert_eq!(map.read_u64(16), u64::MAX);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// No system call: a volatile store to the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"w64", 4096)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_u64(24, 1 << 40);
    /// assert_eq!(map.read_u64(24), 1 << 40);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
