//! The YCbCr to RGB coefficients the YUYV conversions take as a parameter
//! (`yuyv_to_{rgba,bgrx}_csc`'s last argument, a `short8`): which matrix
//! (ITU-R BT.601 or BT.709) and which quantisation range (limited, "video":
//! Y 16..=235 and Cb/Cr 16..=240; or full: 0..=255 both) the frames were
//! coded with. The same bytes read with another pair's coefficients come
//! out with visibly wrong colours (BT.601 red read as BT.709 is off by 20 in
//! green), so a converter must be told which one.
//!
//! The coefficients are 8-bit fixed point (x256), derived from the
//! standards' Kr and Kb and rounded: the integer form every path of the
//! conversion computes exactly (see `yuyv.rs`), within 1 of the exact
//! (f64) conversion over the whole 8-bit range (tested below).

/// The matrix of ITU-R BT.601 or BT.709 (their Kr and Kb).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YuvMatrix {
    /// ITU-R BT.601 (SDTV; what V4L2 capture devices use by default).
    Bt601,
    /// ITU-R BT.709 (HDTV).
    Bt709,
}

/// The quantisation range of the 8-bit samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YuvRange {
    /// Y 16..=235, Cb and Cr 16..=240 ("video", "TV" range).
    Limited,
    /// Y, Cb and Cr over 0..=255 (JPEG, "PC" range).
    Full,
}

impl YuvMatrix {
    /// `(Kr, Kb)` as the standard gives them.
    pub fn kr_kb(self) -> (f64, f64) {
        match self {
            YuvMatrix::Bt601 => (0.299, 0.114),
            YuvMatrix::Bt709 => (0.2126, 0.0722),
        }
    }
}

impl YuvRange {
    /// `(Y offset, Y scale, Cb/Cr scale)` of 8-bit samples: Y = offset +
    /// scale * E'Y, Cb = 128 + scale * E'Pb (ITU-R BT.601/709, and H.273's
    /// full range as GStreamer and V4L2 use it).
    pub fn offset_scales(self) -> (f64, f64, f64) {
        match self {
            YuvRange::Limited => (16.0, 219.0, 224.0),
            YuvRange::Full => (0.0, 255.0, 255.0),
        }
    }
}

/// The coefficients of one conversion, 8-bit fixed point:
/// `R = (y_gain*(Y - y_offset) + r_v*(Cr - 128) + 128) >> 8`,
/// `G = (y_gain*(Y - y_offset) + g_u*(Cb - 128) + g_v*(Cr - 128) + 128) >> 8`,
/// `B = (y_gain*(Y - y_offset) + b_u*(Cb - 128) + 128) >> 8`,
/// each clamped to 0..=255.
///
/// ```
/// use dmabridge::runtime::kernel::{YuvCoefficients, YuvMatrix, YuvRange};
/// let c = YuvCoefficients::new(YuvMatrix::Bt601, YuvRange::Limited);
/// assert_eq!(c, YuvCoefficients::BT601_LIMITED);
/// assert_eq!(c.convert(235, 128, 128), [255, 255, 255], "limited-range white");
/// let full = YuvCoefficients::new(YuvMatrix::Bt709, YuvRange::Full);
/// assert_eq!(full.convert(255, 128, 128), [255, 255, 255], "full-range white");
/// // The kernels' last argument, and back.
/// assert_eq!(YuvCoefficients::from_arg(&full.to_arg()), Ok(full));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct YuvCoefficients {
    /// Subtracted from Y first (16 for limited range, 0 for full): 0..=255.
    pub y_offset: i16,
    /// Multiplies `Y - y_offset`.
    pub y_gain: i16,
    /// Multiplies `Cr - 128` for R.
    pub r_v: i16,
    /// Multiplies `Cb - 128` for G (negative).
    pub g_u: i16,
    /// Multiplies `Cr - 128` for G (negative).
    pub g_v: i16,
    /// Multiplies `Cb - 128` for B.
    pub b_u: i16,
}

impl YuvCoefficients {
    /// BT.601 limited range: the conversion of
    /// [`yuv_to_rgb`](super::yuv_to_rgb) and of the `*_strided` built-ins.
    pub const BT601_LIMITED: YuvCoefficients =
        YuvCoefficients { y_offset: 16, y_gain: 298, r_v: 409, g_u: -100, g_v: -208, b_u: 516 };

