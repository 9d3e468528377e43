//! The bytes of one pixel of a fill colour (`clEnqueueFillImage`): the
//! colour is `float[4]` for normalised and floating-point channel types,
//! `int[4]` for `CL_SIGNED_INT*` and `uint[4]` for `CL_UNSIGNED_INT*`, and
//! is converted as the OpenCL C `write_image{f,i,ui}` conversions do
//! (OpenCL C 3.0, "Conversion Rules"): normalised values are
//! `convert_<type>_sat_rte(f * max)`, integers saturate, half floats round
//! to nearest even, sRGB channels go through the sRGB transfer function
//! before the UNORM conversion. Channels are stored in the order's order
//! (`CL_BGRA` stores blue first).

use crate::cl_err;
use crate::error::ClResult;

use super::format::{data_type::*, order, ChannelKind, ImageFormat};

/// A fill colour as the application passes it: four 32-bit words, read as
/// `float`, `int` or `uint` by the image's channel type.
pub type FillColor = [u32; 4];

/// `convert_<int>_sat_rte(v)` into `[lo, hi]` (NaN is 0).
fn sat_rte(v: f32, lo: f32, hi: f32) -> i64 {
    if v.is_nan() {
        return 0;
    }
    v.round_ties_even().clamp(lo, hi) as i64
}

/// An `f32` as IEEE half precision, rounded to nearest even (overflow to
/// infinity, NaN kept a NaN).
pub(crate) fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal half: shift the mantissa (with its implicit 1) right.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut h = m >> shift;
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1; // may carry into the exponent, up to infinity: still correct
    }
    sign | h as u16
}

/// The sRGB transfer function (linear to encoded), for `CL_sRGBA`.
fn srgb_encode(c: f32) -> f32 {
    if c.is_nan() {
        0.0
    } else if c <= 0.003_130_8 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// Which of (r, g, b, a) each stored channel is; 4 is the ignored channel
/// of the `x` orders (stored as 0).
fn channel_map(o: u32) -> ClResult<&'static [usize]> {
    Ok(match o {
        order::R | order::DEPTH | order::INTENSITY | order::LUMINANCE => &[0],
        order::RX => &[0, 4],
        order::A => &[3],
        order::RG => &[0, 1],
        order::RGX => &[0, 1, 4],
        order::RA => &[0, 3],
        order::RGB | order::SRGB => &[0, 1, 2],
        order::RGBX | order::SRGBX => &[0, 1, 2, 4],
        order::RGBA | order::SRGBA => &[0, 1, 2, 3],
        order::BGRA | order::SBGRA => &[2, 1, 0, 3],
        order::ARGB => &[3, 0, 1, 2],
        order::ABGR => &[3, 2, 1, 0],
        _ => {
            return cl_err!(
                InvalidOperation,
                "a fill of channel order {o:#x} is not defined (YUV and depth-stencil pixels are not one colour): \
                 write the bytes with clEnqueueWriteImage"
            )
        }
    })
}

/// The bytes of one pixel of `format` filled with `color`.
///
/// Errors: `CL_INVALID_OPERATION` for the formats no colour converts to
/// (YUYV, NV12, depth-stencil, packed types), `CL_INVALID_IMAGE_FORMAT_DESCRIPTOR`
/// for an invalid format.
///
/// ```
/// use dmabridge::runtime::image::fill::pixel_bytes;
/// use dmabridge::runtime::image::format::{data_type, order, ImageFormat};
/// let f = |v: f32| v.to_bits();
/// let bgra = ImageFormat::new(order::BGRA, data_type::UNORM_INT8);
/// assert_eq!(pixel_bytes(bgra, [f(1.0), f(0.5), f(0.0), f(1.0)])?, [0, 128, 255, 255]);
/// let r16 = ImageFormat::new(order::R, data_type::SIGNED_INT16);
/// assert_eq!(pixel_bytes(r16, [(-40000i32) as u32, 0, 0, 0])?, (-32768i16).to_ne_bytes());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn pixel_bytes(format: ImageFormat, color: FillColor) -> ClResult<Vec<u8>> {
    format.element_size()?;
    let map = channel_map(format.order)?;
    let srgb = matches!(format.order, order::SRGB | order::SRGBX | order::SRGBA | order::SBGRA);
    let mut out = Vec::with_capacity(16);
    for (i, &c) in map.iter().enumerate() {
        let w = color.get(c).copied().unwrap_or(0);
        let f = f32::from_bits(w);
        // The alpha channel of sRGB formats is linear.
        let f = if srgb && c != 3 { srgb_encode(f) } else { f };
        let (s, u) = (w as i32 as i64, w as u64);
        match (format.kind(), format.data_type) {
            (ChannelKind::Float, UNORM_INT8) => out.push(sat_rte(f * 255.0, 0.0, 255.0) as u8),
            (ChannelKind::Float, UNORM_INT16) => out.extend((sat_rte(f * 65535.0, 0.0, 65535.0) as u16).to_ne_bytes()),
            (ChannelKind::Float, SNORM_INT8) => out.push(sat_rte(f * 127.0, -128.0, 127.0) as i8 as u8),
            (ChannelKind::Float, SNORM_INT16) => {
                out.extend((sat_rte(f * 32767.0, -32768.0, 32767.0) as i16).to_ne_bytes())
            }
            (ChannelKind::Float, HALF_FLOAT) => out.extend(f32_to_f16(f).to_ne_bytes()),
            (ChannelKind::Float, FLOAT) => out.extend(f.to_ne_bytes()),
            (ChannelKind::Int, SIGNED_INT8) => out.push(s.clamp(-128, 127) as i8 as u8),
            (ChannelKind::Int, SIGNED_INT16) => out.extend((s.clamp(-32768, 32767) as i16).to_ne_bytes()),
            (ChannelKind::Int, _) => out.extend((s as i32).to_ne_bytes()),
            (ChannelKind::Uint, UNSIGNED_INT8) => out.push(u.min(255) as u8),
            (ChannelKind::Uint, UNSIGNED_INT16) => out.extend((u.min(65535) as u16).to_ne_bytes()),
            (ChannelKind::Uint, _) => out.extend((u as u32).to_ne_bytes()),
            (ChannelKind::Float, t) => {
                let _ = i;
                return cl_err!(
                    InvalidOperation,
                    "a fill of the packed channel type {t:#x} is not defined here: write the bytes with \
                     clEnqueueWriteImage"
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_round_to_nearest_even() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00, "rounds up to infinity");
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
        assert_eq!(f32_to_f16(f32::NAN) & 0x7e00, 0x7e00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001, "smallest subnormal");
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00, "a tie rounds to even");
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02, "a tie rounds to even (up)");
    }

    #[test]
    fn normalised_values_saturate_and_round_to_even() {
        assert_eq!(sat_rte(0.5 * 255.0, 0.0, 255.0), 128);
        assert_eq!(sat_rte(2.0 * 255.0, 0.0, 255.0), 255);
        assert_eq!(sat_rte(-1.0, 0.0, 255.0), 0);
        assert_eq!(sat_rte(f32::NAN, 0.0, 255.0), 0);
        assert_eq!(sat_rte(2.5, 0.0, 255.0), 2);
    }
}
