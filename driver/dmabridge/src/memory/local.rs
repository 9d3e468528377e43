//! Sub-allocation of a device's local memory (a PCI BAR in the rig).
//!
//! A [`LocalAllocator`] hands out byte ranges of a fixed-size region by
//! offset: first fit, in granules of [`GRANULE`] bytes, with any power-of-two
//! alignment. Free space is the gap between ranges in use, so freed
//! neighbours coalesce by construction. It knows nothing of addresses: the
//! owner adds the region's CPU address or bus address to an offset.
//!
//! Bad requests (zero size, a free of anything but an allocation's start)
//! return an error and change nothing.

use std::collections::BTreeMap;

/// Allocation granule: every range starts and ends on a multiple of it.
pub const GRANULE: usize = 64;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    /// Zero bytes, or more than the whole region.
    #[error("{size} bytes cannot be allocated in a region of {region} bytes (must be 1..={region})")]
    BadSize {
        /// Bytes asked for.
        size: usize,
        /// The region's size.
        region: usize,
    },
    /// The alignment is not a power of two.
    #[error("alignment {0} is not a power of two")]
    BadAlignment(usize),
    /// No gap is large enough (the region is full or fragmented).
    #[error("no free range of {size} bytes (alignment {align}) is left: {free} of {region} bytes are free, in pieces too small")]
    Full {
        /// Bytes asked for.
        size: usize,
        /// Alignment asked for.
        align: usize,
        /// Bytes free in all.
        free: usize,
        /// The region's size.
        region: usize,
    },
    /// The offset is inside an allocation but not its start.
    #[error("offset {offset:#x} points inside the allocation at {start:#x}; only an allocation's start can be freed")]
    Interior {
        /// Offset given.
        offset: usize,
        /// Offset of the start of the allocation it points into.
        start: usize,
    },
    /// No allocation covers the offset (never allocated, or already freed).
    #[error("offset {0:#x} is not an allocation (never allocated, or already freed)")]
    NotAllocated(usize),
    /// Part of the range asked for by [`LocalAllocator::reserve`] is in use.
    #[error("bytes {offset:#x}+{size:#x} are in use by the allocation at {start:#x}")]
    Taken {
        /// Offset asked for.
        offset: usize,
        /// Bytes asked for.
        size: usize,
        /// Offset of the start of an allocation in the way.
        start: usize,
    },
}

/// One range in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    /// Bytes asked for (what lookups report).
    size: usize,
    /// Bytes reserved (size rounded up to the granule).
    reserved: usize,
}

/// A first-fit allocator of byte ranges in `[0, size)`.
#[derive(Debug, Clone)]
pub struct LocalAllocator {
    size: usize,
    used: BTreeMap<usize, Range>,
    reserved: usize,
}

impl LocalAllocator {
    /// An allocator over `size` bytes (rounded down to the granule).
    ///
    /// No OpenCL function of its own: the sub-allocator behind `clDeviceMemAllocINTEL` on a BAR device.
    ///
    /// ```
    /// use dmabridge::memory::local::LocalAllocator;
    /// let a = LocalAllocator::new(4 << 20);
    /// assert_eq!((a.size(), a.allocated()), (4 << 20, 0));
    /// ```
    pub fn new(size: usize) -> LocalAllocator {
        LocalAllocator { size: size / GRANULE * GRANULE, used: BTreeMap::new(), reserved: 0 }
    }

    /// The region's size.
    ///
    /// No OpenCL function of its own: `CL_DEVICE_GLOBAL_MEM_SIZE` of a BAR device.
    ///
    /// ```
    /// use dmabridge::memory::local::{LocalAllocator, GRANULE};
    /// assert_eq!(LocalAllocator::new(GRANULE * 3 + 5).size(), GRANULE * 3);
    /// ```
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes reserved by live allocations (each rounded up to the granule).
    ///
    /// No OpenCL function of its own: what the device's USM allocations and buffers hold.
    ///
    /// ```
    /// use dmabridge::memory::local::{LocalAllocator, GRANULE};
    /// let mut a = LocalAllocator::new(1 << 20);
    /// a.alloc(1, 1)?;
    /// assert_eq!(a.allocated(), GRANULE);
    /// # Ok::<(), dmabridge::memory::local::LocalError>(())
    /// ```
    pub fn allocated(&self) -> usize {
        self.reserved
    }

