//! OpenCL C programs from source through the Rust API
//! (`runtime::program`): PoCL builds them for the CPU device, and their
//! kernels run on dmabridge queues on USM allocations and buffers in place.
//! `make test` installs PoCL (`tests/icd-deps`), so it must be there
//! (`DMABRIDGE_EXPECT_POCL=1`, as tests/icd/run sets); elsewhere a missing
//! PoCL skips these tests with the reason, except the one that checks the
//! answer without it.

use std::sync::Arc;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::usm;
use dmabridge::pipeline::capture::{KernelConverter, PipelineError};
use dmabridge::runtime::buffer::{commands, store::Location, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::kernel::{Kernel as BuiltIn, NdRange};
use dmabridge::runtime::program::{pocl, Kernel, Program, BINARY_TYPE_COMPILED_OBJECT, BINARY_TYPE_EXECUTABLE};
use dmabridge::runtime::queue::Queue;
use dmabridge::sys::v4l2::{FourCc, PixFormat};
use dmabridge_tests::{cpu_context_and_queue, err_kind, pocl_or_skip, run_alone};

/// A context and queue on the CPU device when PoCL is there; else `None`
/// after saying why the test does not run here.
fn with_pocl(test: &str) -> Option<(Arc<Context>, Arc<Queue>)> {
    pocl_or_skip(test).then(cpu_context_and_queue)
}

/// A small YUYV frame's format.
fn frame_format() -> PixFormat {
    PixFormat { width: 64, height: 8, fourcc: FourCc::YUYV, bytes_per_line: 128, size_image: 1024 }
}

const YUYV: &str = include_str!("../../examples/cl/yuyv_to_rgba.cl");

#[test]
fn a_program_builds_and_names_its_kernels() {
    let Some((ctx, _)) = with_pocl("a_program_builds_and_names_its_kernels") else { return };
    let p = Program::from_source(&ctx, "kernel void a(global int *x) {}\nkernel void b(int v) {}").unwrap();
    assert_eq!(err_kind(p.kernel_names()), ClErrorKind::InvalidProgramExecutable, "not built yet");
    assert_eq!(err_kind(Kernel::new(&p, "a")), ClErrorKind::InvalidProgramExecutable);
    p.build("-cl-std=CL1.2").unwrap();
    assert_eq!(p.kernel_names().unwrap(), ["a", "b"]);
    let k = Kernel::new(&p, "b").unwrap();
    assert_eq!((k.name(), k.num_args()), ("b", 1));
    assert_eq!(err_kind(Kernel::new(&p, "c")), ClErrorKind::InvalidKernelName);
}

#[test]
fn a_build_error_carries_the_log() {
    let Some((ctx, _)) = with_pocl("a_build_error_carries_the_log") else { return };
    let p = Program::from_source(&ctx, "kernel void k(global int *x) { x[0] = not_declared; }").unwrap();
    let e = p.build("").unwrap_err();
    assert_eq!(e.code, -11, "CL_BUILD_PROGRAM_FAILURE: {e}");
    assert!(e.log.contains("not_declared"), "PoCL's log names the culprit: {}", e.log);
    assert!(e.message.contains("build log") && e.message.contains("not_declared"), "{}", e.message);
    assert!(p.log().contains("not_declared"), "the program keeps the log: {}", p.log());
    assert_eq!(err_kind(p.kernel_names()), ClErrorKind::InvalidProgramExecutable);
    let e = Program::from_source(&ctx, "kernel void k(void) {}").unwrap().build("-no-such-option").unwrap_err();
    assert_eq!(e.code, -43, "CL_INVALID_BUILD_OPTIONS: {e}");
    assert_eq!(dmabridge::error::ClError::from(e).kind, ClErrorKind::InvalidBuildOptions);
}

/// `clCompileProgram` and `clLinkProgram` through the Rust API: a header
/// found by its include name, objects that are not executables, a link
/// into a new program, and each refusal leaving the inputs as they were.
#[test]
fn programs_compile_with_headers_and_link() {
    let Some((ctx, queue)) = with_pocl("programs_compile_with_headers_and_link") else { return };
    let header = Program::from_source(&ctx, "#define FACTOR 3").unwrap();
    let lib = Program::from_source(&ctx, "#include \"factor.h\"\nint scale(int x) { return FACTOR * x; }").unwrap();
    let main =
        Program::from_source(&ctx, "int scale(int);\nkernel void k(global int *p) { p[0] = scale(p[0]); }").unwrap();
    assert_eq!(lib.binary_type(), 0, "CL_PROGRAM_BINARY_TYPE_NONE before a compile");
    let e = lib.compile("", &[]).unwrap_err();
    assert_eq!(e.code, -15, "CL_COMPILE_PROGRAM_FAILURE without the header: {e}");
    assert!(e.log.contains("factor.h"), "{}", e.log);
    lib.compile("", &[(&header, "factor.h")]).unwrap();
    main.compile("", &[]).unwrap();
    assert_eq!((lib.binary_type(), main.binary_type()), (BINARY_TYPE_COMPILED_OBJECT, BINARY_TYPE_COMPILED_OBJECT));
    assert_eq!(
        err_kind(Kernel::new(&main, "k")),
        ClErrorKind::InvalidProgramExecutable,
        "an object has no kernels to run"
    );

    // Refusals: no input, an input that is not an object, one of another
    // context, a symbol nobody defines.
    assert_eq!(Program::link(&ctx, &[], "").unwrap_err().code, -30, "CL_INVALID_VALUE");
    assert_eq!(Program::link(&ctx, &[&lib, &header], "").unwrap_err().code, -59, "CL_INVALID_OPERATION");
    let (other, _) = cpu_context_and_queue();
    assert_eq!(Program::link(&other, &[&lib, &main], "").unwrap_err().code, -34, "CL_INVALID_CONTEXT");
    let e = Program::link(&ctx, &[&main], "").unwrap_err();
    assert_eq!(e.code, -17, "CL_LINK_PROGRAM_FAILURE: {e}");
    assert_eq!(main.binary_type(), BINARY_TYPE_COMPILED_OBJECT, "a failed link leaves its inputs as they were");

    let exe = Program::link(&ctx, &[&lib, &main], "").unwrap();
    assert_eq!((exe.binary_type(), exe.source()), (BINARY_TYPE_EXECUTABLE, ""));
    assert_eq!(exe.kernel_names().unwrap(), ["k"]);
    let k = Kernel::new(&exe, "k").unwrap();
    let p = usm::shared_mem_alloc(&ctx, None, &[], 4, 0).unwrap().as_ptr();
    // SAFETY: `p` holds 4 bytes of the shared allocation just made.
    unsafe { p.cast::<i32>().write(7) };
    k.set_arg_pointer(0, p).unwrap();
    // SAFETY: `p` lives until after the wait; one work-item writes its 4 bytes.
    Event::wait(&[unsafe { k.enqueue(&queue, &NdRange::new(&[1], None, None).unwrap(), &[]) }.unwrap()]).unwrap();
    // SAFETY: the launch has ended.
    assert_eq!(unsafe { p.cast::<i32>().read() }, 21, "scale() from the other object ran");
    usm::mem_free(&ctx, p).unwrap();
}

#[test]
fn argument_rules() {
    let Some((ctx, queue)) = with_pocl("argument_rules") else { return };
    let p = Program::from_source(&ctx, "kernel void k(global int *a, local int *l, uint v) { a[0] = v; }").unwrap();
    p.build("").unwrap();
    let k = Kernel::new(&p, "k").unwrap();
    assert_eq!(err_kind(k.set_arg_value(3, &1u32.to_ne_bytes())), ClErrorKind::InvalidArgIndex);
    assert_eq!(err_kind(k.set_arg_value(0, &1u32.to_ne_bytes())), ClErrorKind::InvalidArgValue, "a pointer");
    assert_eq!(err_kind(k.set_arg_value(2, &1u64.to_ne_bytes())), ClErrorKind::InvalidArgSize, "PoCL's check");
    assert_eq!(err_kind(k.set_arg_pointer(2, std::ptr::null())), ClErrorKind::InvalidArgValue, "a value");
    assert_eq!(err_kind(k.set_arg_local(1, 0)), ClErrorKind::InvalidArgSize);
    k.set_arg_local(1, 64).unwrap();
    k.set_arg_value(2, &7u32.to_ne_bytes()).unwrap();
    let range = NdRange::new(&[1], None, None).unwrap();
    // SAFETY: the launch is refused before it runs (argument 0 is not set).
    let e = unsafe { k.enqueue(&queue, &range, &[]) }.unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidKernelArgs);
    assert!(e.message.contains("[0]"), "names the argument: {e}");
    let (other, _) = cpu_context_and_queue();
    // SAFETY: no host pointer.
    let foreign = unsafe { Buffer::create(&other, 0, 64, std::ptr::null_mut()) }.unwrap();
    assert_eq!(err_kind(k.set_arg_buffer(0, &foreign)), ClErrorKind::InvalidMemObject, "another context's");
}

