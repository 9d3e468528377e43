//! One line of YUYV (BT.601 limited range) to 4-byte pixels, fast: the
//! inner loop of the `yuyv_to_rgba*` and `yuyv_to_bgrx_strided` built-ins.
//!
//! The bytes are exactly those of [`yuv_to_rgb`](super::yuv_to_rgb) (the
//! reference: 8-bit fixed point in `i32`), computed in 16-bit lanes. With
//! `yy = y - 16`, `d = u - 128`, `e = v - 128`, each channel's
//! `(298*yy + k + 128) >> 8` splits off its multiples of 256 exactly
//! (`floor((256*a + t) / 256) = a + floor(t / 256)`):
//!
//! ```text
//! R = yy + e    + ((42*yy + 153*e         + 128) >> 8)   298 = 256 + 42, 409 = 256 + 153
//! G = yy - e    + ((42*yy +  48*e - 100*d + 128) >> 8)   -208 = -256 + 48
//! B = yy + 2*d  + ((42*yy +   4*d         + 128) >> 8)   516 = 512 + 4
//! ```
//!
//! and every term and partial sum stays within `i16` (the largest,
//! `42*239 + 153*127 + 128 = 29597`), then a saturating pack is the clamp
//! to 0..=255. So eight pixels are one SSE2 vector of `i16`.
//!
//! On x86_64 (SSE2 is part of the baseline: no detection needed) 8 pairs
//! (16 pixels) go through SSE2 intrinsics at a time: 0.73 ms per 1080p
//! frame on this project's host, against 2.1 ms for the portable loop below
//! and 1.0 ms for that loop compiled for AVX2, 16-32 ms for the former
//! per-pixel loop in `i32` (docs/BENCHMARKS.md, `gst`). Elsewhere the portable
//! loop, written in fixed chunks of 16 pairs that the compiler vectorises
//! (NEON on aarch64, where `ld4`/`st4` de- and re-interleave). The pairs left
//! over, and an odd last pixel, take the reference.

use super::builtin::yuv_to_rgb;

/// The byte order of a converted pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// R, G, B, 255.
    Rgba,
    /// B, G, R, 255 (the X byte written as 255 too, so the image is also valid BGRA).
    Bgrx,
}

impl Order {
    fn pixel(self, [r, g, b]: [u8; 3]) -> [u8; 4] {
        match self {
            Order::Rgba => [r, g, b, 255],
            Order::Bgrx => [b, g, r, 255],
        }
    }
}

/// One line: `s` holds the YUYV pairs, `d` the 4-byte pixels (an odd last
/// pixel takes the first half of its pair). Converts as many pixels as
/// both hold.
pub(crate) fn convert_line(s: &[u8], d: &mut [u8], order: Order) {
    #[cfg(target_arch = "x86_64")]
    let done = sse2::convert(s, d, order);
    #[cfg(not(target_arch = "x86_64"))]
    let done = portable(s, d, order);
    reference(&s[4 * done..], &mut d[8 * done..], order);
}

/// The reference conversion, pair by pair.
fn reference(s: &[u8], d: &mut [u8], order: Order) {
    for (pair, out) in s.chunks_exact(4).zip(d.chunks_mut(8)) {
        let [y0, u, y1, v] = [pair[0], pair[1], pair[2], pair[3]];
        for (y, px) in [y0, y1].into_iter().zip(out.chunks_exact_mut(4)) {
            px.copy_from_slice(&order.pixel(yuv_to_rgb(y, u, v)));
        }
    }
}

/// Pairs per chunk of [`portable`].
const PAIRS: usize = 16;

