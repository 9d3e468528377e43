//! IOVA allocation for one device's DMA window.
//!
//! A device can only drive the address bits of its DMA mask (QEMU's edu
//! device drops everything above bit 27 without telling anyone), and the
//! IOMMU has holes (the MSI window on x86). The allocator hands out
//! page-aligned ranges inside `[start, end]` minus the holes, refuses ranges
//! beyond the mask and overlapping ranges, and never hands out IOVA 0, so that
//! a bus address of 0 always means "none".

use std::collections::{BTreeMap, VecDeque};
use std::ops::RangeInclusive;

use crate::sys::addr::Iova;

/// How many retired ranges ([`IovaAllocator::retire`]) stay out of
/// circulation at most; the oldest goes back when one more is retired.
pub const RETIRED_MAX: usize = 64;

/// Why an IOVA range could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IovaError {
    /// Part of the range lies above the device's DMA mask.
    #[error("IOVA range {iova:#x}+{size:#x} goes beyond the device's DMA mask {mask:#x}")]
    BeyondMask {
        /// First address asked for.
        iova: Iova,
        /// Length asked for.
        size: u64,
        /// The highest address the device can drive.
        mask: u64,
    },
    /// The range overlaps one already handed out, or a hole of the IOMMU.
    #[error("IOVA range {iova:#x}+{size:#x} overlaps a range in use or reserved")]
    Overlap {
        /// First address asked for.
        iova: Iova,
        /// Length asked for.
        size: u64,
    },
    /// Zero size, or an address or size that is not a page multiple, or an
    /// alignment that is not a power of two.
    #[error("IOVA request {iova:#x}+{size:#x} (alignment {align:#x}) must be non-empty, page-aligned, with a power-of-two alignment")]
    Unaligned {
        /// First address asked for (0 for an allocation).
        iova: Iova,
        /// Length asked for.
        size: u64,
        /// Alignment asked for.
        align: u64,
    },
    /// No free range of that size is left.
    #[error("no free IOVA range of {size:#x} bytes below {mask:#x}")]
    Exhausted {
        /// Length asked for.
        size: u64,
        /// The highest address the device can drive.
        mask: u64,
    },
    /// Free of an address that was not handed out.
    #[error("IOVA {0:#x} was not allocated")]
    NotAllocated(Iova),
    /// A page size that is not a power of two.
    #[error("IOVA page size {0:#x} is not a power of two")]
    BadPageSize(u64),
}

/// A first-fit allocator of IOVA ranges under one DMA mask.
#[derive(Debug, Clone)]
pub struct IovaAllocator {
    start: u64,
    mask: u64,
    page: u64,
    /// Ranges in use (allocated, reserved, or holes), first -> last address
    /// (inclusive, so that a range may end at the top of the address space).
    used: BTreeMap<u64, u64>,
    /// Which of `used` are holes (never freed), first -> last.
    holes: BTreeMap<u64, u64>,
    /// Ranges of `used` given back by [`IovaAllocator::retire`], oldest
    /// first: not handed out again until [`RETIRED_MAX`] later ones are
    /// retired or an allocation finds no other room.
    retired: VecDeque<u64>,
}

impl IovaAllocator {
    /// An allocator for a device that drives addresses up to `dma_mask`
    /// (e.g. `(1 << 28) - 1` for edu), with pages of `page` bytes. The first
    /// page is never handed out. A page size that is not a power of two is
    /// [`IovaError::BadPageSize`].
    ///
    /// No OpenCL function of its own: the bus addresses of a DMA domain,
    /// behind `clEnqueueMakeBuffersResidentAMD` (seed 002) and every copy
    /// a DMA engine makes.
    ///
    /// ```
    /// use dmabridge::memory::iova::{IovaAllocator, IovaError};
    /// use dmabridge::sys::addr::Iova;
    /// let mut a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// assert_eq!(a.alloc(4096, 0)?, Iova(4096), "page 0 is never handed out");
    /// assert_eq!(IovaAllocator::new(u64::MAX, 0).unwrap_err(), IovaError::BadPageSize(0));
    /// # Ok::<(), IovaError>(())
    /// ```
    pub fn new(dma_mask: u64, page: u64) -> Result<IovaAllocator, IovaError> {
        if !page.is_power_of_two() {
            return Err(IovaError::BadPageSize(page));
        }
        Ok(IovaAllocator {
            start: page,
            mask: dma_mask,
            page,
            used: BTreeMap::new(),
            holes: BTreeMap::new(),
            retired: VecDeque::new(),
        })
    }

