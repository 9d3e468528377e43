//! The CPU device's copy and fill engines.
//!
//! Small copies are libc's `memcpy` (through `ptr::copy_nonoverlapping`) and
//! small fills write a replicated 256-byte block through the cache. Large
//! transfers (from [`PARALLEL_THRESHOLD`] on) are where OpenCL CPU devices
//! are judged against `memcpy`/`memset` and where one core cannot saturate
//! the memory system: they are split into parts run on a small pool of
//! helper threads (one per further core) and the calling thread. Each part
//! of a copy streams with non-temporal 16-byte stores, so that the
//! destination is not first read into the cache; each part of a fill with a
//! pattern of up to 8 bytes is one `rep stosq` of the replicated pattern
//! (the fast-string path `memset` itself takes), larger patterns stream
//! with non-temporal stores. Below the threshold nothing but the copy or the
//! fill runs: the small-command path never touches the pool. Ranges that
//! touch I/O memory (a PCI BAR mapping, registered in [`io`]) take aligned
//! volatile accesses instead: Device memory on arm64 faults on anything else.

pub mod io;
mod pool;

use crate::sys::addr::HostAddr;

/// Largest pattern: the size of the largest vector type (long16/double16).
pub const MAX_PATTERN: usize = 128;

/// Fills of patterns over 8 bytes at or above this size use non-temporal stores
/// (x86_64; elsewhere the block fill).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const STREAM_THRESHOLD: usize = 1 << 20;

/// Copies and fills at or above this size are split across the pool.
pub const PARALLEL_THRESHOLD: usize = 2 << 20;

/// Smallest part of a split transfer; parts start at multiples of it from
/// the transfer's start (so a fill's parts start in phase with the pattern).
const MIN_PART: usize = 1 << 20;

/// Part size for a split transfer of `size` bytes: about four parts per
/// thread, so that a busy core costs little, each a multiple of 4 KiB.
fn part_size(size: usize) -> usize {
    (size / (4 * pool::threads())).next_multiple_of(4096).max(MIN_PART)
}

/// True if `[a, a + size)` and `[b, b + size)` overlap.
///
/// No OpenCL function of its own: the `CL_MEM_COPY_OVERLAP` check of
/// `clEnqueueCopyBuffer`, `clEnqueueMemcpyINTEL` and `clEnqueueSVMMemcpy`.
///
/// ```
/// use dmabridge::runtime::transfer::overlaps;
/// assert!(overlaps(100, 150, 64));
/// assert!(!overlaps(100, 164, 64), "adjacent ranges do not overlap");
/// assert!(!overlaps(100, 100, 0), "empty ranges never do");
/// assert!(overlaps(usize::MAX - 8, usize::MAX - 4, 16), "no overflow at the top");
/// ```
pub fn overlaps(a: usize, b: usize, size: usize) -> bool {
    size != 0 && a < b.saturating_add(size) && b < a.saturating_add(size)
}

/// Copies `size` bytes from `src` to `dst`.
///
/// No OpenCL function of its own: the CPU device's copy engine, behind
/// `clEnqueueMemcpyINTEL`, `clEnqueueSVMMemcpy`, `clEnqueueCopyBuffer` and
/// the reads and writes of buffers.
///
/// # Safety
/// Both ranges must be valid for `size` bytes and must not overlap.
///
/// ```
/// use dmabridge::runtime::transfer;
/// let src = *b"zero-copy";
/// let mut dst = [0u8; 9];
/// // SAFETY: both arrays hold 9 bytes and are distinct.
/// unsafe { transfer::copy(dst.as_mut_ptr(), src.as_ptr(), 9) };
/// assert_eq!(&dst, b"zero-copy");
/// ```
pub unsafe fn copy(dst: *mut u8, src: *const u8, size: usize) {
    if size < PARALLEL_THRESHOLD || io::is_io(HostAddr::of(dst), size) || io::is_io(HostAddr::of(src), size) {
        // SAFETY: forwarded to the caller.
        unsafe { copy_unsplit(dst, src, size) };
        return;
    }
    let op = pool::Op::Copy { dst: dst as usize, src: src as usize };
    // SAFETY: both ranges are valid for `size` bytes and distinct (caller);
    // `run` returns only once every part is done.
    unsafe { pool::run(op, size, part_size(size)) };
}

