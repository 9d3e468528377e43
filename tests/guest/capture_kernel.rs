//! A user's OpenCL C kernel on vivid's frames (`KernelConverter`,
//! `dmabridge capture --kernel`): `examples/cl/yuyv_to_rgba.cl`, compiled
//! by PoCL (the guest sees the host's `pocl-opencl-icd`), gives the bytes
//! of the built-in `yuyv_to_rgba` on the same frames, read where the driver
//! wrote them (0 bytes copied). As `tests/icd/pocl_test.c`'s
//! `yuyv_kernel_matches_builtin_on_vivid` does through the ICD, the frames
//! are vivid's "Noise" pattern, checked to be noise: on the colour bars'
//! eight colours a kernel that rounds differently could still agree.
//! The arm64 guest has no PoCL: there they skip, saying so. PoCL's compile
//! takes tens of seconds under TCG; its kernel cache, which
//! must be writable (the guest's / is not: `POCL_CACHE_DIR`, as
//! tests/icd/run sets), is shared by the tests of one guest run.

use std::path::PathBuf;
use std::time::Duration;

use dmabridge::pipeline::capture::{Converter, FrameMemory, KernelConverter, Stream, StreamConfig};
use dmabridge_tests::{cpu_context, pocl_files, pocl_or_skip, require_guest};

use super::capture::dmabridge_capture as capture;
use super::vivid;

const TIMEOUT: Duration = Duration::from_secs(20);

/// A writable kernel cache for PoCL, for this process (set before PoCL is
/// loaded, which `pocl_or_skip` does: set after it, the process kept
/// guest-runner's folder and the next test compiled again, ~25 s under TCG;
/// guest-runner runs each test in a process of its own) and its children.
/// One folder for the guest's tests: PoCL keys its cache by
/// source, options and device, so a test that builds the example kernel
/// after another did loads the binary instead of compiling it again (the
/// build is most of each test's time under TCG); run alone, a test builds.
fn pocl_cache() {
    let dir = std::env::temp_dir().join("dmabridge-tests-pocl-cache");
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_var("POCL_CACHE_DIR", &dir);
}

/// Panics unless `text` (a capture run's output) shows that PoCL loaded.
fn assert_pocl_loaded(text: &str) {
    assert!(!text.contains("PoCL is not available"), "{text}\n{}", pocl_files());
}

fn example_kernel() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/cl/yuyv_to_rgba.cl")
}

/// How many of the 256 values of R an RGBA image holds.
fn reds(rgba: &[u8]) -> usize {
    let mut seen = [false; 256];
    rgba.chunks_exact(4).for_each(|p| seen[p[0] as usize] = true);
    seen.iter().filter(|&&s| s).count()
}

/// The kernel and the built-in convert the same dequeued noise frames to
/// the same bytes, in buffer objects and in USM; nothing is copied.
#[test]
fn the_example_kernel_gives_the_builtins_bytes_on_vivid_noise() {
    require_guest();
    pocl_cache();
    if !pocl_or_skip("the_example_kernel_gives_the_builtins_bytes_on_vivid_noise") {
        return;
    }
    let ctx = cpu_context();
    let source = std::fs::read_to_string(example_kernel()).unwrap();
    let mut ours: Option<KernelConverter> = None;
    for memory in [FrameMemory::Buffer, FrameMemory::UsmHost] {
        let cfg = StreamConfig { fps: Some(30), memory, ..StreamConfig::default() };
        let mut stream = Stream::capture(&ctx, vivid::webcam_with("Noise", "None"), &cfg).unwrap();
        let f = stream.format();
        let kernel = match ours.as_mut() {
            Some(k) => k,
            None => ours.insert(KernelConverter::new(&ctx, &f, &source, None, "").unwrap()),
        };
        assert_eq!(kernel.name(), "yuyv_to_rgba");
        let mut builtin = Converter::new(&ctx, &f).unwrap();
        stream.queue_all().unwrap();
        stream.start().unwrap();
        for n in 0..2 {
            let d = stream.dequeue(TIMEOUT).unwrap();
            let want = builtin.convert(&stream, d.index).unwrap().to_vec();
            let got = kernel.convert(&stream, d.index).unwrap();
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            assert!(first.is_none(), "{memory:?} frame {n}: first different byte {first:?} (RGBA, row-major)");
            assert!(reds(&want) > 128, "{memory:?} frame {n} is noise: {} values of R", reds(&want));
            stream.queue(d.index).unwrap();
        }
        stream.stop().unwrap();
        assert_eq!(stream.bytes_copied(), 0, "{memory:?}: the kernel read the frames in place");
    }
}

