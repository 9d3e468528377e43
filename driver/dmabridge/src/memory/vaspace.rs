//! The address range every heap allocation lives in: one sparse memfd mapped
//! shared at a 2 MiB-aligned address.
//!
//! One memfd for the whole range (pages are only allocated when touched, and
//! handed back with `FALLOCATE_PUNCH_HOLE`) means that an allocation is pure
//! bookkeeping (no memfd, mmap or fd per allocation, so no fd limit), that any
//! allocation can be exported as a dma-buf (udmabuf over the memfd pages it
//! spans: the memfd carries `F_SEAL_SHRINK`), and that "which allocation holds
//! this pointer" is an index computation instead of a search.

use std::os::fd::{AsFd, BorrowedFd};
use std::ptr::NonNull;

use rustix::fs::FallocateFlags;
use rustix::mm::{MapFlags, ProtFlags};

use crate::sys::addr::HostAddr;
use crate::sys::memfd::{Memfd, Seals};
use crate::sys::{OsError, OsResult};

/// The granule of the range: a pool chunk or the start of a large
/// allocation. 2 MiB, like NEO's pools and x86's large pages.
pub const GRANULE: usize = 2 << 20;

/// The most granules a range may have: 1 TiB of address space (the heap's
/// allocation table takes 12 bytes per granule, allocated up front).
pub const MAX_GRANULES: usize = 1 << 19;

/// Why a range could not be reserved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReserveError {
    /// The granule count is 0 or above [`MAX_GRANULES`].
    #[error("a heap reservation takes 1..={max} granules of 2 MiB, not {granules}")]
    Granules {
        /// Granules asked for.
        granules: usize,
        /// [`MAX_GRANULES`].
        max: usize,
    },
    /// The kernel refused the memfd or the mapping.
    #[error(transparent)]
    Os(#[from] OsError),
}

/// `granules × GRANULE` bytes of a sparse memfd, mapped shared; unmapped on drop.
#[derive(Debug)]
pub struct VaSpace {
    base: NonNull<u8>,
    len: usize,
    /// What was really mapped (the range plus alignment slack).
    raw: NonNull<u8>,
    raw_len: usize,
    memfd: Memfd,
}

// SAFETY: the mapping is owned by this object; which thread touches which part
// of it is the heap's business (its locks), and the struct itself is
// immutable after creation.
unsafe impl Send for VaSpace {}
// SAFETY: as above; `&VaSpace` only exposes immutable fields and operations
// whose callers own the ranges they touch.
unsafe impl Sync for VaSpace {}