/// The README's example kernel on a USM allocation and on a buffer, against
/// the built-in `yuyv_to_rgba_strided`: the same bytes, written in place
/// (the buffer's counters show no transfer).
#[test]
fn yuyv_kernel_runs_on_usm_and_buffers_in_place() {
    let Some((ctx, queue)) = with_pocl("yuyv_kernel_runs_on_usm_and_buffers_in_place") else { return };
    let cpu = dmabridge::runtime::platform::Platform::get().cpu();
    let (w, h, stride) = (37u32, 9u32, 80u32); // odd width, a padded line
    let src_len = (stride * h) as usize;
    let dst_len = (w * h * 4) as usize;
    let src = usm::host_mem_alloc(&ctx, &[], src_len, 0).unwrap().as_ptr();
    // Every byte value, scrambled, in the frame.
    for i in 0..src_len {
        // SAFETY: `src` holds `src_len` bytes; no command runs yet.
        unsafe { src.add(i).write((i * 97 % 251) as u8) };
    }
    let program = Program::from_source(&ctx, YUYV).unwrap();
    program.build("").unwrap();
    let ours = Kernel::new(&program, "yuyv_to_rgba").unwrap();
    let builtin = BuiltIn::builtin(&ctx, cpu, "yuyv_to_rgba_strided").unwrap();
    let dst_usm = usm::host_mem_alloc(&ctx, &[], dst_len, 0).unwrap().as_ptr();
    // SAFETY: no host pointer.
    let dst_buf = unsafe { Buffer::create(&ctx, 0, dst_len, std::ptr::null_mut()) }.unwrap();
    let expected = usm::host_mem_alloc(&ctx, &[], dst_len, 0).unwrap().as_ptr();
    for (i, v) in [w, h, stride, w * 4].into_iter().enumerate() {
        ours.set_arg_value(i as u32 + 2, &v.to_ne_bytes()).unwrap();
        builtin.set_arg_scalar(i as u32 + 2, &v.to_ne_bytes()).unwrap();
    }
    builtin.set_arg_mem_pointer(0, src).unwrap();
    builtin.set_arg_mem_pointer(1, expected).unwrap();
    ours.set_arg_pointer(0, src).unwrap();
    let range = NdRange::new(&[(w as usize).div_ceil(2), h as usize], None, None).unwrap();
    // SAFETY: every pointer is a live allocation of the sizes the kernels
    // reach; each launch is waited for before the memory is read or freed.
    unsafe {
        let e = dmabridge::runtime::kernel::enqueue_nd_range(&queue, &builtin, h as usize, &[]).unwrap();
        ours.set_arg_pointer(1, dst_usm).unwrap();
        let a = ours.enqueue(&queue, &range, &[]).unwrap();
        Event::wait(&[e, a]).unwrap();
        ours.set_arg_buffer(1, &dst_buf).unwrap();
        Event::wait(&[ours.enqueue(&queue, &range, &[]).unwrap()]).unwrap();
        let want = std::slice::from_raw_parts(expected, dst_len).to_vec();
        assert!(want.iter().any(|&b| b != 0 && b != 255), "the built-in wrote colours");
        assert!(std::slice::from_raw_parts(dst_usm, dst_len) == want, "USM: the built-in's bytes");
        let mut got = vec![0u8; dst_len];
        commands::enqueue_read_buffer(&queue, &dst_buf, true, 0, dst_len, got.as_mut_ptr(), &[]).unwrap();
        assert!(got == want, "buffer: the built-in's bytes");
    }
    let s = dst_buf.stats(Location::Host);
    assert_eq!((s.bytes_in, s.bytes_out), (0, 0), "the kernel wrote the buffer's pages in place");
    for p in [src, dst_usm, expected] {
        usm::mem_free(&ctx, p).unwrap();
    }
}

