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
    pub const IMAGE_FORMAT_MISMATCH: i32 = -9;
    pub const IMAGE_FORMAT_NOT_SUPPORTED: i32 = -10;
    pub const BUILD_PROGRAM_FAILURE: i32 = -11;
    pub const MAP_FAILURE: i32 = -12;
    pub const MISALIGNED_SUB_BUFFER_OFFSET: i32 = -13;
    pub const EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: i32 = -14;
    pub const COMPILE_PROGRAM_FAILURE: i32 = -15;
    pub const LINKER_NOT_AVAILABLE: i32 = -16;
    pub const LINK_PROGRAM_FAILURE: i32 = -17;
    pub const INVALID_VALUE: i32 = -30;
    pub const INVALID_DEVICE_TYPE: i32 = -31;
    pub const INVALID_PLATFORM: i32 = -32;
    pub const INVALID_DEVICE: i32 = -33;
    pub const INVALID_CONTEXT: i32 = -34;
    pub const INVALID_QUEUE_PROPERTIES: i32 = -35;
    pub const INVALID_COMMAND_QUEUE: i32 = -36;
    pub const INVALID_HOST_PTR: i32 = -37;
    pub const INVALID_MEM_OBJECT: i32 = -38;
    pub const INVALID_IMAGE_FORMAT_DESCRIPTOR: i32 = -39;
    pub const INVALID_IMAGE_SIZE: i32 = -40;
    pub const INVALID_SAMPLER: i32 = -41;
    pub const INVALID_BINARY: i32 = -42;
    pub const INVALID_BUILD_OPTIONS: i32 = -43;
    pub const INVALID_PROGRAM: i32 = -44;
    pub const INVALID_PROGRAM_EXECUTABLE: i32 = -45;
    pub const INVALID_KERNEL_NAME: i32 = -46;
    pub const INVALID_KERNEL_DEFINITION: i32 = -47;
    pub const INVALID_KERNEL: i32 = -48;
    pub const INVALID_ARG_INDEX: i32 = -49;
    pub const INVALID_ARG_VALUE: i32 = -50;
    pub const INVALID_ARG_SIZE: i32 = -51;
    pub const INVALID_KERNEL_ARGS: i32 = -52;
    pub const INVALID_WORK_DIMENSION: i32 = -53;
    pub const INVALID_WORK_GROUP_SIZE: i32 = -54;
    pub const INVALID_WORK_ITEM_SIZE: i32 = -55;
    pub const INVALID_GLOBAL_OFFSET: i32 = -56;
    pub const INVALID_EVENT_WAIT_LIST: i32 = -57;
    pub const INVALID_EVENT: i32 = -58;
    pub const INVALID_OPERATION: i32 = -59;
    pub const INVALID_BUFFER_SIZE: i32 = -61;
    pub const INVALID_GLOBAL_WORK_SIZE: i32 = -63;
    pub const INVALID_PROPERTY: i32 = -64;
    pub const INVALID_IMAGE_DESCRIPTOR: i32 = -65;
    pub const INVALID_COMPILER_OPTIONS: i32 = -66;
    pub const INVALID_LINKER_OPTIONS: i32 = -67;
    pub const INVALID_SEMAPHORE_KHR: i32 = -1142;
}

/// Defines [`ClErrorKind`] with its code and name from one table, so that
/// the three can never drift apart.
macro_rules! kinds {
    ($($variant:ident = $code:ident, $name:literal;)+) => {
        /// Which CL error.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum ClErrorKind {
            $($variant,)+
        }

        impl ClErrorKind {
            /// Every kind.
            pub const ALL: &'static [ClErrorKind] = &[$(ClErrorKind::$variant,)+];

            /// The CL error code.
            ///
            /// No OpenCL function of its own: the `cl_int` that every
            /// OpenCL function returns or stores in `errcode_ret`.
            ///
            /// ```
            /// use dmabridge::error::{code, ClErrorKind};
            /// assert_eq!(ClErrorKind::InvalidValue.code(), code::INVALID_VALUE);
            /// assert_eq!(ClErrorKind::InvalidValue.code(), -30);
            /// assert!(ClErrorKind::ALL.iter().all(|k| k.code() < 0));
            /// ```
            pub fn code(self) -> i32 {
                match self {
                    $(ClErrorKind::$variant => code::$code,)+
                }
            }

            /// The code's name, e.g. `CL_INVALID_VALUE`.
            ///
            /// No OpenCL function of its own: how errors are printed (the
            /// CLI, logs, [`ClError`]'s `Display`).
            ///
            /// ```
            /// use dmabridge::error::ClErrorKind;
            /// assert_eq!(ClErrorKind::MemCopyOverlap.name(), "CL_MEM_COPY_OVERLAP");
            /// assert!(ClErrorKind::ALL.iter().all(|k| k.name().starts_with("CL_")));
            /// ```
            pub fn name(self) -> &'static str {
                match self {
                    $(ClErrorKind::$variant => $name,)+
                }
            }
        }
    };
}

