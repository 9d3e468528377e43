//! The extension strings of the platform and of each device, decided once
//! from what the platform and the device can do.
//!
//! Why a table of capabilities here and not a question to each `ext`
//! module: the runtime is a layer below the extensions and must not call
//! up into them. What decides an extension is a capability the runtime
//! itself knows (a VFIO domain, host-unified memory) or probes once
//! (`/dev/udmabuf`); [`EXTENSIONS`] says which capability each extension
//! string needs, and the `ext` modules name their strings from it (a test
//! of each checks that its string is in the table). A new extension is one
//! row here and, if it needs one, a new [`Requires`] capability.

use std::sync::OnceLock;

use crate::runtime::device::Device;
use crate::runtime::platform::Platform;
use crate::sys::udmabuf::Udmabuf;

use super::make_version;
use super::value::NameVersion;

/// The version every extension and built-in kernel of dmabridge reports
/// in the `*_WITH_VERSION` queries (1.0.0: the first revision).
pub const EXTENSION_VERSION: u32 = make_version(1, 0, 0);

/// The dmabridge extension that exports USM/SVM allocations and buffers as
/// dma-buf fds (`include/CL/cl_dmabridge.h`).
pub const DMA_BUF_EXPORT_EXTENSION: &str = "cl_dmabridge_dma_buf_export";

/// What an extension string needs to be listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requires {
    /// Nothing: listed everywhere.
    Always,
    /// `/dev/udmabuf` opens (dma-buf export of heap pages).
    Udmabuf,
    /// The platform has a VFIO domain (buffers can be made resident).
    DmaDomain,
    /// The device reaches host memory directly (the CPU device, edu); on
    /// the platform: some device does.
    HostUnifiedMemory,
}

/// One extension string and what it needs.
#[derive(Debug, Clone, Copy)]
pub struct Extension {
    /// The extension string.
    pub name: &'static str,
    /// What it needs.
    pub requires: Requires,
    /// A platform extension only (`cl_khr_icd`): not in a device's list.
    pub platform_only: bool,
}

const fn ext(name: &'static str, requires: Requires) -> Extension {
    Extension { name, requires, platform_only: false }
}

/// Every extension string dmabridge can report, in the order it reports
/// them.
pub const EXTENSIONS: &[Extension] = &[
    ext("cl_intel_unified_shared_memory", Requires::Always),
    Extension { name: "cl_khr_icd", requires: Requires::Always, platform_only: true },
    ext(DMA_BUF_EXPORT_EXTENSION, Requires::Udmabuf),
    ext("cl_amd_bus_addressable_memory", Requires::DmaDomain),
    ext("cl_arm_import_memory", Requires::HostUnifiedMemory),
    ext("cl_arm_import_memory_host", Requires::HostUnifiedMemory),
    ext("cl_arm_import_memory_dma_buf", Requires::HostUnifiedMemory),
];

/// The platform's capabilities, probed once per process.
struct PlatformCaps {
    udmabuf: bool,
    dma_domain: bool,
    host_unified_memory: bool,
}

fn platform_caps() -> &'static PlatformCaps {
    static CAPS: OnceLock<PlatformCaps> = OnceLock::new();
    CAPS.get_or_init(|| {
        let platform = Platform::get();
        PlatformCaps {
            // The handle exports use: opened here, kept for them.
            udmabuf: Udmabuf::shared().is_ok(),
            dma_domain: platform.dma_domain().is_some(),
            host_unified_memory: platform.devices().iter().any(|d| d.host_unified_memory),
        }
    })
}

/// True if `requires` holds, for the platform (`device` None) or a device.
fn holds(requires: Requires, device: Option<&Device>) -> bool {
    let caps = platform_caps();
    match requires {
        Requires::Always => true,
        Requires::Udmabuf => caps.udmabuf,
        Requires::DmaDomain => caps.dma_domain,
        Requires::HostUnifiedMemory => device.map_or(caps.host_unified_memory, |d| d.host_unified_memory),
    }
}

/// The platform's extensions (`CL_PLATFORM_EXTENSIONS`, and with their
/// versions `CL_PLATFORM_EXTENSIONS_WITH_VERSION`): only what works here.
/// [`DMA_BUF_EXPORT_EXTENSION`] is listed only where `/dev/udmabuf` can be
/// opened; the `cl_arm_import_memory` strings when a device of the platform
/// supports them (always: the CPU device does); `cl_amd_bus_addressable_memory`
/// where buffers can be made resident, i.e. the platform has a VFIO domain
/// ([`EXTENSIONS`] says which capability each needs).
///
/// ```
/// use dmabridge::runtime::info::platform_extensions;
/// assert!(platform_extensions().iter().any(|e| e.name == "cl_khr_icd"));
/// assert!(platform_extensions().iter().any(|e| e.name == "cl_arm_import_memory_host"));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn platform_extensions() -> Vec<NameVersion> {
    static LIST: OnceLock<Vec<NameVersion>> = OnceLock::new();
    LIST.get_or_init(|| {
        EXTENSIONS
            .iter()
            .filter(|e| holds(e.requires, None))
            .map(|e| NameVersion::new(e.name, EXTENSION_VERSION))
            .collect()
    })
    .clone()
}

/// The extensions of `device` (`CL_DEVICE_EXTENSIONS`, and with their
/// versions `CL_DEVICE_EXTENSIONS_WITH_VERSION`): the platform's, without
/// `cl_khr_icd` (a platform extension), and with only the
/// `cl_arm_import_memory` strings the device itself supports (none for a
/// device without host-unified memory).
///
/// ```
/// use dmabridge::runtime::info::device_extensions;
/// use dmabridge::runtime::platform::Platform;
/// let cpu = Platform::get().cpu();
/// assert!(device_extensions(cpu).iter().any(|e| e.name == "cl_intel_unified_shared_memory"));
/// assert!(device_extensions(cpu).iter().any(|e| e.name == "cl_arm_import_memory_dma_buf"));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn device_extensions(device: &Device) -> Vec<NameVersion> {
    EXTENSIONS
        .iter()
        .filter(|e| !e.platform_only && holds(e.requires, Some(device)))
        .map(|e| NameVersion::new(e.name, EXTENSION_VERSION))
        .collect()
}

/// The names of a `*_WITH_VERSION` list joined by `sep` (the string form of
/// the same query).
pub(super) fn names(list: &[NameVersion], sep: &str) -> String {
    list.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(sep)
}
