//! Peer side of the benchmark harness: builds and runs the repository's OpenCL benchmark program
//! `bench/icd/icd_bench.c` (OpenCL SVM and USM through the ICD loader, on PoCL's CPU device once
//! `bench/peer-deps` installed it, or on any vendor's, dmabridge's own ICD included, and libc's
//! equivalents) and parses its figures, so that a bench binary can print the peer's number beside
//! ours from the same run.
//!
//! Self-contained (std only). Include it from a bench binary with `#[path = "common/peer.rs"] mod peer;`.
//!
//! Needs a C compiler, the OpenCL headers and ICD loader, and PoCL registered as an ICD vendor
//! (`/etc/OpenCL/vendors/pocl.icd`); `bench/peer-deps` installs them on Debian.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the peer may run before it is killed (it takes a second or two on a 2-core machine).
const PEER_TIMEOUT: Duration = Duration::from_secs(300);

const FIX_DEPS: &str = "run `bench/peer-deps` from the repository root (installs pocl-opencl-icd, \
                        ocl-icd-opencl-dev, opencl-c-headers and a C compiler)";

/// The figures printed by the peer, in the peer's units (ns or GB/s, GB = 1e9 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct PeerFigures {
    /// What ran: the peer's `# platform: ...`, `# device: ...` lines, without the `# `.
    pub about: Vec<String>,
    /// `clSVMAlloc` + `clSVMFree` of 4 KiB, ns per pair.
    pub svm_alloc_free_4k_ns: f64,
    /// `aligned_alloc(128, 4096)` + one store + `free`, ns per pair.
    pub libc_alloc_free_4k_ns: f64,
    /// Blocking `clEnqueueSVMMemcpy` of 64 bytes, enqueue -> complete, ns per call.
    pub svm_memcpy64_roundtrip_ns: f64,
    /// Blocking `clEnqueueSVMMemcpy` of 64 MiB, GB/s.
    pub svm_memcpy_64mib_gbps: f64,
    /// libc `memcpy` of 64 MiB, GB/s.
    pub libc_memcpy_64mib_gbps: f64,
    /// `clEnqueueSVMMemFill` (4-byte pattern) of 64 MiB, waited for on its event, GB/s.
    pub svm_fill_64mib_gbps: f64,
    /// libc `memset` of 64 MiB, GB/s.
    pub libc_memset_64mib_gbps: f64,
    /// `clHostMemAllocINTEL` + `clMemFreeINTEL` of 4 KiB, ns per pair (platforms with USM only).
    pub usm_host_alloc_free_4k_ns: Option<f64>,
    /// `clDeviceMemAllocINTEL` + `clMemFreeINTEL` of 4 KiB on one thread, ns per pair (device USM only).
    pub usm_device_alloc_free_4k_ns: Option<f64>,
    /// The same on two threads at once, wall time per pair of both (device USM only).
    pub usm_device_alloc_free_4k_2t_ns: Option<f64>,
    /// libc's malloc(64) + free on one thread, and per call on two at once: the reference of the
    /// two-thread rows (threads that share nothing; absent from an older program's output).
    pub libc_malloc_free_64_ns: Option<f64>,
    /// See `libc_malloc_free_64_ns`.
    pub libc_malloc_free_64_2t_ns: Option<f64>,
    /// `spread NAME BEST WORST` lines: the best and worst timed run of a figure.
    pub spreads: Vec<(String, f64, f64)>,
    /// `both_cores NAME ROUNDS BOTH MIN MEDIAN MAX` lines: of the two-thread rows' rounds, how many had a
    /// core for every thread, and the two-thread / one-thread throughput of those rounds.
    pub both_cores: Vec<BothCores>,
}

/// A two-thread row over the rounds in which every thread had a core of its own (see `icd_bench.c`).
#[derive(Debug, Clone, PartialEq)]
pub struct BothCores {
    /// The row, e.g. `cl_usm_device_alloc_free_4k`.
    pub name: String,
    /// Rounds run.
    pub rounds: usize,
    /// Rounds in which every thread had a core.
    pub both: usize,
    /// Two threads' throughput over one thread's in those rounds: least, median, most (0 if none).
    pub min: f64,
    /// See `min`.
    pub median: f64,
    /// See `min`.
    pub max: f64,
}