kinds! {
    DeviceNotFound = DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND";
    DeviceNotAvailable = DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE";
    CompilerNotAvailable = COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE";
    MemObjectAllocationFailure = MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    OutOfResources = OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES";
    OutOfHostMemory = OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY";
    ProfilingInfoNotAvailable = PROFILING_INFO_NOT_AVAILABLE, "CL_PROFILING_INFO_NOT_AVAILABLE";
    MemCopyOverlap = MEM_COPY_OVERLAP, "CL_MEM_COPY_OVERLAP";
    ImageFormatMismatch = IMAGE_FORMAT_MISMATCH, "CL_IMAGE_FORMAT_MISMATCH";
    ImageFormatNotSupported = IMAGE_FORMAT_NOT_SUPPORTED, "CL_IMAGE_FORMAT_NOT_SUPPORTED";
    BuildProgramFailure = BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE";
    MapFailure = MAP_FAILURE, "CL_MAP_FAILURE";
    MisalignedSubBufferOffset = MISALIGNED_SUB_BUFFER_OFFSET, "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    ExecStatusErrorForEventsInWaitList = EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    CompileProgramFailure = COMPILE_PROGRAM_FAILURE, "CL_COMPILE_PROGRAM_FAILURE";
    LinkerNotAvailable = LINKER_NOT_AVAILABLE, "CL_LINKER_NOT_AVAILABLE";
    LinkProgramFailure = LINK_PROGRAM_FAILURE, "CL_LINK_PROGRAM_FAILURE";
    InvalidValue = INVALID_VALUE, "CL_INVALID_VALUE";
    InvalidDeviceType = INVALID_DEVICE_TYPE, "CL_INVALID_DEVICE_TYPE";
    InvalidPlatform = INVALID_PLATFORM, "CL_INVALID_PLATFORM";
    InvalidDevice = INVALID_DEVICE, "CL_INVALID_DEVICE";
    InvalidContext = INVALID_CONTEXT, "CL_INVALID_CONTEXT";
    InvalidQueueProperties = INVALID_QUEUE_PROPERTIES, "CL_INVALID_QUEUE_PROPERTIES";
    InvalidCommandQueue = INVALID_COMMAND_QUEUE, "CL_INVALID_COMMAND_QUEUE";
    InvalidHostPtr = INVALID_HOST_PTR, "CL_INVALID_HOST_PTR";
    InvalidMemObject = INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT";
    InvalidImageFormatDescriptor = INVALID_IMAGE_FORMAT_DESCRIPTOR, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR";
    InvalidImageSize = INVALID_IMAGE_SIZE, "CL_INVALID_IMAGE_SIZE";
    InvalidSampler = INVALID_SAMPLER, "CL_INVALID_SAMPLER";
    InvalidBinary = INVALID_BINARY, "CL_INVALID_BINARY";
    InvalidBuildOptions = INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS";
    InvalidProgram = INVALID_PROGRAM, "CL_INVALID_PROGRAM";
    InvalidProgramExecutable = INVALID_PROGRAM_EXECUTABLE, "CL_INVALID_PROGRAM_EXECUTABLE";
    InvalidKernelName = INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME";
    InvalidKernelDefinition = INVALID_KERNEL_DEFINITION, "CL_INVALID_KERNEL_DEFINITION";
    InvalidKernel = INVALID_KERNEL, "CL_INVALID_KERNEL";
    InvalidArgIndex = INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX";
    InvalidArgValue = INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE";
    InvalidArgSize = INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE";
    InvalidKernelArgs = INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS";
    InvalidWorkDimension = INVALID_WORK_DIMENSION, "CL_INVALID_WORK_DIMENSION";
    InvalidWorkGroupSize = INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE";
    InvalidWorkItemSize = INVALID_WORK_ITEM_SIZE, "CL_INVALID_WORK_ITEM_SIZE";
    InvalidGlobalOffset = INVALID_GLOBAL_OFFSET, "CL_INVALID_GLOBAL_OFFSET";
    InvalidEventWaitList = INVALID_EVENT_WAIT_LIST, "CL_INVALID_EVENT_WAIT_LIST";
    InvalidEvent = INVALID_EVENT, "CL_INVALID_EVENT";
    InvalidOperation = INVALID_OPERATION, "CL_INVALID_OPERATION";
    InvalidBufferSize = INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE";
    InvalidGlobalWorkSize = INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE";
    InvalidProperty = INVALID_PROPERTY, "CL_INVALID_PROPERTY";
    InvalidImageDescriptor = INVALID_IMAGE_DESCRIPTOR, "CL_INVALID_IMAGE_DESCRIPTOR";
    InvalidCompilerOptions = INVALID_COMPILER_OPTIONS, "CL_INVALID_COMPILER_OPTIONS";
    InvalidLinkerOptions = INVALID_LINKER_OPTIONS, "CL_INVALID_LINKER_OPTIONS";
    InvalidSemaphoreKhr = INVALID_SEMAPHORE_KHR, "CL_INVALID_SEMAPHORE_KHR";
}

