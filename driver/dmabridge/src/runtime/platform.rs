//! The platform: the devices this process can use.
//!
//! Device 0 is the CPU device. After it comes one accelerator per PCIe
//! function that a backend recognises and that is bound to vfio-pci (today:
//! QEMU's edu), all opened in one process-wide VFIO container. Discovery
//! never fails the platform: without VFIO, or when a function cannot be
//! opened, the platform simply lacks that device, and [`Platform::skipped`]
//! says why. The platform lives as long as the process, and so do its VFIO
//! groups: another container of this process cannot open them.

use std::sync::{Arc, OnceLock};

use super::backend::domain::DmaDomain;
use super::backend::edu_backend;
use super::device::Device;
use crate::sys::pci::PciAddress;

/// The dmabridge platform (one per process).
#[derive(Debug)]
pub struct Platform {
    devices: Vec<Arc<Device>>,
    skipped: Vec<(PciAddress, String)>,
    domain: Option<Arc<DmaDomain>>,
}

impl Platform {
    /// The platform, created on first use (`clGetPlatformIDs`).
    pub fn get() -> &'static Platform {
        static PLATFORM: OnceLock<Platform> = OnceLock::new();
        PLATFORM.get_or_init(Platform::discover)
    }

    fn discover() -> Platform {
        let mut devices = vec![Device::cpu(0)];
        let found = edu_backend::discover();
        for b in found.backends {
            devices.push(Device::edu(devices.len() as u16, b));
        }
        Platform { devices, skipped: found.skipped, domain: found.domain }
    }

    /// Its devices (`clGetDeviceIDs`); the CPU device is first.
    pub fn devices(&self) -> &[Arc<Device>] {
        &self.devices
    }

    /// The CPU device.
    pub fn cpu(&self) -> &Arc<Device> {
        &self.devices[0]
    }

    /// PCIe functions a backend recognised but the platform does not offer,
    /// with the reason (not bound to vfio-pci, no VFIO, open failed).
    pub fn skipped(&self) -> &[(PciAddress, String)] {
        &self.skipped
    }

    /// The VFIO container and IOVA space of the platform's accelerators
    /// (`None` when it has none).
    pub fn dma_domain(&self) -> Option<&Arc<DmaDomain>> {
        self.domain.as_ref()
    }
}
