//! The platform: the devices this process can use.
//!
//! Device 0 is the CPU device. After it comes one accelerator per PCIe
//! function that a backend recognises and that is bound to vfio-pci (today:
//! QEMU's edu), all opened in one process-wide VFIO container, then one
//! device per PCI BAR that `DMABRIDGE_BAR_DEVICE` configures
//! ([`bar::BarConfig`]; never discovered on its own). Discovery
//! never fails the platform: without VFIO, or when a function cannot be
//! opened, the platform simply lacks that device, and [`Platform::skipped`]
//! says why. The platform lives as long as the process, and so do its VFIO
//! groups: another container of this process cannot open them.

use std::sync::{Arc, OnceLock};

use super::backend::bar::{self, BarConfig};
use super::backend::domain::DmaDomain;
use super::backend::edu_backend;
use super::device::Device;
use crate::sys::fork;
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
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// assert!(std::ptr::eq(Platform::get(), Platform::get()));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn get() -> &'static Platform {
        static PLATFORM: OnceLock<Platform> = OnceLock::new();
        if let Some(p) = PLATFORM.get() {
            return p;
        }
        // The build, and every wait for it, in a process-wide section (see
        // `sys::fork`): a fork waits for a build under way rather than copy
        // it half done (the child would find it under way forever, and its
        // first use of the platform would wait for it).
        let _section = fork::section();
        PLATFORM.get_or_init(Platform::discover)
    }

    fn discover() -> Platform {
        let mut devices = vec![Device::cpu(0)];
        let found = edu_backend::discover();
        for b in &found.backends {
            devices.push(Device::edu(devices.len() as u16, b.clone()));
        }
        let mut skipped = found.skipped;
        let mut domain = found.domain;
        // The configured BAR devices, after the edus (their engines), in
        // the edus' container, or in one of their own when no edu opened.
        let bars = bar::discover(BarConfig::from_env(), domain.as_ref(), &found.backends);
        for b in bars.backends {
            devices.push(Device::bar(devices.len() as u16, b));
        }
        skipped.extend(bars.skipped);
        domain = domain.or(bars.domain);
        Platform { devices, skipped, domain }
    }

    /// Its devices (`clGetDeviceIDs`); the CPU device is first.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// let devices = Platform::get().devices();
    /// assert!(std::sync::Arc::ptr_eq(&devices[0], Platform::get().cpu()));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn devices(&self) -> &[Arc<Device>] {
        &self.devices
    }

    /// The CPU device.
    ///
    /// The first device `clGetDeviceIDs` returns (`CL_DEVICE_TYPE_CPU`).
    ///
    /// ```
    /// use dmabridge::runtime::{device::DeviceType, platform::Platform};
    /// assert_eq!(Platform::get().cpu().device_type, DeviceType::Cpu);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn cpu(&self) -> &Arc<Device> {
        &self.devices[0]
    }

    /// PCIe functions a backend recognised but the platform does not offer,
    /// with the reason (not bound to vfio-pci, no VFIO, open failed), and
    /// the `DMABRIDGE_BAR_DEVICE` entries that did not open: under their
    /// address, or [`bar::UNPARSED`] when even that could not be read.
    ///
    /// No OpenCL function of its own: why `clGetDeviceIDs` lacks those devices.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// for (pci, why) in Platform::get().skipped() {
    ///     println!("{pci}: {why}");
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn skipped(&self) -> &[(PciAddress, String)] {
        &self.skipped
    }

    /// The VFIO container and IOVA space of the platform's accelerators
    /// (`None` when it has none).
    ///
    /// No OpenCL function of its own: the DMA mapping behind the accelerators' USM and SVM.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// // Without VFIO (or accelerators) there is none.
    /// if Platform::get().dma_domain().is_none() {
    ///     assert!(Platform::get().skipped().len() + 1 >= Platform::get().devices().len());
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn dma_domain(&self) -> Option<&Arc<DmaDomain>> {
        self.domain.as_ref()
    }
}
