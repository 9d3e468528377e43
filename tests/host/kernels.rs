//! Built-in and native kernels on the CPU device: each built-in against an
//! independent computation, every argument and exec-info error, arguments
//! captured at enqueue, and the blocking free waiting for launches.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext::usm;
use dmabridge::ext::usm_commands as cmd;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::runtime::event::{Event, EventStatus};
use dmabridge::runtime::kernel::{
    self, builtin_kernel_names, builtin_kernels_string, exec_info, kernel_command_type, ArgKind, Kernel, KernelArgValue,
};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge_tests::{cpu_context_and_queue as setup, host_alloc as host};

fn builtin(ctx: &Arc<Context>, name: &str) -> Arc<Kernel> {
    Kernel::builtin(ctx, Platform::get().cpu(), name).unwrap()
}

/// Runs `k` as a task and waits for it.
fn run_task(q: &Arc<Queue>, k: &Arc<Kernel>) -> Event {
    // SAFETY (these tests): every pointer argument is a live allocation of
    // the size the kernel needs, freed only after the event completed.
    let e = unsafe { kernel::enqueue_task(q, k, &[]) }.unwrap();
    Event::wait(std::slice::from_ref(&e)).unwrap();
    e
}

fn run_nd(q: &Arc<Queue>, k: &Arc<Kernel>, global: usize) -> Event {
    // SAFETY: as run_task.
    let e = unsafe { kernel::enqueue_nd_range(q, k, global, &[]) }.unwrap();
    Event::wait(std::slice::from_ref(&e)).unwrap();
    e
}

/// Adler-32 as RFC 1950 defines it, reducing after every byte (the driver
/// reduces once per 5552-byte block).
fn adler32_reference(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u64, 0u64);
    for &x in data {
        a = (a + x as u64) % 65521;
        b = (b + a) % 65521;
    }
    ((b << 16) | a) as u32
}

/// Deterministic noise (xorshift).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

#[test]
fn the_cpu_device_lists_its_builtins() {
    let cpu = Platform::get().cpu();
    assert_eq!(
        builtin_kernel_names(cpu),
        [
            "checksum_adler32",
            "fill_pattern_u32",
            "yuyv_to_rgba",
            "yuyv_to_rgba_strided",
            "yuyv_to_bgrx_strided",
            "yuyv_to_rgba_csc",
            "yuyv_to_bgrx_csc",
            "yuyv_to_rgba_image",
            "copy_bytes"
        ]
    );
    assert_eq!(
        builtin_kernels_string(cpu),
        "checksum_adler32;fill_pattern_u32;yuyv_to_rgba;yuyv_to_rgba_strided;yuyv_to_bgrx_strided;yuyv_to_rgba_csc;yuyv_to_bgrx_csc;yuyv_to_rgba_image;copy_bytes"
    );
    let (ctx, _) = setup();
    for name in builtin_kernel_names(cpu) {
        assert_eq!(builtin(&ctx, name).name(), name);
    }
    // As clCreateProgramWithBuiltInKernels answers a name no device offers.
    assert_eq!(Kernel::builtin(&ctx, cpu, "copy_byte").unwrap_err().kind, InvalidValue);
    assert_eq!(Kernel::builtin(&ctx, cpu, "").unwrap_err().kind, InvalidValue);
    assert_eq!(Kernel::builtin(&ctx, cpu, "dma_copy").unwrap_err().kind, InvalidValue, "edu's, not the CPU's");
    // A device outside the context, and a device without built-ins.
    let accel = Arc::new(Device {
        index: 1,
        name: "test accelerator".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: 1 << 20,
        max_alignment: 128,
        host_unified_memory: false,
        usm: cpu.usm,
        svm: 0,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    });
    assert_eq!(Kernel::builtin(&ctx, &accel, "copy_bytes").unwrap_err().kind, InvalidDevice);
    assert!(builtin_kernel_names(&accel).is_empty() && builtin_kernels_string(&accel).is_empty());
    let both = Context::new(&[cpu.clone(), accel.clone()]).unwrap();
    assert_eq!(Kernel::builtin(&both, &accel, "copy_bytes").unwrap_err().kind, InvalidValue);
    // A CPU built-in launched on the accelerator's queue.
    let k = Kernel::builtin(&both, cpu, "copy_bytes").unwrap();
    k.set_arg_mem_pointer(0, std::ptr::null()).unwrap();
    k.set_arg_mem_pointer(1, std::ptr::null()).unwrap();
    k.set_arg_scalar(2, &0u64.to_ne_bytes()).unwrap();
    let accel_q = Queue::new(&both, &accel, QueueProps::default()).unwrap();
    // SAFETY: refused before it is enqueued.
    assert_eq!(unsafe { kernel::enqueue_task(&accel_q, &k, &[]) }.unwrap_err().kind, InvalidDevice);
}

#[test]
fn adler32_matches_a_byte_by_byte_reference() {
    let (ctx, q) = setup();
    for (n, global) in [(0usize, 1usize), (1, 1), (5552, 3), (5553, 1), (3 << 20, 64), (100_003, 7)] {
        let src = host(&ctx, n.max(1));
        let res = host(&ctx, 4);
        let data = noise(n, n as u64 + 1);
        // SAFETY: src is n bytes (at least 1), res 4.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), src, n);
            res.cast::<u32>().write(0xdead_beef);
        }
        let k = builtin(&ctx, "checksum_adler32");
        k.set_arg_mem_pointer(0, src).unwrap();
        k.set_arg_scalar(1, &(n as u64).to_ne_bytes()).unwrap();
        k.set_arg_mem_pointer(2, res).unwrap();
        let e = if global == 1 { run_task(&q, &k) } else { run_nd(&q, &k, global) };
        assert_eq!(e.status(), EventStatus::Complete);
        // SAFETY: the event completed.
        let got = unsafe { res.cast::<u32>().read() };
        assert_eq!(got, adler32_reference(&data), "size {n}, global {global}");
        usm::mem_free(&ctx, src).unwrap();
        usm::mem_free(&ctx, res).unwrap();
    }
    // Known values: RFC 1950's empty checksum and Wikipedia's "Wikipedia".
    assert_eq!(adler32_reference(b""), 1);
    assert_eq!(adler32_reference(b"Wikipedia"), 0x11E6_0398);
    assert_eq!(kernel::adler32(b"Wikipedia"), 0x11E6_0398);
}

