//! The error of the OpenCL-shaped API: one variant per CL error code, each
//! with a message that says what was wrong with which argument.

use std::fmt;

/// OpenCL error codes (`CL/cl.h`) used by dmabridge.
pub mod code {
    #![allow(missing_docs)]
    pub const SUCCESS: i32 = 0;
    pub const DEVICE_NOT_FOUND: i32 = -1;
    pub const DEVICE_NOT_AVAILABLE: i32 = -2;
    pub const COMPILER_NOT_AVAILABLE: i32 = -3;
    pub const MEM_OBJECT_ALLOCATION_FAILURE: i32 = -4;
    pub const OUT_OF_RESOURCES: i32 = -5;
    pub const OUT_OF_HOST_MEMORY: i32 = -6;
    pub const PROFILING_INFO_NOT_AVAILABLE: i32 = -7;
    pub const MEM_COPY_OVERLAP: i32 = -8;
    pub const MAP_FAILURE: i32 = -12;
    pub const EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: i32 = -14;
    pub const INVALID_VALUE: i32 = -30;
    pub const INVALID_DEVICE_TYPE: i32 = -31;
    pub const INVALID_PLATFORM: i32 = -32;
    pub const INVALID_DEVICE: i32 = -33;
    pub const INVALID_CONTEXT: i32 = -34;
    pub const INVALID_QUEUE_PROPERTIES: i32 = -35;
    pub const INVALID_COMMAND_QUEUE: i32 = -36;
    pub const INVALID_HOST_PTR: i32 = -37;
    pub const INVALID_MEM_OBJECT: i32 = -38;
    pub const INVALID_KERNEL_NAME: i32 = -46;
    pub const INVALID_KERNEL: i32 = -48;
    pub const INVALID_ARG_INDEX: i32 = -49;
    pub const INVALID_ARG_VALUE: i32 = -50;
    pub const INVALID_ARG_SIZE: i32 = -51;
    pub const INVALID_KERNEL_ARGS: i32 = -52;
    pub const INVALID_WORK_DIMENSION: i32 = -53;
    pub const INVALID_WORK_GROUP_SIZE: i32 = -54;
    pub const INVALID_EVENT_WAIT_LIST: i32 = -57;
    pub const INVALID_EVENT: i32 = -58;
    pub const INVALID_OPERATION: i32 = -59;
    pub const INVALID_BUFFER_SIZE: i32 = -61;
    pub const INVALID_PROPERTY: i32 = -64;
}

/// Which CL error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ClErrorKind {
    DeviceNotFound,
    CompilerNotAvailable,
    OutOfResources,
    OutOfHostMemory,
    ProfilingInfoNotAvailable,
    MemCopyOverlap,
    MapFailure,
    ExecStatusErrorForEventsInWaitList,
    InvalidValue,
    InvalidDeviceType,
    InvalidPlatform,
    InvalidDevice,
    InvalidContext,
    InvalidQueueProperties,
    InvalidCommandQueue,
    InvalidHostPtr,
    InvalidMemObject,
    InvalidKernelName,
    InvalidKernel,
    InvalidArgIndex,
    InvalidArgValue,
    InvalidArgSize,
    InvalidKernelArgs,
    InvalidWorkDimension,
    InvalidWorkGroupSize,
    InvalidEventWaitList,
    InvalidEvent,
    InvalidOperation,
    InvalidBufferSize,
    InvalidProperty,
}

impl ClErrorKind {
    /// The CL error code.
    pub fn code(self) -> i32 {
        use ClErrorKind::*;
        match self {
            DeviceNotFound => code::DEVICE_NOT_FOUND,
            CompilerNotAvailable => code::COMPILER_NOT_AVAILABLE,
            OutOfResources => code::OUT_OF_RESOURCES,
            OutOfHostMemory => code::OUT_OF_HOST_MEMORY,
            ProfilingInfoNotAvailable => code::PROFILING_INFO_NOT_AVAILABLE,
            MemCopyOverlap => code::MEM_COPY_OVERLAP,
            MapFailure => code::MAP_FAILURE,
            ExecStatusErrorForEventsInWaitList => code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
            InvalidValue => code::INVALID_VALUE,
            InvalidDeviceType => code::INVALID_DEVICE_TYPE,
            InvalidPlatform => code::INVALID_PLATFORM,
            InvalidDevice => code::INVALID_DEVICE,
            InvalidContext => code::INVALID_CONTEXT,
            InvalidQueueProperties => code::INVALID_QUEUE_PROPERTIES,
            InvalidCommandQueue => code::INVALID_COMMAND_QUEUE,
            InvalidHostPtr => code::INVALID_HOST_PTR,
            InvalidMemObject => code::INVALID_MEM_OBJECT,
            InvalidKernelName => code::INVALID_KERNEL_NAME,
            InvalidKernel => code::INVALID_KERNEL,
            InvalidArgIndex => code::INVALID_ARG_INDEX,
            InvalidArgValue => code::INVALID_ARG_VALUE,
            InvalidArgSize => code::INVALID_ARG_SIZE,
            InvalidKernelArgs => code::INVALID_KERNEL_ARGS,
            InvalidWorkDimension => code::INVALID_WORK_DIMENSION,
            InvalidWorkGroupSize => code::INVALID_WORK_GROUP_SIZE,
            InvalidEventWaitList => code::INVALID_EVENT_WAIT_LIST,
            InvalidEvent => code::INVALID_EVENT,
            InvalidOperation => code::INVALID_OPERATION,
            InvalidBufferSize => code::INVALID_BUFFER_SIZE,
            InvalidProperty => code::INVALID_PROPERTY,
        }
    }