    /// Number of live allocations.
    ///
    /// No OpenCL function of its own: how many allocations are live.
    ///
    /// ```
    /// use dmabridge::memory::local::LocalAllocator;
    /// let mut a = LocalAllocator::new(1 << 20);
    /// let x = a.alloc(100, 64)?;
    /// assert_eq!(a.count(), 1);
    /// a.free(x)?;
    /// assert_eq!(a.count(), 0);
    /// # Ok::<(), dmabridge::memory::local::LocalError>(())
    /// ```
    pub fn count(&self) -> usize {
        self.used.len()
    }

    /// Hands out `size` bytes at an offset aligned to `align` (at least the
    /// granule); returns the offset. Serves `clDeviceMemAllocINTEL` on a
    /// device with local memory.
    ///
    /// ```
    /// use dmabridge::memory::local::{LocalAllocator, LocalError};
    /// let mut a = LocalAllocator::new(1 << 20);
    /// assert_eq!(a.alloc(100, 0)?, 0);
    /// assert_eq!(a.alloc(100, 4096)?, 4096);
    /// assert!(matches!(a.alloc(2 << 20, 0), Err(LocalError::BadSize { .. })));
    /// # Ok::<(), LocalError>(())
    /// ```
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<usize, LocalError> {
        if size == 0 || size > self.size {
            return Err(LocalError::BadSize { size, region: self.size });
        }
        if align != 0 && !align.is_power_of_two() {
            return Err(LocalError::BadAlignment(align));
        }
        let align = align.max(GRANULE);
        let reserved = size.next_multiple_of(GRANULE);
        let mut candidate = 0usize;
        for (&start, r) in &self.used {
            if candidate.checked_add(reserved).is_some_and(|end| end <= start) {
                break;
            }
            // Ranges lie in the region: `start + reserved` cannot overflow,
            // but rounding it up to a huge alignment can.
            match (start + r.reserved).checked_next_multiple_of(align) {
                Some(next) => candidate = candidate.max(next),
                None => return Err(self.full(size, align)),
            }
        }
        match candidate.checked_add(reserved) {
            Some(end) if end <= self.size => {
                self.used.insert(candidate, Range { size, reserved });
                self.reserved += reserved;
                Ok(candidate)
            }
            _ => Err(self.full(size, align)),
        }
    }

    /// Claims exactly the bytes `[offset, offset + size)` (widened to whole
    /// granules) as one allocation, so that [`LocalAllocator::alloc`] hands
    /// none of them out; returns the allocation's start, for
    /// [`LocalAllocator::free`]. [`LocalError::Taken`] if a live allocation
    /// has any of those granules, [`LocalError::BadSize`] for 0 bytes or a
    /// range past the region; nothing changes then.
    ///
    /// No OpenCL function of its own: keeps a BAR device's allocations out
    /// of the remote memory an external physical buffer
    /// (`CL_MEM_EXTERNAL_PHYSICAL_AMD`, seed 002) writes.
    ///
    /// ```
    /// use dmabridge::memory::local::{LocalAllocator, LocalError, GRANULE};
    /// let mut a = LocalAllocator::new(1 << 20);
    /// assert_eq!(a.reserve(GRANULE + 10, 100)?, GRANULE);
    /// assert_eq!(a.alloc(GRANULE * 2, 0)?, GRANULE * 3, "the claimed granules are skipped");
    /// assert!(matches!(a.reserve(GRANULE * 4, 1), Err(LocalError::Taken { .. })));
    /// assert!(matches!(a.reserve((1 << 20) - 1, 2), Err(LocalError::BadSize { .. })));
    /// a.free(GRANULE)?;
    /// # Ok::<(), LocalError>(())
    /// ```
    pub fn reserve(&mut self, offset: usize, size: usize) -> Result<usize, LocalError> {
        let end = offset.checked_add(size).filter(|&e| size > 0 && e <= self.size);
        let Some(end) = end else {
            return Err(LocalError::BadSize { size, region: self.size });
        };
        let (start, end) = (offset / GRANULE * GRANULE, end.next_multiple_of(GRANULE).min(self.size));
        if let Some((&base, _)) = self.used.range(..end).next_back().filter(|(&s, r)| s + r.reserved > start) {
            return Err(LocalError::Taken { offset, size, start: base });
        }
        self.used.insert(start, Range { size: end - start, reserved: end - start });
        self.reserved += end - start;
        Ok(start)
    }

    fn full(&self, size: usize, align: usize) -> LocalError {
        LocalError::Full { size, align, free: self.size - self.reserved, region: self.size }
    }