#[test]
fn fill_pattern_writes_count_words_and_nothing_more() {
    let (ctx, q) = setup();
    for (count, global) in [(1usize, 1usize), (1000, 7), (1 << 20, 1 << 20), (3 << 18, 5)] {
        let dst = host(&ctx, count * 4 + 4);
        // SAFETY: dst holds count + 1 words.
        unsafe { std::ptr::write_bytes(dst, 0, count * 4 + 4) };
        let k = builtin(&ctx, "fill_pattern_u32");
        k.set_arg_mem_pointer(0, dst).unwrap();
        k.set_arg_scalar(1, &(count as u64).to_ne_bytes()).unwrap();
        k.set_arg_scalar(2, &0xA1B2_C3D4u32.to_ne_bytes()).unwrap();
        let e = run_nd(&q, &k, global);
        assert_eq!(e.command_type(), kernel_command_type::NDRANGE_KERNEL);
        // SAFETY: complete; count + 1 words.
        let words = unsafe { std::slice::from_raw_parts(dst.cast::<u32>(), count + 1) };
        assert!(words[..count].iter().all(|&w| w == 0xA1B2_C3D4), "count {count}, global {global}");
        assert_eq!(words[count], 0, "wrote past count");
        usm::mem_free(&ctx, dst).unwrap();
    }
}

#[test]
fn copy_bytes_copies_exactly_size_bytes() {
    let (ctx, q) = setup();
    for (n, global) in [(1usize, 1usize), (4097, 3), (5 << 20, 1000)] {
        let (src, dst) = (host(&ctx, n), host(&ctx, n + 1));
        let data = noise(n, 99);
        // SAFETY: sizes as allocated.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), src, n);
            std::ptr::write_bytes(dst, 0x5A, n + 1);
        }
        let k = builtin(&ctx, "copy_bytes");
        k.set_arg_mem_pointer(0, dst).unwrap();
        k.set_arg_mem_pointer(1, src).unwrap();
        k.set_arg_scalar(2, &(n as u64).to_ne_bytes()).unwrap();
        run_nd(&q, &k, global);
        // SAFETY: complete.
        let out = unsafe { std::slice::from_raw_parts(dst, n + 1) };
        assert!(out[..n] == data[..], "size {n}, global {global}");
        assert_eq!(out[n], 0x5A);
        usm::mem_free(&ctx, src).unwrap();
        usm::mem_free(&ctx, dst).unwrap();
    }
}

/// Pixels worked by hand from the BT.601 limited-range integer formulas
/// C = 298(Y-16), D = U-128, E = V-128,
/// R = (C + 409E + 128) >> 8, G = (C - 100D - 208E + 128) >> 8,
/// B = (C + 516D + 128) >> 8, clamped to 0..=255. A YUYV pair shares U, V.
#[test]
fn yuyv_to_rgba_gives_hand_computed_pixels() {
    // Row 0, pair 0: Y0=16 (C=0), Y1=235 (C=65262), U=V=128 (D=E=0):
    //   black; white (65262+128 = 65390 >> 8 = 255).
    // Row 0, pair 1: Y0=Y1=81, U=90, V=240 (C=19370, D=-38, E=112):
    //   R = 19370+45808+128 = 65306 >> 8 = 255; G = 19370+3800-23296+128 = 2 >> 8 = 0;
    //   B = 19370-19608+128 = -110 >> 8 = -1 -> 0: red, twice.
    // Row 1, pair 0: Y0=Y1=100, U=150, V=50 (C=25032, D=22, E=-78):
    //   R = 25032-31902+128 = -6742 -> 0; G = 25032-2200+16224+128 = 39184 >> 8 = 153;
    //   B = 25032+11352+128 = 36512 >> 8 = 142.
    // Row 1, pair 1: Y0=126 (C=32780: 32908 >> 8 = 128), Y1=235, U=V=128: gray 128; white.
    let yuyv: [u8; 16] = [16, 128, 235, 128, 81, 90, 81, 240, 100, 150, 100, 50, 126, 128, 235, 128];
    let expected: [[u8; 4]; 8] = [
        [0, 0, 0, 255],
        [255, 255, 255, 255],
        [255, 0, 0, 255],
        [255, 0, 0, 255],
        [0, 153, 142, 255],
        [0, 153, 142, 255],
        [128, 128, 128, 255],
        [255, 255, 255, 255],
    ];
    let (ctx, q) = setup();
    let (src, dst) = (host(&ctx, 16), host(&ctx, 32));
    // SAFETY: 16 and 32 bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(yuyv.as_ptr(), src, 16);
        std::ptr::write_bytes(dst, 7, 32);
    }
    let k = builtin(&ctx, "yuyv_to_rgba");
    k.set_arg_mem_pointer(0, src).unwrap();
    k.set_arg_mem_pointer(1, dst).unwrap();
    k.set_arg_scalar(2, &4u32.to_ne_bytes()).unwrap();
    k.set_arg_scalar(3, &2u32.to_ne_bytes()).unwrap();
    for global in [1, 2, 5] {
        run_nd(&q, &k, global);
        // SAFETY: complete.
        let out = unsafe { std::slice::from_raw_parts(dst, 32) };
        let px: Vec<[u8; 4]> = out.chunks(4).map(|c| c.try_into().unwrap()).collect();
        assert_eq!(px, expected, "global {global}");
    }
    assert_eq!(kernel::yuv_to_rgb(126, 128, 128), [128, 128, 128]);
    // An odd width is refused.
    k.set_arg_scalar(2, &3u32.to_ne_bytes()).unwrap();
    // SAFETY: refused before anything is enqueued.
    assert_eq!(unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap_err().kind, InvalidKernelArgs);
    usm::mem_free(&ctx, src).unwrap();
    usm::mem_free(&ctx, dst).unwrap();
}

