//! The `clGet{Platform,Device,Context,CommandQueue,Event}Info` queries: what
//! each object answers, as a typed [`InfoValue`] that also knows its C
//! representation (size and bytes), and [`copy_out`], the OpenCL
//! `param_value` / `param_value_size_ret` rule over it.
//!
//! Object handles ([`InfoValue::DeviceIds`], [`InfoValue::Device`],
//! [`InfoValue::Context`], [`InfoValue::Queue`], [`InfoValue::Platform`]) are
//! answered as the Rust objects: the C face maps them to its `cl_*` handles,
//! so [`InfoValue::write`] refuses the non-null ones.
//!
//! ```
//! use dmabridge::runtime::info::{self, copy_out, platform_param, InfoValue};
//! let v = info::platform_info(platform_param::NAME)?;
//! assert_eq!(v, InfoValue::Str("dmabridge".into()));
//! let mut buf = [0xffu8; 16];
//! assert_eq!(copy_out(&v, Some(&mut buf))?, 10);
//! assert_eq!(&buf[..10], b"dmabridge\0");
//! assert_eq!(copy_out(&v, None)?, 10);
//! # Ok::<(), dmabridge::error::ClError>(())
//! ```

use std::mem::size_of;
use std::sync::Arc;

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};

use super::buffer::Buffer;
use super::context::Context;
use super::device::{Device, DeviceType};
use super::event::Event;
use super::platform::Platform;
use super::queue::{properties as queue_props, Queue};

/// `CL_MAKE_VERSION(major, minor, patch)` (`cl_version`).
///
/// ```
/// use dmabridge::runtime::info::{make_version, OPENCL_VERSION};
/// assert_eq!(make_version(3, 0, 0), OPENCL_VERSION);
/// assert_eq!(make_version(1, 2, 0) >> 22, 1);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub const fn make_version(major: u32, minor: u32, patch: u32) -> u32 {
    (major << 22) | ((minor & 0x3ff) << 12) | (patch & 0xfff)
}

/// The OpenCL version of the platform and its devices, `CL_MAKE_VERSION(3, 0, 0)`.
pub const OPENCL_VERSION: u32 = make_version(3, 0, 0);

/// `cl_platform_info` values for [`platform_info`].
pub mod platform_param {
    /// `CL_PLATFORM_PROFILE`.
    pub const PROFILE: u32 = 0x0900;
    /// `CL_PLATFORM_VERSION`.
    pub const VERSION: u32 = 0x0901;
    /// `CL_PLATFORM_NAME`.
    pub const NAME: u32 = 0x0902;
    /// `CL_PLATFORM_VENDOR`.
    pub const VENDOR: u32 = 0x0903;
    /// `CL_PLATFORM_EXTENSIONS`.
    pub const EXTENSIONS: u32 = 0x0904;
    /// `CL_PLATFORM_HOST_TIMER_RESOLUTION`.
    pub const HOST_TIMER_RESOLUTION: u32 = 0x0905;
    /// `CL_PLATFORM_NUMERIC_VERSION`.
    pub const NUMERIC_VERSION: u32 = 0x0906;
    /// `CL_PLATFORM_EXTENSIONS_WITH_VERSION` (`cl_name_version[]`).
    pub const EXTENSIONS_WITH_VERSION: u32 = 0x0907;
    /// `CL_PLATFORM_ICD_SUFFIX_KHR`.
    pub const ICD_SUFFIX_KHR: u32 = 0x0920;
    /// Every parameter [`platform_info`](super::platform_info) answers.
    pub const ALL: &[u32] = &[
        PROFILE,
        VERSION,
        NAME,
        VENDOR,
        EXTENSIONS,
        HOST_TIMER_RESOLUTION,
        NUMERIC_VERSION,
        EXTENSIONS_WITH_VERSION,
        ICD_SUFFIX_KHR,
    ];
}