impl PeerFigures {
    /// The best and worst timed run of figure `name`, if the peer printed them.
    pub fn spread(&self, name: &str) -> Option<(f64, f64)> {
        self.spreads.iter().find(|(n, _, _)| n == name).map(|&(_, best, worst)| (best, worst))
    }

    /// The `both_cores` line of row `name`, if the peer printed one.
    pub fn both_cores(&self, name: &str) -> Option<&BothCores> {
        self.both_cores.iter().find(|b| b.name == name)
    }

    /// Every figure as (name printed by the peer, value, unit), in the peer's output order.
    pub fn rows(&self) -> [(&'static str, f64, &'static str); 7] {
        [
            (NAMES[0], self.svm_alloc_free_4k_ns, "ns"),
            (NAMES[1], self.libc_alloc_free_4k_ns, "ns"),
            (NAMES[2], self.svm_memcpy64_roundtrip_ns, "ns"),
            (NAMES[3], self.svm_memcpy_64mib_gbps, "GB/s"),
            (NAMES[4], self.libc_memcpy_64mib_gbps, "GB/s"),
            (NAMES[5], self.svm_fill_64mib_gbps, "GB/s"),
            (NAMES[6], self.libc_memset_64mib_gbps, "GB/s"),
        ]
    }
}

/// The figures the peer prints, in its output order.
const NAMES: [&str; 7] = [
    "cl_svm_alloc_free_4k_ns",
    "libc_alloc_free_4k_ns",
    "cl_svm_memcpy_64b_ns",
    "cl_svm_memcpy_64mib_gbps",
    "libc_memcpy_64mib_gbps",
    "cl_svm_fill_64mib_gbps",
    "libc_memset_64mib_gbps",
];

/// The USM allocation figure, printed only by platforms that have USM.
pub const USM_ALLOC_NAME: &str = "cl_usm_host_alloc_free_4k_ns";
/// The device USM allocation figures, one thread and two, printed only by devices with device USM.
const USM_DEVICE_NAMES: [&str; 2] = ["cl_usm_device_alloc_free_4k_ns", "cl_usm_device_alloc_free_4k_2t_ns"];
/// The reference figures of the two-thread rows, one thread and two.
const REFERENCE_NAMES: [&str; 2] = ["libc_malloc_free_64_ns", "libc_malloc_free_64_2t_ns"];

/// Builds (cached), runs the program on PoCL's platform and parses its output.
pub fn run_peer() -> Result<PeerFigures, String> {
    run(&["--platform", "Portable Computing Language"], None)
}

/// Builds (cached), runs the program on the first platform that `vendors` (an `.icd` file or a
/// directory of them, as `OCL_ICD_VENDORS` takes) gives the loader, and parses its output.
pub fn run_icd(vendors: &Path) -> Result<PeerFigures, String> {
    run(&[], Some(vendors))
}

fn run(args: &[&str], vendors: Option<&Path>) -> Result<PeerFigures, String> {
    let src = source()?;
    let exe = build(&src)?;
    let (stdout, stderr) = execute(&exe, args, vendors)?;
    let figures = parse(&stdout).map_err(|e| {
        format!(
            "peer {}: could not parse its output: {e}\n--- stdout ---\n{stdout}{}",
            exe.display(),
            stderr_block(&stderr)
        )
    })?;
    if !stderr.trim().is_empty() {
        // Warnings from PoCL (CPU detection, cache) are not part of the figures; show them apart.
        for line in stderr.lines() {
            eprintln!("peer stderr: {line}");
        }
    }
    Ok(figures)
}

/// The peer program, in this repository.
fn source() -> Result<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/icd/icd_bench.c");
    if src.is_file() {
        Ok(src)
    } else {
        Err(format!("the peer program {} is missing from the work tree", src.display()))
    }
}

/// Directory for the compiled peer: the cargo target tmp dir of the bench, else the system temp dir.
fn cache_dir() -> PathBuf {
    let base = match option_env!("CARGO_TARGET_TMPDIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => std::env::temp_dir(),
    };
    base.join("dmabridge-peer")
}