/// The strided conversions against [`kernel::yuv_to_rgb`] per pixel, at odd
/// widths and heights and padded strides, in both byte orders; the bytes of
/// the padding are left alone, and strides shorter than a line are refused.
#[test]
fn strided_yuyv_conversions_honour_strides_odd_widths_and_heights() {
    let (ctx, q) = setup();
    for (name, order) in [("yuyv_to_rgba_strided", [0, 1, 2]), ("yuyv_to_bgrx_strided", [2, 1, 0])] {
        for (w, h, pad_s, pad_d) in [(18usize, 7usize, 4usize, 12usize), (7, 3, 0, 0), (1, 1, 4, 4), (322, 11, 60, 8)] {
            let (ss, ds) = (w.div_ceil(2) * 4 + pad_s, w * 4 + pad_d);
            let (src, dst) = (host(&ctx, ss * h), host(&ctx, ds * h));
            let data = noise(ss * h, w as u64);
            // SAFETY: sizes as allocated.
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), src, data.len());
                std::ptr::write_bytes(dst, 0xa5, ds * h);
            }
            let k = builtin(&ctx, name);
            k.set_arg_mem_pointer(0, src).unwrap();
            k.set_arg_mem_pointer(1, dst).unwrap();
            for (i, v) in [w, h, ss, ds].into_iter().enumerate() {
                k.set_arg_scalar(2 + i as u32, &(v as u32).to_ne_bytes()).unwrap();
            }
            run_nd(&q, &k, 3);
            // SAFETY: complete.
            let out = unsafe { std::slice::from_raw_parts(dst, ds * h) };
            for r in 0..h {
                for x in 0..w {
                    let pair = &data[r * ss + x / 2 * 4..][..4];
                    let rgb = kernel::yuv_to_rgb(pair[2 * (x % 2)], pair[1], pair[3]);
                    let want = [rgb[order[0]], rgb[order[1]], rgb[order[2]], 255];
                    assert_eq!(out[r * ds + x * 4..][..4], want, "{name} {w}x{h}: pixel {x} of line {r}");
                }
                assert!(
                    out[r * ds + w * 4..(r + 1) * ds].iter().all(|&b| b == 0xa5),
                    "{name}: padding of line {r} written"
                );
            }
            // A destination stride shorter than a line is refused.
            k.set_arg_scalar(5, &(w as u32 * 4 - 1).to_ne_bytes()).unwrap();
            // SAFETY: refused before anything is enqueued.
            let err = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap_err();
            assert_eq!(err.kind, InvalidKernelArgs, "{err}");
            assert!(err.to_string().contains("destination stride"), "{err}");
            usm::mem_free(&ctx, src).unwrap();
            usm::mem_free(&ctx, dst).unwrap();
        }
    }
}

/// `yuyv_to_{rgba,bgrx}_csc` with each colorimetry's coefficients: 75%
/// red, white and black coded in that colorimetry (values worked out by
/// hand from the standards' Kr and Kb) come out as the RGB they code, to
/// within the fixed point's 1; coefficients the kernel cannot take are
/// refused with CL_INVALID_KERNEL_ARGS saying which.
#[test]
fn csc_conversions_give_each_colorimetrys_colours() {
    use dmabridge::runtime::kernel::{YuvCoefficients, YuvMatrix as M, YuvRange as R};
    let (ctx, q) = setup();
    // (colorimetry, [(Y, Cb, Cr) of 75% red, of white, of black])
    let cases = [
        ((M::Bt601, R::Limited), [(65, 100, 212), (235, 128, 128), (16, 128, 128)]),
        ((M::Bt709, R::Limited), [(51, 109, 212), (235, 128, 128), (16, 128, 128)]),
        ((M::Bt601, R::Full), [(57, 96, 224), (255, 128, 128), (0, 128, 128)]),
        ((M::Bt709, R::Full), [(41, 106, 224), (255, 128, 128), (0, 128, 128)]),
    ];
    let want = [[191, 0, 0], [255, 255, 255], [0, 0, 0]];
    for ((m, r), samples) in cases {
        let coeffs = YuvCoefficients::new(m, r).to_arg();
        for (name, order) in [("yuyv_to_rgba_csc", [0, 1, 2]), ("yuyv_to_bgrx_csc", [2, 1, 0])] {
            // Three lines of one pair, each pair one colour, lines 8 bytes apart.
            let (src, dst) = (host(&ctx, 24), host(&ctx, 24));
            let lines: Vec<u8> = samples.iter().flat_map(|&(y, u, v)| [y, u, y, v, 0, 0, 0, 0]).collect();
            // SAFETY: sizes as allocated.
            unsafe { std::ptr::copy_nonoverlapping(lines.as_ptr(), src, 24) };
            let k = builtin(&ctx, name);
            k.set_arg_mem_pointer(0, src).unwrap();
            k.set_arg_mem_pointer(1, dst).unwrap();
            for (i, v) in [2u32, 3, 8, 8].into_iter().enumerate() {
                k.set_arg_scalar(2 + i as u32, &v.to_ne_bytes()).unwrap();
            }
            k.set_arg_scalar(6, &coeffs).unwrap();
            run_task(&q, &k);
            // SAFETY: complete.
            let out = unsafe { std::slice::from_raw_parts(dst, 24) };
            for (line, rgb) in want.iter().enumerate() {
                for px in 0..2 {
                    let got = &out[line * 8 + px * 4..][..4];
                    for (c, &ch) in order.iter().enumerate() {
                        let diff = (got[c] as i32 - rgb[ch]).abs();
                        assert!(diff <= 1, "{name} {m:?} {r:?}: line {line} pixel {px} is {got:?}, not {rgb:?}");
                    }
                    assert_eq!(got[3], 255);
                }
            }
            // A Y offset the 16-bit lanes cannot take, and a wrong size.
            let mut bad = YuvCoefficients::new(m, r);
            bad.y_offset = -1;
            k.set_arg_scalar(6, &bad.to_arg()).unwrap();
            // SAFETY: refused before anything is enqueued.
            let err = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap_err();
            assert_eq!(err.kind, InvalidKernelArgs, "{err}");
            assert!(err.to_string().contains("Y offset"), "{err}");
            assert_eq!(k.set_arg_scalar(6, &[0u8; 8]).unwrap_err().kind, InvalidArgSize);
            usm::mem_free(&ctx, src).unwrap();
            usm::mem_free(&ctx, dst).unwrap();
        }
    }
}

#[test]
fn a_large_yuyv_frame_converts_the_same_at_any_global_size() {
    let (ctx, q) = setup();
    let (w, h) = (640usize, 480usize);
    let (src, dst) = (host(&ctx, w * h * 2), host(&ctx, w * h * 4));
    let data = noise(w * h * 2, 5);
    // SAFETY: sizes as allocated.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), src, data.len()) };
    let k = builtin(&ctx, "yuyv_to_rgba");
    k.set_arg_mem_pointer(0, src).unwrap();
    k.set_arg_mem_pointer(1, dst).unwrap();
    k.set_arg_scalar(2, &(w as u32).to_ne_bytes()).unwrap();
    k.set_arg_scalar(3, &(h as u32).to_ne_bytes()).unwrap();
    run_nd(&q, &k, 480);
    // SAFETY: complete.
    let out = unsafe { std::slice::from_raw_parts(dst, w * h * 4) };
    for (i, pair) in data.chunks(4).enumerate().step_by(997) {
        let y = |v: u8| 298 * (v as i32 - 16);
        let (d, e) = (pair[1] as i32 - 128, pair[3] as i32 - 128);
        for (j, yy) in [pair[0], pair[2]].into_iter().enumerate() {
            let c = y(yy);
            let f = |x: i32| ((x + 128) as f64 / 256.0).floor().clamp(0.0, 255.0) as u8;
            let want = [f(c + 409 * e), f(c - 100 * d - 208 * e), f(c + 516 * d), 255];
            assert_eq!(out[(2 * i + j) * 4..][..4], want, "pixel {}", 2 * i + j);
        }
    }
    usm::mem_free(&ctx, src).unwrap();
    usm::mem_free(&ctx, dst).unwrap();
}

