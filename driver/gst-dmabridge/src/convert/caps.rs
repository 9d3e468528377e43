//! What `dmabridgeconvert` takes and gives: YUY2 in, RGBA or BGRx out, the
//! same size and rate; colorimetry BT.601 or BT.709, limited or full range
//! in (the kernels take the coefficients of each), RGB out.

use dmabridge::runtime::kernel::{YuvCoefficients, YuvMatrix, YuvRange};
use gst_video::{VideoColorMatrix, VideoColorPrimaries, VideoColorRange, VideoColorimetry, VideoTransferFunction};

/// The formats of the source pad, with the built-in kernel writing each.
pub const OUTPUTS: &[(gst_video::VideoFormat, &str)] =
    &[(gst_video::VideoFormat::Rgba, "yuyv_to_rgba_csc"), (gst_video::VideoFormat::Bgrx, "yuyv_to_bgrx_csc")];

/// The sink template: raw YUY2 of any size.
pub fn sink_caps() -> gst::Caps {
    gst_video::VideoCapsBuilder::new().format(gst_video::VideoFormat::Yuy2).build()
}

/// The source template: raw RGBA or BGRx of any size.
pub fn src_caps() -> gst::Caps {
    gst_video::VideoCapsBuilder::new().format_list(OUTPUTS.iter().map(|o| o.0)).build()
}

/// The colorimetries converted, as caps name them, the usual first:
/// BT.601 and BT.709 in limited range (their standard transfer and
/// primaries), then each in full range.
pub fn colorimetries() -> Vec<String> {
    let c = |range, matrix, transfer, primaries| VideoColorimetry::new(range, matrix, transfer, primaries).to_string();
    let (bt601, bt709) = (VideoColorMatrix::Bt601, VideoColorMatrix::Bt709);
    let (t601, t709) = (VideoTransferFunction::Bt601, VideoTransferFunction::Bt709);
    let (smpte170m, p709) = (VideoColorPrimaries::Smpte170m, VideoColorPrimaries::Bt709);
    vec![
        c(VideoColorRange::Range16_235, bt601, t601, smpte170m),
        c(VideoColorRange::Range16_235, bt709, t709, p709),
        c(VideoColorRange::Range0_255, bt601, t601, smpte170m),
        c(VideoColorRange::Range0_255, bt709, t709, p709),
    ]
}

/// `caps` seen from the other pad: each structure with the other side's
/// formats. Towards the sink, the colorimetries converted are offered first
/// (a source free to choose takes one of them), then the same structure
/// with any colorimetry, so that a source whose colorimetry differs only in
/// what the conversion does not touch (transfer, primaries) still links;
/// one whose matrix or range cannot be converted is refused at `set_info`
/// with the reason. Towards the source, no colorimetry or chroma siting
/// (the conversion sets them).
pub fn transform(direction: gst::PadDirection, caps: &gst::Caps, filter: Option<&gst::Caps>) -> gst::Caps {
    let to_sink = direction != gst::PadDirection::Sink;
    let formats: Vec<&str> = match to_sink {
        false => OUTPUTS.iter().map(|o| o.0.to_str().as_str()).collect(),
        true => vec![gst_video::VideoFormat::Yuy2.to_str().as_str()],
    };
    let mut out = gst::Caps::new_empty();
    for (s, features) in caps.iter_with_features() {
        let mut s = s.to_owned();
        s.set("format", gst::List::new(formats.iter().copied()));
        s.remove_fields(["colorimetry", "chroma-site"]);
        if to_sink {
            let mut offered = s.clone();
            offered.set("colorimetry", gst::List::new(colorimetries()));
            out.merge_structure_full(offered, Some(features.to_owned()));
        }
        out.merge_structure_full(s, Some(features.to_owned()));
    }
    match filter {
        Some(f) => f.intersect_with_mode(&out, gst::CapsIntersectMode::First),
        None => out,
    }
}

/// The coefficients converting the input's colorimetry, or why it cannot
/// be converted: a matrix other than BT.601 and BT.709 (BT.2020, SMPTE
/// 240M, FCC) or an unknown range would come out with wrong colours, so it
/// is refused rather than converted silently.
pub fn coefficients(info: &gst_video::VideoInfo) -> Result<YuvCoefficients, String> {
    let c = info.colorimetry();
    let matrix = match c.matrix() {
        VideoColorMatrix::Bt601 => Some(YuvMatrix::Bt601),
        VideoColorMatrix::Bt709 => Some(YuvMatrix::Bt709),
        _ => None,
    };
    let range = match c.range() {
        VideoColorRange::Range16_235 => Some(YuvRange::Limited),
        VideoColorRange::Range0_255 => Some(YuvRange::Full),
        _ => None,
    };
    match (matrix, range) {
        (Some(m), Some(r)) => Ok(YuvCoefficients::new(m, r)),
        _ => Err(format!(
            "dmabridgeconvert converts YUY2 of the BT.601 or BT.709 matrix in limited or full range only; the input \
             is {c} (matrix {:?}, range {:?}), which it cannot convert without wrong colours: put videoconvert \
             before it, or ask the source for one of {}",
            c.matrix(),
            c.range(),
            colorimetries().join(", ")
        )),
    }
}