/// `cl_device_info` values for [`device_info`].
pub mod device_param {
    #![allow(missing_docs)]
    pub const TYPE: u32 = 0x1000;
    pub const VENDOR_ID: u32 = 0x1001;
    pub const MAX_COMPUTE_UNITS: u32 = 0x1002;
    pub const MAX_WORK_ITEM_DIMENSIONS: u32 = 0x1003;
    pub const MAX_WORK_GROUP_SIZE: u32 = 0x1004;
    pub const MAX_WORK_ITEM_SIZES: u32 = 0x1005;
    pub const PREFERRED_VECTOR_WIDTH_CHAR: u32 = 0x1006;
    pub const PREFERRED_VECTOR_WIDTH_SHORT: u32 = 0x1007;
    pub const PREFERRED_VECTOR_WIDTH_INT: u32 = 0x1008;
    pub const PREFERRED_VECTOR_WIDTH_LONG: u32 = 0x1009;
    pub const PREFERRED_VECTOR_WIDTH_FLOAT: u32 = 0x100A;
    pub const PREFERRED_VECTOR_WIDTH_DOUBLE: u32 = 0x100B;
    pub const MAX_CLOCK_FREQUENCY: u32 = 0x100C;
    pub const ADDRESS_BITS: u32 = 0x100D;
    pub const MAX_READ_IMAGE_ARGS: u32 = 0x100E;
    pub const MAX_WRITE_IMAGE_ARGS: u32 = 0x100F;
    pub const MAX_MEM_ALLOC_SIZE: u32 = 0x1010;
    pub const IMAGE2D_MAX_WIDTH: u32 = 0x1011;
    pub const IMAGE2D_MAX_HEIGHT: u32 = 0x1012;
    pub const IMAGE3D_MAX_WIDTH: u32 = 0x1013;
    pub const IMAGE3D_MAX_HEIGHT: u32 = 0x1014;
    pub const IMAGE3D_MAX_DEPTH: u32 = 0x1015;
    pub const IMAGE_SUPPORT: u32 = 0x1016;
    pub const MAX_PARAMETER_SIZE: u32 = 0x1017;
    pub const MAX_SAMPLERS: u32 = 0x1018;
    pub const MEM_BASE_ADDR_ALIGN: u32 = 0x1019;
    pub const MIN_DATA_TYPE_ALIGN_SIZE: u32 = 0x101A;
    pub const SINGLE_FP_CONFIG: u32 = 0x101B;
    pub const GLOBAL_MEM_CACHE_TYPE: u32 = 0x101C;
    pub const GLOBAL_MEM_CACHELINE_SIZE: u32 = 0x101D;
    pub const GLOBAL_MEM_CACHE_SIZE: u32 = 0x101E;
    pub const GLOBAL_MEM_SIZE: u32 = 0x101F;
    pub const MAX_CONSTANT_BUFFER_SIZE: u32 = 0x1020;
    pub const MAX_CONSTANT_ARGS: u32 = 0x1021;
    pub const LOCAL_MEM_TYPE: u32 = 0x1022;
    pub const LOCAL_MEM_SIZE: u32 = 0x1023;
    pub const ERROR_CORRECTION_SUPPORT: u32 = 0x1024;
    pub const PROFILING_TIMER_RESOLUTION: u32 = 0x1025;
    pub const ENDIAN_LITTLE: u32 = 0x1026;
    pub const AVAILABLE: u32 = 0x1027;
    pub const COMPILER_AVAILABLE: u32 = 0x1028;
    pub const EXECUTION_CAPABILITIES: u32 = 0x1029;
    /// Also `CL_DEVICE_QUEUE_ON_HOST_PROPERTIES` (same value).
    pub const QUEUE_PROPERTIES: u32 = 0x102A;
    pub const QUEUE_ON_HOST_PROPERTIES: u32 = 0x102A;
    pub const NAME: u32 = 0x102B;
    pub const VENDOR: u32 = 0x102C;
    pub const DRIVER_VERSION: u32 = 0x102D;
    pub const PROFILE: u32 = 0x102E;
    pub const VERSION: u32 = 0x102F;
    pub const EXTENSIONS: u32 = 0x1030;
    pub const PLATFORM: u32 = 0x1031;
    pub const DOUBLE_FP_CONFIG: u32 = 0x1032;
    pub const HALF_FP_CONFIG: u32 = 0x1033;
    pub const PREFERRED_VECTOR_WIDTH_HALF: u32 = 0x1034;
    pub const HOST_UNIFIED_MEMORY: u32 = 0x1035;
    pub const NATIVE_VECTOR_WIDTH_CHAR: u32 = 0x1036;
    pub const NATIVE_VECTOR_WIDTH_SHORT: u32 = 0x1037;
    pub const NATIVE_VECTOR_WIDTH_INT: u32 = 0x1038;
    pub const NATIVE_VECTOR_WIDTH_LONG: u32 = 0x1039;
    pub const NATIVE_VECTOR_WIDTH_FLOAT: u32 = 0x103A;
    pub const NATIVE_VECTOR_WIDTH_DOUBLE: u32 = 0x103B;
    pub const NATIVE_VECTOR_WIDTH_HALF: u32 = 0x103C;
    pub const OPENCL_C_VERSION: u32 = 0x103D;
    pub const LINKER_AVAILABLE: u32 = 0x103E;
    pub const BUILT_IN_KERNELS: u32 = 0x103F;
    pub const IMAGE_MAX_BUFFER_SIZE: u32 = 0x1040;
    pub const IMAGE_MAX_ARRAY_SIZE: u32 = 0x1041;
    pub const PARENT_DEVICE: u32 = 0x1042;
    pub const PARTITION_MAX_SUB_DEVICES: u32 = 0x1043;
    pub const PARTITION_PROPERTIES: u32 = 0x1044;
    pub const PARTITION_AFFINITY_DOMAIN: u32 = 0x1045;
    pub const PARTITION_TYPE: u32 = 0x1046;
    pub const REFERENCE_COUNT: u32 = 0x1047;
    pub const PREFERRED_INTEROP_USER_SYNC: u32 = 0x1048;
    pub const PRINTF_BUFFER_SIZE: u32 = 0x1049;
    pub const IMAGE_PITCH_ALIGNMENT: u32 = 0x104A;
    pub const IMAGE_BASE_ADDRESS_ALIGNMENT: u32 = 0x104B;
    pub const MAX_READ_WRITE_IMAGE_ARGS: u32 = 0x104C;
    pub const MAX_GLOBAL_VARIABLE_SIZE: u32 = 0x104D;
    pub const QUEUE_ON_DEVICE_PROPERTIES: u32 = 0x104E;
    pub const QUEUE_ON_DEVICE_PREFERRED_SIZE: u32 = 0x104F;
    pub const QUEUE_ON_DEVICE_MAX_SIZE: u32 = 0x1050;
    pub const MAX_ON_DEVICE_QUEUES: u32 = 0x1051;
    pub const MAX_ON_DEVICE_EVENTS: u32 = 0x1052;
    pub const SVM_CAPABILITIES: u32 = 0x1053;
    pub const GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE: u32 = 0x1054;
    pub const MAX_PIPE_ARGS: u32 = 0x1055;
    pub const PIPE_MAX_ACTIVE_RESERVATIONS: u32 = 0x1056;
    pub const PIPE_MAX_PACKET_SIZE: u32 = 0x1057;
    pub const PREFERRED_PLATFORM_ATOMIC_ALIGNMENT: u32 = 0x1058;
    pub const PREFERRED_GLOBAL_ATOMIC_ALIGNMENT: u32 = 0x1059;
    pub const PREFERRED_LOCAL_ATOMIC_ALIGNMENT: u32 = 0x105A;
    pub const IL_VERSION: u32 = 0x105B;
    pub const MAX_NUM_SUB_GROUPS: u32 = 0x105C;
    pub const SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS: u32 = 0x105D;
    pub const NUMERIC_VERSION: u32 = 0x105E;
    pub const EXTENSIONS_WITH_VERSION: u32 = 0x1060;
    pub const ILS_WITH_VERSION: u32 = 0x1061;
    pub const BUILT_IN_KERNELS_WITH_VERSION: u32 = 0x1062;
    pub const ATOMIC_MEMORY_CAPABILITIES: u32 = 0x1063;
    pub const ATOMIC_FENCE_CAPABILITIES: u32 = 0x1064;
    pub const NON_UNIFORM_WORK_GROUP_SUPPORT: u32 = 0x1065;
    pub const OPENCL_C_ALL_VERSIONS: u32 = 0x1066;
    pub const PREFERRED_WORK_GROUP_SIZE_MULTIPLE: u32 = 0x1067;
    pub const WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT: u32 = 0x1068;
    pub const GENERIC_ADDRESS_SPACE_SUPPORT: u32 = 0x1069;
    pub const OPENCL_C_FEATURES: u32 = 0x106F;
    pub const DEVICE_ENQUEUE_CAPABILITIES: u32 = 0x1070;
    pub const PIPE_SUPPORT: u32 = 0x1071;
    pub const LATEST_CONFORMANCE_VERSION_PASSED: u32 = 0x1072;
    pub const HOST_MEM_CAPABILITIES_INTEL: u32 = 0x4190;
    pub const DEVICE_MEM_CAPABILITIES_INTEL: u32 = 0x4191;
    pub const SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL: u32 = 0x4192;
    pub const CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL: u32 = 0x4193;
    pub const SHARED_SYSTEM_MEM_CAPABILITIES_INTEL: u32 = 0x4194;
    /// Every parameter [`device_info`](super::device_info) answers.
    pub const ALL: &[u32] = &[
        TYPE,
        VENDOR_ID,
        MAX_COMPUTE_UNITS,
        MAX_WORK_ITEM_DIMENSIONS,
        MAX_WORK_GROUP_SIZE,
        MAX_WORK_ITEM_SIZES,
        PREFERRED_VECTOR_WIDTH_CHAR,
        PREFERRED_VECTOR_WIDTH_SHORT,
        PREFERRED_VECTOR_WIDTH_INT,
        PREFERRED_VECTOR_WIDTH_LONG,
        PREFERRED_VECTOR_WIDTH_FLOAT,
        PREFERRED_VECTOR_WIDTH_DOUBLE,
        MAX_CLOCK_FREQUENCY,
        ADDRESS_BITS,
        MAX_READ_IMAGE_ARGS,
        MAX_WRITE_IMAGE_ARGS,
        MAX_MEM_ALLOC_SIZE,
        IMAGE2D_MAX_WIDTH,
        IMAGE2D_MAX_HEIGHT,
        IMAGE3D_MAX_WIDTH,
        IMAGE3D_MAX_HEIGHT,
        IMAGE3D_MAX_DEPTH,
        IMAGE_SUPPORT,
        MAX_PARAMETER_SIZE,
        MAX_SAMPLERS,
        MEM_BASE_ADDR_ALIGN,
        MIN_DATA_TYPE_ALIGN_SIZE,
        SINGLE_FP_CONFIG,
        GLOBAL_MEM_CACHE_TYPE,
        GLOBAL_MEM_CACHELINE_SIZE,
        GLOBAL_MEM_CACHE_SIZE,
        GLOBAL_MEM_SIZE,
        MAX_CONSTANT_BUFFER_SIZE,
        MAX_CONSTANT_ARGS,
        LOCAL_MEM_TYPE,
        LOCAL_MEM_SIZE,
        ERROR_CORRECTION_SUPPORT,
        PROFILING_TIMER_RESOLUTION,
        ENDIAN_LITTLE,
        AVAILABLE,
        COMPILER_AVAILABLE,
        EXECUTION_CAPABILITIES,
        QUEUE_PROPERTIES,
        NAME,
        VENDOR,
        DRIVER_VERSION,
        PROFILE,
        VERSION,
        EXTENSIONS,
        PLATFORM,
        DOUBLE_FP_CONFIG,
        HALF_FP_CONFIG,
        PREFERRED_VECTOR_WIDTH_HALF,
        HOST_UNIFIED_MEMORY,
        NATIVE_VECTOR_WIDTH_CHAR,
        NATIVE_VECTOR_WIDTH_SHORT,
        NATIVE_VECTOR_WIDTH_INT,
        NATIVE_VECTOR_WIDTH_LONG,
        NATIVE_VECTOR_WIDTH_FLOAT,
        NATIVE_VECTOR_WIDTH_DOUBLE,
        NATIVE_VECTOR_WIDTH_HALF,
        OPENCL_C_VERSION,
        LINKER_AVAILABLE,
        BUILT_IN_KERNELS,
        IMAGE_MAX_BUFFER_SIZE,
        IMAGE_MAX_ARRAY_SIZE,
        PARENT_DEVICE,
        PARTITION_MAX_SUB_DEVICES,
        PARTITION_PROPERTIES,
        PARTITION_AFFINITY_DOMAIN,
        PARTITION_TYPE,
        REFERENCE_COUNT,
        PREFERRED_INTEROP_USER_SYNC,
        PRINTF_BUFFER_SIZE,
        IMAGE_PITCH_ALIGNMENT,
        IMAGE_BASE_ADDRESS_ALIGNMENT,
        MAX_READ_WRITE_IMAGE_ARGS,
        MAX_GLOBAL_VARIABLE_SIZE,
        QUEUE_ON_DEVICE_PROPERTIES,
        QUEUE_ON_DEVICE_PREFERRED_SIZE,
        QUEUE_ON_DEVICE_MAX_SIZE,
        MAX_ON_DEVICE_QUEUES,
        MAX_ON_DEVICE_EVENTS,
        SVM_CAPABILITIES,
        GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE,
        MAX_PIPE_ARGS,
        PIPE_MAX_ACTIVE_RESERVATIONS,
        PIPE_MAX_PACKET_SIZE,
        PREFERRED_PLATFORM_ATOMIC_ALIGNMENT,
        PREFERRED_GLOBAL_ATOMIC_ALIGNMENT,
        PREFERRED_LOCAL_ATOMIC_ALIGNMENT,
        IL_VERSION,
        MAX_NUM_SUB_GROUPS,
        SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS,
        NUMERIC_VERSION,
        EXTENSIONS_WITH_VERSION,
        ILS_WITH_VERSION,
        BUILT_IN_KERNELS_WITH_VERSION,
        ATOMIC_MEMORY_CAPABILITIES,
        ATOMIC_FENCE_CAPABILITIES,
        NON_UNIFORM_WORK_GROUP_SUPPORT,
        OPENCL_C_ALL_VERSIONS,
        PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
        WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT,
        GENERIC_ADDRESS_SPACE_SUPPORT,
        OPENCL_C_FEATURES,
        DEVICE_ENQUEUE_CAPABILITIES,
        PIPE_SUPPORT,
        LATEST_CONFORMANCE_VERSION_PASSED,
        HOST_MEM_CAPABILITIES_INTEL,
        DEVICE_MEM_CAPABILITIES_INTEL,
        SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL,
        CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL,
        SHARED_SYSTEM_MEM_CAPABILITIES_INTEL,
    ];
}