#[test]
fn argument_errors() {
    let (ctx, q) = setup();
    let p = host(&ctx, 64);
    let k = builtin(&ctx, "fill_pattern_u32");
    assert_eq!(k.num_args(), 3);
    assert_eq!(k.arg_kinds(), [ArgKind::Pointer, ArgKind::Scalar(8), ArgKind::Scalar(4)]);
    assert_eq!(k.set_arg_mem_pointer(3, p).unwrap_err().kind, InvalidArgIndex);
    assert_eq!(k.set_arg_scalar(3, &[0; 4]).unwrap_err().kind, InvalidArgIndex);
    assert_eq!(k.set_arg_mem_pointer(1, p).unwrap_err().kind, InvalidArgValue);
    assert_eq!(k.set_arg_scalar(0, &[0; 8]).unwrap_err().kind, InvalidArgValue);
    assert_eq!(k.set_arg_scalar(1, &[0; 4]).unwrap_err().kind, InvalidArgSize);
    assert_eq!(k.set_arg_scalar(2, &[0; 8]).unwrap_err().kind, InvalidArgSize);
    assert_eq!(k.set_arg_scalar(2, &[]).unwrap_err().kind, InvalidArgSize);
    // NULL is a valid pointer argument.
    k.set_arg_mem_pointer(0, std::ptr::null()).unwrap();
    // Unset arguments.
    // SAFETY: every failing enqueue below is refused before it is enqueued.
    unsafe {
        assert_eq!(kernel::enqueue_task(&q, &k, &[]).unwrap_err().kind, InvalidKernelArgs);
        k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
        assert_eq!(kernel::enqueue_nd_range(&q, &k, 4, &[]).unwrap_err().kind, InvalidKernelArgs);
        k.set_arg_scalar(2, &1u32.to_ne_bytes()).unwrap();
        // All set, but NULL with 16 words to write.
        assert_eq!(kernel::enqueue_task(&q, &k, &[]).unwrap_err().kind, InvalidKernelArgs);
        // NULL with nothing to write is fine.
        k.set_arg_scalar(1, &0u64.to_ne_bytes()).unwrap();
        let e = kernel::enqueue_task(&q, &k, &[]).unwrap();
        assert_eq!(e.command_type(), kernel_command_type::TASK);
        Event::wait(&[e]).unwrap();
        // 17 words do not fit the 64-byte allocation.
        k.set_arg_mem_pointer(0, p).unwrap();
        k.set_arg_scalar(1, &17u64.to_ne_bytes()).unwrap();
        assert_eq!(kernel::enqueue_task(&q, &k, &[]).unwrap_err().kind, InvalidKernelArgs);
        k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
        Event::wait(&[kernel::enqueue_task(&q, &k, &[]).unwrap()]).unwrap();
        // Overlapping source and destination.
        let c = builtin(&ctx, "copy_bytes");
        c.set_arg_mem_pointer(0, p.add(8)).unwrap();
        c.set_arg_mem_pointer(1, p).unwrap();
        c.set_arg_scalar(2, &16u64.to_ne_bytes()).unwrap();
        assert_eq!(kernel::enqueue_task(&q, &c, &[]).unwrap_err().kind, InvalidKernelArgs);
        // A queue of another context.
        let (_, other_q) = setup();
        assert_eq!(kernel::enqueue_task(&other_q, &k, &[]).unwrap_err().kind, InvalidContext);
    }
    q.finish().unwrap();
    usm::mem_free(&ctx, p).unwrap();
}

#[test]
fn exec_info_errors_and_decoding() {
    let (ctx, _) = setup();
    let k = builtin(&ctx, "copy_bytes");
    for param in [exec_info::INDIRECT_HOST_ACCESS, exec_info::INDIRECT_DEVICE_ACCESS, exec_info::INDIRECT_SHARED_ACCESS]
    {
        k.set_exec_info_indirect_access(param, true).unwrap();
        k.set_exec_info_indirect_access(param, false).unwrap();
        k.set_exec_info(param, &1u32.to_ne_bytes()).unwrap();
        k.set_exec_info(param, &0u32.to_ne_bytes()).unwrap();
        assert_eq!(k.set_exec_info(param, &[1]).unwrap_err().kind, InvalidValue);
        assert_eq!(k.set_exec_info(param, &1u64.to_ne_bytes()).unwrap_err().kind, InvalidValue);
    }
    for bad in [exec_info::USM_PTRS, 0x41FF, 0x4204, 0] {
        assert_eq!(k.set_exec_info_indirect_access(bad, true).unwrap_err().kind, InvalidValue, "{bad:#x}");
    }
    assert_eq!(k.set_exec_info(0x4204, &1u32.to_ne_bytes()).unwrap_err().kind, InvalidValue);
    let ptrs: Vec<u8> = [0x1000usize, 0x2000].iter().flat_map(|p| p.to_ne_bytes()).collect();
    k.set_exec_info(exec_info::USM_PTRS, &ptrs).unwrap();
    k.set_exec_info(exec_info::USM_PTRS, &[]).unwrap();
    assert_eq!(k.set_exec_info(exec_info::USM_PTRS, &ptrs[..ptrs.len() - 1]).unwrap_err().kind, InvalidValue);
    assert_eq!(k.set_exec_info(exec_info::USM_PTRS, &[0; 3]).unwrap_err().kind, InvalidValue);
}

