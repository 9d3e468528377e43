//! The Khronos way in: `cl_khr_external_memory` with
//! `cl_khr_external_memory_dma_buf` ([`memory`]: dma-bufs as buffers through
//! `clCreateBufferWithProperties`, on the import path of
//! `cl_arm_import_memory`, and their acquire/release bracket), and
//! `cl_khr_semaphore` with `cl_khr_external_semaphore` and
//! `cl_khr_external_semaphore_sync_fd` ([`semaphore`]: binary semaphores,
//! imported from sync_file fds).
//!
//! **Export.** A semaphore could be exported as a sync_file only with a
//! kernel fence that dmabridge signals later, and production kernels give
//! userspace none (`sw_sync` is a debug option Debian's kernels lack; vgem's
//! fences belong to vgem's buffers and expire after ~10 s). So no export
//! handle type is reported, `CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR` in the
//! properties answers `CL_INVALID_PROPERTY`, and
//! `clGetSemaphoreHandleForTypeKHR` answers `CL_INVALID_VALUE`.
//!
//! Here: the strings, the handle-type queries of the platform and the
//! devices, and the device lists both property lists take.

pub mod image;
pub mod memory;
pub mod semaphore;

use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::info::{Extension, InfoValue, Requires, EXTENSIONS};

/// `cl_khr_external_memory`.
pub const MEMORY_EXTENSION: &str = "cl_khr_external_memory";
/// `cl_khr_external_memory_dma_buf`.
pub const MEMORY_DMA_BUF_EXTENSION: &str = "cl_khr_external_memory_dma_buf";
/// `cl_khr_semaphore`: binary semaphores.
pub const SEMAPHORE_EXTENSION: &str = "cl_khr_semaphore";
/// `cl_khr_external_semaphore`: semaphores from and to handles.
pub const EXTERNAL_SEMAPHORE_EXTENSION: &str = "cl_khr_external_semaphore";
/// `cl_khr_external_semaphore_sync_fd`: the handle is a sync_file fd.
pub const SEMAPHORE_SYNC_FD_EXTENSION: &str = "cl_khr_external_semaphore_sync_fd";

/// Dma-buf import needs what `cl_arm_import_memory` needs: a device that
/// reaches host memory directly. Semaphores are waited for by the queue's
/// worker on any device.
#[linkme::distributed_slice(EXTENSIONS)]
static MEMORY_ROW: Extension = Extension::new(MEMORY_EXTENSION, Requires::HostUnifiedMemory, 600);
#[linkme::distributed_slice(EXTENSIONS)]
static MEMORY_DMA_BUF_ROW: Extension = Extension::new(MEMORY_DMA_BUF_EXTENSION, Requires::HostUnifiedMemory, 601);
#[linkme::distributed_slice(EXTENSIONS)]
static SEMAPHORE_ROW: Extension = Extension::new(SEMAPHORE_EXTENSION, Requires::Always, 610);
#[linkme::distributed_slice(EXTENSIONS)]
static EXTERNAL_SEMAPHORE_ROW: Extension = Extension::new(EXTERNAL_SEMAPHORE_EXTENSION, Requires::Always, 611);
#[linkme::distributed_slice(EXTENSIONS)]
static SEMAPHORE_SYNC_FD_ROW: Extension = Extension::new(SEMAPHORE_SYNC_FD_EXTENSION, Requires::Always, 612);

/// `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`: a property of
/// `clCreateBufferWithProperties` (its value the fd) and a handle type.
pub const EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR: u32 = 0x2067;
/// `CL_SEMAPHORE_HANDLE_SYNC_FD_KHR`: a semaphore property (its value the
/// fd) and a handle type.
pub const SEMAPHORE_HANDLE_SYNC_FD_KHR: u32 = 0x2058;
/// `CL_MEM_DEVICE_HANDLE_LIST_KHR` (also `CL_DEVICE_HANDLE_LIST_KHR` and
/// `CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR`): the devices, ended by 0
/// (`CL_DEVICE_HANDLE_LIST_END_KHR`).
pub const DEVICE_HANDLE_LIST_KHR: u64 = 0x2051;