/// `cl_context_info` values for [`context_info`].
pub mod context_param {
    /// `CL_CONTEXT_REFERENCE_COUNT`.
    pub const REFERENCE_COUNT: u32 = 0x1080;
    /// `CL_CONTEXT_DEVICES`.
    pub const DEVICES: u32 = 0x1081;
    /// `CL_CONTEXT_PROPERTIES`.
    pub const PROPERTIES: u32 = 0x1082;
    /// `CL_CONTEXT_NUM_DEVICES`.
    pub const NUM_DEVICES: u32 = 0x1083;
    /// Every parameter [`context_info`](super::context_info) answers.
    pub const ALL: &[u32] = &[REFERENCE_COUNT, DEVICES, PROPERTIES, NUM_DEVICES];
}

/// `cl_command_queue_info` values for [`queue_info`].
pub mod queue_param {
    /// `CL_QUEUE_CONTEXT`.
    pub const CONTEXT: u32 = 0x1090;
    /// `CL_QUEUE_DEVICE`.
    pub const DEVICE: u32 = 0x1091;
    /// `CL_QUEUE_REFERENCE_COUNT`.
    pub const REFERENCE_COUNT: u32 = 0x1092;
    /// `CL_QUEUE_PROPERTIES` (also the property name in a properties array).
    pub const PROPERTIES: u32 = 0x1093;
    /// `CL_QUEUE_SIZE` (on-device queues only).
    pub const SIZE: u32 = 0x1094;
    /// `CL_QUEUE_DEVICE_DEFAULT`.
    pub const DEVICE_DEFAULT: u32 = 0x1095;
    /// `CL_QUEUE_PROPERTIES_ARRAY`.
    pub const PROPERTIES_ARRAY: u32 = 0x1098;
    /// Every parameter [`queue_info`](super::queue_info) answers (`SIZE`
    /// answers with `CL_INVALID_COMMAND_QUEUE`, as the spec says for host queues).
    pub const ALL: &[u32] = &[CONTEXT, DEVICE, REFERENCE_COUNT, PROPERTIES, DEVICE_DEFAULT, PROPERTIES_ARRAY];
}

