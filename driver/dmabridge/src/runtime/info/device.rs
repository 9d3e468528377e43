//! `clGetDeviceInfo`, and what it reads of the host for the CPU device.

use crate::error::ClResult;
use crate::runtime::device::{Device, DeviceType};
use crate::runtime::platform::Platform;
use crate::runtime::queue::properties as queue_props;

use super::extensions::{device_extensions, names, EXTENSION_VERSION};
use super::params::{atomic_caps, cache_type, device_param, device_type, exec_capabilities, fp_config, local_mem_type};
use super::platform::driver_version_short;
use super::value::{InfoValue, NameVersion};
use super::{clamp_u32, unknown, OPENCL_VERSION};

/// `MemTotal` of `/proc/meminfo` in bytes (1 GiB if it cannot be read).
fn mem_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(1 << 30, |kib| kib * 1024)
}

/// The CPU's maximum clock in MHz: cpufreq's `cpuinfo_max_freq` (kHz), else
/// the first `cpu MHz` of `/proc/cpuinfo` (virtual machines have no
/// cpufreq), else 0 (unknown).
fn cpu_clock_mhz() -> u32 {
    let cpufreq = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(|khz| khz / 1000);
    let cpuinfo = || {
        std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("cpu MHz")?.split(':').nth(1)?.trim().parse::<f64>().ok())
                .map(|mhz| mhz.round() as u64)
        })
    };
    cpufreq.or_else(cpuinfo).map_or(0, |mhz| u32::try_from(mhz).unwrap_or(u32::MAX))
}

/// CPU 0's largest data or unified cache in sysfs: (line size, size in
/// bytes); (0, 0) if sysfs says nothing.
fn cpu_cache() -> (u32, u64) {
    let read = |dir: &std::path::Path, f: &str| std::fs::read_to_string(dir.join(f)).ok().map(|s| s.trim().to_owned());
    let Ok(entries) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") else { return (0, 0) };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|d| matches!(read(d, "type").as_deref(), Some("Data" | "Unified")))
        .filter_map(|d| {
            let size = read(&d, "size")?;
            let bytes = match size.strip_suffix('K') {
                Some(k) => k.parse::<u64>().ok()? << 10,
                None => match size.strip_suffix('M') {
                    Some(m) => m.parse::<u64>().ok()? << 20,
                    None => size.parse::<u64>().ok()?,
                },
            };
            let line = read(&d, "coherency_line_size").and_then(|l| l.parse::<u32>().ok()).unwrap_or(0);
            Some((line, bytes))
        })
        .max_by_key(|&(_, bytes)| bytes)
        .unwrap_or((0, 0))
}

