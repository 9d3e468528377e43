//! vivid capture → YUY2-to-BGRx conversion → vivid output, in the QEMU
//! guest (`make bench`; issue 19's pipeline benchmark), two pipelines on the
//! same devices in the same run:
//!
//! - ours: `v4l2src io-mode=dmabuf-import` (vivid captures into the pool
//!   `dmabridgeconvert` offers, dmabridge memory exported as dma-bufs)
//!   `! dmabridgeconvert ! v4l2sink io-mode=dmabuf-import` (the output
//!   queues the fds of the element's output pool: no copy on either side);
//! - the peer: `v4l2src ! videoconvert ! v4l2sink`, default io-modes.
//!
//! For each: CPU time of the process per frame (`CLOCK_PROCESS_CPUTIME_ID`:
//! all threads, those ended too, as getrusage sums them) between frame
//! `SKIP` and the last at the output, so start-up is left out; frames/s in
//! that window; dropped frames counted from the capture's sequence numbers
//! (`v4l2src` puts the driver's in the buffer offset) the way dmabridge
//! counts them (`pipeline::sequence`), and v4l2src's QoS messages (it posts
//! one per gap it sees); and the breakdown: the converter's share (thread
//! CPU time from its input to its output, in the one streaming thread).
//!
//! vivid's capture is on its HDMI input, drawing its test pattern, and the
//! output on its HDMI output, both at the CTA-861 timings of the size near
//! 60 Hz. Run with one vCPU (see bench/capture/run-guest for why).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use dmabridge::pipeline::capture::{find_capture_device, find_output_beside, hdmi_output};
use dmabridge::pipeline::sequence::SequenceCounter;
use dmabridge::sync::lock;
use dmabridge::sys::v4l2::{DvTimings, VideoDevice};
use gst::prelude::*;
use rustix::time::{clock_gettime, ClockId};

/// Frames left out of the window at the start.
const SKIP: u64 = 60;
const TARGET_CPU_RATIO: f64 = 0.5;