/// `cl_event_info` values for [`event_info`].
pub mod event_param {
    /// `CL_EVENT_COMMAND_QUEUE`.
    pub const COMMAND_QUEUE: u32 = 0x11D0;
    /// `CL_EVENT_COMMAND_TYPE`.
    pub const COMMAND_TYPE: u32 = 0x11D1;
    /// `CL_EVENT_REFERENCE_COUNT`.
    pub const REFERENCE_COUNT: u32 = 0x11D2;
    /// `CL_EVENT_COMMAND_EXECUTION_STATUS`.
    pub const COMMAND_EXECUTION_STATUS: u32 = 0x11D3;
    /// `CL_EVENT_CONTEXT`.
    pub const CONTEXT: u32 = 0x11D4;
    /// Every parameter [`event_info`](super::event_info) answers.
    pub const ALL: &[u32] = &[COMMAND_QUEUE, COMMAND_TYPE, REFERENCE_COUNT, COMMAND_EXECUTION_STATUS, CONTEXT];
}

/// `cl_device_type` bits.
pub mod device_type {
    /// `CL_DEVICE_TYPE_CPU`.
    pub const CPU: u64 = 1 << 1;
    /// `CL_DEVICE_TYPE_ACCELERATOR`.
    pub const ACCELERATOR: u64 = 1 << 3;
}

/// `cl_device_exec_capabilities` bits.
pub mod exec_capabilities {
    /// `CL_EXEC_KERNEL`.
    pub const KERNEL: u64 = 1 << 0;
    /// `CL_EXEC_NATIVE_KERNEL`.
    pub const NATIVE_KERNEL: u64 = 1 << 1;
}

/// `cl_device_fp_config` bits.
pub mod fp_config {
    /// `CL_FP_DENORM`.
    pub const DENORM: u64 = 1 << 0;
    /// `CL_FP_INF_NAN`.
    pub const INF_NAN: u64 = 1 << 1;
    /// `CL_FP_ROUND_TO_NEAREST`.
    pub const ROUND_TO_NEAREST: u64 = 1 << 2;
}

/// `cl_device_atomic_capabilities` bits.
pub mod atomic_caps {
    /// `CL_DEVICE_ATOMIC_ORDER_RELAXED`.
    pub const ORDER_RELAXED: u64 = 1 << 0;
    /// `CL_DEVICE_ATOMIC_ORDER_ACQ_REL`.
    pub const ORDER_ACQ_REL: u64 = 1 << 1;
    /// `CL_DEVICE_ATOMIC_ORDER_SEQ_CST`.
    pub const ORDER_SEQ_CST: u64 = 1 << 2;
    /// `CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM` (fences only).
    pub const SCOPE_WORK_ITEM: u64 = 1 << 3;
    /// `CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP`.
    pub const SCOPE_WORK_GROUP: u64 = 1 << 4;
    /// `CL_DEVICE_ATOMIC_SCOPE_DEVICE`.
    pub const SCOPE_DEVICE: u64 = 1 << 5;
    /// `CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES`.
    pub const SCOPE_ALL_DEVICES: u64 = 1 << 6;
}

/// `cl_device_mem_cache_type` values.
pub mod cache_type {
    /// `CL_NONE`.
    pub const NONE: u32 = 0;
    /// `CL_READ_WRITE_CACHE`.
    pub const READ_WRITE: u32 = 2;
}

/// `cl_device_local_mem_type` values.
pub mod local_mem_type {
    /// `CL_GLOBAL`: local memory is carved out of global memory.
    pub const GLOBAL: u32 = 2;
}

/// The version every extension and built-in kernel of dmabridge reports
/// in the `*_WITH_VERSION` queries (1.0.0: the first revision).
pub const EXTENSION_VERSION: u32 = make_version(1, 0, 0);

/// The dmabridge extension that exports USM/SVM allocations and buffers as
/// dma-buf fds (`include/CL/cl_dmabridge.h`).
pub const DMA_BUF_EXPORT_EXTENSION: &str = "cl_dmabridge_dma_buf_export";