    /// The code's name, e.g. `CL_INVALID_VALUE`.
    pub fn name(self) -> &'static str {
        use ClErrorKind::*;
        match self {
            DeviceNotFound => "CL_DEVICE_NOT_FOUND",
            CompilerNotAvailable => "CL_COMPILER_NOT_AVAILABLE",
            OutOfResources => "CL_OUT_OF_RESOURCES",
            OutOfHostMemory => "CL_OUT_OF_HOST_MEMORY",
            ProfilingInfoNotAvailable => "CL_PROFILING_INFO_NOT_AVAILABLE",
            MemCopyOverlap => "CL_MEM_COPY_OVERLAP",
            MapFailure => "CL_MAP_FAILURE",
            ExecStatusErrorForEventsInWaitList => "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
            InvalidValue => "CL_INVALID_VALUE",
            InvalidDeviceType => "CL_INVALID_DEVICE_TYPE",
            InvalidPlatform => "CL_INVALID_PLATFORM",
            InvalidDevice => "CL_INVALID_DEVICE",
            InvalidContext => "CL_INVALID_CONTEXT",
            InvalidQueueProperties => "CL_INVALID_QUEUE_PROPERTIES",
            InvalidCommandQueue => "CL_INVALID_COMMAND_QUEUE",
            InvalidHostPtr => "CL_INVALID_HOST_PTR",
            InvalidMemObject => "CL_INVALID_MEM_OBJECT",
            InvalidKernelName => "CL_INVALID_KERNEL_NAME",
            InvalidKernel => "CL_INVALID_KERNEL",
            InvalidArgIndex => "CL_INVALID_ARG_INDEX",
            InvalidArgValue => "CL_INVALID_ARG_VALUE",
            InvalidArgSize => "CL_INVALID_ARG_SIZE",
            InvalidKernelArgs => "CL_INVALID_KERNEL_ARGS",
            InvalidWorkDimension => "CL_INVALID_WORK_DIMENSION",
            InvalidWorkGroupSize => "CL_INVALID_WORK_GROUP_SIZE",
            InvalidEventWaitList => "CL_INVALID_EVENT_WAIT_LIST",
            InvalidEvent => "CL_INVALID_EVENT",
            InvalidOperation => "CL_INVALID_OPERATION",
            InvalidBufferSize => "CL_INVALID_BUFFER_SIZE",
            InvalidProperty => "CL_INVALID_PROPERTY",
        }
    }
}

/// A CL error with the reason, e.g.
/// `CL_INVALID_VALUE: alignment 24 is not zero or a power of two`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClError {
    /// Which error (and so which code).
    pub kind: ClErrorKind,
    /// What was wrong with which argument.
    pub message: String,
}

impl ClError {
    /// An error of `kind` with a message.
    pub fn new(kind: ClErrorKind, message: impl Into<String>) -> ClError {
        ClError { kind, message: message.into() }
    }

    /// The CL error code.
    pub fn code(&self) -> i32 {
        self.kind.code()
    }
}

impl fmt::Display for ClError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for ClError {}

/// Result of the OpenCL-shaped API.
pub type ClResult<T> = Result<T, ClError>;

/// Shorthand: `Err(ClError)` of `kind` with a formatted message.
#[macro_export]
#[doc(hidden)]
macro_rules! cl_err {
    ($kind:ident, $($fmt:tt)+) => {
        Err($crate::error::ClError::new($crate::error::ClErrorKind::$kind, format!($($fmt)+)))
    };
}
