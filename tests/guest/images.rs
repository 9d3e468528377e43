//! Images (issue 22) on the guest's kernel objects and devices: an image's
//! pixels exported as a dma-buf lie at the pitches the export query
//! reports, and edu, which reports no image support, refuses image
//! commands by name while sharing the image's memory like a buffer's.

use std::ptr::null_mut;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::dma_buf_export::{self, info_param, Info};
use dmabridge::runtime::buffer::commands;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::image::format::{data_type, order, ImageFormat};
use dmabridge::runtime::image::{commands as image_commands, mem_object, Image, ImageDesc};
use dmabridge::runtime::info::{self, device_param, InfoValue};
use dmabridge::runtime::platform::Platform;
use dmabridge::sys::mmap::Access;
use dmabridge_tests::{cpu_context_and_queue, require_guest, run_in_child};

use super::buffer::{edu, queue};

const BGRA: ImageFormat = ImageFormat::new(order::BGRA, data_type::UNORM_INT8);

#[test]
fn an_exported_image_holds_its_pixels_at_the_reported_pitch() {
    require_guest();
    let (ctx, q) = cpu_context_and_queue();
    // A padded pitch (COPY_HOST_PTR keeps the given one): 100 pixels in 512-byte rows.
    let (w, h, pitch) = (100, 30, 512);
    let mut src = vec![0u8; pitch * h];
    let d = ImageDesc { row_pitch: pitch, ..ImageDesc::new(mem_object::IMAGE2D, [w, h, 1]) };
    // SAFETY: COPY_HOST_PTR reads `src` (pitch x h bytes) now.
    let img = unsafe { Image::create(&ctx, 1 << 5, BGRA, &d, src.as_mut_ptr()) }.unwrap();
    let red = [1.0f32, 0.0, 0.0, 1.0].map(f32::to_bits);
    Event::wait(&[image_commands::enqueue_fill_image(&q, &img, red, [10, 20, 0], [5, 1, 1], &[]).unwrap()]).unwrap();
    assert_eq!(dma_buf_export::image_info(&img, info_param::ROW_PITCH).unwrap(), Info::Pitch(pitch));
    assert_eq!(dma_buf_export::image_info(&img, info_param::EXPORTABLE).unwrap(), Info::Exportable(true));
    let export = dma_buf_export::export_buffer(img.storage(), &[]).unwrap();
    let map = export.dmabuf.map(Access::Read).unwrap();
    let mut px = [0u8; 4 * 7];
    map.read_bytes(20 * pitch + 9 * 4, &mut px);
    assert_eq!(&px[..4], &[0, 0, 0, 0], "pixel 9 of row 20 is not filled");
    for p in px[4..24].chunks(4) {
        assert_eq!(p, &[0, 0, 255, 255], "pixels 10..15 of row 20: BGRA red, at the reported pitch");
    }
    assert_eq!(&px[24..], &[0, 0, 0, 0]);
}

#[test]
fn edu_reports_no_image_support_and_refuses_image_commands_by_name() {
    run_in_child("images::child_edu_refuses_image_commands", &[]);
}

#[test]
#[ignore = "run in a child process"]
fn child_edu_refuses_image_commands() {
    let p = Platform::get();
    let (cpu, edu) = (p.cpu().clone(), edu(p));
    assert_eq!(info::device_info(&edu, device_param::IMAGE_SUPPORT).unwrap(), InfoValue::Bool(false));
    let ctx = Context::new(&[cpu.clone(), edu.clone()]).unwrap();
    let (qc, qe) = (queue(&ctx, &cpu), queue(&ctx, &edu));
    let d = ImageDesc::new(mem_object::IMAGE2D, [32, 32, 1]);
    // SAFETY: no host pointer.
    let img = unsafe { Image::create(&ctx, 0, BGRA, &d, null_mut()) }.unwrap();
    let e = image_commands::enqueue_fill_image(&qe, &img, [0; 4], [0; 3], [32, 32, 1], &[]).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidOperation);
    assert!(e.message.contains(&edu.name), "{e}");
    // The image's memory is a buffer's: edu's DMA engine reads what the CPU filled.
    let white = [1.0f32; 4].map(f32::to_bits);
    Event::wait(&[image_commands::enqueue_fill_image(&qc, &img, white, [0; 3], [32, 32, 1], &[]).unwrap()]).unwrap();
    let mut out = vec![0u8; 4096];
    // SAFETY: blocking read of the storage's 4096 bytes into `out`.
    unsafe { commands::enqueue_read_buffer(&qe, img.storage(), true, 0, 4096, out.as_mut_ptr(), &[]) }.unwrap();
    assert!(out.iter().all(|&b| b == 255));
}