/// The platform's extensions (`CL_PLATFORM_EXTENSIONS`, and with their
/// versions `CL_PLATFORM_EXTENSIONS_WITH_VERSION`): only what works here.
/// [`DMA_BUF_EXPORT_EXTENSION`] is listed only where `/dev/udmabuf` can be
/// opened ([`dma_buf_export::available`](crate::ext::dma_buf_export::available));
/// the `cl_arm_import_memory` strings (seed 004) when a device of the
/// platform supports them ([`arm_import::extensions`](crate::ext::arm_import::extensions):
/// always, the CPU device does); `cl_amd_bus_addressable_memory` (seed 002)
/// where buffers can be made resident, i.e. the platform has a VFIO domain
/// ([`amd_bus::available`](crate::ext::amd_bus::available)).
///
/// ```
/// use dmabridge::runtime::info::platform_extensions;
/// assert!(platform_extensions().iter().any(|e| e.name == "cl_khr_icd"));
/// assert!(platform_extensions().iter().any(|e| e.name == "cl_arm_import_memory_host"));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn platform_extensions() -> Vec<NameVersion> {
    let mut list = vec![NameVersion::new("cl_intel_unified_shared_memory", EXTENSION_VERSION)];
    list.push(NameVersion::new("cl_khr_icd", EXTENSION_VERSION));
    if crate::ext::dma_buf_export::available() {
        list.push(NameVersion::new(DMA_BUF_EXPORT_EXTENSION, EXTENSION_VERSION));
    }
    if crate::ext::amd_bus::available() {
        list.push(NameVersion::new(crate::ext::amd_bus::EXTENSION, EXTENSION_VERSION));
    }
    let import = Platform::get().devices().iter().flat_map(|d| crate::ext::arm_import::extensions(d)).copied();
    for name in import {
        if !list.iter().any(|e| e.name == name) {
            list.push(NameVersion::new(name, EXTENSION_VERSION));
        }
    }
    list
}

/// The extensions of `device` (`CL_DEVICE_EXTENSIONS`, and with their
/// versions `CL_DEVICE_EXTENSIONS_WITH_VERSION`): the platform's, without
/// `cl_khr_icd` (a platform extension), and with only the
/// `cl_arm_import_memory` strings the device itself supports (none for a
/// device without host-unified memory).
///
/// ```
/// use dmabridge::runtime::info::device_extensions;
/// use dmabridge::runtime::platform::Platform;
/// let cpu = Platform::get().cpu();
/// assert!(device_extensions(cpu).iter().any(|e| e.name == "cl_intel_unified_shared_memory"));
/// assert!(device_extensions(cpu).iter().any(|e| e.name == "cl_arm_import_memory_dma_buf"));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn device_extensions(device: &Device) -> Vec<NameVersion> {
    let import = crate::ext::arm_import::extensions(device);
    platform_extensions()
        .into_iter()
        .filter(|e| e.name != "cl_khr_icd")
        .filter(|e| !e.name.starts_with("cl_arm_import_memory") || import.contains(&e.name.as_str()))
        .collect()
}

/// The names of a `*_WITH_VERSION` list joined by `sep` (the string form of
/// the same query).
fn names(list: &[NameVersion], sep: &str) -> String {
    list.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(sep)
}

/// `CL_NAME_VERSION_MAX_NAME_SIZE`: the bytes of a `cl_name_version` name,
/// NUL included.
pub const NAME_VERSION_MAX_NAME_SIZE: usize = 64;

/// One `cl_name_version`: in C `{ cl_version version; char name[64]; }`,
/// 68 bytes, the name NUL-terminated and zero-padded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameVersion {
    /// `CL_MAKE_VERSION(major, minor, patch)`.
    pub version: u32,
    /// At most 63 bytes (longer names are cut when written).
    pub name: String,
}

impl NameVersion {
    /// Size of the C struct.
    pub const C_SIZE: usize = 4 + NAME_VERSION_MAX_NAME_SIZE;

    /// A name and its version.
    ///
    /// No OpenCL function of its own: one entry of the `*_WITH_VERSION` queries.
    ///
    /// ```
    /// use dmabridge::runtime::info::{make_version, NameVersion};
    /// let e = NameVersion::new("cl_khr_icd", make_version(1, 0, 0));
    /// assert_eq!((e.name.as_str(), e.version), ("cl_khr_icd", 1 << 22));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn new(name: &str, version: u32) -> NameVersion {
        NameVersion { version, name: name.into() }
    }
}
/// `CL_PLATFORM_PROFILE` and `CL_DEVICE_PROFILE`: there is no OpenCL C
/// compiler, and a device without one must report the embedded profile.
pub const PROFILE: &str = "EMBEDDED_PROFILE";
/// `CL_DEVICE_OPENCL_C_VERSION`: no OpenCL C compiler, so the version that
/// claims the least (OpenCL C 1.0 requires no extension), in the
/// `OpenCL C <major>.<minor> <vendor>` form harnesses parse.
pub const OPENCL_C_VERSION: &str = "OpenCL C 1.0 dmabridge (no OpenCL C compiler)";
/// `CL_DEVICE_MAX_WORK_GROUP_SIZE` (and each entry of
/// `CL_DEVICE_MAX_WORK_ITEM_SIZES`).
pub const MAX_WORK_GROUP_SIZE: usize = 1024;
/// `CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS`: 3, the OpenCL 3.0 minimum for a
/// device that is not `CL_DEVICE_TYPE_CUSTOM`.
pub const MAX_WORK_ITEM_DIMENSIONS: u32 = 3;
/// `CL_DEVICE_MAX_WORK_ITEM_SIZES`: one entry per dimension.
pub const MAX_WORK_ITEM_SIZES: [usize; MAX_WORK_ITEM_DIMENSIONS as usize] = [MAX_WORK_GROUP_SIZE; 3];
/// `CL_DEVICE_MAX_PARAMETER_SIZE` (the full-profile minimum).
pub const MAX_PARAMETER_SIZE: usize = 1024;

