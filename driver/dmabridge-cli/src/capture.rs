//! `dmabridge capture`: the zero-copy capture pipeline for a user.
//!
//! V4L2 capture device → frames written by the driver straight into
//! dmabridge memory (exported as dma-bufs, `V4L2_MEMORY_DMABUF`; or the
//! driver's own buffers imported with `clImportMemoryARM`) → `yuyv_to_rgba`
//! on a dmabridge queue, in place → a few frames as PNG. Prints per-frame
//! latency (frame handed back by the driver to converted), frames/s, dropped frames and the
//! bytes dmabridge copied: 0.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use dmabridge::pipeline::capture::{
    find_capture_device, hdmi_output, Converter, FrameMemory, ImageConverter, KernelConverter, Sink, Stream,
    StreamConfig, FRAME_KERNEL_SIGNATURE,
};
use dmabridge::pipeline::sequence::SequenceCounter;
use dmabridge::runtime::{context::Context, platform::Platform};
use dmabridge::sys::v4l2::{FourCc, VideoDevice};

use crate::Outcome;

/// How long a frame may take before the capture is declared stuck.
const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

/// The long help of `dmabridge capture`.
pub fn long_about() -> String {
    format!(
        "\
Capture frames from a V4L2 device without copying them: the driver writes each
frame straight into dmabridge memory (buffer objects or USM allocations,
exported as dma-bufs and queued with V4L2_MEMORY_DMABUF), or, with --import,
into its own buffers, which dmabridge imports (VIDIOC_EXPBUF, then
clImportMemoryARM). The built-in kernel yuyv_to_rgba converts every frame on a
dmabridge queue where it lies; a few frames are written as PNG. With --output,
every frame is also shown on a V4L2 output device: the same dma-buf, no copy.

With --kernel FILE.cl[:NAME], your own OpenCL C kernel runs on every frame
instead of the built-in conversion, where the frame lies (PoCL compiles it:
apt install pocl-opencl-icd). It takes the built-in's arguments,
  {FRAME_KERNEL_SIGNATURE}
(src: the YUYV frame at its line pitch src_stride; dst: the RGBA image,
dst_stride = width * 4) and runs over {{ceil(width / 2), height}} work-items,
one per pair of pixels, as examples/cl/yuyv_to_rgba.cl does; NAME defaults to
the file's only kernel; --kernel-options passes build options (-D NAME=VALUE,
-cl-fast-relaxed-math, ...). A build error prints the build log. PoCL keeps
what it compiles in $POCL_CACHE_DIR (default ~/.cache/pocl/kcache): on a
read-only root, point POCL_CACHE_DIR at a writable folder.

Prints a line per frame (sequence number, buffer, latency from the moment the
driver hands the frame back to the converted image), then frames/s, dropped
frames (gaps in the sequence numbers; a number the driver gave twice makes up
for the next gap, as GStreamer counts too), CPU time per frame and the bytes
dmabridge copied, counted by the buffers themselves: 0 (anything else is an
error). A progress line goes to stderr while it runs.

Needs a capture device: vivid (modprobe vivid) gives one{}.",
        dmabridge::sys::hints::checkout_only(
            "; `make demo` runs this\nin the QEMU guest and leaves the PNGs on the host"
        )
    )
}