    /// The highest address the device can drive.
    ///
    /// No OpenCL function of its own: bounds `CL_DEVICE_MAX_MEM_ALLOC_SIZE`
    /// of a DMA device (its bus address window).
    ///
    /// ```
    /// use dmabridge::memory::iova::IovaAllocator;
    /// let a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// assert_eq!(a.dma_mask(), 0x0fff_ffff);
    /// # Ok::<(), dmabridge::memory::iova::IovaError>(())
    /// ```
    pub fn dma_mask(&self) -> u64 {
        self.mask
    }

    /// Keeps only the parts of the window inside `ranges` (inclusive, as
    /// VFIO reports the IOMMU's usable ranges, which may end at the top of
    /// the address space):
    /// everything between them becomes a hole.
    ///
    /// No OpenCL function of its own: keeps bus addresses out of the
    /// IOMMU's reserved regions (e.g. the x86 MSI window).
    ///
    /// ```
    /// use dmabridge::memory::iova::{IovaAllocator, IovaError};
    /// use dmabridge::sys::addr::Iova;
    /// let mut a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// a.restrict_to(&[Iova(0)..=Iova(0x7fff), Iova(0x10_0000)..=Iova(0x10_ffff)]);
    /// assert_eq!(a.alloc(0x4000, 0)?, Iova(0x1000));
    /// assert_eq!(a.alloc(0x8000, 0)?, Iova(0x10_0000), "the gap between the ranges is a hole");
    /// assert!(matches!(a.reserve(Iova(0x20_0000), 0x1000), Err(IovaError::Overlap { .. })));
    /// assert_eq!(a.allocated_bytes(), 0xc000, "holes are not counted");
    /// # Ok::<(), IovaError>(())
    /// ```
    pub fn restrict_to(&mut self, ranges: &[RangeInclusive<Iova>]) {
        if ranges.is_empty() {
            return;
        }
        let mut sorted: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start().0, r.end().0)).collect();
        sorted.sort();
        // The first address not yet covered (2^64 once everything is).
        let mut cursor = 0u128;
        for (s, e) in sorted {
            if u128::from(s) > cursor {
                self.add_hole(cursor as u64, s - 1);
            }
            cursor = cursor.max(u128::from(e) + 1);
        }
        if cursor <= u128::from(self.mask) {
            self.add_hole(cursor as u64, self.mask);
        }
    }

    /// Makes `[first, last]`, widened to whole pages, a hole.
    fn add_hole(&mut self, first: u64, last: u64) {
        let (mut s, mut e) = (first & !(self.page - 1), last | (self.page - 1));
        // Merge with anything it overlaps so `used` stays disjoint.
        let overlapping: Vec<(u64, u64)> =
            self.used.range(..=e).filter(|(_, &ul)| ul >= s).map(|(&us, &ul)| (us, ul)).collect();
        for (us, ul) in overlapping {
            self.used.remove(&us);
            self.holes.remove(&us);
            s = s.min(us);
            e = e.max(ul);
        }
        self.used.insert(s, e);
        self.holes.insert(s, e);
    }

    fn check_shape(&self, iova: Iova, size: u64, align: u64) -> Result<(), IovaError> {
        if size == 0 || size % self.page != 0 || iova.0 % self.page != 0 || !align.is_power_of_two() {
            return Err(IovaError::Unaligned { iova, size, align });
        }
        Ok(())
    }

    /// True if `[iova, last]` overlaps a range in use.
    fn overlaps(&self, iova: u64, last: u64) -> bool {
        self.used.range(..=last).next_back().is_some_and(|(_, &ul)| ul >= iova)
    }

    /// Hands out `size` bytes aligned to `align` (at least a page).
    ///
    /// No OpenCL function of its own: the bus address of a range a copy
    /// maps for itself, or of a resident range whose own address the
    /// device cannot reach (`clEnqueueMakeBuffersResidentAMD`, seed 002).
    ///
    /// ```
    /// use dmabridge::memory::iova::{IovaAllocator, IovaError};
    /// use dmabridge::sys::addr::Iova;
    /// let mut a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// let big = a.alloc(1 << 21, 1 << 21)?;
    /// assert!(big.is_aligned(1 << 21));
    /// assert!(matches!(a.alloc(100, 0), Err(IovaError::Unaligned { .. })), "not a page multiple");
    /// assert!(matches!(a.alloc(1 << 28, 0), Err(IovaError::Exhausted { .. })));
    /// # Ok::<(), IovaError>(())
    /// ```
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<Iova, IovaError> {
        let align = align.max(self.page);
        self.check_shape(Iova(0), size, align)?;
        loop {
            match self.alloc_fit(size, align) {
                // Retired ranges go back, oldest first, only when nothing
                // else has room.
                Err(_) if !self.retired.is_empty() => self.release_oldest_retired(),
                r => return r,
            }
        }
    }

    /// First fit of `size` bytes aligned to `align` among the free ranges.
    fn alloc_fit(&mut self, size: u64, align: u64) -> Result<Iova, IovaError> {
        // In u128: candidates and ends may pass the top of the address space.
        let (size128, align128) = (u128::from(size), u128::from(align));
        let mut candidate = u128::from(self.start).next_multiple_of(align128);
        for (&s, &l) in self.used.range(..) {
            if candidate + size128 <= u128::from(s) {
                break;
            }
            candidate = candidate.max((u128::from(l) + 1).next_multiple_of(align128));
        }
        let last = candidate + size128 - 1;
        if last > u128::from(self.mask) {
            return Err(IovaError::Exhausted { size, mask: self.mask });
        }
        // Both fit: `last` is at most the mask, a u64.
        self.used.insert(candidate as u64, last as u64);
        Ok(Iova(candidate as u64))
    }

    /// Claims exactly `[iova, iova + size)`, e.g. to make a buffer's IOVA
    /// equal to its host address.
    ///
    /// No OpenCL function of its own: lets the bus address that
    /// `clEnqueueMakeBuffersResidentAMD` (seed 002) reports equal the host
    /// address where the device reaches it.
    ///
    /// ```
    /// use dmabridge::memory::iova::{IovaAllocator, IovaError};
    /// use dmabridge::sys::addr::Iova;
    /// let mut a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// a.reserve(Iova(0x10_0000), 0x2000)?;
    /// assert_eq!(a.reserve(Iova(0x10_1000), 0x1000), Err(IovaError::Overlap { iova: Iova(0x10_1000), size: 0x1000 }));
    /// assert!(matches!(a.reserve(Iova(1 << 28), 0x1000), Err(IovaError::BeyondMask { .. })));
    /// assert!(matches!(a.reserve(Iova(0), 0x1000), Err(IovaError::BeyondMask { .. })), "page 0 is never handed out");
    /// # Ok::<(), IovaError>(())
    /// ```
    pub fn reserve(&mut self, iova: Iova, size: u64) -> Result<(), IovaError> {
        self.check_shape(iova, size, self.page)?;
        let last = match iova.0.checked_add(size - 1) {
            Some(last) if iova.0 >= self.start && last <= self.mask => last,
            _ => return Err(IovaError::BeyondMask { iova, size, mask: self.mask }),
        };
        if self.overlaps(iova.0, last) {
            return Err(IovaError::Overlap { iova, size });
        }
        self.used.insert(iova.0, last);
        Ok(())
    }

    /// Gives back the range that starts at `iova`; returns its size.
    ///
    /// No OpenCL function of its own: the end of a copy's mapping, or an
    /// eviction of a resident range.
    ///
    /// ```
    /// use dmabridge::memory::iova::{IovaAllocator, IovaError};
    /// use dmabridge::sys::addr::Iova;
    /// let mut a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// let x = a.alloc(0x3000, 0)?;
    /// assert_eq!(a.free(x)?, 0x3000);
    /// assert_eq!(a.free(x), Err(IovaError::NotAllocated(x)));
    /// assert_eq!(a.alloc(0x1000, 0)?, x, "first fit reuses it");
    /// # Ok::<(), IovaError>(())
    /// ```
    pub fn free(&mut self, iova: Iova) -> Result<u64, IovaError> {
        if self.holes.contains_key(&iova.0) || self.retired.contains(&iova.0) {
            return Err(IovaError::NotAllocated(iova));
        }
        // Handed-out ranges start at a page or above: the size fits.
        self.used.remove(&iova.0).map(|last| last - iova.0 + 1).ok_or(IovaError::NotAllocated(iova))
    }

    /// Gives back the range that starts at `iova`, as [`IovaAllocator::free`],
    /// but keeps it out of circulation for as long as possible: neither
    /// [`IovaAllocator::alloc`] nor [`IovaAllocator::reserve`] hands it out
    /// until [`RETIRED_MAX`] ranges retired after it have come (the oldest
    /// then goes back) or an allocation has no other room. Returns its size.
    ///
    /// No OpenCL function of its own: the bus addresses of an evicted
    /// resident range (a released `CL_MEM_BUS_ADDRESSABLE_AMD` buffer,
    /// seed 002; a freed device allocation), so that a device still using
    /// them hits no mapping (the IOMMU faults it) rather than the next
    /// buffer's pages.
    ///
    /// ```
    /// use dmabridge::memory::iova::{IovaAllocator, IovaError};
    /// use dmabridge::sys::addr::Iova;
    /// let mut a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// let x = a.alloc(0x1000, 0)?;
    /// assert_eq!(a.retire(x)?, 0x1000);
    /// assert_eq!(a.allocated_bytes(), 0, "retired ranges are not counted");
    /// assert_ne!(a.alloc(0x1000, 0)?, x, "not handed out again while there is other room");
    /// assert!(a.reserve(x, 0x1000).is_err());
    /// assert_eq!(a.free(x), Err(IovaError::NotAllocated(x)));
    /// # Ok::<(), IovaError>(())
    /// ```
    pub fn retire(&mut self, iova: Iova) -> Result<u64, IovaError> {
        if self.holes.contains_key(&iova.0) || self.retired.contains(&iova.0) {
            return Err(IovaError::NotAllocated(iova));
        }
        let last = *self.used.get(&iova.0).ok_or(IovaError::NotAllocated(iova))?;
        self.retired.push_back(iova.0);
        if self.retired.len() > RETIRED_MAX {
            self.release_oldest_retired();
        }
        Ok(last - iova.0 + 1)
    }

    fn release_oldest_retired(&mut self) {
        if let Some(iova) = self.retired.pop_front() {
            self.used.remove(&iova);
        }
    }

    /// Bytes handed out (holes and retired ranges not counted).
    ///
    /// No OpenCL function of its own: shows that copies give their bus
    /// addresses back (tests).
    ///
    /// ```
    /// use dmabridge::memory::iova::{IovaAllocator, IovaError};
    /// use dmabridge::sys::addr::Iova;
    /// let mut a = IovaAllocator::new((1 << 28) - 1, 4096)?;
    /// let x = a.alloc(0x2000, 0)?;
    /// a.reserve(Iova(0x10_0000), 0x1000)?;
    /// assert_eq!(a.allocated_bytes(), 0x3000);
    /// a.free(x)?;
    /// assert_eq!(a.allocated_bytes(), 0x1000);
    /// # Ok::<(), IovaError>(())
    /// ```
    pub fn allocated_bytes(&self) -> u64 {
        let bytes = |m: &BTreeMap<u64, u64>| m.iter().map(|(&s, &l)| u128::from(l - s) + 1).sum::<u128>();
        let retired: u128 = self.retired.iter().map(|s| u128::from(self.used[s] - s) + 1).sum();
        // Handed-out ranges never include page 0: the total fits.
        (bytes(&self.used) - bytes(&self.holes) - retired) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;
    const EDU_MASK: u64 = (1 << 28) - 1;

    #[test]
    fn allocates_first_fit_and_reuses_freed_ranges() {
        let mut a = IovaAllocator::new(EDU_MASK, PAGE).unwrap();
        let x = a.alloc(PAGE, PAGE).unwrap();
        let y = a.alloc(2 * PAGE, PAGE).unwrap();
        assert_eq!(x, Iova(PAGE), "page 0 is never handed out");
        assert_eq!(y, Iova(2 * PAGE));
        assert_eq!(a.free(x).unwrap(), PAGE);
        assert_eq!(a.alloc(PAGE, PAGE).unwrap(), x);
        assert_eq!(a.allocated_bytes(), 3 * PAGE);
        let big = a.alloc(1 << 21, 1 << 21).unwrap();
        assert!(big.is_aligned(1 << 21));
    }

    #[test]
    fn retired_ranges_come_back_last() {
        let mut a = IovaAllocator::new(16 * PAGE - 1, PAGE).unwrap();
        let x = a.alloc(2 * PAGE, PAGE).unwrap();
        assert_eq!(a.retire(x).unwrap(), 2 * PAGE);
        assert_eq!(a.retire(x), Err(IovaError::NotAllocated(x)), "retired once");
        assert_eq!(a.allocated_bytes(), 0);
        // Every other page goes first: pages 3..=15.
        let rest: Vec<Iova> = (0..13).map(|_| a.alloc(PAGE, PAGE).unwrap()).collect();
        assert!(rest.iter().all(|&r| r != x && r != x + PAGE), "{rest:x?}");
        assert!(matches!(a.reserve(x, PAGE), Err(IovaError::Overlap { .. })));
        // Then, with no other room, the retired range goes back.
        assert_eq!(a.alloc(2 * PAGE, PAGE).unwrap(), x);
        // A bounded number of ranges stays retired: the oldest goes back.
        let mut b = IovaAllocator::new(EDU_MASK, PAGE).unwrap();
        let ranges: Vec<Iova> = (0..=RETIRED_MAX).map(|_| b.alloc(PAGE, PAGE).unwrap()).collect();
        ranges.iter().for_each(|&r| assert_eq!(b.retire(r).unwrap(), PAGE));
        assert_eq!(b.alloc(PAGE, PAGE).unwrap(), ranges[0]);
        assert_eq!(b.allocated_bytes(), PAGE);
    }

    #[test]
    fn refuses_beyond_mask_overlap_and_bad_shapes() {
        let mut a = IovaAllocator::new(EDU_MASK, PAGE).unwrap();
        assert_eq!(
            a.reserve(Iova(1 << 28), PAGE),
            Err(IovaError::BeyondMask { iova: Iova(1 << 28), size: PAGE, mask: EDU_MASK })
        );
        assert!(matches!(a.reserve(Iova(EDU_MASK + 1 - PAGE), 2 * PAGE), Err(IovaError::BeyondMask { .. })));
        a.reserve(Iova(0x10_0000), 4 * PAGE).unwrap();
        assert_eq!(
            a.reserve(Iova(0x10_0000 + PAGE), PAGE),
            Err(IovaError::Overlap { iova: Iova(0x10_0000 + PAGE), size: PAGE })
        );
        assert_eq!(
            a.reserve(Iova(0x10_0000 - PAGE), 2 * PAGE),
            Err(IovaError::Overlap { iova: Iova(0x10_0000 - PAGE), size: 2 * PAGE })
        );
        assert!(matches!(a.alloc(0, PAGE), Err(IovaError::Unaligned { .. })));
        assert!(matches!(a.alloc(100, PAGE), Err(IovaError::Unaligned { .. })));
        assert!(matches!(a.alloc(PAGE, 3 * PAGE), Err(IovaError::Unaligned { .. })));
        assert_eq!(a.free(Iova(0x20_0000)), Err(IovaError::NotAllocated(Iova(0x20_0000))));
        assert_eq!(a.alloc(1 << 28, PAGE), Err(IovaError::Exhausted { size: 1 << 28, mask: EDU_MASK }));
        // Nothing above changed what is allocated.
        assert_eq!(a.allocated_bytes(), 4 * PAGE);
    }

    #[test]
    fn honours_the_iommu_usable_ranges() {
        let mut a = IovaAllocator::new(u64::MAX >> 16, PAGE).unwrap();
        // Like intel-iommu: everything but the MSI window.
        a.restrict_to(&[Iova(0)..=Iova(0xfedf_ffff), Iova(0xfef0_0000)..=Iova((1 << 48) - 1)]);
        assert!(matches!(a.reserve(Iova(0xfee0_0000), PAGE), Err(IovaError::Overlap { .. })));
        let x = a.alloc(0x100_0000, 0x100_0000).unwrap().0;
        assert!(x + 0x100_0000 <= 0xfee0_0000 || x >= 0xfef0_0000);
        assert_eq!(a.free(Iova(0xfee0_0000)), Err(IovaError::NotAllocated(Iova(0xfee0_0000))));
        assert_eq!(a.allocated_bytes(), 0x100_0000);
    }
}