#[test]
fn arguments_are_captured_at_enqueue() {
    let (ctx, q) = setup();
    let (a, b) = (host(&ctx, 64), host(&ctx, 64));
    // SAFETY: 64 bytes each.
    unsafe {
        std::ptr::write_bytes(a, 0, 64);
        std::ptr::write_bytes(b, 0, 64);
    }
    let k = builtin(&ctx, "fill_pattern_u32");
    k.set_arg_mem_pointer(0, a).unwrap();
    k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
    k.set_arg_scalar(2, &0x1111_1111u32.to_ne_bytes()).unwrap();
    let gate = Event::user(&ctx);
    // SAFETY: a and b live until the end.
    let first = unsafe { kernel::enqueue_task(&q, &k, std::slice::from_ref(&gate)) }.unwrap();
    // Change every argument before the launch can run.
    k.set_arg_mem_pointer(0, b).unwrap();
    k.set_arg_scalar(1, &8u64.to_ne_bytes()).unwrap();
    k.set_arg_scalar(2, &0x2222_2222u32.to_ne_bytes()).unwrap();
    // SAFETY: as above.
    let second = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(first.status(), EventStatus::Queued);
    gate.set_user_status(0).unwrap();
    Event::wait(&[first, second]).unwrap();
    // SAFETY: both complete.
    let (wa, wb) =
        unsafe { (std::slice::from_raw_parts(a.cast::<u32>(), 16), std::slice::from_raw_parts(b.cast::<u32>(), 16)) };
    assert!(wa.iter().all(|&w| w == 0x1111_1111), "{wa:x?}");
    assert!(wb[..8].iter().all(|&w| w == 0x2222_2222) && wb[8..].iter().all(|&w| w == 0), "{wb:x?}");
    usm::mem_free(&ctx, a).unwrap();
    usm::mem_free(&ctx, b).unwrap();
}

#[test]
fn a_native_kernel_gets_its_captured_arguments() {
    let (ctx, q) = setup();
    let p = host(&ctx, 8);
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let k = Kernel::native(
        &ctx,
        Arc::new(move |args: &[KernelArgValue]| {
            seen.fetch_add(1, Ordering::SeqCst);
            let dst = args[0].as_ptr().ok_or(-50)? as *mut u64;
            let v = args[1].as_u64().ok_or(-51)?;
            if v == 0 {
                return Err(-5);
            }
            // SAFETY: the test passes an 8-byte allocation.
            unsafe { dst.write_unaligned(v * 3) };
            Ok(())
        }),
        vec![ArgKind::Pointer, ArgKind::Scalar(8)],
    )
    .unwrap();
    assert!(k.is_native() && k.name().is_empty());
    assert_eq!(k.set_arg_scalar(1, &[0; 4]).unwrap_err().kind, InvalidArgSize);
    k.set_arg_mem_pointer(0, p).unwrap();
    k.set_arg_scalar(1, &14u64.to_ne_bytes()).unwrap();
    let e = run_task(&q, &k);
    assert_eq!(e.command_type(), kernel_command_type::NATIVE_KERNEL);
    // SAFETY: complete.
    assert_eq!(unsafe { p.cast::<u64>().read() }, 42);
    // Its error code ends the event.
    k.set_arg_scalar(1, &0u64.to_ne_bytes()).unwrap();
    // SAFETY: p lives until the end.
    let failed = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap();
    assert!(Event::wait(std::slice::from_ref(&failed)).is_err());
    assert_eq!(failed.status(), EventStatus::Error(-5));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // SAFETY: refused.
    assert_eq!(unsafe { kernel::enqueue_nd_range(&q, &k, 4, &[]) }.unwrap_err().kind, InvalidKernel);
    assert_eq!(
        Kernel::native(&ctx, Arc::new(|_: &[KernelArgValue]| Ok(())), vec![ArgKind::Scalar(0)]).unwrap_err().kind,
        InvalidArgSize
    );
    usm::mem_free(&ctx, p).unwrap();
}

/// Enqueues `k` gated on a user event, starts a blocking free of `p`, and
/// reports whether the free returned before the gate opened.
///
/// The gate opens as soon as the free returns, or, if it is still waiting,
/// after a patience chosen by what the caller expects, so that no timing can
/// fail a correct free: when the free is expected to wait (`expect_early`
/// false), one second (a free that wrongly returns at once is still seen
/// returning first, unless stalled that long, which can only hide the bug);
/// when it is expected not to wait, a minute, only so that a free that
/// wrongly waits fails the test instead of hanging it.
fn free_returns_before_launch(
    ctx: &Arc<Context>,
    q: &Arc<Queue>,
    k: &Arc<Kernel>,
    p: *mut u8,
    expect_early: bool,
) -> bool {
    let patience = Duration::from_secs(if expect_early { 60 } else { 1 });
    let gate = Event::user(ctx);
    // SAFETY: the kernels of these tests touch only allocations that live
    // until their event completes (or nothing).
    let launch = unsafe { kernel::enqueue_task(q, k, std::slice::from_ref(&gate)) }.unwrap();
    let (returned, free_returned) = std::sync::mpsc::channel::<()>();
    let opener = {
        let gate = gate.clone();
        std::thread::spawn(move || {
            let _ = free_returned.recv_timeout(patience);
            gate.set_user_status(0).unwrap();
        })
    };
    cmd::mem_blocking_free(ctx, p).unwrap();
    let early = !launch.status().is_terminal();
    let _ = returned.send(());
    opener.join().unwrap();
    Event::wait(&[launch]).unwrap();
    early
}

#[test]
fn blocking_free_waits_for_a_launch_with_the_pointer_argument() {
    let (ctx, q) = setup();
    let p = host(&ctx, 256);
    let k = builtin(&ctx, "fill_pattern_u32");
    // An interior pointer still counts as using the whole allocation.
    // SAFETY: inside the 256-byte allocation.
    k.set_arg_mem_pointer(0, unsafe { p.add(128) }).unwrap();
    k.set_arg_scalar(1, &4u64.to_ne_bytes()).unwrap();
    k.set_arg_scalar(2, &7u32.to_ne_bytes()).unwrap();
    assert!(!free_returns_before_launch(&ctx, &q, &k, p, false), "the free did not wait for the launch");
    assert_eq!(usm::mem_free(&ctx, p).unwrap_err().kind, InvalidValue, "already freed");
}

