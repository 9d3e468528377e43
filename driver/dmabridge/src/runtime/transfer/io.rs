//! I/O memory (PCI BAR mappings) among the copy and fill engines' targets.
//!
//! A BAR mapping is not ordinary memory. On arm64 it is Device memory, where
//! every access must be aligned to its own size: `memcpy` and `memset`
//! (unaligned loads and stores, load/store pairs, `DC ZVA`) fault there with
//! SIGBUS. On x86_64 it is uncached, where the non-temporal and `rep stos`
//! paths buy nothing. The ranges registered here (by the BAR backend, for the
//! life of its mapping) are copied and filled with volatile accesses of at
//! most 8 bytes, each aligned to its size on the I/O side.
//!
//! A range may name the device whose memory it is ([`IoRange::of_device`]):
//! once that device is lost its mapping is inert anonymous memory (see
//! `backend::lost`), and a copy or fill that touches it would land there or
//! read zeros without a word, whichever device runs it. [`check_reachable`]
//! refuses such a transfer with the device's `CL_DEVICE_NOT_AVAILABLE`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::ClResult;
use crate::runtime::backend::lost::Loss;
use crate::sync;
use crate::sys::addr::{HostAddr, Span};
use crate::sys::fork;

/// How many ranges are registered: zero keeps [`is_io`] to one atomic load.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// The registered ranges.
static RANGES: RwLock<Vec<Entry>> = RwLock::new(Vec::new());

/// [`RANGES`] for reading, in a process-wide section (see `sys::fork`).
fn ranges() -> fork::Guarded<RwLockReadGuard<'static, Vec<Entry>>> {
    fork::guarded(|| sync::read(&RANGES))
}

/// [`RANGES`] for writing, in a process-wide section (see `sys::fork`).
fn ranges_mut() -> fork::Guarded<RwLockWriteGuard<'static, Vec<Entry>>> {
    fork::guarded(|| sync::write(&RANGES))
}

/// A registered range and, if it is a device's memory, that device.
struct Entry {
    span: Span<HostAddr>,
    owner: Option<(String, Arc<Loss>)>,
}

/// An address range registered as I/O memory; unregistered when dropped.
#[derive(Debug)]
pub struct IoRange {
    span: Span<HostAddr>,
}

impl IoRange {
    /// Registers `span` as I/O memory: from now on
    /// [`transfer::copy`](super::copy) and [`transfer::fill`](super::fill)
    /// reach it with aligned volatile accesses only.
    ///
    /// No OpenCL function of its own: the BAR backend registers its mapping.
    ///
    /// ```
    /// use dmabridge::runtime::transfer::io::{is_io, IoRange};
    /// use dmabridge::sys::addr::{HostAddr, Span};
    /// let r = IoRange::register(Span::new(HostAddr(0x7000_0000), 0x1000)?);
    /// assert!(is_io(HostAddr(0x7000_0800), 4));
    /// assert!(is_io(HostAddr(0x6fff_fffe), 4), "a range that touches it");
    /// assert!(!is_io(HostAddr(0x7000_1000), 4));
    /// drop(r);
    /// assert!(!is_io(HostAddr(0x7000_0800), 4));
    /// # Ok::<(), dmabridge::sys::addr::SpanOverflow>(())
    /// ```
    pub fn register(span: Span<HostAddr>) -> IoRange {
        Self::add(Entry { span, owner: None })
    }

    /// Registers `span` as I/O memory of the device `name` whose state is
    /// `loss`: once it is lost, [`check_reachable`] refuses transfers that
    /// touch the range.
    ///
    /// No OpenCL function of its own: the BAR backend registers its mapping
    /// so that a copy into its memory on another device's queue fails with
    /// `CL_DEVICE_NOT_AVAILABLE` after the function is gone.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::backend::lost::Loss;
    /// use dmabridge::runtime::transfer::io::{check_reachable, IoRange};
    /// use dmabridge::sys::addr::{HostAddr, Span};
    /// let loss = Arc::new(Loss::new()?);
    /// let r = IoRange::of_device(Span::new(HostAddr(0x7100_0000), 0x1000)?, "bar X", loss.clone());
    /// assert!(check_reachable(HostAddr(0x7100_0800), 4).is_ok());
    /// loss.mark("removed");
    /// let e = check_reachable(HostAddr(0x7100_0800), 4).unwrap_err();
    /// assert_eq!(e.code(), dmabridge::error::code::DEVICE_NOT_AVAILABLE);
    /// assert!(e.to_string().contains("bar X"), "{e}");
    /// assert!(check_reachable(HostAddr(0x7100_1000), 4).is_ok(), "beside it");
    /// drop(r);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of_device(span: Span<HostAddr>, name: &str, loss: Arc<Loss>) -> IoRange {
        Self::add(Entry { span, owner: Some((name.to_owned(), loss)) })
    }

    fn add(entry: Entry) -> IoRange {
        let span = entry.span;
        let mut ranges = ranges_mut();
        ranges.push(entry);
        COUNT.store(ranges.len(), Ordering::Release);
        IoRange { span }
    }
}

