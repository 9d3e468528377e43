//! The extension strings of the platform and of each device, decided once
//! from what the platform and the device can do.
//!
//! Each extension registers its own rows: an `ext` module adds an
//! [`Extension`] to [`EXTENSIONS`] with `#[distributed_slice(EXTENSIONS)]`
//! (its string, the [`Requires`] capability it needs, its place in the
//! reported list), so the runtime lists it without naming it, and a new
//! extension is a new `ext` module with its rows and no edit here. The
//! runtime is a layer below the extensions and must not call up into them:
//! what decides an extension is a capability the runtime itself knows (a
//! VFIO domain, host-unified memory) or probes once (`/dev/udmabuf`).
//! [`Requires`] is that vocabulary, and the one case where a new extension
//! changes the runtime is a capability it does not know yet: a new
//! [`Requires`] variant and its probe in `holds`.
//!
//! Why `linkme::distributed_slice` and not `inventory`: linkme's rows are
//! `const` data the linker gathers into one section, with no code run before
//! `main` (inventory registers each row from a static constructor, i.e.
//! life before `main` in every process that loads the ICD), and a row of the
//! wrong type is a compile error. The rows are `#[used]`, so neither the
//! library's test binaries nor the cdylib ICD drop them (the ICD's
//! `CL_PLATFORM_EXTENSIONS` is checked by `tests/icd/run`, the aarch64 build
//! by `make build-arm64`). The linker gathers the rows in no set order:
//! each row's `order` key fixes the reported order, sorted once.

use std::sync::OnceLock;

use linkme::distributed_slice;

use crate::runtime::device::Device;
use crate::runtime::platform::Platform;
use crate::sys::udmabuf::Udmabuf;

use super::make_version;
use super::value::NameVersion;

/// The version every extension and built-in kernel of dmabridge reports
/// in the `*_WITH_VERSION` queries (1.0.0: the first revision).
pub const EXTENSION_VERSION: u32 = make_version(1, 0, 0);

/// What an extension string needs to be listed: the capabilities the
/// runtime knows or probes.
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

/// One extension string, what it needs and where it is listed.
#[derive(Debug, Clone, Copy)]
pub struct Extension {
    /// The extension string.
    pub name: &'static str,
    /// What it needs.
    pub requires: Requires,
    /// A platform extension only (`cl_khr_icd`): not in a device's list.
    pub platform_only: bool,
    /// Its place in the reported lists, lowest first (unique: a test checks).
    pub order: u16,
}

impl Extension {
    /// A platform and device extension.
    pub const fn new(name: &'static str, requires: Requires, order: u16) -> Extension {
        Extension { name, requires, platform_only: false, order }
    }

    /// A platform extension only (not in a device's list).
    pub const fn platform_only(name: &'static str, requires: Requires, order: u16) -> Extension {
        Extension { name, requires, platform_only: true, order }
    }
}

/// Every extension string dmabridge can report, one row per string, each
/// registered by the module that implements it (in link order: [`extensions()`]
/// is the reported order).
#[distributed_slice]
pub static EXTENSIONS: [Extension];

/// `cl_khr_icd`: the platform is reached through an ICD loader. The
/// runtime's own row: the platform, not an `ext` module, is what the loader
/// finds.
#[distributed_slice(EXTENSIONS)]
static KHR_ICD: Extension = Extension::platform_only("cl_khr_icd", Requires::Always, 200);

/// [`EXTENSIONS`] in the order dmabridge reports them (by `order`), sorted
/// once per process.
///
/// ```
/// use dmabridge::runtime::info::extensions;
/// let names: Vec<_> = extensions().iter().map(|e| e.name).collect();
/// assert_eq!(names[..2], ["cl_intel_unified_shared_memory", "cl_khr_icd"]);
/// ```
pub fn extensions() -> &'static [&'static Extension] {
    static ORDERED: OnceLock<Vec<&'static Extension>> = OnceLock::new();
    ORDERED.get_or_init(|| {
        let mut rows: Vec<&'static Extension> = EXTENSIONS.iter().collect();
        rows.sort_by_key(|e| e.order);
        rows
    })
}

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
/// `cl_dmabridge_dma_buf_export` is listed only where `/dev/udmabuf` can be
/// opened; the `cl_arm_import_memory` strings when a device of the platform
/// supports them (always: the CPU device does); `cl_amd_bus_addressable_memory`
/// where buffers can be made resident, i.e. the platform has a VFIO domain
/// (each row of [`EXTENSIONS`] says which capability it needs).
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
        extensions()
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
    extensions()
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