impl ClErrorKind {
    /// The kind of a CL error code, if it is one dmabridge knows.
    ///
    /// No OpenCL function of its own: the inverse of [`ClErrorKind::code`],
    /// for codes that come back from the C face or a command's execution
    /// status.
    ///
    /// ```
    /// use dmabridge::error::{code, ClErrorKind};
    /// assert_eq!(ClErrorKind::from_code(code::INVALID_HOST_PTR), Some(ClErrorKind::InvalidHostPtr));
    /// assert_eq!(ClErrorKind::from_code(code::SUCCESS), None, "success is not an error");
    /// for &k in ClErrorKind::ALL {
    ///     assert_eq!(ClErrorKind::from_code(k.code()), Some(k));
    /// }
    /// ```
    pub fn from_code(code: i32) -> Option<ClErrorKind> {
        ClErrorKind::ALL.iter().copied().find(|k| k.code() == code)
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
    ///
    /// No OpenCL function of its own: how every function of the Rust API
    /// reports a failure (the C face returns its [`code`](ClError::code)).
    ///
    /// ```
    /// use dmabridge::error::{ClError, ClErrorKind};
    /// let e = ClError::new(ClErrorKind::InvalidValue, "alignment 24 is not zero or a power of two");
    /// assert_eq!(e.kind, ClErrorKind::InvalidValue);
    /// assert_eq!(e.to_string(), "CL_INVALID_VALUE: alignment 24 is not zero or a power of two");
    /// ```
    pub fn new(kind: ClErrorKind, message: impl Into<String>) -> ClError {
        ClError { kind, message: message.into() }
    }

    /// The CL error code.
    ///
    /// No OpenCL function of its own: what the C face returns (or stores in
    /// `errcode_ret`) for this error.
    ///
    /// ```
    /// use dmabridge::error::{code, ClError, ClErrorKind};
    /// let e = ClError::new(ClErrorKind::InvalidBufferSize, "size 0");
    /// assert_eq!(e.code(), code::INVALID_BUFFER_SIZE);
    /// ```
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_names_and_kinds_agree() {
        for &k in ClErrorKind::ALL {
            assert_eq!(ClErrorKind::from_code(k.code()), Some(k));
            assert!(k.name().starts_with("CL_") && k.code() < 0, "{k:?}");
        }
        assert_eq!(ClErrorKind::from_code(0), None);
        assert_eq!(ClErrorKind::from_code(-9999), None);
        let mut codes: Vec<i32> = ClErrorKind::ALL.iter().map(|k| k.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), ClErrorKind::ALL.len(), "two kinds share a code");
    }
}