/// Without PoCL (`DMABRIDGE_POCL=off`) a build answers
/// `CL_COMPILER_NOT_AVAILABLE` and the log says how to install it.
#[test]
fn without_pocl_a_build_says_how_to_install_it() {
    run_alone("programs::child_without_pocl", &[("DMABRIDGE_POCL", Some("off"))]);
}

#[test]
#[ignore = "run by without_pocl_a_build_says_how_to_install_it in a child process"]
fn child_without_pocl() {
    assert!(pocl::get().is_none());
    let (ctx, _) = cpu_context_and_queue();
    let p = Program::from_source(&ctx, "kernel void k(void) {}").unwrap();
    let e = p.build("").unwrap_err();
    assert_eq!(e.code, -3, "CL_COMPILER_NOT_AVAILABLE: {e}");
    assert!(e.log.contains("apt install pocl-opencl-icd") && e.log.contains("DMABRIDGE_POCL=off"), "{}", e.log);
    assert_eq!(err_kind(Kernel::new(&p, "k")), ClErrorKind::InvalidProgramExecutable);
    // `dmabridge capture --kernel`'s converter says so before anything else.
    let f = frame_format();
    let e = KernelConverter::new(&ctx, &f, YUYV, None, "").unwrap_err().to_string();
    assert!(e.contains("needs PoCL") && e.contains("apt install pocl-opencl-icd"), "{e}");
}

