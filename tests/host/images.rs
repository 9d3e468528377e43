//! Images (issue 22) on the Rust API: the creation rules of `clCreateImage`
//! and the command rules of the image commands with their exact codes
//! (OpenCL 3.0, "Image Objects"), sizes near the ends of `usize`, images
//! over buffers, `CL_MEM_USE_HOST_PTR`, the export queries, samplers.

use std::sync::Arc;

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext::dma_buf_export::{self, info_param, Info};
use dmabridge::runtime::buffer::{mem_flags, mem_info, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::image::format::{data_type as dt, order, ImageFormat};
use dmabridge::runtime::image::sampler::{addressing, filter, sampler_info, Sampler};
use dmabridge::runtime::image::{commands, image_info, mem_object as mo, Image, ImageDesc};
use dmabridge::runtime::info::InfoValue;
use dmabridge_tests::{cpu_context_and_queue, err_kind as kind};

const RGBA8: ImageFormat = ImageFormat::new(order::RGBA, dt::UNORM_INT8);

fn image(ctx: &Arc<Context>, t: u32, size: [usize; 3]) -> Arc<Image> {
    // SAFETY: no host pointer.
    unsafe { Image::create(ctx, 0, RGBA8, &ImageDesc::new(t, size), std::ptr::null_mut()) }.unwrap()
}

fn create(ctx: &Arc<Context>, flags: u64, f: ImageFormat, d: &ImageDesc) -> dmabridge::error::ClResult<Arc<Image>> {
    // SAFETY: no host pointer.
    unsafe { Image::create(ctx, flags, f, d, std::ptr::null_mut()) }
}

#[test]
fn creation_rules_and_codes() {
    let (ctx, _q) = cpu_context_and_queue();
    let d2 = ImageDesc::new(mo::IMAGE2D, [8, 8, 1]);
    assert_eq!(kind(create(&ctx, 1 << 40, RGBA8, &d2)), InvalidValue);
    assert_eq!(kind(create(&ctx, mem_flags::READ_ONLY | mem_flags::WRITE_ONLY, RGBA8, &d2)), InvalidValue);
    assert_eq!(kind(create(&ctx, 0, ImageFormat::new(0x1234, dt::FLOAT), &d2)), InvalidImageFormatDescriptor);
    assert_eq!(kind(create(&ctx, 0, ImageFormat::new(order::RGBA, 0x1234), &d2)), InvalidImageFormatDescriptor);
    assert_eq!(
        kind(create(&ctx, 0, ImageFormat::new(order::R, dt::UNORM_SHORT_565), &d2)),
        InvalidImageFormatDescriptor
    );
    // 24-bit elements: "must be a power of two".
    assert_eq!(kind(create(&ctx, 0, ImageFormat::new(order::RGB, dt::UNORM_INT8), &d2)), InvalidImageFormatDescriptor);
    let depth = ImageFormat::new(order::DEPTH, dt::FLOAT);
    assert!(create(&ctx, 0, depth, &d2).is_ok());
    assert_eq!(kind(create(&ctx, 0, depth, &ImageDesc::new(mo::IMAGE3D, [8, 8, 2]))), ImageFormatNotSupported);
    assert_eq!(kind(create(&ctx, 0, RGBA8, &ImageDesc::new(0x10F0, [8, 8, 1]))), InvalidImageDescriptor);
    // A dimension of 0: "the image dimensions specified in image_desc are
    // not valid" (CL_INVALID_IMAGE_SIZE).
    for (t, size) in [
        (mo::IMAGE1D, [0, 1, 1]),
        (mo::IMAGE2D, [8, 0, 1]),
        (mo::IMAGE3D, [8, 8, 0]),
        (mo::IMAGE1D_ARRAY, [8, 0, 1]),
        (mo::IMAGE2D_ARRAY, [8, 8, 0]),
    ] {
        assert_eq!(kind(create(&ctx, 0, RGBA8, &ImageDesc::new(t, size))), InvalidImageSize, "{t:#x} {size:?}");
    }
    let mips = ImageDesc { num_mip_levels: 1, ..d2.clone() };
    assert_eq!(kind(create(&ctx, 0, RGBA8, &mips)), InvalidImageDescriptor);
    let pitch_without_ptr = ImageDesc { row_pitch: 64, ..d2.clone() };
    assert_eq!(kind(create(&ctx, 0, RGBA8, &pitch_without_ptr)), InvalidImageDescriptor);
    let no_buffer = ImageDesc::new(mo::IMAGE1D_BUFFER, [8, 1, 1]);
    assert_eq!(kind(create(&ctx, 0, RGBA8, &no_buffer)), InvalidImageDescriptor);
    // Above the CPU device's limits.
    assert_eq!(kind(create(&ctx, 0, RGBA8, &ImageDesc::new(mo::IMAGE2D, [16385, 1, 1]))), InvalidImageSize);
    assert_eq!(kind(create(&ctx, 0, RGBA8, &ImageDesc::new(mo::IMAGE3D, [8, 8, 2049]))), InvalidImageSize);
    assert_eq!(kind(create(&ctx, 0, RGBA8, &ImageDesc::new(mo::IMAGE2D_ARRAY, [8, 8, 2049]))), InvalidImageSize);
    // A host pointer: the buffer's rules.
    // SAFETY: refused before any use of the pointer.
    let r = unsafe { Image::create(&ctx, mem_flags::USE_HOST_PTR, RGBA8, &d2, std::ptr::null_mut()) };
    assert_eq!(kind(r), InvalidHostPtr);
    let mut px = [0u8; 256];
    // SAFETY: as above.
    let r = unsafe { Image::create(&ctx, 0, RGBA8, &d2, px.as_mut_ptr()) };
    assert_eq!(kind(r), InvalidHostPtr);
    // Pitches with a host pointer: at least the row, a multiple of the element.
    for (row, slice) in [(31, 0), (34, 0), (32, 32 * 7), (32, 32 * 8 + 4)] {
        let d = ImageDesc { row_pitch: row, slice_pitch: slice, ..ImageDesc::new(mo::IMAGE3D, [8, 8, 2]) };
        // SAFETY: refused before any use of `px`.
        let r = unsafe { Image::create(&ctx, mem_flags::COPY_HOST_PTR, RGBA8, &d, px.as_mut_ptr()) };
        assert_eq!(kind(r), InvalidImageDescriptor, "pitches {row}, {slice}");
    }
}

#[test]
fn sizes_near_the_end_of_usize_are_refused_never_wrapped() {
    let (ctx, queue) = cpu_context_and_queue();
    let mut px = [0u8; 64];
    for (t, row, slice) in [
        (mo::IMAGE2D, usize::MAX - 3, 0),
        (mo::IMAGE3D, 32, usize::MAX / 32 * 32),
        (mo::IMAGE1D_ARRAY, 32, (usize::MAX / 64) * 32),
    ] {
        let d = ImageDesc { row_pitch: row, slice_pitch: slice, ..ImageDesc::new(t, [8, 8, 8]) };
        // SAFETY: refused before any use of `px` (the sizes cannot be memory).
        let r = unsafe { Image::create(&ctx, mem_flags::USE_HOST_PTR, RGBA8, &d, px.as_mut_ptr()) };
        assert_eq!(kind(r), InvalidImageSize, "{t:#x} row {row} slice {slice}");
    }
    let img = image(&ctx, mo::IMAGE2D, [8, 8, 1]);
    for (origin, region) in
        [([usize::MAX, 0, 0], [2, 1, 1]), ([0, usize::MAX, 0], [1, 2, 1]), ([1, 0, 0], [usize::MAX, 1, 1])]
    {
        let r = commands::enqueue_fill_image(&queue, &img, [0; 4], origin, region, &[]);
        assert_eq!(kind(r), InvalidValue, "{origin:?} {region:?}");
    }
}

#[test]
fn command_rules_and_codes() {
    let (ctx, queue) = cpu_context_and_queue();
    let i1 = image(&ctx, mo::IMAGE1D, [16, 1, 1]);
    let a1 = image(&ctx, mo::IMAGE1D_ARRAY, [16, 4, 1]);
    let i2 = image(&ctx, mo::IMAGE2D, [16, 8, 1]);
    let mut out = vec![0u8; 16 * 8 * 4 * 4];
    let read = |img: &Arc<Image>, o: [usize; 3], r: [usize; 3], rp: usize, sp: usize, out: &mut [u8]| {
        // SAFETY: blocking, `out` holds every rectangle read here.
        unsafe { commands::enqueue_read_image(&queue, img, true, o, r, rp, sp, out.as_mut_ptr(), &[]) }
    };
    // The components a type does not have.
    assert_eq!(kind(read(&i1, [0, 1, 0], [1, 1, 1], 0, 0, &mut out)), InvalidValue);
    assert_eq!(kind(read(&i1, [0, 0, 0], [1, 2, 1], 0, 0, &mut out)), InvalidValue);
    assert_eq!(kind(read(&a1, [0, 0, 1], [1, 1, 1], 0, 0, &mut out)), InvalidValue);
    assert_eq!(kind(read(&i2, [0, 0, 0], [1, 1, 2], 0, 0, &mut out)), InvalidValue);
    assert_eq!(kind(read(&i2, [0, 0, 0], [0, 1, 1], 0, 0, &mut out)), InvalidValue);
    // Out of bounds, pitches.
    assert_eq!(kind(read(&i2, [15, 0, 0], [2, 1, 1], 0, 0, &mut out)), InvalidValue);
    assert_eq!(kind(read(&a1, [0, 3, 0], [16, 2, 1], 0, 0, &mut out)), InvalidValue);
    assert_eq!(kind(read(&i2, [0, 0, 0], [4, 1, 1], 15, 0, &mut out)), InvalidValue);
    assert_eq!(kind(read(&i2, [0, 0, 0], [4, 1, 1], 0, 64, &mut out)), InvalidValue);
    assert!(read(&a1, [0, 1, 0], [16, 3, 1], 0, 0, &mut out).is_ok());
    // A 1D array's elements at a host slice pitch.
    let mut packed = vec![0u8; 16 * 4 * 4];
    assert!(read(&a1, [0, 0, 0], [16, 4, 1], 0, 0, &mut packed).is_ok());
    assert!(read(&a1, [0, 0, 0], [16, 4, 1], 64, 128, &mut out).is_ok());
    // Copies: formats, overlap.
    let f2 =
        create(&ctx, 0, ImageFormat::new(order::RGBA, dt::FLOAT), &ImageDesc::new(mo::IMAGE2D, [16, 8, 1])).unwrap();
    assert_eq!(
        kind(commands::enqueue_copy_image(&queue, &i2, &f2, [0; 3], [0; 3], [1, 1, 1], &[])),
        ImageFormatMismatch
    );
    assert_eq!(kind(commands::enqueue_copy_image(&queue, &i2, &i2, [0; 3], [1, 1, 0], [4, 4, 1], &[])), MemCopyOverlap);
    assert!(commands::enqueue_copy_image(&queue, &i2, &i2, [0; 3], [8, 0, 0], [8, 8, 1], &[]).is_ok());
    // Host access flags.
    let ro = create(&ctx, mem_flags::HOST_READ_ONLY, RGBA8, &ImageDesc::new(mo::IMAGE2D, [4, 4, 1])).unwrap();
    let px = [0u8; 4];
    // SAFETY: refused before use.
    let w = unsafe { commands::enqueue_write_image(&queue, &ro, true, [0; 3], [1, 1, 1], 0, 0, px.as_ptr(), &[]) };
    assert_eq!(kind(w), InvalidOperation);
    // Copies with buffers: the buffer's bounds.
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }.unwrap();
    assert!(commands::enqueue_copy_image_to_buffer(&queue, &i2, &b, [0; 3], [16, 1, 1], 0, &[]).is_ok());
    assert_eq!(kind(commands::enqueue_copy_image_to_buffer(&queue, &i2, &b, [0; 3], [16, 1, 1], 1, &[])), InvalidValue);
    assert_eq!(kind(commands::enqueue_copy_buffer_to_image(&queue, &b, &i2, 0, [0; 3], [16, 2, 1], &[])), InvalidValue);
    // Fill: formats with no colour.
    let nv12 = ImageFormat::new(order::NV12_INTEL, dt::UNORM_INT8);
    let n = create(&ctx, 0, nv12, &ImageDesc::new(mo::IMAGE2D, [16, 8, 1])).unwrap();
    assert_eq!(kind(commands::enqueue_fill_image(&queue, &n, [0; 4], [0; 3], [16, 12, 1], &[])), InvalidOperation);
    Event::wait(&[commands::enqueue_fill_image(&queue, &i2, [0; 4], [0; 3], [16, 8, 1], &[]).unwrap()]).unwrap();
    // Another context's queue.
    let (_other, q2) = cpu_context_and_queue();
    assert_eq!(kind(commands::enqueue_fill_image(&q2, &i2, [0; 4], [0; 3], [1, 1, 1], &[])), InvalidContext);
}

