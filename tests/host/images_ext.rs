//! Images that build on the core's image objects (issue 22's extensions),
//! on the CPU device: the built-in `yuyv_to_rgba_image` (the same bytes as
//! the strided buffer built-in, at each image's own pitch) and its argument
//! rules; host memory imported with `clImportMemoryARM` as an image's
//! memory, written through the image and seen in a second mapping of the
//! memfd (zero copy); the rules of `clCreateImageWithProperties` with
//! `cl_khr_external_memory` that hold before any dma-buf is touched (the
//! imports themselves need udmabuf: `tests/guest/images.rs`); and the
//! `cl_khr_image2d_from_buffer` alignment queries.

use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext::arm_import::import_host;
use dmabridge::ext::khr_external::image::create_image_with_properties;
use dmabridge::ext::khr_external::memory::MemProperties;
use dmabridge::runtime::buffer::{commands, store::Location, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::image::format::{data_type, order, ImageFormat};
use dmabridge::runtime::image::{mem_object, Image, ImageDesc};
use dmabridge::runtime::info::{device_info, device_param, InfoValue};
use dmabridge::runtime::kernel::{self, Kernel};
use dmabridge::runtime::queue::Queue;
use dmabridge::sys::access::Access;
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge_tests::{cpu_context, cpu_context_and_queue, cpu_device, err_kind};

const W: usize = 50;
const H: usize = 9;

fn yuyv() -> ImageFormat {
    ImageFormat::new(order::YUYV_INTEL, data_type::UNORM_INT8)
}

fn rgba() -> ImageFormat {
    ImageFormat::new(order::RGBA, data_type::UNORM_INT8)
}

/// A buffer of `len` bytes holding `bytes` (the rest 0).
fn buffer_with(ctx: &Arc<Context>, q: &Arc<Queue>, len: usize, bytes: &[u8]) -> Arc<Buffer> {
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(ctx, 0, len, null_mut()) }.unwrap();
    let mut all = bytes.to_vec();
    all.resize(len, 0);
    // SAFETY: a blocking write from `all`.
    unsafe { commands::enqueue_write_buffer(q, &b, true, 0, len, all.as_ptr(), &[]) }.unwrap();
    b
}

fn read(q: &Arc<Queue>, b: &Arc<Buffer>) -> Vec<u8> {
    let mut out = vec![0u8; b.size()];
    // SAFETY: a blocking read into `out`.
    unsafe { commands::enqueue_read_buffer(q, b, true, 0, b.size(), out.as_mut_ptr(), &[]) }.unwrap();
    out
}

/// A 2D image of `format` over `b` at `pitch`.
fn image_over(ctx: &Arc<Context>, format: ImageFormat, b: &Arc<Buffer>, pitch: usize) -> Arc<Image> {
    let desc =
        ImageDesc { row_pitch: pitch, buffer: Some(b.clone()), ..ImageDesc::new(mem_object::IMAGE2D, [W, H, 1]) };
    Image::over_buffer(ctx, 0, format, &desc, b.clone()).unwrap()
}

fn run(q: &Arc<Queue>, k: &Arc<Kernel>, global: usize) -> Result<(), dmabridge::error::ClError> {
    // SAFETY: every argument is a memory object that holds its memory.
    let ev = unsafe { kernel::enqueue_nd_range(q, k, global, &[]) }?;
    Event::wait(&[ev])
}

/// `yuyv_to_rgba_image` over images at padded pitches writes exactly what
/// `yuyv_to_rgba_strided` writes over the same buffers at the same strides
/// (an odd-sized frame, so each line's last pair is half used): one code
/// path, the same bytes; the padding stays untouched.
#[test]
fn the_image_form_gives_the_strided_bytes() {
    let (ctx, q) = cpu_context_and_queue();
    let cpu = cpu_device();
    let (sp, dp) = (W.div_ceil(2) * 4 + 12, W * 4 + 20);
    let frame: Vec<u8> = (0..sp * H).map(|i| (i * 7 % 251) as u8).collect();
    let src = buffer_with(&ctx, &q, sp * H, &frame);
    let (by_image, by_strided) = (buffer_with(&ctx, &q, dp * H, &[]), buffer_with(&ctx, &q, dp * H, &[]));
    let k = Kernel::builtin(&ctx, &cpu, "yuyv_to_rgba_image").unwrap();
    k.set_arg_image(0, &image_over(&ctx, yuyv(), &src, sp)).unwrap();
    k.set_arg_image(1, &image_over(&ctx, rgba(), &by_image, dp)).unwrap();
    run(&q, &k, 3).unwrap();
    let s = Kernel::builtin(&ctx, &cpu, "yuyv_to_rgba_strided").unwrap();
    s.set_arg_buffer(0, &src).unwrap();
    s.set_arg_buffer(1, &by_strided).unwrap();
    for (i, v) in [W, H, sp, dp].into_iter().enumerate() {
        s.set_arg_scalar(2 + i as u32, &(v as u32).to_ne_bytes()).unwrap();
    }
    run(&q, &s, 1).unwrap();
    let (a, b) = (read(&q, &by_image), read(&q, &by_strided));
    assert!(a == b, "the image form and the strided built-in give the same bytes");
    assert!(a[..W * 4].iter().any(|&x| x != 0), "and they are a conversion, not nothing");
    assert!(a[W * 4..dp].iter().all(|&x| x == 0), "the padding after a row is untouched");
}

