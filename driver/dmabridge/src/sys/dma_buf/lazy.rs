//! A mapping of a dma-buf made on first use.

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
/// [`LazyMap::ensure`] maps the dma-buf over it the first time the CPU needs
/// it. Exporters whose `mmap` sets up every page at once (the DMA-BUF heaps
/// call `remap_pfn_range` over the whole buffer) then cost nothing until
/// used. Unmapped when dropped.
#[derive(Debug)]
pub struct LazyMap {
    dma_buf: DmaBuf,
    ptr: NonNull<u8>,
    len: usize,
    access: Access,
    /// `Some(true)` once mapped; `Some(false)` while only reserved; `None`
    /// if a failed mapping lost the range, or found it taken (then it is
    /// not unmapped).
    state: Mutex<Option<bool>>,
}

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
        Ok(LazyMap { dma_buf, ptr, len, access, state: Mutex::new(Some(false)) })
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

    /// True once [`LazyMap::ensure`] mapped the dma-buf.
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
        *sync::lock(&self.state) == Some(true)
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
        let mut state = sync::lock(&self.state);
        match *state {
            Some(true) => return Ok(()),
            None => return Err(OsError::new("mmap dma-buf (its range was lost)", Errno::NOMEM)),
            Some(false) => {}
        }
        use rustix::mm::MapFlags;
        // SAFETY: MAP_FIXED replaces only our own reservation (`ptr`, `len`);
        // the dma-buf is at least `len` bytes (checked at creation) and cannot
        // shrink, so the mapping stays backed.
        let mapped = unsafe {
            rustix::mm::mmap(
                self.ptr.as_ptr().cast(),
                self.len,
                self.access.prot(),
                MapFlags::SHARED | MapFlags::FIXED,
                self.dma_buf.as_fd(),
                0,
            )
        };
        match mapped {
            Ok(_) => {
                *state = Some(true);
                Ok(())
            }
            Err(e) => {
                // A failed MAP_FIXED may have unmapped the reservation: take
                // the range back, or give it up (never unmapping what another
                // mapping may now hold).
                // SAFETY: MAP_FIXED_NOREPLACE maps only where nothing is.
                let again = unsafe {
                    rustix::mm::mmap_anonymous(
                        self.ptr.as_ptr().cast(),
                        self.len,
                        rustix::mm::ProtFlags::empty(),
                        MapFlags::PRIVATE | MapFlags::NORESERVE | MapFlags::FIXED_NOREPLACE,
                    )
                };
                match again {
                    // Reserved again: the failed mapping had dropped it.
                    Ok(_) => {}
                    // Something is mapped there (EEXIST): our reservation,
                    // kept by a kernel that undoes a failed MAP_FIXED, or —
                    // where the kernel unmaps first — another thread's
                    // mapping made meanwhile. They cannot be told apart, so
                    // the range is given up and never unmapped: at worst a
                    // reservation's address space is lost, never another's
                    // memory.
                    Err(_) => *state = None,
                }
                Err(OsError::new("mmap dma-buf", e))
            }
        }
    }
}

impl Drop for LazyMap {
    fn drop(&mut self) {
        if sync::get_mut(&mut self.state).is_some() {
            // SAFETY: our own range (reserved or mapped), unmapped once; no
            // reference into it exists (see `Send`).
            let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}
