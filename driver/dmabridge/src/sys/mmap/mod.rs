//! Shared mappings of file descriptors (memfd pages, dma-bufs, VFIO regions).
//!
//! A [`Mapping`] owns its address range and unmaps it on drop. It does not own
//! the fd it came from: the kernel keeps the file alive for as long as the
//! mapping exists.
//!
//! # Why safe code can hold a `Mapping`
//!
//! Two things could make a safe access to a shared mapping unsound, and the
//! types are shaped so that neither can happen:
//!
//! * **Faults that fail.** A page of the mapping that is no longer (or never
//!   was) backed by the object — a file that shrank, a range past its end —
//!   kills the process with `SIGBUS` at the first touch. So the generic
//!   constructor over an arbitrary fd, [`Mapping::shared`], is an
//!   `unsafe fn` whose contract is that
//!   every mapped page stays backed for the life of the mapping (the shape
//!   memmap2 chose for `Mmap::map`): any fd may be handed in, and another
//!   process may truncate a file it shares. Safe code gets a `Mapping` only
//!   from constructors that know the object cannot drop pages under it, and
//!   that check the range first with overflow-proof arithmetic:
//!   [`Memfd::map`](super::memfd::Memfd::map) (the memfd must carry
//!   `F_SEAL_SHRINK`, so its size can only grow, and must not be on hugetlbfs
//!   unless write-sealed, since a hole punched there may find no huge page to
//!   fault back in), [`DmaBuf::map`](super::dma_buf::DmaBuf::map) and
//!   [`DmaBuf::map_range`](super::dma_buf::DmaBuf::map_range) (a dma-buf's size
//!   is fixed when it is exported and the kernel refuses mmaps beyond it; udmabuf,
//!   DMA-BUF heap and DRM buffers are all dma-bufs), and
//!   [`Device::map_region`](super::vfio::Device::map_region) (a VFIO region
//!   has a fixed size; its pages fault only while the device decodes memory,
//!   which the safe device API refuses to switch off).
//! * **Races.** The mapped bytes are shared: with other mappings of the same
//!   object (a memfd can be mapped twice, and so can the dma-buf of its pages),
//!   with other processes, and with devices that DMA into them. A `&mut self`
//!   on one `Mapping` therefore could not make a writer exclusive. Instead the
//!   bytes are treated as I/O memory, as rust-vmm's `VolatileSlice` treats
//!   guest memory: they lie outside every Rust allocation, no Rust reference
//!   into them is ever made, and every access through a `Mapping` is a
//!   volatile load or store. Concurrent accesses from several threads are then
//!   what accesses racing a device or another process are: not synchronised
//!   (a reader may see a mix of two writers' bytes, unless the accesses are
//!   aligned words, which are one access each), but not undefined behaviour.
//!   Ordering between threads is the owner's business (locks, dma-buf
//!   `cpu_access`, fences), as it is for the device.
//!
//! One idea a file: the mapping's life (constructors, `make_inert`, drop)
//! here; `io`, the CPU's accesses to the bytes.

mod io;
#[cfg(test)]
mod tests;

use std::os::fd::BorrowedFd;
use std::ptr::NonNull;

use rustix::mm::MapFlags;

pub use super::access::Access;
use super::addr::{HostAddr, Span};
use super::{OsError, OsResult};

/// Why a safe constructor refused to map an object.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MapError {
    /// The memfd can shrink: a mapping of it would die with `SIGBUS` once
    /// the file is truncated under it (by this process or any other holder
    /// of the fd).
    #[error("the memfd has no F_SEAL_SHRINK seal: a mapping of it would kill the process (SIGBUS) once the file shrank under it; seal it first with Memfd::add_seals(Seals::SHRINK)")]
    MissingShrinkSeal,
    /// A hugetlbfs memfd that is not write-sealed: any holder of the fd may
    /// punch a hole in it, and the fault that refills the hole dies with
    /// `SIGBUS` when the huge page pool is empty.
    #[error("the memfd is on hugetlbfs and not write-sealed: a hole punched in it can leave a page that no huge page refills (SIGBUS); seal it with Seals::WRITE or Seals::FUTURE_WRITE (read-only mappings), or map it with the unsafe Mapping::shared under its contract")]
    HugeTlb,
    /// The range is not inside the object.
    #[error("range {offset:#x}+{len:#x} is not inside the object ({size:#x} bytes)")]
    OutOfBounds {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: usize,
        /// The object's size.
        size: u64,
    },
    /// A system call failed (`mmap(2)`'s `EINVAL` for an empty or unaligned
    /// range, `EACCES` for a write mapping of a read-only fd, ...).
    #[error(transparent)]
    Os(#[from] OsError),
}