#[test]
fn images_over_buffers_share_their_bytes_and_inherit_flags() {
    let (ctx, queue) = cpu_context_and_queue();
    // SAFETY: no host pointer.
    let b =
        unsafe { Buffer::create(&ctx, mem_flags::READ_ONLY | mem_flags::HOST_NO_ACCESS, 256, std::ptr::null_mut()) }
            .unwrap();
    let d = ImageDesc { buffer: Some(b.clone()), ..ImageDesc::new(mo::IMAGE1D_BUFFER, [64, 1, 1]) };
    let img = create(&ctx, 0, RGBA8, &d).unwrap();
    assert_eq!(img.flags(), mem_flags::READ_ONLY | mem_flags::HOST_NO_ACCESS);
    assert!(Arc::ptr_eq(img.storage(), &b));
    assert_eq!(img.mem_info(mem_info::SIZE).unwrap(), InfoValue::Usize(256));
    assert_eq!(img.image_info(image_info::BUFFER).unwrap(), InfoValue::Mem(Some(b.clone())));
    assert_eq!(kind(create(&ctx, mem_flags::READ_WRITE, RGBA8, &d)), InvalidValue);
    assert_eq!(kind(create(&ctx, mem_flags::HOST_READ_ONLY, RGBA8, &d)), InvalidValue);
    assert_eq!(kind(create(&ctx, mem_flags::ALLOC_HOST_PTR, RGBA8, &d)), InvalidValue);
    let wide = ImageDesc { width: 65, ..d.clone() };
    assert_eq!(kind(create(&ctx, 0, RGBA8, &wide)), InvalidImageDescriptor);
    // The pixels are the buffer's bytes.
    // SAFETY: no host pointer.
    let rw = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }.unwrap();
    let d = ImageDesc { buffer: Some(rw.clone()), ..ImageDesc::new(mo::IMAGE1D_BUFFER, [16, 1, 1]) };
    let img = create(&ctx, 0, ImageFormat::new(order::R, dt::UNSIGNED_INT32), &d).unwrap();
    Event::wait(&[
        commands::enqueue_fill_image(&queue, &img, [0xdead_beef, 0, 0, 0], [4, 0, 0], [2, 1, 1], &[]).unwrap()
    ])
    .unwrap();
    let mut bytes = [0u32; 16];
    // SAFETY: blocking, 64 bytes.
    unsafe {
        dmabridge::runtime::buffer::commands::enqueue_read_buffer(
            &queue,
            &rw,
            true,
            0,
            64,
            bytes.as_mut_ptr().cast(),
            &[],
        )
    }
    .unwrap();
    assert_eq!(&bytes[3..7], &[0, 0xdead_beef, 0xdead_beef, 0]);
}