/// One answer of a `clGet*Info` query.
#[derive(Debug, Clone)]
pub enum InfoValue {
    /// A string; in C a NUL-terminated `char[]`.
    Str(String),
    /// `cl_uint`.
    U32(u32),
    /// `cl_int`.
    I32(i32),
    /// `cl_ulong`.
    U64(u64),
    /// `size_t`.
    Usize(usize),
    /// `cl_bool` (4 bytes, `CL_TRUE` = 1).
    Bool(bool),
    /// A `cl_bitfield` (8 bytes).
    Bits(u64),
    /// `size_t[]`.
    Sizes(Vec<usize>),
    /// `cl_device_id[]`.
    DeviceIds(Vec<Arc<Device>>),
    /// `cl_device_id` (`None`: NULL).
    Device(Option<Arc<Device>>),
    /// `cl_context`.
    Context(Arc<Context>),
    /// `cl_command_queue` (`None`: NULL).
    Queue(Option<Arc<Queue>>),
    /// `cl_platform_id` (`CL_DEVICE_PLATFORM`): the one platform of the process.
    Platform(&'static Platform),
    /// `cl_mem` (`None`: NULL), e.g. `CL_MEM_ASSOCIATED_MEMOBJECT`.
    Mem(Option<Arc<Buffer>>),
    /// A properties array (`cl_context_properties[]`, `cl_queue_properties[]`:
    /// 8 bytes each on 64-bit Linux), zero-terminated when not empty.
    Properties(Vec<u64>),
    /// `cl_name_version[]` (68 bytes each).
    NameVersions(Vec<NameVersion>),
}

/// Handles compare by identity, like the `cl_*` handles they become.
impl PartialEq for InfoValue {
    fn eq(&self, other: &InfoValue) -> bool {
        use InfoValue::*;
        fn same<T>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
        }
        match (self, other) {
            (Str(a), Str(b)) => a == b,
            (U32(a), U32(b)) => a == b,
            (I32(a), I32(b)) => a == b,
            (U64(a), U64(b)) => a == b,
            (Usize(a), Usize(b)) => a == b,
            (Bool(a), Bool(b)) => a == b,
            (Bits(a), Bits(b)) => a == b,
            (Sizes(a), Sizes(b)) => a == b,
            (DeviceIds(a), DeviceIds(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b)),
            (Device(a), Device(b)) => same(a, b),
            (Context(a), Context(b)) => Arc::ptr_eq(a, b),
            (Queue(a), Queue(b)) => same(a, b),
            (Mem(a), Mem(b)) => same(a, b),
            (Platform(a), Platform(b)) => std::ptr::eq(*a, *b),
            (Properties(a), Properties(b)) => a == b,
            (NameVersions(a), NameVersions(b)) => a == b,
            _ => false,
        }
    }
}

impl InfoValue {
    /// Size in bytes of the C value (what `param_value_size_ret` reports),
    /// including the NUL of a string.
    ///
    /// The `param_value_size_ret` of every `clGet*Info`.
    ///
    /// ```
    /// use dmabridge::runtime::info::InfoValue;
    /// assert_eq!(InfoValue::Str("abc".into()).size(), 4); // with the NUL
    /// assert_eq!(InfoValue::U64(1).size(), 8);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn size(&self) -> usize {
        const PTR: usize = size_of::<usize>();
        match self {
            InfoValue::Str(s) => s.len() + 1,
            InfoValue::U32(_) | InfoValue::I32(_) | InfoValue::Bool(_) => 4,
            InfoValue::U64(_) | InfoValue::Bits(_) => 8,
            InfoValue::Usize(_) => size_of::<usize>(),
            InfoValue::Sizes(v) => v.len() * size_of::<usize>(),
            InfoValue::DeviceIds(v) => v.len() * PTR,
            InfoValue::Device(_)
            | InfoValue::Context(_)
            | InfoValue::Queue(_)
            | InfoValue::Platform(_)
            | InfoValue::Mem(_) => PTR,
            InfoValue::Properties(v) => v.len() * 8,
            InfoValue::NameVersions(v) => v.len() * NameVersion::C_SIZE,
        }
    }

    /// True for a value that holds a non-null object handle, which only the
    /// C face can write (it owns the handle mapping).
    ///
    /// No OpenCL function of its own: which `clGet*Info` answers the C face writes itself.
    ///
    /// ```
    /// use dmabridge::runtime::info::InfoValue;
    /// assert!(!InfoValue::Device(None).is_handle()); // NULL
    /// assert!(!InfoValue::U32(1).is_handle());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn is_handle(&self) -> bool {
        match self {
            InfoValue::DeviceIds(v) => !v.is_empty(),
            InfoValue::Device(d) => d.is_some(),
            InfoValue::Queue(q) => q.is_some(),
            InfoValue::Mem(m) => m.is_some(),
            InfoValue::Context(_) | InfoValue::Platform(_) => true,
            _ => false,
        }
    }

    /// Writes the C value (native byte order) to the first [`size`](Self::size)
    /// bytes of `out`. `CL_INVALID_VALUE` if `out` is shorter, or if the value
    /// holds a non-null object handle: the C face maps those to its `cl_*`
    /// handles itself. NULL handles (`Device(None)`, `Queue(None)`) are
    /// written as zeros. Nothing is written on error.
    ///
    /// ```
    /// use dmabridge::runtime::info::InfoValue;
    /// let mut out = [0u8; 8];
    /// InfoValue::U32(0x1234).write(&mut out)?;
    /// assert_eq!(out[..4], 0x1234u32.to_ne_bytes());
    /// assert!(InfoValue::U64(1).write(&mut out[..4]).is_err()); // too short
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn write(&self, out: &mut [u8]) -> ClResult<()> {
        let size = self.size();
        if out.len() < size {
            return cl_err!(InvalidValue, "param_value_size {} is smaller than the value's size {size}", out.len());
        }
        if self.is_handle() {
            return cl_err!(
                InvalidValue,
                "{} is an object handle: the C face writes it as its cl_* handle",
                self.variant_name()
            );
        }
        let out = &mut out[..size];
        match self {
            InfoValue::Str(s) => {
                out[..s.len()].copy_from_slice(s.as_bytes());
                out[s.len()] = 0;
            }
            InfoValue::U32(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::I32(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::U64(v) | InfoValue::Bits(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::Usize(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::Bool(b) => out.copy_from_slice(&u32::from(*b).to_ne_bytes()),
            InfoValue::Sizes(v) => {
                for (chunk, x) in out.chunks_exact_mut(size_of::<usize>()).zip(v) {
                    chunk.copy_from_slice(&x.to_ne_bytes());
                }
            }
            InfoValue::Properties(v) => {
                for (chunk, x) in out.chunks_exact_mut(8).zip(v) {
                    chunk.copy_from_slice(&x.to_ne_bytes());
                }
            }
            InfoValue::NameVersions(v) => {
                for (chunk, e) in out.chunks_exact_mut(NameVersion::C_SIZE).zip(v) {
                    chunk[..4].copy_from_slice(&e.version.to_ne_bytes());
                    let name = e.name.as_bytes();
                    let n = name.len().min(NAME_VERSION_MAX_NAME_SIZE - 1);
                    chunk[4..4 + n].copy_from_slice(&name[..n]);
                    chunk[4 + n..].fill(0);
                }
            }
            // Only NULL handles and empty lists get here.
            InfoValue::DeviceIds(_) | InfoValue::Device(_) | InfoValue::Queue(_) | InfoValue::Mem(_) => out.fill(0),
            InfoValue::Context(_) | InfoValue::Platform(_) => unreachable!("refused above"),
        }
        Ok(())
    }

    fn variant_name(&self) -> &'static str {
        match self {
            InfoValue::Str(_) => "Str",
            InfoValue::U32(_) => "U32",
            InfoValue::I32(_) => "I32",
            InfoValue::U64(_) => "U64",
            InfoValue::Usize(_) => "Usize",
            InfoValue::Bool(_) => "Bool",
            InfoValue::Bits(_) => "Bits",
            InfoValue::Sizes(_) => "Sizes",
            InfoValue::DeviceIds(_) => "DeviceIds (cl_device_id[])",
            InfoValue::Device(_) => "Device (cl_device_id)",
            InfoValue::Context(_) => "Context (cl_context)",
            InfoValue::Queue(_) => "Queue (cl_command_queue)",
            InfoValue::Platform(_) => "Platform (cl_platform_id)",
            InfoValue::Mem(_) => "Mem (cl_mem)",
            InfoValue::Properties(_) => "Properties",
            InfoValue::NameVersions(_) => "NameVersions (cl_name_version[])",
        }
    }
}

/// The OpenCL `param_value` rule: with `param_value` given, writes the value
/// into it (`CL_INVALID_VALUE`, and the buffer untouched, if it is shorter
/// than the value); returns `param_value_size_ret`, the value's size, either
/// way. Handles are refused as [`InfoValue::write`] says.
///
/// ```
/// use dmabridge::runtime::info::{copy_out, InfoValue};
/// let v = InfoValue::Bool(true);
/// assert_eq!(copy_out(&v, None)?, 4); // the size query
/// let mut out = [0u8; 4];
/// assert_eq!(copy_out(&v, Some(&mut out))?, 4);
/// assert_eq!(out, 1u32.to_ne_bytes());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn copy_out(value: &InfoValue, param_value: Option<&mut [u8]>) -> ClResult<usize> {
    if let Some(out) = param_value {
        value.write(out)?;
    }
    Ok(value.size())
}

fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn unknown(what: &str, param: u32) -> ClError {
    ClError::new(ClErrorKind::InvalidValue, format!("param_name {param:#x} is not a {what} this platform answers"))
}

/// `clGetPlatformInfo` of the dmabridge platform; `CL_INVALID_VALUE` for a
/// parameter not in [`platform_param`].
///
/// ```
/// use dmabridge::runtime::info::{self, platform_param, InfoValue, OPENCL_VERSION};
/// assert_eq!(info::platform_info(platform_param::NUMERIC_VERSION)?, InfoValue::U32(OPENCL_VERSION));
/// assert!(info::platform_info(0).is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn platform_info(param: u32) -> ClResult<InfoValue> {
    use platform_param::*;
    Ok(match param {
        PROFILE => InfoValue::Str(self::PROFILE.into()),
        VERSION => InfoValue::Str(format!("OpenCL 3.0 dmabridge {}", driver_version_short())),
        NAME | VENDOR => InfoValue::Str("dmabridge".into()),
        EXTENSIONS => InfoValue::Str(names(&platform_extensions(), " ")),
        EXTENSIONS_WITH_VERSION => InfoValue::NameVersions(platform_extensions()),
        HOST_TIMER_RESOLUTION => InfoValue::U64(0),
        NUMERIC_VERSION => InfoValue::U32(OPENCL_VERSION),
        ICD_SUFFIX_KHR => InfoValue::Str("DMABRIDGE".into()),
        _ => return Err(unknown("cl_platform_info", param)),
    })
}

