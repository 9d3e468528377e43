//! The platform: the devices this process can use.

use std::sync::{Arc, OnceLock};

use super::device::Device;

/// The dmabridge platform (one per process).
#[derive(Debug)]
pub struct Platform {
    devices: Vec<Arc<Device>>,
}

impl Platform {
    /// The platform, created on first use (`clGetPlatformIDs`).
    pub fn get() -> &'static Platform {
        static PLATFORM: OnceLock<Platform> = OnceLock::new();
        PLATFORM.get_or_init(|| Platform { devices: vec![Device::cpu(0)] })
    }

    /// Its devices (`clGetDeviceIDs`); the CPU device is first.
    pub fn devices(&self) -> &[Arc<Device>] {
        &self.devices
    }

    /// The CPU device.
    pub fn cpu(&self) -> &Arc<Device> {
        &self.devices[0]
    }
}
