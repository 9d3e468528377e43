//! Images over imported memory, against the kernel: dma-bufs of udmabuf
//! imported as images the Khronos way (`clCreateImageWithProperties` with
//! `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`, at a padded row pitch) and
//! images made over buffers imported with `clImportMemoryARM`, written
//! through the image by a kernel and seen in a second mapping of the memfd
//! under the dma-buf (zero copy); and vivid's frames imported as images
//! and converted by `yuyv_to_rgba_image` with the same bytes as the buffer
//! path, in the library and through `dmabridge capture --images`.

use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::Duration;

use dmabridge::ext::arm_import::import_dma_buf;
use dmabridge::ext::khr_external::image::create_image_with_properties;
use dmabridge::ext::khr_external::memory::{self, MemProperties};
use dmabridge::pipeline::capture::{Converter, FrameMemory, ImageConverter, Stream, StreamConfig};
use dmabridge::runtime::buffer::{store::Location, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::image::format::{data_type, order, ImageFormat};
use dmabridge::runtime::image::{mem_object, Image, ImageDesc};
use dmabridge::runtime::kernel::{self, yuv_to_rgb, Kernel};
use dmabridge::runtime::queue::Queue;
use dmabridge::sys::access::Access;
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge_tests::{cpu_context_and_queue, require_guest};

use super::vivid;

const W: usize = 64;
const H: usize = 16;
/// The RGBA image's row pitch in the dma-buf: 64 bytes of padding a row.
const PITCH: usize = W * 4 + 64;
const TIMEOUT: Duration = Duration::from_secs(20);

fn yuyv() -> ImageFormat {
    ImageFormat::new(order::YUYV_INTEL, data_type::UNORM_INT8)
}

fn rgba() -> ImageFormat {
    ImageFormat::new(order::RGBA, data_type::UNORM_INT8)
}

/// A YUYV image of W x H whose pixel pairs are (Y0 = x, U = 40 + y, Y1 =
/// x + 100, V = 200 - y), over a buffer written with them.
fn yuyv_source(ctx: &Arc<Context>, q: &Arc<Queue>) -> (Arc<Image>, Vec<u8>) {
    let mut bytes = vec![0u8; W * 2 * H];
    for y in 0..H {
        for pair in 0..W / 2 {
            let o = y * W * 2 + pair * 4;
            bytes[o..o + 4].copy_from_slice(&[pair as u8 * 2, 40 + y as u8, pair as u8 * 2 + 100, 200 - y as u8]);
        }
    }
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(ctx, 0, bytes.len(), null_mut()) }.unwrap();
    // SAFETY: a blocking write from `bytes`.
    unsafe {
        dmabridge::runtime::buffer::commands::enqueue_write_buffer(q, &b, true, 0, bytes.len(), bytes.as_ptr(), &[])
    }
    .unwrap();
    let desc = ImageDesc { buffer: Some(b.clone()), ..ImageDesc::new(mem_object::IMAGE2D, [W, H, 1]) };
    (Image::over_buffer(ctx, 0, yuyv(), &desc, b).unwrap(), bytes)
}

/// The RGBA rows the conversion must give (BT.601, as the buffer path).
fn expected_rgba(yuyv: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(W * H * 4);
    for pair in yuyv.chunks_exact(4) {
        for y in [pair[0], pair[2]] {
            let [r, g, b] = yuv_to_rgb(y, pair[1], pair[3]);
            out.extend_from_slice(&[r, g, b, 255]);
        }
    }
    out
}

/// Runs `yuyv_to_rgba_image(src, dst)` on `q` and waits.
fn convert(ctx: &Arc<Context>, q: &Arc<Queue>, src: &Arc<Image>, dst: &Arc<Image>) {
    let k = Kernel::builtin(ctx, &dmabridge_tests::cpu_device(), "yuyv_to_rgba_image").unwrap();
    k.set_arg_image(0, src).unwrap();
    k.set_arg_image(1, dst).unwrap();
    // SAFETY: the images hold their memory.
    let ev = unsafe { kernel::enqueue_nd_range(q, &k, H, &[]) }.unwrap();
    Event::wait(&[ev]).unwrap();
}

/// A sealed memfd of `len` bytes filled with 0xEE, and its udmabuf.
fn udmabuf(len: usize) -> (Memfd, dmabridge::sys::dma_buf::DmaBuf) {
    let memfd = Memfd::create(c"image-import", len as u64).unwrap();
    memfd.add_seals(Seals::SHRINK).unwrap();
    memfd.map(0, len, Access::ReadWrite).unwrap().write_bytes(0, &vec![0xee; len]);
    let dma = Udmabuf::open().unwrap().create(memfd.as_fd(), 0, len as u64).unwrap();
    (memfd, dma)
}

/// The memfd's own pages, read through a second mapping: the converted
/// rows at PITCH, and the padding after each row untouched (0xEE).
#[track_caller]
fn assert_rows_in_memfd(memfd: &Memfd, want: &[u8], what: &str) {
    let mut seen = vec![0u8; PITCH * H];
    memfd.map(0, PITCH * H, Access::Read).unwrap().read_bytes(0, &mut seen);
    for y in 0..H {
        let row = &seen[y * PITCH..(y + 1) * PITCH];
        assert_eq!(&row[..W * 4], &want[y * W * 4..(y + 1) * W * 4], "{what}: row {y} in the memfd's second mapping");
        assert!(row[W * 4..].iter().all(|&b| b == 0xee), "{what}: the padding of row {y} is untouched");
    }
}

