//! The parameter names of the `clGet*Info` queries and the bit values of
//! their answers, as the OpenCL headers define them (checked against
//! `opencl-sys` at compile time in the ICD, and against `include/CL` by
//! a test).

/// `cl_platform_info` values for [`platform_info`](crate::runtime::info::platform_info).
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
    /// Every parameter [`platform_info`](crate::runtime::info::platform_info) answers.
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

/// `cl_device_info` values for [`device_info`](crate::runtime::info::device_info).
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
    /// Every parameter [`device_info`](crate::runtime::info::device_info) answers.
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

/// `cl_context_info` values for [`context_info`](crate::runtime::info::context_info).
pub mod context_param {
    /// `CL_CONTEXT_REFERENCE_COUNT`.
    pub const REFERENCE_COUNT: u32 = 0x1080;
    /// `CL_CONTEXT_DEVICES`.
    pub const DEVICES: u32 = 0x1081;
    /// `CL_CONTEXT_PROPERTIES`.
    pub const PROPERTIES: u32 = 0x1082;
    /// `CL_CONTEXT_NUM_DEVICES`.
    pub const NUM_DEVICES: u32 = 0x1083;
    /// Every parameter [`context_info`](crate::runtime::info::context_info) answers.
    pub const ALL: &[u32] = &[REFERENCE_COUNT, DEVICES, PROPERTIES, NUM_DEVICES];
}

/// `cl_command_queue_info` values for [`queue_info`](crate::runtime::info::queue_info).
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
    /// Every parameter [`queue_info`](crate::runtime::info::queue_info) answers (`SIZE`
    /// answers with `CL_INVALID_COMMAND_QUEUE`, as the spec says for host queues).
    pub const ALL: &[u32] = &[CONTEXT, DEVICE, REFERENCE_COUNT, PROPERTIES, DEVICE_DEFAULT, PROPERTIES_ARRAY];
}

/// `cl_event_info` values for [`event_info`](crate::runtime::info::event_info).
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
    /// Every parameter [`event_info`](crate::runtime::info::event_info) answers.
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

/// `cl_kernel_info` values for [`kernel_info`](crate::runtime::info::kernel_info).
pub mod kernel_param {
    /// `CL_KERNEL_FUNCTION_NAME`.
    pub const FUNCTION_NAME: u32 = 0x1190;
    /// `CL_KERNEL_NUM_ARGS`.
    pub const NUM_ARGS: u32 = 0x1191;
    /// `CL_KERNEL_REFERENCE_COUNT`.
    pub const REFERENCE_COUNT: u32 = 0x1192;
    /// `CL_KERNEL_CONTEXT`.
    pub const CONTEXT: u32 = 0x1193;
    /// `CL_KERNEL_PROGRAM` (the program is the C face's object: it answers).
    pub const PROGRAM: u32 = 0x1194;
    /// `CL_KERNEL_ATTRIBUTES`.
    pub const ATTRIBUTES: u32 = 0x1195;
}

/// `cl_kernel_work_group_info` values for
/// [`kernel_work_group_info`](crate::runtime::info::kernel_work_group_info).
pub mod kernel_work_group_param {
    /// `CL_KERNEL_WORK_GROUP_SIZE`.
    pub const WORK_GROUP_SIZE: u32 = 0x11B0;
    /// `CL_KERNEL_COMPILE_WORK_GROUP_SIZE`.
    pub const COMPILE_WORK_GROUP_SIZE: u32 = 0x11B1;
    /// `CL_KERNEL_LOCAL_MEM_SIZE`.
    pub const LOCAL_MEM_SIZE: u32 = 0x11B2;
    /// `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE`.
    pub const PREFERRED_WORK_GROUP_SIZE_MULTIPLE: u32 = 0x11B3;
    /// `CL_KERNEL_PRIVATE_MEM_SIZE`.
    pub const PRIVATE_MEM_SIZE: u32 = 0x11B4;
    /// `CL_KERNEL_GLOBAL_WORK_SIZE`.
    pub const GLOBAL_WORK_SIZE: u32 = 0x11B5;
}
