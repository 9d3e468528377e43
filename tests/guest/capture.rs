//! The zero-copy capture pipeline against the kernel's vivid driver (the
//! guest suite loads it with `--module vivid`: one instance, vmalloc
//! allocator, capture `/dev/video0`, output `/dev/video1`).
//!
//! Frame content is checked at known pixels: vivid's 640x480 YUYV test
//! pattern is 75% BT.601 colour bars, whose centres on line 240 have fixed
//! (Y, U, V) values; frame sequence numbers must increase. That dmabridge
//! copied no frame byte is counted: the buffers' per-location transfer
//! counters stay 0, and USM frames show the driver's bytes at their own
//! address.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use dmabridge::ext::{dma_buf_export, usm};
use dmabridge::pipeline::capture::{
    find_capture_device, find_output_beside, hdmi_loopback, Converter, FrameMemory, PipelineError, Sink, Stream,
    StreamConfig,
};
use dmabridge::runtime::buffer::store::Location;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::kernel::yuv_to_rgb;
use dmabridge::sys::access::Access;
use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::v4l2::Dequeued;
use dmabridge_tests::{cpu_context, require_guest, Resources};

use super::vivid;

const TIMEOUT: Duration = Duration::from_secs(20);
const W: u32 = 640;
const H: u32 = 480;

/// vivid's 75% colour bars: the (Y, U, V) at the centre of each bar, on
/// line 240 of a 640x480 YUYV frame.
const BARS: [(&str, [u8; 3]); 8] = [
    ("white", [179, 128, 128]),
    ("yellow", [160, 44, 141]),
    ("cyan", [130, 156, 44]),
    ("green", [111, 72, 58]),
    ("magenta", [83, 183, 197]),
    ("red", [64, 99, 211]),
    ("blue", [34, 211, 114]),
    ("black", [16, 128, 128]),
];

/// Byte offset of pixel pair (x, 240) in a YUYV frame, x even.
fn bar_offset(i: usize) -> usize {
    let x = (W as usize / 8) * i + W as usize / 16;
    (240 * W as usize + x) * 2
}

#[track_caller]
fn assert_bars_yuyv(yuyv: &[u8], what: &str) {
    for (i, (name, [y, u, v])) in BARS.iter().enumerate() {
        let o = bar_offset(i);
        let got = [yuyv[o], yuyv[o + 1], yuyv[o + 3]];
        assert_eq!(got, [*y, *u, *v], "{what}: the {name} bar's (Y, U, V) on line 240");
    }
}

#[track_caller]
fn assert_bars_rgba(rgba: &[u8], what: &str) {
    for (i, (name, [y, u, v])) in BARS.iter().enumerate() {
        let o = bar_offset(i) * 2;
        let [r, g, b] = yuv_to_rgb(*y, *u, *v);
        assert_eq!(rgba[o..o + 4], [r, g, b, 255], "{what}: the {name} bar in RGBA");
    }
}

/// The bytes of a dequeued frame, read through its dma-buf's own mapping.
fn frame_bytes(dmabuf: &DmaBuf, len: usize) -> Vec<u8> {
    let map = dmabuf.map(Access::Read).unwrap();
    let mut out = vec![0; len];
    let cpu = dmabuf.cpu_access(Access::Read).unwrap();
    map.read_bytes(0, &mut out);
    cpu.end().unwrap();
    out
}

