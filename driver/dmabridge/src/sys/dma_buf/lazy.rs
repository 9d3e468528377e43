//! A mapping of a dma-buf made on first use, a range at a time.

use std::os::fd::AsFd;
use std::ptr::NonNull;
use std::sync::Mutex;

use rustix::io::Errno;

use super::DmaBuf;
use crate::sync;
use crate::sys::mmap::{check_range, Access, MapError};
use crate::sys::{OsError, OsResult};

/// A mapping of a dma-buf made on first use: [`DmaBuf::map_lazily`] only
/// reserves the address range (no page, no page table), and
/// [`LazyMap::ensure_range`] maps the part of the dma-buf the CPU is about
/// to touch, in [`CHUNK`]s, the first time it needs them. Exporters whose
/// `mmap` sets up every page it maps at once (the DMA-BUF heaps call
/// `remap_pfn_range`) then cost nothing until used, and a first access of a
/// few bytes costs a chunk, not the whole buffer.
///
/// A chunk is mapped at its own offset in the dma-buf, which needs an
/// exporter whose `mmap` honours the offset (`vm_pgoff`). The DMA-BUF heaps
/// and udmabuf do; videobuf2's vmalloc exporter (vivid's buffers) maps the
/// buffer's start whatever the offset, so for exporters not known to honour
/// it the whole dma-buf is mapped at once, from offset 0, as before.
/// Unmapped when dropped.
#[derive(Debug)]
pub struct LazyMap {
    dma_buf: DmaBuf,
    ptr: NonNull<u8>,
    len: usize,
    access: Access,
    /// True if the exporter maps at an offset (see above): chunk by chunk.
    by_chunk: bool,
    state: Mutex<Chunks>,
}

/// How much of a dma-buf one first touch maps at least: a touched range is
/// widened to whole chunks, so that a command walking a buffer in small
/// pieces makes few `mmap` calls.
pub const CHUNK: usize = 2 << 20;

/// Which chunks of a [`LazyMap`] are mapped.
#[derive(Debug)]
struct Chunks {
    mapped: Vec<bool>,
    /// A failed mapping lost part of the range, or found it taken: nothing
    /// more is mapped, and nothing is unmapped when dropped.
    lost: bool,
}

/// Exporters whose `mmap` maps from the offset asked for (checked in their
/// 6.x sources: the heaps walk their pages from `vm_pgoff`, udmabuf's fault
/// handler reads `vmf->pgoff`).
const MAPS_AT_OFFSETS: &[&str] = &["system", "system-uncached", "udmabuf"];

// SAFETY: the address range is owned by the `LazyMap` (reserved at creation,
// unmapped once in `Drop`); the bytes are only reached through raw pointers
// by `unsafe` code under its own contract, never through references, and the
// mapping state is behind a mutex.
unsafe impl Send for LazyMap {}
// SAFETY: as for `Send`: `&LazyMap` offers `ensure` (serialised by the
// mutex) and the address, never a reference into the bytes.
unsafe impl Sync for LazyMap {}

impl DmaBuf {
    /// Reserves `len` bytes of address space for a mapping of the dma-buf
    /// from its first byte, made by [`LazyMap::ensure`] on first use. The
    /// lazy map keeps its own fd of the buffer.
    ///
    /// Errors: [`MapError::OutOfBounds`] for a `len` of 0 or past the end of
    /// the buffer; the kernel's, for the reservation (`mmap` of `PROT_NONE`
    /// anonymous memory) or if the first page cannot be mapped (probed now,
    /// so that an exporter without `mmap` is refused up front).
    ///
    /// Wraps `mmap(2)` (a `PROT_NONE` reservation).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    ///
    /// // A dma-buf of memfd pages through udmabuf, where this machine has it.
    /// let memfd = Memfd::create(c"frame", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// memfd.map(0, 8192, Access::Write)?.write_bytes(4096, b"late");
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let lazy = buf.map_lazily(8192, Access::Read)?;
    /// assert!(!lazy.is_mapped());
    /// lazy.ensure()?;
    /// let mut out = [0u8; 4];
    /// // SAFETY: mapped, 8192 bytes; read into `out`, which nothing else uses.
    /// unsafe { std::ptr::copy_nonoverlapping(lazy.as_ptr().add(4096), out.as_mut_ptr(), 4) };
    /// assert_eq!(&out, b"late");
    /// assert!(buf.map_lazily(8193, Access::Read).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map_lazily(&self, len: usize, access: Access) -> Result<LazyMap, MapError> {
        let size = self.size()?;
        if len == 0 {
            return Err(MapError::OutOfBounds { offset: 0, len, size });
        }
        check_range(0, len, size)?;
        // The exporter must map at all: probe one page now.
        drop(self.map_range(0, len.min(crate::sys::page_size()), access)?);
        let dma_buf = self.try_clone()?;
        // SAFETY: a null hint lets the kernel pick a fresh range, so nothing
        // is overlapped; the reservation holds no memory and is owned by the
        // `LazyMap`, which unmaps it once.
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::empty(),
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
            )
        }
        .map_err(OsError::tag("mmap reservation"))?;
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(OsError::new("mmap reservation", Errno::FAULT))?;
        let by_chunk = self.exporter().is_some_and(|e| MAPS_AT_OFFSETS.contains(&e.as_str()));
        let chunks = Chunks { mapped: vec![false; len.div_ceil(CHUNK)], lost: false };
        Ok(LazyMap { dma_buf, ptr, len, access, by_chunk, state: Mutex::new(chunks) })
    }
}

