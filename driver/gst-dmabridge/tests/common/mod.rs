//! Helpers the plugin's test binaries share.
#![allow(dead_code)]

use gst::prelude::*;
use gst_video::prelude::*;

/// GStreamer initialised and the plugin registered (statically, as
/// gst-plugins-rs tests do), once per process.
pub fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        gst::init().expect("gst::init");
        gstdmabridge::plugin_register_static().expect("registering the dmabridge plugin");
    });
}

/// A YUY2 frame of `w` x `h` with lines of `stride` bytes, pseudo-random
/// bytes (seeded) in the pixels and 0xee in the padding.
pub fn yuy2_frame(w: usize, h: usize, stride: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    let line = w.div_ceil(2) * 4;
    let mut v = vec![0xeeu8; stride * h];
    for r in 0..h {
        for b in &mut v[r * stride..r * stride + line] {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            *b = s as u8;
        }
    }
    v
}

/// The 4-byte pixel `x` of line `r` of `frame` converted with dmabridge's
/// reference (`yuv_to_rgb`), in `format`'s byte order.
pub fn expected_pixel(frame: &[u8], stride: usize, x: usize, r: usize, format: &str) -> [u8; 4] {
    let pair = &frame[r * stride + x / 2 * 4..][..4];
    let [red, g, b] = dmabridge::runtime::kernel::yuv_to_rgb(pair[2 * (x % 2)], pair[1], pair[3]);
    match format {
        "RGBA" => [red, g, b, 255],
        _ => [b, g, red, 255],
    }
}

/// The process's open fds, mappings (lines of /proc/self/maps) and
/// resident memory in KiB (VmRSS).
pub fn fds_maps_rss() -> (usize, usize, usize) {
    let fds = std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0);
    let maps = std::fs::read_to_string("/proc/self/maps").map(|m| m.lines().count()).unwrap_or(0);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok());
    (fds, maps, rss.unwrap_or(0))
}

/// Runs `cycle` 20 times (one-time allocations of GStreamer, glibc's
/// per-thread arenas, dmabridge's platform), then `n` times, and checks
/// that the fds did not change, the mappings and the resident memory did
/// not grow with the cycles: the last `n / 2` add at most 2 mappings and 2 MiB.
pub fn assert_no_leak_over_cycles(n: usize, mut cycle: impl FnMut()) {
    (0..20).for_each(|_| cycle());
    let warm = fds_maps_rss();
    (0..n / 2).for_each(|_| cycle());
    let half = fds_maps_rss();
    (0..n - n / 2).for_each(|_| cycle());
    let end = fds_maps_rss();
    println!("fds, mappings, RSS KiB: after warm-up {warm:?}, {} cycles {half:?}, {n} cycles {end:?}", n / 2);
    assert_eq!((half.0, end.0), (warm.0, warm.0), "open fds over the cycles: {warm:?} {half:?} {end:?}");
    // A leak of one mapping per cycle shows as hundreds over 500 cycles; the slack
    // is for glibc's malloc arenas, which streaming threads create lazily when
    // they contend on a loaded machine (one or two mappings each, at most 8 per
    // core): 185 -> 189 was seen once under load with no leak behind it.
    assert!(end.1 <= half.1 + 16 && end.1 <= warm.1 + 32, "mappings grow with the cycles: {warm:?} {half:?} {end:?}");
    assert!(end.2 <= half.2 + 2048, "resident memory grows with the cycles: {warm:?} {half:?} {end:?}");
}

/// Runs the `#[ignore]`d test `name` of this test binary alone in a child
/// process (tests that count what the process holds must not share it).
pub fn run_alone(name: &str) {
    let exe = std::env::current_exe().expect("the test executable");
    let out = std::process::Command::new(exe)
        .args(["--exact", name, "--ignored", "--nocapture", "--test-threads=1"])
        .output()
        .expect("running the test alone");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{name} run alone failed:\n{text}");
}

/// Converts the element's output buffer to bytes, row by row of its
/// video meta (or the default layout).
pub fn plane0(buf: &gst::BufferRef, info: &gst_video::VideoInfo) -> (Vec<u8>, usize) {
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buf, info).expect("a mappable output frame");
    (frame.plane_data(0).expect("plane 0").to_vec(), frame.plane_stride()[0] as usize)
}

/// Every element of `pipeline` in NULL.
pub fn stop(pipeline: &gst::Element) {
    pipeline.set_state(gst::State::Null).expect("to NULL");
}