/// Options of `dmabridge capture`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The capture device (default: the first /dev/video* that captures).
    #[arg(long)]
    device: Option<PathBuf>,
    /// Frame size, WIDTHxHEIGHT.
    #[arg(long, default_value = "640x480", value_parser = parse_size)]
    size: (u32, u32),
    /// Pixel format (yuyv: what the converter takes).
    #[arg(long, default_value = "yuyv", value_parser = parse_format)]
    format: FourCc,
    /// Frames to capture.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..))]
    frames: u32,
    /// Frames per second to ask the device for (default: the device's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    fps: Option<u32>,
    /// Buffers in flight (default 4; 8 with --output, where two wait at
    /// the output and the capture needs the rest to ride out the two
    /// devices' clocks slipping against each other).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=32))]
    buffers: Option<u32>,
    /// Where the frames live: buffer (buffer objects), usm-host or
    /// usm-shared (USM allocations), all exported as dma-bufs; or driver
    /// (the same as --import), or driver-khr (the driver's buffers
    /// imported with cl_khr_external_memory_dma_buf, each conversion
    /// between acquire and release).
    #[arg(long, default_value = "buffer", conflicts_with = "import")]
    memory: FrameMemory,
    /// Capture into the driver's own buffers and import them
    /// (VIDIOC_EXPBUF, clImportMemoryARM) instead of exporting dmabridge's.
    #[arg(long)]
    import: bool,
    /// Show every captured frame on this V4L2 output device too: the same
    /// dma-buf is queued there (no copy), and goes back to the capture once
    /// shown; at most two frames wait at the output, so the capture keeps the
    /// rest. An HDMI output is set to the DV timings of --size.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Do not convert the frames (no yuyv_to_rgba, no PNG): capture, and
    /// forward with --output, only.
    #[arg(long)]
    no_convert: bool,
    /// Hand frames to the kernel as images: each frame a CL_YUYV_INTEL 2D
    /// image at the frame's row pitch over its memory (driver-khr: the
    /// dma-buf imported as an image, clCreateImageWithProperties), converted
    /// by yuyv_to_rgba_image into a CL_RGBA image; the same bytes as
    /// without, nothing copied. Not with usm-host or usm-shared.
    #[arg(long, conflicts_with = "no_convert")]
    images: bool,
    /// Run your OpenCL C kernel NAME of FILE.cl on every frame instead of
    /// the built-in conversion (PoCL compiles it; NAME defaults to the
    /// file's only kernel): `kernel void NAME(global const uchar *src,
    /// global uchar *dst, uint width, uint height, uint src_stride, uint
    /// dst_stride)` over {ceil(width / 2), height} work-items, as
    /// examples/cl/yuyv_to_rgba.cl.
    #[arg(long, value_name = "FILE.cl[:NAME]", conflicts_with_all = ["no_convert", "images"], value_parser = parse_kernel)]
    kernel: Option<(PathBuf, Option<String>)>,
    /// Build options for --kernel's program, as clBuildProgram takes them
    /// (e.g. --kernel-options='-D GAIN=2 -cl-fast-relaxed-math'); a wrong
    /// option fails before the first frame with PoCL's CL_INVALID_BUILD_OPTIONS.
    #[arg(long, value_name = "OPTIONS", requires = "kernel", allow_hyphen_values = true, default_value = "")]
    kernel_options: String,
    /// No line per frame: the summary only.
    #[arg(long)]
    quiet: bool,
    /// Folder for the PNGs (created if missing).
    #[arg(long, default_value = "dmabridge-capture")]
    png_dir: PathBuf,
    /// How many frames to write as PNG (first, last, and evenly between);
    /// 0 writes none.
    #[arg(long, default_value_t = 3)]
    png_count: u32,
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("{s:?} is not a size: write WIDTHxHEIGHT, e.g. 640x480");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if w == 0 || h == 0 || w % 2 != 0 {
        return Err(format!("{s:?}: width and height must be positive and the width even (YUYV pairs pixels)"));
    }
    Ok((w, h))
}

