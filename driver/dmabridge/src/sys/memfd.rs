//! memfd: anonymous shmem files, the backing of every host and shared
//! allocation (so that any of them can become a dma-buf through udmabuf).
//!
//! rustix's `memfd_create` and `fcntl_add_seals` are used directly: the
//! `memfd` crate adds a builder over the same two calls and nothing we need.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{MemfdFlags, SealFlags};

pub use rustix::fs::SealFlags as Seals;

use super::mmap::{check_range, Access, MapError, Mapping};
use super::{OsError, OsResult};

/// `HUGETLBFS_MAGIC` from `<uapi/linux/magic.h>`: the f_type of hugetlbfs.
const HUGETLBFS_MAGIC: u32 = 0x9584_58f6;

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
    ///
    /// Wraps `memfd_create(2)` (`MFD_CLOEXEC | MFD_ALLOW_SEALING`) and `ftruncate(2)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    ///
    /// let m = Memfd::create(c"example", 8192)?;
    /// assert_eq!(m.size()?, 8192);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn create(name: &CStr, size: u64) -> OsResult<Memfd> {
        Self::create_with(name, size, MemfdFlags::empty())
    }

    /// Like [`Memfd::create`], backed by huge pages of the default size
    /// (`MFD_HUGETLB`); `size` must be a multiple of the huge page size.
    ///
    /// Wraps `memfd_create(2)` with `MFD_HUGETLB` and `ftruncate(2)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    ///
    /// // Huge pages may be absent or of another default size on this machine.
    /// match Memfd::create_hugetlb(c"huge", 2 << 20) {
    ///     Ok(m) => assert_eq!(m.size()?, 2 << 20),
    ///     Err(e) => println!("no 2 MiB huge pages here: {e}"),
    /// }
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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
    ///
    /// Checks the fd with `fcntl(F_GET_SEALS)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::OwnedFd;
    /// use dmabridge::sys::memfd::Memfd;
    ///
    /// let m = Memfd::create(c"passed", 4096)?;
    /// let back = Memfd::from_fd(m.into_fd())?;
    /// assert_eq!(back.size()?, 4096);
    ///
    /// // A file that is not a memfd is refused.
    /// let file: OwnedFd = std::fs::File::open("/proc/self/status").unwrap().into();
    /// assert_eq!(Memfd::from_fd(file).unwrap_err().errno, rustix::io::Errno::INVAL);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn from_fd(fd: OwnedFd) -> OsResult<Memfd> {
        rustix::fs::fcntl_get_seals(&fd).map_err(OsError::tag("F_GET_SEALS"))?;
        Ok(Memfd { fd })
    }

    /// Current size in bytes.
    ///
    /// Wraps `fstat(2)` (`st_size`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    ///
    /// let m = Memfd::create(c"sized", 12288)?;
    /// assert_eq!(m.size()?, 12288);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn size(&self) -> OsResult<u64> {
        Ok(rustix::fs::fstat(&self.fd).map_err(OsError::tag("fstat memfd"))?.st_size as u64)
    }

    /// Grows or shrinks the file (refused with `EPERM` once sealed against it).
    ///
    /// Wraps `ftruncate(2)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    ///
    /// let m = Memfd::create(c"grow", 4096)?;
    /// m.set_size(16384)?;
    /// assert_eq!(m.size()?, 16384);
    /// m.add_seals(Seals::SHRINK)?;
    /// assert_eq!(m.set_size(4096).unwrap_err().errno, rustix::io::Errno::PERM);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn set_size(&self, size: u64) -> OsResult<()> {
        rustix::fs::ftruncate(&self.fd, size).map_err(OsError::tag("ftruncate memfd"))
    }

    /// Adds seals (`F_ADD_SEALS`). Seals can only be added, never removed.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    ///
    /// let m = Memfd::create(c"sealed", 4096)?;
    /// m.add_seals(Seals::SHRINK | Seals::GROW)?;
    /// assert!(m.seals()?.contains(Seals::SHRINK | Seals::GROW));
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn add_seals(&self, seals: SealFlags) -> OsResult<()> {
        rustix::fs::fcntl_add_seals(&self.fd, seals).map_err(OsError::tag("F_ADD_SEALS"))
    }

    /// The seals in force (`F_GET_SEALS`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    ///
    /// let m = Memfd::create(c"fresh", 4096)?;
    /// assert!(m.seals()?.is_empty());
    /// m.add_seals(Seals::WRITE)?;
    /// assert_eq!(m.seals()?, Seals::WRITE);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn seals(&self) -> OsResult<SealFlags> {
        rustix::fs::fcntl_get_seals(&self.fd).map_err(OsError::tag("F_GET_SEALS"))
    }

    /// Maps `len` bytes from `offset`, shared.
    ///
    /// Safe because the mapping cannot lose its pages: the memfd must carry
    /// `F_SEAL_SHRINK` ([`MapError::MissingShrinkSeal`] otherwise; the seal is
    /// not added behind the caller's back, as it is irreversible and binds
    /// every holder of the file), so its size can only grow; the range must
    /// lie inside the file now ([`MapError::OutOfBounds`], checked without
    /// overflow); and a hugetlbfs memfd must be write-sealed, as a hole
    /// punched in it may find no huge page to refill it
    /// ([`MapError::HugeTlb`]). Use the `unsafe`
    /// [`Mapping::shared`] to map anything else.
    ///
    /// Wraps `fcntl(F_GET_SEALS)`, `fstatfs(2)`, `fstat(2)`, then `mmap(2)`
    /// with `MAP_SHARED`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::{Access, MapError};
    ///
    /// let page_size = dmabridge::sys::page_size();
    /// let m = Memfd::create(c"mapped", 2 * page_size as u64)?;
    /// // A memfd that may shrink has no safe mapping.
    /// assert_eq!(m.map(0, page_size, Access::Read).unwrap_err(), MapError::MissingShrinkSeal);
    /// m.add_seals(Seals::SHRINK)?;
    /// let whole = m.map(0, 2 * page_size, Access::ReadWrite)?;
    /// whole.write_bytes(page_size, b"hi");
    /// // A second mapping, of the second page only, sees the same bytes.
    /// let page = m.map(page_size as u64, page_size, Access::Read)?;
    /// let mut out = [0u8; 2];
    /// page.read_bytes(0, &mut out);
    /// assert_eq!(&out, b"hi");
    /// // The range must lie inside the file.
    /// let past = m.map(page_size as u64, 2 * page_size, Access::Read).unwrap_err();
    /// assert!(matches!(past, MapError::OutOfBounds { .. }));
    /// // The file can still grow; it can no longer shrink under the mappings.
    /// m.set_size(4 * page_size as u64)?;
    /// assert!(m.set_size(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map(&self, offset: u64, len: usize, access: Access) -> Result<Mapping, MapError> {
        // The seal first: once seen it stays, so the size read after it can
        // only have grown by the time the pages are touched.
        let seals = self.seals()?;
        if !seals.contains(Seals::SHRINK) {
            return Err(MapError::MissingShrinkSeal);
        }
        if self.on_hugetlbfs()? && !seals.intersects(Seals::WRITE | Seals::FUTURE_WRITE) {
            return Err(MapError::HugeTlb);
        }
        check_range(offset, len, self.size()?)?;
        // The file cannot shrink (F_SEAL_SHRINK, which cannot be removed, was
        // seen before the size was read); shmem faults inside the file size
        // never fail with SIGBUS, and on hugetlbfs the write seals forbid the
        // hole punching that could leave a page without a huge page.
        // SAFETY: `offset..offset + len` lies inside the file (checked above), so
        // every page stays backed for the mapping's life, whoever holds the fd.
        Ok(unsafe { Mapping::shared(self.fd.as_fd(), offset, len, access) }?)
    }

    /// True if the memfd lives on hugetlbfs (`MFD_HUGETLB`).
    fn on_hugetlbfs(&self) -> OsResult<bool> {
        let st = rustix::fs::fstatfs(&self.fd).map_err(OsError::tag("fstatfs memfd"))?;
        Ok(st.f_type as u32 == HUGETLBFS_MAGIC)
    }

    /// Gives up the wrapper, keeping the fd.
    ///
    /// No system call: the fd stays open.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::Memfd;
    ///
    /// let m = Memfd::create(c"owned", 4096)?;
    /// let fd = m.into_fd();
    /// assert_eq!(rustix::fs::fstat(&fd).unwrap().st_size, 4096);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
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

    #[test]
    fn unsealed_memfds_have_no_safe_mapping() {
        let m = Memfd::create(c"unsealed", 4096).unwrap();
        assert_eq!(m.map(0, 4096, Access::Read).unwrap_err(), MapError::MissingShrinkSeal);
        // Other seals do not stand in for F_SEAL_SHRINK.
        m.add_seals(Seals::GROW).unwrap();
        assert_eq!(m.map(0, 4096, Access::Read).unwrap_err(), MapError::MissingShrinkSeal);
    }

    #[test]
    fn ranges_past_the_end_are_refused_without_overflow() {
        let m = Memfd::create(c"bounds", 8192).unwrap();
        m.add_seals(Seals::SHRINK).unwrap();
        let cases = [
            (0, 8193),
            (4096, 8192),
            (8192, 4096),
            (u64::MAX - 4095, 8192),
            (4096, usize::MAX),
            (u64::MAX, usize::MAX),
        ];
        for (offset, len) in cases {
            assert_eq!(
                m.map(offset, len, Access::Read).unwrap_err(),
                MapError::OutOfBounds { offset, len, size: 8192 },
                "{offset:#x}+{len:#x}"
            );
        }
        // Inside the file but not page aligned: the kernel's EINVAL.
        match m.map(1, 4096, Access::Read) {
            Err(MapError::Os(e)) => assert_eq!(e.errno, rustix::io::Errno::INVAL),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_sealed_mapping_survives_a_shrink_attempt() {
        let m = Memfd::create(c"shrink", 4096).unwrap();
        m.add_seals(Seals::SHRINK).unwrap();
        let map = m.map(0, 4096, Access::ReadWrite).unwrap();
        map.write_bytes(4000, b"still here");
        assert_eq!(m.set_size(0).unwrap_err().errno, rustix::io::Errno::PERM);
        assert_eq!(rustix::fs::ftruncate(m.as_fd(), 0).unwrap_err(), rustix::io::Errno::PERM);
        let mut out = [0u8; 10];
        map.read_bytes(4000, &mut out);
        assert_eq!(&out, b"still here");
    }

    #[test]
    fn hugetlb_memfds_need_a_write_seal() {
        // Whether or not this machine has huge pages in its pool: the check
        // comes before any page is needed.
        let Ok(m) = Memfd::create_hugetlb(c"huge", 2 << 20) else { return };
        m.add_seals(Seals::SHRINK).unwrap();
        assert_eq!(m.map(0, 2 << 20, Access::ReadWrite).unwrap_err(), MapError::HugeTlb);
        // Write-sealed, it cannot have holes punched in it: a read-only map is safe.
        m.add_seals(Seals::WRITE).unwrap();
        match m.map(0, 2 << 20, Access::Read) {
            Ok(map) => assert_eq!(map.len(), 2 << 20),
            // No free huge page to reserve: the kernel refuses the mmap itself.
            Err(MapError::Os(e)) => assert_eq!(e.errno, rustix::io::Errno::NOMEM),
            Err(e) => panic!("{e}"),
        }
    }
}