/// Checks that `offset..offset + len` lies inside an object of `size` bytes,
/// with no overflow whatever the values.
pub(crate) fn check_range(offset: u64, len: usize, size: u64) -> Result<(), MapError> {
    let inside = u64::try_from(len).ok().and_then(|len| offset.checked_add(len)).is_some_and(|end| end <= size);
    if inside {
        Ok(())
    } else {
        Err(MapError::OutOfBounds { offset, len, size })
    }
}

/// A `MAP_SHARED` mapping of a file range; unmapped on drop.
///
/// Its bytes are I/O memory (see the [module documentation](self)): every
/// access is volatile, and other threads, processes and devices may change
/// them at any time.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    access: Access,
}

// SAFETY: the Rust-visible state (`ptr`, `len`, `access`) never changes after
// construction, and the mapping may be unmapped from any thread. The mapped
// bytes are outside every Rust allocation and are only ever reached through
// volatile loads and stores (or raw pointers handed to `unsafe` callers under
// their own contracts), never through references, exactly like memory a
// device or another process shares; so moving the owner to another thread
// changes nothing about who may touch them.
unsafe impl Send for Mapping {}
// SAFETY: `&Mapping` offers reads and writes of the mapped bytes from several
// threads at once. They are volatile accesses to memory outside any Rust
// allocation (the bytes are shared with other mappings, processes and devices
// in any case, so no Rust type could make a writer exclusive): concurrent ones
// are unsynchronised, like those of a device, but not a data race on Rust
// memory. Every access is bounds-checked against the mapping, whose pages the
// safe constructors guarantee stay backed (no SIGBUS), and no reference into
// the bytes is ever created, so no `&`/`&mut` aliasing rule can be broken.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from `offset` with `MAP_SHARED`.
    ///
    /// Wraps `mmap(2)`; `munmap(2)` on drop. An empty range is refused with
    /// `EINVAL`, as are offsets that are not page multiples.
    ///
    /// The safe ways to map are [`Memfd::map`](super::memfd::Memfd::map),
    /// [`DmaBuf::map`](super::dma_buf::DmaBuf::map) and
    /// [`Device::map_region`](super::vfio::Device::map_region).
    ///
    /// # Safety
    /// For as long as the returned mapping lives, every page of
    /// `offset..offset + len` must stay backed by the object behind `fd`, so
    /// that no access faults with `SIGBUS`: the object must be at least
    /// `offset + len` bytes long now and must not shrink (as a memfd sealed
    /// with `F_SEAL_SHRINK` cannot, or a dma-buf, whose size is fixed), and it
    /// must not otherwise make faults fail (a hugetlbfs file with a hole
    /// punched in it and no free huge page, a device region whose memory
    /// decoding is switched off). This covers every holder of the fd,
    /// including other processes.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::{Access, Mapping};
    ///
    /// let m = Memfd::create(c"shared", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// // SAFETY: the memfd is 4096 bytes long and sealed against shrinking;
    /// // it is not on hugetlbfs, so its pages stay backed.
    /// let a = unsafe { Mapping::shared(m.as_fd(), 0, 4096, Access::ReadWrite) }?;
    /// // SAFETY: as above.
    /// let b = unsafe { Mapping::shared(m.as_fd(), 0, 4096, Access::Read) }?;
    /// a.write_u32(0, 0xdead_beef);
    /// assert_eq!(b.read_u32(0), 0xdead_beef);
    /// // Empty mappings are refused.
    /// // SAFETY: nothing is mapped.
    /// let empty = unsafe { Mapping::shared(m.as_fd(), 0, 0, Access::Read) };
    /// assert_eq!(empty.unwrap_err().errno, rustix::io::Errno::INVAL);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub unsafe fn shared(fd: BorrowedFd<'_>, offset: u64, len: usize, access: Access) -> OsResult<Mapping> {
        // SAFETY: forwarded to the caller.
        unsafe { Self::with_flags(fd, offset, len, access, MapFlags::SHARED) }
    }

    /// # Safety
    /// As for [`Mapping::shared`].
    unsafe fn with_flags(
        fd: BorrowedFd<'_>,
        offset: u64,
        len: usize,
        access: Access,
        flags: MapFlags,
    ) -> OsResult<Mapping> {
        if len == 0 {
            return Err(OsError::new("mmap", rustix::io::Errno::INVAL));
        }
        // That the pages stay backed is the caller's promise.
        // SAFETY: a null hint lets the kernel pick a fresh range, so no Rust object
        // is overlapped; the returned `Mapping` owns it and unmaps it once, in `Drop`.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, access.prot(), flags, fd, offset) }
            .map_err(OsError::tag("mmap"))?;
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(OsError::new("mmap", rustix::io::Errno::FAULT))?;
        Ok(Mapping { ptr, len, access })
    }

    /// First byte of the mapping.
    ///
    /// No system call: the address `mmap(2)` returned. Dereferencing it is
    /// `unsafe`: other threads, processes and devices may change the bytes at
    /// any time, so use volatile accesses and never make a reference into them.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"ptr", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(0, &[7]);
    /// let p = map.as_ptr();
    /// assert_eq!(p as usize % dmabridge::sys::page_size(), 0);
    /// // SAFETY: `p` is the first byte of a live, readable 4096-byte mapping that
    /// // outlives this read; the load is volatile, as the bytes are shared.
    /// let first = unsafe { p.read_volatile() };
    /// assert_eq!(first, 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let page = dmabridge::sys::page_size();
    /// let m = Memfd::create(c"len", 3 * page as u64)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// assert_eq!(m.map(page as u64, 2 * page, Access::Read)?.len(), 2 * page);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: empty mappings cannot be made.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"nonempty", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// assert!(!m.map(0, 4096, Access::Read)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The process addresses the mapping covers.
    ///
    /// No system call.
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"span", 8192)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 8192, Access::Read)?;
    /// assert_eq!((map.span().start(), map.span().len()), (HostAddr::of(map.as_ptr()), 8192));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn span(&self) -> Span<HostAddr> {
        Span::new(HostAddr::of(self.as_ptr()), self.len as u64).expect("a mapping lies inside the address space")
    }

    /// The access the mapping was made with.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"access", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// assert_eq!(m.map(0, 4096, Access::Read)?.access(), Access::Read);
    /// assert_eq!(m.map(0, 4096, Access::Write)?.access(), Access::Write);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn access(&self) -> Access {
        self.access
    }
}

