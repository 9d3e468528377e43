//! dmabridge as an OpenCL ICD: the C face that the standard loaders
//! (ocl-icd, the Khronos loader) load, a thin shell over the Rust API of the
//! `dmabridge` crate.
//!
//! - [`dispatch`]: the one list of entry points, giving the dispatch table
//!   (every slot filled) and the extension lookup.
//! - [`handles`]: the object header, handle validation against a registry
//!   of live objects, reference counts.
//! - [`entry`]: what every entry point runs under (`catch_unwind`,
//!   `errcode_ret`, wait lists, `param_value` rules).
//! - [`api`]: the entry points, one file per area.
//! - [`notify`]: the messages of failed calls, to the context's
//!   `pfn_notify` and (`DMABRIDGE_LOG`) to stderr.
//! - `per_thread`: the ICD's per-thread state, in one thread-local (each
//!   access is a call into the dynamic linker), found once per call.
//!
//! Only the three symbols the loaders look up are exported. They forward to
//! the crate's own (unexported) functions, which the dispatch table also
//! points to: a table entry never resolves to the loader's symbol of the
//! same name.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod api;
pub mod dispatch;
pub mod entry;
pub mod handles;
mod hazard;
pub mod notify;
mod per_thread;
mod stubs;

use std::ffi::{c_char, c_void};

use opencl_sys::{cl_int, cl_platform_id, cl_platform_info, cl_uint};

/// `clIcdGetPlatformIDsKHR` (cl_khr_icd): the platforms of this ICD.
///
/// # Safety
/// The OpenCL contract of `clGetPlatformIDs`.
#[no_mangle]
pub unsafe extern "C" fn clIcdGetPlatformIDsKHR(
    num_entries: cl_uint,
    platforms: *mut cl_platform_id,
    num_platforms: *mut cl_uint,
) -> cl_int {
    // SAFETY: forwarded to the caller.
    unsafe { api::platform::clGetPlatformIDs(num_entries, platforms, num_platforms) }
}

/// `clGetPlatformInfo`, which the loaders call to read
/// `CL_PLATFORM_ICD_SUFFIX_KHR` and the extensions.
///
/// # Safety
/// The OpenCL contract of `clGetPlatformInfo`.
#[no_mangle]
pub unsafe extern "C" fn clGetPlatformInfo(
    platform: cl_platform_id,
    param_name: cl_platform_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: forwarded to the caller.
    unsafe {
        api::platform::clGetPlatformInfo(platform, param_name, param_value_size, param_value, param_value_size_ret)
    }
}

/// `clGetExtensionFunctionAddress`: the loaders ask it for
/// `clIcdGetPlatformIDsKHR`; it answers every extension entry point.
///
/// # Safety
/// `func_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn clGetExtensionFunctionAddress(func_name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded to the caller.
    unsafe { api::platform::clGetExtensionFunctionAddress(func_name) }
}
