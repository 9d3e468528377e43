//! What `dmabridgeconvert` takes and gives: YUY2 in, RGBA or BGRx out, the
//! same size and rate; colorimetry BT.601 limited range in (what the kernels
//! compute), sRGB out.

/// The formats of the source pad, with the built-in kernel writing each.
pub const OUTPUTS: &[(gst_video::VideoFormat, &str)] =
    &[(gst_video::VideoFormat::Rgba, "yuyv_to_rgba_strided"), (gst_video::VideoFormat::Bgrx, "yuyv_to_bgrx_strided")];

/// The sink template: raw YUY2 of any size.
pub fn sink_caps() -> gst::Caps {
    gst_video::VideoCapsBuilder::new().format(gst_video::VideoFormat::Yuy2).build()
}

/// The source template: raw RGBA or BGRx of any size.
pub fn src_caps() -> gst::Caps {
    gst_video::VideoCapsBuilder::new().format_list(OUTPUTS.iter().map(|o| o.0)).build()
}

/// `caps` seen from the other pad: each structure with the other side's
/// formats, and no colorimetry or chroma siting (the conversion sets them).
pub fn transform(direction: gst::PadDirection, caps: &gst::Caps, filter: Option<&gst::Caps>) -> gst::Caps {
    let formats: Vec<&str> = match direction {
        gst::PadDirection::Sink => OUTPUTS.iter().map(|o| o.0.to_str().as_str()).collect(),
        _ => vec![gst_video::VideoFormat::Yuy2.to_str().as_str()],
    };
    let mut out = gst::Caps::new_empty();
    for (s, features) in caps.iter_with_features() {
        let mut s = s.to_owned();
        s.set("format", gst::List::new(formats.iter().copied()));
        s.remove_fields(["colorimetry", "chroma-site"]);
        out.merge_structure_full(s, Some(features.to_owned()));
    }
    match filter {
        Some(f) => f.intersect_with_mode(&out, gst::CapsIntersectMode::First),
        None => out,
    }
}

/// Why the input's colorimetry cannot be converted (`None`: it can). The
/// kernels compute BT.601 limited range; anything else would come out with
/// wrong colours, so it is refused rather than converted silently.
pub fn refuse_colorimetry(info: &gst_video::VideoInfo) -> Option<String> {
    let c = info.colorimetry();
    let ok = c.matrix() == gst_video::VideoColorMatrix::Bt601 && c.range() == gst_video::VideoColorRange::Range16_235;
    (!ok).then(|| {
        format!(
            "dmabridgeconvert converts BT.601 limited-range YUY2 only (colorimetry=bt601); the input is {c} \
             (matrix {:?}, range {:?}): put videoconvert before it or ask the source for bt601",
            c.matrix(),
            c.range()
        )
    })
}
