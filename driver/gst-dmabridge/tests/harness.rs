//! `dmabridgeconvert` under `gst_check::Harness`, on any Linux machine:
//! caps, both output formats at odd sizes and padded input strides checked
//! pixel by pixel against dmabridge's reference, four colorimetries converted and others refused,
//! devices refused, flush, EOS, and 1000 PLAYING<->NULL cycles without an fd
//! or mapping leak. (Where dmabridge can export dma-bufs, see guest.rs.)

mod common;

use common::*;
use gst::prelude::*;
use gst_check::Harness;

fn caps_in(w: usize, h: usize, colorimetry: &str) -> String {
    format!("video/x-raw,format=YUY2,width={w},height={h},framerate=30/1,colorimetry={colorimetry}")
}

/// A harness converting `w` x `h` YUY2 to `format`.
fn harness(w: usize, h: usize, format: &str) -> Harness {
    init();
    let mut h_ = Harness::new("dmabridgeconvert");
    h_.set_src_caps_str(&caps_in(w, h, "bt601"));
    h_.set_sink_caps_str(&format!("video/x-raw,format={format}"));
    h_
}

/// A YUY2 buffer of `w` x `h` with lines of `stride` bytes and a
/// `GstVideoMeta` saying so.
fn input(w: usize, h: usize, stride: usize, seed: u64) -> (gst::Buffer, Vec<u8>) {
    let data = yuy2_frame(w, h, stride, seed);
    let mut buf = gst::Buffer::from_slice(data.clone());
    gst_video::VideoMeta::add_full(
        buf.get_mut().unwrap(),
        gst_video::VideoFrameFlags::empty(),
        gst_video::VideoFormat::Yuy2,
        w as u32,
        h as u32,
        &[0],
        &[stride as i32],
    )
    .unwrap();
    (buf, data)
}

fn check_output(out: &gst::Buffer, data: &[u8], w: usize, h: usize, stride: usize, format: &str) {
    let caps = gst::Caps::builder("video/x-raw")
        .field("format", format)
        .field("width", w as i32)
        .field("height", h as i32)
        .build();
    let info = gst_video::VideoInfo::from_caps(&caps).unwrap();
    let (px, out_stride) = plane0(out.as_ref(), &info);
    for r in 0..h {
        for x in 0..w {
            let got = &px[r * out_stride + x * 4..][..4];
            assert_eq!(got, expected_pixel(data, stride, x, r, format), "{format} {w}x{h}: pixel {x} of line {r}");
        }
    }
}

#[test]
fn caps_yuy2_in_rgba_or_bgrx_out_same_size_and_rate() {
    let mut h = harness(640, 480, "RGBA");
    let (buf, _) = input(640, 480, 1280, 1);
    h.push(buf).unwrap();
    let _ = h.pull().unwrap();
    let out = h.sinkpad().unwrap().current_caps().unwrap();
    let s = out.structure(0).unwrap();
    assert_eq!(s.get::<&str>("format").unwrap(), "RGBA");
    assert_eq!((s.get::<i32>("width").unwrap(), s.get::<i32>("height").unwrap()), (640, 480));
    assert_eq!(s.get::<gst::Fraction>("framerate").unwrap(), gst::Fraction::new(30, 1));
    // The templates: YUY2 only in, RGBA and BGRx out.
    let el = h.element().unwrap();
    let sink = el.static_pad("sink").unwrap().pad_template_caps();
    let src = el.static_pad("src").unwrap().pad_template_caps();
    assert!(!sink.can_intersect(&gst::Caps::builder("video/x-raw").field("format", "NV12").build()));
    for f in ["RGBA", "BGRx"] {
        assert!(src.can_intersect(&gst::Caps::builder("video/x-raw").field("format", f).build()), "{f}");
    }
    assert!(!src.can_intersect(&gst::Caps::builder("video/x-raw").field("format", "RGB").build()));
}

#[test]
fn every_format_at_odd_sizes_and_padded_strides_matches_the_reference() {
    for format in ["RGBA", "BGRx"] {
        for (w, hgt, pad) in [(18usize, 7usize, 0usize), (322, 11, 64), (7, 3, 4), (2, 1, 0), (640, 480, 0)] {
            let stride = (w.div_ceil(2) * 4).next_multiple_of(4) + pad;
            let mut h = harness(w, hgt, format);
            let (buf, data) = input(w, hgt, stride, w as u64 * 31 + hgt as u64);
            h.push(buf).unwrap();
            let out = h.pull().unwrap();
            check_output(&out, &data, w, hgt, stride, format);
        }
    }
}