/// FNV-1a, 64 bit: stable across Rust releases, unlike `DefaultHasher`.
fn fnv1a64(chunks: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for chunk in chunks {
        for &b in *chunk {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separator, so that ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The C compiler: `$CC` if set (split on whitespace, so `ccache gcc` works), else `cc`.
fn compiler() -> String {
    match std::env::var("CC") {
        Ok(cc) if !cc.trim().is_empty() => cc.split_whitespace().collect::<Vec<_>>().join(" "),
        _ => "cc".to_string(),
    }
}

const CFLAGS: &[&str] = &["-O2"];
const LIBS: &[&str] = &["-lOpenCL", "-pthread"];

/// Compiles the peer unless a binary built from the same source text, compiler and flags is cached.
fn build(src: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read(src).map_err(|e| format!("cannot read peer source {}: {e}", src.display()))?;
    let cc = compiler();
    let key = fnv1a64(&[&text, cc.as_bytes(), CFLAGS.join(" ").as_bytes(), LIBS.join(" ").as_bytes()]);
    let dir = cache_dir();
    let exe = dir.join(format!("icd_bench-{key:016x}"));
    if exe.is_file() {
        return Ok(exe);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Build under a private name, then rename: concurrent bench binaries never see a half-written file.
    let tmp = dir.join(format!(".icd_bench-{key:016x}.{}.tmp", std::process::id()));
    let mut words = cc.split_whitespace();
    let mut cmd = Command::new(words.next().unwrap_or("cc"));
    cmd.args(words).args(CFLAGS).arg(src).arg("-o").arg(&tmp).args(LIBS);
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("no C compiler: `{cc}` not found on PATH (set CC or {FIX_DEPS})")
        } else {
            format!("cannot run C compiler `{cc}`: {e}")
        }
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let err = String::from_utf8_lossy(&out.stderr);
        let why = if err.contains("CL/cl.h") {
            format!("OpenCL headers missing (<CL/cl.h>, package opencl-c-headers); {FIX_DEPS}")
        } else if err.contains("-lOpenCL") || err.contains("lOpenCL") {
            format!("OpenCL ICD loader library missing (libOpenCL.so, package ocl-icd-opencl-dev); {FIX_DEPS}")
        } else if err.contains("stdio.h") || err.contains("crt1.o") || err.contains("-lc") {
            format!("C library development files missing (package libc6-dev); {FIX_DEPS}")
        } else {
            format!("compiler error; if it is about OpenCL, {FIX_DEPS}")
        };
        return Err(format!(
            "building the peer failed ({}): {why}\ncommand: {cmd:?}\n--- compiler stderr ---\n{}",
            out.status,
            head_lines(&err, 30)
        ));
    }
    std::fs::rename(&tmp, &exe).map_err(|e| format!("cannot move {} to {}: {e}", tmp.display(), exe.display()))?;
    Ok(exe)
}

/// The first `n` lines of `text`, with a note of how many were left out.
fn head_lines(text: &str, n: usize) -> String {
    let total = text.lines().count();
    let mut s: String = text.lines().take(n).flat_map(|l| [l, "\n"]).collect();
    if total > n {
        let _ = writeln!(s, "... ({} more lines)", total - n);
    }
    s
}

fn stderr_block(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("--- stderr ---\n{stderr}")
    }
}

/// The ICD vendor directory the loader reads (`$OCL_ICD_VENDORS` or `/etc/OpenCL/vendors`) and its `*.icd` files.
fn icd_vendor_files() -> (PathBuf, Vec<PathBuf>) {
    let dir = std::env::var_os("OCL_ICD_VENDORS").map(PathBuf::from).unwrap_or_else(|| "/etc/OpenCL/vendors".into());
    if dir.is_file() {
        return (dir.clone(), vec![dir]);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "icd")).collect()
        })
        .unwrap_or_default();
    v.sort();
    (dir, v)
}

