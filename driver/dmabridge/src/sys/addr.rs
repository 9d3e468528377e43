//! The three address spaces dmabridge deals in, each its own type, and the
//! checked span of one of them.
//!
//! A process address ([`HostAddr`]), an address in a device's IOMMU domain
//! ([`Iova`]) and an address on the PCI bus ([`BusAddr`]) are all plain
//! integers to the kernel, and mixing them up compiles silently when they are
//! `usize`/`u64` side by side: `VFIO_IOMMU_MAP_DMA` takes a process address
//! and an IOVA of the same width. As rust-vmm's `GuestAddress` does for guest
//! physical addresses, each space gets a newtype with the arithmetic its users
//! need (`checked_add`, `offset_from`, alignment), and a [`Span`] of one space
//! is a start and a length whose end cannot overflow, instead of a `(u64, u64)`
//! tuple that meant an inclusive `(start, end)` in one module and
//! `(start, len)` in the next.
//!
//! No system call anywhere here.

use std::fmt;

/// What a [`Span`] needs of an address: its number, and a way back.
pub trait Address: Copy + Ord + fmt::Debug {
    /// The address as a number.
    fn raw(self) -> u64;
    /// The address `raw`, or `None` if it does not fit the space (a process
    /// address wider than `usize`).
    fn from_raw(raw: u64) -> Option<Self>;
}

macro_rules! address {
    ($(#[$doc:meta])* $name:ident($raw:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(pub $raw);

        impl $name {
            /// The address as a number.
            pub const fn raw(self) -> $raw {
                self.0
            }

            /// `self + offset`, or `None` past the end of the space.
            pub fn checked_add(self, offset: $raw) -> Option<Self> {
                self.0.checked_add(offset).map(Self)
            }

            /// The distance from `base` up to `self`, or `None` if `self` is
            /// below `base`.
            pub fn offset_from(self, base: Self) -> Option<$raw> {
                self.0.checked_sub(base.0)
            }

            /// True if the address is a multiple of `align` (a power of two).
            pub fn is_aligned(self, align: $raw) -> bool {
                self.0 & (align - 1) == 0
            }
        }

        /// `address + offset`; like integer `+`, it panics on overflow in
        /// debug builds (use [`checked_add`](Self::checked_add) where the
        /// offset is not known to stay inside a checked span).
        impl std::ops::Add<$raw> for $name {
            type Output = $name;
            fn add(self, offset: $raw) -> $name {
                $name(self.0 + offset)
            }
        }

        impl std::ops::AddAssign<$raw> for $name {
            fn add_assign(&mut self, offset: $raw) {
                self.0 += offset;
            }
        }

        /// `end - start`: the distance between two addresses of the space;
        /// like integer `-`, it panics in debug builds if `start > end` (use
        /// [`offset_from`](Self::offset_from) where that may be).
        impl std::ops::Sub for $name {
            type Output = $raw;
            fn sub(self, base: $name) -> $raw {
                self.0 - base.0
            }
        }

        impl Address for $name {
            fn raw(self) -> u64 {
                self.0 as u64
            }

            fn from_raw(raw: u64) -> Option<Self> {
                <$raw>::try_from(raw).ok().map(Self)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }

        /// In hex, like `{:#x}` of the number (`0x1000`).
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x}", self.0)
            }
        }

        impl fmt::LowerHex for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::LowerHex::fmt(&self.0, f)
            }
        }
    };
}

address! {
    /// An I/O virtual address: where a device behind an IOMMU reaches memory
    /// that a VFIO container mapped for it.
    ///
    /// ```
    /// use dmabridge::sys::addr::Iova;
    /// let iova = Iova(0x10_0000);
    /// assert_eq!(iova.checked_add(0x1000), Some(Iova(0x10_1000)));
    /// assert_eq!(Iova(u64::MAX).checked_add(1), None);
    /// assert_eq!(Iova(0x10_1000).offset_from(iova), Some(0x1000));
    /// assert_eq!(iova + 0x1000 - iova, 0x1000);
    /// assert_eq!(format!("{iova}"), "0x100000");
    /// ```
    Iova(u64)
}

address! {
    /// An address on the PCI bus, as `cl_amd_bus_addressable_memory` hands
    /// them out and takes them back (a resident buffer's IOVA, or memory of
    /// another function's BAR as sysfs lists its bus ranges).
    ///
    /// ```
    /// use dmabridge::sys::addr::BusAddr;
    /// assert!(BusAddr(0xfe00_0000).is_aligned(4096));
    /// assert_eq!(BusAddr(0xfe00_1000).offset_from(BusAddr(0xfe00_0000)), Some(0x1000));
    /// ```
    BusAddr(u64)
}

address! {
    /// An address in this process (what a pointer holds), kept as a number
    /// where it is bookkeeping, not something to dereference.
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// let data = [0u8; 16];
    /// let a = HostAddr::of(data.as_ptr());
    /// assert_eq!((a + 4).as_ptr(), data.as_ptr().wrapping_add(4) as *mut u8);
    /// ```
    HostAddr(usize)
}

/// The bus address a device behind the IOMMU puts out for `iova`: to the
/// devices of a domain, an IOVA is where memory sits on their bus (what
/// `clEnqueueMakeBuffersResidentAMD` reports).
impl From<Iova> for BusAddr {
    fn from(iova: Iova) -> BusAddr {
        BusAddr(iova.0)
    }
}

impl HostAddr {
    /// The address `ptr` holds.
    pub fn of<T>(ptr: *const T) -> HostAddr {
        HostAddr(ptr as usize)
    }

