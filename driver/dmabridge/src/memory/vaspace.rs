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

use crate::sys::memfd::{Memfd, Seals};
use crate::sys::{OsError, OsResult};

/// The granule of the range: a pool chunk or the start of a large
/// allocation. 2 MiB, like NEO's pools and x86's large pages.
pub const GRANULE: usize = 2 << 20;

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
    /// granule-aligned address.
    pub fn reserve(granules: usize) -> OsResult<VaSpace> {
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
    pub fn base(&self) -> usize {
        self.base.as_ptr() as usize
    }

    /// Size of the range in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of granules.
    pub fn granules(&self) -> usize {
        self.len / GRANULE
    }

    /// The granule index of `addr`, if it lies in the range.
    #[inline]
    pub fn granule_of(&self, addr: usize) -> Option<usize> {
        let off = addr.wrapping_sub(self.base());
        (off < self.len).then_some(off / GRANULE)
    }

    /// Address of granule `g`.
    #[inline]
    pub fn granule_addr(&self, g: usize) -> usize {
        self.base() + g * GRANULE
    }

    /// The memfd behind the range: byte `x` of the range is byte
    /// `x - base()` of the memfd.
    pub fn memfd(&self) -> BorrowedFd<'_> {
        self.memfd.as_fd()
    }

    /// Bytes of memory the memfd holds (pages touched and not handed back).
    pub fn resident_bytes(&self) -> OsResult<u64> {
        Ok(rustix::fs::fstat(&self.memfd).map_err(OsError::tag("fstat heap memfd"))?.st_blocks as u64 * 512)
    }

    /// Hands the pages of `[offset, offset + len)` back to the system; they
    /// read as zeros afterwards. The caller must own the range.
    pub(crate) fn punch(&self, offset: usize, len: usize) -> OsResult<()> {
        assert!(offset.checked_add(len).is_some_and(|e| e <= self.len), "range outside the heap");
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
        // SAFETY: `raw`/`raw_len` covers exactly the reservation and the
        // memfd mapping inside it; the heap that owns this range is being
        // dropped, so no pointer into it is used again.
        let _ = unsafe { rustix::mm::munmap(self.raw.as_ptr().cast(), self.raw_len) };
    }
}