#[test]
fn use_host_ptr_images_are_the_applications_bytes() {
    let (ctx, queue) = cpu_context_and_queue();
    let mut host = vec![0u8; 48 * 4];
    let d = ImageDesc { row_pitch: 48, ..ImageDesc::new(mo::IMAGE2D, [8, 4, 1]) };
    // SAFETY: `host` outlives the image and is only touched after the
    // commands finished.
    let img = unsafe { Image::create(&ctx, mem_flags::USE_HOST_PTR, RGBA8, &d, host.as_mut_ptr()) }.unwrap();
    assert_eq!(img.mem_info(mem_info::HOST_PTR).unwrap(), InfoValue::Usize(host.as_ptr() as usize));
    let one = 1.0f32.to_bits();
    Event::wait(&[commands::enqueue_fill_image(&queue, &img, [one, 0, one, one], [7, 3, 0], [1, 1, 1], &[]).unwrap()])
        .unwrap();
    let m = commands::enqueue_map_image(
        &queue,
        &img,
        true,
        dmabridge::runtime::buffer::map::map_flags::READ,
        [7, 3, 0],
        [1, 1, 1],
        &[],
    )
    .unwrap();
    assert_eq!(m.ptr.as_ptr() as usize, host.as_ptr() as usize + 3 * 48 + 7 * 4, "the map is the application's byte");
    dmabridge::runtime::buffer::map::enqueue_unmap_mem_object(&queue, img.storage(), m.ptr.as_ptr(), &[]).unwrap();
    queue.finish().unwrap();
    drop(img);
    assert_eq!(&host[3 * 48 + 28..3 * 48 + 32], &[255, 0, 255, 255]);
}