/// Captures `n` frames into `memory`, checking each one's bars in YUYV and,
/// converted on a dmabridge queue, in RGBA; returns the sequence numbers.
fn capture_and_check(ctx: &Arc<Context>, memory: FrameMemory, n: usize) -> Vec<u32> {
    let cfg = StreamConfig { fps: Some(60), memory, ..StreamConfig::default() };
    let mut stream = Stream::capture(ctx, vivid::webcam(), &cfg).unwrap();
    let f = stream.format();
    assert_eq!((f.width, f.height, f.bytes_per_line, f.size_image), (W, H, W * 2, W * H * 2));
    let mut converter = Converter::new(ctx, &f).unwrap();
    stream.queue_all().unwrap();
    stream.start().unwrap();
    let mut seqs = Vec::new();
    let mut indices = Vec::new();
    for _ in 0..n {
        let d: Dequeued = stream.dequeue(TIMEOUT).unwrap();
        assert_eq!(d.bytes_used, f.size_image, "{memory:?}: a whole frame");
        let frame = &stream.frames()[d.index as usize];
        let yuyv = frame_bytes(frame.dmabuf(), f.size_image as usize);
        assert_bars_yuyv(&yuyv, &format!("{memory:?} frame {}", d.sequence));
        if let Some(p) = frame.usm_ptr() {
            // SAFETY: the frame is dequeued (the driver does not write it)
            // and is a USM allocation of `len` bytes that lives as long as
            // the stream.
            let at_ptr = unsafe { std::slice::from_raw_parts(p as *const u8, yuyv.len()) };
            assert!(at_ptr == yuyv, "{memory:?}: the driver's bytes are at the USM allocation itself");
        }
        let rgba = converter.convert(&stream, d.index).unwrap();
        assert_bars_rgba(rgba, &format!("{memory:?} frame {} converted", d.sequence));
        seqs.push(d.sequence);
        indices.push(d.index);
        stream.queue(d.index).unwrap();
    }
    // Each dequeue hands out a frame the driver filled since the last one:
    // with every buffer queued in turn, never the one just given back.
    // vivid numbers a frame by the time since the stream started, so two
    // ticks of its thread within one frame period carry one number: the
    // numbers may repeat (seen twice in one stream on a loaded host) but
    // never go back, and they advance.
    assert!(indices.windows(2).all(|w| w[0] != w[1]), "{memory:?}: a buffer twice in a row: {indices:?}");
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "{memory:?}: sequence numbers never go back: {seqs:?}");
    assert!(seqs[n - 1] > seqs[0], "{memory:?}: and advance: {seqs:?}");
    assert_eq!(stream.bytes_copied(), 0, "{memory:?}: dmabridge moved no frame byte");
    if memory == FrameMemory::Buffer {
        let b = stream.frames()[0].buffer().unwrap();
        assert_eq!(b.linked(dmabridge::runtime::platform::Platform::get().cpu()), Some(true));
    }
    seqs
}

/// Export direction: USM host and shared allocations and buffer objects,
/// exported as dma-bufs, are queued to vivid with `V4L2_MEMORY_DMABUF`;
/// the driver writes the test pattern straight into them and
/// `yuyv_to_rgba` converts it where it lies.
#[test]
fn vivid_captures_into_exported_usm_and_buffers() {
    require_guest();
    let ctx = cpu_context();
    // The first stream opens what the process keeps (/dev/udmabuf, the
    // queue's worker, the buffer heap); the later ones must leave nothing.
    let mut before = None;
    for memory in [FrameMemory::Buffer, FrameMemory::UsmHost, FrameMemory::UsmShared, FrameMemory::Buffer] {
        let seqs = capture_and_check(&ctx, memory, 8);
        println!("{memory:?}: frames {seqs:?}");
        before.get_or_insert_with(Resources::now).assert_unchanged();
    }
}

/// A second stream on a device whose queue another stream holds is refused
/// with the busy error (EBUSY), naming the device; the first one goes on.
#[test]
fn a_busy_device_is_reported_as_busy() {
    require_guest();
    let ctx = cpu_context();
    let mut first = Stream::capture(&ctx, vivid::webcam(), &StreamConfig::default()).unwrap();
    first.queue_all().unwrap();
    first.start().unwrap();
    let err = Stream::capture(&ctx, vivid::webcam(), &StreamConfig::default()).unwrap_err();
    assert!(matches!(&err, PipelineError::Busy { path, .. } if path.ends_with("video0")), "{err:?}");
    assert!(err.to_string().contains("busy"), "{err}");
    first.dequeue(TIMEOUT).unwrap();
    let missing = find_capture_device(Some("/dev/video99".as_ref())).unwrap_err();
    assert!(matches!(missing, PipelineError::Device { ref error, .. } if error.errno == rustix::io::Errno::NOENT));
}

/// Fills `len` bytes at `p` with frame `id`'s pattern (limited-range YUYV
/// values, different in every frame and on every line).
fn write_pattern(p: *mut u8, len: usize, id: u8) -> Vec<u8> {
    let bytes: Vec<u8> = (0..len).map(|i| 16 + ((i / 2 + i / 1280 * 3 + id as usize * 37) % 200) as u8).collect();
    // SAFETY: `p` is a USM allocation of at least `len` bytes that the
    // driver does not hold (not queued).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, len) };
    bytes
}