    /// The address as a pointer (dereferencing it is the caller's business,
    /// under the contract of whatever handed the address out).
    pub fn as_ptr(self) -> *mut u8 {
        self.0 as *mut u8
    }
}

/// Why a [`Span`] could not be made: its end is past the end of the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the span {start:#x}+{len:#x} runs past the end of the address space")]
pub struct SpanOverflow {
    /// The start asked for.
    pub start: u64,
    /// The length asked for.
    pub len: u64,
}

/// `len` bytes from `start`, in one address space; `start + len` is
/// representable (checked when the span is made), so [`Span::end`] cannot
/// overflow. An empty span is allowed (it contains and overlaps nothing).
///
/// Ranges the kernel reports with an inclusive last address (VFIO's usable
/// IOVA ranges, which may end at the very top of the space) are
/// `RangeInclusive`s of the address type instead.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span<A> {
    start: A,
    len: u64,
}

impl<A: Address> Span<A> {
    /// `[start, start + len)`, or [`SpanOverflow`] if its end does not fit
    /// the space.
    ///
    /// ```
    /// use dmabridge::sys::addr::{Iova, Span};
    /// let s = Span::new(Iova(0x1000), 0x2000)?;
    /// assert_eq!((s.start(), s.len(), s.end()), (Iova(0x1000), 0x2000, Iova(0x3000)));
    /// assert!(Span::new(Iova(u64::MAX), 2).is_err());
    /// # Ok::<(), dmabridge::sys::addr::SpanOverflow>(())
    /// ```
    pub fn new(start: A, len: u64) -> Result<Span<A>, SpanOverflow> {
        let overflow = SpanOverflow { start: start.raw(), len };
        start.raw().checked_add(len).and_then(A::from_raw).ok_or(overflow)?;
        Ok(Span { start, len })
    }

    /// The first address.
    pub fn start(&self) -> A {
        self.start
    }

    /// The length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a span of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first address past the span.
    pub fn end(&self) -> A {
        A::from_raw(self.start.raw() + self.len).expect("checked when the span was made")
    }

    /// The last address inside the span; `None` for an empty span.
    pub fn last(&self) -> Option<A> {
        let len = self.len.checked_sub(1)?;
        A::from_raw(self.start.raw() + len)
    }

    /// True if `addr` is inside the span.
    ///
    /// ```
    /// use dmabridge::sys::addr::{BusAddr, Span};
    /// let s = Span::new(BusAddr(0x1000), 0x1000)?;
    /// assert!(s.contains(BusAddr(0x1fff)));
    /// assert!(!s.contains(BusAddr(0x2000)));
    /// # Ok::<(), dmabridge::sys::addr::SpanOverflow>(())
    /// ```
    pub fn contains(&self, addr: A) -> bool {
        addr >= self.start && addr.raw() - self.start.raw() < self.len
    }

    /// True if every byte of `other` is inside this span (an empty `other`
    /// is inside if its start is inside or at the end).
    pub fn covers(&self, other: &Span<A>) -> bool {
        other.start >= self.start && other.end().raw() <= self.end().raw()
    }

    /// True if the two spans share at least one byte.
    ///
    /// ```
    /// use dmabridge::sys::addr::{Iova, Span};
    /// let a = Span::new(Iova(0x1000), 0x1000)?;
    /// assert!(a.overlaps(&Span::new(Iova(0x1fff), 1)?));
    /// assert!(!a.overlaps(&Span::new(Iova(0x2000), 0x1000)?));
    /// assert!(!a.overlaps(&Span::new(Iova(0x1800), 0)?), "an empty span overlaps nothing");
    /// # Ok::<(), dmabridge::sys::addr::SpanOverflow>(())
    /// ```
    pub fn overlaps(&self, other: &Span<A>) -> bool {
        !self.is_empty()
            && !other.is_empty()
            && self.start.raw() < other.end().raw()
            && other.start.raw() < self.end().raw()
    }
}

impl<A: Address> fmt::Debug for Span<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}+{:#x}", self.start, self.len)
    }
}

/// `start..end` in hex (`0x1000..0x3000`).
impl<A: Address> fmt::Display for Span<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}..{:#x}", self.start.raw(), self.end().raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_refuse_ends_past_the_space() {
        assert!(Span::new(Iova(u64::MAX), 0).is_ok());
        assert_eq!(Span::new(Iova(u64::MAX), 1), Err(SpanOverflow { start: u64::MAX, len: 1 }));
        assert!(Span::new(Iova(1), u64::MAX).is_err());
        assert!(Span::new(HostAddr(usize::MAX - 1), 1).is_ok());
        assert!(Span::new(HostAddr(usize::MAX), 1).is_err());
    }

    #[test]
    fn contains_and_overlaps_at_the_edges() {
        let s = Span::new(Iova(0x1000), 0x1000).unwrap();
        assert!(!s.contains(Iova(0xfff)));
        assert!(s.contains(Iova(0x1000)));
        assert!(!s.contains(Iova(0x2000)));
        assert!(!Span::new(Iova(0x1000), 0).unwrap().contains(Iova(0x1000)));
        let top = Span::new(Iova(u64::MAX - 0x1000), 0x1000).unwrap();
        assert!(top.contains(Iova(u64::MAX - 1)));
        assert_eq!(top.end(), Iova(u64::MAX));
        assert!(!s.overlaps(&top));
        assert!(s.covers(&Span::new(Iova(0x1800), 0x800).unwrap()));
        assert!(!s.covers(&Span::new(Iova(0x1800), 0x801).unwrap()));
    }
}