#[test]
fn export_queries_answer_for_images_with_their_pitches() {
    let (ctx, _q) = cpu_context_and_queue();
    let f = ImageFormat::new(order::RG, dt::UNSIGNED_INT16);
    let d = ImageDesc::new(mo::IMAGE2D_ARRAY, [100, 10, 3]);
    let img = create(&ctx, 0, f, &d).unwrap();
    assert_eq!(dma_buf_export::image_info(&img, info_param::ROW_PITCH).unwrap(), Info::Pitch(400));
    assert_eq!(dma_buf_export::image_info(&img, info_param::SLICE_PITCH).unwrap(), Info::Pitch(4000));
    assert_eq!(dma_buf_export::image_info(&img, info_param::SIZE).unwrap(), Info::Size(12288));
    let e = dma_buf_export::buffer_info(img.storage(), info_param::ROW_PITCH);
    assert_eq!(kind(e), InvalidMemObject, "a buffer has no pitch");
}

#[test]
fn samplers_rules() {
    let (ctx, _q) = cpu_context_and_queue();
    let s = Sampler::create(&ctx, true, addressing::MIRRORED_REPEAT, filter::LINEAR).unwrap();
    assert_eq!(s.info(sampler_info::FILTER_MODE).unwrap(), InfoValue::U32(filter::LINEAR));
    assert_eq!(s.info(sampler_info::PROPERTIES).unwrap(), InfoValue::Properties(vec![]));
    assert_eq!(kind(Sampler::create(&ctx, true, addressing::NONE - 1, filter::LINEAR)), InvalidValue);
    assert_eq!(kind(Sampler::create(&ctx, true, addressing::NONE, filter::LINEAR + 1)), InvalidValue);
    let n = sampler_info::NORMALIZED_COORDS as u64;
    assert_eq!(kind(Sampler::with_properties(&ctx, &[(n, 1), (n, 0)])), InvalidValue);
    assert_eq!(kind(Sampler::with_properties(&ctx, &[(n, 2)])), InvalidValue);
    let s = Sampler::with_properties(&ctx, &[(n, 0)]).unwrap();
    assert_eq!(s.info(sampler_info::PROPERTIES).unwrap(), InfoValue::Properties(vec![n, 0, 0]));
    assert_eq!(kind(s.info(0x7777)), InvalidValue);
}

