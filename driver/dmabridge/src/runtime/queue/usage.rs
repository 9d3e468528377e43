//! [`CommandUse`]: the memory a command declares it may access, and the
//! overlap tests `clMemBlockingFreeINTEL` waits on. A plain value type, apart
//! from the scheduler that stores it with each live command.

use crate::sys::addr::HostAddr;

/// The memory a command may access, so that freeing an allocation can wait
/// for the commands that use it (`clMemBlockingFreeINTEL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandUse {
    /// No memory (markers, barriers).
    Nothing,
    /// One range (a fill, a map, an advice).
    Range(UsedRange),
    /// Two ranges (a copy's destination and source).
    Pair([UsedRange; 2]),
    /// Any number of ranges (a migration, a kernel's pointer arguments).
    Ranges(Vec<UsedRange>),
    /// Every USM allocation of the flagged types, plus explicit ranges (a
    /// kernel with indirect access: its pointer arguments and `USM_PTRS`).
    /// SVM allocations count as shared ones (`clGetMemAllocInfoINTEL`
    /// reports them as `CL_MEM_TYPE_SHARED_INTEL`).
    Kinds {
        /// `CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL`.
        host: bool,
        /// `CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL`.
        device: bool,
        /// `CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL` (and SVM).
        shared: bool,
        /// Ranges used besides.
        ranges: Vec<UsedRange>,
    },
    /// Any memory (work that did not say).
    All,
}

/// `len` bytes from `start` that a command may access. Not a checked
/// [`Span`](crate::sys::addr::Span): a command declares what the caller
/// passed, which may run past the end of the address space; the overlap
/// test saturates instead, and an empty range counts as its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsedRange {
    /// The first byte.
    pub start: HostAddr,
    /// The length in bytes.
    pub len: usize,
}

impl UsedRange {
    /// `len` bytes from `start`.
    pub const fn new(start: HostAddr, len: usize) -> UsedRange {
        UsedRange { start, len }
    }
}

impl CommandUse {
    /// [`CommandUse::Range`] of `len` bytes from `start`.
    pub const fn range(start: HostAddr, len: usize) -> CommandUse {
        CommandUse::Range(UsedRange::new(start, len))
    }

    /// True if the command may access a byte of `[start, start + len)`
    /// (an empty range counts as its first byte).
    ///
    /// The test behind `clMemBlockingFreeINTEL` (seed 000).
    ///
    /// ```
    /// use dmabridge::runtime::queue::CommandUse;
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::runtime::queue::UsedRange;
    /// let copy = CommandUse::Pair([UsedRange::new(HostAddr(0x1000), 16), UsedRange::new(HostAddr(0x2000), 16)]);
    /// assert!(copy.touches(HostAddr(0x100f), 1));
    /// assert!(!copy.touches(HostAddr(0x1010), 0x100));
    /// assert!(!CommandUse::Nothing.touches(HostAddr(0x1000), 16));
    /// assert!(CommandUse::All.touches(HostAddr(0), 1));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn touches(&self, start: HostAddr, len: usize) -> bool {
        let start = start.0;
        let end = start.saturating_add(len.max(1));
        let hit = |r: &UsedRange| r.start.0 < end && start < r.start.0.saturating_add(r.len.max(1));
        match self {
            CommandUse::Nothing => false,
            CommandUse::Range(r) => hit(r),
            CommandUse::Pair(r) => r.iter().any(hit),
            CommandUse::Ranges(r) => r.iter().any(hit),
            // The type of the memory is unknown here: any flag may cover it.
            CommandUse::Kinds { host, device, shared, ranges } => *host || *device || *shared || ranges.iter().any(hit),
            CommandUse::All => true,
        }
    }

    /// True if the command may access a byte of the allocation
    /// `[start, start + len)` of type `kind`: as [`CommandUse::touches`],
    /// except that [`CommandUse::Kinds`] covers only allocations of its types.
    ///
    /// The test behind `clMemBlockingFreeINTEL` (seed 000): a kernel with
    /// indirect access counts as using all allocations of its types
    /// (tested in `queue::tests::command_use_kinds_cover_their_types`).
    pub(crate) fn touches_alloc(&self, start: HostAddr, len: usize, kind: crate::memory::heap::AllocKind) -> bool {
        use crate::memory::heap::AllocKind;
        match self {
            CommandUse::Kinds { host, device, shared, ranges } => {
                let by_kind = match kind {
                    AllocKind::Host => *host,
                    AllocKind::Device => *device,
                    AllocKind::Shared | AllocKind::Svm => *shared,
                };
                by_kind || ranges.iter().any(|&r| CommandUse::Range(r).touches(start, len))
            }
            other => other.touches(start, len),
        }
    }
}
