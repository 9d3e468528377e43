//! The range of an NDRange launch (`clEnqueueNDRangeKernel`): one, two or
//! three dimensions (`CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS` is 3, the OpenCL
//! 3.0 minimum), checked against the OpenCL rules once, for the C face and
//! the Rust API alike.
//!
//! Built-in kernels divide their work by the number of work-items, the
//! product of the global sizes, whatever the range's shape: a 64 × 4 range
//! does what a 256-item 1-D range does. A global size of 0 in any dimension
//! runs nothing (OpenCL 2.1 and later). Work-groups only split the range, so
//! a local size need not divide the global size
//! (`CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT`).

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::info::{MAX_WORK_GROUP_SIZE, MAX_WORK_ITEM_DIMENSIONS, MAX_WORK_ITEM_SIZES};

/// A checked NDRange: `work_dim` dimensions of global sizes, with their
/// global offsets and, if the application gave one, the local size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NdRange {
    global: Vec<usize>,
    offset: Vec<usize>,
    local: Option<Vec<usize>>,
}

impl NdRange {
    /// A 1-D range of `global` work-items, no offset, no local size.
    ///
    /// ```
    /// use dmabridge::runtime::kernel::NdRange;
    /// assert_eq!(NdRange::linear(64).work_items(), 64);
    /// assert_eq!(NdRange::linear(64).work_dim(), 1);
    /// ```
    pub fn linear(global: usize) -> NdRange {
        NdRange { global: vec![global], offset: vec![0], local: None }
    }

    /// Checks a range as `clEnqueueNDRangeKernel` gets it: `global` holds
    /// `work_dim` entries, `offset` and `local` (when given) as many.
    ///
    /// Errors: `CL_INVALID_WORK_DIMENSION` unless 1 to 3 dimensions;
    /// `CL_INVALID_VALUE` if `offset` or `local` has another number of
    /// entries; `CL_INVALID_GLOBAL_WORK_SIZE` if the work-items (the product
    /// of the global sizes) do not fit a `size_t`; `CL_INVALID_GLOBAL_OFFSET`
    /// if an offset plus its global size does not; `CL_INVALID_WORK_ITEM_SIZE`
    /// if a local size exceeds its `CL_DEVICE_MAX_WORK_ITEM_SIZES` entry;
    /// `CL_INVALID_WORK_GROUP_SIZE` if a local size is 0 or the work-group
    /// (their product) exceeds `CL_DEVICE_MAX_WORK_GROUP_SIZE`.
    ///
    /// ```
    /// use dmabridge::error::ClErrorKind;
    /// use dmabridge::runtime::kernel::NdRange;
    /// let r = NdRange::new(&[16, 4, 2], Some(&[1, 1, 1]), Some(&[4, 2, 1]))?;
    /// assert_eq!((r.work_dim(), r.work_items()), (3, 128));
    /// let kind = |r: Result<NdRange, dmabridge::error::ClError>| r.unwrap_err().kind;
    /// assert_eq!(kind(NdRange::new(&[1, 1, 1, 1], None, None)), ClErrorKind::InvalidWorkDimension);
    /// assert_eq!(kind(NdRange::new(&[usize::MAX, 2], None, None)), ClErrorKind::InvalidGlobalWorkSize);
    /// assert_eq!(kind(NdRange::new(&[8, 8], None, Some(&[64, 64]))), ClErrorKind::InvalidWorkGroupSize);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn new(global: &[usize], offset: Option<&[usize]>, local: Option<&[usize]>) -> ClResult<NdRange> {
        let dims = global.len();
        if dims == 0 || dims > MAX_WORK_ITEM_DIMENSIONS as usize {
            return cl_err!(
                InvalidWorkDimension,
                "work_dim {dims}: 1 to {MAX_WORK_ITEM_DIMENSIONS} dimensions (CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS)"
            );
        }
        for (what, a) in [("global_work_offset", offset), ("local_work_size", local)] {
            if let Some(a) = a.filter(|a| a.len() != dims) {
                return cl_err!(InvalidValue, "{what} has {} entries for {dims} dimensions", a.len());
            }
        }
        if global.iter().try_fold(1usize, |n, &g| n.checked_mul(g)).is_none() {
            return cl_err!(
                InvalidGlobalWorkSize,
                "global_work_size {global:?}: the work-items (their product) do not fit a size_t"
            );
        }
        let offset = offset.map_or_else(|| vec![0; dims], <[usize]>::to_vec);
        if let Some(d) = (0..dims).find(|&d| offset[d].checked_add(global[d]).is_none()) {
            return cl_err!(
                InvalidGlobalOffset,
                "global_work_offset[{d}] {} + global_work_size[{d}] {} does not fit a size_t",
                offset[d],
                global[d]
            );
        }
        if let Some(local) = local {
            if let Some(d) = (0..dims).find(|&d| local[d] > MAX_WORK_ITEM_SIZES[d]) {
                return cl_err!(
                    InvalidWorkItemSize,
                    "local_work_size[{d}] {} exceeds CL_DEVICE_MAX_WORK_ITEM_SIZES[{d}] {}",
                    local[d],
                    MAX_WORK_ITEM_SIZES[d]
                );
            }
            let group = local.iter().try_fold(1usize, |n, &l| n.checked_mul(l));
            if local.contains(&0) || group.is_none_or(|g| g > MAX_WORK_GROUP_SIZE) {
                return cl_err!(
                    InvalidWorkGroupSize,
                    "local_work_size {local:?}: a work-group of 1 to {MAX_WORK_GROUP_SIZE} work-items \
                     (CL_DEVICE_MAX_WORK_GROUP_SIZE), none of its sizes 0"
                );
            }
        }
        Ok(NdRange { global: global.to_vec(), offset, local: local.map(<[usize]>::to_vec) })
    }

    /// The number of dimensions (`work_dim`).
    ///
    /// ```
    /// # use dmabridge::runtime::kernel::NdRange;
    /// assert_eq!(NdRange::new(&[4, 4], None, None)?.work_dim(), 2);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn work_dim(&self) -> u32 {
        self.global.len() as u32
    }

    /// The global size of each dimension.
    ///
    /// ```
    /// # use dmabridge::runtime::kernel::NdRange;
    /// assert_eq!(NdRange::new(&[4, 3], None, None)?.global(), &[4, 3]);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn global(&self) -> &[usize] {
        &self.global
    }

    /// The global offset of each dimension (zeros when none was given).
    ///
    /// ```
    /// # use dmabridge::runtime::kernel::NdRange;
    /// assert_eq!(NdRange::new(&[4, 3], None, None)?.offset(), &[0, 0]);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn offset(&self) -> &[usize] {
        &self.offset
    }

    /// The local size, if the application gave one.
    ///
    /// ```
    /// # use dmabridge::runtime::kernel::NdRange;
    /// assert_eq!(NdRange::new(&[4], None, Some(&[3]))?.local(), Some(&[3][..]));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn local(&self) -> Option<&[usize]> {
        self.local.as_deref()
    }

    /// The number of work-items: the product of the global sizes (0 if any
    /// is 0: nothing runs).
    ///
    /// ```
    /// # use dmabridge::runtime::kernel::NdRange;
    /// assert_eq!(NdRange::new(&[4, 0, 9], None, None)?.work_items(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn work_items(&self) -> usize {
        self.global.iter().product()
    }
}