/// "0.1" of the crate version "0.1.x".
fn driver_version_short() -> &'static str {
    let v = env!("CARGO_PKG_VERSION");
    match v.match_indices('.').nth(1) {
        Some((i, _)) => &v[..i],
        None => v,
    }
}

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
///   run ([`NdRange`](super::kernel::NdRange)).
/// - No OpenCL C compiler: `EMBEDDED_PROFILE`, compiler and linker not
///   available, no images, samplers, pipes, program-scope globals, IL,
///   sub-groups, printf, on-device queues or generic address space (every
///   limit of those is 0), no double or half (their vector widths and
///   `*_FP_CONFIG` are 0).
/// - No OpenCL C at all, so none is claimed: `CL_DEVICE_OPENCL_C_ALL_VERSIONS`
///   and `CL_DEVICE_OPENCL_C_FEATURES` are empty (OpenCL 3.0 allows both
///   for a device that does not compile OpenCL C), and
///   `CL_DEVICE_OPENCL_C_VERSION`, which must answer a string, is
///   [`OPENCL_C_VERSION`]: `OpenCL C 1.0`, the one version that asks for
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
    Ok(match param {
        TYPE => InfoValue::Bits(match device.device_type {
            DeviceType::Cpu => device_type::CPU,
            DeviceType::Accelerator => device_type::ACCELERATOR,
        }),
        VENDOR_ID => InfoValue::U32(0),
        MAX_COMPUTE_UNITS => InfoValue::U32(device.compute_units),
        MAX_WORK_ITEM_DIMENSIONS => InfoValue::U32(self::MAX_WORK_ITEM_DIMENSIONS),
        MAX_WORK_GROUP_SIZE => InfoValue::Usize(self::MAX_WORK_GROUP_SIZE),
        MAX_WORK_ITEM_SIZES => InfoValue::Sizes(self::MAX_WORK_ITEM_SIZES.to_vec()),
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
        // No images, samplers or pipes: every limit is 0 (OpenCL 3.0).
        MAX_READ_IMAGE_ARGS
        | MAX_WRITE_IMAGE_ARGS
        | MAX_READ_WRITE_IMAGE_ARGS
        | MAX_SAMPLERS
        | IMAGE_PITCH_ALIGNMENT
        | IMAGE_BASE_ADDRESS_ALIGNMENT
        | MAX_PIPE_ARGS
        | PIPE_MAX_ACTIVE_RESERVATIONS
        | PIPE_MAX_PACKET_SIZE
        | MAX_NUM_SUB_GROUPS
        | QUEUE_ON_DEVICE_PREFERRED_SIZE
        | QUEUE_ON_DEVICE_MAX_SIZE
        | MAX_ON_DEVICE_QUEUES
        | MAX_ON_DEVICE_EVENTS => InfoValue::U32(0),
        IMAGE2D_MAX_WIDTH
        | IMAGE2D_MAX_HEIGHT
        | IMAGE3D_MAX_WIDTH
        | IMAGE3D_MAX_HEIGHT
        | IMAGE3D_MAX_DEPTH
        | IMAGE_MAX_BUFFER_SIZE
        | IMAGE_MAX_ARRAY_SIZE
        | MAX_GLOBAL_VARIABLE_SIZE
        | GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE
        | PRINTF_BUFFER_SIZE => InfoValue::Usize(0),
        IMAGE_SUPPORT
        | ERROR_CORRECTION_SUPPORT
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
            super::kernel::builtin_kernel_names(device)
                .iter()
                .map(|name| NameVersion::new(name, EXTENSION_VERSION))
                .collect(),
        ),
        MAX_PARAMETER_SIZE => InfoValue::Usize(self::MAX_PARAMETER_SIZE),
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
        PROFILE => InfoValue::Str(self::PROFILE.into()),
        VERSION => InfoValue::Str(format!("OpenCL 3.0 dmabridge {}", driver_version_short())),
        EXTENSIONS => InfoValue::Str(names(&device_extensions(device), " ")),
        PLATFORM => InfoValue::Platform(Platform::get()),
        HOST_UNIFIED_MEMORY => InfoValue::Bool(device.host_unified_memory),
        OPENCL_C_VERSION => InfoValue::Str(self::OPENCL_C_VERSION.into()),
        BUILT_IN_KERNELS => InfoValue::Str(super::kernel::builtin_kernels_string(device)),
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

/// `clGetContextInfo`. `CL_CONTEXT_REFERENCE_COUNT` is the `Arc`'s strong
/// count: the application's references plus those held by the context's
/// queues, events and allocations' owners (the spec calls the value stale
/// and fit only for leak hunting). `CL_CONTEXT_PROPERTIES` is empty: no
/// context property is supported.
///
/// ```
/// use dmabridge::runtime::info::{self, context_param, InfoValue};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// assert_eq!(info::context_info(&ctx, context_param::NUM_DEVICES)?, InfoValue::U32(1));
/// assert_eq!(info::context_info(&ctx, context_param::PROPERTIES)?, InfoValue::Properties(vec![]));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn context_info(ctx: &Arc<Context>, param: u32) -> ClResult<InfoValue> {
    use context_param::*;
    Ok(match param {
        REFERENCE_COUNT => InfoValue::U32(clamp_u32(Arc::strong_count(ctx))),
        DEVICES => InfoValue::DeviceIds(ctx.devices().to_vec()),
        PROPERTIES => InfoValue::Properties(Vec::new()),
        NUM_DEVICES => InfoValue::U32(clamp_u32(ctx.devices().len())),
        _ => return Err(unknown("cl_context_info", param)),
    })
}