/// Output direction: frames written in dmabridge memory are consumed by
/// vivid's output device through `V4L2_MEMORY_DMABUF`; with the HDMI
/// output looped back to the HDMI input, the capture side (into exported
/// buffer objects) returns exactly those bytes.
#[test]
fn vivid_output_consumes_dmabridge_frames_and_hdmi_loopback_returns_them() {
    require_guest();
    let ctx = cpu_context();
    let capture = vivid::webcam();
    let output = find_output_beside(&capture).unwrap();
    let timings = hdmi_loopback(&capture, &output, W, H, 60.0).unwrap();
    assert_eq!((timings.width(), timings.height()), (W, H));
    let out_cfg = StreamConfig { memory: FrameMemory::UsmHost, ..StreamConfig::default() };
    let mut out = Stream::output(&ctx, output, &out_cfg).unwrap();
    let mut cap = Stream::capture(&ctx, capture, &StreamConfig::default()).unwrap();
    let size = out.format().size_image as usize;
    assert_eq!(cap.format().size_image as usize, size);
    // Frame ids 1.. are written; the bytes of each are kept to compare.
    let mut written: Vec<Vec<u8>> = vec![Vec::new()];
    let mut next_id = 1u8;
    for i in 0..out.frames().len() as u32 {
        written.push(write_pattern(out.frames()[i as usize].usm_ptr().unwrap(), size, next_id));
        next_id += 1;
        out.queue(i).unwrap();
    }
    out.start().unwrap();
    cap.queue_all().unwrap();
    cap.start().unwrap();
    let mut matched = Vec::new();
    let mut last_seq = None;
    for _ in 0..12 {
        let d = cap.dequeue(TIMEOUT).unwrap();
        assert!(
            last_seq.is_none_or(|s| d.sequence >= s),
            "capture sequence numbers never go back: {last_seq:?}, {d:?}"
        );
        last_seq = Some(d.sequence);
        let got = frame_bytes(cap.frames()[d.index as usize].dmabuf(), size);
        if let Some(id) = written.iter().position(|w| *w == got) {
            matched.push(id);
        }
        cap.queue(d.index).unwrap();
        // Keep the output going: refill what it consumed with a new frame.
        let o = out.dequeue(TIMEOUT).unwrap();
        written.push(write_pattern(out.frames()[o.index as usize].usm_ptr().unwrap(), size, next_id));
        next_id = next_id.wrapping_add(1);
        out.queue(o.index).unwrap();
    }
    println!("captured frames matching output frames {matched:?}");
    assert!(matched.len() >= 6, "most captured frames are exactly an output frame: {matched:?}");
    assert!(matched.windows(2).all(|w| w[0] <= w[1]), "in the order they were output: {matched:?}");
    assert_eq!(cap.bytes_copied() + out.bytes_copied(), 0);
}

/// Capture → output loopback, one `Sink::forward` per frame: each captured
/// frame is shown on the output, the output never holds more than
/// `Sink::DEPTH` frames, not even after the application fell behind (what
/// it held beyond that, the capture queue would miss), every frame is on one of the two queues after each step and goes
/// round, and misuse leaves both queues as they were.
#[test]
fn forwarding_keeps_the_output_shallow_and_every_frame_going_round() {
    require_guest();
    let ctx = cpu_context();
    let capture = vivid::webcam();
    let output = find_output_beside(&capture).unwrap();
    hdmi_loopback(&capture, &output, W, H, 60.0).unwrap();
    let cfg = StreamConfig { buffers: 6, ..StreamConfig::default() };
    let mut cap = Stream::capture(&ctx, capture, &cfg).unwrap();
    let n = cap.frames().len();
    let mut sink = Sink::new(output, &cap, None).unwrap();
    cap.queue_all().unwrap();
    cap.start().unwrap();
    let capturing = |s: &Stream| (0..n as u32).filter(|&i| s.is_queued(i)).count();
    let mut went_round = vec![0u32; n];
    let mut deepest = 0;
    for step in 0..90 {
        // Every 15th step the application fell behind (descheduled, say) and
        // has three frames to pass on at once: the output, which consumes
        // one a tick, would keep the extra ones for good.
        let burst = if step % 15 == 14 { 3 } else { 1 };
        let frames: Vec<Dequeued> = (0..burst).map(|_| cap.dequeue(TIMEOUT).unwrap()).collect();
        for d in frames {
            went_round[d.index as usize] += 1;
            sink.forward(&mut cap, d.index, TIMEOUT).unwrap();
            deepest = deepest.max(sink.showing());
            assert!(sink.showing() <= Sink::DEPTH, "step {step}: the output holds {} frames", sink.showing());
        }
        assert_eq!(capturing(&cap) + sink.showing(), n, "step {step}: every frame is queued on one side");
        assert!((0..n as u32).all(|i| cap.is_queued(i) != sink.is_showing(i)), "step {step}: and on one only");
    }
    println!("frames through each buffer {went_round:?}; the output held at most {deepest}");
    assert!(went_round.iter().all(|&k| k > 0), "every buffer went round: {went_round:?}");
    // A frame the capture owns, or one past the last, is refused; nothing moves.
    let queued = (0..n as u32).find(|&i| cap.is_queued(i)).unwrap();
    let before = (capturing(&cap), sink.showing());
    for index in [queued, n as u32] {
        let err = sink.forward(&mut cap, index, TIMEOUT).unwrap_err();
        assert!(matches!(err, PipelineError::Unsupported(_)), "{index}: {err:?}");
        assert_eq!((capturing(&cap), sink.showing()), before);
    }
    assert_eq!(cap.bytes_copied(), 0);
}