/// The whole chunks of [`PAIRS`] pairs that fit both `s` and `d`, in the
/// 16-bit form (see the module); how many pairs it converted.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable(s: &[u8], d: &mut [u8], order: Order) -> usize {
    let chunks = (s.len() / 4).min(d.len() / 8) / PAIRS;
    let (s, d) = (&s[..chunks * 4 * PAIRS], &mut d[..chunks * 8 * PAIRS]);
    for (sc, dc) in s.chunks_exact(4 * PAIRS).zip(d.chunks_exact_mut(8 * PAIRS)) {
        let (mut y, mut u, mut v) = ([0i16; 2 * PAIRS], [0i16; 2 * PAIRS], [0i16; 2 * PAIRS]);
        for p in 0..PAIRS {
            let q = &sc[4 * p..4 * p + 4];
            y[2 * p] = q[0] as i16 - 16;
            y[2 * p + 1] = q[2] as i16 - 16;
            u[2 * p] = q[1] as i16 - 128;
            u[2 * p + 1] = q[1] as i16 - 128;
            v[2 * p] = q[3] as i16 - 128;
            v[2 * p + 1] = q[3] as i16 - 128;
        }
        let clamp = |x: i16| x.clamp(0, 255) as u8;
        for (i, px) in dc.chunks_exact_mut(4).enumerate() {
            let (yy, d, e) = (y[i], u[i], v[i]);
            let t = 42 * yy + 128;
            let r = clamp(yy + e + ((t + 153 * e) >> 8));
            let g = clamp(yy - e + ((t + 48 * e - 100 * d) >> 8));
            let b = clamp(yy + 2 * d + ((t + 4 * d) >> 8));
            px.copy_from_slice(&order.pixel([r, g, b]));
        }
    }
    chunks * PAIRS
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::Order;
    use std::arch::x86_64::*;

    /// The whole blocks of 8 pairs that fit both `s` and `d`; how many
    /// pairs it converted.
    pub(super) fn convert(s: &[u8], d: &mut [u8], order: Order) -> usize {
        let blocks = (s.len() / 32).min(d.len() / 64);
        for i in 0..blocks {
            // SAFETY: block `i` reads s[32i..32i + 32] and writes
            // d[64i..64i + 64], inside both slices (`blocks` fits both);
            // unaligned loads and stores; SSE2 is in every x86_64's baseline.
            unsafe { block(s.as_ptr().add(32 * i), d.as_mut_ptr().add(64 * i), order) };
        }
        blocks * 8
    }

    /// R, G and B of the 8 pixels of one 16-byte vector of 4 pairs, as i16.
    ///
    /// # Safety
    /// SSE2 (always there on x86_64).
    #[inline(always)]
    unsafe fn channels(a: __m128i) -> [__m128i; 3] {
        // SAFETY: register arithmetic only.
        unsafe {
            let y = _mm_sub_epi16(_mm_and_si128(a, _mm_set1_epi16(0xff)), _mm_set1_epi16(16));
            // Lanes u0 v0 u1 v1 ..., each chroma sample then repeated for its two pixels.
            let c = _mm_sub_epi16(_mm_srli_epi16(a, 8), _mm_set1_epi16(128));
            let u = _mm_shufflehi_epi16(_mm_shufflelo_epi16(c, 0b10_10_00_00), 0b10_10_00_00);
            let v = _mm_shufflehi_epi16(_mm_shufflelo_epi16(c, 0b11_11_01_01), 0b11_11_01_01);
            let t = _mm_add_epi16(_mm_mullo_epi16(y, _mm_set1_epi16(42)), _mm_set1_epi16(128));
            let rt = _mm_add_epi16(t, _mm_mullo_epi16(v, _mm_set1_epi16(153)));
            let gt = _mm_sub_epi16(
                _mm_add_epi16(t, _mm_mullo_epi16(v, _mm_set1_epi16(48))),
                _mm_mullo_epi16(u, _mm_set1_epi16(100)),
            );
            let bt = _mm_add_epi16(t, _mm_slli_epi16(u, 2));
            [
                _mm_add_epi16(_mm_add_epi16(y, v), _mm_srai_epi16(rt, 8)),
                _mm_add_epi16(_mm_sub_epi16(y, v), _mm_srai_epi16(gt, 8)),
                _mm_add_epi16(_mm_add_epi16(y, _mm_add_epi16(u, u)), _mm_srai_epi16(bt, 8)),
            ]
        }
    }

    /// 8 pairs from `s` (32 bytes) to 16 pixels at `d` (64 bytes).
    ///
    /// # Safety
    /// `s` readable for 32 bytes, `d` writable for 64; SSE2.
    #[inline(always)]
    unsafe fn block(s: *const u8, d: *mut u8, order: Order) {
        // SAFETY: the caller's bounds; unaligned loads and stores.
        unsafe {
            let lo = channels(_mm_loadu_si128(s.cast()));
            let hi = channels(_mm_loadu_si128(s.add(16).cast()));
            // The saturating pack is the clamp to 0..=255.
            let [r, g, b] = [0, 1, 2].map(|c| _mm_packus_epi16(lo[c], hi[c]));
            let (first, third) = match order {
                Order::Rgba => (r, b),
                Order::Bgrx => (b, r),
            };
            let ff = _mm_set1_epi8(-1);
            let (xg_lo, xg_hi) = (_mm_unpacklo_epi8(first, g), _mm_unpackhi_epi8(first, g));
            let (za_lo, za_hi) = (_mm_unpacklo_epi8(third, ff), _mm_unpackhi_epi8(third, ff));
            let d = d.cast::<__m128i>();
            _mm_storeu_si128(d, _mm_unpacklo_epi16(xg_lo, za_lo));
            _mm_storeu_si128(d.add(1), _mm_unpackhi_epi16(xg_lo, za_lo));
            _mm_storeu_si128(d.add(2), _mm_unpacklo_epi16(xg_hi, za_hi));
            _mm_storeu_si128(d.add(3), _mm_unpackhi_epi16(xg_hi, za_hi));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of 129 pairs (every `y` at both positions of a pair, an odd
    /// width of 257 pixels) for `u` and `v` across their range, extremes
    /// included: every path gives the reference's bytes, in both orders.
    #[test]
    fn every_path_gives_the_reference_bytes() {
        let samples: Vec<u8> = (0..=255u8).step_by(7).chain([1, 127, 128, 129, 254, 255]).collect();
        let mut line = vec![0u8; 129 * 4];
        for &u in &samples {
            for &v in &samples {
                for (p, q) in line.chunks_exact_mut(4).enumerate() {
                    q.copy_from_slice(&[(2 * p) as u8, u, (2 * p + 1) as u8, v]);
                }
                for order in [Order::Rgba, Order::Bgrx] {
                    let mut want = vec![0u8; 257 * 4];
                    reference(&line, &mut want, order);
                    let mut fast = vec![0u8; 257 * 4];
                    convert_line(&line, &mut fast, order);
                    assert!(fast == want, "u {u} v {v} {order:?}");
                    let mut port = vec![0u8; 257 * 4];
                    let n = portable(&line, &mut port, order);
                    reference(&line[4 * n..], &mut port[8 * n..], order);
                    assert!(port == want, "portable: u {u} v {v} {order:?}");
                }
            }
        }
    }

    /// Widths around the block sizes, and an output shorter than the line.
    #[test]
    fn short_lines_and_tails() {
        let src: Vec<u8> = (0..4 * 40).map(|i| (i * 97 + 13) as u8).collect();
        for pairs in 0..40 {
            for odd in [false, true] {
                let px = 2 * pairs + usize::from(odd);
                let s = &src[..4 * px.div_ceil(2)];
                let mut want = vec![7u8; 4 * px + 4];
                reference(s, &mut want[..4 * px], Order::Rgba);
                let mut got = vec![7u8; 4 * px + 4];
                convert_line(s, &mut got[..4 * px], Order::Rgba);
                assert_eq!(got, want, "{px} pixels");
            }
        }
    }
}