#[test]
fn blocking_free_waits_for_usm_ptrs_and_indirect_access_only() {
    let (ctx, q) = setup();
    let other = host(&ctx, 64);
    let k = builtin(&ctx, "fill_pattern_u32");
    k.set_arg_mem_pointer(0, other).unwrap();
    k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
    k.set_arg_scalar(2, &7u32.to_ne_bytes()).unwrap();
    // Control: a launch that uses another allocation does not hold the free.
    let p = host(&ctx, 64);
    assert!(free_returns_before_launch(&ctx, &q, &k, p, true), "the free waited for a launch that does not use it");
    // USM_PTRS names it.
    let p = host(&ctx, 64);
    k.set_exec_info_usm_ptrs(&[p]);
    assert!(!free_returns_before_launch(&ctx, &q, &k, p, false), "USM_PTRS did not count");
    k.set_exec_info_usm_ptrs(&[]);
    // Indirect access: a native kernel without any argument uses every
    // allocation of the flagged type, and no other.
    let native = Kernel::native(&ctx, Arc::new(|_: &[KernelArgValue]| Ok(())), vec![]).unwrap();
    let cpu = Platform::get().cpu().clone();
    let alloc = |kind: usize| match kind {
        0 => host(&ctx, 64),
        1 => usm::device_mem_alloc(&ctx, &cpu, &[], 64, 0).unwrap().as_ptr(),
        _ => usm::shared_mem_alloc(&ctx, None, &[], 64, 0).unwrap().as_ptr(),
    };
    let params =
        [exec_info::INDIRECT_HOST_ACCESS, exec_info::INDIRECT_DEVICE_ACCESS, exec_info::INDIRECT_SHARED_ACCESS];
    for (flag, param) in params.into_iter().enumerate() {
        native.set_exec_info(param, &1u32.to_ne_bytes()).unwrap();
        // Host, device, shared. (An SVM allocation is not the blocking
        // free's to free: it refuses it, see below.)
        for kind in 0..3 {
            let uses = kind == flag;
            let p = alloc(kind);
            assert_eq!(
                !free_returns_before_launch(&ctx, &q, &native, p, !uses),
                uses,
                "indirect access {param:#x}, allocation type {kind}: the free must wait only for its own type"
            );
        }
        native.set_exec_info_indirect_access(param, false).unwrap();
    }
    let p = host(&ctx, 64);
    assert!(free_returns_before_launch(&ctx, &q, &native, p, true), "no flag set: the free must not wait");
    // An SVM allocation, which indirect shared access covers, is refused
    // by the blocking free at once: not a USM allocation (seed 000).
    native.set_exec_info_indirect_access(exec_info::INDIRECT_SHARED_ACCESS, true).unwrap();
    let s = dmabridge::ext::svm::svm_alloc(&ctx, 1, 64, 0).unwrap().as_ptr();
    let gate = Event::user(&ctx);
    // SAFETY: the native kernel touches no memory.
    let launch = unsafe { kernel::enqueue_task(&q, &native, std::slice::from_ref(&gate)) }.unwrap();
    // The gate opens once the free returned; should the free wait for the
    // launch instead, it opens after a long bound so that the test fails
    // rather than hangs.
    let (returned, opened_on) = std::sync::mpsc::channel::<()>();
    let opener = {
        let gate = gate.clone();
        std::thread::spawn(move || {
            let _ = opened_on.recv_timeout(Duration::from_secs(60));
            gate.set_user_status(0).unwrap();
        })
    };
    assert_eq!(cmd::mem_blocking_free(&ctx, s).unwrap_err().kind, InvalidValue);
    assert!(!launch.status().is_terminal(), "refused without waiting for the launch");
    returned.send(()).unwrap();
    opener.join().unwrap();
    Event::wait(&[launch]).unwrap();
    assert!(dmabridge::ext::svm::svm_free(&ctx, s));
    usm::mem_free(&ctx, other).unwrap();
}

/// The seed's rule, directly: a launch with INDIRECT_HOST_ACCESS held by a
/// closed user event blocks the blocking free of a host allocation, not that
/// of a device allocation (observed from another thread with a bound).
#[test]
fn indirect_host_access_holds_host_frees_not_device_frees() {
    let (ctx, q) = setup();
    let cpu = Platform::get().cpu().clone();
    let native = Kernel::native(&ctx, Arc::new(|_: &[KernelArgValue]| Ok(())), vec![]).unwrap();
    native.set_exec_info_indirect_access(exec_info::INDIRECT_HOST_ACCESS, true).unwrap();
    let h = host(&ctx, 256) as usize;
    let d = usm::device_mem_alloc(&ctx, &cpu, &[], 256, 0).unwrap().as_ptr() as usize;
    let gate = Event::user(&ctx);
    // SAFETY: the native kernel touches no memory.
    let launch = unsafe { kernel::enqueue_task(&q, &native, std::slice::from_ref(&gate)) }.unwrap();
    let free_on_thread = |p: usize| {
        let ctx = ctx.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(cmd::mem_blocking_free(&ctx, p as *mut u8)).unwrap());
        rx
    };
    // The device allocation's free returns while the gate is closed.
    let rx = free_on_thread(d);
    assert!(matches!(rx.recv_timeout(Duration::from_secs(60)), Ok(Ok(()))), "the device free waited");
    assert!(!launch.status().is_terminal(), "the gate is still closed");
    // The host allocation's free does not, until the gate opens.
    let rx = free_on_thread(h);
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "the host free returned with the launch pending");
    gate.set_user_status(0).unwrap();
    assert!(matches!(rx.recv_timeout(Duration::from_secs(60)), Ok(Ok(()))), "the host free never returned");
    Event::wait(&[launch]).unwrap();
    assert_eq!(usm::mem_free(&ctx, h as *mut u8).unwrap_err().kind, InvalidValue, "already freed");
}