/// The platform and device queries of the extensions.
pub mod info_param {
    /// `CL_PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR`.
    pub const PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR: u32 = 0x2044;
    /// `CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR`.
    pub const DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR: u32 = 0x204F;
    /// `CL_PLATFORM_SEMAPHORE_TYPES_KHR`.
    pub const PLATFORM_SEMAPHORE_TYPES_KHR: u32 = 0x2036;
    /// `CL_PLATFORM_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR`.
    pub const PLATFORM_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR: u32 = 0x2037;
    /// `CL_PLATFORM_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR`.
    pub const PLATFORM_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR: u32 = 0x2038;
    /// `CL_DEVICE_SEMAPHORE_TYPES_KHR`.
    pub const DEVICE_SEMAPHORE_TYPES_KHR: u32 = 0x204C;
    /// `CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR`.
    pub const DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR: u32 = 0x204D;
    /// `CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR`.
    pub const DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR: u32 = 0x204E;
}

/// The extensions' answer to a `clGetPlatformInfo` parameter, `None` for
/// a parameter not theirs. Dma-bufs import where some device reaches host
/// memory; sync_files import everywhere; nothing exports.
///
/// No OpenCL function of its own: part of `clGetPlatformInfo`
/// ([`crate::ext::platform_info`]).
pub fn platform_info(param: u32) -> Option<InfoValue> {
    use info_param::*;
    let memory = crate::runtime::platform::Platform::get().devices().iter().any(|d| d.host_unified_memory);
    Some(match param {
        PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR => {
            InfoValue::U32s(if memory { vec![EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR] } else { Vec::new() })
        }
        PLATFORM_SEMAPHORE_TYPES_KHR => InfoValue::U32s(vec![semaphore::SEMAPHORE_TYPE_BINARY_KHR]),
        PLATFORM_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR => InfoValue::U32s(vec![SEMAPHORE_HANDLE_SYNC_FD_KHR]),
        PLATFORM_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR => InfoValue::U32s(Vec::new()),
        _ => return None,
    })
}

/// The extensions' answer to a `clGetDeviceInfo` parameter, `None` for a
/// parameter not theirs: dma-buf import on a device with host-unified
/// memory (none on a BAR device, which could only copy), binary semaphores
/// imported from sync_files on every device, no export.
///
/// No OpenCL function of its own: part of `clGetDeviceInfo`
/// ([`crate::ext::device_info`]).
pub fn device_info(device: &Device, param: u32) -> Option<InfoValue> {
    use info_param::*;
    Some(match param {
        DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR => InfoValue::U32s(if device.host_unified_memory {
            vec![EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR]
        } else {
            Vec::new()
        }),
        DEVICE_SEMAPHORE_TYPES_KHR => InfoValue::U32s(vec![semaphore::SEMAPHORE_TYPE_BINARY_KHR]),
        DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR => InfoValue::U32s(vec![SEMAPHORE_HANDLE_SYNC_FD_KHR]),
        DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR => InfoValue::U32s(Vec::new()),
        _ => return None,
    })
}

/// The devices of a `CL_DEVICE_HANDLE_LIST_KHR` property, or every device
/// of the context when there is none. `CL_INVALID_DEVICE` for a device not
/// in the context, `CL_INVALID_PROPERTY` for an empty list.
fn device_list(ctx: &Context, list: Option<&[Arc<Device>]>, what: &str) -> ClResult<Vec<Arc<Device>>> {
    let Some(list) = list else { return Ok(ctx.devices().to_vec()) };
    if list.is_empty() {
        return cl_err!(
            InvalidProperty,
            "the CL_DEVICE_HANDLE_LIST_KHR of the {what} is empty: list at least one device of the context, or leave \
             the property out for all of them"
        );
    }
    if let Some(d) = list.iter().find(|d| !ctx.devices().iter().any(|c| Arc::ptr_eq(c, d))) {
        return cl_err!(
            InvalidDevice,
            "device {:?} of the {what}'s CL_DEVICE_HANDLE_LIST_KHR is not a device of the context",
            d.name
        );
    }
    Ok(list.to_vec())
}
