//! Platform entry points (`runtime::platform`, `runtime::info`).

use std::ffi::{c_char, c_void, CStr};

use opencl_sys::*;

use crate::dispatch;
use crate::entry::{status, write_opt, Cl, ClRes};
use crate::handles::{check_platform, platform_handle};
use crate::info::{get_info, Handles};

/// `clGetPlatformIDs` and `clIcdGetPlatformIDsKHR`: the one platform.
pub(crate) unsafe extern "C" fn clGetPlatformIDs(
    num_entries: cl_uint,
    platforms: *mut cl_platform_id,
    num_platforms: *mut cl_uint,
) -> cl_int {
    // The first call of every application: the logger `DMABRIDGE_LOG` asks for.
    crate::notify::init_logging();
    status("clGetPlatformIDs", || {
        if (num_entries == 0 && !platforms.is_null()) || (platforms.is_null() && num_platforms.is_null()) {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `platforms` holds `num_entries > 0` entries
        // when given, `num_platforms` is NULL or writable.
        unsafe {
            write_opt(platforms, platform_handle());
            write_opt(num_platforms, 1);
        }
        Ok(())
    })
}

/// `clGetPlatformInfo`.
pub(crate) unsafe extern "C" fn clGetPlatformInfo(
    platform: cl_platform_id,
    param_name: cl_platform_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetPlatformInfo", param_value_size, param_value, param_value_size_ret, || {
            check_platform(platform, true)?;
            Ok((dmabridge::ext::platform_info(param_name).cl()?, Handles::default()))
        })
    }
}

/// `clUnloadPlatformCompiler`: a hint; there is no compiler to unload.
pub(crate) unsafe extern "C" fn clUnloadPlatformCompiler(platform: cl_platform_id) -> cl_int {
    status("clUnloadPlatformCompiler", || check_platform(platform, false))
}

/// `clUnloadCompiler` (OpenCL 1.0): a hint, always successful.
pub(crate) unsafe extern "C" fn clUnloadCompiler() -> cl_int {
    CL_SUCCESS
}

/// The name of `func_name` as bytes (no UTF-8 needed), or None for NULL.
///
/// # Safety
/// `func_name` is NULL or a NUL-terminated string.
unsafe fn name<'a>(func_name: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract.
    (!func_name.is_null()).then(|| unsafe { CStr::from_ptr(func_name) }.to_bytes())
}

fn lookup(name: Option<&[u8]>) -> ClRes<*mut c_void> {
    Ok(name.map_or(std::ptr::null_mut(), dispatch::extension_function))
}

/// `clGetExtensionFunctionAddressForPlatform`: the extension entry points
/// (NULL for an unknown name, a NULL name or another platform).
pub(crate) unsafe extern "C" fn clGetExtensionFunctionAddressForPlatform(
    platform: cl_platform_id,
    func_name: *const c_char,
) -> *mut c_void {
    let mut code = 0;
    // SAFETY: `code` is a local; the name is NUL-terminated by the C contract.
    unsafe {
        crate::entry::object("clGetExtensionFunctionAddressForPlatform", &mut code, || {
            check_platform(platform, false)?;
            lookup(name(func_name))
        })
    }
}

/// `clGetExtensionFunctionAddress` (deprecated, and what the loaders ask
/// for `clIcdGetPlatformIDsKHR`).
pub(crate) unsafe extern "C" fn clGetExtensionFunctionAddress(func_name: *const c_char) -> *mut c_void {
    let mut code = 0;
    // SAFETY: `code` is a local; the name is NUL-terminated by the C contract.
    unsafe { crate::entry::object("clGetExtensionFunctionAddress", &mut code, || lookup(name(func_name))) }
}