/// The built-in's argument rules: images only, of its formats and of one
/// size, from its context; wrong ones refused at set or launch time with
/// the code and the reason.
#[test]
fn the_image_form_refuses_what_does_not_fit() {
    let (ctx, q) = cpu_context_and_queue();
    let cpu = cpu_device();
    let src = buffer_with(&ctx, &q, 4096, &[]);
    let dst = buffer_with(&ctx, &q, 4096, &[]);
    let k = Kernel::builtin(&ctx, &cpu, "yuyv_to_rgba_image").unwrap();
    assert_eq!(k.arg_kinds(), &[kernel::ArgKind::Image, kernel::ArgKind::Image]);
    assert_eq!(err_kind(k.set_arg_buffer(0, &src)), InvalidMemObject, "a buffer is not an image");
    assert_eq!(err_kind(k.set_arg_mem_pointer(0, null_mut())), InvalidArgValue);
    assert_eq!(err_kind(k.set_arg_scalar(0, &[0; 8])), InvalidArgValue);
    let other = cpu_context();
    let foreign = buffer_with(&other, &Queue::new(&other, &cpu, Default::default()).unwrap(), 4096, &[]);
    assert_eq!(err_kind(k.set_arg_image(0, &image_over(&other, yuyv(), &foreign, 0))), InvalidMemObject);
    // Formats swapped: refused at launch, nothing written.
    k.set_arg_image(0, &image_over(&ctx, rgba(), &src, 0)).unwrap();
    k.set_arg_image(1, &image_over(&ctx, yuyv(), &dst, 0)).unwrap();
    let e = run(&q, &k, 1).unwrap_err();
    assert_eq!(e.kind, InvalidKernelArgs);
    assert!(e.to_string().contains("CL_YUYV_INTEL"), "{e}");
    // Sizes that differ.
    k.set_arg_image(0, &image_over(&ctx, yuyv(), &src, 0)).unwrap();
    let small = ImageDesc { buffer: Some(dst.clone()), ..ImageDesc::new(mem_object::IMAGE2D, [W, H - 1, 1]) };
    k.set_arg_image(1, &Image::over_buffer(&ctx, 0, rgba(), &small, dst.clone()).unwrap()).unwrap();
    let e = run(&q, &k, 1).unwrap_err();
    assert_eq!(e.kind, InvalidKernelArgs);
    assert!(e.to_string().contains("differ in size"), "{e}");
    assert!(read(&q, &dst).iter().all(|&x| x == 0), "a refused launch writes nothing");
}

/// Host memory (a memfd's shared mapping) imported with
/// `clImportMemoryARM` is an image's memory: the kernel writes the image,
/// a second mapping of the memfd sees the pixels at the image's pitch once
/// the launch completed (no read, map or finish), and the import's
/// counters show no byte moved.
#[test]
fn an_image_over_imported_host_memory_is_written_in_place() {
    let (ctx, q) = cpu_context_and_queue();
    let cpu = cpu_device();
    let pitch = W * 4 + 64;
    let len = (pitch * H).next_multiple_of(4096);
    let memfd = Memfd::create(c"image-host-import", len as u64).unwrap();
    memfd.add_seals(Seals::SHRINK).unwrap();
    let (mine, other) = (memfd.map(0, len, Access::ReadWrite).unwrap(), memfd.map(0, len, Access::Read).unwrap());
    // SAFETY: the mapping stays while the buffer lives and is only written
    // through the buffer.
    let b = unsafe { import_host(&ctx, 0, mine.as_ptr(), len) }.unwrap();
    let dst = image_over(&ctx, rgba(), &b, pitch);
    let frame: Vec<u8> = (0..W * 2 * H).map(|i| (i % 200) as u8 + 16).collect();
    let src = buffer_with(&ctx, &q, frame.len(), &frame);
    let k = Kernel::builtin(&ctx, &cpu, "yuyv_to_rgba_image").unwrap();
    k.set_arg_image(0, &image_over(&ctx, yuyv(), &src, 0)).unwrap();
    k.set_arg_image(1, &dst).unwrap();
    run(&q, &k, 2).unwrap();
    let mut seen = vec![0u8; len];
    other.read_bytes(0, &mut seen);
    for y in 0..H {
        let o = y * pitch;
        let want: Vec<u8> = frame[y * W * 2..(y + 1) * W * 2]
            .chunks_exact(4)
            .flat_map(|p| {
                let [r0, g0, b0] = kernel::yuv_to_rgb(p[0], p[1], p[3]);
                let [r1, g1, b1] = kernel::yuv_to_rgb(p[2], p[1], p[3]);
                [r0, g0, b0, 255, r1, g1, b1, 255]
            })
            .collect();
        assert_eq!(&seen[o..o + W * 4], &want[..], "row {y} in the memfd's second mapping");
        assert!(seen[o + W * 4..o + pitch].iter().all(|&x| x == 0), "row {y}'s padding untouched");
    }
    let s = b.stats(Location::Host);
    assert_eq!((s.bytes_in, s.bytes_out), (0, 0), "no byte moved");
}