/// `dmabridge capture --kernel examples/cl/yuyv_to_rgba.cl` as a user runs
/// it: the PNG it writes is the built-in run's (a static pattern, no text
/// drawn: every frame the same), 0 bytes copied. (A kernel of another
/// shape is refused with the convention: `tests/host/programs.rs`.)
#[test]
fn the_capture_command_runs_a_kernel_from_a_file() {
    require_guest();
    pocl_cache();
    if !pocl_or_skip("the_capture_command_runs_a_kernel_from_a_file") {
        return;
    }
    vivid::webcam_with("100% Color Squares", "None");
    let base = std::env::temp_dir().join(format!("dmabridge-kernel-test-{}", std::process::id()));
    let dirs = [base.join("kernel"), base.join("builtin")];
    let file = example_kernel();
    let file = file.to_str().unwrap();
    let common = ["--frames", "3", "--fps", "30", "--png-count", "1", "--quiet", "--png-dir"];
    let (ok, text) = capture(&[&common[..], &[dirs[0].to_str().unwrap(), "--kernel", file]].concat());
    assert_pocl_loaded(&text);
    assert!(ok, "--kernel:\n{text}");
    assert!(text.contains("kernel: yuyv_to_rgba of") && text.contains("captured 3 frames"), "{text}");
    assert!(
        text.contains("bytes copied by dmabridge: 0 (the driver wrote the frames into memory yuyv_to_rgba"),
        "{text}"
    );
    let (ok, text) = capture(&[&common[..], &[dirs[1].to_str().unwrap()]].concat());
    assert!(ok, "built-in:\n{text}");
    let png = |d: &PathBuf| std::fs::read(d.join("frame-000.png")).unwrap();
    assert!(png(&dirs[0]) == png(&dirs[1]), "the kernel's PNG is the built-in's");
    let _ = std::fs::remove_dir_all(&base);
}

/// A kernel that does not build: the command fails with a line naming the
/// file and PoCL's build log; --kernel-options reach the compiler, and
/// options it does not know fail the command. (A test of its own: each PoCL build takes
/// tens of seconds under TCG, and guest-runner gives a test 120 s.)
#[test]
fn the_capture_command_prints_the_build_log_of_a_bad_kernel() {
    require_guest();
    pocl_cache();
    if !pocl_or_skip("the_capture_command_prints_the_build_log_of_a_bad_kernel") {
        return;
    }
    vivid::webcam();
    let base = std::env::temp_dir().join(format!("dmabridge-bad-kernel-test-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();

    // OFFSET comes from --kernel-options: the log names only the other name.
    let bad = base.join("bad.cl");
    std::fs::write(&bad, "kernel void broken(global uchar *a) { a[0] = undeclared_name + OFFSET; }").unwrap();
    let bad = bad.to_str().unwrap();
    let (ok, text) =
        capture(&["--frames", "1", "--png-count", "0", "--kernel", bad, "--kernel-options", "-D OFFSET=1"]);
    assert_pocl_loaded(&text);
    assert!(!ok && text.contains(bad) && text.contains("build log"), "{text}");
    assert!(text.contains("undeclared_name"), "the build log is printed:\n{text}");
    assert!(!text.contains("OFFSET'"), "--kernel-options reached the compiler:\n{text}");
    // An option the compiler does not know fails before the first frame,
    // naming the options (PoCL checks them before it compiles anything).
    let file = example_kernel();
    let args = ["--frames", "1", "--png-count", "0", "--kernel", file.to_str().unwrap(), "--kernel-options=-no-such"];
    let (ok, text) = capture(&args);
    assert!(!ok && text.contains("with options \"-no-such\"") && text.contains("-43"), "{text}");
    let _ = std::fs::remove_dir_all(&base);
}