impl LazyMap {
    /// The address of the dma-buf's first byte once mapped (the range is
    /// reserved, and faults, before [`LazyMap::ensure`]).
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert_eq!(lazy.as_ptr() as usize % 4096, 0);
    /// assert_eq!(lazy.len(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The dma-buf it maps (its own fd of it).
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert!(lazy.dma_buf().same_buffer(&buf)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dma_buf(&self) -> &DmaBuf {
        &self.dma_buf
    }

    /// Its length in bytes.
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert_eq!(lazy.len(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True once the whole dma-buf is mapped ([`LazyMap::ensure`], or every
    /// chunk by [`LazyMap::ensure_range`]).
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// assert!(!lazy.is_mapped());
    /// lazy.ensure()?;
    /// assert!(lazy.is_mapped());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_mapped(&self) -> bool {
        let st = sync::lock(&self.state);
        !st.lost && st.mapped.iter().all(|m| *m)
    }

    /// The bytes of the dma-buf mapped so far (whole chunks; the last may
    /// be shorter).
    ///
    /// No system call.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// use dmabridge::sys::dma_buf::CHUNK;
    /// # let memfd = Memfd::create(c"frame", 3 * CHUNK as u64)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 3 * CHUNK as u64)?;
    /// let lazy = buf.map_lazily(3 * CHUNK, Access::ReadWrite)?;
    /// lazy.ensure_range(CHUNK + 5, 16)?; // udmabuf maps at offsets: one chunk
    /// assert_eq!(lazy.mapped_bytes(), CHUNK);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mapped_bytes(&self) -> usize {
        let st = sync::lock(&self.state);
        st.mapped.iter().enumerate().filter(|(_, m)| **m).map(|(i, _)| self.chunk_span(i, i + 1).1).sum()
    }

    /// Offset and length of chunks `[first, end)`.
    fn chunk_span(&self, first: usize, end: usize) -> (usize, usize) {
        let start = first * CHUNK;
        (start, (end * CHUNK).min(self.len) - start)
    }

    /// Maps the dma-buf over the reserved range if it is not yet mapped.
    /// Several threads may call it: one maps, the others wait.
    ///
    /// Wraps `mmap(2)` with `MAP_SHARED | MAP_FIXED` over the reservation.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 4096)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 4096)?;
    /// let lazy = buf.map_lazily(4096, Access::ReadWrite)?;
    /// lazy.ensure()?;
    /// lazy.ensure()?; // once mapped, nothing more to do
    /// // SAFETY: mapped for reading and writing, 4096 bytes, not shared with Rust references.
    /// unsafe { lazy.as_ptr().write_volatile(7) };
    /// assert_eq!(memfd.map(0, 4096, Access::Read)?.read_u32(0) & 0xff, 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ensure(&self) -> OsResult<()> {
        self.ensure_range(0, self.len)
    }

    /// Maps the chunks of the dma-buf that hold `[offset, offset + len)`
    /// (clamped to the mapping; at least the chunk at `offset`) if they are
    /// not mapped yet — the whole dma-buf for an exporter that cannot map at
    /// an offset (see [`LazyMap`]). Several threads may call it: one maps,
    /// the others wait.
    ///
    /// Wraps `mmap(2)` with `MAP_SHARED | MAP_FIXED` over the reservation,
    /// once per run of unmapped chunks.
    ///
    /// ```
    /// # use std::os::fd::AsFd;
    /// # use dmabridge::sys::memfd::{Memfd, Seals};
    /// # use dmabridge::sys::mmap::Access;
    /// # use dmabridge::sys::udmabuf::Udmabuf;
    /// # let memfd = Memfd::create(c"frame", 8192)?;
    /// # memfd.add_seals(Seals::SHRINK)?;
    /// # let Ok(udmabuf) = Udmabuf::open() else { return Ok(()) };
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// let lazy = buf.map_lazily(8192, Access::ReadWrite)?;
    /// lazy.ensure_range(4096, 4)?;
    /// // SAFETY: the chunk holding byte 4096 is mapped for writing; no Rust reference to it.
    /// unsafe { lazy.as_ptr().add(4096).write_volatile(9) };
    /// assert_eq!(memfd.map(0, 8192, Access::Read)?.read_u32(4096) & 0xff, 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ensure_range(&self, offset: usize, len: usize) -> OsResult<()> {
        let mut state = sync::lock(&self.state);
        if state.lost {
            return Err(OsError::new("mmap dma-buf (its range was lost)", Errno::NOMEM));
        }
        let n = state.mapped.len();
        let (first, end) = if self.by_chunk {
            let first = (offset / CHUNK).min(n - 1);
            let last = offset.saturating_add(len.max(1) - 1).min(self.len - 1) / CHUNK;
            (first, last.max(first) + 1)
        } else {
            (0, n)
        };
        let mut i = first;
        while i < end {
            if state.mapped[i] {
                i += 1;
                continue;
            }
            let mut j = i;
            while j < end && !state.mapped[j] {
                j += 1;
            }
            if let Err(e) = self.map_chunks(i, j) {
                state.lost |= e.1;
                return Err(e.0);
            }
            state.mapped[i..j].iter_mut().for_each(|m| *m = true);
            i = j;
        }
        Ok(())
    }