/// A kernel cache folder PoCL could not make (a read-only root, where the
/// default lies under `$HOME`): a build answers `CL_COMPILER_NOT_AVAILABLE`
/// and its log names the folder and the fix, `POCL_CACHE_DIR`; with
/// `POCL_CACHE_DIR` naming a folder that does not exist yet, PoCL loads and
/// the folder is made.
#[test]
fn a_cache_folder_pocl_cannot_write_is_named_in_the_build_log() {
    if !pocl_or_skip("a_cache_folder_pocl_cannot_write_is_named_in_the_build_log") {
        return;
    }
    // /dev/null is not a folder: nothing can be made under it, even by root.
    run_alone(
        "programs::child_with_an_unusable_cache",
        &[("POCL_CACHE_DIR", None), ("XDG_CACHE_HOME", Some("/dev/null/cache"))],
    );
    let dir = std::env::temp_dir().join(format!("dmabridge-pocl-cache-{}", std::process::id()));
    let folder = dir.join("new/folder");
    run_alone("programs::child_with_a_new_cache", &[("POCL_CACHE_DIR", Some(folder.to_str().unwrap()))]);
    let made = folder.is_dir();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(made, "PoCL's cache folder {} was made", folder.display());
}

#[test]
#[ignore = "run by a_cache_folder_pocl_cannot_write_is_named_in_the_build_log in a child process"]
fn child_with_an_unusable_cache() {
    assert!(pocl::get().is_none());
    let why = pocl::why_not().unwrap();
    assert!(why.contains("/dev/null/cache/pocl/kcache") && why.contains("XDG_CACHE_HOME"), "{why}");
    let (ctx, _) = cpu_context_and_queue();
    let e = Program::from_source(&ctx, "kernel void k(void) {}").unwrap().build("").unwrap_err();
    assert_eq!(e.code, -3, "CL_COMPILER_NOT_AVAILABLE: {e}");
    assert!(e.log.contains("/dev/null/cache/pocl/kcache") && e.log.contains("set POCL_CACHE_DIR"), "{}", e.log);
    assert!(!e.log.contains("apt install"), "PoCL is installed: {}", e.log);
    let f = frame_format();
    let e = KernelConverter::new(&ctx, &f, YUYV, None, "").unwrap_err().to_string();
    assert!(e.contains("needs PoCL") && e.contains("set POCL_CACHE_DIR"), "{e}");
}

#[test]
#[ignore = "run by a_cache_folder_pocl_cannot_write_is_named_in_the_build_log in a child process"]
fn child_with_a_new_cache() {
    assert!(pocl::get().is_some(), "{:?}", pocl::why_not());
    let (ctx, _) = cpu_context_and_queue();
    Program::from_source(&ctx, "kernel void k(global int *x) { x[0] = 1; }").unwrap().build("").unwrap();
}

/// `dmabridge capture --kernel`'s converter refuses a kernel that does not
/// take a frame's arguments, saying what it must look like, and a program
/// of several kernels without a name (no device needed: it fails before
/// any frame).
#[test]
fn a_frame_kernel_must_take_the_frame_arguments() {
    let Some((ctx, _)) = with_pocl("a_frame_kernel_must_take_the_frame_arguments") else { return };
    let f = frame_format();
    let why = |r: Result<KernelConverter, PipelineError>| r.expect_err("refused").to_string();
    let odd = why(KernelConverter::new(&ctx, &f, "kernel void odd(global uchar *a) { a[0] = 1; }", None, ""));
    assert!(odd.contains("\"odd\"") && odd.contains("global const uchar *src, global uchar *dst"), "{odd}");
    let two = why(KernelConverter::new(&ctx, &f, &format!("{YUYV}\nkernel void other(void) {{}}"), None, ""));
    assert!(two.contains("FILE.cl:NAME") && two.contains("other"), "{two}");
    let ok = KernelConverter::new(&ctx, &f, &format!("{YUYV}\nkernel void other(void) {{}}"), Some("yuyv_to_rgba"), "");
    assert_eq!(ok.unwrap().name(), "yuyv_to_rgba");
    let wide = why(KernelConverter::new(
        &ctx,
        &f,
        "kernel void w(global const uchar *s, global uchar *d, ulong a, uint b, uint c, uint e) {}",
        None,
        "",
    ));
    assert!(wide.contains("refuses a uint width as argument 2"), "{wide}");
}
