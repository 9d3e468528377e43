//! The OpenCL 3.0 rules for `clGetDeviceInfo` (the API specification's
//! device query table: minimum values per profile, required extensions,
//! version strings), checked for one device, whatever its kind: the host
//! tests run it on the CPU device and on accelerator descriptors, the guest
//! tests on every device of the platform (CPU, edu, BAR device).

use dmabridge::runtime::device::Device;
use dmabridge::runtime::info::{self, atomic_caps as ac, device_param as dp, fp_config, InfoValue, NameVersion};

/// The extensions a device of OpenCL C 1.1 or later must list (OpenCL 3.0,
/// `CL_DEVICE_EXTENSIONS`).
pub const OPENCL_C_1_1_EXTENSIONS: [&str; 5] = [
    "cl_khr_byte_addressable_store",
    "cl_khr_global_int32_base_atomics",
    "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics",
    "cl_khr_local_int32_extended_atomics",
];

fn q(d: &Device, p: u32) -> InfoValue {
    info::device_info(d, p).unwrap_or_else(|e| panic!("{}: query {p:#x}: {e}", d.name))
}

fn text(d: &Device, p: u32) -> String {
    match q(d, p) {
        InfoValue::Str(s) => s,
        v => panic!("{p:#x}: {v:?}"),
    }
}

fn num(d: &Device, p: u32) -> u64 {
    match q(d, p) {
        InfoValue::U32(v) => v.into(),
        InfoValue::U64(v) | InfoValue::Bits(v) => v,
        InfoValue::Usize(v) => v as u64,
        InfoValue::Bool(b) => b.into(),
        v => panic!("{p:#x}: {v:?}"),
    }
}

fn list(d: &Device, p: u32) -> Vec<NameVersion> {
    match q(d, p) {
        InfoValue::NameVersions(v) => v,
        v => panic!("{p:#x}: {v:?}"),
    }
}

