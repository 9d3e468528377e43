//! The CPU device's copy and fill engines.
//!
//! Copies are libc's `memcpy` (through `ptr::copy_nonoverlapping`), which is
//! what the target is measured against. Fills of a pattern other than one
//! repeated byte are where OpenCL CPU devices lose (PoCL reaches ~0.5× of
//! `memset`): small fills write a replicated block through the cache; large
//! ones stream the replicated pattern with non-temporal 16-byte stores, as
//! `memset` itself does past its cache threshold, so that the destination is
//! not first read into the cache.

/// Largest pattern: the size of the largest vector type (long16/double16).
pub const MAX_PATTERN: usize = 128;

/// Fills at or above this size use non-temporal stores.
const STREAM_THRESHOLD: usize = 1 << 20;

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
    // SAFETY: forwarded to the caller.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, size) }
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
    if pattern.iter().all(|&b| b == pattern[0]) {
        // SAFETY: `dst` is valid for `size` bytes (caller).
        unsafe { std::ptr::write_bytes(dst, pattern[0], size) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if size >= STREAM_THRESHOLD {
        // SAFETY: as above; the shape was asserted.
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
                for size in [0, p, 3 * p, 256, 4096 + p, STREAM_THRESHOLD + 5 * p] {
                    let size = size / p * p;
                    check(&pattern, offset, size);
                }
            }
        }
        check(&[7, 7, 7, 7], 4, 1000);
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