/// Runs the peer with a time limit; stdout and stderr are kept apart. `OCL_ICD_VENDORS` is
/// `vendors` if given, else left as it is.
fn execute(exe: &Path, args: &[&str], vendors: Option<&Path>) -> Result<(String, String), String> {
    let mut cmd = Command::new(exe);
    // From the checkout's root, as bench/icd/run runs it: the peer reads
    // examples/cl/yuyv_to_rgba.cl from there (cargo bench runs in driver/dmabridge).
    cmd.args(args).current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    if let Some(v) = vendors {
        cmd.env("OCL_ICD_VENDORS", v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start peer {}: {e}", exe.display()))?;
    let mut out_pipe = child.stdout.take().expect("piped stdout");
    let mut err_pipe = child.stderr.take().expect("piped stderr");
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out_pipe.read_to_end(&mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err_pipe.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > PEER_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for peer {}: {e}", exe.display())),
        }
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let Some(status) = status else {
        return Err(format!(
            "peer {} did not finish within {} s and was killed\n--- stdout ---\n{stdout}{}",
            exe.display(),
            PEER_TIMEOUT.as_secs(),
            stderr_block(&stderr)
        ));
    };
    if status.success() {
        return Ok((stdout, stderr));
    }

    let mut why = String::new();
    if stderr.contains("error while loading shared libraries") {
        why =
            format!("the OpenCL ICD loader (libOpenCL.so.1, package ocl-icd-libopencl1) cannot be loaded; {FIX_DEPS}");
    } else if stderr.contains("clGetPlatformIDs") {
        let (dir, vendors) = icd_vendor_files();
        let _ = write!(
            why,
            "no OpenCL platform: PoCL is not installed or not registered as an ICD vendor (found {}); {FIX_DEPS}",
            if vendors.is_empty() {
                format!("no *.icd file in {}", dir.display())
            } else {
                vendors.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            }
        );
        if let Some(v) = std::env::var_os("OCL_ICD_VENDORS") {
            let _ =
                write!(why, "; note OCL_ICD_VENDORS={} is set and overrides /etc/OpenCL/vendors", v.to_string_lossy());
        }
    } else if stderr.contains("clGetDeviceIDs") {
        why = format!("an OpenCL platform was found but it has no device; is PoCL's CPU device usable? {FIX_DEPS}");
    } else if stderr.contains("clSVMAlloc") || stderr.contains("clEnqueueSVM") {
        why = "the OpenCL device failed an SVM operation (does it support coarse-grained SVM?)".to_string();
    }
    Err(format!(
        "peer {} failed ({status}){}{}\n--- stdout ---\n{stdout}{}",
        exe.display(),
        if why.is_empty() { "" } else { ": " },
        why,
        stderr_block(&stderr)
    ))
}

/// Parses `name value` lines; every figure must be present exactly once and finite. `# ` lines say
/// what ran; other lines are ignored.
fn parse(stdout: &str) -> Result<PeerFigures, String> {
    let mut vals: [Option<f64>; 7] = [None; 7];
    let mut usm_alloc = None;
    let mut usm_device = [None; 2];
    let mut reference = [None; 2];
    let mut spreads = Vec::new();
    let mut both_cores = Vec::new();
    let mut about = Vec::new();
    for (lineno, line) in stdout.lines().enumerate() {
        if let Some(note) = line.strip_prefix("# ") {
            about.push(note.to_string());
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(name), Some(value)) = (it.next(), it.next()) else { continue };
        if name == USM_ALLOC_NAME {
            usm_alloc = value.parse::<f64>().ok().filter(|v| v.is_finite());
            continue;
        }
        if let Some(i) = USM_DEVICE_NAMES.iter().position(|n| *n == name) {
            usm_device[i] = value.parse::<f64>().ok().filter(|v| v.is_finite());
            continue;
        }
        if let Some(i) = REFERENCE_NAMES.iter().position(|n| *n == name) {
            reference[i] = value.parse::<f64>().ok().filter(|v| v.is_finite());
            continue;
        }
        if name == "both_cores" {
            let nums: Vec<f64> = it.filter_map(|v| v.parse().ok()).collect();
            if let [rounds, both, min, median, max] = nums[..] {
                let (rounds, both) = (rounds as usize, both as usize);
                both_cores.push(BothCores { name: value.to_string(), rounds, both, min, median, max });
            }
            continue;
        }
        if name == "spread" {
            let nums: Vec<f64> = it.filter_map(|v| v.parse().ok()).collect();
            if let [best, worst] = nums[..] {
                spreads.push((value.to_string(), best, worst));
            }
            continue;
        }
        let Some(i) = NAMES.iter().position(|n| *n == name) else { continue };
        if it.next().is_some() {
            return Err(format!("line {}: `{line}`: expected `name value`", lineno + 1));
        }
        let v: f64 = value.parse().map_err(|e| format!("line {}: `{line}`: bad number: {e}", lineno + 1))?;
        if !v.is_finite() {
            return Err(format!("line {}: `{line}`: value is not finite", lineno + 1));
        }
        if vals[i].replace(v).is_some() {
            return Err(format!("line {}: `{name}` appears twice", lineno + 1));
        }
    }
    let missing: Vec<&str> = NAMES.iter().zip(vals.iter()).filter(|(_, v)| v.is_none()).map(|(n, _)| *n).collect();
    if !missing.is_empty() {
        return Err(format!("missing figures: {}", missing.join(", ")));
    }
    let v = |i: usize| vals[i].unwrap_or(f64::NAN);
    Ok(PeerFigures {
        about,
        svm_alloc_free_4k_ns: v(0),
        libc_alloc_free_4k_ns: v(1),
        svm_memcpy64_roundtrip_ns: v(2),
        svm_memcpy_64mib_gbps: v(3),
        libc_memcpy_64mib_gbps: v(4),
        svm_fill_64mib_gbps: v(5),
        libc_memset_64mib_gbps: v(6),
        usm_host_alloc_free_4k_ns: usm_alloc,
        usm_device_alloc_free_4k_ns: usm_device[0],
        usm_device_alloc_free_4k_2t_ns: usm_device[1],
        libc_malloc_free_64_ns: reference[0],
        libc_malloc_free_64_2t_ns: reference[1],
        spreads,
        both_cores,
    })
}

const W_WHAT: usize = 36;
const W_NUM: usize = 14;
const W_RATIO: usize = 9;
const W_VERDICT: usize = 7;

/// A number with a precision fitted to its size, followed by its unit.
pub fn fmt_value(v: f64, unit: &str) -> String {
    let a = v.abs();
    let s = if !v.is_finite() {
        format!("{v}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.01 || a == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.2e}")
    };
    if unit.is_empty() {
        s
    } else {
        format!("{s} {unit}")
    }
}

fn table_line(what: &str, ours: &str, peer: &str, ratio: &str, verdict: &str, target: &str) -> String {
    format!("{what:<W_WHAT$} {ours:>W_NUM$} {peer:>W_NUM$} {ratio:>W_RATIO$} {verdict:<W_VERDICT$} {target}")
}

/// Prints the column titles matching [`print_row`].
pub fn print_header() {
    println!("{}", table_line("what", "ours", "peer", "ours/peer", "", "target"));
    println!("{}", "-".repeat(W_WHAT + 2 * W_NUM + W_RATIO + W_VERDICT + 4 + 24));
}

/// Prints one row: what, ours, peer (both in `unit`), the ratio ours/peer, whether ours is better or
/// worse than the peer given `lower_is_better` ("even" within 2 %), and the target text.
pub fn print_row(what: &str, ours: f64, peer: f64, unit: &str, lower_is_better: bool, target: &str) {
    let ratio = ours / peer;
    let (ratio_s, verdict) = if ratio.is_finite() && peer != 0.0 {
        // Within 2 % counts as a tie: run-to-run noise on a shared machine is larger than that.
        let verdict = if (ratio - 1.0).abs() <= 0.02 {
            "even"
        } else if (ratio < 1.0) == lower_is_better {
            "better"
        } else {
            "worse"
        };
        (format!("{ratio:.2}"), verdict)
    } else {
        ("n/a".to_string(), "")
    };
    println!("{}", table_line(what, &fmt_value(ours, unit), &fmt_value(peer, unit), &ratio_s, verdict, target));
}