    /// The size of the kernels' coefficient argument (a `short8`).
    pub const ARG_SIZE: usize = 16;

    /// The coefficients of `matrix` in `range`, from the standard's Kr and
    /// Kb: `R = Y + 2(1-Kr) Pr`, `G = Y - 2Kb(1-Kb)/Kg Pb - 2Kr(1-Kr)/Kg Pr`,
    /// `B = Y + 2(1-Kb) Pb`, scaled from the range's 8-bit samples to 0..=255.
    pub fn new(matrix: YuvMatrix, range: YuvRange) -> YuvCoefficients {
        let (kr, kb) = matrix.kr_kb();
        let kg = 1.0 - kr - kb;
        let (y_offset, y_scale, c_scale) = range.offset_scales();
        let fixed = |x: f64| (x * 256.0 * 255.0).round() as i16;
        YuvCoefficients {
            y_offset: y_offset as i16,
            y_gain: fixed(1.0 / y_scale),
            r_v: fixed(2.0 * (1.0 - kr) / c_scale),
            g_u: fixed(-2.0 * kb * (1.0 - kb) / kg / c_scale),
            g_v: fixed(-2.0 * kr * (1.0 - kr) / kg / c_scale),
            b_u: fixed(2.0 * (1.0 - kb) / c_scale),
        }
    }

    /// The kernels' `short8` argument: the six values in the order of the
    /// fields, then two zeros (reserved), native-endian.
    pub fn to_arg(&self) -> [u8; Self::ARG_SIZE] {
        let v = [self.y_offset, self.y_gain, self.r_v, self.g_u, self.g_v, self.b_u, 0, 0];
        let mut out = [0u8; Self::ARG_SIZE];
        for (o, x) in out.chunks_exact_mut(2).zip(v) {
            o.copy_from_slice(&x.to_ne_bytes());
        }
        out
    }

    /// The coefficients in a kernel's `short8` argument, or what is wrong
    /// with it: `y_offset` outside 0..=255 (`Y - y_offset` must fit the
    /// 16-bit lanes of the SIMD path) or a reserved value not 0.
    pub fn from_arg(bytes: &[u8]) -> Result<YuvCoefficients, String> {
        if bytes.len() != Self::ARG_SIZE {
            return Err(format!("the coefficients are a short8 ({} bytes), not {} bytes", Self::ARG_SIZE, bytes.len()));
        }
        let v: Vec<i16> = bytes.chunks_exact(2).map(|b| i16::from_ne_bytes([b[0], b[1]])).collect();
        if !(0..=255).contains(&v[0]) {
            return Err(format!("coefficient 0 (the Y offset) is {}: it must be 0..=255", v[0]));
        }
        if v[6] != 0 || v[7] != 0 {
            return Err(format!("coefficients 6 and 7 are reserved and must be 0 (they are {} and {})", v[6], v[7]));
        }
        Ok(YuvCoefficients { y_offset: v[0], y_gain: v[1], r_v: v[2], g_u: v[3], g_v: v[4], b_u: v[5] })
    }