/// The fill bytes of the sRGB orders (OpenCL C 3.0, "Conversion Rules for
/// sRGBA and sBGRA Images": R, G, B linear → sRGB, A linear), with the
/// hand-worked values of `tests/icd/images_accept_commands_test.c`. The C
/// test fills CL_sRGBA images; CL_sBGRA is not a listed format here (it
/// is optional), yet `pixel_bytes` converts it for any caller: checked here.
#[test]
fn fill_bytes_of_srgb_orders_follow_the_opencl_c_rule() {
    use dmabridge::runtime::image::fill::pixel_bytes;
    let c1 = [0.1f32, 0.4, 1.5, 0.2].map(f32::to_bits);
    let c2 = [0.002f32, 0.75, -0.5, 0.75].map(f32::to_bits);
    let srgba = ImageFormat::new(order::SRGBA, dt::UNORM_INT8);
    let sbgra = ImageFormat::new(order::SBGRA, dt::UNORM_INT8);
    assert_eq!(pixel_bytes(srgba, c1).unwrap(), [89, 170, 255, 51]);
    assert_eq!(pixel_bytes(srgba, c2).unwrap(), [7, 225, 0, 191]);
    assert_eq!(pixel_bytes(sbgra, c1).unwrap(), [255, 170, 89, 51]);
    assert_eq!(pixel_bytes(sbgra, c2).unwrap(), [0, 225, 7, 191]);
    let nan = [f32::NAN.to_bits(), 0, 0, f32::NAN.to_bits()];
    assert_eq!(pixel_bytes(srgba, nan).unwrap()[0], 0, "NaN is 0 before the conversion");
}