/// `CL_DEVICE_NOT_AVAILABLE` (naming the device and why) if `[p, p + size)`
/// touches the memory of a lost device ([`IoRange::of_device`]), else `Ok`.
///
/// No OpenCL function of its own: what copies (`clEnqueueMemcpyINTEL` and
/// the other copies of `backend::device_copy`) and USM fills check before
/// they touch their ranges, on any device's queue.
///
/// ```
/// use dmabridge::runtime::transfer::io::check_reachable;
/// use dmabridge::sys::addr::HostAddr;
/// let host = [0u8; 16];
/// assert!(check_reachable(HostAddr::of(host.as_ptr()), host.len()).is_ok());
/// ```
pub fn check_reachable(p: HostAddr, size: usize) -> ClResult<()> {
    if size == 0 || COUNT.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    let end = p.0.saturating_add(size);
    let ranges = ranges();
    for e in ranges.iter().filter(|e| p < e.span.end() && e.span.start().0 < end) {
        if let Some((name, loss)) = &e.owner {
            loss.check(name)?;
        }
    }
    Ok(())
}

impl Drop for IoRange {
    fn drop(&mut self) {
        let mut ranges = ranges_mut();
        if let Some(i) = ranges.iter().position(|r| r.span == self.span) {
            ranges.swap_remove(i);
        }
        COUNT.store(ranges.len(), Ordering::Release);
    }
}

/// True if `[p, p + size)` touches a registered I/O range.
///
/// No OpenCL function of its own: how the copy and fill engines pick their
/// path.
///
/// ```
/// use dmabridge::runtime::transfer::io::is_io;
/// use dmabridge::sys::addr::HostAddr;
/// let host = [0u8; 16];
/// assert!(!is_io(HostAddr::of(host.as_ptr()), host.len()));
/// ```
pub fn is_io(p: HostAddr, size: usize) -> bool {
    if size == 0 || COUNT.load(Ordering::Acquire) == 0 {
        return false;
    }
    let end = p.0.saturating_add(size);
    let ranges = ranges();
    ranges.iter().any(|e| p < e.span.end() && e.span.start().0 < end)
}

/// Copies `size` bytes from `src` to `dst`, with volatile accesses on the
/// I/O side(s) (`dst_io`, `src_io`): single bytes up to the I/O side's first
/// 8-byte boundary, then aligned 8-byte words, then single bytes. Two I/O
/// sides out of phase modulo 8 are copied byte by byte.
///
/// # Safety
/// As [`super::copy`]: both ranges valid for `size` bytes, not overlapping.
pub(super) unsafe fn copy(dst: *mut u8, src: *const u8, size: usize, dst_io: bool, src_io: bool) {
    let load = |p: *const u8| {
        // SAFETY: `p` is inside `src..src + size` (the callers below).
        unsafe {
            if src_io {
                p.read_volatile()
            } else {
                p.read()
            }
        }
    };
    let store = |p: *mut u8, b: u8| {
        // SAFETY: `p` is inside `dst..dst + size` (the callers below).
        unsafe {
            if dst_io {
                p.write_volatile(b)
            } else {
                p.write(b)
            }
        }
    };
    let out_of_phase = dst_io && src_io && (dst as usize ^ src as usize) % 8 != 0;
    let anchor = if dst_io { dst as usize } else { src as usize };
    let head = if out_of_phase { size } else { ((8 - anchor % 8) % 8).min(size) };
    let words = (size - head) / 8;
    for i in 0..head {
        // SAFETY: `i < size`.
        store(unsafe { dst.add(i) }, load(unsafe { src.add(i) }));
    }
    for w in 0..words {
        let at = head + 8 * w;
        // SAFETY: `at + 8 <= size`; on each I/O side `p + at` is 8-byte
        // aligned (`head` aligns the anchor side; two I/O sides are in phase),
        // the other side is accessed unaligned.
        unsafe {
            let s = src.add(at).cast::<u64>();
            let v = if src_io { s.read_volatile() } else { s.read_unaligned() };
            let d = dst.add(at).cast::<u64>();
            if dst_io {
                d.write_volatile(v)
            } else {
                d.write_unaligned(v)
            }
        }
    }
    for i in head + 8 * words..size {
        // SAFETY: `i < size`.
        store(unsafe { dst.add(i) }, load(unsafe { src.add(i) }));
    }
}

