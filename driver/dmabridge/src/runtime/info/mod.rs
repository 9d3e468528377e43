//! The `clGet{Platform,Device,Context,CommandQueue,Event,Kernel}Info` queries: what
//! each object answers, as a typed [`InfoValue`] that also knows its C
//! representation (size and bytes), and [`copy_out`], the OpenCL
//! `param_value` / `param_value_size_ret` rule over it.
//!
//! Object handles ([`InfoValue::DeviceIds`], [`InfoValue::Device`],
//! [`InfoValue::Context`], [`InfoValue::Queue`], [`InfoValue::Platform`]) are
//! answered as the Rust objects: a face writes them as its own handles with
//! [`InfoValue::encode`] and the [`HandleEncoder`] it passes in (the ICD's
//! handle registry), so [`InfoValue::write`] refuses the non-null ones.
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
//!
//! One file per object: [`platform`](platform_info), [`device`](device_info),
//! the context, queue and event queries (`objects.rs`), kernels
//! (`kernel.rs`; programs are the ICD's objects); the parameter names
//! (`params.rs`), the answer's shape and its C bytes (`value.rs`), and the
//! extension strings (`extensions.rs`). Buffer objects answer
//! `clGetMemObjectInfo` themselves
//! ([`Buffer::info`](crate::runtime::buffer::Buffer::info)), in the same
//! [`InfoValue`] shape.

mod device;
mod extensions;
mod kernel;
mod objects;
mod params;
mod platform;
mod value;

pub use device::device_info;
pub use extensions::{
    device_extensions, extensions, platform_extensions, Extension, Requires, EXTENSIONS, EXTENSION_VERSION,
};
pub use kernel::{kernel_info, kernel_work_group_info};
pub use objects::{context_info, event_info, event_profiling_info, queue_info};
pub use params::*;
pub use platform::platform_info;
pub use value::{copy_out, HandleEncoder, InfoValue, NameVersion, NAME_VERSION_MAX_NAME_SIZE};

use crate::error::{ClError, ClErrorKind};

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

/// `n` as a `cl_uint`, saturated (counts of objects never reach it).
fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `CL_INVALID_VALUE` for a `param_name` the query `what` does not answer.
fn unknown(what: &str, param: u32) -> ClError {
    ClError::new(ClErrorKind::InvalidValue, format!("param_name {param:#x} is not a {what} this platform answers"))
}