/// `OpenCL C <major>.<minor>` (or `OpenCL <major>.<minor>`) at the start of
/// a version string, as the CTS parses it.
fn version(s: &str, prefix: &str) -> Option<(u32, u32)> {
    let rest = s.strip_prefix(prefix)?;
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Every OpenCL 3.0 rule `d`'s answers break, as messages (empty: none).
pub fn violations(d: &Device) -> Vec<String> {
    let mut bad = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            bad.push(format!("{}: {what}", d.name));
        }
    };
    let profile = text(d, dp::PROFILE);
    let embedded = profile == "EMBEDDED_PROFILE";
    check(embedded || profile == "FULL_PROFILE", format!("CL_DEVICE_PROFILE {profile:?}"));
    let compiler = num(d, dp::COMPILER_AVAILABLE) != 0;
    check(compiler || embedded, "no compiler is allowed in the embedded profile only".into());
    check(num(d, dp::LINKER_AVAILABLE) == 0 || compiler, "a linker without a compiler".into());
    let v = text(d, dp::VERSION);
    check(version(&v, "OpenCL ") == Some((3, 0)), format!("CL_DEVICE_VERSION {v:?}"));
    check(num(d, dp::NUMERIC_VERSION) == 3 << 22, "CL_DEVICE_NUMERIC_VERSION is not 3.0.0".into());

    // Work-items: at least 3 dimensions, one size_t of each in the sizes.
    let dims = num(d, dp::MAX_WORK_ITEM_DIMENSIONS);
    check(dims >= 3, format!("CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS {dims} < 3"));
    let wg = num(d, dp::MAX_WORK_GROUP_SIZE);
    check(wg >= 1, "CL_DEVICE_MAX_WORK_GROUP_SIZE 0".into());
    match q(d, dp::MAX_WORK_ITEM_SIZES) {
        InfoValue::Sizes(s) => {
            check(s.len() as u64 == dims, format!("CL_DEVICE_MAX_WORK_ITEM_SIZES has {} entries", s.len()));
            check(s.iter().all(|&n| n >= 1 && n as u64 <= wg), format!("CL_DEVICE_MAX_WORK_ITEM_SIZES {s:?}"));
        }
        v => check(false, format!("CL_DEVICE_MAX_WORK_ITEM_SIZES {v:?}")),
    }

    // Extensions: the string and the list agree, and OpenCL C asks for its own.
    let ext = text(d, dp::EXTENSIONS);
    let names: Vec<&str> = ext.split(' ').filter(|e| !e.is_empty()).collect();
    let with: Vec<String> = list(d, dp::EXTENSIONS_WITH_VERSION).into_iter().map(|e| e.name).collect();
    check(names == with, format!("CL_DEVICE_EXTENSIONS {names:?} != _WITH_VERSION {with:?}"));
    let c = text(d, dp::OPENCL_C_VERSION);
    let cv = version(&c, "OpenCL C ");
    check(cv.is_some(), format!("CL_DEVICE_OPENCL_C_VERSION {c:?} is not `OpenCL C <major>.<minor> ...`"));
    let cv = cv.unwrap_or((0, 0));
    if cv >= (1, 1) {
        for e in OPENCL_C_1_1_EXTENSIONS {
            check(names.contains(&e), format!("reports OpenCL C {}.{} without {e}", cv.0, cv.1));
        }
    }
    let fp64 = names.contains(&"cl_khr_fp64");
    let all = list(d, dp::OPENCL_C_ALL_VERSIONS);
    check(all.iter().all(|e| e.name == "OpenCL C"), format!("CL_DEVICE_OPENCL_C_ALL_VERSIONS {all:?}"));
    let listed = all.iter().any(|e| (e.version >> 22, (e.version >> 12) & 0x3ff) == cv);
    if compiler {
        check(cv >= (1, 2), "an OpenCL 3.0 compiler supports at least OpenCL C 1.2".into());
        check(listed, "CL_DEVICE_OPENCL_C_VERSION is not in CL_DEVICE_OPENCL_C_ALL_VERSIONS".into());
    } else {
        // Without a compiler the list may be empty; if not, it names the version.
        check(all.is_empty() || listed, format!("CL_DEVICE_OPENCL_C_ALL_VERSIONS {all:?} lacks {c:?}"));
        check(list(d, dp::OPENCL_C_FEATURES).is_empty(), "OpenCL C features without a compiler".into());
    }

    // Minimum values (full profile / embedded profile).
    let min = |full: u64, emb: u64| if embedded { emb } else { full };
    for (p, name, least) in [
        (dp::MAX_PARAMETER_SIZE, "CL_DEVICE_MAX_PARAMETER_SIZE", min(1024, 256)),
        (dp::MAX_CONSTANT_BUFFER_SIZE, "CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE", min(64 << 10, 1 << 10)),
        (dp::MAX_CONSTANT_ARGS, "CL_DEVICE_MAX_CONSTANT_ARGS", min(8, 4)),
        (dp::LOCAL_MEM_SIZE, "CL_DEVICE_LOCAL_MEM_SIZE", min(32 << 10, 1 << 10)),
        // The largest built-in type in bits: long16, int16 in the embedded profile.
        (dp::MEM_BASE_ADDR_ALIGN, "CL_DEVICE_MEM_BASE_ADDR_ALIGN", min(1024, 512)),
        (dp::MAX_COMPUTE_UNITS, "CL_DEVICE_MAX_COMPUTE_UNITS", 1),
    ] {
        let n = num(d, p);
        check(n >= least, format!("{name} {n} < {least}"));
    }
    // max(min(1 GiB, a quarter of the global memory), 32 MiB; 1 MiB embedded).
    let global = num(d, dp::GLOBAL_MEM_SIZE);
    let alloc = num(d, dp::MAX_MEM_ALLOC_SIZE);
    let least = (global / 4).min(1 << 30).max(min(32 << 20, 1 << 20));
    check(alloc >= least, format!("CL_DEVICE_MAX_MEM_ALLOC_SIZE {alloc} < {least} (global memory {global})"));
    check(alloc <= global, format!("CL_DEVICE_MAX_MEM_ALLOC_SIZE {alloc} > global memory {global}"));
    let single = num(d, dp::SINGLE_FP_CONFIG);
    let rounding = fp_config::ROUND_TO_NEAREST | 1 << 3; // CL_FP_ROUND_TO_ZERO
    if embedded {
        check(single & rounding != 0, format!("CL_DEVICE_SINGLE_FP_CONFIG {single:#x}: no rounding mode"));
    } else {
        let need = fp_config::ROUND_TO_NEAREST | fp_config::INF_NAN;
        check(single & need == need, format!("CL_DEVICE_SINGLE_FP_CONFIG {single:#x}"));
    }
    if !fp64 {
        for p in [dp::DOUBLE_FP_CONFIG, dp::PREFERRED_VECTOR_WIDTH_DOUBLE, dp::NATIVE_VECTOR_WIDTH_DOUBLE] {
            check(num(d, p) == 0, format!("{p:#x} is not 0 without cl_khr_fp64"));
        }
    }
    if !names.contains(&"cl_khr_fp16") {
        for p in [dp::PREFERRED_VECTOR_WIDTH_HALF, dp::NATIVE_VECTOR_WIDTH_HALF] {
            check(num(d, p) == 0, format!("{p:#x} is not 0 without cl_khr_fp16"));
        }
    }
    if num(d, dp::IMAGE_SUPPORT) == 0 {
        for p in [dp::MAX_READ_IMAGE_ARGS, dp::MAX_WRITE_IMAGE_ARGS, dp::MAX_SAMPLERS, dp::IMAGE2D_MAX_WIDTH] {
            check(num(d, p) == 0, format!("{p:#x} is not 0 without images"));
        }
    } else {
        // The embedded profile's minimums (the full profile's are higher).
        for (p, min) in [
            (dp::MAX_READ_IMAGE_ARGS, 8),
            (dp::MAX_WRITE_IMAGE_ARGS, 1),
            (dp::MAX_SAMPLERS, 8),
            (dp::IMAGE2D_MAX_WIDTH, 2048),
            (dp::IMAGE2D_MAX_HEIGHT, 2048),
            (dp::IMAGE_MAX_BUFFER_SIZE, 2048),
            (dp::IMAGE_MAX_ARRAY_SIZE, 256),
        ] {
            check(num(d, p) >= min, format!("{p:#x} is below OpenCL 3.0's minimum {min} with images"));
        }
    }
    if num(d, dp::PIPE_SUPPORT) == 0 {
        for p in [dp::MAX_PIPE_ARGS, dp::PIPE_MAX_ACTIVE_RESERVATIONS, dp::PIPE_MAX_PACKET_SIZE] {
            check(num(d, p) == 0, format!("{p:#x} is not 0 without pipes"));
        }
    }
    if num(d, dp::DEVICE_ENQUEUE_CAPABILITIES) == 0 {
        for p in [dp::QUEUE_ON_DEVICE_PROPERTIES, dp::MAX_ON_DEVICE_QUEUES, dp::MAX_ON_DEVICE_EVENTS] {
            check(num(d, p) == 0, format!("{p:#x} is not 0 without device-side enqueue"));
        }
    }
    check(num(d, dp::EXECUTION_CAPABILITIES) & 1 != 0, "CL_EXEC_KERNEL missing".into());
    check(num(d, dp::QUEUE_PROPERTIES) & 2 != 0, "CL_QUEUE_PROFILING_ENABLE missing".into());
    let mem = num(d, dp::ATOMIC_MEMORY_CAPABILITIES);
    let fence = num(d, dp::ATOMIC_FENCE_CAPABILITIES);
    let (min_mem, min_fence) =
        (ac::ORDER_RELAXED | ac::SCOPE_WORK_GROUP, ac::ORDER_RELAXED | ac::ORDER_ACQ_REL | ac::SCOPE_WORK_GROUP);
    check(mem & min_mem == min_mem, format!("CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES {mem:#x}"));
    check(fence & min_fence == min_fence, format!("CL_DEVICE_ATOMIC_FENCE_CAPABILITIES {fence:#x}"));
    let kernels = text(d, dp::BUILT_IN_KERNELS);
    let kernel_list: Vec<String> = list(d, dp::BUILT_IN_KERNELS_WITH_VERSION).into_iter().map(|e| e.name).collect();
    let kernel_names: Vec<&str> = kernels.split(';').filter(|k| !k.is_empty()).collect();
    check(kernel_names == kernel_list, "CL_DEVICE_BUILT_IN_KERNELS != _WITH_VERSION".into());
    bad
}