/// Fills `size` bytes of I/O memory at `dst` with `pattern` repeated, with
/// volatile stores: single bytes up to the first 8-byte boundary, then
/// aligned 8-byte words, then single bytes.
///
/// # Safety
/// As [`super::fill`]: `dst` valid for `size` bytes of writes, aligned to
/// `pattern.len()` (a power of two), `size` a multiple of it.
pub(super) unsafe fn fill(dst: *mut u8, pattern: &[u8], size: usize) {
    let p = pattern.len();
    let byte_at = |i: usize| pattern[i % p];
    let head = ((8 - dst as usize % 8) % 8).min(size);
    let words = (size - head) / 8;
    for i in 0..head {
        // SAFETY: `i < size`.
        unsafe { dst.add(i).write_volatile(byte_at(i)) };
    }
    for w in 0..words {
        let at = head + 8 * w;
        let mut word = [0u8; 8];
        for (k, b) in word.iter_mut().enumerate() {
            *b = byte_at(at + k);
        }
        // SAFETY: `at + 8 <= size` and `dst + at` is 8-byte aligned.
        unsafe { dst.add(at).cast::<u64>().write_volatile(u64::from_ne_bytes(word)) };
    }
    for i in head + 8 * words..size {
        // SAFETY: `i < size`.
        unsafe { dst.add(i).write_volatile(byte_at(i)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child forked while another thread held the registry takes it at
    /// once (see `sys::fork`): without the fork handler it waited forever.
    #[test]
    fn a_forked_child_takes_the_registry_another_thread_held() {
        crate::sys::forked::a_child_takes_what_another_thread_held(
            "runtime::transfer::io::tests::a_forked_child_takes_the_registry_another_thread_held",
            &[("I/O ranges for reading", || Box::new(ranges())), ("I/O ranges for writing", || Box::new(ranges_mut()))],
        );
    }

    #[test]
    fn io_copies_and_fills_match_plain_ones_at_every_phase() {
        let src: Vec<u8> = (0..64u8).collect();
        for (d_off, s_off, len) in [(0, 0, 40), (3, 0, 29), (1, 5, 33), (7, 7, 17), (2, 3, 0)] {
            for (dst_io, src_io) in [(true, false), (false, true), (true, true)] {
                let mut dst = vec![0xeeu8; 64];
                // SAFETY: both ranges lie inside their vectors and are distinct.
                unsafe { copy(dst.as_mut_ptr().add(d_off), src.as_ptr().add(s_off), len, dst_io, src_io) };
                assert_eq!(&dst[d_off..d_off + len], &src[s_off..s_off + len], "{d_off} {s_off} {len}");
                assert!(dst[..d_off].iter().chain(&dst[d_off + len..]).all(|&b| b == 0xee));
            }
        }
        for pattern in [&[9u8][..], &[1, 2], &[1, 2, 3, 4], &[1, 2, 3, 4, 5, 6, 7, 8], &[7; 16]] {
            let p = pattern.len();
            let mut dst = vec![0u64; 16];
            let base = dst.as_mut_ptr().cast::<u8>();
            // SAFETY: `p + 4 * p <= 128` bytes inside the vector, aligned to `p`.
            unsafe { fill(base.add(p), pattern, 4 * p) };
            // SAFETY: the vector's 128 bytes, read after the fill.
            let bytes = unsafe { std::slice::from_raw_parts(base, 128) };
            for i in 0..4 * p {
                assert_eq!(bytes[p + i], pattern[i % p]);
            }
            assert!(bytes[..p].iter().chain(&bytes[5 * p..]).all(|&b| b == 0));
        }
    }
}
