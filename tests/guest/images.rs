//! Images (issue 22) on the guest's kernel objects and devices: an image's
//! pixels exported as a dma-buf lie at the pitches the export query
//! reports, and edu, which reports no image support, refuses image
//! commands by name while sharing the image's memory like a buffer's.
//! In a context of several devices an image's allocations follow seed 003's
//! linked and unlinked rows exactly as a buffer's do.

use std::ptr::null_mut;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::dma_buf_export::{self, info_param, Info};
use dmabridge::runtime::backend::bar::ENV;
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::store::Location;
use dmabridge::runtime::buffer::{commands, mem_flags};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::image::format::{data_type, order, ImageFormat};
use dmabridge::runtime::image::{commands as image_commands, mem_object, Image, ImageDesc};
use dmabridge::runtime::info::{self, device_param, InfoValue};
use dmabridge::runtime::platform::Platform;
use dmabridge::sys::mmap::Access;
use dmabridge_tests::{cpu_context_and_queue, require_guest, run_in_child, IVSHMEM};

use super::buffer::{bar, edu, pattern, queue, read, write};

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

/// Seed 003 for images: an image's memory is its storage buffer's, so the
/// linked pair of edu (host-unified) reuses the user's pages and never
/// transfers, and the unlinked pair of the BAR device moves the bytes once
/// each way, as `buffer::unlinked_rows_on_the_bar_device` shows for a
/// buffer. Image commands run on the CPU queue (edu and the BAR refuse
/// them), the other device touches the pixels by buffer commands on the
/// storage: what an image's memory is shared as.
#[test]
fn an_image_is_linked_on_edu_and_unlinked_on_the_bar_as_a_buffer_is() {
    run_in_child("images::child_image_linked_on_edu_unlinked_on_the_bar", &[(ENV, Some(&format!("{IVSHMEM},bar=2")))]);
}

#[test]
#[ignore = "run in a child process"]
fn child_image_linked_on_edu_unlinked_on_the_bar() {
    const N: usize = 4096; // one page: edu completes each DMA on a 100 ms timer
    let p = Platform::get();
    let (cpu, edu, bar) = (p.cpu().clone(), edu(p), bar(p));
    let rw = map_flags::READ | map_flags::WRITE;

    // Linked: a USE_HOST_PTR image (16 pixels in 128-byte rows) in a CPU + edu context.
    let ctx = Context::new(&[cpu.clone(), edu.clone()]).unwrap();
    let (qc, qe) = (queue(&ctx, &cpu), queue(&ctx, &edu));
    let mut user = pattern(N, 3);
    let user_ptr = user.as_mut_ptr();
    let d = ImageDesc { row_pitch: 128, ..ImageDesc::new(mem_object::IMAGE2D, [16, 32, 1]) };
    // SAFETY: `user` holds 32 rows of 128 bytes and outlives the image; touched only through maps.
    let img = unsafe { Image::create(&ctx, mem_flags::USE_HOST_PTR, BGRA, &d, user_ptr) }.unwrap();
    let s = img.storage();
    assert_eq!(read(&qe, s), pattern(N, 3), "edu's DMA reads the user's pixels");
    assert_eq!(s.linked(&edu), Some(true));
    let e = s.stats(Location::Device(edu.index));
    assert_eq!((e.allocations, e.bytes_allocated, e.bytes_in), (1, 0, 0), "linked: edu reuses the user's pages");
    let m = image_commands::enqueue_map_image(&qc, &img, true, rw, [2, 3, 0], [4, 2, 1], &[]).unwrap();
    assert_eq!(m.ptr.as_ptr() as usize, user_ptr as usize + 3 * 128 + 2 * 4, "the host allocation is the user's");
    // SAFETY: pixel (2, 3) is mapped for writing.
    unsafe { m.ptr.as_ptr().write_bytes(9, 4) };
    Event::wait(&[map::enqueue_unmap_mem_object(&qc, s, m.ptr.as_ptr(), &[]).unwrap()]).unwrap();
    assert_eq!(&read(&qe, s)[3 * 128 + 8..3 * 128 + 12], &[9; 4], "edu sees the host's write: the same pages");
    let moved: u64 = [Location::Host, Location::Device(cpu.index), Location::Device(edu.index)]
        .iter()
        .map(|l| s.stats(*l).bytes_in + s.stats(*l).bytes_out)
        .sum();
    assert_eq!(moved, 0, "linked pairs never transfer");
    drop((img, qc, qe, ctx));

    // Unlinked: a packed image (16 pixels x 64 rows) in a CPU + BAR context.
    let ctx = Context::new(&[cpu.clone(), bar.clone()]).unwrap();
    let (qc, qb) = (queue(&ctx, &cpu), queue(&ctx, &bar));
    let (bl, cl) = (Location::Device(bar.index), Location::Device(cpu.index));
    let d = ImageDesc::new(mem_object::IMAGE2D, [16, 64, 1]);
    // SAFETY: no host pointer.
    let img = unsafe { Image::create(&ctx, 0, BGRA, &d, null_mut()) }.unwrap();
    let s = img.storage();
    write(&qb, s, &pattern(N, 5));
    assert_eq!(s.linked(&bar), Some(false));
    assert_eq!(s.stats(bl).bytes_in, 0, "first access discards: no initialisation transfer");
    let mut px = [0u8; 16];
    // SAFETY: blocking; `px` holds 4 pixels.
    unsafe { image_commands::enqueue_read_image(&qc, &img, true, [1, 2, 0], [4, 1, 1], 0, 0, px.as_mut_ptr(), &[]) }
        .unwrap();
    assert_eq!(&px[..], &pattern(N, 5)[2 * 64 + 4..2 * 64 + 20], "the BAR's pixels, read by the CPU");
    assert_eq!((s.stats(bl).bytes_out, s.stats(cl).bytes_in), (N as u64, N as u64), "BAR → CPU pages, once");
    assert_eq!(s.stats(Location::Host).allocations, 0);
    let white = [1.0f32; 4].map(f32::to_bits);
    Event::wait(&[image_commands::enqueue_fill_image(&qc, &img, white, [0; 3], [1, 1, 1], &[]).unwrap()]).unwrap();
    let back = read(&qb, s);
    assert_eq!((&back[..4], &back[4..]), (&[255u8; 4][..], &pattern(N, 5)[4..]), "the CPU's fill reaches the BAR");
    assert_eq!(s.stats(bl).bytes_in, N as u64, "CPU pages → BAR, once");
    let m = image_commands::enqueue_map_image(&qc, &img, true, map_flags::READ, [0; 3], [16, 64, 1], &[]).unwrap();
    assert!(!bar.local_memory().unwrap().contains(m.ptr.as_ptr()), "maps give host pages, not the BAR");
    Event::wait(&[map::enqueue_unmap_mem_object(&qc, s, m.ptr.as_ptr(), &[]).unwrap()]).unwrap();
    assert_eq!(s.stats(bl).bytes_out, N as u64, "the BAR copy was not newer: the map moved nothing");
    qc.finish().unwrap();
    qb.finish().unwrap();
    drop(user);
}
