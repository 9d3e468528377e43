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
//!   constructors over an arbitrary fd, [`Mapping::shared`] and
//!   [`Mapping::shared_populated`], are `unsafe fn`s whose contract is that
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

use std::os::fd::BorrowedFd;
use std::ptr::NonNull;

use rustix::mm::MapFlags;

pub use super::access::Access;
use super::bytes::{check_inside, Bytes, BytesError, BytesFault, Word};
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

/// Copies `len` bytes out of I/O memory at `src` into Rust memory at `dst`:
/// volatile loads, one per aligned 8-byte word of the source (bytes at the
/// unaligned ends).
///
/// # Safety
/// `src..src + len` must lie inside a live mapping whose pages stay backed,
/// and `dst` must be valid for `len` bytes of writes and not overlap it.
unsafe fn copy_from_io(src: *const u8, dst: *mut u8, len: usize) {
    let head = ((8 - src as usize % 8) % 8).min(len);
    let words = (len - head) / 8;
    // The word loads are 8-byte aligned because `src + head` is; the stores
    // into `dst` are unaligned-tolerant.
    // SAFETY: in the three loops every offset is below `len`, so each access
    // stays inside `src..src + len` and `dst..dst + len` (the caller's contract).
    unsafe {
        for i in 0..head {
            dst.add(i).write(src.add(i).read_volatile());
        }
        for w in 0..words {
            let at = head + 8 * w;
            dst.add(at).cast::<u64>().write_unaligned(src.add(at).cast::<u64>().read_volatile());
        }
        for i in head + 8 * words..len {
            dst.add(i).write(src.add(i).read_volatile());
        }
    }
}