/// [`copy`] on the calling thread alone, never split across the pool: for
/// code that already runs on several threads (the built-in kernels'
/// work-items). I/O memory takes the aligned volatile path, as in [`copy`].
///
/// # Safety
/// As [`copy`].
pub(crate) unsafe fn copy_unsplit(dst: *mut u8, src: *const u8, size: usize) {
    let (dst_io, src_io) = (io::is_io(HostAddr::of(dst), size), io::is_io(HostAddr::of(src), size));
    if dst_io || src_io {
        // SAFETY: forwarded to the caller.
        unsafe { io::copy(dst, src, size, dst_io, src_io) };
    } else {
        // SAFETY: forwarded to the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, size) };
    }
}

/// Fills `size` bytes at `dst` with `pattern` repeated.
///
/// `pattern.len()` must be a power of two up to [`MAX_PATTERN`], `dst`
/// aligned to it and `size` a multiple of it (the callers check these and
/// return `CL_INVALID_VALUE`); this function asserts them.
///
/// No OpenCL function of its own: the CPU device's fill engine, behind
/// `clEnqueueMemFillINTEL`, `clEnqueueSVMMemFill` and
/// `clEnqueueFillBuffer`.
///
/// # Safety
/// `dst` must be valid for writes of `size` bytes.
///
/// ```
/// use dmabridge::runtime::transfer;
/// let mut dst = [0u32; 64]; // 4-byte aligned
/// // SAFETY: `dst` holds 256 bytes.
/// unsafe { transfer::fill(dst.as_mut_ptr().cast(), &[1, 2, 3, 4], 256) };
/// assert!(dst.iter().all(|&w| w == u32::from_ne_bytes([1, 2, 3, 4])));
/// // SAFETY: as above; one repeated byte takes `memset`'s path.
/// unsafe { transfer::fill(dst.as_mut_ptr().cast(), &[9, 9], 8) };
/// assert_eq!(dst[..3], [0x0909_0909, 0x0909_0909, u32::from_ne_bytes([1, 2, 3, 4])]);
/// ```
pub unsafe fn fill(dst: *mut u8, pattern: &[u8], size: usize) {
    let p = pattern.len();
    assert!(p.is_power_of_two() && p <= MAX_PATTERN, "pattern size {p}");
    assert!(dst as usize % p == 0 && size % p == 0, "misaligned fill");
    if io::is_io(HostAddr::of(dst), size) {
        // SAFETY: forwarded to the caller; the shape was asserted.
        unsafe { io::fill(dst, pattern, size) };
        return;
    }
    if size >= PARALLEL_THRESHOLD {
        let mut rep = [0; MAX_PATTERN];
        rep[..p].copy_from_slice(pattern);
        let op = pool::Op::Fill { dst: dst as usize, pattern: rep, len: p };
        // SAFETY: `dst` is valid for `size` bytes (caller); every part starts
        // at a multiple of 4 KiB from `dst`, so it stays aligned to the
        // pattern and in phase; `run` returns once every part is done.
        unsafe { pool::run(op, size, part_size(size)) };
        return;
    }
    // SAFETY: forwarded to the caller; the shape was asserted.
    unsafe { fill_serial(dst, pattern, size) };
}

/// Run the part `[offset, offset + len)` of a split transfer.
///
/// # Safety
/// The ranges of `op` must be valid for `offset + len` bytes (and, for a
/// copy, distinct); for a fill, `dst + offset` aligned to the pattern and
/// `len` a multiple of it.
unsafe fn run_part(op: &pool::Op, offset: usize, len: usize) {
    match *op {
        // SAFETY: forwarded to the caller.
        pool::Op::Copy { dst, src } => unsafe {
            stream_copy((dst + offset) as *mut u8, (src + offset) as *const u8, len)
        },
        // SAFETY: forwarded to the caller.
        pool::Op::Fill { dst, ref pattern, len: p } => unsafe {
            fill_serial((dst + offset) as *mut u8, &pattern[..p], len)
        },
    }
}