#[test]
fn timestamps_pass_through() {
    let mut h = harness(32, 8, "BGRx");
    let (mut buf, _) = input(32, 8, 64, 3);
    {
        let b = buf.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_mseconds(40));
        b.set_duration(gst::ClockTime::from_mseconds(33));
    }
    h.push(buf).unwrap();
    let out = h.pull().unwrap();
    assert_eq!(out.pts(), Some(gst::ClockTime::from_mseconds(40)));
    assert_eq!(out.duration(), Some(gst::ClockTime::from_mseconds(33)));
}

/// Each colorimetry converted, with pixels of known colour coded in it
/// (75% red, white, black; worked out by hand from the standards' Kr and
/// Kb): they come out as the RGB they code, to within 1. The same bytes
/// read with BT.601 limited range's coefficients would be off by up to 30.
#[test]
fn each_colorimetry_converts_known_colours() {
    let cases = [
        ("bt601", [(65, 100, 212), (235, 128, 128), (16, 128, 128)]),
        ("bt709", [(51, 109, 212), (235, 128, 128), (16, 128, 128)]),
        ("1:4:0:0", [(57, 96, 224), (255, 128, 128), (0, 128, 128)]),
        ("1:3:5:1", [(41, 106, 224), (255, 128, 128), (0, 128, 128)]),
    ];
    let want = [[191, 0, 0], [255, 255, 255], [0, 0, 0]];
    for (colorimetry, samples) in cases {
        for format in ["RGBA", "BGRx"] {
            init();
            let mut h = Harness::new("dmabridgeconvert");
            h.set_src_caps_str(&caps_in(2, 3, colorimetry));
            h.set_sink_caps_str(&format!("video/x-raw,format={format}"));
            let data: Vec<u8> = samples.iter().flat_map(|&(y, u, v)| [y, u, y, v]).collect();
            h.push(gst::Buffer::from_slice(data)).unwrap();
            let out = h.pull().unwrap();
            let map = out.map_readable().unwrap();
            for (line, rgb) in want.iter().enumerate() {
                for px in 0..2 {
                    let got = &map[line * 8 + px * 4..][..4];
                    let rgb = match format {
                        "RGBA" => [rgb[0], rgb[1], rgb[2]],
                        _ => [rgb[2], rgb[1], rgb[0]],
                    };
                    let close = (0..3).all(|c| (got[c] as i32 - rgb[c]).abs() <= 1) && got[3] == 255;
                    assert!(close, "{colorimetry} {format}: line {line} pixel {px} is {got:?}, not {rgb:?}");
                }
            }
        }
    }
}

/// A source free to choose is offered the four colorimetries converted,
/// the usual one (BT.601 limited range) first.
#[test]
fn caps_negotiation_offers_the_colorimetries_converted() {
    init();
    let el = gst::ElementFactory::make("dmabridgeconvert").build().unwrap();
    let caps = el.static_pad("sink").unwrap().query_caps(None);
    let first = caps.structure(0).unwrap();
    let offered: Vec<String> =
        first.get::<gst::List>("colorimetry").unwrap().iter().map(|v| v.get::<String>().unwrap()).collect();
    assert_eq!(offered, ["bt601", "bt709", "1:4:16:4", "1:3:5:1"]);
    let mut fixed = caps.clone();
    fixed.fixate();
    assert_eq!(fixed.structure(0).unwrap().get::<&str>("colorimetry").unwrap(), "bt601");
}

/// BT.2020 and SMPTE 240M are not converted: refused at negotiation with
/// an error that says what is converted and what to do.
#[test]
fn other_matrices_are_refused_with_a_reason() {
    init();
    for colorimetry in ["bt2020", "smpte240m"] {
        let mut h = Harness::new("dmabridgeconvert");
        // The harness gives the element no bus: one of ours catches the error.
        let bus = gst::Bus::new();
        h.element().unwrap().set_bus(Some(&bus));
        h.set_src_caps_str(&caps_in(16, 4, colorimetry));
        h.set_sink_caps_str("video/x-raw,format=RGBA");
        let (buf, _) = input(16, 4, 32, 1);
        assert_eq!(h.push(buf), Err(gst::FlowError::NotNegotiated), "{colorimetry}");
        let msg = bus.pop_filtered(&[gst::MessageType::Error]).expect("an error message");
        let gst::MessageView::Error(e) = msg.view() else { unreachable!() };
        let why = e.error().to_string();
        assert!(
            why.contains("BT.601 or BT.709") && why.contains(colorimetry) && why.contains("videoconvert"),
            "{colorimetry}: {why}"
        );
    }
}

