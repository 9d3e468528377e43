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
    /// `CL_PLATFORM_ICD_SUFFIX_KHR`.
    pub const ICD_SUFFIX_KHR: u32 = 0x0920;
    /// Every parameter [`platform_info`](super::platform_info) answers.
    pub const ALL: &[u32] =
        &[PROFILE, VERSION, NAME, VENDOR, EXTENSIONS, HOST_TIMER_RESOLUTION, NUMERIC_VERSION, ICD_SUFFIX_KHR];
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
    pub const ADDRESS_BITS: u32 = 0x100D;
    pub const MAX_MEM_ALLOC_SIZE: u32 = 0x1010;
    pub const IMAGE_SUPPORT: u32 = 0x1016;
    pub const MAX_PARAMETER_SIZE: u32 = 0x1017;
    pub const MEM_BASE_ADDR_ALIGN: u32 = 0x1019;
    pub const GLOBAL_MEM_SIZE: u32 = 0x101F;
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
    pub const PARENT_DEVICE: u32 = 0x1042;
    pub const PARTITION_MAX_SUB_DEVICES: u32 = 0x1043;
    pub const REFERENCE_COUNT: u32 = 0x1047;
    pub const SVM_CAPABILITIES: u32 = 0x1053;
    pub const NUMERIC_VERSION: u32 = 0x105E;
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
        ADDRESS_BITS,
        MAX_MEM_ALLOC_SIZE,
        IMAGE_SUPPORT,
        MAX_PARAMETER_SIZE,
        MEM_BASE_ADDR_ALIGN,
        GLOBAL_MEM_SIZE,
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
        PARENT_DEVICE,
        PARTITION_MAX_SUB_DEVICES,
        REFERENCE_COUNT,
        SVM_CAPABILITIES,
        NUMERIC_VERSION,
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

/// The platform's extensions (`CL_PLATFORM_EXTENSIONS`): only what is
/// implemented.
pub const PLATFORM_EXTENSIONS: &str = "cl_intel_unified_shared_memory cl_khr_icd";
/// The devices' extensions (`CL_DEVICE_EXTENSIONS`).
pub const DEVICE_EXTENSIONS: &str = "cl_intel_unified_shared_memory";
/// `CL_PLATFORM_PROFILE` and `CL_DEVICE_PROFILE`: there is no OpenCL C
/// compiler, and a device without one must report the embedded profile.
pub const PROFILE: &str = "EMBEDDED_PROFILE";
/// `CL_DEVICE_MAX_WORK_GROUP_SIZE` (and the one entry of
/// `CL_DEVICE_MAX_WORK_ITEM_SIZES`).
pub const MAX_WORK_GROUP_SIZE: usize = 1024;
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
        EXTENSIONS => InfoValue::Str(PLATFORM_EXTENSIONS.into()),
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

/// `clGetDeviceInfo`; `CL_INVALID_VALUE` for a parameter not in
/// [`device_param::ALL`].
///
/// Notes on some answers:
/// - `CL_DEVICE_PLATFORM` answers [`InfoValue::Platform`] (the C face maps it
///   to its `cl_platform_id`); there is one platform per process.
/// - `CL_DEVICE_VENDOR_ID` is 0: a software device with no PCI or Khronos
///   vendor id.
/// - `CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS` is 1: only 1-D ranges are executed.
/// - No OpenCL C compiler: `EMBEDDED_PROFILE`, compiler and linker not
///   available, `CL_DEVICE_OPENCL_C_VERSION` empty, no images, no double or
///   half (their vector widths are 0).
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
    Ok(match param {
        TYPE => InfoValue::Bits(match device.device_type {
            DeviceType::Cpu => device_type::CPU,
            DeviceType::Accelerator => device_type::ACCELERATOR,
        }),
        VENDOR_ID => InfoValue::U32(0),
        MAX_COMPUTE_UNITS => InfoValue::U32(device.compute_units),
        MAX_WORK_ITEM_DIMENSIONS => InfoValue::U32(1),
        MAX_WORK_GROUP_SIZE => InfoValue::Usize(self::MAX_WORK_GROUP_SIZE),
        MAX_WORK_ITEM_SIZES => InfoValue::Sizes(vec![self::MAX_WORK_GROUP_SIZE]),
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
        IMAGE_SUPPORT | ERROR_CORRECTION_SUPPORT | COMPILER_AVAILABLE | LINKER_AVAILABLE => InfoValue::Bool(false),
        MAX_PARAMETER_SIZE => InfoValue::Usize(self::MAX_PARAMETER_SIZE),
        MEM_BASE_ADDR_ALIGN => InfoValue::U32(clamp_u32(device.max_alignment as usize * 8)),
        // A device with memory of its own (a BAR device) has that much.
        GLOBAL_MEM_SIZE => InfoValue::U64(device.local_memory().map_or_else(mem_total, |m| m.size() as u64)),
        PROFILING_TIMER_RESOLUTION => InfoValue::Usize(1),
        ENDIAN_LITTLE => InfoValue::Bool(cfg!(target_endian = "little")),
        AVAILABLE => InfoValue::Bool(true),
        EXECUTION_CAPABILITIES => InfoValue::Bits(exec_capabilities::KERNEL | exec_capabilities::NATIVE_KERNEL),
        QUEUE_PROPERTIES => InfoValue::Bits(queue_props::OUT_OF_ORDER_EXEC_MODE_ENABLE | queue_props::PROFILING_ENABLE),
        NAME => InfoValue::Str(device.name.clone()),
        VENDOR => InfoValue::Str("dmabridge".into()),
        DRIVER_VERSION => InfoValue::Str(env!("CARGO_PKG_VERSION").into()),
        PROFILE => InfoValue::Str(self::PROFILE.into()),
        VERSION => InfoValue::Str(format!("OpenCL 3.0 dmabridge {}", driver_version_short())),
        EXTENSIONS => InfoValue::Str(DEVICE_EXTENSIONS.into()),
        PLATFORM => InfoValue::Platform(Platform::get()),
        HOST_UNIFIED_MEMORY => InfoValue::Bool(device.host_unified_memory),
        OPENCL_C_VERSION => InfoValue::Str(String::new()),
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