    /// One sample to R, G, B: the integer reference every path of the
    /// conversion computes (see the type).
    pub fn convert(&self, y: u8, u: u8, v: u8) -> [u8; 3] {
        let c = self.y_gain as i32 * (y as i32 - self.y_offset as i32) + 128;
        let (d, e) = (u as i32 - 128, v as i32 - 128);
        let clamp = |x: i32| (x >> 8).clamp(0, 255) as u8;
        [
            clamp(c + self.r_v as i32 * e),
            clamp(c + self.g_u as i32 * d + self.g_v as i32 * e),
            clamp(c + self.b_u as i32 * d),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact conversion in f64, from Kr and Kb and the range's offsets
    /// and scales (written from the standards, not from the fixed-point
    /// form): R, G, B in 0..=255 before rounding and clamping.
    fn exact(matrix: YuvMatrix, range: YuvRange, y: u8, u: u8, v: u8) -> [f64; 3] {
        let (kr, kb) = matrix.kr_kb();
        let kg = 1.0 - kr - kb;
        let (yo, ys, cs) = range.offset_scales();
        let ey = (y as f64 - yo) / ys;
        let (pb, pr) = ((u as f64 - 128.0) / cs, (v as f64 - 128.0) / cs);
        let (r, b) = (ey + 2.0 * (1.0 - kr) * pr, ey + 2.0 * (1.0 - kb) * pb);
        let g = (ey - kr * r - kb * b) / kg;
        [r, g, b].map(|c| c * 255.0)
    }

    const ALL: [(YuvMatrix, YuvRange); 4] = [
        (YuvMatrix::Bt601, YuvRange::Limited),
        (YuvMatrix::Bt601, YuvRange::Full),
        (YuvMatrix::Bt709, YuvRange::Limited),
        (YuvMatrix::Bt709, YuvRange::Full),
    ];

    /// Over the whole 8-bit range, for the four colorimetries: the integer
    /// conversion is within 1 of the exact one rounded and clamped. R
    /// depends on (Y, Cr) and B on (Y, Cb) only: both are checked at every
    /// pair; G at every Y and Cb, Cr in steps of 15 and at their ends (all
    /// 2^24 samples take minutes in a debug build).
    #[test]
    fn the_whole_range_is_within_one_of_the_exact_conversion() {
        let steps: Vec<u8> = (0..=255u8).step_by(15).chain([1, 127, 128, 129, 254]).collect();
        for (m, r) in ALL {
            let c = YuvCoefficients::new(m, r);
            let mut worst = [0; 3];
            let mut check = |y: u8, u: u8, v: u8, channels: &[usize]| {
                let want = exact(m, r, y, u, v).map(|x| x.round().clamp(0.0, 255.0) as i32);
                let got = c.convert(y, u, v);
                for &i in channels {
                    let diff = (got[i] as i32 - want[i]).abs();
                    assert!(diff <= 1, "{m:?} {r:?} ({y}, {u}, {v}): {got:?}, exactly {want:?}");
                    worst[i] = worst[i].max(diff);
                }
            };
            for y in 0..=255u8 {
                for x in 0..=255u8 {
                    check(y, 128, x, &[0]);
                    check(y, x, 128, &[2]);
                }
                for &u in &steps {
                    for &v in &steps {
                        check(y, u, v, &[1]);
                    }
                }
            }
            assert!(worst.contains(&1), "{m:?} {r:?}: the rounding shows somewhere");
        }
    }

    /// The coefficients as published: BT.601 limited range is the former
    /// fixed reference; BT.709 limited range's R is 1.5748 * 255/224.
    #[test]
    fn known_coefficients() {
        assert_eq!(YuvCoefficients::new(YuvMatrix::Bt601, YuvRange::Limited), YuvCoefficients::BT601_LIMITED);
        let c = YuvCoefficients::new(YuvMatrix::Bt709, YuvRange::Limited);
        assert_eq!((c.y_offset, c.y_gain, c.r_v, c.g_u, c.g_v, c.b_u), (16, 298, 459, -55, -136, 541));
        let c = YuvCoefficients::new(YuvMatrix::Bt601, YuvRange::Full);
        assert_eq!((c.y_offset, c.y_gain, c.r_v, c.g_u, c.g_v, c.b_u), (0, 256, 359, -88, -183, 454));
    }

    #[test]
    fn the_argument_round_trips_and_bad_ones_are_refused() {
        for (m, r) in ALL {
            let c = YuvCoefficients::new(m, r);
            assert_eq!(YuvCoefficients::from_arg(&c.to_arg()), Ok(c));
        }
        let mut bad = YuvCoefficients::BT601_LIMITED;
        bad.y_offset = 256;
        assert!(YuvCoefficients::from_arg(&bad.to_arg()).unwrap_err().contains("Y offset"));
        let mut arg = YuvCoefficients::BT601_LIMITED.to_arg();
        arg[14] = 1;
        assert!(YuvCoefficients::from_arg(&arg).unwrap_err().contains("reserved"));
        assert!(YuvCoefficients::from_arg(&arg[..8]).unwrap_err().contains("short8"));
    }
}