/// `FILE.cl[:NAME]`: the file and, after the last colon, a kernel name (a
/// C identifier; a colon followed by anything else is part of the path).
fn parse_kernel(s: &str) -> Result<(PathBuf, Option<String>), String> {
    let ident = |n: &str| {
        n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let (file, name) = match s.rsplit_once(':') {
        Some((file, name)) if ident(name) => (file, Some(name.to_owned())),
        _ => (s, None),
    };
    if file.is_empty() {
        return Err(format!("{s:?}: write FILE.cl or FILE.cl:NAME"));
    }
    Ok((PathBuf::from(file), name))
}

fn parse_format(s: &str) -> Result<FourCc, String> {
    match s.to_ascii_lowercase().as_str() {
        "yuyv" => Ok(FourCc::YUYV),
        _ => Err(format!("{s:?}: only yuyv is supported (the format yuyv_to_rgba converts)")),
    }
}

/// Which of `n` frames are written as PNG: `count` of them, first and last
/// included, evenly spread.
fn png_frames(n: u32, count: u32) -> Vec<u32> {
    match count.min(n) {
        0 => Vec::new(),
        1 => vec![0],
        c => (0..c).map(|i| (i as u64 * (n - 1) as u64 / (c - 1) as u64) as u32).collect(),
    }
}

fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) -> anyhow::Result<()> {
    let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().with_context(|| format!("writing {}", path.display()))?;
    w.write_image_data(rgba).with_context(|| format!("writing {}", path.display()))?;
    w.finish().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// The progress line on stderr: rewritten in place on a terminal, a line
/// a second otherwise.
struct Progress {
    tty: bool,
    last: Option<Instant>,
}

impl Progress {
    fn show(&mut self, done: u32, total: u32, start: Instant) {
        let now = Instant::now();
        if !self.tty && self.last.is_some_and(|t| now - t < Duration::from_secs(1)) && done < total {
            return;
        }
        self.last = Some(now);
        let secs = (now - start).as_secs_f64();
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let line = format!("capture: {done}/{total} frames, {rate:.1} frames/s");
        let mut err = std::io::stderr().lock();
        // Progress is best effort: a closed stderr does not stop the capture.
        let _ = if self.tty { write!(err, "\r{line}\x1b[K") } else { writeln!(err, "{line}") };
        let _ = err.flush();
    }

    /// Takes the progress line off a terminal before a result line is
    /// printed (the next `show` draws it again).
    fn clear(&self) {
        if self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

/// The CPU time this process used so far, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec.clamp(0, 999_999_999) as u32)
}

/// The conversion `--images` or `--kernel` picks.
enum Convert {
    Buffers(Converter),
    Images(ImageConverter),
    Kernel(KernelConverter),
}

/// The converter of `--kernel FILE[:NAME]`: the file read and built, or
/// the build log with the file named.
fn kernel_converter(
    ctx: &std::sync::Arc<Context>,
    stream: &Stream,
    (file, name): &(PathBuf, Option<String>),
    options: &str,
) -> anyhow::Result<KernelConverter> {
    let source =
        std::fs::read_to_string(file).with_context(|| format!("reading the OpenCL C kernel {}", file.display()))?;
    let c = KernelConverter::new(ctx, &stream.format(), &source, name.as_deref(), options).with_context(|| {
        let with = if options.is_empty() { String::new() } else { format!(" with options {options:?}") };
        format!("building the OpenCL C kernel in {}{with}", file.display())
    })?;
    println!("kernel: {} of {}, compiled by PoCL, on every frame where it lies", c.name(), file.display());
    Ok(c)
}

/// Runs the capture.
pub fn run(args: &Args) -> Outcome {
    let (width, height) = args.size;
    let memory = if args.import { FrameMemory::Driver } else { args.memory };
    let dev = find_capture_device(args.device.as_deref()).context("finding the capture device")?;
    let path = dev.path().to_owned();
    let cap = dev.capability().clone();
    let cpu = Platform::get().cpu();
    let ctx = Context::new(std::slice::from_ref(cpu)).context("creating a context on the CPU device")?;
    let buffers = args.buffers.unwrap_or(if args.output.is_some() { 8 } else { 4 });
    let cfg = StreamConfig { width, height, fourcc: args.format, fps: args.fps, buffers, memory };
    let mut stream =
        Stream::capture(&ctx, dev, &cfg).with_context(|| format!("setting up the capture on {}", path.display()))?;
    let (num, den) = stream.device().frame_rate(dmabridge::sys::v4l2::BufType::Capture).unwrap_or((0, 0));
    let rate = if num > 0 { format!("{:.2} frames/s", den as f64 / num as f64) } else { "the device's rate".into() };
    let how = match memory {
        FrameMemory::Driver => "the driver's buffers, exported (VIDIOC_EXPBUF) and imported (clImportMemoryARM)",
        FrameMemory::DriverKhr => {
            "the driver's buffers, exported (VIDIOC_EXPBUF) and imported the Khronos way \
             (cl_khr_external_memory_dma_buf, each conversion between acquire and release)"
        }
        FrameMemory::Buffer => "buffer objects exported as dma-bufs (V4L2_MEMORY_DMABUF)",
        FrameMemory::UsmHost => "USM host allocations exported as dma-bufs (V4L2_MEMORY_DMABUF)",
        FrameMemory::UsmShared => "USM shared allocations exported as dma-bufs (V4L2_MEMORY_DMABUF)",
    };
    println!(
        "capture: {} ({}, {}): {width}x{height} {} at {rate}; {} frames in {how}",
        path.display(),
        cap.card,
        cap.bus_info,
        args.format,
        stream.frames().len()
    );
    let mut sink = match &args.output {
        None => None,
        Some(out) => {
            let dev = VideoDevice::open(out).with_context(|| format!("opening the output device {}", out.display()))?;
            if dev.outputs().is_ok_and(|o| o.iter().any(|p| p.name.starts_with("HDMI"))) {
                hdmi_output(&dev, width, height, args.fps.unwrap_or(60) as f64)
                    .with_context(|| format!("setting up {}", out.display()))?;
            }
            let sink = Sink::new(dev, &stream, args.fps).with_context(|| format!("setting up {}", out.display()))?;
            println!("output: every frame shown on {} too (the same dma-buf, no copy)", out.display());
            Some(sink)
        }
    };
    let mut converter = match (args.no_convert, args.images) {
        (true, _) => None,
        (false, false) if args.kernel.is_some() => args
            .kernel
            .as_ref()
            .map(|k| kernel_converter(&ctx, &stream, k, &args.kernel_options))
            .transpose()?
            .map(Convert::Kernel),
        (false, false) => {
            Some(Convert::Buffers(Converter::new(&ctx, &stream.format()).context("setting up yuyv_to_rgba")?))
        }
        (false, true) => {
            println!("images: each frame a CL_YUYV_INTEL image at its row pitch, converted by yuyv_to_rgba_image");
            Some(Convert::Images(ImageConverter::new(&ctx, &stream.format()).context("setting up yuyv_to_rgba_image")?))
        }
    };
    let pngs = if args.no_convert { Vec::new() } else { png_frames(args.frames, args.png_count) };
    if !pngs.is_empty() {
        std::fs::create_dir_all(&args.png_dir).with_context(|| format!("creating {}", args.png_dir.display()))?;
    }
    stream.queue_all().context("queueing the frames")?;
    stream.start().with_context(|| format!("starting the stream on {}", path.display()))?;
    if !args.quiet {
        println!("{:>6} {:>8} {:>6} {:>10}", "frame", "sequence", "buffer", "latency");
    }
    let mut progress = Progress { tty: std::io::stderr().is_terminal(), last: None };
    let start = Instant::now();
    let cpu_start = cpu_time();
    let mut sequence = SequenceCounter::default();
    let mut latencies = Vec::with_capacity(args.frames as usize);
    let mut written = Vec::new();
    let mut corrupted_frames = 0u32;
    for n in 0..args.frames {
        let d = stream.dequeue(FRAME_TIMEOUT).with_context(|| format!("waiting for frame {n}"))?;
        let handed_back = Instant::now();
        sequence.observe(d.sequence);
        // A frame the driver flagged as corrupted is not a picture: neither
        // converted nor written, only counted (and shown on the output, which
        // keeps its pace).
        let corrupted = d.is_corrupted();
        corrupted_frames += u32::from(corrupted);
        if let Some(converter) = converter.as_mut().filter(|_| !corrupted) {
            let rgba = match converter {
                Convert::Buffers(c) => c.convert(&stream, d.index),
                Convert::Images(c) => c.convert(&stream, d.index),
                Convert::Kernel(c) => c.convert(&stream, d.index),
            }
            .with_context(|| format!("converting frame {n}"))?;
            if pngs.contains(&n) {
                let file = args.png_dir.join(format!("frame-{n:03}.png"));
                write_png(&file, width, height, rgba)?;
                written.push(file);
            }
        }
        let latency = handed_back.elapsed();
        match sink.as_mut() {
            None => stream.queue(d.index).with_context(|| format!("queueing buffer {} again", d.index))?,
            Some(sink) => sink
                .forward(&mut stream, d.index, FRAME_TIMEOUT)
                .with_context(|| format!("showing frame {n} on the output"))?,
        }
        latencies.push(latency);
        if !args.quiet {
            progress.clear();
            let note = if corrupted { "  flagged corrupted by the driver: not converted" } else { "" };
            println!("{n:>6} {:>8} {:>6} {:>10}{note}", d.sequence, d.index, ms(latency));
        }
        progress.show(n + 1, args.frames, start);
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_start);
    progress.clear();
    stream.stop().context("stopping the stream")?;
    let copied = stream.bytes_copied();
    latencies.sort();
    let pick = |q: usize| latencies[(latencies.len() - 1) * q / 100];
    println!(
        "captured {} frames in {:.2} s: {:.1} frames/s, {} dropped (sequence gaps: {} numbers skipped, {} repeated); \
         latency min {} median {} max {}",
        args.frames,
        elapsed.as_secs_f64(),
        args.frames as f64 / elapsed.as_secs_f64(),
        sequence.dropped(),
        sequence.skipped(),
        sequence.repeated(),
        ms(pick(0)),
        ms(pick(50)),
        ms(pick(100))
    );
    if corrupted_frames > 0 {
        println!(
            "{corrupted_frames} frame(s) flagged corrupted by the driver (V4L2_BUF_FLAG_ERROR): not converted; \
             check the source's signal and cabling"
        );
    }
    println!(
        "CPU time: {:.3} ms per frame (this process, all threads: {} in all)",
        cpu.as_secs_f64() * 1e3 / args.frames as f64,
        ms(cpu)
    );
    let reader = match &converter {
        Some(Convert::Kernel(c)) => c.name().to_owned(),
        Some(Convert::Images(_)) => "yuyv_to_rgba_image".into(),
        _ => "yuyv_to_rgba".into(),
    };
    println!("bytes copied by dmabridge: {copied} (the driver wrote the frames into memory {reader} read in place)");
    if !written.is_empty() {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        println!("PNG: {}", names.join(", "));
    }
    if copied != 0 {
        bail!("dmabridge copied {copied} bytes of frame data: the zero-copy path did not hold");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_png_picks() {
        assert_eq!(parse_size("640x480"), Ok((640, 480)));
        assert!(parse_size("641x480").is_err() && parse_size("0x4").is_err() && parse_size("640").is_err());
        assert_eq!(parse_format("YUYV"), Ok(FourCc::YUYV));
        assert!(parse_format("rgb").is_err());
        assert_eq!(parse_kernel("k.cl"), Ok((PathBuf::from("k.cl"), None)));
        assert_eq!(parse_kernel("dir/k.cl:yuyv_2"), Ok((PathBuf::from("dir/k.cl"), Some("yuyv_2".into()))));
        assert_eq!(parse_kernel("c:/k.cl"), Ok((PathBuf::from("c:/k.cl"), None)));
        assert!(parse_kernel(":name").is_err());
        assert_eq!(png_frames(60, 3), vec![0, 29, 59]);
        assert_eq!(png_frames(2, 3), vec![0, 1]);
        assert_eq!(png_frames(10, 1), vec![0]);
        assert!(png_frames(10, 0).is_empty());
    }
}