/// Hostile sizes in built-in arguments and NDRanges: extents that overflow
/// or run past their allocation are `CL_INVALID_KERNEL_ARGS` at enqueue;
/// any global size splits the work without overflowing.
#[test]
fn hostile_argument_and_global_sizes() {
    let (ctx, q) = setup();
    let a = host(&ctx, 64);
    let b = host(&ctx, 64);
    let near_top = (usize::MAX - 127) as *const u8;
    let copy = builtin(&ctx, "copy_bytes");
    let fill = builtin(&ctx, "fill_pattern_u32");
    let yuyv = builtin(&ctx, "yuyv_to_rgba");
    // SAFETY (this block): the refused launches are refused at enqueue; the
    // others stay inside the 64-byte allocations.
    unsafe {
        for (dst, src, size) in
            [(a.cast_const(), b.cast_const(), u64::MAX), (a, b, 65), (near_top, b, 256), (a, near_top, 256)]
        {
            copy.set_arg_mem_pointer(0, dst).unwrap();
            copy.set_arg_mem_pointer(1, src).unwrap();
            copy.set_arg_scalar(2, &size.to_ne_bytes()).unwrap();
            assert_eq!(kernel::enqueue_task(&q, &copy, &[]).unwrap_err().kind, InvalidKernelArgs, "{size}");
        }
        fill.set_arg_mem_pointer(0, a).unwrap();
        fill.set_arg_scalar(2, &9u32.to_ne_bytes()).unwrap();
        for count in [u64::MAX, u64::MAX / 4, 17] {
            fill.set_arg_scalar(1, &count.to_ne_bytes()).unwrap();
            assert_eq!(kernel::enqueue_nd_range(&q, &fill, 64, &[]).unwrap_err().kind, InvalidKernelArgs);
        }
        yuyv.set_arg_mem_pointer(0, a).unwrap();
        yuyv.set_arg_mem_pointer(1, b).unwrap();
        for (w, h) in [(u32::MAX - 1, u32::MAX), (2, u32::MAX), (4, 8)] {
            yuyv.set_arg_scalar(2, &w.to_ne_bytes()).unwrap();
            yuyv.set_arg_scalar(3, &h.to_ne_bytes()).unwrap();
            assert_eq!(kernel::enqueue_task(&q, &yuyv, &[]).unwrap_err().kind, InvalidKernelArgs, "{w}x{h}");
        }
        // 16 words over any number of work-items, the largest included.
        fill.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
        for global in [usize::MAX, usize::MAX / 3, 17, 1] {
            std::ptr::write_bytes(a, 0, 64);
            Event::wait(&[kernel::enqueue_nd_range(&q, &fill, global, &[]).unwrap()]).unwrap();
            let words = std::slice::from_raw_parts(a.cast::<u32>(), 16);
            assert!(words.iter().all(|&w| w == 9), "global size {global}");
        }
        std::ptr::write_bytes(a, 0, 64);
        Event::wait(&[kernel::enqueue_nd_range(&q, &fill, 0, &[]).unwrap()]).unwrap();
        assert!(std::slice::from_raw_parts(a, 64).iter().all(|&x| x == 0), "a global size of 0 runs nothing");
    }
    usm::mem_free(&ctx, a).unwrap();
    usm::mem_free(&ctx, b).unwrap();
}

mod buffer_args {
    use super::*;
    use dmabridge::runtime::buffer::store::Location;
    use dmabridge::runtime::buffer::{commands, Buffer, BUFFER_CREATE_TYPE_REGION};

    fn buffer(ctx: &Arc<Context>, size: usize) -> Arc<Buffer> {
        // SAFETY: no host pointer.
        unsafe { Buffer::create(ctx, 0, size, std::ptr::null_mut()) }.unwrap()
    }

    fn read(q: &Arc<Queue>, b: &Arc<Buffer>) -> Vec<u8> {
        let mut out = vec![0u8; b.size()];
        // SAFETY: blocking; `out` holds the buffer's size.
        unsafe { commands::enqueue_read_buffer(q, b, true, 0, out.len(), out.as_mut_ptr(), &[]) }.unwrap();
        out
    }

    fn write(q: &Arc<Queue>, b: &Arc<Buffer>, data: &[u8]) {
        // SAFETY: blocking; `data` holds the bytes.
        unsafe { commands::enqueue_write_buffer(q, b, true, 0, data.len(), data.as_ptr(), &[]) }.unwrap();
    }

    #[test]
    fn fill_pattern_writes_a_buffer_that_a_read_shows() {
        let (ctx, q) = setup();
        let b = buffer(&ctx, 4096 + 4);
        write(&q, &b, &[0x11; 4100]);
        let k = builtin(&ctx, "fill_pattern_u32");
        k.set_arg_buffer(0, &b).unwrap();
        k.set_arg_scalar(1, &1024u64.to_ne_bytes()).unwrap();
        k.set_arg_scalar(2, &0xA1B2_C3D4u32.to_ne_bytes()).unwrap();
        run_nd(&q, &k, 7);
        let out = read(&q, &b);
        assert!(out[..4096].chunks(4).all(|w| w == 0xA1B2_C3D4u32.to_ne_bytes()));
        assert_eq!(out[4096..], [0x11; 4], "wrote past count");
        let cpu = Location::Device(Platform::get().cpu().index);
        assert_eq!(b.stats(cpu).allocations, 1);
    }

    #[test]
    fn copy_bytes_between_buffers_and_from_usm_into_a_sub_buffer() {
        let (ctx, q) = setup();
        let n = 5000;
        let data = noise(n, 7);
        let (src, dst) = (buffer(&ctx, n), buffer(&ctx, n));
        write(&q, &src, &data);
        let k = builtin(&ctx, "copy_bytes");
        k.set_arg_buffer(0, &dst).unwrap();
        k.set_arg_buffer(1, &src).unwrap();
        k.set_arg_scalar(2, &(n as u64).to_ne_bytes()).unwrap();
        run_nd(&q, &k, 3);
        assert!(read(&q, &dst) == data);

        // USM → the sub-buffer at 1024 of a zeroed 8 KiB buffer.
        let parent = buffer(&ctx, 8192);
        write(&q, &parent, &[0; 8192]);
        let sub = Buffer::create_sub_buffer(&parent, 0, BUFFER_CREATE_TYPE_REGION, 1024, 2048).unwrap();
        let usm_src = host(&ctx, 2048);
        // SAFETY: 2048 bytes as allocated.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), usm_src, 2048) };
        k.set_arg_buffer(0, &sub).unwrap();
        k.set_arg_mem_pointer(1, usm_src).unwrap();
        k.set_arg_scalar(2, &2048u64.to_ne_bytes()).unwrap();
        run_task(&q, &k);
        let out = read(&q, &parent);
        assert!(out[..1024].iter().all(|&x| x == 0));
        assert!(out[1024..3072] == data[..2048]);
        assert!(out[3072..].iter().all(|&x| x == 0));
        usm::mem_free(&ctx, usm_src).unwrap();
    }

    #[test]
    fn a_null_buffer_stays_a_null_pointer_and_is_refused_where_accessed() {
        let (ctx, q) = setup();
        let k = builtin(&ctx, "fill_pattern_u32");
        k.set_arg_mem_pointer(0, std::ptr::null()).unwrap();
        k.set_arg_scalar(1, &0u64.to_ne_bytes()).unwrap();
        k.set_arg_scalar(2, &1u32.to_ne_bytes()).unwrap();
        run_nd(&q, &k, 1); // nothing accessed: fine
        k.set_arg_scalar(1, &1u64.to_ne_bytes()).unwrap();
        // SAFETY: refused at enqueue.
        let e = unsafe { kernel::enqueue_nd_range(&q, &k, 1, &[]) }.unwrap_err();
        assert_eq!(e.kind, InvalidKernelArgs);
    }

