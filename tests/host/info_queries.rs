//! The `clGet*Info` answers of `runtime::info`: every parameter answers with
//! the C type and size the spec gives it and a value that agrees with the
//! object, unknown parameters give CL_INVALID_VALUE, and `copy_out` follows
//! the `param_value` / `param_value_size_ret` rule.

use std::mem::size_of;
use std::sync::Arc;

use dmabridge::error::{ClError, ClErrorKind::*};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{Device, DeviceType, UsmCaps};
use dmabridge::runtime::event::{command_type, exec_status, profiling_info, Event};
use dmabridge::runtime::info::{
    self, context_param, copy_out, device_param as dp, event_param, platform_param as pp, queue_param, InfoValue,
};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};

const PTR: usize = size_of::<usize>();
use dmabridge_tests::{cpu_context as ctx, cpu_device as cpu, err_kind as kind};

/// The value written through `copy_out` into a buffer exactly as large as
/// the reported size; checks that the size query and the write agree.
fn bytes(v: &InfoValue) -> Vec<u8> {
    let size = copy_out(v, None).unwrap();
    assert_eq!(size, v.size());
    let mut buf = vec![0xAB; size];
    assert_eq!(copy_out(v, Some(&mut buf)).unwrap(), size);
    buf
}

/// A string answer: a `Str` whose C form is the text plus one NUL.
fn text(v: &InfoValue) -> String {
    let InfoValue::Str(s) = v else { panic!("{v:?} is not a string") };
    let b = bytes(v);
    assert_eq!(b.len(), s.len() + 1, "size of {s:?} must count the NUL");
    assert_eq!(b.last(), Some(&0), "{s:?} is not NUL-terminated");
    assert!(!b[..s.len()].contains(&0), "{s:?} has an interior NUL");
    assert_eq!(&b[..s.len()], s.as_bytes());
    s.clone()
}