fn cpu_ns(clock: ClockId) -> u64 {
    let t = clock_gettime(clock);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// One run's figures.
#[derive(Default, Clone, Copy)]
struct Run {
    cpu_ms_per_frame: f64,
    convert_ms_per_frame: f64,
    fps: f64,
    dropped: u64,
    qos: u64,
}

/// What the probes record while a pipeline runs.
#[derive(Default)]
struct Probes {
    shown: AtomicU64,
    convert_ns: AtomicU64,
    /// (process CPU ns, time) at frame `SKIP` and at the last frame.
    marks: Mutex<Vec<(u64, Instant)>>,
    sequence: Mutex<SequenceCounter>,
}

/// Runs `converter` between vivid's capture and output for `frames`
/// frames of `w`x`h`.
fn run(converter: &str, io: &str, w: u32, h: u32, frames: u64) -> Result<Run, String> {
    let desc = format!(
        "v4l2src name=src device=/dev/video0 {io} num-buffers={frames} ! video/x-raw,format=YUY2,width={w},height={h} \
         ! {converter} name=conv ! video/x-raw,format=BGRx,colorimetry=sRGB ! v4l2sink name=sink device=/dev/video1 {io} sync=false"
    );
    let pipeline = gst::parse::launch(&desc).map_err(|e| format!("{desc}: {e}"))?;
    let bin = pipeline.clone().downcast::<gst::Bin>().map_err(|_| "not a bin".to_string())?;
    let pad = |el: &str, pad: &str| bin.by_name(el).and_then(|e| e.static_pad(pad)).expect("the pipeline's pads");
    let probes = Arc::new(Probes::default());
    let p = probes.clone();
    pad("src", "src").add_probe(gst::PadProbeType::BUFFER, move |_, info| {
        if let Some(b) = info.buffer() {
            lock(&p.sequence).observe(b.offset() as u32);
        }
        gst::PadProbeReturn::Ok
    });
    // The converter's share: the process's CPU time from a frame entering
    // it to the frame leaving it. The streaming thread runs it (no queue in
    // the pipelines), or waits for the threads that do (dmabridge's queue
    // worker): nothing else of the pipeline runs meanwhile.
    let entered = Arc::new(AtomicU64::new(0));
    let e = entered.clone();
    pad("conv", "sink").add_probe(gst::PadProbeType::BUFFER, move |_, _| {
        e.store(cpu_ns(ClockId::ProcessCPUTime), Relaxed);
        gst::PadProbeReturn::Ok
    });
    let p = probes.clone();
    pad("conv", "src").add_probe(gst::PadProbeType::BUFFER, move |_, _| {
        let spent = cpu_ns(ClockId::ProcessCPUTime).saturating_sub(entered.load(Relaxed));
        p.convert_ns.fetch_add(spent, Relaxed);
        let n = p.shown.fetch_add(1, Relaxed) + 1;
        if n == SKIP || n == frames {
            lock(&p.marks).push((cpu_ns(ClockId::ProcessCPUTime), Instant::now()));
        }
        if n == SKIP {
            p.convert_ns.store(0, Relaxed);
        }
        gst::PadProbeReturn::Ok
    });
    pipeline.set_state(gst::State::Playing).map_err(|e| format!("{desc}: to PLAYING: {e}"))?;
    let bus = pipeline.bus().expect("a pipeline's bus");
    // Under TCG the converters are slow (videoconvert at 1280x720 came to
    // 4 frames/s): the run fails only below 2.
    let timeout = gst::ClockTime::from_seconds(frames / 2 + 60);
    let mut qos = 0;
    let outcome = loop {
        let types = [gst::MessageType::Eos, gst::MessageType::Error, gst::MessageType::Qos];
        match bus.timed_pop_filtered(timeout, &types).as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Qos(_)) => qos += 1,
            Some(gst::MessageView::Eos(_)) => break Ok(()),
            Some(gst::MessageView::Error(e)) => break Err(format!("{desc}: {} ({:?})", e.error(), e.debug())),
            _ => break Err(format!("{desc}: no end within {timeout}")),
        }
    };
    pipeline.set_state(gst::State::Null).map_err(|e| format!("{desc}: to NULL: {e}"))?;
    outcome?;
    let marks = lock(&probes.marks).clone();
    let [(c0, t0), (c1, t1)] = marks[..] else {
        return Err(format!("{desc}: {} frames reached the output, not {frames}", probes.shown.load(Relaxed)));
    };
    let window = (frames - SKIP) as f64;
    let dropped = lock(&probes.sequence).dropped();
    Ok(Run {
        cpu_ms_per_frame: (c1 - c0) as f64 / 1e6 / window,
        convert_ms_per_frame: probes.convert_ns.load(Relaxed) as f64 / 1e6 / window,
        fps: window / t1.duration_since(t0).as_secs_f64(),
        dropped,
        qos,
    })
}

