//! Device entry points (`runtime::device`, `runtime::info`).

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::runtime::info;
use opencl_sys::*;

use crate::entry::{status, write_opt, Cl, ClRes};
use crate::handles::{self, check_platform, device_handle, DeviceObj};
use crate::info::{get_info, Handles};

/// Every `cl_device_type` bit `clGetDeviceIDs` accepts.
const KNOWN_TYPES: cl_device_type = CL_DEVICE_TYPE_DEFAULT
    | CL_DEVICE_TYPE_CPU
    | CL_DEVICE_TYPE_GPU
    | CL_DEVICE_TYPE_ACCELERATOR
    | CL_DEVICE_TYPE_CUSTOM;

/// The devices of type `device_type`: `CL_INVALID_DEVICE_TYPE` for unknown
/// bits, `CL_DEVICE_NOT_FOUND` when none matches. The default device is
/// the CPU device (the first); `CL_DEVICE_TYPE_ALL` is every device (none
/// is a custom device).
pub(crate) fn devices_of_type(device_type: cl_device_type) -> ClRes<Vec<Arc<Device>>> {
    if device_type != CL_DEVICE_TYPE_ALL && (device_type == 0 || device_type & !KNOWN_TYPES != 0) {
        return Err(CL_INVALID_DEVICE_TYPE);
    }
    let all = dmabridge::runtime::platform::Platform::get().devices();
    let found: Vec<Arc<Device>> = all
        .iter()
        .enumerate()
        .filter(|(i, d)| {
            device_type == CL_DEVICE_TYPE_ALL
                || (device_type & CL_DEVICE_TYPE_DEFAULT != 0 && *i == 0)
                || (device_type & CL_DEVICE_TYPE_CPU != 0 && d.device_type == DeviceType::Cpu)
                || (device_type & CL_DEVICE_TYPE_ACCELERATOR != 0 && d.device_type == DeviceType::Accelerator)
        })
        .map(|(_, d)| d.clone())
        .collect();
    if found.is_empty() {
        return Err(CL_DEVICE_NOT_FOUND);
    }
    Ok(found)
}

/// `clGetDeviceIDs`.
pub(crate) unsafe extern "C" fn clGetDeviceIDs(
    platform: cl_platform_id,
    device_type: cl_device_type,
    num_entries: cl_uint,
    devices: *mut cl_device_id,
    num_devices: *mut cl_uint,
) -> cl_int {
    status("clGetDeviceIDs", || {
        check_platform(platform, true)?;
        if (num_entries == 0 && !devices.is_null()) || (devices.is_null() && num_devices.is_null()) {
            return Err(CL_INVALID_VALUE);
        }
        let found = devices_of_type(device_type)?;
        if !devices.is_null() {
            for (i, d) in found.iter().take(num_entries as usize).enumerate() {
                // SAFETY: the C contract: `devices` holds `num_entries` entries.
                unsafe { devices.add(i).write(device_handle(d)) };
            }
        }
        // SAFETY: the C contract: NULL or writable.
        unsafe { write_opt(num_devices, found.len() as cl_uint) };
        Ok(())
    })
}

/// `clGetDeviceInfo`: the core's answers (root devices answer a reference
/// count of 1), with handles as C handles.
pub(crate) unsafe extern "C" fn clGetDeviceInfo(
    device: cl_device_id,
    param_name: cl_device_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetDeviceInfo", param_value_size, param_value, param_value_size_ret, || {
            let dev = handles::get::<DeviceObj>(device.cast())?;
            if let Some(v) = compiler_info(&dev.inner.device, param_name) {
                return Ok((v, Handles::default()));
            }
            Ok((dmabridge::ext::device_info(&dev.inner.device, param_name).cl()?, Handles::default()))
        })
    }
}

/// What PoCL changes of the CPU device's answers once it is loaded
/// (`crate::pocl`): a compiler and a linker, PoCL's OpenCL C versions, the
/// OpenCL C extensions and features PoCL gives (added to the core's
/// extensions; `pocl::language` says which), and with `cl_khr_fp64` PoCL's
/// double-precision answers. Without PoCL, and for other devices, the core's
/// answers stand.
fn compiler_info(device: &Device, param: cl_device_info) -> Option<info::InfoValue> {
    if device.device_type != DeviceType::Cpu
        || !matches!(
            param,
            CL_DEVICE_COMPILER_AVAILABLE
                | CL_DEVICE_LINKER_AVAILABLE
                | CL_DEVICE_OPENCL_C_VERSION
                | CL_DEVICE_OPENCL_C_ALL_VERSIONS
                | CL_DEVICE_OPENCL_C_FEATURES
                | CL_DEVICE_EXTENSIONS
                | CL_DEVICE_EXTENSIONS_WITH_VERSION
                | CL_DEVICE_DOUBLE_FP_CONFIG
                | CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE
                | CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE
        )
    {
        return None;
    }
    let p = crate::pocl::get()?;
    let lang = &p.language;
    let versions = |list: &[(u32, String)]| list.iter().map(|(v, n)| info::NameVersion::new(n, *v)).collect::<Vec<_>>();
    Some(match param {
        CL_DEVICE_OPENCL_C_VERSION => info::InfoValue::Str(p.c_version.clone()),
        CL_DEVICE_OPENCL_C_ALL_VERSIONS => info::InfoValue::NameVersions(versions(&p.c_all_versions)),
        CL_DEVICE_OPENCL_C_FEATURES => info::InfoValue::NameVersions(versions(&lang.features(device))),
        CL_DEVICE_EXTENSIONS | CL_DEVICE_EXTENSIONS_WITH_VERSION => {
            let mut all = info::device_extensions(device);
            all.extend(versions(&lang.extensions(device)));
            if param == CL_DEVICE_EXTENSIONS_WITH_VERSION {
                info::InfoValue::NameVersions(all)
            } else {
                info::InfoValue::Str(all.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(" "))
            }
        }
        CL_DEVICE_DOUBLE_FP_CONFIG => info::InfoValue::Bits(lang.double_fp_config),
        CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE => info::InfoValue::U32(lang.double_widths.0),
        CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE => info::InfoValue::U32(lang.double_widths.1),
        _ => info::InfoValue::Bool(true),
    })
}

/// `clRetainDevice`: root devices are not counted.
pub(crate) unsafe extern "C" fn clRetainDevice(device: cl_device_id) -> cl_int {
    status("clRetainDevice", || handles::get::<DeviceObj>(device.cast()).map(drop))
}

/// `clReleaseDevice`: root devices are not counted.
pub(crate) unsafe extern "C" fn clReleaseDevice(device: cl_device_id) -> cl_int {
    status("clReleaseDevice", || handles::get::<DeviceObj>(device.cast()).map(drop))
}