/// `clCreateImageWithProperties` with `cl_khr_external_memory`: without a
/// dma-buf it is `clCreateImage`; the rules that hold before the import.
#[test]
fn khr_image_properties_rules() {
    let ctx = cpu_context();
    let desc = ImageDesc::new(mem_object::IMAGE2D, [W, H, 1]);
    let none = MemProperties::default();
    // SAFETY: no host pointer.
    let plain = unsafe { create_image_with_properties(&ctx, &none, 0, rgba(), &desc, null_mut()) }.unwrap();
    assert_eq!(plain.row_pitch(), W * 4);
    let list = MemProperties { dma_buf: None, devices: Some(vec![cpu_device()]) };
    // SAFETY: no host pointer.
    let r = unsafe { create_image_with_properties(&ctx, &list, 0, rgba(), &desc, null_mut()) };
    assert_eq!(err_kind(r), InvalidProperty, "a device list without a handle");
    let memfd = Memfd::create(c"not-a-dma-buf", 4096).unwrap();
    let fake = MemProperties { dma_buf: Some(memfd.as_fd()), devices: None };
    // SAFETY: no host pointer.
    let r = unsafe { create_image_with_properties(&ctx, &fake, 0, rgba(), &desc, null_mut()) };
    assert_eq!(err_kind(r), InvalidValue, "a memfd is no dma-buf");
    let mut host = vec![0u8; W * 4 * H];
    // SAFETY: `host` holds the image (refused before it is used).
    let r = unsafe { create_image_with_properties(&ctx, &fake, 0, rgba(), &desc, host.as_mut_ptr()) };
    assert_eq!(err_kind(r), InvalidHostPtr, "an imported dma-buf is its own memory");
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, W * 4 * H, null_mut()) }.unwrap();
    let with_buffer = ImageDesc { buffer: Some(b), ..desc };
    // SAFETY: no host pointer.
    let r = unsafe { create_image_with_properties(&ctx, &fake, 0, rgba(), &with_buffer, null_mut()) };
    assert_eq!(err_kind(r), InvalidImageDescriptor, "an imported image takes no mem_object");
}

/// `cl_khr_image2d_from_buffer`'s queries (a pixel: the CPU device reads
/// rows at any pitch of whole pixels) and their rules, each
/// `CL_INVALID_IMAGE_FORMAT_DESCRIPTOR`: a row pitch of whole pixels, and a
/// `CL_MEM_USE_HOST_PTR` buffer's host pointer aligned to a pixel. An
/// aligned one is zero copy: a fill of the image is in the host memory.
#[test]
fn image2d_from_buffer_alignment_rules() {
    let (ctx, q) = cpu_context_and_queue();
    let cpu = cpu_device();
    for p in [device_param::IMAGE_PITCH_ALIGNMENT, device_param::IMAGE_BASE_ADDRESS_ALIGNMENT] {
        assert_eq!(device_info(&cpu, p).unwrap(), InfoValue::U32(1), "{p:#x}");
    }
    let mut host = vec![0u32; 1024]; // 4-byte aligned
    let base = host.as_mut_ptr() as *mut u8;
    let over = |ptr: *mut u8, pitch: usize| {
        // SAFETY: `host` holds 4096 bytes from `base`; every use is below it.
        let b =
            unsafe { Buffer::create(&ctx, dmabridge::runtime::buffer::mem_flags::USE_HOST_PTR, 2048, ptr) }.unwrap();
        let desc =
            ImageDesc { row_pitch: pitch, buffer: Some(b.clone()), ..ImageDesc::new(mem_object::IMAGE2D, [8, 8, 1]) };
        Image::over_buffer(&ctx, 0, rgba(), &desc, b)
    };
    assert_eq!(err_kind(over(base.wrapping_add(2), 64)), InvalidImageFormatDescriptor, "host_ptr not on a pixel");
    assert_eq!(err_kind(over(base, 66)), InvalidImageFormatDescriptor, "a pitch of 16.5 pixels");
    let img = over(base.wrapping_add(4), 40).unwrap();
    assert_eq!(img.row_pitch(), 40);
    let ev = dmabridge::runtime::image::commands::enqueue_fill_image(
        &q,
        &img,
        [1.0f32.to_bits(), 0, 0, 1.0f32.to_bits()],
        [0, 0, 0],
        [8, 8, 1],
        &[],
    );
    Event::wait(&[ev.unwrap()]).unwrap();
    drop(img);
    let bytes: Vec<u8> = host.iter().flat_map(|w| w.to_ne_bytes()).collect();
    assert_eq!(bytes[4..8], [255, 0, 0, 255], "pixel (0, 0) in the host memory");
    assert_eq!(bytes[4 + 40..4 + 44], [255, 0, 0, 255], "pixel (0, 1), one pitch on");
    assert_eq!(bytes[4 + 32..4 + 40], [0; 8], "the 8 bytes after a row's 8 pixels untouched");
}