/// vivid's HDMI input drawing its test pattern at `timings` (not looped
/// back from the output: the output shows BGRx, the capture gives YUYV).
fn hdmi_test_pattern(capture: &VideoDevice, timings: &DvTimings) -> Result<(), String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{}: {what}: {e}", capture.path().display());
    let inputs = capture.inputs().map_err(|e| fail("listing inputs", &e))?;
    let hdmi = inputs.iter().find(|i| i.name.starts_with("HDMI")).ok_or_else(|| fail("inputs", &"no HDMI input"))?;
    capture.set_input(hdmi.index).map_err(|e| fail("selecting the HDMI input", &e))?;
    capture.set_dv_timings(timings).map_err(|e| fail("setting DV timings", &e))?;
    let name = format!("{} Is Connected To", hdmi.name);
    if let Some(control) = capture.find_control(&name).map_err(|e| fail(&name, &e))? {
        let items = capture.menu_items(&control).map_err(|e| fail(&name, &e))?;
        if let Some((tpg, _)) = items.iter().find(|(_, n)| n.starts_with("Test Pattern")) {
            capture.set_control(control.id, *tpg as i32).map_err(|e| fail(&name, &e))?;
        }
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

fn main() {
    let arg = |name: &str, default: u64| {
        let args: Vec<String> = std::env::args().collect();
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(default)
    };
    let (frames, rounds) = (arg("--frames", 300).max(SKIP + 60), arg("--rounds", 2).max(1));
    // --only ours|peer: one of the two (for a profiler), no ratio.
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    // --size WxH: that size only.
    let size = std::env::args().skip_while(|a| a != "--size").nth(1);
    let capture = match find_capture_device(None) {
        Ok(c) => c,
        Err(e) => {
            println!(
                "guest_pipeline: {e}; it runs in the QEMU guest with vivid (`make bench`, or \
                 qemu/run-in-guest --smp 1 --module vivid -- THIS-BINARY)"
            );
            return;
        }
    };
    let output = find_output_beside(&capture).expect("vivid's output beside its capture");
    gst::init().expect("gst::init");
    gstdmabridge::plugin_register_static().expect("registering the dmabridge plugin");
    println!(
        "== vivid capture -> YUY2 to BGRx -> vivid output (QEMU guest, HDMI timings ~60 Hz), {frames} frames a run, \
         CPU over frames {SKIP}..{frames}, {rounds} rounds in turn"
    );
    println!("   ours: v4l2src io-mode=dmabuf-import ! dmabridgeconvert ! v4l2sink io-mode=dmabuf-import");
    println!("   peer: v4l2src ! videoconvert ! v4l2sink (default io-modes)");
    let mut failed = false;
    for (w, h) in [(640, 480), (1280, 720)] {
        if size.as_ref().is_some_and(|s| *s != format!("{w}x{h}")) {
            continue;
        }
        let (_, timings) = hdmi_output(&output, w, h, 60.0).expect("vivid's HDMI output at the size");
        hdmi_test_pattern(&capture, &timings).expect("vivid's HDMI input at the size");
        println!("{w}x{h} ({:.2} Hz):", timings.fps());
        println!(
            "  {:6} {:>5} {:>9} {:>9} {:>13} {:>15} {:>5}",
            "", "round", "frames/s", "dropped", "CPU ms/frame", "of it conv.", "QoS"
        );
        let (mut ours, mut peer) = (Vec::new(), Vec::new());
        for round in 1..=rounds {
            for (name, conv, io, into) in [
                ("ours", "dmabridgeconvert", "io-mode=dmabuf-import", &mut ours),
                ("peer", "videoconvert", "", &mut peer),
            ] {
                if only.as_ref().is_some_and(|o| o != name) {
                    continue;
                }
                match run(conv, io, w, h, frames) {
                    Ok(r) => {
                        println!(
                            "  {name:6} {round:>5} {:>9.1} {:>9} {:>13.3} {:>15.3} {:>5}",
                            r.fps, r.dropped, r.cpu_ms_per_frame, r.convert_ms_per_frame, r.qos
                        );
                        into.push(r);
                    }
                    Err(e) => {
                        println!("  {name:6} {round:>5} failed: {e}");
                        failed = true;
                    }
                }
            }
        }
        if ours.is_empty() || peer.is_empty() {
            continue;
        }
        let cpu = |v: &[Run]| median(v.iter().map(|r| r.cpu_ms_per_frame).collect());
        let ratios: Vec<f64> = ours.iter().zip(&peer).map(|(o, p)| o.cpu_ms_per_frame / p.cpu_ms_per_frame).collect();
        let dropped = |v: &[Run]| v.iter().map(|r| r.dropped).sum::<u64>();
        let (lo, hi) = ratios.iter().fold((f64::MAX, 0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        println!(
            "  ours / peer: CPU per frame {:.3} / {:.3} ms (medians) = {:.2}x, rounds {lo:.2}-{hi:.2}x (target <= {TARGET_CPU_RATIO}); \
             dropped {} vs {} in all rounds (target: no more than the peer)",
            cpu(&ours),
            cpu(&peer),
            cpu(&ours) / cpu(&peer),
            dropped(&ours),
            dropped(&peer)
        );
    }
    if failed {
        std::process::exit(1);
    }
}
