//! Shared helpers of the integration tests: leak accounting and the rig's
//! fixed device addresses.

use std::path::PathBuf;

pub mod cl30;

use dmabridge::sys::pci::PciAddress;

/// The rig's first edu (bound to vfio-pci by `make test-guest`).
pub const EDU0: &str = "0000:00:10.0";
/// The rig's second edu (left unbound, for the "not bound" cases).
pub const EDU1: &str = "0000:00:11.0";
/// The rig's ivshmem-plain function (bound to vfio-pci).
pub const IVSHMEM: &str = "0000:00:08.0";

/// The rig's PCIe function (`run-in-guest --aer-device`): QEMU's NVMe
/// controller, whose controller memory buffer (BAR 2, 2 MiB) serves as the
/// BAR device's memory. Unlike edu and ivshmem it is PCI Express, so
/// vfio-pci gives it an error interrupt.
pub const AER_FUNCTION: &str = "0000:01:00.0";
/// The PCIe root port above it, where the rig injects errors.
pub const AER_PORT: &str = "0000:00:1c.0";

/// Has the rig inject the PCIe error `name` (a name or number of QEMU's
/// `pcie_aer_inject_error`, e.g. `COMP_TIME`) at [`AER_PORT`] and returns
/// QEMU's answer (`OK id: aer_rp ...` when injected). Panics outside `run-in-guest
/// --aer-device` or when the rig does not answer within 60 s.
pub fn inject_aer(name: &str) -> String {
    let req = std::env::var("DMABRIDGE_RIG_AER")
        .expect("DMABRIDGE_RIG_AER is not set: run this test with qemu/run-in-guest --aer-device");
    let (tmp, done) = (format!("{req}.new"), format!("{req}.done"));
    let _ = std::fs::remove_file(&done);
    std::fs::write(&tmp, name).unwrap();
    // Renamed, so that the rig never reads half a name.
    std::fs::rename(&tmp, &req).unwrap();
    let t = std::time::Instant::now();
    loop {
        if let Ok(answer) = std::fs::read_to_string(&done) {
            println!("the rig injected {name} at {AER_PORT} ({:.1} s after the request)", t.elapsed().as_secs_f64());
            return answer.trim().to_owned();
        }
        assert!(t.elapsed().as_secs() < 60, "the rig did not inject {name} within 60 s (is it --aer-device?)");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Parses one of the constants above.
pub fn addr(s: &str) -> PciAddress {
    s.parse().unwrap()
}

/// Panics unless running inside the QEMU rig: guest tests need udmabuf,
/// heaps and VFIO, which the development host does not have.
pub fn require_guest() {
    assert!(
        std::env::var_os("DMABRIDGE_IN_GUEST").is_some(),
        "this test runs inside the QEMU guest: use `make test-guest` (qemu/run-in-guest)"
    );
}

/// Whether this kernel has DMA-BUF heaps at all. A kernel built without them
/// (`CONFIG_DMABUF_HEAPS` unset, as Debian's arm64 kernels are) has no
/// `/sys/class/dma_heap`: `test` says so on stderr and is skipped (false).
/// A kernel with heaps but without the one a test needs still fails it.
pub fn dma_heaps_or_skip(test: &str) -> bool {
    let there = std::path::Path::new("/sys/class/dma_heap").exists();
    if !there {
        eprintln!("{test}: skipped: this kernel has no DMA-BUF heaps (CONFIG_DMABUF_HEAPS is not set, as in Debian's arm64 kernels)");
    }
    there
}

/// Whether the host's programs run here: the arm64 guest sees the host's
/// x86_64 `/usr` (only busybox, bash and a few libraries are arm64 there).
/// Otherwise `test`, which runs host program `program`, says so on stderr and
/// is skipped (false).
pub fn host_program_runs_or_skip(test: &str, program: &str) -> bool {
    let runs = !matches!(std::process::Command::new(program).arg("--version").output(),
        Err(e) if e.raw_os_error() == Some(8 /* ENOEXEC */));
    if !runs {
        eprintln!("{test}: skipped: {program} is the host's, built for another architecture than this guest's");
    }
    runs
}

/// Whether PoCL (kernels from source) loads here. Where it must
/// (`DMABRIDGE_EXPECT_POCL` set: make test-host, and tests/guest-runner in
/// the x86_64 guests) a missing PoCL fails `test`, with what this machine
/// shows of its files; elsewhere (the arm64 guest has none) `test` says so
/// on stderr and is skipped (false).
pub fn pocl_or_skip(test: &str) -> bool {
    use dmabridge::runtime::program::pocl;
    if pocl::get().is_some() {
        return true;
    }
    assert!(
        std::env::var_os("DMABRIDGE_EXPECT_POCL").is_none(),
        "DMABRIDGE_EXPECT_POCL is set and PoCL is missing: {:?}\n{}",
        pocl::why_not(),
        pocl_files()
    );
    eprintln!("{test}: skipped, no PoCL ({:?}): apt install pocl-opencl-icd", pocl::why_not());
    false
}

/// What this machine shows of PoCL's files, for a test that found PoCL
/// missing where it must be: whether the library, its symlink target and
/// the dynamic linker's cache entry are there.
pub fn pocl_files() -> String {
    let lib = std::path::PathBuf::from(format!(
        "/usr/lib/{}-linux-gnu/{}",
        std::env::consts::ARCH,
        dmabridge::runtime::program::pocl::LIBRARY
    ));
    let link = std::fs::read_link(&lib).map(|t| t.display().to_string());
    let file = std::fs::metadata(&lib).map(|m| m.len());
    let cache = std::fs::read("/etc/ld.so.cache").map(|c| (c.len(), c.windows(12).any(|w| w == b"libpocl.so.2")));
    format!(
        "{}: symlink to {link:?}, file of {file:?} bytes; /etc/ld.so.cache (length, names libpocl.so.2): {cache:?}",
        lib.display()
    )
}

/// Open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Mappings of this process.
pub fn map_count() -> usize {
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().count()
}

/// Fds and mappings, taken before a test body and compared after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Entries of /proc/self/fd.
    pub fds: usize,
    /// Lines of /proc/self/maps.
    pub maps: usize,
}

impl Resources {
    /// Counts now.
    pub fn now() -> Resources {
        Resources { fds: fd_count(), maps: map_count() }
    }

    /// Asserts that nothing was leaked since `self` was taken.
    #[track_caller]
    pub fn assert_unchanged(&self) {
        let now = Resources::now();
        assert_eq!(now, *self, "fds or mappings leaked: before {self:?}, after {now:?}");
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The built `dmabridge` binary, next to the test executables.
pub fn dmabridge_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("dmabridge");
    assert!(bin.exists(), "{} is missing: run `cargo build -p dmabridge-cli` first", bin.display());
    bin
}

/// A context over the CPU device and an in-order queue on it.
pub fn cpu_context_and_queue(
) -> (std::sync::Arc<dmabridge::runtime::context::Context>, std::sync::Arc<dmabridge::runtime::queue::Queue>) {
    use dmabridge::runtime::{context::Context, platform::Platform, queue};
    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let q = queue::Queue::new(&ctx, &cpu, queue::QueueProps::default()).unwrap();
    (ctx, q)
}

/// A USM host allocation of `size` bytes in `ctx`.
pub fn host_alloc(ctx: &std::sync::Arc<dmabridge::runtime::context::Context>, size: usize) -> *mut u8 {
    dmabridge::ext::usm::host_mem_alloc(ctx, &[], size, 0).unwrap().as_ptr()
}

/// The platform's CPU device.
pub fn cpu_device() -> std::sync::Arc<dmabridge::runtime::device::Device> {
    dmabridge::runtime::platform::Platform::get().cpu().clone()
}

/// A context over the CPU device.
pub fn cpu_context() -> std::sync::Arc<dmabridge::runtime::context::Context> {
    dmabridge::runtime::context::Context::new(&[cpu_device()]).unwrap()
}

/// The CL error kind of a call that must fail.
#[track_caller]
pub fn err_kind<T: std::fmt::Debug>(r: Result<T, dmabridge::error::ClError>) -> dmabridge::error::ClErrorKind {
    r.expect_err("the call must fail").kind
}

/// Runs the ignored test `path` (e.g. `"buffer::child_x"`) of the running
/// test executable alone in a child process and asserts that it passed.
/// `env` sets (`Some`) or removes (`None`) variables in the child.
///
/// Guest tests that build the platform run their bodies this way: the
/// platform keeps its VFIO groups for the life of the process, and the later
/// tests that open edu or ivshmem in their own containers must find them
/// free.
#[track_caller]
pub fn run_in_child(path: &str, env: &[(&str, Option<&str>)]) {
    require_guest();
    run_alone(path, env);
}

/// [`run_in_child`] on any machine: for tests that count what the whole
/// process holds (fds, mappings, threads), which the tests that `cargo test`
/// runs beside them in parallel would change.
#[track_caller]
pub fn run_alone(path: &str, env: &[(&str, Option<&str>)]) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--exact", path, "--ignored", "--test-threads=1", "--nocapture"]);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(out.status.success() && text.contains("1 passed"), "child test {path} failed:\n{text}");
}

/// A host-unified device outside the platform (index `index`) that claims it
/// can allocate anything (`CL_DEVICE_MAX_MEM_ALLOC_SIZE` = 2^64 - 1), so
/// that buffers of hostile sizes pass creation and reach the allocation. It
/// has no USM and no SVM.
pub fn boundless_device(index: u16, name: &str) -> std::sync::Arc<dmabridge::runtime::device::Device> {
    use dmabridge::runtime::device::{Device, DeviceType, UsmCaps};
    let cpu = dmabridge::runtime::platform::Platform::get().cpu().clone();
    let no_usm = UsmCaps { host: 0, device: 0, single_device_shared: 0, cross_device_shared: 0, shared_system: 0 };
    std::sync::Arc::new(Device {
        index,
        name: name.into(),
        device_type: DeviceType::Cpu,
        max_mem_alloc_size: u64::MAX,
        max_alignment: cpu.max_alignment,
        host_unified_memory: true,
        usm: no_usm,
        svm: 0,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    })
}