/// Copies `len` bytes of Rust memory at `src` into I/O memory at `dst`:
/// volatile stores, one per aligned 8-byte word of the destination.
///
/// # Safety
/// `dst..dst + len` must lie inside a live, writable mapping whose pages stay
/// backed, and `src` must be valid for `len` bytes of reads.
unsafe fn copy_to_io(src: *const u8, dst: *mut u8, len: usize) {
    let head = ((8 - dst as usize % 8) % 8).min(len);
    let words = (len - head) / 8;
    // SAFETY: as in `copy_from_io`, with the roles of the two sides swapped.
    unsafe {
        for i in 0..head {
            dst.add(i).write_volatile(src.add(i).read());
        }
        for w in 0..words {
            let at = head + 8 * w;
            dst.add(at).cast::<u64>().write_volatile(src.add(at).cast::<u64>().read_unaligned());
        }
        for i in head + 8 * words..len {
            dst.add(i).write_volatile(src.add(i).read());
        }
    }
}

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

    /// Like [`Mapping::shared`], with `MAP_POPULATE`: the pages are faulted in
    /// now rather than on first touch.
    ///
    /// Wraps `mmap(2)` with `MAP_SHARED | MAP_POPULATE`; `munmap(2)` on drop.
    ///
    /// # Safety
    /// As for [`Mapping::shared`]: every mapped page must stay backed for the
    /// life of the mapping (populating now does not keep a page from being
    /// truncated away later).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::{Access, Mapping};
    ///
    /// let m = Memfd::create(c"populated", 8192)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// // SAFETY: the memfd is 8192 bytes long, sealed against shrinking and
    /// // not on hugetlbfs.
    /// let map = unsafe { Mapping::shared_populated(m.as_fd(), 0, 8192, Access::Read) }?;
    /// assert_eq!(map.len(), 8192);
    /// assert_eq!(map.read_u64(4096), 0);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub unsafe fn shared_populated(fd: BorrowedFd<'_>, offset: u64, len: usize, access: Access) -> OsResult<Mapping> {
        // SAFETY: forwarded to the caller.
        unsafe { Self::with_flags(fd, offset, len, access, MapFlags::SHARED | MapFlags::POPULATE) }
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

    /// The pointer to `offset..offset + len` of the mapping, or why not:
    /// outside it (checked without overflow, whatever the values), not
    /// aligned to `align`, or a write to a read-only mapping.
    fn at(&self, offset: u64, len: usize, align: usize, write: bool) -> Result<*mut u8, BytesError> {
        if write && !self.access.writable() {
            return Err(BytesError::new(offset, len, BytesFault::ReadOnly { object: "mapping".into() }));
        }
        check_inside(&|| "mapping".into(), offset, len, self.len as u64)?;
        if offset % align as u64 != 0 {
            return Err(BytesError::new(offset, len, BytesFault::Unaligned { size: align }));
        }
        // SAFETY: `offset + len <= self.len` (checked above), so the pointer
        // stays inside the mapping.
        Ok(unsafe { self.as_ptr().add(offset as usize) })
    }

    /// Copies bytes out of the mapping (volatile loads: one per aligned
    /// 8-byte word, bytes at unaligned ends).
    ///
    /// The panicking shorthand of [`Bytes::read_slice`], which returns the
    /// error instead.
    ///
    /// # Panics
    /// If the range is outside the mapping.
    ///
    /// No system call: a copy out of the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"read", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// m.map(0, 4096, Access::Write)?.write_bytes(100, b"abc");
    /// let mut out = [0u8; 3];
    /// m.map(0, 4096, Access::Read)?.read_bytes(100, &mut out);
    /// assert_eq!(&out, b"abc");
    /// // A range past the end panics (whatever the offset: no overflow).
    /// let map = m.map(0, 4096, Access::Read)?;
    /// assert!(std::panic::catch_unwind(|| map.read_bytes(usize::MAX, &mut [0u8; 2])).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        self.read_slice(offset as u64, out).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Copies bytes into the mapping (volatile stores: one per aligned 8-byte
    /// word, bytes at unaligned ends).
    ///
    /// Takes `&self`: the bytes are shared memory (see the
    /// [module documentation](self)), so writers on several threads are
    /// allowed, and ordering them is the caller's business.
    ///
    /// The panicking shorthand of [`Bytes::write_slice`], which returns the
    /// error instead.
    ///
    /// # Panics
    /// If the range is outside the mapping or the mapping is read-only.
    ///
    /// No system call: a copy into the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"write", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(4090, b"end");
    /// let mut out = [0u8; 3];
    /// map.read_bytes(4090, &mut out);
    /// assert_eq!(&out, b"end");
    /// // Two threads may write the same mapping (the last store wins).
    /// std::thread::scope(|s| {
    ///     s.spawn(|| map.write_bytes(0, &[1; 64]));
    ///     s.spawn(|| map.write_bytes(0, &[2; 64]));
    /// });
    /// let mut word = [0u8; 8];
    /// map.read_bytes(0, &mut word);
    /// assert!(word == [1; 8] || word == [2; 8]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_bytes(&self, offset: usize, data: &[u8]) {
        self.write_slice(offset as u64, data).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Reads a naturally aligned 32-bit device register (volatile).
    ///
    /// The panicking shorthand of [`Bytes::read_obj`], which returns the
    /// error instead.
    ///
    /// # Panics
    /// If the offset is out of range or not 4-byte aligned.
    ///
    /// No system call: a volatile load from the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"r32", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(8, &0x1234_5678u32.to_ne_bytes());
    /// assert_eq!(map.read_u32(8), 0x1234_5678);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_u32(&self, offset: usize) -> u32 {
        self.read_obj(offset as u64).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Writes a naturally aligned 32-bit device register (volatile).
    ///
    /// The panicking shorthand of [`Bytes::write_obj`], which returns the
    /// error instead.
    ///
    /// # Panics
    /// If the offset is out of range, not aligned, or the mapping is read-only.
    ///
    /// No system call: a volatile store to the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"w32", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_u32(12, 0xcafe_f00d);
    /// let mut out = [0u8; 4];
    /// map.read_bytes(12, &mut out);
    /// assert_eq!(u32::from_ne_bytes(out), 0xcafe_f00d);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_u32(&self, offset: usize, value: u32) {
        self.write_obj(offset as u64, value).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Reads a naturally aligned 64-bit device register (volatile).
    ///
    /// The panicking shorthand of [`Bytes::read_obj`], which returns the
    /// error instead.
    ///
    /// # Panics
    /// If the offset is out of range or not 8-byte aligned.
    ///
    /// No system call: a volatile load from the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"r64", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_bytes(16, &u64::MAX.to_ne_bytes());
    /// assert_eq!(map.read_u64(16), u64::MAX);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_u64(&self, offset: usize) -> u64 {
        self.read_obj(offset as u64).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Writes a naturally aligned 64-bit device register (volatile).
    ///
    /// The panicking shorthand of [`Bytes::write_obj`], which returns the
    /// error instead.
    ///
    /// # Panics
    /// If the offset is out of range, not aligned, or the mapping is read-only.
    ///
    /// No system call: a volatile store to the mapped pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    ///
    /// let m = Memfd::create(c"w64", 4096)?;
    /// m.add_seals(Seals::SHRINK)?;
    /// let map = m.map(0, 4096, Access::ReadWrite)?;
    /// map.write_u64(24, 1 << 40);
    /// assert_eq!(map.read_u64(24), 1 << 40);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_u64(&self, offset: usize, value: u64) {
        self.write_obj(offset as u64, value).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The mapping's bytes, all through volatile accesses: the slices are