    #[test]
    fn buffer_argument_errors_leave_no_allocation() {
        let (ctx, q) = setup();
        let (other, _) = setup();
        let k = builtin(&ctx, "fill_pattern_u32");
        assert_eq!(k.set_arg_buffer(0, &buffer(&other, 64)).unwrap_err().kind, InvalidMemObject);
        let b = buffer(&ctx, 64);
        assert_eq!(k.set_arg_buffer(1, &b).unwrap_err().kind, InvalidArgValue);
        assert_eq!(k.set_arg_buffer(3, &b).unwrap_err().kind, InvalidArgIndex);
        // 17 words into a 64-byte buffer: refused, and the allocation the
        // enqueue made for it is given back.
        k.set_arg_buffer(0, &b).unwrap();
        k.set_arg_scalar(1, &17u64.to_ne_bytes()).unwrap();
        k.set_arg_scalar(2, &1u32.to_ne_bytes()).unwrap();
        // SAFETY: refused at enqueue.
        let e = unsafe { kernel::enqueue_nd_range(&q, &k, 1, &[]) }.unwrap_err();
        assert_eq!(e.kind, InvalidKernelArgs);
        let cpu = Location::Device(Platform::get().cpu().index);
        assert_eq!(b.stats(cpu).allocations, 0);
        // 16 words fit.
        k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
        run_task(&q, &k);
        assert!(read(&q, &b).chunks(4).all(|w| w == 1u32.to_ne_bytes()));
    }

    #[test]
    fn the_launch_holds_the_buffer_until_it_completes() {
        let (ctx, q) = setup();
        let gate = Arc::new(std::sync::Barrier::new(2));
        let g = gate.clone();
        let native = Kernel::native(
            &ctx,
            Arc::new(move |_: &[KernelArgValue]| {
                g.wait();
                Ok(())
            }),
            vec![],
        )
        .unwrap();
        // SAFETY: the native kernel reaches nothing.
        let blocker = unsafe { kernel::enqueue_task(&q, &native, &[]) }.unwrap();
        let b = buffer(&ctx, 64);
        let weak = Arc::downgrade(&b);
        let k = builtin(&ctx, "fill_pattern_u32");
        k.set_arg_buffer(0, &b).unwrap();
        k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
        k.set_arg_scalar(2, &5u32.to_ne_bytes()).unwrap();
        // SAFETY: the buffer is the only memory reached.
        let e = unsafe { kernel::enqueue_nd_range(&q, &k, 1, &[]) }.unwrap();
        drop(b);
        drop(k);
        assert!(weak.upgrade().is_some(), "the queued launch holds the buffer");
        gate.wait();
        Event::wait(&[blocker, e]).unwrap();
    }
}

/// Issue 17: `CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS` is 3, so 2-D and 3-D
/// ranges run (before: every range was 1-D only). A built-in does the same
/// work whatever the range's shape, offset and local size (here a local
/// size that does not divide the global size: non-uniform work-groups), and
/// a native kernel has no NDRange at all.
#[test]
fn two_and_three_dimensional_ranges_run_built_ins() {
    use dmabridge::runtime::kernel::NdRange;
    let (ctx, q) = setup();
    let words = 1000usize;
    let p = host(&ctx, words * 4);
    let fill = builtin(&ctx, "fill_pattern_u32");
    fill.set_arg_mem_pointer(0, p).unwrap();
    fill.set_arg_scalar(1, &(words as u64).to_ne_bytes()).unwrap();
    let ranges = [
        NdRange::new(&[16, 4], Some(&[3, 1]), Some(&[5, 3])).unwrap(),
        NdRange::new(&[4, 4, 4], None, Some(&[2, 2, 2])).unwrap(),
        NdRange::new(&[1000, 1, 3], None, None).unwrap(),
        NdRange::new(&[usize::MAX / 3, 3], None, None).unwrap(),
    ];
    for (i, range) in ranges.iter().enumerate() {
        let pattern = 0x1000 + i as u32;
        fill.set_arg_scalar(2, &pattern.to_ne_bytes()).unwrap();
        // SAFETY: `p` holds the `words` words the kernel writes until freed below.
        let e = unsafe { kernel::enqueue_range(&q, &fill, range, &[]) }.unwrap();
        Event::wait(std::slice::from_ref(&e)).unwrap();
        assert_eq!(e.command_type(), kernel_command_type::NDRANGE_KERNEL);
        // SAFETY: the allocation holds `words` words; the kernel ended.
        let got = unsafe { std::slice::from_raw_parts(p.cast::<u32>(), words) };
        assert!(got.iter().all(|&w| w == pattern), "{range:?}");
    }
    // A 0 in any dimension runs nothing.
    fill.set_arg_scalar(2, &7u32.to_ne_bytes()).unwrap();
    // SAFETY: as above.
    let e = unsafe { kernel::enqueue_range(&q, &fill, &NdRange::new(&[8, 0, 8], None, None).unwrap(), &[]) }.unwrap();
    Event::wait(&[e]).unwrap();
    // SAFETY: as above.
    assert!(unsafe { std::slice::from_raw_parts(p.cast::<u32>(), words) }.iter().all(|&w| w == 0x1003));
    // The range's own errors, with their CL codes.
    let kind = |r: Result<NdRange, dmabridge::error::ClError>| r.unwrap_err().kind;
    assert_eq!(kind(NdRange::new(&[], None, None)), InvalidWorkDimension);
    assert_eq!(kind(NdRange::new(&[1, 1, 1, 1], None, None)), InvalidWorkDimension);
    assert_eq!(kind(NdRange::new(&[usize::MAX, 2], None, None)), InvalidGlobalWorkSize);
    assert_eq!(kind(NdRange::new(&[8, 8], Some(&[0, usize::MAX]), None)), InvalidGlobalOffset);
    assert_eq!(kind(NdRange::new(&[8, 8, 8], None, Some(&[1, 2048, 1]))), InvalidWorkItemSize);
    assert_eq!(kind(NdRange::new(&[64, 64, 4], None, Some(&[32, 32, 2]))), InvalidWorkGroupSize);
    assert_eq!(kind(NdRange::new(&[8, 8], None, Some(&[4, 0]))), InvalidWorkGroupSize);
    assert_eq!(kind(NdRange::new(&[8, 8], None, Some(&[4]))), InvalidValue);
    // A native kernel runs through clEnqueueNativeKernel (a task), never a range.
    let native = Kernel::native(&ctx, Arc::new(|_: &[KernelArgValue]| Ok(())), vec![]).unwrap();
    // SAFETY: refused before anything runs.
    let r = unsafe { kernel::enqueue_range(&q, &native, &NdRange::new(&[2, 2], None, None).unwrap(), &[]) };
    assert_eq!(r.unwrap_err().kind, InvalidKernel);
    usm::mem_free(&ctx, p).unwrap();
}