/// Cross-process: this process exports a USM allocation as a dma-buf and
/// sends the fd over a unix socket (`SCM_RIGHTS`) to a child process (this
/// test binary again), which imports it (`clImportMemoryARM`), reads the
/// bytes and writes its own through buffer commands; they appear in the
/// allocation here.
#[test]
fn a_dma_buf_crosses_processes_over_scm_rights() {
    require_guest();
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let ctx = cpu_context();
    let p = usm::host_mem_alloc(&ctx, &[], 8192, 0).unwrap().as_ptr();
    let pattern: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    // SAFETY: an 8 KiB USM allocation of this test.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), p, 8192) };
    let export = dma_buf_export::export_mem_alloc(&ctx, p, &[]).unwrap();
    let (mine, theirs) =
        rustix::net::socketpair(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::empty(), None).unwrap();
    let exe = std::env::current_exe().unwrap();
    // The child's end of the socket is its stdin.
    let child = std::process::Command::new(exe)
        .args(["--exact", "capture::child_receives_a_dma_buf", "--ignored", "--test-threads=1", "--nocapture"])
        .stdin(std::process::Stdio::from(theirs))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    send_fd(mine.as_fd(), export.dmabuf.as_fd());
    drop(export);
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "child failed:\n{text}");
    // SAFETY: the allocation is this test's, 8 KiB.
    let after = unsafe { std::slice::from_raw_parts(p, 8192) };
    assert_eq!(&after[..4096], &pattern[..4096], "the child left page 0 alone");
    assert!(after[4096..].iter().all(|&b| b == 0xC5), "the child's writes are in this process's allocation");
    usm::mem_free(&ctx, p).unwrap();
}

fn send_fd(sock: std::os::fd::BorrowedFd<'_>, fd: std::os::fd::BorrowedFd<'_>) {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let fds = [fd];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    assert!(cmsg.push(SendAncillaryMessage::ScmRights(&fds)));
    let sent = rustix::net::sendmsg(sock, &[std::io::IoSlice::new(b"F")], &mut cmsg, SendFlags::empty()).unwrap();
    assert_eq!(sent, 1);
}

