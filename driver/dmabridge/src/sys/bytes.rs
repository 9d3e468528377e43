//! One way to reach the bytes of something the CPU can read and write at an
//! offset: a [`Mapping`](super::mmap::Mapping), a VFIO region
//! ([`Region`](super::vfio::Region)) and the BAR device's memory each
//! implement [`Bytes`], with one error type, [`BytesError`], that carries the
//! offset and length of the access that failed. rust-vmm's `vm-memory`
//! `Bytes` is the model.
//!
//! Where the bytes are I/O memory (a mapped BAR, device registers), the
//! implementations keep to volatile accesses: [`Bytes::read_obj`] and
//! [`Bytes::write_obj`] of a mapping are one aligned volatile load or store
//! (what a device register needs), the slices are volatile copies.

/// A value [`Bytes::read_obj`] and [`Bytes::write_obj`] move as one access:
/// the unsigned integers of 1, 2, 4 and 8 bytes, in the CPU's byte order.
pub trait Word: Copy + sealed::Sealed {
    /// Its size in bytes (also its alignment in a mapping).
    const SIZE: usize;
    /// The value of `bytes` (exactly `SIZE` of them) in the CPU's byte order.
    fn from_ne_slice(bytes: &[u8]) -> Self;
    /// Writes the value into `out` (exactly `SIZE` bytes) in the CPU's byte order.
    fn to_ne_slice(self, out: &mut [u8]);
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! word {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Word for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_ne_slice(bytes: &[u8]) -> Self {
                <$t>::from_ne_bytes(bytes.try_into().expect("exactly SIZE bytes"))
            }
            fn to_ne_slice(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
word!(u8, u16, u32, u64);

/// Why an access through [`Bytes`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BytesFault {
    /// The range is not inside the object.
    #[error("beyond {object} of {size:#x} bytes")]
    OutOfBounds {
        /// What was accessed ("mapping", "VFIO region 2", ...).
        object: String,
        /// Its size.
        size: u64,
    },
    /// A word access at an offset that is not a multiple of its size (a
    /// device register must be reached in one aligned access).
    #[error("unaligned register offset: a {size}-byte access needs an offset that is a multiple of {size}")]
    Unaligned {
        /// The size (and alignment) of the word.
        size: usize,
    },
    /// A write to something mapped or opened read-only.
    #[error("write to a read-only {object}: map or open it with write access")]
    ReadOnly {
        /// What was written.
        object: String,
    },
    /// The object refused the access, or the system call behind it failed.
    #[error("{0}")]
    Refused(String),
}

/// An access through [`Bytes`] that failed: where, how long, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("access {offset:#x}+{len:#x} {fault}")]
pub struct BytesError {
    /// The offset of the access.
    pub offset: u64,
    /// Its length in bytes.
    pub len: usize,
    /// Why it failed.
    pub fault: BytesFault,
}

impl BytesError {
    /// An access of `len` bytes at `offset` that failed with `fault`.
    pub fn new(offset: u64, len: usize, fault: BytesFault) -> BytesError {
        BytesError { offset, len, fault }
    }
}

/// Checks that `offset..offset + len` lies inside an object of `size` bytes
/// called `object`, with no overflow whatever the values.
pub(crate) fn check_inside(object: &dyn Fn() -> String, offset: u64, len: usize, size: u64) -> Result<(), BytesError> {
    let inside = u64::try_from(len).ok().and_then(|len| offset.checked_add(len)).is_some_and(|end| end <= size);
    if inside {
        Ok(())
    } else {
        Err(BytesError::new(offset, len, BytesFault::OutOfBounds { object: object(), size }))
    }
}

/// Bytes the CPU reaches at an offset.
///
/// Every method checks the range against the object first (without
/// overflow, whatever the offset), so a safe caller can never reach outside
/// it.
///
/// ```
/// use dmabridge::sys::bytes::{Bytes, BytesFault};
/// use dmabridge::sys::memfd::{Memfd, Seals};
/// use dmabridge::sys::mmap::Access;
///
/// let m = Memfd::create(c"bytes", 4096)?;
/// m.add_seals(Seals::SHRINK)?;
/// let map = m.map(0, 4096, Access::ReadWrite)?;
/// map.write_slice(8, b"hello")?;
/// map.write_obj(16, 0xfeed_u32)?;
/// let mut out = [0u8; 5];
/// map.read_slice(8, &mut out)?;
/// assert_eq!((&out, map.read_obj::<u32>(16)?), (b"hello", 0xfeed));
/// let err = map.read_slice(4094, &mut [0u8; 4]).unwrap_err();
/// assert_eq!((err.offset, err.len), (4094, 4));
/// assert!(matches!(err.fault, BytesFault::OutOfBounds { size: 4096, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Bytes {
    /// Fills `buf` from the bytes at `offset`.
    fn read_slice(&self, offset: u64, buf: &mut [u8]) -> Result<(), BytesError>;

    /// Writes `data` to the bytes at `offset`.
    fn write_slice(&self, offset: u64, data: &[u8]) -> Result<(), BytesError>;

    /// Reads one [`Word`] at `offset`. The default reads its bytes with
    /// [`Bytes::read_slice`]; I/O memory reads it in one access.
    fn read_obj<T: Word>(&self, offset: u64) -> Result<T, BytesError> {
        let mut b = [0u8; 8];
        self.read_slice(offset, &mut b[..T::SIZE])?;
        Ok(T::from_ne_slice(&b[..T::SIZE]))
    }

    /// Writes one [`Word`] at `offset`. The default writes its bytes with
    /// [`Bytes::write_slice`]; I/O memory writes it in one access.
    fn write_obj<T: Word>(&self, offset: u64, value: T) -> Result<(), BytesError> {
        let mut b = [0u8; 8];
        value.to_ne_slice(&mut b[..T::SIZE]);
        self.write_slice(offset, &b[..T::SIZE])
    }
}
