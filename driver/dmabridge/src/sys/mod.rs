//! Layer 1: kernel interfaces.
//!
//! One module per kernel object. Every type owns its file descriptor
//! ([`std::os::fd::OwnedFd`]) and lends it as a [`std::os::fd::BorrowedFd`];
//! no raw fd integer crosses a public API. Every `unsafe` block carries a
//! `// SAFETY:` argument. Errors carry the operation and the errno
//! ([`OsError`]); rules the kernel would refuse are checked up front where the
//! caller benefits from a precise, typed reason.
//!
//! No safe function can crash the process or touch memory outside what it
//! was given, whatever the arguments: ranges are checked with overflow-proof
//! arithmetic, a safe [`mmap::Mapping`] only exists over objects that cannot
//! lose its pages (see [`mmap`] for the rule and for why its accesses are
//! volatile), and the generic mapping of an arbitrary fd is `unsafe`.

mod error;
pub(crate) mod ioctl;

pub mod access;
pub mod addr;
pub mod bytes;
pub mod dma_buf;
pub mod dma_heap;
#[doc(hidden)]
pub mod doc_support;
pub mod drm;
pub mod eventfd;
pub(crate) mod fork;
#[cfg(test)]
pub(crate) mod forked;
pub mod hints;
pub mod memfd;
pub mod mmap;
pub mod pci;
pub mod pci_aer;
pub mod probe;
pub mod udmabuf;
pub mod uring;
pub mod v4l2;
pub mod vfio;
pub mod vm;

pub use error::{OsError, OsResult};

/// The size of a page of the running kernel.
///
/// Wraps the kernel's `AT_PAGESZ` (rustix's `page_size`, no system call).
///
/// # Examples
///
/// ```
/// let page = dmabridge::sys::page_size();
/// assert!(page.is_power_of_two());
/// assert!(page >= 4096);
/// ```
pub fn page_size() -> usize {
    rustix::param::page_size()
}