/// [`fill`] on the calling thread alone.
///
/// # Safety
/// As [`fill`], whose shape checks the caller has made.
unsafe fn fill_serial(dst: *mut u8, pattern: &[u8], size: usize) {
    if pattern.iter().all(|&b| b == pattern[0]) {
        // SAFETY: `dst` is valid for `size` bytes (caller).
        unsafe { std::ptr::write_bytes(dst, pattern[0], size) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if pattern.len() <= 8 && size >= STOSQ_THRESHOLD {
        // SAFETY: as above; the shape was asserted by `fill`.
        unsafe { stosq_fill(dst, pattern, size) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if size >= STREAM_THRESHOLD {
        // SAFETY: as above; the shape was asserted by `fill`.
        unsafe { stream_fill(dst, pattern, size) };
        return;
    }
    // SAFETY: as above.
    unsafe { block_fill(dst, pattern, size) };
}

/// A 256-byte block of the pattern (256 is a multiple of every pattern
/// size), 16-byte aligned so it can also feed vector registers.
#[repr(C, align(16))]
struct Block([u8; 256]);

fn block_of(pattern: &[u8]) -> Block {
    let mut b = Block([0; 256]);
    for chunk in b.0.chunks_mut(pattern.len()) {
        chunk.copy_from_slice(pattern);
    }
    b
}

/// Writes the pattern through the cache, a 256-byte block at a time.
///
/// # Safety
/// As [`fill`].
unsafe fn block_fill(dst: *mut u8, pattern: &[u8], size: usize) {
    let block = block_of(pattern);
    let mut off = 0;
    // `size - off` rather than `off + 256`: no sum that could overflow.
    while size - off >= 256 {
        // SAFETY: `off + 256 <= size`, inside the caller's range; the block
        // is a separate local.
        unsafe { std::ptr::copy_nonoverlapping(block.0.as_ptr(), dst.add(off), 256) };
        off += 256;
    }
    // The tail is a whole number of patterns, and `off` is a multiple of 256
    // and so of the pattern size: the block's start is in phase.
    // SAFETY: `size - off < 256` bytes remain in the caller's range.
    unsafe { std::ptr::copy_nonoverlapping(block.0.as_ptr(), dst.add(off), size - off) };
}

/// Fills with patterns of up to 8 bytes at or above this size use `rep stosq`.
#[cfg(target_arch = "x86_64")]
const STOSQ_THRESHOLD: usize = 2048;

/// Writes a pattern of up to 8 bytes with `rep stosq`: the processor's
/// fast-string path, as `memset` takes for one repeated byte.
///
/// # Safety
/// As [`fill`], and `pattern.len() <= 8`, `size >= 16`.
#[cfg(target_arch = "x86_64")]
unsafe fn stosq_fill(dst: *mut u8, pattern: &[u8], size: usize) {
    let block = block_of(pattern);
    // Up to the first 8-byte boundary: a multiple of the pattern size (`dst`
    // is aligned to it), so the block's start is in phase there and after.
    let head = (8 - dst as usize % 8) % 8;
    // SAFETY: `head < 8 <= size` bytes of the caller's range; block is local.
    unsafe { std::ptr::copy_nonoverlapping(block.0.as_ptr(), dst, head) };
    let words = (size - head) / 8;
    let word = u64::from_ne_bytes(block.0[..8].try_into().expect("8 bytes"));
    // The direction flag is clear (the ABI guarantees it at every call); the
    // instruction touches no stack and no flags.
    // SAFETY: `rep stosq` writes `words` 8-byte words from `dst + head`,
    // which is 8-byte aligned, and `head + 8 * words <= size`.
    unsafe {
        std::arch::asm!(
            "rep stosq",
            inout("rdi") dst.add(head) => _,
            inout("rcx") words => _,
            in("rax") word,
            options(nostack, preserves_flags)
        );
    }
    let done = head + 8 * words;
    // SAFETY: `size - done < 8` bytes remain in the caller's range, and
    // `done` is a multiple of the pattern size, so the block is in phase.
    unsafe { std::ptr::copy_nonoverlapping(block.0.as_ptr(), dst.add(done), size - done) };
}

/// Copies with non-temporal 16-byte stores (x86_64; elsewhere `memcpy`).
///
/// # Safety
/// As [`copy`].
unsafe fn stream_copy(dst: *mut u8, src: *const u8, size: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        // Through the cache up to the destination's first 16-byte boundary.
        let head = ((16 - dst as usize % 16) % 16).min(size);
        // SAFETY: `head <= size` bytes of both ranges (caller).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
        let body = (size - head) / 64 * 64;
        // SAFETY: `dst + head` is 16-byte aligned; `head + body <= size`, so
        // every load and store is inside the caller's ranges; the loads are
        // unaligned ones; SSE2 is part of x86_64.
        unsafe {
            let mut s = src.add(head).cast::<__m128i>();
            let mut d = dst.add(head).cast::<__m128i>();
            let end = dst.add(head + body).cast::<__m128i>();
            while d < end {
                let (x0, x1) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
                let (x2, x3) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
                _mm_stream_si128(d, x0);
                _mm_stream_si128(d.add(1), x1);
                _mm_stream_si128(d.add(2), x2);
                _mm_stream_si128(d.add(3), x3);
                s = s.add(4);
                d = d.add(4);
            }
            _mm_sfence();
        }
        let done = head + body;
        // SAFETY: the last `size - done < 64` bytes of both ranges.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), size - done) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: forwarded to the caller.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, size)
    };
}

/// Streams the pattern with non-temporal 16-byte stores.
///
/// # Safety
/// As [`fill`].
#[cfg(target_arch = "x86_64")]
unsafe fn stream_fill(dst: *mut u8, pattern: &[u8], size: usize) {
    use std::arch::x86_64::{__m128i, _mm_sfence, _mm_stream_si128};
    let block = block_of(pattern);
    // Up to the first 16-byte boundary, through the cache. `dst` is aligned
    // to the pattern size, so the block's start is in phase there, and for
    // patterns of 16 bytes or more `dst` is already 16-byte aligned.
    let head = (16 - dst as usize % 16) % 16;
    let head = head.min(size);
    // SAFETY: `head <= size` bytes of the caller's range; block is local.
    unsafe { std::ptr::copy_nonoverlapping(block.0.as_ptr(), dst, head) };
    // The byte at offset `o` of the fill is `block[o % 256]`, so every
    // 128-byte stretch from the 16-byte boundary on holds
    // `block[head..head + 128]` (128 is a multiple of every pattern size):
    // keep those eight 16-byte rows in registers and stream them, 128 bytes
    // per iteration.
    let body = (size - head) / 128 * 128;
    // SAFETY: `dst + head` is 16-byte aligned and `head + body <= size`; the
    // rows are read (unaligned) from the local block, `head + 128 <= 256`;
    // SSE2 is part of x86_64, so the intrinsics are always available.
    unsafe {
        let row = |i: usize| std::ptr::read_unaligned(block.0.as_ptr().add(head + 16 * i).cast::<__m128i>());
        let (r0, r1, r2, r3, r4, r5, r6, r7) = (row(0), row(1), row(2), row(3), row(4), row(5), row(6), row(7));
        let mut q = dst.add(head).cast::<__m128i>();
        let end = dst.add(head + body).cast::<__m128i>();
        while q < end {
            _mm_stream_si128(q, r0);
            _mm_stream_si128(q.add(1), r1);
            _mm_stream_si128(q.add(2), r2);
            _mm_stream_si128(q.add(3), r3);
            _mm_stream_si128(q.add(4), r4);
            _mm_stream_si128(q.add(5), r5);
            _mm_stream_si128(q.add(6), r6);
            _mm_stream_si128(q.add(7), r7);
            q = q.add(8);
        }
        _mm_sfence();
    }
    // The tail: `block[x]` holds the right byte for any `x` congruent to the
    // offset modulo the pattern size.
    let done = head + body;
    let tail_phase = done % pattern.len();
    // SAFETY: `size - done < 128` bytes remain and `tail_phase < 128`, so
    // the block holds them in phase.
    unsafe { std::ptr::copy_nonoverlapping(block.0.as_ptr().add(tail_phase), dst.add(done), size - done) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &[u8], offset: usize, size: usize) {
        let mut buf = vec![0xeeu8; size + 512];
        let base = buf.as_mut_ptr() as usize;
        let start = (base + offset).next_multiple_of(pattern.len()) - base;
        // SAFETY: `start + size <= buf.len()` (start < 256 + 128).
        unsafe { fill(buf.as_mut_ptr().add(start), pattern, size) };
        assert!(buf[..start].iter().all(|&b| b == 0xee), "bytes before the fill changed");
        for (i, &b) in buf[start..start + size].iter().enumerate() {
            assert_eq!(
                b,
                pattern[i % pattern.len()],
                "byte {i} of a {size}-byte fill with a {}-byte pattern",
                pattern.len()
            );
        }
        assert!(buf[start + size..].iter().all(|&b| b == 0xee), "bytes after the fill changed");
    }

    #[test]
    fn every_pattern_size_at_every_phase_small_and_streamed() {
        for p in [1usize, 2, 4, 8, 16, 32, 64, 128] {
            let pattern: Vec<u8> = (0..p as u8).map(|i| i.wrapping_mul(37).wrapping_add(1)).collect();
            for offset in [0, 1, 3, 8, 17, 100] {
                for size in
                    [0, p, 3 * p, 256, 2048 + 3 * p, 4096 + p, STREAM_THRESHOLD + 5 * p, PARALLEL_THRESHOLD + 7 * p]
                {
                    let size = size / p * p;
                    check(&pattern, offset, size);
                }
            }
        }
        check(&[7, 7, 7, 7], 4, 1000);
    }

    #[test]
    fn split_fills_around_the_threshold_with_every_pattern_size() {
        for p in [1usize, 2, 4, 8, 16, 32, 64, 128] {
            let pattern: Vec<u8> = (0..p as u8).map(|i| i.wrapping_mul(91).wrapping_add(3)).collect();
            for size in [PARALLEL_THRESHOLD - p, PARALLEL_THRESHOLD, 3 * PARALLEL_THRESHOLD + 4096 + 9 * p] {
                check(&pattern, 40, size / p * p);
            }
        }
    }

    /// The destination of a big copy or fill: guard bytes of 0xee around
    /// it (at least 4 KiB before), the target itself starting `phase` (under
    /// 4096) bytes past a page boundary.
    fn guarded(size: usize, phase: usize) -> (Vec<u8>, usize) {
        assert!(phase < 4096);
        let buf = vec![0xeeu8; size + 3 * 4096];
        let start = (buf.as_ptr() as usize + 4096).next_multiple_of(4096) - buf.as_ptr() as usize + phase;
        assert!(start + size < buf.len(), "a guard byte after the target");
        (buf, start)
    }

    #[test]
    fn fill_64_mib_matches_a_reference() {
        const BIG: usize = 64 << 20;
        for pattern in [&[0x11u8, 0x22, 0x33, 0x44][..], &[0x5a], &(1..=16).collect::<Vec<u8>>()] {
            let p = pattern.len();
            let (mut buf, start) = guarded(BIG, 4 * p);
            // SAFETY: `start + BIG <= buf.len()`; `start` is aligned to `p`.
            unsafe { fill(buf.as_mut_ptr().add(start), pattern, BIG) };
            let mut reference = vec![0u8; BIG];
            for c in reference.chunks_exact_mut(p) {
                c.copy_from_slice(pattern);
            }
            assert!(buf[start..start + BIG] == reference[..], "{p}-byte pattern");
            assert!(buf[..start].iter().chain(&buf[start + BIG..]).all(|&b| b == 0xee), "outside the fill");
        }
    }

    /// Copy `size` bytes between ranges starting at the given page phases,
    /// and compare with the source; bytes around the destination unchanged.
    fn check_copy(size: usize, dst_phase: usize, src_phase: usize) {
        let (mut dst, d) = guarded(size, dst_phase);
        let (mut src, s) = guarded(size, src_phase);
        let mut x = 0x2545_f491_u32 ^ size as u32;
        for b in &mut src[s..s + size] {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        // SAFETY: both ranges are inside their own vectors.
        unsafe { copy(dst.as_mut_ptr().add(d), src.as_ptr().add(s), size) };
        assert!(dst[d..d + size] == src[s..s + size], "{size} bytes, phases {dst_phase}/{src_phase}");
        assert!(dst[..d].iter().chain(&dst[d + size..]).all(|&b| b == 0xee), "outside the copy ({size} bytes)");
    }

    #[test]
    fn copies_of_odd_sizes_and_misaligned_ranges() {
        for size in [0, 1, 15, 63, 64, 65, 4097, PARALLEL_THRESHOLD - 1, PARALLEL_THRESHOLD, PARALLEL_THRESHOLD + 1] {
            for (dp, sp) in [(0, 0), (1, 0), (0, 7), (13, 5), (4095, 1)] {
                check_copy(size, dp, sp);
            }
        }
        check_copy(3 * PARALLEL_THRESHOLD + 4096 * 5 + 77, 9, 3);
    }

    #[test]
    fn copy_64_mib_matches_its_source() {
        check_copy((64 << 20) + 3, 1, 2);
        check_copy(64 << 20, 0, 0);
    }

    #[test]
    fn concurrent_split_transfers_share_the_pool() {
        std::thread::scope(|s| {
            for k in 0..3 {
                s.spawn(move || {
                    for round in 0..3 {
                        check_copy(PARALLEL_THRESHOLD * 2 + k * 4096 + round, k, round);
                        check(&[k as u8, 1, 2, 3], k, PARALLEL_THRESHOLD * 3);
                    }
                });
            }
        });
    }

    #[test]
    fn overlap_rules() {
        assert!(overlaps(100, 150, 100));
        assert!(overlaps(150, 100, 100));
        assert!(!overlaps(100, 200, 100));
        assert!(!overlaps(200, 100, 100));
        assert!(!overlaps(100, 100, 0));
        assert!(overlaps(100, 100, 1));
    }
}