    /// Maps chunks `[first, end)` over their reservation. On failure, the
    /// error and whether the range was lost (see `Chunks::lost`).
    fn map_chunks(&self, first: usize, end: usize) -> Result<(), (OsError, bool)> {
        use rustix::mm::MapFlags;
        let (offset, len) = self.chunk_span(first, end);
        // In the reservation: `offset + len <= self.len`.
        let at = self.ptr.as_ptr().wrapping_add(offset);
        // The dma-buf is at least `self.len` bytes (checked at creation) and
        // cannot shrink, so the mapping stays backed.
        // SAFETY: MAP_FIXED replaces only our own reservation (`at`, `len`
        // lie inside `ptr`, `self.len`; these chunks are not mapped yet).
        let mapped = unsafe {
            rustix::mm::mmap(
                at.cast(),
                len,
                self.access.prot(),
                MapFlags::SHARED | MapFlags::FIXED,
                self.dma_buf.as_fd(),
                offset as u64,
            )
        };
        match mapped {
            Ok(_) => Ok(()),
            Err(e) => {
                // A failed MAP_FIXED may have unmapped the reservation: take
                // the range back, or give it up (never unmapping what another
                // mapping may now hold).
                // SAFETY: MAP_FIXED_NOREPLACE maps only where nothing is.
                let again = unsafe {
                    rustix::mm::mmap_anonymous(
                        at.cast(),
                        len,
                        rustix::mm::ProtFlags::empty(),
                        MapFlags::PRIVATE | MapFlags::NORESERVE | MapFlags::FIXED_NOREPLACE,
                    )
                };
                // Reserved again: the failed mapping had dropped it. Or
                // something is mapped there (EEXIST): our reservation, kept
                // by a kernel that undoes a failed MAP_FIXED, or — where the
                // kernel unmaps first — another thread's mapping made
                // meanwhile. They cannot be told apart, so the range is
                // given up and never unmapped: at worst a reservation's
                // address space is lost, never another's memory.
                let lost = again.is_err();
                Err((OsError::new("mmap dma-buf", e), lost))
            }
        }
    }
}

impl Drop for LazyMap {
    fn drop(&mut self) {
        if !sync::get_mut(&mut self.state).lost {
            // SAFETY: our own range (reserved or mapped), unmapped once; no
            // reference into it exists (see `Send`).
            let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}