impl Mapping {
    /// Replaces the mapped pages, in place, by private anonymous memory of
    /// the same access (`mmap(2)` with `MAP_FIXED`): the file (a VFIO BAR
    /// whose device is being removed) is no longer mapped and no longer
    /// held open, while every address of the mapping stays valid memory of
    /// this process. Accesses that race the replacement or come later read
    /// and write the anonymous pages (zero at first) instead of the device,
    /// never fault with `SIGBUS`, and never reach another object: `MAP_FIXED`
    /// swaps the range atomically, so no other mapping can take it between
    /// an unmap and a remap. Idempotent.
    ///
    /// Why not unmap: raw pointers into the mapping live on in buffers and
    /// allocations (the safe APIs reach them later); an unmapped range could
    /// be handed to the next `mmap` and written through a stale pointer.
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    /// let m = Memfd::create(c"inert", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(0, &[7]);
    /// map.make_inert()?;
    /// let mut b = [9u8];
    /// map.read_bytes(0, &mut b);
    /// assert_eq!(b, [0], "the memfd is no longer mapped");
    /// map.write_bytes(0, &[5]);
    /// let again = m.map(0, 4096, Access::Read)?;
    /// again.read_bytes(0, &mut b);
    /// assert_eq!(b, [7], "writes no longer reach the file");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn make_inert(&self) -> OsResult<()> {
        let flags = MapFlags::PRIVATE | MapFlags::FIXED;
        // No Rust reference into the bytes exists (module documentation), so changing them breaks no aliasing rule: to
        // the program the replacement is one more write by a device.
        // SAFETY: the range is exactly the one this object owns (and unmaps on drop); MAP_FIXED replaces it atomically
        // by anonymous pages of the same protection: no Rust object is overlapped, the addresses stay mapped.
        let p = unsafe { rustix::mm::mmap_anonymous(self.ptr.as_ptr().cast(), self.len, self.access.prot(), flags) }
            .map_err(OsError::tag("mmap MAP_FIXED anonymous"))?;
        debug_assert_eq!(p.cast::<u8>(), self.ptr.as_ptr());
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // The API only hands out raw pointers, whose users must not outlive the
        // mapping, so no reference into it survives the drop.
        // SAFETY: `ptr`/`len` are exactly the range this object mapped, and
        // nobody else unmaps it.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