fn u32_of(v: &InfoValue) -> u32 {
    let InfoValue::U32(x) = v else { panic!("{v:?} is not a cl_uint") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

fn u64_of(v: &InfoValue) -> u64 {
    let InfoValue::U64(x) = v else { panic!("{v:?} is not a cl_ulong") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

fn usize_of(v: &InfoValue) -> usize {
    let InfoValue::Usize(x) = v else { panic!("{v:?} is not a size_t") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

fn bool_of(v: &InfoValue) -> bool {
    let InfoValue::Bool(x) = v else { panic!("{v:?} is not a cl_bool") };
    let b = bytes(v);
    assert_eq!(b, u32::from(*x).to_ne_bytes(), "cl_bool is 4 bytes, CL_TRUE = 1");
    *x
}

fn bits_of(v: &InfoValue) -> u64 {
    let InfoValue::Bits(x) = v else { panic!("{v:?} is not a cl_bitfield") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

/// True where `/dev/udmabuf` opens (the dma-buf export extension works).
fn udmabuf_opens() -> bool {
    dmabridge::sys::udmabuf::Udmabuf::open().is_ok()
}

/// A `cl_name_version[]` answer, decoded from its C bytes (68 bytes each:
/// the version, then the NUL-terminated, zero-padded name).
fn name_versions(v: &InfoValue) -> Vec<(String, u32)> {
    let InfoValue::NameVersions(list) = v else { panic!("{v:?} is not a cl_name_version[]") };
    let b = bytes(v);
    assert_eq!(b.len(), list.len() * 68, "cl_name_version is 68 bytes");
    b.chunks_exact(68)
        .map(|c| {
            let version = u32::from_ne_bytes(c[..4].try_into().unwrap());
            let name = &c[4..];
            let end = name.iter().position(|&x| x == 0).expect("NUL-terminated name");
            assert!(name[end..].iter().all(|&x| x == 0), "zero-padded");
            (String::from_utf8(name[..end].to_vec()).unwrap(), version)
        })
        .collect()
}

fn dev(d: &Device, param: u32) -> InfoValue {
    info::device_info(d, param).unwrap_or_else(|e| panic!("device param {param:#x}: {e}"))
}

fn plat(param: u32) -> InfoValue {
    info::platform_info(param).unwrap_or_else(|e| panic!("platform param {param:#x}: {e}"))
}

/// Unknown parameters: CL_INVALID_VALUE naming the parameter.
fn assert_unknown(r: Result<InfoValue, ClError>, param: u32) {
    let e = r.expect_err("unknown param must fail");
    assert_eq!(e.kind, InvalidValue);
    assert!(e.message.contains(&format!("{param:#x}")), "message does not name {param:#x}: {e}");
}

#[test]
fn platform_answers() {
    assert_eq!(text(&plat(pp::PROFILE)), "EMBEDDED_PROFILE", "no OpenCL C compiler");
    assert!(text(&plat(pp::VERSION)).starts_with("OpenCL 3.0 "));
    assert_eq!(text(&plat(pp::NAME)), "dmabridge");
    assert_eq!(text(&plat(pp::VENDOR)), "dmabridge");
    let ext = text(&plat(pp::EXTENSIONS));
    let list: Vec<&str> = ext.split(' ').collect();
    let mut want = vec!["cl_intel_unified_shared_memory", "cl_khr_icd"];
    if udmabuf_opens() {
        want.push("cl_dmabridge_dma_buf_export");
    }
    // Import works on every host-unified device, so on the CPU device here;
    // so do the Khronos external memory and semaphores.
    want.extend(["cl_arm_import_memory", "cl_arm_import_memory_host", "cl_arm_import_memory_dma_buf"]);
    want.extend([
        "cl_khr_external_memory",
        "cl_khr_external_memory_dma_buf",
        "cl_khr_semaphore",
        "cl_khr_external_semaphore",
        "cl_khr_external_semaphore_sync_fd",
    ]);
    assert_eq!(list, want, "only what works here: {ext:?}");
    // CL_PLATFORM_EXTENSIONS_WITH_VERSION: the same names, 1.0.0 each.
    let with = plat(pp::EXTENSIONS_WITH_VERSION);
    assert_eq!(name_versions(&with), want.iter().map(|n| (n.to_string(), 1 << 22)).collect::<Vec<_>>());
    assert_eq!(u64_of(&plat(pp::HOST_TIMER_RESOLUTION)), 0);
    assert_eq!(u32_of(&plat(pp::NUMERIC_VERSION)), 3 << 22);
    assert_eq!(info::make_version(3, 0, 0), 3 << 22);
    assert_eq!(text(&plat(pp::ICD_SUFFIX_KHR)), "DMABRIDGE");
    for &p in pp::ALL {
        plat(p);
    }
    for p in [0x08FF, 0x0908, 0x091F, 0x0921, 0x1000, 0] {
        assert_unknown(info::platform_info(p), p);
    }
}

/// What C type each device parameter returns, per the spec.
#[derive(Debug, PartialEq)]
enum Ty {
    Uint,
    Ulong,
    SizeT,
    Bool,
    Bitfield,
    Str,
    Sizes,
    PlatformId,
    DeviceId,
    NameVersions,
    PartitionProps,
}

fn device_param_type(p: u32) -> Ty {
    use Ty::*;
    match p {
        dp::TYPE
        | dp::EXECUTION_CAPABILITIES
        | dp::QUEUE_PROPERTIES
        | dp::SVM_CAPABILITIES
        | dp::HOST_MEM_CAPABILITIES_INTEL
        | dp::DEVICE_MEM_CAPABILITIES_INTEL
        | dp::SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL
        | dp::CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL
        | dp::SHARED_SYSTEM_MEM_CAPABILITIES_INTEL => Bitfield,
        dp::SINGLE_FP_CONFIG
        | dp::DOUBLE_FP_CONFIG
        | dp::HALF_FP_CONFIG
        | dp::PARTITION_AFFINITY_DOMAIN
        | dp::QUEUE_ON_DEVICE_PROPERTIES
        | dp::DEVICE_ENQUEUE_CAPABILITIES
        | dp::ATOMIC_MEMORY_CAPABILITIES
        | dp::ATOMIC_FENCE_CAPABILITIES => Bitfield,
        dp::MAX_MEM_ALLOC_SIZE
        | dp::GLOBAL_MEM_SIZE
        | dp::GLOBAL_MEM_CACHE_SIZE
        | dp::MAX_CONSTANT_BUFFER_SIZE
        | dp::LOCAL_MEM_SIZE => Ulong,
        dp::MAX_WORK_GROUP_SIZE
        | dp::MAX_PARAMETER_SIZE
        | dp::PROFILING_TIMER_RESOLUTION
        | dp::IMAGE2D_MAX_WIDTH
        | dp::IMAGE2D_MAX_HEIGHT
        | dp::IMAGE3D_MAX_WIDTH
        | dp::IMAGE3D_MAX_HEIGHT
        | dp::IMAGE3D_MAX_DEPTH
        | dp::IMAGE_MAX_BUFFER_SIZE
        | dp::IMAGE_MAX_ARRAY_SIZE
        | dp::PRINTF_BUFFER_SIZE
        | dp::MAX_GLOBAL_VARIABLE_SIZE
        | dp::GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE
        | dp::PREFERRED_WORK_GROUP_SIZE_MULTIPLE => SizeT,
        dp::MAX_WORK_ITEM_SIZES => Sizes,
        dp::IMAGE_SUPPORT
        | dp::ERROR_CORRECTION_SUPPORT
        | dp::ENDIAN_LITTLE
        | dp::AVAILABLE
        | dp::COMPILER_AVAILABLE
        | dp::LINKER_AVAILABLE
        | dp::HOST_UNIFIED_MEMORY
        | dp::PREFERRED_INTEROP_USER_SYNC
        | dp::NON_UNIFORM_WORK_GROUP_SUPPORT
        | dp::WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT
        | dp::GENERIC_ADDRESS_SPACE_SUPPORT
        | dp::PIPE_SUPPORT
        | dp::SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS => Bool,
        dp::NAME
        | dp::VENDOR
        | dp::DRIVER_VERSION
        | dp::PROFILE
        | dp::VERSION
        | dp::EXTENSIONS
        | dp::OPENCL_C_VERSION
        | dp::BUILT_IN_KERNELS
        | dp::IL_VERSION
        | dp::LATEST_CONFORMANCE_VERSION_PASSED => Str,
        dp::EXTENSIONS_WITH_VERSION
        | dp::ILS_WITH_VERSION
        | dp::BUILT_IN_KERNELS_WITH_VERSION
        | dp::OPENCL_C_ALL_VERSIONS
        | dp::OPENCL_C_FEATURES => NameVersions,
        // cl_device_partition_property[] (intptr_t).
        dp::PARTITION_PROPERTIES | dp::PARTITION_TYPE => PartitionProps,
        dp::PLATFORM => PlatformId,
        dp::PARENT_DEVICE => DeviceId,
        _ => Uint,
    }
}

fn type_of(v: &InfoValue) -> (Ty, usize) {
    match v {
        InfoValue::U32(_) => (Ty::Uint, 4),
        InfoValue::U64(_) => (Ty::Ulong, 8),
        InfoValue::Usize(_) => (Ty::SizeT, PTR),
        InfoValue::Bool(_) => (Ty::Bool, 4),
        InfoValue::Bits(_) => (Ty::Bitfield, 8),
        InfoValue::Str(s) => (Ty::Str, s.len() + 1),
        InfoValue::Sizes(s) => (Ty::Sizes, s.len() * PTR),
        InfoValue::Platform(_) => (Ty::PlatformId, PTR),
        InfoValue::Device(_) => (Ty::DeviceId, PTR),
        InfoValue::NameVersions(v) => (Ty::NameVersions, v.len() * 68),
        InfoValue::Properties(v) => (Ty::PartitionProps, v.len() * PTR),
        other => panic!("no device param answers {other:?}"),
    }
}

#[test]
fn every_device_param_has_its_c_type_and_size() {
    let d = cpu();
    assert!(dp::ALL.len() >= 110, "every OpenCL 3.0 device query");
    for &p in dp::ALL {
        let v = dev(&d, p);
        let (ty, size) = type_of(&v);
        assert_eq!(ty, device_param_type(p), "param {p:#x} answered {v:?}");
        assert_eq!(v.size(), size, "param {p:#x}");
        assert_eq!(copy_out(&v, None).unwrap(), size, "param {p:#x}");
    }
    let mut sorted = dp::ALL.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), dp::ALL.len(), "a device param is listed twice");
}

#[test]
fn cpu_device_values() {
    let d = cpu();
    assert_eq!(bits_of(&dev(&d, dp::TYPE)), 1 << 1, "CL_DEVICE_TYPE_CPU");
    assert_eq!(u32_of(&dev(&d, dp::MAX_COMPUTE_UNITS)), d.compute_units);
    assert!(d.compute_units >= 1);
    let dims = u32_of(&dev(&d, dp::MAX_WORK_ITEM_DIMENSIONS));
    assert_eq!(dims, 3, "OpenCL 3.0: at least 3 dimensions");
    let wg = usize_of(&dev(&d, dp::MAX_WORK_GROUP_SIZE));
    assert!(wg >= 1);
    let InfoValue::Sizes(sizes) = dev(&d, dp::MAX_WORK_ITEM_SIZES) else { panic!() };
    assert_eq!(sizes.len(), dims as usize, "one entry per dimension");
    assert!(sizes.iter().all(|&s| s >= 1 && s <= wg));
    // A harness reads three size_t.
    let b = bytes(&dev(&d, dp::MAX_WORK_ITEM_SIZES));
    assert_eq!(b, sizes.iter().flat_map(|s| s.to_ne_bytes()).collect::<Vec<u8>>());
    assert_eq!(b.len(), 3 * PTR);
    assert_eq!(u64_of(&dev(&d, dp::MAX_MEM_ALLOC_SIZE)), d.max_mem_alloc_size);
    assert_eq!(u32_of(&dev(&d, dp::MEM_BASE_ADDR_ALIGN)) as u64, d.max_alignment * 8, "in bits");
    let global = u64_of(&dev(&d, dp::GLOBAL_MEM_SIZE));
    assert!(global >= d.max_mem_alloc_size, "global {global} < max alloc {}", d.max_mem_alloc_size);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(global, kib * 1024, "MemTotal");
    assert_eq!(bool_of(&dev(&d, dp::HOST_UNIFIED_MEMORY)), d.host_unified_memory);
    assert!(d.host_unified_memory);
    assert_eq!(usize_of(&dev(&d, dp::PROFILING_TIMER_RESOLUTION)), 1);
    assert_eq!(bool_of(&dev(&d, dp::ENDIAN_LITTLE)), cfg!(target_endian = "little"));
    assert!(bool_of(&dev(&d, dp::AVAILABLE)));
    assert_eq!(bits_of(&dev(&d, dp::EXECUTION_CAPABILITIES)), 3);
    assert_eq!(bits_of(&dev(&d, dp::QUEUE_PROPERTIES)), 3, "out-of-order | profiling");
    assert_eq!(dp::QUEUE_ON_HOST_PROPERTIES, dp::QUEUE_PROPERTIES);
    assert_eq!(text(&dev(&d, dp::NAME)), d.name);
    assert_eq!(text(&dev(&d, dp::VENDOR)), "dmabridge");
    assert!(!text(&dev(&d, dp::DRIVER_VERSION)).is_empty());
    assert!(text(&dev(&d, dp::VERSION)).starts_with("OpenCL 3.0"));
    let ext = text(&dev(&d, dp::EXTENSIONS));
    assert!(ext.split(' ').any(|e| e == "cl_intel_unified_shared_memory"), "{ext:?}");
    assert!(!ext.contains("cl_amd_bus_addressable_memory"));
    let import = ["cl_arm_import_memory", "cl_arm_import_memory_host", "cl_arm_import_memory_dma_buf"];
    assert!(import.iter().all(|i| ext.split(' ').any(|e| e == *i)), "{ext:?}");
    assert_eq!(u32_of(&dev(&d, dp::ADDRESS_BITS)), 64);
    assert!(text(&dev(&d, dp::OPENCL_C_VERSION)).starts_with("OpenCL C 1.0 "), "no compiler: the least claim");
    assert_eq!(
        text(&dev(&d, dp::BUILT_IN_KERNELS)),
        dmabridge::runtime::kernel::builtin_kernel_names(&d).join(";"),
        "CL_DEVICE_BUILT_IN_KERNELS lists the CPU device's built-ins"
    );
    assert!(text(&dev(&d, dp::BUILT_IN_KERNELS)).split(';').any(|k| k == "yuyv_to_rgba"));
    assert!(usize_of(&dev(&d, dp::MAX_PARAMETER_SIZE)) >= 256, "embedded-profile minimum");
    assert_eq!(bits_of(&dev(&d, dp::SVM_CAPABILITIES)), d.svm);
    assert_eq!(u32_of(&dev(&d, dp::NUMERIC_VERSION)), 3 << 22);
    assert_eq!(u32_of(&dev(&d, dp::PREFERRED_VECTOR_WIDTH_INT)), 1);
    assert_eq!(u32_of(&dev(&d, dp::NATIVE_VECTOR_WIDTH_DOUBLE)), 0, "no cl_khr_fp64");
    assert_eq!(dev(&d, dp::PARENT_DEVICE), InfoValue::Device(None));
    assert_eq!(u32_of(&dev(&d, dp::REFERENCE_COUNT)), 1);
}

/// Seed rule: a device without an OpenCL C compiler reports the embedded
/// profile and no compiler.
#[test]
fn no_compiler_means_embedded_profile() {
    for d in Platform::get().devices() {
        assert!(!bool_of(&dev(d, dp::COMPILER_AVAILABLE)));
        assert!(!bool_of(&dev(d, dp::LINKER_AVAILABLE)));
        assert_eq!(text(&dev(d, dp::PROFILE)), "EMBEDDED_PROFILE");
    }
}

/// A device whose five USM capabilities all differ, so that a query answered
/// from the wrong field shows.
fn odd_device() -> Arc<Device> {
    Arc::new(Device {
        index: 7,
        name: "odd accelerator".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: 12345 << 12,
        max_alignment: 64,
        host_unified_memory: false,
        usm: UsmCaps { host: 1, device: 3, single_device_shared: 5, cross_device_shared: 0, shared_system: 9 },
        svm: 1,
        compute_units: 3,
        backend: None,
        dma_domain: None,
    })
}

/// An accelerator descriptor with no backend (its global memory is RAM),
/// host-unified or not, allocating what the platform's would: a quarter of
/// RAM (the guest tests check the real edu and BAR devices).
fn accelerator(host_unified_memory: bool) -> Arc<Device> {
    Arc::new(Device {
        index: 8,
        name: format!("accelerator (host-unified: {host_unified_memory})"),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: cpu().max_mem_alloc_size,
        max_alignment: 64,
        host_unified_memory,
        usm: UsmCaps { host: 1, device: 1, single_device_shared: 1, cross_device_shared: 1, shared_system: 0 },
        svm: 1,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    })
}

/// Issue 17: every device kind answers every query as OpenCL 3.0 requires
/// for the profile it reports (tests/common/cl30.rs: at least 3 work-item
/// dimensions, the extensions its OpenCL C version requires, the minimum
/// values, agreeing string and list queries). Before the fix: 1 dimension,
/// OpenCL C 1.2 without `cl_khr_global_int32_base_atomics` and the other
/// OpenCL C 1.1 extensions, and the CPU device's largest allocation the
/// udmabuf limit (64 MiB) where OpenCL asks min(1 GiB, RAM / 4).
#[test]
fn every_device_kind_follows_the_opencl_3_0_device_rules() {
    for d in [cpu(), accelerator(true), accelerator(false)] {
        let bad = dmabridge_tests::cl30::violations(&d);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

#[test]
fn device_values_follow_the_device() {
    for d in [cpu(), odd_device()] {
        assert_eq!(bits_of(&dev(&d, dp::HOST_MEM_CAPABILITIES_INTEL)), d.usm.host);
        assert_eq!(bits_of(&dev(&d, dp::DEVICE_MEM_CAPABILITIES_INTEL)), d.usm.device);
        assert_eq!(bits_of(&dev(&d, dp::SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL)), d.usm.single_device_shared);
        assert_eq!(bits_of(&dev(&d, dp::CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL)), d.usm.cross_device_shared);
        assert_eq!(bits_of(&dev(&d, dp::SHARED_SYSTEM_MEM_CAPABILITIES_INTEL)), d.usm.shared_system);
        assert_eq!(u64_of(&dev(&d, dp::MAX_MEM_ALLOC_SIZE)), d.max_mem_alloc_size);
        assert_eq!(u32_of(&dev(&d, dp::MEM_BASE_ADDR_ALIGN)) as u64, d.max_alignment * 8);
        assert_eq!(bits_of(&dev(&d, dp::SVM_CAPABILITIES)), d.svm);
        assert_eq!(u32_of(&dev(&d, dp::MAX_COMPUTE_UNITS)), d.compute_units);
        assert_eq!(bool_of(&dev(&d, dp::HOST_UNIFIED_MEMORY)), d.host_unified_memory);
        assert_eq!(text(&dev(&d, dp::NAME)), d.name);
    }
    let odd = odd_device();
    assert_eq!(bits_of(&dev(&odd, dp::TYPE)), 1 << 3, "CL_DEVICE_TYPE_ACCELERATOR");
}

#[test]
fn device_platform_is_a_handle_for_the_c_face() {
    let v = dev(&cpu(), dp::PLATFORM);
    assert_eq!(v, InfoValue::Platform(Platform::get()));
    assert_eq!(copy_out(&v, None).unwrap(), PTR);
    let mut buf = [0x5Au8; 16];
    let e = copy_out(&v, Some(&mut buf)).expect_err("a handle is the C face's to write");
    assert_eq!(e.kind, InvalidValue);
    assert!(e.message.contains("handle"), "{e}");
    assert_eq!(buf, [0x5A; 16], "nothing written");
}

#[test]
fn unknown_device_params() {
    let d = cpu();
    // 0x105F: CL_DEVICE_OPENCL_C_NUMERIC_VERSION_KHR (cl_khr_extended_versioning only).
    for p in [0x0FFF, 0x105F, 0x106A, 0x1073, 0x4195, 0x419A, 0xFFFF_FFFF] {
        assert!(!dp::ALL.contains(&p));
        assert_unknown(info::device_info(&d, p), p);
    }
}

#[test]
fn copy_out_size_rule() {
    let v = InfoValue::Str("dmabridge".into());
    assert_eq!(copy_out(&v, None).unwrap(), 10, "None: just the size, NUL included");
    let mut small = [0x77u8; 9];
    assert_eq!(kind(copy_out(&v, Some(&mut small))), InvalidValue);
    assert_eq!(small, [0x77; 9], "a too-small buffer is left untouched");
    let mut empty: [u8; 0] = [];
    assert_eq!(kind(copy_out(&v, Some(&mut empty))), InvalidValue);
    let mut big = [0x77u8; 16];
    assert_eq!(copy_out(&v, Some(&mut big)).unwrap(), 10);
    assert_eq!(&big[..10], b"dmabridge\0");
    assert_eq!(big[10..], [0x77; 6], "bytes past the value are untouched");

    let n = InfoValue::U64(0x0102_0304_0506_0708);
    let mut seven = [0u8; 7];
    assert_eq!(kind(copy_out(&n, Some(&mut seven))), InvalidValue);
    assert_eq!(seven, [0; 7]);
    let mut eight = [0u8; 8];
    assert_eq!(copy_out(&n, Some(&mut eight)).unwrap(), 8);
    assert_eq!(u64::from_ne_bytes(eight), 0x0102_0304_0506_0708);

    let b = InfoValue::Bool(true);
    let mut three = [9u8; 3];
    assert_eq!(kind(copy_out(&b, Some(&mut three))), InvalidValue, "cl_bool is 4 bytes");
    assert_eq!(three, [9; 3]);

    let e = InfoValue::Str(String::new());
    assert_eq!(copy_out(&e, None).unwrap(), 1, "an empty string is one NUL");
    assert_eq!(bytes(&e), [0]);
}

#[test]
fn write_plain_values() {
    assert_eq!(bytes(&InfoValue::U32(0xDEAD_BEEF)), 0xDEAD_BEEFu32.to_ne_bytes());
    assert_eq!(bytes(&InfoValue::I32(-14)), (-14i32).to_ne_bytes());
    assert_eq!(bytes(&InfoValue::Usize(usize::MAX - 1)), (usize::MAX - 1).to_ne_bytes());
    assert_eq!(bytes(&InfoValue::Bool(false)), [0; 4]);
    assert_eq!(bytes(&InfoValue::Bits(1 << 40)), (1u64 << 40).to_ne_bytes());
    let s = bytes(&InfoValue::Sizes(vec![1, 2, 3]));
    assert_eq!(s.len(), 3 * PTR);
    assert_eq!(s[PTR..2 * PTR], 2usize.to_ne_bytes());
    let p = bytes(&InfoValue::Properties(vec![0x1093, 3, 0]));
    assert_eq!(p.len(), 24);
    assert_eq!(p[8..16], 3u64.to_ne_bytes());
    assert_eq!(bytes(&InfoValue::Properties(vec![])), Vec::<u8>::new());
    // NULL handles are plain zeros; real handles are refused.
    assert_eq!(bytes(&InfoValue::Queue(None)), vec![0; PTR]);
    assert_eq!(bytes(&InfoValue::Device(None)), vec![0; PTR]);
    assert_eq!(bytes(&InfoValue::DeviceIds(vec![])), Vec::<u8>::new());
    let c = ctx();
    for v in [InfoValue::Device(Some(cpu())), InfoValue::DeviceIds(vec![cpu()]), InfoValue::Context(c)] {
        let mut buf = vec![0x11u8; 64];
        assert_eq!(kind(v.write(&mut buf)), InvalidValue, "{v:?}");
        assert!(buf.iter().all(|&b| b == 0x11));
    }
}

#[test]
fn context_answers() {
    let c = ctx();
    let count = |c: &Arc<Context>| u32_of(&info::context_info(c, context_param::REFERENCE_COUNT).unwrap());
    let base = count(&c);
    assert_eq!(base, 1);
    let c2 = c.clone();
    assert_eq!(count(&c), base + 1, "a clone retains");
    let q = Queue::new(&c, &cpu(), QueueProps::default()).unwrap();
    assert!(count(&c) > base + 1, "a queue holds its context");
    drop(q);
    drop(c2);
    assert_eq!(count(&c), base, "drops release");

    let devices = info::context_info(&c, context_param::DEVICES).unwrap();
    assert_eq!(devices, InfoValue::DeviceIds(vec![cpu()]));
    assert_eq!(devices.size(), PTR);
    assert_eq!(u32_of(&info::context_info(&c, context_param::NUM_DEVICES).unwrap()), 1);
    let props = info::context_info(&c, context_param::PROPERTIES).unwrap();
    assert_eq!(props, InfoValue::Properties(vec![]));
    assert_eq!(copy_out(&props, None).unwrap(), 0);

    let two = Context::new(&[cpu(), odd_device()]).unwrap();
    assert_eq!(u32_of(&info::context_info(&two, context_param::NUM_DEVICES).unwrap()), 2);
    assert_eq!(info::context_info(&two, context_param::DEVICES).unwrap().size(), 2 * PTR);
    for &p in context_param::ALL {
        info::context_info(&c, p).unwrap();
    }
    for p in [0x107F, 0x1084, 0x1090] {
        assert_unknown(info::context_info(&c, p), p);
    }
}

#[test]
fn queue_answers() {
    let c = ctx();
    let d = cpu();
    let q = Queue::new(&c, &d, QueueProps { out_of_order: true, profiling: true }).unwrap();
    let qi = |p| info::queue_info(&q, p).unwrap();
    assert_eq!(qi(queue_param::CONTEXT), InfoValue::Context(c.clone()));
    assert_eq!(qi(queue_param::CONTEXT).size(), PTR);
    assert_eq!(qi(queue_param::DEVICE), InfoValue::Device(Some(d.clone())));
    assert_ne!(qi(queue_param::DEVICE), InfoValue::Device(Some(odd_device())));
    assert_eq!(bits_of(&qi(queue_param::PROPERTIES)), 3);
    assert_eq!(qi(queue_param::PROPERTIES_ARRAY), InfoValue::Properties(vec![0x1093, 3, 0]));
    assert_eq!(qi(queue_param::PROPERTIES_ARRAY).size(), 24);
    assert_eq!(qi(queue_param::DEVICE_DEFAULT), InfoValue::Queue(None));
    assert_eq!(kind(info::queue_info(&q, queue_param::SIZE)), InvalidCommandQueue);

    let count = |q: &Arc<Queue>| u32_of(&info::queue_info(q, queue_param::REFERENCE_COUNT).unwrap());
    let base = count(&q);
    let q2 = q.clone();
    assert_eq!(count(&q), base + 1);
    drop(q2);
    assert_eq!(count(&q), base);

    let plain = Queue::new(&c, &d, QueueProps::default()).unwrap();
    assert_eq!(bits_of(&info::queue_info(&plain, queue_param::PROPERTIES).unwrap()), 0);
    let arr = info::queue_info(&plain, queue_param::PROPERTIES_ARRAY).unwrap();
    assert_eq!(copy_out(&arr, None).unwrap(), 0);
    let profiling = Queue::new(&c, &d, QueueProps { out_of_order: false, profiling: true }).unwrap();
    assert_eq!(
        info::queue_info(&profiling, queue_param::PROPERTIES_ARRAY).unwrap(),
        InfoValue::Properties(vec![0x1093, 2, 0])
    );
    for &p in queue_param::ALL {
        info::queue_info(&q, p).unwrap();
    }
    for p in [0x108F, 0x1096, 0x1097, 0x1099] {
        assert_unknown(info::queue_info(&q, p), p);
    }
}

#[test]
fn user_event_answers() {
    let c = ctx();
    let e = Event::user(&c);
    let ei = |p| info::event_info(&e, p).unwrap();
    assert_eq!(ei(event_param::COMMAND_QUEUE), InfoValue::Queue(None), "user events have no queue");
    assert_eq!(u32_of(&ei(event_param::COMMAND_TYPE)), command_type::USER);
    assert_eq!(ei(event_param::CONTEXT), InfoValue::Context(c.clone()));
    let status = ei(event_param::COMMAND_EXECUTION_STATUS);
    assert_eq!(status, InfoValue::I32(exec_status::SUBMITTED));
    assert_eq!(bytes(&status), exec_status::SUBMITTED.to_ne_bytes());
    e.set_user_status(-5).unwrap();
    assert_eq!(ei(event_param::COMMAND_EXECUTION_STATUS), InfoValue::I32(-5), "a failed status is its error code");

    let count = |e: &Event| u32_of(&info::event_info(e, event_param::REFERENCE_COUNT).unwrap());
    let base = count(&e);
    let e2 = e.clone();
    assert_eq!(count(&e), base + 1);
    drop(e2);
    assert_eq!(count(&e), base);

    assert_eq!(kind(info::event_profiling_info(&e, profiling_info::START)), ProfilingInfoNotAvailable);
    for &p in event_param::ALL {
        info::event_info(&e, p).unwrap();
    }
    for p in [0x11CF, 0x11D5, 0x1280] {
        assert_unknown(info::event_info(&e, p), p);
    }
}

#[test]
fn command_event_answers() {
    let c = ctx();
    let q = Queue::new(&c, &cpu(), QueueProps { out_of_order: false, profiling: true }).unwrap();
    let e = q.enqueue_marker(&[]).unwrap();
    q.finish().unwrap();
    let ei = |p| info::event_info(&e, p).unwrap();
    assert_eq!(ei(event_param::COMMAND_QUEUE), InfoValue::Queue(Some(q.clone())));
    assert_eq!(u32_of(&ei(event_param::COMMAND_TYPE)), command_type::MARKER);
    assert_eq!(ei(event_param::COMMAND_EXECUTION_STATUS), InfoValue::I32(exec_status::COMPLETE));
    assert_eq!(ei(event_param::CONTEXT), InfoValue::Context(c.clone()));
    let t = |p| u64_of(&info::event_profiling_info(&e, p).unwrap());
    let (queued, start, end) = (t(profiling_info::QUEUED), t(profiling_info::START), t(profiling_info::END));
    assert!(queued > 0 && queued <= start && start <= end, "{queued} {start} {end}");
    assert_eq!(kind(info::event_profiling_info(&e, 0x1285)), InvalidValue);

    let plain = Queue::new(&c, &cpu(), QueueProps::default()).unwrap();
    let e = plain.enqueue_marker(&[]).unwrap();
    plain.finish().unwrap();
    assert_eq!(kind(info::event_profiling_info(&e, profiling_info::END)), ProfilingInfoNotAvailable);
}

/// The OpenCL 3.0 queries a conformance harness or clinfo asks at start-up,
/// with values true for the device: every one answers (none is
/// CL_INVALID_VALUE any more) and agrees with the others.
#[test]
fn opencl_3_0_startup_queries() {
    use dmabridge::runtime::info::{atomic_caps as ac, fp_config};
    let v3 = |major: u32, minor: u32| (major << 22) | (minor << 12);
    for d in [cpu(), odd_device()] {
        // OpenCL C: no compiler, so no version of the language is listed
        // (OpenCL 3.0 allows the empty list then), and the version string
        // that must still answer claims the least, OpenCL C 1.0 (1.1 and
        // later require the 32-bit atomics extensions and byte-addressable
        // stores), in the form the CTS parses.
        let c = text(&dev(&d, dp::OPENCL_C_VERSION));
        let rest = c.strip_prefix("OpenCL C ").unwrap_or_else(|| panic!("{c:?}"));
        let (major, minor) = rest.split(' ').next().unwrap().split_once('.').unwrap();
        let version = v3(major.parse().unwrap(), minor.parse().unwrap());
        assert_eq!(version, v3(1, 0));
        assert_eq!(name_versions(&dev(&d, dp::OPENCL_C_ALL_VERSIONS)), vec![]);
        assert!(name_versions(&dev(&d, dp::OPENCL_C_FEATURES)).is_empty(), "no optional OpenCL C feature");
        // A CTS version string: vYYYY-MM-DD-XX.
        let cts = text(&dev(&d, dp::LATEST_CONFORMANCE_VERSION_PASSED));
        let digits: Vec<&str> = cts.strip_prefix('v').unwrap().split('-').collect();
        assert_eq!(digits.iter().map(|s| s.len()).collect::<Vec<_>>(), [4, 2, 2, 2], "{cts:?}");
        assert!(digits.iter().all(|s| s.bytes().all(|b| b.is_ascii_digit())));
        // The *_WITH_VERSION lists name what the strings name.
        let ext = text(&dev(&d, dp::EXTENSIONS));
        let with: Vec<String> = name_versions(&dev(&d, dp::EXTENSIONS_WITH_VERSION)).into_iter().map(|e| e.0).collect();
        assert_eq!(with, ext.split(' ').map(str::to_owned).collect::<Vec<_>>());
        assert_eq!(ext.split(' ').any(|e| e == "cl_dmabridge_dma_buf_export"), udmabuf_opens());
        let kernels = text(&dev(&d, dp::BUILT_IN_KERNELS));
        let with = name_versions(&dev(&d, dp::BUILT_IN_KERNELS_WITH_VERSION));
        let names: Vec<&str> = with.iter().map(|e| e.0.as_str()).collect();
        let expected: Vec<&str> = if kernels.is_empty() { vec![] } else { kernels.split(';').collect() };
        assert_eq!(names, expected);
        assert_eq!(u32_of(&dev(&d, dp::NUMERIC_VERSION)), v3(3, 0));
        // No IL, pipes, sub-groups, device queues, program globals; images
        // on the CPU device only (issue 22), with its limits, none elsewhere.
        assert_eq!(text(&dev(&d, dp::IL_VERSION)), "");
        assert!(name_versions(&dev(&d, dp::ILS_WITH_VERSION)).is_empty());
        for p in [dp::PIPE_SUPPORT, dp::GENERIC_ADDRESS_SPACE_SUPPORT] {
            assert!(!bool_of(&dev(&d, p)), "{p:#x}");
        }
        for p in [dp::MAX_PIPE_ARGS, dp::PIPE_MAX_ACTIVE_RESERVATIONS, dp::PIPE_MAX_PACKET_SIZE] {
            assert_eq!(u32_of(&dev(&d, p)), 0, "must be 0 without pipe support: {p:#x}");
        }
        let images = d.device_type == DeviceType::Cpu;
        assert_eq!(bool_of(&dev(&d, dp::IMAGE_SUPPORT)), images);
        for p in [dp::MAX_READ_IMAGE_ARGS, dp::MAX_WRITE_IMAGE_ARGS, dp::MAX_READ_WRITE_IMAGE_ARGS, dp::MAX_SAMPLERS] {
            assert_eq!(u32_of(&dev(&d, p)) > 0, images, "{p:#x}");
        }
        for p in [dp::IMAGE2D_MAX_WIDTH, dp::IMAGE3D_MAX_DEPTH, dp::IMAGE_MAX_BUFFER_SIZE, dp::IMAGE_MAX_ARRAY_SIZE] {
            assert_eq!(usize_of(&dev(&d, p)) > 0, images, "{p:#x}");
        }
        assert_eq!(usize_of(&dev(&d, dp::MAX_GLOBAL_VARIABLE_SIZE)), 0);
        assert_eq!(u32_of(&dev(&d, dp::MAX_NUM_SUB_GROUPS)), 0, "no sub-groups");
        assert_eq!(bits_of(&dev(&d, dp::DEVICE_ENQUEUE_CAPABILITIES)), 0);
        assert_eq!(u32_of(&dev(&d, dp::MAX_ON_DEVICE_QUEUES)), 0);
        // Atomics: at least OpenCL 3.0's mandated minimum.
        let mem = bits_of(&dev(&d, dp::ATOMIC_MEMORY_CAPABILITIES));
        let fence = bits_of(&dev(&d, dp::ATOMIC_FENCE_CAPABILITIES));
        let min_mem = ac::ORDER_RELAXED | ac::SCOPE_WORK_GROUP;
        let min_fence = ac::ORDER_RELAXED | ac::ORDER_ACQ_REL | ac::SCOPE_WORK_GROUP;
        assert_eq!(mem & min_mem, min_mem, "{mem:#x}");
        assert_eq!(fence & min_fence, min_fence, "{fence:#x}");
        assert_eq!(mem & ac::SCOPE_WORK_ITEM, 0, "work-item scope is for fences only");
        // Floating point: single precision as the full profile requires, no
        // double or half.
        let single = bits_of(&dev(&d, dp::SINGLE_FP_CONFIG));
        assert_eq!(single & (fp_config::ROUND_TO_NEAREST | fp_config::INF_NAN), 6, "{single:#x}");
        assert_eq!(bits_of(&dev(&d, dp::DOUBLE_FP_CONFIG)), 0);
        assert_eq!(bits_of(&dev(&d, dp::HALF_FP_CONFIG)), 0);
        // Not partitionable: {0}; a root device has no partition type.
        assert_eq!(bytes(&dev(&d, dp::PARTITION_PROPERTIES)), vec![0; PTR]);
        assert_eq!(copy_out(&dev(&d, dp::PARTITION_TYPE), None).unwrap(), 0);
        assert_eq!(bits_of(&dev(&d, dp::PARTITION_AFFINITY_DOMAIN)), 0);
        assert_eq!(u32_of(&dev(&d, dp::PARTITION_MAX_SUB_DEVICES)), 0);
        // Alignment: the largest built-in type, as the USM/SVM alignment.
        assert_eq!(u32_of(&dev(&d, dp::MIN_DATA_TYPE_ALIGN_SIZE)) as u64, d.max_alignment);
        assert!(d.max_alignment >= 64, "long16, or int16 in the embedded profile");
        let multiple = usize_of(&dev(&d, dp::PREFERRED_WORK_GROUP_SIZE_MULTIPLE));
        assert!(multiple >= 1 && multiple <= usize_of(&dev(&d, dp::MAX_WORK_GROUP_SIZE)));
        assert!(u64_of(&dev(&d, dp::LOCAL_MEM_SIZE)) >= 1024, "embedded-profile minimum");
        assert!(u64_of(&dev(&d, dp::MAX_CONSTANT_BUFFER_SIZE)) >= 1024, "embedded-profile minimum");
        assert!(u32_of(&dev(&d, dp::MAX_CONSTANT_ARGS)) >= 4, "embedded-profile minimum");
    }
}

/// What is read from the machine for the CPU device: the clock, the cache;
/// a DMA accelerator reports an unknown clock, no cache and the minimum
/// atomics.
#[test]
fn cpu_device_reads_the_machine() {
    let d = cpu();
    let cpufreq = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()
        .map(|s| s.trim().parse::<u64>().unwrap() / 1000);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("cpu MHz"))?.to_owned();
        Some(line.split(':').nth(1)?.trim().parse::<f64>().ok()?.round() as u64)
    });
    let clock = u32_of(&dev(&d, dp::MAX_CLOCK_FREQUENCY)) as u64;
    assert_eq!(clock, cpufreq.or(cpuinfo).unwrap_or(0));
    if cpufreq.is_some() || cpuinfo.is_some() {
        assert!(clock > 0);
    }
    let line = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size").ok();
    let cacheline = u32_of(&dev(&d, dp::GLOBAL_MEM_CACHELINE_SIZE));
    let cache = u64_of(&dev(&d, dp::GLOBAL_MEM_CACHE_SIZE));
    let cache_type = u32_of(&dev(&d, dp::GLOBAL_MEM_CACHE_TYPE));
    if let Some(line) = line {
        assert_eq!(cacheline, line.trim().parse::<u32>().unwrap());
        assert!(cacheline.is_power_of_two());
        assert!(cache >= 1024, "at least an L1 cache: {cache}");
        assert_eq!(cache_type, 2, "CL_READ_WRITE_CACHE");
    }
    let all = bits_of(&dev(&d, dp::ATOMIC_MEMORY_CAPABILITIES));
    assert_eq!(all, 0b111_0111, "host code: every order and scope but work-item");
    let odd = odd_device();
    assert_eq!(u32_of(&dev(&odd, dp::MAX_CLOCK_FREQUENCY)), 0);
    assert_eq!(u32_of(&dev(&odd, dp::GLOBAL_MEM_CACHE_TYPE)), 0, "CL_NONE");
    assert_eq!(u64_of(&dev(&odd, dp::GLOBAL_MEM_CACHE_SIZE)), 0);
    assert_eq!(bits_of(&dev(&odd, dp::ATOMIC_MEMORY_CAPABILITIES)), 0b1_0001, "relaxed, work-group");
    assert_eq!(bits_of(&dev(&odd, dp::ATOMIC_FENCE_CAPABILITIES)), 0b1_0011, "relaxed, acq_rel, work-group");
}

/// cl_dmabridge_dma_buf_export in the core: info queries everywhere; on a
/// machine without /dev/udmabuf the exports answer CL_INVALID_OPERATION
/// (with udmabuf they succeed: the guest and the C test cover the bytes).
#[test]
fn dma_buf_export_queries_and_errors() {
    use dmabridge::ext::dma_buf_export::{self as export, info_param, Info};
    use dmabridge::ext::usm;
    use dmabridge::runtime::buffer::{mem_flags, Buffer};
    let page = dmabridge::sys::page_size();
    let c = ctx();
    let have = udmabuf_opens();
    assert_eq!(export::available(), have);
    let p = usm::host_mem_alloc(&c, &[], 3 * page, 0).unwrap().as_ptr();
    let lead = p as usize % page;
    let at = |q: *const u8, param| export::mem_alloc_info(&c, q, param).unwrap();
    assert_eq!(at(p, info_param::EXPORTABLE), Info::Exportable(have));
    assert_eq!(at(p.wrapping_add(7), info_param::SIZE), Info::Size((lead + 3 * page).next_multiple_of(page)));
    assert_eq!(at(p.wrapping_add(2 * page), info_param::OFFSET), Info::Offset(lead + 2 * page));
    assert_eq!(kind(export::mem_alloc_info(&c, p, 0x4F1F)), InvalidValue);
    let v = [0u8; 8];
    assert_eq!(kind(export::mem_alloc_info(&c, v.as_ptr(), info_param::EXPORTABLE)), InvalidValue);
    assert_eq!(kind(export::export_mem_alloc(&c, v.as_ptr(), &[])), InvalidValue, "not an allocation");
    assert_eq!(kind(export::export_mem_alloc(&c, p, &[(0x4F1F, 1)])), InvalidProperty);
    // Another context's allocation is not this one's.
    let other = ctx();
    assert_eq!(kind(export::export_mem_alloc(&other, p, &[])), InvalidValue);
    match export::export_mem_alloc(&c, p.wrapping_add(1), &[]) {
        Ok(e) => {
            assert!(have);
            assert_eq!(e.offset, lead + 1);
            assert_eq!(e.dmabuf.size().unwrap() as usize, (lead + 3 * page).next_multiple_of(page));
        }
        Err(e) => {
            assert!(!have, "{e}");
            assert_eq!(e.kind, InvalidOperation, "no /dev/udmabuf: {e}");
            assert!(e.message.contains("udmabuf"), "{e}");
        }
    }
    usm::mem_free(&c, p).unwrap();
    assert_eq!(kind(export::export_mem_alloc(&c, p, &[])), InvalidValue, "freed");

    // Buffers: sub-buffers and USE_HOST_PTR buffers never; others where udmabuf is.
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&c, mem_flags::READ_WRITE, page + 1, std::ptr::null_mut()) }.unwrap();
    assert_eq!(export::buffer_info(&b, info_param::EXPORTABLE).unwrap(), Info::Exportable(have));
    assert_eq!(export::buffer_info(&b, info_param::SIZE).unwrap(), Info::Size(2 * page));
    assert_eq!(export::buffer_info(&b, info_param::OFFSET).unwrap(), Info::Offset(0));
    assert_eq!(kind(export::buffer_info(&b, 0)), InvalidValue);
    let sub = Buffer::create_sub_buffer(&b, mem_flags::READ_WRITE, 0x1220, 0, page).unwrap(); // CL_BUFFER_CREATE_TYPE_REGION
    assert_eq!(export::buffer_info(&sub, info_param::EXPORTABLE).unwrap(), Info::Exportable(false));
    assert_eq!(kind(export::export_buffer(&sub, &[])), InvalidMemObject);
    let mut host = vec![0u8; page];
    // SAFETY: `host` outlives the buffer, which is dropped below.
    let u = unsafe { Buffer::create(&c, mem_flags::USE_HOST_PTR, page, host.as_mut_ptr().cast()) }.unwrap();
    assert_eq!(export::buffer_info(&u, info_param::EXPORTABLE).unwrap(), Info::Exportable(false));
    assert_eq!(kind(export::export_buffer(&u, &[])), InvalidMemObject);
    drop(u);
    assert_eq!(kind(export::export_buffer(&b, &[(1, 1)])), InvalidProperty);
    match export::export_buffer(&b, &[]) {
        Ok(e) => assert_eq!((e.dmabuf.size().unwrap() as usize, e.offset), (2 * page, 0)),
        Err(e) => assert_eq!(e.kind, InvalidOperation, "{e}"),
    }
}
