//! Layer 4: the OpenCL extensions, one module per extension text.

pub mod amd_bus;
pub mod arm_import;
pub mod dma_buf_export;
pub mod khr_external;
pub mod svm;
pub mod svm_commands;
pub mod usm;
pub mod usm_commands;

use std::sync::Arc;

use crate::error::ClResult;
use crate::runtime::buffer::Buffer;
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::info::{self, InfoValue};

/// `clGetPlatformInfo` with every extension's parameters: the runtime's
/// answers ([`info::platform_info`]) and those of the extensions that add
/// platform queries ([`khr_external::platform_info`]). The entry point the
/// ICD's `clGetPlatformInfo` calls.
///
/// ```
/// use dmabridge::ext::{self, khr_external::info_param};
/// use dmabridge::runtime::info::InfoValue;
/// let types = ext::platform_info(info_param::PLATFORM_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR)?;
/// assert_eq!(types, InfoValue::U32s(vec![0x2058]));
/// assert!(ext::platform_info(0).is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn platform_info(param: u32) -> ClResult<InfoValue> {
    khr_external::platform_info(param).map_or_else(|| info::platform_info(param), Ok)
}

/// `clGetDeviceInfo` with every extension's parameters (see
/// [`platform_info`]).
///
/// ```
/// use dmabridge::ext::{self, khr_external::info_param};
/// use dmabridge::runtime::{info::InfoValue, platform::Platform};
/// let cpu = Platform::get().cpu();
/// let types = ext::device_info(cpu, info_param::DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR)?;
/// assert_eq!(types, InfoValue::U32s(vec![0x2067]));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn device_info(device: &Device, param: u32) -> ClResult<InfoValue> {
    khr_external::device_info(device, param).map_or_else(|| info::device_info(device, param), Ok)
}

/// `clCreateBuffer` with the flags of every extension: a buffer with
/// `CL_MEM_BUS_ADDRESSABLE_AMD` or `CL_MEM_EXTERNAL_PHYSICAL_AMD` (seed 002)
/// is [`amd_bus::create_buffer`]'s, any other [`Buffer::create`]'s (which
/// knows no extension's flags: the runtime does not reach up into this
/// layer). The entry point the ICD's `clCreateBuffer` calls.
///
/// Errors: those of the function it goes to.
///
/// # Safety
/// That of the function it goes to: [`amd_bus::create_buffer`]'s with
/// either flag, else [`Buffer::create`]'s.
///
/// ```
/// use dmabridge::ext::{self, amd_bus};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { ext::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 4096, std::ptr::null_mut()) }?;
/// assert!(amd_bus::is_bus_addressable(&b));
/// // SAFETY: as above.
/// let plain = unsafe { ext::create_buffer(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// assert!(!amd_bus::is_bus_addressable(&plain));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn create_buffer(ctx: &Arc<Context>, flags: u64, size: usize, host_ptr: *mut u8) -> ClResult<Arc<Buffer>> {
    if flags & amd_bus::FLAGS != 0 {
        // SAFETY: forwarded to the caller (the same contract).
        return unsafe { amd_bus::create_buffer(ctx, flags, size, host_ptr) };
    }
    // SAFETY: forwarded to the caller (the same contract).
    unsafe { Buffer::create(ctx, flags, size, host_ptr) }
}

#[cfg(test)]
mod tests {
    use crate::runtime::info::{extensions, Requires, EXTENSIONS};

    /// The runtime lists each extension string from the rows the modules
    /// register; every string an extension module names is there, with the
    /// capability it needs.
    #[test]
    fn extension_strings_are_in_the_runtime_table() {
        let requires = |name: &str| EXTENSIONS.iter().find(|e| e.name == name).map(|e| e.requires);
        assert_eq!(requires(super::usm::EXTENSION), Some(Requires::Always));
        assert_eq!(requires(super::amd_bus::EXTENSION), Some(Requires::DmaDomain));
        assert_eq!(requires(super::dma_buf_export::EXTENSION), Some(Requires::Udmabuf));
        for name in
            [super::arm_import::EXTENSION, super::arm_import::HOST_EXTENSION, super::arm_import::DMA_BUF_EXTENSION]
        {
            assert_eq!(requires(name), Some(Requires::HostUnifiedMemory), "{name}");
        }
    }

    /// The registered rows, in the order they are reported: the order of
    /// the strings `clGetPlatformInfo` users have seen since the table was
    /// one list. Order keys and names are unique (the linker gathers rows in
    /// no set order, so a shared key would make the order depend on it).
    #[test]
    fn extension_rows_are_reported_in_their_fixed_order() {
        let names: Vec<_> = extensions().iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "cl_intel_unified_shared_memory",
                "cl_khr_icd",
                "cl_dmabridge_dma_buf_export",
                "cl_amd_bus_addressable_memory",
                "cl_arm_import_memory",
                "cl_arm_import_memory_host",
                "cl_arm_import_memory_dma_buf",
                "cl_khr_external_memory",
                "cl_khr_external_memory_dma_buf",
                "cl_khr_semaphore",
                "cl_khr_external_semaphore",
                "cl_khr_external_semaphore_sync_fd",
            ]
        );
        let mut orders: Vec<_> = EXTENSIONS.iter().map(|e| e.order).collect();
        orders.sort_unstable();
        orders.dedup();
        assert_eq!(orders.len(), EXTENSIONS.len(), "two rows share an order key");
    }
}
