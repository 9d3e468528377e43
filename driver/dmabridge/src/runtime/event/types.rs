//! The values of events: the `CL_COMMAND_*`, execution-status and profiling
//! constants (with the name table of command types used in error messages),
//! [`EventStatus`], [`ProfilingTimes`] and the clock they are read from
//! ([`now_ns`]). Plain data with no behaviour of an event, kept apart from
//! the [`Event`](super::Event) API.

/// `cl_command_type` values (`CL_EVENT_COMMAND_TYPE`).
pub mod command_type {
    /// `CL_COMMAND_USER`: a user event.
    pub const USER: u32 = 0x1204;
    /// `CL_COMMAND_MARKER`.
    pub const MARKER: u32 = 0x11FE;
    /// `CL_COMMAND_BARRIER`.
    pub const BARRIER: u32 = 0x1205;
    /// `CL_COMMAND_SVM_FREE`.
    pub const SVM_FREE: u32 = 0x1209;
    /// `CL_COMMAND_SVM_MEMCPY`.
    pub const SVM_MEMCPY: u32 = 0x120A;
    /// `CL_COMMAND_SVM_MEMFILL`.
    pub const SVM_MEMFILL: u32 = 0x120B;
    /// `CL_COMMAND_SVM_MAP`.
    pub const SVM_MAP: u32 = 0x120C;
    /// `CL_COMMAND_SVM_UNMAP`.
    pub const SVM_UNMAP: u32 = 0x120D;
    /// `CL_COMMAND_SVM_MIGRATE_MEM`.
    pub const MIGRATE_SVM_MEM_OBJECTS: u32 = 0x120E;
    /// `CL_COMMAND_MEMFILL_INTEL` (`clEnqueueMemFillINTEL`).
    pub const MEMFILL_INTEL: u32 = 0x4204;
    /// `CL_COMMAND_MEMCPY_INTEL` (`clEnqueueMemcpyINTEL`).
    pub const MEMCPY_INTEL: u32 = 0x4205;
    /// `CL_COMMAND_MIGRATEMEM_INTEL` (`clEnqueueMigrateMemINTEL`).
    pub const MIGRATEMEM_INTEL: u32 = 0x4206;
    /// `CL_COMMAND_MEMADVISE_INTEL` (`clEnqueueMemAdviseINTEL`).
    pub const MEMADVISE_INTEL: u32 = 0x4207;

    /// `CL_COMMAND_WAIT_SIGNAL_AMD` (`clEnqueueWaitSignalAMD`).
    pub const WAIT_SIGNAL_AMD: u32 = 0x4080;
    /// `CL_COMMAND_WRITE_SIGNAL_AMD` (`clEnqueueWriteSignalAMD`).
    pub const WRITE_SIGNAL_AMD: u32 = 0x4081;
    /// `CL_COMMAND_MAKE_BUFFERS_RESIDENT_AMD`
    /// (`clEnqueueMakeBuffersResidentAMD`).
    pub const MAKE_BUFFERS_RESIDENT_AMD: u32 = 0x4082;

    /// `CL_COMMAND_NDRANGE_KERNEL`.
    pub const NDRANGE_KERNEL: u32 = 0x11F0;
    /// `CL_COMMAND_TASK`.
    pub const TASK: u32 = 0x11F1;
    /// `CL_COMMAND_NATIVE_KERNEL`.
    pub const NATIVE_KERNEL: u32 = 0x11F2;

    /// `CL_COMMAND_READ_BUFFER`.
    pub const READ_BUFFER: u32 = 0x11F3;
    /// `CL_COMMAND_WRITE_BUFFER`.
    pub const WRITE_BUFFER: u32 = 0x11F4;
    /// `CL_COMMAND_COPY_BUFFER`.
    pub const COPY_BUFFER: u32 = 0x11F5;
    /// `CL_COMMAND_MAP_BUFFER`.
    pub const MAP_BUFFER: u32 = 0x11FB;
    /// `CL_COMMAND_UNMAP_MEM_OBJECT`.
    pub const UNMAP_MEM_OBJECT: u32 = 0x11FD;
    /// `CL_COMMAND_READ_BUFFER_RECT`.
    pub const READ_BUFFER_RECT: u32 = 0x1201;
    /// `CL_COMMAND_WRITE_BUFFER_RECT`.
    pub const WRITE_BUFFER_RECT: u32 = 0x1202;
    /// `CL_COMMAND_COPY_BUFFER_RECT`.
    pub const COPY_BUFFER_RECT: u32 = 0x1203;
    /// `CL_COMMAND_FILL_BUFFER`.
    pub const FILL_BUFFER: u32 = 0x1207;
    /// `CL_COMMAND_MIGRATE_MEM_OBJECTS`.
    pub const MIGRATE_MEM_OBJECTS: u32 = 0x1206;
    /// `CL_COMMAND_READ_IMAGE`.
    pub const READ_IMAGE: u32 = 0x11F6;
    /// `CL_COMMAND_WRITE_IMAGE`.
    pub const WRITE_IMAGE: u32 = 0x11F7;
    /// `CL_COMMAND_COPY_IMAGE`.
    pub const COPY_IMAGE: u32 = 0x11F8;
    /// `CL_COMMAND_COPY_IMAGE_TO_BUFFER`.
    pub const COPY_IMAGE_TO_BUFFER: u32 = 0x11F9;
    /// `CL_COMMAND_COPY_BUFFER_TO_IMAGE`.
    pub const COPY_BUFFER_TO_IMAGE: u32 = 0x11FA;
    /// `CL_COMMAND_MAP_IMAGE`.
    pub const MAP_IMAGE: u32 = 0x11FC;
    /// `CL_COMMAND_FILL_IMAGE`.
    pub const FILL_IMAGE: u32 = 0x1208;

