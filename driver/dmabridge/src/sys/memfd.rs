//! memfd: anonymous shmem files, the backing of every host and shared
//! allocation (so that any of them can become a dma-buf through udmabuf).
//!
//! rustix's `memfd_create` and `fcntl_add_seals` are used directly: the
//! `memfd` crate adds a builder over the same two calls and nothing we need.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{MemfdFlags, SealFlags};

pub use rustix::fs::SealFlags as Seals;

use super::mmap::{Access, Mapping};
use super::{OsError, OsResult};

/// An anonymous shmem file created with `MFD_CLOEXEC | MFD_ALLOW_SEALING`.
#[derive(Debug)]
pub struct Memfd {
    fd: OwnedFd,
}

impl Memfd {
    /// Creates a memfd of `size` bytes (zero-filled, pages allocated lazily).
    ///
    /// `name` shows up in `/proc/PID/fd` and `/proc/PID/maps` as
    /// `/memfd:NAME`, which helps when auditing who holds which buffer.
    pub fn create(name: &CStr, size: u64) -> OsResult<Memfd> {
        Self::create_with(name, size, MemfdFlags::empty())
    }

    /// Like [`Memfd::create`], backed by huge pages of the default size
    /// (`MFD_HUGETLB`); `size` must be a multiple of the huge page size.
    pub fn create_hugetlb(name: &CStr, size: u64) -> OsResult<Memfd> {
        Self::create_with(name, size, MemfdFlags::HUGETLB)
    }

    fn create_with(name: &CStr, size: u64, extra: MemfdFlags) -> OsResult<Memfd> {
        let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING | extra)
            .map_err(OsError::tag("memfd_create"))?;
        let memfd = Memfd { fd };
        memfd.set_size(size)?;
        Ok(memfd)
    }

    /// Takes ownership of an existing memfd (e.g. one received over a socket).
    /// Fails with `EINVAL` if `fd` is not a memfd that supports sealing.
    pub fn from_fd(fd: OwnedFd) -> OsResult<Memfd> {
        rustix::fs::fcntl_get_seals(&fd).map_err(OsError::tag("F_GET_SEALS"))?;
        Ok(Memfd { fd })
    }

    /// Current size in bytes.
    pub fn size(&self) -> OsResult<u64> {
        Ok(rustix::fs::fstat(&self.fd).map_err(OsError::tag("fstat memfd"))?.st_size as u64)
    }

    /// Grows or shrinks the file (refused with `EPERM` once sealed against it).
    pub fn set_size(&self, size: u64) -> OsResult<()> {
        rustix::fs::ftruncate(&self.fd, size).map_err(OsError::tag("ftruncate memfd"))
    }

    /// Adds seals (`F_ADD_SEALS`). Seals can only be added, never removed.
    pub fn add_seals(&self, seals: SealFlags) -> OsResult<()> {
        rustix::fs::fcntl_add_seals(&self.fd, seals).map_err(OsError::tag("F_ADD_SEALS"))
    }

    /// The seals in force (`F_GET_SEALS`).
    pub fn seals(&self) -> OsResult<SealFlags> {
        rustix::fs::fcntl_get_seals(&self.fd).map_err(OsError::tag("F_GET_SEALS"))
    }

    /// Maps `len` bytes from `offset`, shared.
    pub fn map(&self, offset: u64, len: usize, access: Access) -> OsResult<Mapping> {
        Mapping::shared(self.fd.as_fd(), offset, len, access)
    }

    /// Gives up the wrapper, keeping the fd.
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

impl AsFd for Memfd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_and_seals() {
        let m = Memfd::create(c"t", 8192).unwrap();
        assert_eq!(m.size().unwrap(), 8192);
        m.add_seals(Seals::SHRINK).unwrap();
        assert!(m.seals().unwrap().contains(Seals::SHRINK));
        assert_eq!(m.set_size(4096).unwrap_err().errno, rustix::io::Errno::PERM);
        m.set_size(16384).unwrap();
        let map = m.map(0, 16384, Access::ReadWrite).unwrap();
        map.write_bytes(12288, b"abc");
        let mut out = [0u8; 3];
        m.map(12288, 4096, Access::Read).unwrap().read_bytes(0, &mut out);
        assert_eq!(&out, b"abc");
    }
}