fn recv_fd(sock: std::os::fd::BorrowedFd<'_>) -> OwnedFd {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let got =
        rustix::net::recvmsg(sock, &mut [std::io::IoSliceMut::new(&mut byte)], &mut cmsg, RecvFlags::CMSG_CLOEXEC)
            .unwrap();
    assert_eq!((got.bytes, byte), (1, *b"F"));
    let mut fds: Vec<OwnedFd> = cmsg
        .drain()
        .filter_map(|m| match m {
            RecvAncillaryMessage::ScmRights(fds) => Some(fds.collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(fds.len(), 1, "one fd received");
    fds.pop().unwrap()
}

#[test]
#[ignore = "run by a_dma_buf_crosses_processes_over_scm_rights, its socket on stdin"]
fn child_receives_a_dma_buf() {
    use dmabridge::ext::arm_import::import_dma_buf;
    use dmabridge::runtime::buffer::{commands, mem_flags};
    use dmabridge::runtime::queue::{Queue, QueueProps};
    let stdin = std::io::stdin();
    let fd = recv_fd(stdin.as_fd());
    let dmabuf = DmaBuf::from_fd(fd).expect("the fd received is a dma-buf");
    assert_eq!(dmabuf.size().unwrap(), 8192);
    // Imported into this process's own context (clImportMemoryARM), then
    // read and written through buffer commands on its pages.
    let ctx = cpu_context();
    let b = import_dma_buf(&ctx, mem_flags::READ_WRITE, dmabuf.as_fd(), 8192).unwrap();
    drop(dmabuf);
    let q = Queue::new(&ctx, &dmabridge_tests::cpu_device(), QueueProps::default()).unwrap();
    let mut bytes = vec![0u8; 8192];
    // SAFETY: blocking read into `bytes`.
    unsafe { commands::enqueue_read_buffer(&q, &b, true, 0, 8192, bytes.as_mut_ptr(), &[]) }.unwrap();
    assert!(bytes.iter().enumerate().all(|(i, &b)| b == (i as u32 * 7 + 3) as u8), "the sender's bytes");
    let page = [0xC5u8; 4096];
    // SAFETY: blocking write from `page`.
    unsafe { commands::enqueue_write_buffer(&q, &b, true, 4096, 4096, page.as_ptr(), &[]) }.unwrap();
    for loc in [Location::Host, Location::Device(0)] {
        let s = b.stats(loc);
        assert_eq!((s.bytes_in, s.bytes_out), (0, 0), "{loc:?}: the import is the sender's pages, nothing moved");
    }
}

/// Import direction the Khronos way: vivid's own buffers imported with
/// `clCreateBufferWithProperties(CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR)`,
/// each conversion between acquire and release (a read-write
/// `DMA_BUF_IOCTL_SYNC` start and end per frame); nothing moved.
#[test]
fn vivid_own_buffers_imported_the_khronos_way_are_converted_in_place() {
    require_guest();
    let ctx = cpu_context();
    let cfg = StreamConfig { memory: FrameMemory::DriverKhr, ..StreamConfig::default() };
    let stream = Stream::capture(&ctx, vivid::webcam(), &cfg).unwrap();
    for frame in stream.frames() {
        let b = frame.buffer().expect("an imported buffer object");
        assert!(dmabridge::ext::khr_external::memory::is_external(b));
        assert_eq!(b.size(), (W * H * 2) as usize);
    }
    drop(stream);
    let seqs = capture_and_check(&ctx, FrameMemory::DriverKhr, 8);
    println!("DriverKhr: frames {seqs:?}");
}

/// Import direction: vivid's own buffers (`V4L2_MEMORY_MMAP`), exported
/// with `VIDIOC_EXPBUF` and imported with `clImportMemoryARM`
/// (`CL_IMPORT_TYPE_DMA_BUF_ARM`), converted in place; nothing moved.
#[test]
fn vivid_own_buffers_are_imported_and_converted_in_place() {
    require_guest();
    let ctx = cpu_context();
    let seqs = capture_and_check(&ctx, FrameMemory::Driver, 8);
    println!("Driver: frames {seqs:?}");
    let cfg = StreamConfig { memory: FrameMemory::Driver, ..StreamConfig::default() };
    let stream = Stream::capture(&ctx, vivid::webcam(), &cfg).unwrap();
    for frame in stream.frames() {
        let b = frame.buffer().expect("an imported buffer object");
        assert_eq!(b.size(), (W * H * 2) as usize);
        assert!(frame.dmabuf().size().unwrap() >= b.size() as u64, "the driver's dma-buf holds the frame");
    }
}

/// The same on edu, behind the IOMMU: vivid's vmalloc buffers are not
/// PFN-mapped, so VFIO pins them and the import is zero copy for edu too;
/// edu DMAs line 240 of a captured frame out of the driver's own pages.
#[test]
fn edu_reaches_vivid_buffers_imported_in_place() {
    dmabridge_tests::run_in_child("capture::child_edu_reaches_vivid_buffers_imported_in_place", &[]);
}

#[test]
#[ignore = "run in a child process (the platform keeps its VFIO groups)"]
fn child_edu_reaches_vivid_buffers_imported_in_place() {
    use dmabridge::runtime::buffer::{Buffer, BUFFER_CREATE_TYPE_REGION};
    use dmabridge::runtime::device::DeviceType;
    use dmabridge::runtime::event::Event;
    use dmabridge::runtime::kernel::{self, Kernel};
    use dmabridge::runtime::platform::Platform;
    use dmabridge::runtime::queue::{Queue, QueueProps};
    let p = Platform::get();
    let edu = p.devices().iter().find(|d| d.device_type == DeviceType::Accelerator && d.host_unified_memory);
    let edu = edu.cloned().unwrap_or_else(|| panic!("no edu device: {:?}", p.devices()));
    let ctx = Context::new(&[p.cpu().clone(), edu.clone()]).unwrap();
    let cfg = StreamConfig { memory: FrameMemory::Driver, ..StreamConfig::default() };
    let mut stream = Stream::capture(&ctx, vivid::webcam(), &cfg).expect("vivid's vmalloc buffers import for edu");
    stream.queue_all().unwrap();
    stream.start().unwrap();
    let d = stream.dequeue(TIMEOUT).unwrap();
    let frame = stream.frames()[d.index as usize].buffer().unwrap().clone();
    // Line 240 (page-aligned: 240 * 1280 = 75 pages) as a sub-buffer.
    let line = Buffer::create_sub_buffer(&frame, 0, BUFFER_CREATE_TYPE_REGION, 240 * W as usize * 2, 4096).unwrap();
    let dst = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap().as_ptr();
    let k = Kernel::builtin(&ctx, &edu, "dma_copy").unwrap();
    k.set_arg_mem_pointer(0, dst).unwrap();
    k.set_arg_buffer(1, &line).unwrap();
    k.set_arg_scalar(2, &4096u64.to_ne_bytes()).unwrap();
    let q = Queue::new(&ctx, &edu, QueueProps::default()).unwrap();
    // SAFETY: `dst` holds 4096 bytes and the frame is dequeued (the driver
    // does not write it) until the wait returns.
    let ev = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap();
    Event::wait(&[ev]).unwrap();
    // SAFETY: the 4 KiB USM allocation edu wrote, the DMA finished.
    let got = unsafe { std::slice::from_raw_parts(dst as *const u8, 4096) };
    let mut full_line = vec![0u8; 240 * W as usize * 2];
    full_line.extend_from_slice(got);
    assert_bars_yuyv_first_half(&full_line);
    for loc in [Location::Host, Location::Device(p.cpu().index), Location::Device(edu.index)] {
        let s = frame.stats(loc);
        assert_eq!((s.bytes_in, s.bytes_out), (0, 0), "{loc:?}: edu read the driver's pages in place");
    }
    usm::mem_free(&ctx, dst).unwrap();
}

/// The bars whose centres lie in the first 4 KiB of line 240 (white to
/// magenta: x < 2048 / 2).
#[track_caller]
fn assert_bars_yuyv_first_half(yuyv: &[u8]) {
    for (i, (name, [y, u, v])) in BARS.iter().enumerate().filter(|(i, _)| bar_offset(*i) + 4 <= yuyv.len()) {
        let o = bar_offset(i);
        assert_eq!([yuyv[o], yuyv[o + 1], yuyv[o + 3]], [*y, *u, *v], "edu's copy: the {name} bar");
    }
}

/// Runs `yuyv_to_rgba` on `frame` (a buffer object holding a 640x480 YUYV
/// frame) on a CPU queue of `ctx` and returns the RGBA image.
fn convert_buffer(ctx: &Arc<Context>, frame: &Arc<dmabridge::runtime::buffer::Buffer>) -> Vec<u8> {
    use dmabridge::runtime::event::Event;
    use dmabridge::runtime::kernel::{self, Kernel};
    use dmabridge::runtime::queue::{Queue, QueueProps};
    let cpu = dmabridge_tests::cpu_device();
    let len = (W * H * 4) as usize;
    let rgba = usm::host_mem_alloc(ctx, &[], len, 0).unwrap().as_ptr();
    let k = Kernel::builtin(ctx, &cpu, "yuyv_to_rgba").unwrap();
    k.set_arg_buffer(0, frame).unwrap();
    k.set_arg_mem_pointer(1, rgba).unwrap();
    k.set_arg_scalar(2, &W.to_ne_bytes()).unwrap();
    k.set_arg_scalar(3, &H.to_ne_bytes()).unwrap();
    let q = Queue::new(ctx, &cpu, QueueProps::default()).unwrap();
    // SAFETY: `rgba` holds the image, the frame is the application's.
    let ev = unsafe { kernel::enqueue_nd_range(&q, &k, H as usize, &[]) }.unwrap();
    Event::wait(&[ev]).unwrap();
    // SAFETY: the finished kernel wrote `len` bytes there.
    let out = unsafe { std::slice::from_raw_parts(rgba as *const u8, len) }.to_vec();
    usm::mem_free(ctx, rgba).unwrap();
    out
}

/// dma-bufs of other exporters — the DMA-BUF system heap and vgem (DRM
/// PRIME) — are queued to vivid (`V4L2_MEMORY_DMABUF`), filled by it, then
/// imported with `clImportMemoryARM` and converted in place.
#[test]
fn heap_and_vgem_dma_bufs_carry_frames_into_imported_buffers() {
    require_guest();
    use dmabridge::ext::arm_import::import_dma_buf;
    use dmabridge::runtime::buffer::mem_flags;
    use dmabridge::sys::dma_heap::DmaHeap;
    use dmabridge::sys::drm::{DrmDevice, PrimeFlags};
    use dmabridge::sys::v4l2::{BufType, FourCc, Memory};
    let ctx = cpu_context();
    let size = (W * H * 2) as usize;
    let vgem = DrmDevice::open_vgem().expect("the guest suite loads vgem");
    let dumbs = [vgem.create_dumb(W, H, 16).unwrap(), vgem.create_dumb(W, H, 16).unwrap()];
    let prime = |i: usize| vgem.export(&dumbs[i], PrimeFlags::RDWR | PrimeFlags::CLOEXEC).unwrap();
    // vivid starts streaming with two buffers queued.
    let mut sources: Vec<(&str, [DmaBuf; 2])> = vec![("vgem", [prime(0), prime(1)])];
    // Without DMA-BUF heaps in the kernel (arm64), vgem's dma-bufs alone.
    if dmabridge_tests::dma_heaps_or_skip(
        "heap_and_vgem_dma_bufs_carry_frames_into_imported_buffers (its system-heap part)",
    ) {
        let heap = DmaHeap::open("system").unwrap();
        sources.insert(0, ("system heap", [heap.alloc(size as u64).unwrap(), heap.alloc(size as u64).unwrap()]));
    }
    for (what, dmabufs) in &sources {
        let dev = vivid::webcam();
        dev.set_format(BufType::Capture, W, H, FourCc::YUYV).unwrap();
        assert!(dev.request_buffers(BufType::Capture, Memory::DmaBuf, 2).unwrap() >= 2);
        for (i, dmabuf) in dmabufs.iter().enumerate() {
            dev.queue_dmabuf(BufType::Capture, i as u32, dmabuf.as_fd(), size as u32, 0).unwrap();
        }
        dev.stream_on(BufType::Capture).unwrap();
        let d = dev.dequeue(BufType::Capture, Memory::DmaBuf, TIMEOUT).unwrap();
        dev.stream_off(BufType::Capture).unwrap();
        assert_eq!(d.bytes_used, size as u32, "{what}");
        let dmabuf = &dmabufs[d.index as usize];
        let b = import_dma_buf(&ctx, mem_flags::READ_ONLY, dmabuf.as_fd(), size).unwrap();
        let rgba = convert_buffer(&ctx, &b);
        assert_bars_rgba(&rgba, &format!("{what} frame {}", d.sequence));
        let s = b.stats(Location::Host);
        assert_eq!((s.bytes_in, s.bytes_out), (0, 0), "{what}: converted in place");
    }
}

/// `dmabridge capture ARGS`: whether it succeeded, and its stdout and stderr.
pub(crate) fn dmabridge_capture(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(dmabridge_tests::dmabridge_bin()).arg("capture").args(args).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// `dmabridge capture --memory driver-khr`: the driver's own buffers
/// imported the Khronos way, converted between acquire and release; bytes
/// copied 0.
#[test]
fn the_capture_command_imports_the_khronos_way() {
    require_guest();
    vivid::webcam(); // the webcam input
    let (ok, text) = dmabridge_capture(&["--frames", "6", "--fps", "30", "--png-count", "0", "--memory", "driver-khr"]);
    assert!(ok, "{text}");
    assert!(text.contains("cl_khr_external_memory_dma_buf"), "{text}");
    assert!(text.contains("captured 6 frames") && text.contains("bytes copied by dmabridge: 0 "), "{text}");
}

/// `dmabridge capture` end to end, as a user runs it, into `extra`'s
/// memory: the PNGs it writes hold the colour bars; bytes copied 0. (One
/// test per memory kind, each well inside the runner's per-test timeout on
/// a loaded machine.)
fn the_capture_command_writes_the_bars(extra: &[&str]) {
    require_guest();
    let dir = std::env::temp_dir().join(format!("dmabridge-capture-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    vivid::webcam(); // the webcam input
    let mut args = vec!["--frames", "6", "--fps", "30", "--png-count", "2", "--png-dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (ok, text) = dmabridge_capture(&args);
    assert!(ok, "{extra:?}:\n{text}");
    assert!(text.contains("bytes copied by dmabridge: 0 "), "{extra:?}:\n{text}");
    assert!(text.contains("captured 6 frames"), "{text}");
    for name in ["frame-000.png", "frame-005.png"] {
        let png = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}");
        assert_eq!((&png[12..16], &png[16..24]), (&b"IHDR"[..], &[0, 0, 2, 128, 0, 0, 1, 224][..]), "640x480");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Into buffers dmabridge exports (the default).
#[test]
fn the_capture_command_runs_the_pipeline_on_exported_buffers() {
    the_capture_command_writes_the_bars(&[]);
}

/// With `--import`: the driver's own buffers.
#[test]
fn the_capture_command_runs_the_pipeline_on_imported_buffers() {
    the_capture_command_writes_the_bars(&["--import"]);
}

/// Into shared USM allocations.
#[test]
fn the_capture_command_runs_the_pipeline_on_shared_usm() {
    the_capture_command_writes_the_bars(&["--memory", "usm-shared"]);
}

/// `--output`: every frame shown on vivid's output device too, the same
/// dma-bufs, nothing copied.
#[test]
fn the_capture_command_shows_every_frame_on_an_output() {
    require_guest();
    let output = find_output_beside(&vivid::webcam()).unwrap();
    let out_path = output.path().to_str().unwrap().to_owned();
    let (ok, text) = dmabridge_capture(&["--output", &out_path, "--no-convert", "--frames", "30", "--quiet"]);
    assert!(ok, "--output:\n{text}");
    assert!(text.contains(&format!("every frame shown on {out_path} too")), "{text}");
    assert!(text.contains("captured 30 frames") && text.contains("bytes copied by dmabridge: 0 "), "{text}");
}

/// A frame the driver flags as corrupted (vivid's "Inject
/// V4L2_BUF_FLAG_ERROR" button, pressed before the stream starts: the first
/// frame carries the flag) is counted and left unconverted; the others are
/// converted and written as usual.
#[test]
fn the_capture_command_counts_and_skips_frames_flagged_corrupted() {
    require_guest();
    let dev = vivid::webcam();
    let button = dev.find_control("Inject V4L2_BUF_FLAG_ERROR").unwrap().expect("vivid's error injection controls");
    dev.set_control(button.id, 1).unwrap();
    drop(dev);
    let (ok, text) = dmabridge_capture(&["--frames", "4", "--fps", "30", "--png-count", "0"]);
    assert!(ok, "{text}");
    assert!(text.contains("1 frame(s) flagged corrupted by the driver (V4L2_BUF_FLAG_ERROR)"), "{text}");
    assert_eq!(text.matches("flagged corrupted by the driver: not converted").count(), 1, "{text}");
    assert!(text.contains("captured 4 frames") && text.contains("bytes copied by dmabridge: 0 "), "{text}");
}

/// Clear errors for a device that does not capture, a missing one and a
/// busy one.
#[test]
fn the_capture_command_reports_errors() {
    require_guest();
    let output = find_output_beside(&vivid::webcam()).unwrap();
    let (ok, text) = dmabridge_capture(&["--device", output.path().to_str().unwrap(), "--png-count", "0"]);
    assert!(!ok && text.contains("is not a video capture device"), "{text}");
    let (ok, text) = dmabridge_capture(&["--device", "/dev/video99"]);
    assert!(!ok && text.contains("/dev/video99") && text.contains("No such file"), "{text}");
    let ctx = cpu_context();
    let mut holder = Stream::capture(&ctx, vivid::webcam(), &StreamConfig::default()).unwrap();
    holder.queue_all().unwrap();
    let (ok, text) = dmabridge_capture(&["--png-count", "0"]);
    assert!(!ok && text.contains("is busy") && text.contains("EBUSY"), "{text}");
}