    /// The constant's name without the `CL_` prefix, for error messages
    /// (`"command"` for a type this module does not list).
    ///
    /// No OpenCL function of its own: names a `CL_COMMAND_*` value.
    ///
    /// ```
    /// use dmabridge::runtime::event::command_type;
    /// assert_eq!(command_type::name(command_type::MEMCPY_INTEL), "COMMAND_MEMCPY_INTEL");
    /// assert_eq!(command_type::name(0), "command");
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn name(command_type: u32) -> &'static str {
        match command_type {
            USER => "COMMAND_USER",
            MARKER => "COMMAND_MARKER",
            BARRIER => "COMMAND_BARRIER",
            SVM_FREE => "COMMAND_SVM_FREE",
            SVM_MEMCPY => "COMMAND_SVM_MEMCPY",
            SVM_MEMFILL => "COMMAND_SVM_MEMFILL",
            SVM_MAP => "COMMAND_SVM_MAP",
            SVM_UNMAP => "COMMAND_SVM_UNMAP",
            MIGRATE_SVM_MEM_OBJECTS => "COMMAND_MIGRATE_SVM_MEM_OBJECTS",
            MEMFILL_INTEL => "COMMAND_MEMFILL_INTEL",
            MEMCPY_INTEL => "COMMAND_MEMCPY_INTEL",
            MIGRATEMEM_INTEL => "COMMAND_MIGRATEMEM_INTEL",
            MEMADVISE_INTEL => "COMMAND_MEMADVISE_INTEL",
            WAIT_SIGNAL_AMD => "COMMAND_WAIT_SIGNAL_AMD",
            WRITE_SIGNAL_AMD => "COMMAND_WRITE_SIGNAL_AMD",
            MAKE_BUFFERS_RESIDENT_AMD => "COMMAND_MAKE_BUFFERS_RESIDENT_AMD",
            NDRANGE_KERNEL => "COMMAND_NDRANGE_KERNEL",
            TASK => "COMMAND_TASK",
            NATIVE_KERNEL => "COMMAND_NATIVE_KERNEL",
            READ_BUFFER => "COMMAND_READ_BUFFER",
            WRITE_BUFFER => "COMMAND_WRITE_BUFFER",
            COPY_BUFFER => "COMMAND_COPY_BUFFER",
            MAP_BUFFER => "COMMAND_MAP_BUFFER",
            UNMAP_MEM_OBJECT => "COMMAND_UNMAP_MEM_OBJECT",
            READ_BUFFER_RECT => "COMMAND_READ_BUFFER_RECT",
            WRITE_BUFFER_RECT => "COMMAND_WRITE_BUFFER_RECT",
            COPY_BUFFER_RECT => "COMMAND_COPY_BUFFER_RECT",
            FILL_BUFFER => "COMMAND_FILL_BUFFER",
            MIGRATE_MEM_OBJECTS => "COMMAND_MIGRATE_MEM_OBJECTS",
            READ_IMAGE => "COMMAND_READ_IMAGE",
            WRITE_IMAGE => "COMMAND_WRITE_IMAGE",
            COPY_IMAGE => "COMMAND_COPY_IMAGE",
            COPY_IMAGE_TO_BUFFER => "COMMAND_COPY_IMAGE_TO_BUFFER",
            COPY_BUFFER_TO_IMAGE => "COMMAND_COPY_BUFFER_TO_IMAGE",
            MAP_IMAGE => "COMMAND_MAP_IMAGE",
            FILL_IMAGE => "COMMAND_FILL_IMAGE",
            _ => "command",
        }
    }
}