impl VaSpace {
    /// Creates a sparse memfd of `granules` granules and maps it shared at a
    /// granule-aligned address. A count of 0 or above [`MAX_GRANULES`] is
    /// refused before anything is created.
    ///
    /// No OpenCL function of its own: the address range of a context's
    /// heap (`clCreateContext`), in which every USM and SVM allocation
    /// lives.
    ///
    /// ```
    /// use dmabridge::memory::vaspace::{ReserveError, VaSpace, GRANULE, MAX_GRANULES};
    /// let va = VaSpace::reserve(2)?;
    /// assert!(va.base().is_aligned(GRANULE));
    /// assert_eq!(va.len(), 2 * GRANULE);
    /// let e = VaSpace::reserve(usize::MAX).unwrap_err();
    /// assert_eq!(e, ReserveError::Granules { granules: usize::MAX, max: MAX_GRANULES });
    /// # Ok::<(), ReserveError>(())
    /// ```
    pub fn reserve(granules: usize) -> Result<VaSpace, ReserveError> {
        if granules == 0 || granules > MAX_GRANULES {
            return Err(ReserveError::Granules { granules, max: MAX_GRANULES });
        }
        let len = granules * GRANULE;
        let memfd = Memfd::create(c"dmabridge-heap", len as u64)?;
        memfd.add_seals(Seals::SHRINK)?;
        let raw_len = len + GRANULE;
        // SAFETY: a fresh anonymous PROT_NONE mapping at an address the
        // kernel picks overlaps nothing; it is owned by the returned value
        // and unmapped exactly once in `Drop`.
        let raw = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                raw_len,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .map_err(OsError::tag("mmap reserve"))?;
        let raw = NonNull::new(raw.cast::<u8>()).ok_or(OsError::new("mmap reserve", rustix::io::Errno::FAULT))?;
        let offset = (GRANULE - (raw.as_ptr() as usize % GRANULE)) % GRANULE;
        let va = VaSpace {
            // SAFETY: offset < GRANULE and the mapping is `len + GRANULE` long.
            base: unsafe { NonNull::new_unchecked(raw.as_ptr().add(offset)) },
            len,
            raw,
            raw_len,
            memfd,
        };
        // SAFETY: MAP_FIXED replaces part of the PROT_NONE reservation made
        // just above, which nothing refers to yet; the result stays inside
        // `raw..raw + raw_len` and is unmapped with it in `Drop`.
        unsafe {
            rustix::mm::mmap(
                va.base.as_ptr().cast(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::FIXED,
                va.memfd.as_fd(),
                0,
            )
        }
        .map_err(OsError::tag("mmap heap memfd"))?;
        Ok(va)
    }

    /// First byte of the range.
    ///
    /// No OpenCL function of its own: where the heap's allocations start.
    ///
    /// ```
    /// use dmabridge::memory::vaspace::{VaSpace, GRANULE};
    /// let va = VaSpace::reserve(1)?;
    /// assert!(va.base().is_aligned(GRANULE), "granule-aligned");
    /// // SAFETY: the range is mapped read-write and nothing else refers to it.
    /// unsafe { va.base().as_ptr().write(7) };
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn base(&self) -> HostAddr {
        HostAddr::of(self.base.as_ptr())
    }

    /// Size of the range in bytes.
    ///
    /// No OpenCL function of its own: the most a context's heap can hold.
    ///
    /// ```
    /// use dmabridge::memory::vaspace::{VaSpace, GRANULE};
    /// assert_eq!(VaSpace::reserve(3)?.len(), 3 * GRANULE);
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true.
    ///
    /// No OpenCL function of its own: the companion of [`VaSpace::len`].
    ///
    /// ```
    /// use dmabridge::memory::vaspace::VaSpace;
    /// assert!(!VaSpace::reserve(1)?.is_empty());
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of granules.
    ///
    /// No OpenCL function of its own: the size of the heap's allocation
    /// table (one record per granule).
    ///
    /// ```
    /// use dmabridge::memory::vaspace::VaSpace;
    /// assert_eq!(VaSpace::reserve(4)?.granules(), 4);
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn granules(&self) -> usize {
        self.len / GRANULE
    }

    /// The granule index of `addr`, if it lies in the range.
    ///
    /// No OpenCL function of its own: the first step of every interior
    /// pointer lookup (`clGetMemAllocInfoINTEL`, seed 000).
    ///
    /// ```
    /// use dmabridge::memory::vaspace::{VaSpace, GRANULE};
    /// use dmabridge::sys::addr::HostAddr;
    /// let va = VaSpace::reserve(2)?;
    /// assert_eq!(va.granule_of(va.base()), Some(0));
    /// assert_eq!(va.granule_of(va.base() + GRANULE + 5), Some(1));
    /// assert_eq!(va.granule_of(va.base() + 2 * GRANULE), None);
    /// assert_eq!(va.granule_of(HostAddr(va.base().0 - 1)), None);
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    #[inline]
    pub fn granule_of(&self, addr: HostAddr) -> Option<usize> {
        let off = addr.0.wrapping_sub(self.base().0);
        (off < self.len).then_some(off / GRANULE)
    }

    /// Address of granule `g`.
    ///
    /// No OpenCL function of its own: where a pool chunk or a large
    /// allocation of the heap starts.
    ///
    /// ```
    /// use dmabridge::memory::vaspace::{VaSpace, GRANULE};
    /// let va = VaSpace::reserve(2)?;
    /// assert_eq!(va.granule_addr(1), va.base() + GRANULE);
    /// assert_eq!(va.granule_of(va.granule_addr(1)), Some(1));
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    #[inline]
    pub fn granule_addr(&self, g: usize) -> HostAddr {
        self.base() + g * GRANULE
    }

    /// The memfd behind the range: byte `x` of the range is byte
    /// `x - base()` of the memfd.
    ///
    /// No OpenCL function of its own: what udmabuf exports as a dma-buf
    /// (the heap's `export_dmabuf`).
    ///
    /// ```
    /// use dmabridge::memory::vaspace::VaSpace;
    /// let va = VaSpace::reserve(1)?;
    /// // SAFETY: the range is mapped read-write and nothing else refers to it.
    /// unsafe { va.base().as_ptr().add(10).write(42) };
    /// let mut byte = [0u8; 1];
    /// rustix::io::pread(va.memfd(), &mut byte, 10).unwrap();
    /// assert_eq!(byte, [42], "the same pages");
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn memfd(&self) -> BorrowedFd<'_> {
        self.memfd.as_fd()
    }

    /// Bytes of memory the memfd holds (pages touched and not handed back).
    ///
    /// No OpenCL function of its own: the heap's
    /// [`HeapStats::resident_bytes`](crate::memory::heap::HeapStats::resident_bytes).
    ///
    /// ```
    /// use dmabridge::memory::vaspace::VaSpace;
    /// let va = VaSpace::reserve(1)?;
    /// assert_eq!(va.resident_bytes()?, 0, "nothing touched yet");
    /// // SAFETY: the range is mapped read-write and nothing else refers to it.
    /// unsafe { va.base().as_ptr().write_bytes(1, 1 << 20) };
    /// assert!(va.resident_bytes()? >= 1 << 20);
    /// # Ok::<(), dmabridge::memory::vaspace::ReserveError>(())
    /// ```
    pub fn resident_bytes(&self) -> OsResult<u64> {
        Ok(rustix::fs::fstat(&self.memfd).map_err(OsError::tag("fstat heap memfd"))?.st_blocks as u64 * 512)
    }

    /// Hands the pages of `[offset, offset + len)` back to the system; they
    /// read as zeros afterwards. The caller must own the range.
    pub(crate) fn punch(&self, offset: usize, len: usize) -> OsResult<()> {
        assert!(offset.checked_add(len).is_some_and(|e| e <= self.len), "range outside the heap");
        // Exports of these pages are no longer the memfd's pages after this.
        super::exports::forget(self.memfd.as_fd(), offset as u64, len as u64);
        rustix::fs::fallocate(
            &self.memfd,
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            offset as u64,
            len as u64,
        )
        .map_err(OsError::tag("fallocate punch hole"))
    }
}

impl Drop for VaSpace {
    fn drop(&mut self) {
        super::exports::forget(self.memfd.as_fd(), 0, u64::MAX);
        // SAFETY: `raw`/`raw_len` covers exactly the reservation and the
        // memfd mapping inside it; the heap that owns this range is being
        // dropped, so no pointer into it is used again.
        let _ = unsafe { rustix::mm::munmap(self.raw.as_ptr().cast(), self.raw_len) };
    }
}