#[test]
fn an_unknown_device_is_refused_at_the_state_change_naming_it() {
    init();
    let el = gst::ElementFactory::make("dmabridgeconvert").property("device", "no-such-device").build().unwrap();
    let bus = gst::Bus::new();
    el.set_bus(Some(&bus));
    assert!(el.set_state(gst::State::Paused).is_err());
    let msg = bus.pop_filtered(&[gst::MessageType::Error]).expect("an error message");
    let gst::MessageView::Error(e) = msg.view() else { unreachable!() };
    let text = e.error().to_string() + &format!("{:?}", e.debug());
    assert!(text.contains("no-such-device") && text.contains("cpu"), "{text}");
    el.set_state(gst::State::Null).unwrap();
    assert_eq!(el.property::<String>("device"), "no-such-device");
}

#[test]
fn flush_then_more_buffers_convert() {
    let mut h = harness(16, 4, "RGBA");
    let (buf, data) = input(16, 4, 32, 9);
    h.push(buf.clone()).unwrap();
    let _ = h.pull().unwrap();
    assert!(h.push_event(gst::event::FlushStart::new()));
    assert!(h.push_event(gst::event::FlushStop::new(true)));
    // A flush-stop resets the segment: a new one is sent before data.
    assert!(h.push_event(gst::event::Segment::new(&gst::FormattedSegment::<gst::ClockTime>::new())));
    h.push(buf).unwrap();
    let out = h.pull().unwrap();
    check_output(&out, &data, 16, 4, 32, "RGBA");
}

#[test]
fn eos_reaches_downstream() {
    let mut h = harness(16, 4, "RGBA");
    let (buf, _) = input(16, 4, 32, 2);
    h.push(buf).unwrap();
    let _ = h.pull().unwrap();
    assert!(h.push_event(gst::event::Eos::new()));
    loop {
        let ev = h.pull_event().expect("an EOS event");
        if ev.type_() == gst::EventType::Eos {
            break;
        }
    }
}

#[test]
fn a_thousand_playing_null_cycles_leak_no_fd_or_mapping() {
    run_alone("cycles_body");
}

#[test]
#[ignore = "run alone by a_thousand_playing_null_cycles_leak_no_fd_or_mapping"]
fn cycles_body() {
    init();
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=1 ! video/x-raw,format=YUY2,width=64,height=48 ! dmabridgeconvert ! video/x-raw,format=RGBA ! fakesink",
    )
    .unwrap();
    let cycle = || {
        pipeline.set_state(gst::State::Playing).unwrap();
        let bus = pipeline.bus().unwrap();
        let msg =
            bus.timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Eos, gst::MessageType::Error]);
        assert!(matches!(msg.as_ref().map(|m| m.view()), Some(gst::MessageView::Eos(_))), "{msg:?}");
        pipeline.set_state(gst::State::Null).unwrap();
    };
    assert_no_leak_over_cycles(1000, cycle);
}

/// Foreign memory that claims to be a dma-buf is never mapped and copied:
/// dmabridgeconvert imports it into the device's context, and where that
/// cannot be done (here: a memfd wrapped by GStreamer's dma-buf allocator,
/// which the CPU could have mapped) the frame fails with an error naming
/// the device and why.
#[test]
fn a_foreign_dma_buf_that_cannot_be_imported_fails_naming_the_device() {
    use gst_allocators::prelude::*;
    init();
    let mut h = Harness::new("dmabridgeconvert");
    let bus = gst::Bus::new();
    h.element().unwrap().set_bus(Some(&bus));
    h.set_src_caps_str(&caps_in(16, 4, "bt601"));
    h.set_sink_caps_str("video/x-raw,format=RGBA");
    let memfd = dmabridge::sys::memfd::Memfd::create(c"frame", 128).unwrap();
    let allocator = gst_allocators::DmaBufAllocator::new();
    // SAFETY: the memory takes the fd over (and closes it); 128 bytes.
    let mem = unsafe { allocator.alloc_dmabuf(memfd.into_fd(), 128) }.unwrap();
    let mut buf = gst::Buffer::new();
    buf.get_mut().unwrap().append_memory(mem);
    assert_eq!(h.push(buf), Err(gst::FlowError::Error));
    let msg = bus.pop_filtered(&[gst::MessageType::Error]).expect("an error message");
    let gst::MessageView::Error(e) = msg.view() else { unreachable!() };
    let why = e.error().to_string();
    let cpu = &dmabridge::runtime::platform::Platform::get().cpu().name;
    assert!(
        why.contains(&format!("device {cpu:?}")) && why.contains("not one") && why.contains("does not copy"),
        "{why}"
    );
}
