//! DMA-BUF heaps: `/dev/dma_heap/NAME` allocators that return dma-bufs.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::dma_buf::DmaBuf;
use super::ioctl::{ioctl_ptr, opcode, Opcode};
use super::OsError;

/// The folder of heap device nodes.
pub(crate) const HEAP_DIR: &str = "/dev/dma_heap";

#[repr(C)]
struct DmaHeapAllocationData {
    len: u64,
    fd: u32,
    fd_flags: u32,
    heap_flags: u64,
}

const DMA_HEAP_IOCTL_ALLOC: Opcode = opcode::read_write::<DmaHeapAllocationData>(b'H', 0x0);

/// Why a heap could not be opened or refused an allocation.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HeapError {
    /// No such heap.
    #[error(
        "no DMA-BUF heap {0:?} in /dev/dma_heap: the kernel needs CONFIG_DMABUF_HEAPS_SYSTEM (or the CMA heap){demo}",
        demo = crate::sys::hints::checkout_only("; run `make demo` for a guest that has it")
    )]
    NoHeap(String),
    /// The node exists but this user may not open it.
    #[error(
        "cannot open /dev/dma_heap/{0} ({1}): {join}, or run as root",
        join = crate::sys::hints::join_group()
    )]
    NoAccess(String, Errno),
    /// The kernel refused the flags (`EINVAL`): fd flags other than
    /// `O_RDWR | O_CLOEXEC`, or any heap flag (none are defined).
    #[error("the heap refused fd_flags {fd_flags:#x} / heap_flags {heap_flags:#x}: fd flags may only be O_RDWR|O_CLOEXEC and no heap flags are defined")]
    InvalidFlags {
        /// fd flags asked for.
        fd_flags: u32,
        /// heap flags asked for.
        heap_flags: u64,
    },
    /// The heap has no memory for `len` bytes (`ENOMEM`).
    #[error("the heap has no room for {0} bytes")]
    OutOfMemory(u64),
    /// A zero length (`EINVAL` from the kernel).
    #[error("a heap allocation needs a non-zero length")]
    ZeroLength,
    /// A system call failed.
    #[error(transparent)]
    Os(#[from] OsError),
}

/// Names of the heaps this kernel offers (empty if there is no heap folder).
///
/// Reads the folder `/dev/dma_heap`.
///
/// # Examples
///
/// ```
/// use dmabridge::sys::dma_heap::{self, DmaHeap};
///
/// let heaps = dma_heap::list();
/// assert!(heaps.windows(2).all(|w| w[0] < w[1]));
/// for name in &heaps {
///     match DmaHeap::open(name) {
///         Ok(heap) => println!("heap {}", heap.name()),
///         Err(e) => println!("{e}"),
///     }
/// }
/// ```
pub fn list() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(HEAP_DIR)
        .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// An open heap.
#[derive(Debug)]
pub struct DmaHeap {
    fd: OwnedFd,
    name: String,
}

impl DmaHeap {
    /// Opens `/dev/dma_heap/NAME` (e.g. `"system"`).
    ///
    /// Wraps `open(2)` of `/dev/dma_heap/NAME` (`O_RDONLY | O_CLOEXEC`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::dma_heap::{DmaHeap, HeapError};
    ///
    /// match DmaHeap::open("system") {
    ///     Ok(heap) => assert_eq!(heap.name(), "system"),
    ///     Err(e) => println!("{e}"),
    /// }
    /// assert_eq!(DmaHeap::open("no-such-heap").unwrap_err(), HeapError::NoHeap("no-such-heap".into()));
    /// // Names are names, not paths.
    /// assert_eq!(DmaHeap::open("../null").unwrap_err(), HeapError::NoHeap("../null".into()));
    /// ```
    pub fn open(name: &str) -> Result<DmaHeap, HeapError> {
        if name.is_empty() || name.contains('/') {
            return Err(HeapError::NoHeap(name.to_owned()));
        }
        let path = Path::new(HEAP_DIR).join(name);
        let fd = rustix::fs::open(&path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).map_err(|e| match e {
            Errno::NOENT => HeapError::NoHeap(name.to_owned()),
            Errno::ACCESS | Errno::PERM => HeapError::NoAccess(name.to_owned(), e),
            e => OsError::new("open dma heap", e).into(),
        })?;
        Ok(DmaHeap { fd, name: name.to_owned() })
    }

    /// The heap's name.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::dma_heap::{DmaHeap, HeapError};
    /// # let Some(heap) = dmabridge::sys::doc_support::or_skip(DmaHeap::open("system")) else { return Ok(()) };
    /// assert_eq!(heap.name(), "system");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Allocates `len` bytes as a read-write, close-on-exec dma-buf.
    ///
    /// Wraps `DMA_HEAP_IOCTL_ALLOC` on the heap node.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::dma_heap::{DmaHeap, HeapError};
    ///
    /// # let Some(heap) = dmabridge::sys::doc_support::or_skip(DmaHeap::open("system")) else { return Ok(()) };
    /// let buf = heap.alloc(1 << 20)?;
    /// assert_eq!(buf.size()?, 1 << 20);
    /// assert_eq!(heap.alloc(0).unwrap_err(), HeapError::ZeroLength);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn alloc(&self, len: u64) -> Result<DmaBuf, HeapError> {
        self.alloc_with_flags(len, (OFlags::RDWR | OFlags::CLOEXEC).bits(), 0)
    }

    /// Allocates with explicit fd flags and heap flags, as the ioctl takes
    /// them; the kernel judges the flags.
    ///
    /// Wraps `DMA_HEAP_IOCTL_ALLOC` on the heap node.
    ///
    /// # Examples
    ///
    /// ```
    /// use rustix::fs::OFlags;
    /// use dmabridge::sys::dma_heap::{DmaHeap, HeapError};
    ///
    /// # let Some(heap) = dmabridge::sys::doc_support::or_skip(DmaHeap::open("system")) else { return Ok(()) };
    /// let fd_flags = (OFlags::RDWR | OFlags::CLOEXEC).bits();
    /// let buf = heap.alloc_with_flags(4096, fd_flags, 0)?;
    /// assert_eq!(buf.size()?, 4096);
    /// // No heap flags are defined.
    /// let err = heap.alloc_with_flags(4096, fd_flags, 1).unwrap_err();
    /// assert_eq!(err, HeapError::InvalidFlags { fd_flags, heap_flags: 1 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn alloc_with_flags(&self, len: u64, fd_flags: u32, heap_flags: u64) -> Result<DmaBuf, HeapError> {
        let mut arg = DmaHeapAllocationData { len, fd: 0, fd_flags, heap_flags };
        // SAFETY: DMA_HEAP_IOCTL_ALLOC reads and writes one
        // `struct dma_heap_allocation_data`, mirrored by the argument.
        unsafe { ioctl_ptr(self.fd.as_fd(), DMA_HEAP_IOCTL_ALLOC, &mut arg) }.map_err(|e| match e {
            Errno::INVAL if len == 0 => HeapError::ZeroLength,
            Errno::INVAL => HeapError::InvalidFlags { fd_flags, heap_flags },
            Errno::NOMEM => HeapError::OutOfMemory(len),
            e => OsError::new("DMA_HEAP_IOCTL_ALLOC", e).into(),
        })?;
        // SAFETY: on success the kernel stored a new fd in `arg.fd` that
        // nobody else owns.
        Ok(DmaBuf::from_kernel(unsafe { OwnedFd::from_raw_fd(arg.fd as i32) }))
    }
}

impl AsFd for DmaHeap {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
