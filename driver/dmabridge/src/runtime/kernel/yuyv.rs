//! One line of YUYV to 4-byte pixels, fast: the inner loop of the
//! `yuyv_to_rgba*`, `yuyv_to_bgrx_*` built-ins, with the colorimetry's
//! coefficients ([`YuvCoefficients`]) as a parameter.
//!
//! Every path gives exactly the bytes of [`YuvCoefficients::convert`] (the
//! reference: 8-bit fixed point in `i32`). With `yy = y - y_offset`,
//! `d = u - 128`, `e = v - 128` in 16-bit lanes (all within -255..=255),
//! each channel is two products of pairs of lanes summed in 32 bits: `R =
//! (y_gain*yy + 128*1) + (0*d + r_v*e)`, `G = (y_gain*yy + 128*1) + (g_u*d +
//! g_v*e)`, `B = (y_gain*yy + 128*1) + (b_u*d + 0*e)`, then `>> 8` and a
//! saturating pack (the clamp to 0..=255). So any coefficients of 16 bits
//! give the reference's bytes; BT.601 and BT.709, limited and full range
//! are only different constants. The chroma products are made once per
//! pair (the YUYV chroma bytes are already `Cb Cr` pairs) and shared by its
//! two pixels.
//!
//! On x86_64 (SSE2 is part of the baseline: no detection needed) 8 pairs
//! (16 pixels) go through SSE2 at a time, the pair products being
//! `pmaddwd`: 0.85 ms per 1080p frame on this project's host, any
//! colorimetry. Elsewhere the portable loop, written in fixed chunks of 16
//! pairs in `i32` that the compiler vectorises (NEON on aarch64). The pairs
//! left over, and an odd last pixel, take the reference. (The former SSE2
//! path computed BT.601 limited range only, in 16-bit lanes, by splitting
//! its particular constants: 0.73 ms in the same micro-benchmark, a
//! standalone copy of both; docs/BENCHMARKS.md, `gst`.)

use super::csc::YuvCoefficients;

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
pub(crate) fn convert_line(s: &[u8], d: &mut [u8], order: Order, c: &YuvCoefficients) {
    #[cfg(target_arch = "x86_64")]
    let done = sse2::convert(s, d, order, c);
    #[cfg(not(target_arch = "x86_64"))]
    let done = portable(s, d, order, c);
    reference(&s[4 * done..], &mut d[8 * done..], order, c);
}

/// The reference conversion, pair by pair.
fn reference(s: &[u8], d: &mut [u8], order: Order, c: &YuvCoefficients) {
    for (pair, out) in s.chunks_exact(4).zip(d.chunks_mut(8)) {
        let [y0, u, y1, v] = [pair[0], pair[1], pair[2], pair[3]];
        for (y, px) in [y0, y1].into_iter().zip(out.chunks_exact_mut(4)) {
            px.copy_from_slice(&order.pixel(c.convert(y, u, v)));
        }
    }
}

/// Pairs per chunk of [`portable`].
const PAIRS: usize = 16;