/// `clGetDeviceInfo`; `CL_INVALID_VALUE` for a parameter not in
/// [`device_param::ALL`].
///
/// Notes on some answers:
/// - `CL_DEVICE_PLATFORM` answers [`InfoValue::Platform`] (the C face maps it
///   to its `cl_platform_id`); there is one platform per process.
/// - `CL_DEVICE_VENDOR_ID` is 0: a software device with no PCI or Khronos
///   vendor id.
/// - `CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS` is 3 (the OpenCL 3.0 minimum) and
///   `CL_DEVICE_MAX_WORK_ITEM_SIZES` three `size_t`s: 1-, 2- and 3-D ranges
///   run ([`NdRange`](crate::runtime::kernel::NdRange)).
/// - No OpenCL C compiler: `EMBEDDED_PROFILE`, compiler and linker not
///   available, no pipes, program-scope globals, IL,
///   sub-groups, printf, on-device queues or generic address space (every
///   limit of those is 0), no double or half (their vector widths and
///   `*_FP_CONFIG` are 0).
/// - No OpenCL C at all, so none is claimed: `CL_DEVICE_OPENCL_C_ALL_VERSIONS`
///   and `CL_DEVICE_OPENCL_C_FEATURES` are empty (OpenCL 3.0 allows both
///   for a device that does not compile OpenCL C), and
///   `CL_DEVICE_OPENCL_C_VERSION`, which must answer a string, is
///   [`OPENCL_C_VERSION`](super::OPENCL_C_VERSION): `OpenCL C 1.0`, the one version that asks for
///   no extension (a device of OpenCL C 1.1 or later must list
///   `cl_khr_global_int32_base_atomics` and the other OpenCL C 1.1
///   extensions, language features it cannot run), written so that
///   harnesses that parse `OpenCL C <major>.<minor>` for every device (the
///   Khronos CTS among them) still can. There being no compiler is said by
///   `CL_DEVICE_COMPILER_AVAILABLE` (false) and `clBuildProgram`
///   (`CL_COMPILER_NOT_AVAILABLE`).
/// - `CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED` is `"v0000-01-01-00"`:
///   the format of a CTS version, dated before any release, since no
///   conformance run has been submitted.
/// - CPU device: `CL_DEVICE_MAX_CLOCK_FREQUENCY` from cpufreq's
///   `cpuinfo_max_freq`, else `/proc/cpuinfo`'s `cpu MHz` (0 if neither
///   exists); the global memory cache is the largest data/unified cache of
///   CPU 0 in sysfs; every atomic order and scope (the host's coherent
///   memory: kernels are host code). Other devices (DMA engines): clock 0
///   (unknown), no cache, the atomic capabilities OpenCL 3.0 requires.
/// - `CL_DEVICE_PARTITION_PROPERTIES` is `{0}` (cannot be partitioned),
///   `CL_DEVICE_PARTITION_TYPE` empty (a root device).
///
/// ```
/// use dmabridge::runtime::info::{self, device_param, device_type, InfoValue};
/// use dmabridge::runtime::platform::Platform;
/// let cpu = Platform::get().cpu();
/// assert_eq!(info::device_info(cpu, device_param::TYPE)?, InfoValue::Bits(device_type::CPU));
/// let InfoValue::Str(kernels) = info::device_info(cpu, device_param::BUILT_IN_KERNELS)? else { unreachable!() };
/// assert!(kernels.contains("copy_bytes"));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn device_info(device: &Device, param: u32) -> ClResult<InfoValue> {
    use device_param::*;
    let cpu = device.device_type == DeviceType::Cpu;
    let images = crate::runtime::image::image_limits(device);
    Ok(match param {
        TYPE => InfoValue::Bits(match device.device_type {
            DeviceType::Cpu => device_type::CPU,
            DeviceType::Accelerator => device_type::ACCELERATOR,
        }),
        VENDOR_ID => InfoValue::U32(0),
        MAX_COMPUTE_UNITS => InfoValue::U32(device.compute_units),
        MAX_WORK_ITEM_DIMENSIONS => InfoValue::U32(super::MAX_WORK_ITEM_DIMENSIONS),
        MAX_WORK_GROUP_SIZE => InfoValue::Usize(super::MAX_WORK_GROUP_SIZE),
        MAX_WORK_ITEM_SIZES => InfoValue::Sizes(super::MAX_WORK_ITEM_SIZES.to_vec()),
        PREFERRED_VECTOR_WIDTH_CHAR
        | PREFERRED_VECTOR_WIDTH_SHORT
        | PREFERRED_VECTOR_WIDTH_INT
        | PREFERRED_VECTOR_WIDTH_LONG
        | PREFERRED_VECTOR_WIDTH_FLOAT
        | NATIVE_VECTOR_WIDTH_CHAR
        | NATIVE_VECTOR_WIDTH_SHORT
        | NATIVE_VECTOR_WIDTH_INT
        | NATIVE_VECTOR_WIDTH_LONG
        | NATIVE_VECTOR_WIDTH_FLOAT => InfoValue::U32(1),
        // No cl_khr_fp64 / cl_khr_fp16: the spec asks for 0.
        PREFERRED_VECTOR_WIDTH_DOUBLE
        | PREFERRED_VECTOR_WIDTH_HALF
        | NATIVE_VECTOR_WIDTH_DOUBLE
        | NATIVE_VECTOR_WIDTH_HALF => InfoValue::U32(0),
        ADDRESS_BITS => InfoValue::U32(usize::BITS),
        MAX_MEM_ALLOC_SIZE => InfoValue::U64(device.max_mem_alloc_size),
        MAX_CLOCK_FREQUENCY => InfoValue::U32(if cpu { cpu_clock_mhz() } else { 0 }),
        // Images (issue 22) on the devices `image_limits` names: the
        // full-profile minimums of the kernel argument counts; pitches and
        // base addresses need no alignment beyond a pixel (linear storage
        // that the CPU reads row by row). Elsewhere every limit is 0.
        MAX_READ_IMAGE_ARGS => InfoValue::U32(if images.is_some() { 128 } else { 0 }),
        MAX_WRITE_IMAGE_ARGS | MAX_READ_WRITE_IMAGE_ARGS => InfoValue::U32(if images.is_some() { 64 } else { 0 }),
        MAX_SAMPLERS => InfoValue::U32(if images.is_some() { 16 } else { 0 }),
        IMAGE_PITCH_ALIGNMENT | IMAGE_BASE_ADDRESS_ALIGNMENT => InfoValue::U32(u32::from(images.is_some())),
        IMAGE2D_MAX_WIDTH | IMAGE2D_MAX_HEIGHT => InfoValue::Usize(images.map_or(0, |l| l.max_2d)),
        IMAGE3D_MAX_WIDTH | IMAGE3D_MAX_HEIGHT | IMAGE3D_MAX_DEPTH => InfoValue::Usize(images.map_or(0, |l| l.max_3d)),
        IMAGE_MAX_BUFFER_SIZE => InfoValue::Usize(images.map_or(0, |l| l.max_buffer)),
        IMAGE_MAX_ARRAY_SIZE => InfoValue::Usize(images.map_or(0, |l| l.max_array)),
        IMAGE_SUPPORT => InfoValue::Bool(images.is_some()),
        // No pipes: every limit is 0 (OpenCL 3.0).
        MAX_PIPE_ARGS
        | PIPE_MAX_ACTIVE_RESERVATIONS
        | PIPE_MAX_PACKET_SIZE
        | MAX_NUM_SUB_GROUPS
        | QUEUE_ON_DEVICE_PREFERRED_SIZE
        | QUEUE_ON_DEVICE_MAX_SIZE
        | MAX_ON_DEVICE_QUEUES
        | MAX_ON_DEVICE_EVENTS => InfoValue::U32(0),
        MAX_GLOBAL_VARIABLE_SIZE | GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE | PRINTF_BUFFER_SIZE => InfoValue::Usize(0),
        ERROR_CORRECTION_SUPPORT
        | COMPILER_AVAILABLE
        | LINKER_AVAILABLE
        | PIPE_SUPPORT
        | GENERIC_ADDRESS_SPACE_SUPPORT
        | WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT
        | SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS => InfoValue::Bool(false),
        // Work-groups only split the range: any local size divides it.
        NON_UNIFORM_WORK_GROUP_SUPPORT => InfoValue::Bool(true),
        // No interop with other APIs' synchronisation: the application's.
        PREFERRED_INTEROP_USER_SYNC => InfoValue::Bool(true),
        // The largest built-in type (long16), as for the USM/SVM alignment.
        MIN_DATA_TYPE_ALIGN_SIZE => InfoValue::U32(clamp_u32(device.max_alignment as usize)),
        SINGLE_FP_CONFIG => InfoValue::Bits(if cpu {
            fp_config::DENORM | fp_config::INF_NAN | fp_config::ROUND_TO_NEAREST
        } else {
            fp_config::INF_NAN | fp_config::ROUND_TO_NEAREST
        }),
        DOUBLE_FP_CONFIG | HALF_FP_CONFIG => InfoValue::Bits(0),
        GLOBAL_MEM_CACHE_TYPE => {
            InfoValue::U32(if cpu && cpu_cache().1 > 0 { cache_type::READ_WRITE } else { cache_type::NONE })
        }
        GLOBAL_MEM_CACHELINE_SIZE => InfoValue::U32(if cpu { cpu_cache().0 } else { 0 }),
        GLOBAL_MEM_CACHE_SIZE => InfoValue::U64(if cpu { cpu_cache().1 } else { 0 }),
        // Constant and local memory are global memory (the full-profile
        // minimums).
        MAX_CONSTANT_BUFFER_SIZE => InfoValue::U64(64 << 10),
        MAX_CONSTANT_ARGS => InfoValue::U32(8),
        LOCAL_MEM_TYPE => InfoValue::U32(local_mem_type::GLOBAL),
        LOCAL_MEM_SIZE => InfoValue::U64(32 << 10),
        PARTITION_PROPERTIES => InfoValue::Properties(vec![0]),
        PARTITION_AFFINITY_DOMAIN => InfoValue::Bits(0),
        PARTITION_TYPE => InfoValue::Properties(Vec::new()),
        QUEUE_ON_DEVICE_PROPERTIES | DEVICE_ENQUEUE_CAPABILITIES => InfoValue::Bits(0),
        // 0: aligned to the natural size of the type.
        PREFERRED_PLATFORM_ATOMIC_ALIGNMENT | PREFERRED_GLOBAL_ATOMIC_ALIGNMENT | PREFERRED_LOCAL_ATOMIC_ALIGNMENT => {
            InfoValue::U32(0)
        }
        ATOMIC_MEMORY_CAPABILITIES | ATOMIC_FENCE_CAPABILITIES => {
            use atomic_caps::*;
            InfoValue::Bits(match (cpu, param == ATOMIC_FENCE_CAPABILITIES) {
                (true, fence) => {
                    ORDER_RELAXED
                        | ORDER_ACQ_REL
                        | ORDER_SEQ_CST
                        | if fence { SCOPE_WORK_ITEM } else { 0 }
                        | SCOPE_WORK_GROUP
                        | SCOPE_DEVICE
                        | SCOPE_ALL_DEVICES
                }
                // The minimums of OpenCL 3.0.
                (false, false) => ORDER_RELAXED | SCOPE_WORK_GROUP,
                (false, true) => ORDER_RELAXED | ORDER_ACQ_REL | SCOPE_WORK_GROUP,
            })
        }
        PREFERRED_WORK_GROUP_SIZE_MULTIPLE => InfoValue::Usize(1),
        IL_VERSION => InfoValue::Str(String::new()),
        ILS_WITH_VERSION | OPENCL_C_FEATURES => InfoValue::NameVersions(Vec::new()),
        // No OpenCL C compiler: no version of the language (see above).
        OPENCL_C_ALL_VERSIONS => InfoValue::NameVersions(Vec::new()),
        LATEST_CONFORMANCE_VERSION_PASSED => InfoValue::Str("v0000-01-01-00".into()),
        EXTENSIONS_WITH_VERSION => InfoValue::NameVersions(device_extensions(device)),
        BUILT_IN_KERNELS_WITH_VERSION => InfoValue::NameVersions(
            crate::runtime::kernel::builtin_kernel_names(device)
                .iter()
                .map(|name| NameVersion::new(name, EXTENSION_VERSION))
                .collect(),
        ),
        MAX_PARAMETER_SIZE => InfoValue::Usize(super::MAX_PARAMETER_SIZE),
        MEM_BASE_ADDR_ALIGN => InfoValue::U32(clamp_u32(device.max_alignment as usize * 8)),
        // A device with memory of its own (a BAR device) has that much; one
        // behind an IOMMU (edu) reaches what its DMA window holds at once.
        GLOBAL_MEM_SIZE => InfoValue::U64(match (device.local_memory(), device.dma_domain()) {
            (Some(m), _) => m.size() as u64,
            (None, Some(d)) => mem_total().min(d.dma_mask().saturating_add(1)),
            (None, None) => mem_total(),
        }),
        PROFILING_TIMER_RESOLUTION => InfoValue::Usize(1),
        ENDIAN_LITTLE => InfoValue::Bool(cfg!(target_endian = "little")),
        AVAILABLE => InfoValue::Bool(device.available()),
        EXECUTION_CAPABILITIES => InfoValue::Bits(exec_capabilities::KERNEL | exec_capabilities::NATIVE_KERNEL),
        QUEUE_PROPERTIES => InfoValue::Bits(queue_props::OUT_OF_ORDER_EXEC_MODE_ENABLE | queue_props::PROFILING_ENABLE),
        NAME => InfoValue::Str(device.name.clone()),
        VENDOR => InfoValue::Str("dmabridge".into()),
        DRIVER_VERSION => InfoValue::Str(env!("CARGO_PKG_VERSION").into()),
        PROFILE => InfoValue::Str(super::PROFILE.into()),
        VERSION => InfoValue::Str(format!("OpenCL 3.0 dmabridge {}", driver_version_short())),
        EXTENSIONS => InfoValue::Str(names(&device_extensions(device), " ")),
        PLATFORM => InfoValue::Platform(Platform::get()),
        HOST_UNIFIED_MEMORY => InfoValue::Bool(device.host_unified_memory),
        OPENCL_C_VERSION => InfoValue::Str(super::OPENCL_C_VERSION.into()),
        BUILT_IN_KERNELS => InfoValue::Str(crate::runtime::kernel::builtin_kernels_string(device)),
        PARENT_DEVICE => InfoValue::Device(None),
        PARTITION_MAX_SUB_DEVICES => InfoValue::U32(0),
        // Root devices: always 1.
        REFERENCE_COUNT => InfoValue::U32(1),
        SVM_CAPABILITIES => InfoValue::Bits(device.svm),
        NUMERIC_VERSION => InfoValue::U32(OPENCL_VERSION),
        HOST_MEM_CAPABILITIES_INTEL => InfoValue::Bits(device.usm.host),
        DEVICE_MEM_CAPABILITIES_INTEL => InfoValue::Bits(device.usm.device),
        SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL => InfoValue::Bits(device.usm.single_device_shared),
        CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL => InfoValue::Bits(device.usm.cross_device_shared),
        SHARED_SYSTEM_MEM_CAPABILITIES_INTEL => InfoValue::Bits(device.usm.shared_system),
        _ => return Err(unknown("cl_device_info", param)),
    })
}