    /// Gives back the allocation that starts at `offset`; returns its size.
    /// An interior or unknown offset is an error and changes nothing.
    /// Serves `clMemFreeINTEL`.
    ///
    /// ```
    /// use dmabridge::memory::local::{LocalAllocator, LocalError};
    /// let mut a = LocalAllocator::new(1 << 20);
    /// let x = a.alloc(100, 0)?;
    /// assert_eq!(a.free(x + 1), Err(LocalError::Interior { offset: x + 1, start: x }));
    /// assert_eq!(a.free(x)?, 100);
    /// assert_eq!(a.free(x), Err(LocalError::NotAllocated(x)));
    /// # Ok::<(), LocalError>(())
    /// ```
    pub fn free(&mut self, offset: usize) -> Result<usize, LocalError> {
        match self.lookup(offset) {
            Some((base, _)) if base == offset => {
                let r = self.used.remove(&offset).expect("looked up");
                self.reserved -= r.reserved;
                Ok(r.size)
            }
            Some((base, _)) => Err(LocalError::Interior { offset, start: base }),
            None => Err(LocalError::NotAllocated(offset)),
        }
    }

    /// The allocation `offset` points into (any byte of its asked size), as
    /// `(start, size)`. Serves `clGetMemAllocInfoINTEL`.
    ///
    /// ```
    /// use dmabridge::memory::local::LocalAllocator;
    /// let mut a = LocalAllocator::new(1 << 20);
    /// let x = a.alloc(100, 0)?;
    /// assert_eq!(a.lookup(x + 99), Some((x, 100)));
    /// assert_eq!(a.lookup(x + 100), None, "padding up to the granule is no part of it");
    /// # Ok::<(), dmabridge::memory::local::LocalError>(())
    /// ```
    pub fn lookup(&self, offset: usize) -> Option<(usize, usize)> {
        let (&start, r) = self.used.range(..=offset).next_back()?;
        (offset - start < r.size).then_some((start, r.size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_reuses_and_coalesces_gaps() {
        let mut a = LocalAllocator::new(16 * GRANULE);
        let x = a.alloc(GRANULE, 0).unwrap();
        let y = a.alloc(2 * GRANULE, 0).unwrap();
        let z = a.alloc(GRANULE, 0).unwrap();
        assert_eq!((x, y, z), (0, GRANULE, 3 * GRANULE));
        a.free(x).unwrap();
        a.free(y).unwrap();
        // The two freed neighbours form one gap of three granules.
        assert_eq!(a.alloc(3 * GRANULE, 0).unwrap(), 0);
        assert_eq!(a.allocated(), 4 * GRANULE);
    }

    #[test]
    fn alignment_and_exhaustion() {
        let mut a = LocalAllocator::new(8 * GRANULE);
        a.alloc(1, 0).unwrap();
        assert_eq!(a.alloc(1, 4 * GRANULE).unwrap(), 4 * GRANULE);
        assert_eq!(
            a.alloc(4 * GRANULE, 0).unwrap_err(),
            LocalError::Full { size: 4 * GRANULE, align: GRANULE, free: 6 * GRANULE, region: 8 * GRANULE }
        );
        assert_eq!(a.alloc(1, 3), Err(LocalError::BadAlignment(3)));
        assert!(matches!(a.alloc(0, 0), Err(LocalError::BadSize { .. })));
        // The whole region at once, once it is empty.
        let mut b = LocalAllocator::new(8 * GRANULE);
        assert_eq!(b.alloc(8 * GRANULE, 0).unwrap(), 0);
        assert!(matches!(b.alloc(1, 0), Err(LocalError::Full { .. })));
    }

    #[test]
    fn bad_frees_change_nothing() {
        let mut a = LocalAllocator::new(1 << 20);
        let x = a.alloc(1000, 0).unwrap();
        let before = a.allocated();
        assert_eq!(a.free(x + 999), Err(LocalError::Interior { offset: x + 999, start: x }));
        assert_eq!(a.free(x + 5000), Err(LocalError::NotAllocated(x + 5000)));
        assert_eq!((a.allocated(), a.count()), (before, 1));
        assert_eq!(a.lookup(x + 500), Some((x, 1000)));
        assert_eq!(a.free(x), Ok(1000));
        assert_eq!(a.free(x), Err(LocalError::NotAllocated(x)));
        assert_eq!(a.allocated(), 0);
    }
}