/// `clGetCommandQueueInfo`. `CL_QUEUE_SIZE` fails with
/// `CL_INVALID_COMMAND_QUEUE` (every queue is a host queue);
/// `CL_QUEUE_DEVICE_DEFAULT` is NULL. `CL_QUEUE_PROPERTIES_ARRAY` is
/// `[CL_QUEUE_PROPERTIES, bits, 0]` when the queue has properties, else
/// empty: the queue does not keep the array it was created with, and that is
/// the array that creates the same queue.
///
/// ```
/// use dmabridge::runtime::info::{self, queue_param, InfoValue};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// assert_eq!(info::queue_info(&queue, queue_param::PROPERTIES)?, InfoValue::Bits(0));
/// assert_eq!(info::queue_info(&queue, queue_param::DEVICE)?, InfoValue::Device(Some(cpu.clone())));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn queue_info(queue: &Arc<Queue>, param: u32) -> ClResult<InfoValue> {
    use queue_param::*;
    Ok(match param {
        CONTEXT => InfoValue::Context(queue.context().clone()),
        DEVICE => InfoValue::Device(Some(queue.device().clone())),
        REFERENCE_COUNT => InfoValue::U32(clamp_u32(queue.reference_count())),
        PROPERTIES => InfoValue::Bits(queue.props().bits()),
        PROPERTIES_ARRAY => InfoValue::Properties(match queue.props().bits() {
            0 => Vec::new(),
            bits => vec![u64::from(PROPERTIES), bits, 0],
        }),
        SIZE => {
            return cl_err!(
                InvalidCommandQueue,
                "CL_QUEUE_SIZE is defined only for on-device queues, and this is a host queue"
            )
        }
        DEVICE_DEFAULT => InfoValue::Queue(None),
        _ => return Err(unknown("cl_command_queue_info", param)),
    })
}

/// `clGetEventInfo`. `CL_EVENT_COMMAND_QUEUE` is NULL for a user event (and
/// once the queue is gone); `CL_EVENT_REFERENCE_COUNT` counts the references
/// a queue holds while the command is pending too.
///
/// ```
/// use dmabridge::runtime::info::{self, event_param, InfoValue};
/// use dmabridge::runtime::event::{command_type, exec_status, Event};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let ev = Event::user(&ctx);
/// assert_eq!(info::event_info(&ev, event_param::COMMAND_TYPE)?, InfoValue::U32(command_type::USER));
/// assert_eq!(info::event_info(&ev, event_param::COMMAND_EXECUTION_STATUS)?, InfoValue::I32(exec_status::SUBMITTED));
/// assert_eq!(info::event_info(&ev, event_param::COMMAND_QUEUE)?, InfoValue::Queue(None));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn event_info(event: &Event, param: u32) -> ClResult<InfoValue> {
    use event_param::*;
    Ok(match param {
        COMMAND_QUEUE => InfoValue::Queue(event.queue()),
        COMMAND_TYPE => InfoValue::U32(event.command_type()),
        REFERENCE_COUNT => InfoValue::U32(clamp_u32(event.reference_count())),
        COMMAND_EXECUTION_STATUS => InfoValue::I32(event.status().as_cl()),
        CONTEXT => InfoValue::Context(event.context().clone()),
        _ => return Err(unknown("cl_event_info", param)),
    })
}

/// `clGetEventProfilingInfo`: [`Event::profiling_info`] as a `cl_ulong`.
///
/// ```
/// use dmabridge::runtime::info::{self, InfoValue};
/// use dmabridge::runtime::{context::Context, event::{profiling_info, Event}, platform::Platform};
/// use dmabridge::runtime::queue::{properties, Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::from_bits(properties::PROFILING_ENABLE)?)?;
/// let marker = queue.enqueue_marker(&[])?;
/// Event::wait(&[marker.clone()])?;
/// assert!(matches!(info::event_profiling_info(&marker, profiling_info::END)?, InfoValue::U64(_)));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn event_profiling_info(event: &Event, param: u32) -> ClResult<InfoValue> {
    event.profiling_info(param).map(InfoValue::U64)
}