/// `CL_EVENT_COMMAND_EXECUTION_STATUS` values; also the `command_exec_callback_type`
/// of `clSetEventCallback`.
pub mod exec_status {
    /// `CL_COMPLETE`.
    pub const COMPLETE: i32 = 0;
    /// `CL_RUNNING`.
    pub const RUNNING: i32 = 1;
    /// `CL_SUBMITTED`.
    pub const SUBMITTED: i32 = 2;
    /// `CL_QUEUED`.
    pub const QUEUED: i32 = 3;
}

/// `cl_profiling_info` values (`clGetEventProfilingInfo`).
pub mod profiling_info {
    /// `CL_PROFILING_COMMAND_QUEUED`.
    pub const QUEUED: u32 = 0x1280;
    /// `CL_PROFILING_COMMAND_SUBMIT`.
    pub const SUBMIT: u32 = 0x1281;
    /// `CL_PROFILING_COMMAND_START`.
    pub const START: u32 = 0x1282;
    /// `CL_PROFILING_COMMAND_END`.
    pub const END: u32 = 0x1283;
    /// `CL_PROFILING_COMMAND_COMPLETE`.
    pub const COMPLETE: u32 = 0x1284;
}

/// The execution status of an event (`CL_EVENT_COMMAND_EXECUTION_STATUS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventStatus {
    /// `CL_QUEUED`: enqueued, waiting for its wait list.
    Queued,
    /// `CL_SUBMITTED`: its wait list is complete; waiting for the device.
    Submitted,
    /// `CL_RUNNING`: executing.
    Running,
    /// `CL_COMPLETE`: done.
    Complete,
    /// Terminated abnormally with this (negative) CL error code.
    Error(i32),
}

impl EventStatus {
    /// The `cl_int` value `clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)` returns.
    ///
    /// ```
    /// use dmabridge::runtime::event::EventStatus;
    /// assert_eq!(EventStatus::Submitted.as_cl(), 2);
    /// assert_eq!(EventStatus::Error(-5).as_cl(), -5);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn as_cl(self) -> i32 {
        match self {
            EventStatus::Queued => exec_status::QUEUED,
            EventStatus::Submitted => exec_status::SUBMITTED,
            EventStatus::Running => exec_status::RUNNING,
            EventStatus::Complete => exec_status::COMPLETE,
            EventStatus::Error(code) => code,
        }
    }

    /// The status of a `cl_int` value (`None` above `CL_QUEUED`).
    ///
    /// ```
    /// use dmabridge::runtime::event::EventStatus;
    /// assert_eq!(EventStatus::from_cl(0), Some(EventStatus::Complete));
    /// assert_eq!(EventStatus::from_cl(-14), Some(EventStatus::Error(-14)));
    /// assert_eq!(EventStatus::from_cl(4), None);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn from_cl(value: i32) -> Option<EventStatus> {
        Some(match value {
            exec_status::QUEUED => EventStatus::Queued,
            exec_status::SUBMITTED => EventStatus::Submitted,
            exec_status::RUNNING => EventStatus::Running,
            exec_status::COMPLETE => EventStatus::Complete,
            v if v < 0 => EventStatus::Error(v),
            _ => return None,
        })
    }

    /// True for `Complete` and `Error`: the status will not change again.
    ///
    /// The statuses `clWaitForEvents` waits for (`CL_COMPLETE` or a negative code).
    ///
    /// ```
    /// use dmabridge::runtime::event::EventStatus;
    /// assert!(EventStatus::Complete.is_terminal() && EventStatus::Error(-5).is_terminal());
    /// assert!(!EventStatus::Running.is_terminal());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn is_terminal(self) -> bool {
        self.as_cl() <= 0
    }
}

/// The five profiling timestamps of a command, in nanoseconds of
/// `CLOCK_MONOTONIC` (`clGetEventProfilingInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProfilingTimes {
    /// `CL_PROFILING_COMMAND_QUEUED`: when it was enqueued.
    pub queued: u64,
    /// `CL_PROFILING_COMMAND_SUBMIT`: when its wait list resolved.
    pub submit: u64,
    /// `CL_PROFILING_COMMAND_START`: when it started executing.
    pub start: u64,
    /// `CL_PROFILING_COMMAND_END`: when it finished executing.
    pub end: u64,
    /// `CL_PROFILING_COMMAND_COMPLETE`: when it and its child commands
    /// finished (there are no child commands: equal to `end`).
    pub complete: u64,
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(crate) fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(t.tv_nsec as u64)
}