/// A udmabuf dma-buf imported as an RGBA image at a padded pitch, the
/// Khronos way: the kernel's writes through the image are in the memfd's
/// pages (a second mapping sees them), between acquire and release, no
/// byte moved; the bytes are the buffer path's.
#[test]
fn dma_buf_imported_as_an_image_is_written_in_place() {
    require_guest();
    let (ctx, q) = cpu_context_and_queue();
    let (src, yuyv_bytes) = yuyv_source(&ctx, &q);
    let len = (PITCH * H).next_multiple_of(4096);
    let (memfd, dma) = udmabuf(len);
    let props = MemProperties { dma_buf: Some(dma.as_fd()), devices: None };
    let desc = ImageDesc { row_pitch: PITCH, ..ImageDesc::new(mem_object::IMAGE2D, [W, H, 1]) };
    // SAFETY: no host pointer.
    let dst = unsafe { create_image_with_properties(&ctx, &props, 0, rgba(), &desc, null_mut()) }.unwrap();
    assert_eq!(dst.row_pitch(), PITCH, "the frame's pitch, as given");
    assert!(memory::is_external(dst.storage()));
    let storage = std::slice::from_ref(dst.storage());
    memory::enqueue_acquire(&q, storage, &[]).unwrap();
    convert(&ctx, &q, &src, &dst);
    Event::wait(&[memory::enqueue_release(&q, storage, &[]).unwrap()]).unwrap();
    assert_rows_in_memfd(&memfd, &expected_rgba(&yuyv_bytes), "khr image");
    let s = dst.storage().stats(Location::Host);
    assert_eq!((s.bytes_in, s.bytes_out), (0, 0), "written in place");
    // A second acquire of the same image is refused: the bracket is the
    // storage's.
    memory::enqueue_acquire(&q, storage, &[]).unwrap();
    assert!(memory::enqueue_acquire(&q, storage, &[]).is_err());
    Event::wait(&[memory::enqueue_release(&q, storage, &[]).unwrap()]).unwrap();
}

/// An image made over a buffer imported with `clImportMemoryARM`
/// (`CL_IMPORT_TYPE_DMA_BUF_ARM`): the same.
#[test]
fn image_over_an_arm_imported_dma_buf_is_written_in_place() {
    require_guest();
    let (ctx, q) = cpu_context_and_queue();
    let (src, yuyv_bytes) = yuyv_source(&ctx, &q);
    let len = (PITCH * H).next_multiple_of(4096);
    let (memfd, dma) = udmabuf(len);
    let b = import_dma_buf(&ctx, 0, dma.as_fd(), len).unwrap();
    let desc =
        ImageDesc { row_pitch: PITCH, buffer: Some(b.clone()), ..ImageDesc::new(mem_object::IMAGE2D, [W, H, 1]) };
    let dst = Image::over_buffer(&ctx, 0, rgba(), &desc, b.clone()).unwrap();
    assert!(Arc::ptr_eq(dst.storage(), &b), "the image's memory is the imported buffer");
    convert(&ctx, &q, &src, &dst);
    assert_rows_in_memfd(&memfd, &expected_rgba(&yuyv_bytes), "ARM import");
}

/// vivid's frames, in the driver's buffers imported the Khronos way (each
/// frame's dma-buf imported as a CL_YUYV_INTEL image at the frame's pitch)
/// and in dmabridge's exported buffers (an image over the buffer):
/// converted through images and through buffers, the same bytes; nothing
/// copied.
#[test]
fn vivid_frames_as_images_convert_like_buffers() {
    require_guest();
    let (ctx, _) = cpu_context_and_queue();
    // (An image over an ARM-imported dma-buf: the udmabuf test above.)
    for memory in [FrameMemory::DriverKhr, FrameMemory::Buffer] {
        let cfg = StreamConfig { fps: Some(60), memory, ..StreamConfig::default() };
        let mut stream = Stream::capture(&ctx, vivid::webcam(), &cfg).unwrap();
        let f = stream.format();
        let mut buffers = Converter::new(&ctx, &f).unwrap();
        let mut images = ImageConverter::new(&ctx, &f).unwrap();
        stream.queue_all().unwrap();
        stream.start().unwrap();
        for _ in 0..2 {
            let d = stream.dequeue(TIMEOUT).unwrap();
            let by_buffer = buffers.convert(&stream, d.index).unwrap().to_vec();
            let by_image = images.convert(&stream, d.index).unwrap();
            assert!(
                by_image == by_buffer,
                "{memory:?} frame {}: the image path's bytes are the buffer path's",
                d.sequence
            );
            // The white bar's centre on line 240 (vivid's 75% bars).
            let o = (240 * f.width as usize + f.width as usize / 16) * 4;
            let [r, g, b] = yuv_to_rgb(179, 128, 128);
            assert_eq!(by_image[o..o + 4], [r, g, b, 255], "{memory:?}: the white bar");
            stream.queue(d.index).unwrap();
        }
        assert_eq!(stream.bytes_copied(), 0, "{memory:?}: dmabridge moved no frame byte");
    }
}

/// `dmabridge capture --images`: frames imported as images, converted,
/// PNGs written; 0 bytes copied.
#[test]
fn the_capture_command_hands_frames_over_as_images() {
    require_guest();
    vivid::webcam();
    let out = std::process::Command::new(dmabridge_tests::dmabridge_bin())
        .args(["capture", "--frames", "4", "--fps", "30", "--png-count", "0", "--memory", "driver-khr", "--images"])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("yuyv_to_rgba_image"), "{text}");
    assert!(text.contains("captured 4 frames") && text.contains("bytes copied by dmabridge: 0 "), "{text}");
}
