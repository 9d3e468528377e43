//! The CPU's accesses to a mapping: bounds-checked volatile copies and
//! aligned word loads and stores (the bytes are treated as I/O memory; see
//! the module docs for why).

use super::Mapping;
use crate::sys::bytes::{check_inside, Bytes, BytesError, BytesFault, Word};

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
    /// [module documentation](super)), so writers on several threads are
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