/// volatile copies (one access per aligned 8-byte word, bytes at unaligned
/// ends), a word is one aligned volatile load or store (device registers
/// whose reads and writes have effects).
impl Bytes for Mapping {
    fn read_slice(&self, offset: u64, buf: &mut [u8]) -> Result<(), BytesError> {
        let src = self.at(offset, buf.len(), 1, false)?;
        // SAFETY: the range is inside the mapping (checked by `at`), which is
        // readable for every `Access` and whose pages stay backed (the
        // constructors' guarantee); `buf` is a distinct Rust buffer.
        unsafe { copy_from_io(src, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    fn write_slice(&self, offset: u64, data: &[u8]) -> Result<(), BytesError> {
        let dst = self.at(offset, data.len(), 1, true)?;
        // SAFETY: the range is inside a writable mapping (checked by `at`)
        // whose pages stay backed; `data` is a distinct Rust buffer.
        unsafe { copy_to_io(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    fn read_obj<T: Word>(&self, offset: u64) -> Result<T, BytesError> {
        let p = self.at(offset, T::SIZE, T::SIZE, false)?;
        // SAFETY: in range and aligned to the word's size (checked by `at`;
        // the mapping starts on a page); volatile because the bytes may be
        // device registers whose reads have effects.
        Ok(unsafe { p.cast::<T>().read_volatile() })
    }

    fn write_obj<T: Word>(&self, offset: u64, value: T) -> Result<(), BytesError> {
        let p = self.at(offset, T::SIZE, T::SIZE, true)?;
        // SAFETY: in range, aligned and writable (checked by `at`); volatile
        // so that the store reaches the device exactly once.
        unsafe { p.cast::<T>().write_volatile(value) };
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::memfd::{Memfd, Seals};

    fn sealed(size: u64) -> Memfd {
        let m = Memfd::create(c"mmap-test", size).unwrap();
        m.add_seals(Seals::SHRINK).unwrap();
        m
    }

    #[test]
    fn ranges_are_checked_without_overflow() {
        assert_eq!(check_range(0, 4096, 4096), Ok(()));
        assert_eq!(check_range(4096, 0, 4096), Ok(()));
        for (offset, len) in [(1, 4096), (4097, 0), (u64::MAX, 1), (1, usize::MAX), (u64::MAX, usize::MAX)] {
            assert_eq!(check_range(offset, len, 4096), Err(MapError::OutOfBounds { offset, len, size: 4096 }));
        }
    }

    #[test]
    fn accessor_bounds_panic_instead_of_overflowing() {
        let m = sealed(4096);
        let map = m.map(0, 4096, Access::ReadWrite).unwrap();
        for offset in [4096, 4100, usize::MAX - 7, usize::MAX - 3] {
            let msg = std::panic::catch_unwind(|| map.read_u32(offset)).unwrap_err();
            let msg = msg.downcast_ref::<String>().unwrap();
            assert!(msg.contains("beyond mapping"), "{msg}");
        }
        assert!(std::panic::catch_unwind(|| map.write_bytes(usize::MAX, &[1, 2])).is_err());
        assert!(std::panic::catch_unwind(|| map.read_bytes(1, &mut [0u8; 4096])).is_err());
        assert!(std::panic::catch_unwind(|| map.write_u64(usize::MAX & !7, 0)).is_err());
    }

    /// Every head/word/tail split of the volatile copies, at every alignment.
    #[test]
    fn volatile_copies_move_exactly_the_bytes_asked() {
        let m = sealed(4096);
        let map = m.map(0, 4096, Access::ReadWrite).unwrap();
        let pattern: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37).wrapping_add(1)).collect();
        for offset in 0..16 {
            for len in 0..40 {
                map.write_bytes(0, &[0u8; 128]);
                map.write_bytes(offset, &pattern[..len]);
                let mut all = [0xffu8; 128];
                map.read_bytes(0, &mut all);
                assert!(all[..offset].iter().all(|&b| b == 0), "before {offset}+{len}");
                assert_eq!(&all[offset..offset + len], &pattern[..len], "{offset}+{len}");
                assert!(all[offset + len..].iter().all(|&b| b == 0), "after {offset}+{len}");
                let mut part = vec![0u8; len];
                map.read_bytes(offset, &mut part);
                assert_eq!(part, &pattern[..len]);
            }
        }
    }

    /// `Mapping` stays `Send + Sync`: its accesses are volatile, so sharing
    /// it between threads is sound (see the `Sync` impl).
    #[test]
    fn concurrent_writers_store_whole_aligned_words() {
        fn shareable<T: Send + Sync>(_: &T) {}
        let m = sealed(4096);
        let map = m.map(0, 4096, Access::ReadWrite).unwrap();
        shareable(&map);
        std::thread::scope(|s| {
            for byte in [0x11u8, 0x22, 0x33] {
                let map = &map;
                s.spawn(move || {
                    for _ in 0..200 {
                        map.write_bytes(0, &[byte; 4096]);
                    }
                });
            }
            let map = &map;
            s.spawn(move || {
                for _ in 0..200 {
                    let mut page = [0u8; 4096];
                    map.read_bytes(0, &mut page);
                    for word in page.chunks(8) {
                        assert!(word.iter().all(|&b| b == word[0]), "a torn word: {word:?}");
                    }
                }
            });
        });
    }
}