/// The whole chunks of [`PAIRS`] pairs that fit both `s` and `d`, in the
/// `i32` form of the reference; how many pairs it converted.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable(s: &[u8], d: &mut [u8], order: Order, c: &YuvCoefficients) -> usize {
    let chunks = (s.len() / 4).min(d.len() / 8) / PAIRS;
    let (s, d) = (&s[..chunks * 4 * PAIRS], &mut d[..chunks * 8 * PAIRS]);
    let [yo, yg, rv, gu, gv, bu] = [c.y_offset, c.y_gain, c.r_v, c.g_u, c.g_v, c.b_u].map(i32::from);
    for (sc, dc) in s.chunks_exact(4 * PAIRS).zip(d.chunks_exact_mut(8 * PAIRS)) {
        let (mut y, mut u, mut v) = ([0i32; 2 * PAIRS], [0i32; 2 * PAIRS], [0i32; 2 * PAIRS]);
        for p in 0..PAIRS {
            let q = &sc[4 * p..4 * p + 4];
            y[2 * p] = q[0] as i32 - yo;
            y[2 * p + 1] = q[2] as i32 - yo;
            u[2 * p] = q[1] as i32 - 128;
            u[2 * p + 1] = q[1] as i32 - 128;
            v[2 * p] = q[3] as i32 - 128;
            v[2 * p + 1] = q[3] as i32 - 128;
        }
        let clamp = |x: i32| (x >> 8).clamp(0, 255) as u8;
        for (i, px) in dc.chunks_exact_mut(4).enumerate() {
            let (t, d, e) = (yg * y[i] + 128, u[i], v[i]);
            let rgb = [clamp(t + rv * e), clamp(t + gu * d + gv * e), clamp(t + bu * d)];
            px.copy_from_slice(&order.pixel(rgb));
        }
    }
    chunks * PAIRS
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::{Order, YuvCoefficients};
    use std::arch::x86_64::*;

    /// The coefficients as the pair products take them: `(y_gain, 128)`
    /// for the `(yy, 1)` lanes of each pixel, and per channel the
    /// multipliers of the `(d, e)` lanes of each pair.
    struct Pairs {
        y1: __m128i,
        de: [__m128i; 3],
        y_offset: __m128i,
    }

    /// The whole blocks of 8 pairs that fit both `s` and `d`; how many
    /// pairs it converted.
    pub(super) fn convert(s: &[u8], d: &mut [u8], order: Order, c: &YuvCoefficients) -> usize {
        let blocks = (s.len() / 32).min(d.len() / 64);
        if blocks == 0 {
            return 0;
        }
        let pair = |a: i16, b: i16| {
            // SAFETY: register set-up only; SSE2 is in every x86_64's baseline.
            unsafe { _mm_set1_epi32(((b as u16 as i32) << 16) | a as u16 as i32) }
        };
        let k = Pairs {
            y1: pair(c.y_gain, 128),
            de: [pair(0, c.r_v), pair(c.g_u, c.g_v), pair(c.b_u, 0)],
            // SAFETY: as above.
            y_offset: unsafe { _mm_set1_epi16(c.y_offset) },
        };
        for i in 0..blocks {
            // SAFETY: block `i` reads s[32i..32i + 32] and writes
            // d[64i..64i + 64], inside both slices (`blocks` fits both);
            // unaligned loads and stores; SSE2 is in every x86_64's baseline.
            unsafe { block(s.as_ptr().add(32 * i), d.as_mut_ptr().add(64 * i), order, &k) };
        }
        blocks * 8
    }

    /// R, G and B of the 8 pixels of one 16-byte vector of 4 pairs, as i16
    /// (saturated: the clamp's first half). The luma term is one product
    /// per pixel; the chroma terms one per pair (the chroma lanes are
    /// already `d e d e ...`), then given to both pixels of the pair.
    ///
    /// # Safety
    /// SSE2 (always there on x86_64).
    #[inline(always)]
    unsafe fn channels(a: __m128i, k: &Pairs) -> [__m128i; 3] {
        // SAFETY: register arithmetic only.
        unsafe {
            let y = _mm_sub_epi16(_mm_and_si128(a, _mm_set1_epi16(0xff)), k.y_offset);
            // Lanes d0 e0 d1 e1 ...: Cb - 128 and Cr - 128 of each pair.
            let de = _mm_sub_epi16(_mm_srli_epi16(a, 8), _mm_set1_epi16(128));
            let one = _mm_set1_epi16(1);
            let y_lo = _mm_madd_epi16(_mm_unpacklo_epi16(y, one), k.y1);
            let y_hi = _mm_madd_epi16(_mm_unpackhi_epi16(y, one), k.y1);
            [0, 1, 2].map(|ch| {
                let per_pair = _mm_madd_epi16(de, k.de[ch]);
                let lo = _mm_add_epi32(y_lo, _mm_unpacklo_epi32(per_pair, per_pair));
                let hi = _mm_add_epi32(y_hi, _mm_unpackhi_epi32(per_pair, per_pair));
                _mm_packs_epi32(_mm_srai_epi32(lo, 8), _mm_srai_epi32(hi, 8))
            })
        }
    }

    /// 8 pairs from `s` (32 bytes) to 16 pixels at `d` (64 bytes).
    ///
    /// # Safety
    /// `s` readable for 32 bytes, `d` writable for 64; SSE2.
    #[inline(always)]
    unsafe fn block(s: *const u8, d: *mut u8, order: Order, k: &Pairs) {
        // SAFETY: the caller's bounds; unaligned loads and stores.
        unsafe {
            let lo = channels(_mm_loadu_si128(s.cast()), k);
            let hi = channels(_mm_loadu_si128(s.add(16).cast()), k);
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
    use super::super::csc::{YuvMatrix, YuvRange};
    use super::*;

    /// The four colorimetries of the standards, and two made-up sets at the
    /// ends of what the argument allows (the largest offset and gains, and
    /// negative ones): the paths agree for any coefficients.
    fn coefficient_sets() -> Vec<YuvCoefficients> {
        let mut sets: Vec<YuvCoefficients> = [YuvMatrix::Bt601, YuvMatrix::Bt709]
            .into_iter()
            .flat_map(|m| [YuvRange::Limited, YuvRange::Full].map(|r| YuvCoefficients::new(m, r)))
            .collect();
        sets.push(YuvCoefficients {
            y_offset: 255,
            y_gain: i16::MAX,
            r_v: i16::MIN,
            g_u: i16::MAX,
            g_v: i16::MIN,
            b_u: -1,
        });
        sets.push(YuvCoefficients { y_offset: 0, y_gain: -300, r_v: 7, g_u: -32000, g_v: 32000, b_u: 600 });
        sets
    }

    /// Lines of 129 pairs (every `y` at both positions of a pair, an odd
    /// width of 257 pixels) for `u` and `v` across their range, extremes
    /// included: every path gives the reference's bytes, in both orders,
    /// for every set of coefficients. (Every `u` and `v` takes minutes in a
    /// debug build; csc.rs checks the reference over all of them.)
    #[test]
    fn every_path_gives_the_reference_bytes() {
        let samples: Vec<u8> = (0..=255u8).step_by(17).chain([1, 127, 128, 129, 254]).collect();
        let mut line = vec![0u8; 129 * 4];
        for c in coefficient_sets() {
            for &u in &samples {
                for &v in &samples {
                    for (p, q) in line.chunks_exact_mut(4).enumerate() {
                        q.copy_from_slice(&[(2 * p) as u8, u, (2 * p + 1) as u8, v]);
                    }
                    for order in [Order::Rgba, Order::Bgrx] {
                        let mut want = vec![0u8; 257 * 4];
                        reference(&line, &mut want, order, &c);
                        let mut fast = vec![0u8; 257 * 4];
                        convert_line(&line, &mut fast, order, &c);
                        assert!(fast == want, "u {u} v {v} {order:?} {c:?}");
                        let mut port = vec![0u8; 257 * 4];
                        let n = portable(&line, &mut port, order, &c);
                        reference(&line[4 * n..], &mut port[8 * n..], order, &c);
                        assert!(port == want, "portable: u {u} v {v} {order:?} {c:?}");
                    }
                }
            }
        }
    }

    /// Widths around the block sizes, and an output shorter than the line.
    #[test]
    fn short_lines_and_tails() {
        let src: Vec<u8> = (0..4 * 40).map(|i| (i * 97 + 13) as u8).collect();
        let c = YuvCoefficients::new(YuvMatrix::Bt709, YuvRange::Full);
        for pairs in 0..40 {
            for odd in [false, true] {
                let px = 2 * pairs + usize::from(odd);
                let s = &src[..4 * px.div_ceil(2)];
                let mut want = vec![7u8; 4 * px + 4];
                reference(s, &mut want[..4 * px], Order::Rgba, &c);
                let mut got = vec![7u8; 4 * px + 4];
                convert_line(s, &mut got[..4 * px], Order::Rgba, &c);
                assert_eq!(got, want, "{px} pixels");
            }
        }
    }
}
