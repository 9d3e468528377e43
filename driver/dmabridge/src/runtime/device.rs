//! Devices: what each can do, as `clGetDeviceInfo` reports it.

use std::sync::Arc;

use super::backend::bar::BarBackend;
use super::backend::domain::DmaDomain;
use super::backend::edu_backend::EduBackend;
use super::backend::{Backend, LocalMemory};
use crate::sys::pci::PciAddress;

/// USM capability bits (`cl_device_unified_shared_memory_capabilities_intel`).
pub mod usm_caps {
    /// The device may access allocations of this type.
    pub const ACCESS: u64 = 1 << 0;
    /// ... with atomics.
    pub const ATOMIC_ACCESS: u64 = 1 << 1;
    /// ... concurrently with the host or other devices.
    pub const CONCURRENT_ACCESS: u64 = 1 << 2;
    /// ... with concurrent atomics.
    pub const CONCURRENT_ATOMIC_ACCESS: u64 = 1 << 3;
    /// All four.
    pub const ALL: u64 = ACCESS | ATOMIC_ACCESS | CONCURRENT_ACCESS | CONCURRENT_ATOMIC_ACCESS;
}

/// SVM capability bits (`cl_device_svm_capabilities`).
pub mod svm_caps {
    /// Coarse-grain buffers.
    pub const COARSE_GRAIN_BUFFER: u64 = 1 << 0;
    /// Fine-grain buffers.
    pub const FINE_GRAIN_BUFFER: u64 = 1 << 1;
    /// Fine-grain system allocations (malloc).
    pub const FINE_GRAIN_SYSTEM: u64 = 1 << 2;
    /// SVM atomics.
    pub const ATOMICS: u64 = 1 << 3;
}

/// `CL_DEVICE_TYPE_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceType {
    /// The CPU device.
    Cpu,
    /// A PCIe function driven through VFIO (an accelerator in OpenCL terms).
    Accelerator,
}

/// The USM capability queries of seed 000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsmCaps {
    /// `CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL`.
    pub host: u64,
    /// `CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL`.
    pub device: u64,
    /// `CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL`.
    pub single_device_shared: u64,
    /// `CL_DEVICE_CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL`.
    pub cross_device_shared: u64,
    /// `CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL`.
    pub shared_system: u64,
}

/// A device of the platform.
#[derive(Debug)]
pub struct Device {
    /// Position in the platform's device list (also stored in allocations).
    pub index: u16,
    /// `CL_DEVICE_NAME`.
    pub name: String,
    /// `CL_DEVICE_TYPE`.
    pub device_type: DeviceType,
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`: for the CPU device a quarter of RAM
    /// (allocations above udmabuf's size limit are not exportable as
    /// dma-bufs), for edu also within its DMA window, for a BAR device the
    /// BAR's size.
    pub max_mem_alloc_size: u64,
    /// Size of the largest data type (long16: 128 bytes): the largest USM
    /// and SVM alignment.
    pub max_alignment: u64,
    /// `CL_DEVICE_HOST_UNIFIED_MEMORY`.
    pub host_unified_memory: bool,
    /// USM capabilities.
    pub usm: UsmCaps,
    /// `CL_DEVICE_SVM_CAPABILITIES`.
    pub svm: u64,
    /// `CL_DEVICE_MAX_COMPUTE_UNITS`.
    pub compute_units: u32,
    /// The engine that executes the device's commands; `None` for the CPU
    /// device, whose commands run on the CPU (see [`Device::backend()`]).
    pub backend: Option<Arc<dyn Backend>>,
    /// The IOMMU domain the device's memory is made resident in (edu);
    /// `None` for the CPU and BAR devices (see [`Device::dma_domain()`]).
    pub dma_domain: Option<Arc<DmaDomain>>,
}

/// What the host can give one allocation: a quarter of RAM (1 GiB if
/// `/proc/meminfo` cannot be read). OpenCL 3.0 asks at least
/// min(1 GiB, a quarter of `CL_DEVICE_GLOBAL_MEM_SIZE`) of
/// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, and a host-unified device's global memory
/// is RAM. An allocation above udmabuf's size limit (64 MiB by default) is
/// not exportable as a dma-buf: `CL_DMA_BUF_EXPORTABLE_DMABRIDGE` says so
/// and an export names the limit and how to raise it.
fn host_alloc_limit() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
        .map_or(1 << 30, |kib| kib * 1024 / 4)
}

impl Device {
    /// The CPU device: worker threads over host memory.
    pub(crate) fn cpu(index: u16) -> Arc<Device> {
        Arc::new(Device {
            index,
            name: "dmabridge CPU".into(),
            device_type: DeviceType::Cpu,
            max_mem_alloc_size: host_alloc_limit(),
            max_alignment: 128,
            host_unified_memory: true,
            usm: UsmCaps {
                host: usm_caps::ALL,
                device: usm_caps::ALL,
                single_device_shared: usm_caps::ALL,
                cross_device_shared: usm_caps::ALL,
                // The CPU device reaches any malloc'd byte of the process.
                shared_system: usm_caps::ALL,
            },
            svm: svm_caps::COARSE_GRAIN_BUFFER
                | svm_caps::FINE_GRAIN_BUFFER
                | svm_caps::FINE_GRAIN_SYSTEM
                | svm_caps::ATOMICS,
            compute_units: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            backend: None,
            dma_domain: None,
        })
    }

    /// An edu function as an accelerator named `edu <address>`.
    ///
    /// edu has no memory of its own: its 4 KiB buffer is a staging area, so
    /// every allocation it uses (host, device or shared) is host memory whose
    /// pages are mapped into its IOMMU domain: device allocations for their
    /// whole life (resident, see [`Device::dma_domain`]), host and shared ones
    /// once migrated to it or reached by a kernel on it, anything else for
    /// the duration of each command. Hence:
    /// - host-unified memory;
    /// - USM host, device and shared allocations: plain access only. It has
    ///   no atomics, and it may not touch memory the host touches at the
    ///   same time;
    /// - no shared-system access: it reaches only pinnable, mapped pages, and
    ///   only once mapped, not any pointer of the process;
    /// - SVM: coarse-grain buffers only;
    /// - the largest allocation fits both the host limit (a quarter of RAM)
    ///   and edu's bus address window (its DMA mask) minus the page at IOVA 0
    ///   that is never handed out; its global memory
    ///   (`CL_DEVICE_GLOBAL_MEM_SIZE`) is what that window can hold at once;
    /// - one compute unit: one DMA channel.
    ///
    /// Serves `clGetDeviceIDs` (an edu device of the platform) and
    /// `clGetDeviceInfo` (the values above).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::backend::edu_backend;
    /// use dmabridge::runtime::device::{svm_caps, usm_caps, Device, DeviceType};
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     let d = Device::edu(9, b.clone());
    ///     assert_eq!(d.device_type, DeviceType::Accelerator);
    ///     assert_eq!(d.name, format!("edu {}", b.edu().address()));
    ///     assert_eq!((d.usm.device, d.usm.shared_system), (usm_caps::ACCESS, 0));
    ///     assert_eq!(d.svm, svm_caps::COARSE_GRAIN_BUFFER);
    ///     assert!(Arc::ptr_eq(&d.dma_domain().unwrap(), b.domain()));
    ///     assert_eq!(d.pci_address(), Some(b.edu().address()));
    /// }
    /// ```
    pub fn edu(index: u16, backend: Arc<EduBackend>) -> Arc<Device> {
        let window = backend.domain().dma_mask().saturating_add(1) - crate::sys::page_size() as u64;
        let limit = host_alloc_limit().min(window);
        let domain = backend.domain().clone();
        Device::dma_engine(index, limit, true, backend, Some(domain))
    }

    /// The IOMMU domain in which this device's USM device allocations are
    /// resident, and in which host and shared allocations are made resident
    /// by migration or kernel launches (`None` for the CPU device).
    ///
    /// No OpenCL function of its own: where `clDeviceMemAllocINTEL` and
    /// `clEnqueueMigrateMemINTEL` map memory (seed 000).
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// assert!(Platform::get().cpu().dma_domain().is_none());
    /// for d in &Platform::get().devices()[1..] {
    ///     println!("{}: {:?}", d.name, d.dma_domain());
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn dma_domain(&self) -> Option<Arc<DmaDomain>> {
        if self.device_type == DeviceType::Cpu {
            return None;
        }
        self.dma_domain.clone()
    }

    /// The engine that executes this device's commands; `None` for the CPU
    /// device (and any device without one), whose commands run on the CPU.
    /// A device's engine is its field `backend`, set when the
    /// device is made: how a DMA engine becomes a device that
    /// `clGetDeviceIDs` reports and whose commands it runs.
    ///
    /// No OpenCL function of its own: where the commands enqueued on the
    /// device (`clEnqueue*`) run.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::error::ClResult;
    /// use dmabridge::runtime::backend::Backend;
    /// use dmabridge::runtime::device::{Device, DeviceType, UsmCaps};
    /// use dmabridge::sys::pci::PciAddress;
    ///
    /// /// An "engine" that copies with the CPU.
    /// #[derive(Debug)]
    /// struct Memcpy;
    /// impl Backend for Memcpy {
    ///     fn name(&self) -> &str { "memcpy" }
    ///     fn pci_address(&self) -> Option<PciAddress> { "0000:00:10.0".parse().ok() }
    ///     fn max_transfer(&self) -> usize { 4096 }
    ///     unsafe fn copy(&self, dst: *mut u8, src: *const u8, size: usize) -> ClResult<()> {
    ///         // SAFETY: forwarded to the caller.
    ///         unsafe { std::ptr::copy_nonoverlapping(src, dst, size) };
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let no_usm = UsmCaps { host: 0, device: 0, single_device_shared: 0, cross_device_shared: 0, shared_system: 0 };
    /// let device = |backend: Option<Arc<dyn Backend>>| Device {
    ///     index: 9, name: "memcpy".into(), device_type: DeviceType::Accelerator,
    ///     max_mem_alloc_size: 1 << 20, max_alignment: 128, host_unified_memory: true,
    ///     usm: no_usm, svm: 0, compute_units: 1, backend, dma_domain: None,
    /// };
    /// assert!(device(None).backend().is_none());
    /// assert_eq!(device(Some(Arc::new(Memcpy))).backend().unwrap().name(), "memcpy");
    ///
    /// use dmabridge::runtime::platform::Platform;
    /// assert!(Platform::get().cpu().backend().is_none(), "the CPU device copies on the CPU");
    /// // The accelerators (none on the development host) each have one.
    /// for d in &Platform::get().devices()[1..] {
    ///     assert_eq!(d.backend().expect("an engine").name(), d.name);
    /// }
    /// ```
    pub fn backend(&self) -> Option<Arc<dyn Backend>> {
        if self.device_type == DeviceType::Cpu {
            return None;
        }
        self.backend.clone()
    }

    /// The PCIe function behind the device, if any.
    ///
    /// No OpenCL function of its own: which PCIe function each accelerator
    /// of `clGetDeviceIDs` is (to match a device with its rig address, or
    /// with [`Platform::skipped`](crate::runtime::platform::Platform::skipped)).
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// assert_eq!(Platform::get().cpu().pci_address(), None);
    /// // The accelerators (none on the development host) are PCIe functions.
    /// for d in &Platform::get().devices()[1..] {
    ///     assert!(d.pci_address().is_some(), "{}", d.name);
    /// }
    /// ```
    pub fn pci_address(&self) -> Option<PciAddress> {
        self.backend()?.pci_address()
    }

    /// `CL_DEVICE_AVAILABLE`: false once the device's PCI function was
    /// unbound, removed or failed ([`lost`](super::backend::lost)); its
    /// commands then fail with `CL_DEVICE_NOT_AVAILABLE` and the error says
    /// why. The CPU device is always available.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// assert!(Platform::get().cpu().available());
    /// for d in Platform::get().devices() {
    ///     println!("{}: {}", d.name, if d.available() { "available" } else { "lost" });
    /// }
    /// ```
    pub fn available(&self) -> bool {
        self.lost().is_none()
    }

    /// Why the device is no longer available, if it is not: the error
    /// (`CL_DEVICE_NOT_AVAILABLE`) its commands end with.
    pub fn lost(&self) -> Option<crate::error::ClError> {
        let b = self.backend()?;
        b.loss()?.check(&self.name).err()
    }
}

/// Devices are compared by identity, like `cl_device_id`s.
impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Device {}

/// Devices with local memory (a PCI BAR): the one kind that is not
/// host-unified.
impl Device {
    /// A PCI BAR as an accelerator named `bar <address>/<index>` (e.g.
    /// `bar 0000:00:08.0/2`), the device of `DMABRIDGE_BAR_DEVICE`:
    /// - **not host-unified**: its memory is the BAR, apart from host RAM;
    /// - USM device allocations: plain access, and they live in the BAR
    ///   (sub-allocated), so host, device and shared allocations differ
    ///   physically (seed 000);
    /// - USM host and shared allocations: plain access. They stay in host
    ///   memory, and the device's commands reach them either way it copies:
    ///   the edu engine maps the host pages for each copy, or the CPU copies
    ///   through the BAR mapping. No atomics, no concurrent access;
    /// - no shared-system access (an engine reaches only pinnable pages);
    /// - SVM: coarse-grain buffers only (host memory, reached by copies);
    /// - the largest allocation is the BAR's size (its global memory). As it
    ///   supports host and shared USM, a context that includes it refuses
    ///   host (and device-less shared) allocations above that size with
    ///   `CL_INVALID_BUFFER_SIZE`: seed 000 counts the limit of any
    ///   supporting device. Leave it out of contexts that need more;
    /// - one compute unit: one engine (or the calling CPU thread).
    ///
    /// No OpenCL function of its own: device discovery (`clGetDeviceIDs`).
    ///
    /// ```no_run
    /// use dmabridge::runtime::backend::bar::BarBackend;
    /// use dmabridge::runtime::backend::{domain::DmaDomain, edu::DEFAULT_DMA_MASK};
    /// use dmabridge::runtime::device::Device;
    /// use dmabridge::sys::vfio::Container;
    /// // Needs ivshmem bound to vfio-pci (the guest rig).
    /// let domain = DmaDomain::new(Container::open()?, DEFAULT_DMA_MASK);
    /// let backend = BarBackend::open(&domain, &"0000:00:08.0,bar=2".parse()?, None)?;
    /// let device = Device::bar(1, backend);
    /// assert!(!device.host_unified_memory);
    /// assert_eq!(device.name, "bar 0000:00:08.0/2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bar(index: u16, backend: Arc<BarBackend>) -> Arc<Device> {
        let size = backend.memory().size() as u64;
        Device::dma_engine(index, size, false, backend, None)
    }

    /// An accelerator driven by one DMA engine (edu, a BAR device): plain
    /// USM access of every type, no shared-system access, coarse-grain SVM,
    /// one compute unit; what differs is its largest allocation and whether
    /// its memory is the host's.
    fn dma_engine(
        index: u16,
        max_mem_alloc_size: u64,
        host_unified_memory: bool,
        backend: Arc<dyn Backend>,
        dma_domain: Option<Arc<DmaDomain>>,
    ) -> Arc<Device> {
        let access = usm_caps::ACCESS;
        Arc::new(Device {
            index,
            name: backend.name().to_owned(),
            device_type: DeviceType::Accelerator,
            max_mem_alloc_size,
            max_alignment: 128,
            host_unified_memory,
            usm: UsmCaps {
                host: access,
                device: access,
                single_device_shared: access,
                cross_device_shared: access,
                shared_system: 0,
            },
            svm: svm_caps::COARSE_GRAIN_BUFFER,
            compute_units: 1,
            backend: Some(backend),
            dma_domain,
        })
    }

    /// The device's own memory, if it has any: `Some` for a BAR device,
    /// `None` for the CPU and edu devices (host-unified memory).
    ///
    /// Where `clDeviceMemAllocINTEL` allocates on this device (seed 000),
    /// and where the device side of an unlinked buffer lives (seed 003).
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// for d in Platform::get().devices() {
    ///     assert_eq!(d.local_memory().is_some(), !d.host_unified_memory);
    /// }
    /// ```
    pub fn local_memory(&self) -> Option<Arc<dyn LocalMemory>> {
        self.backend()?.local_memory()
    }

    /// The BAR backend of a BAR device (its configuration, engine and
    /// memory); `None` for every other device.
    ///
    /// No OpenCL function of its own.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// assert!(Platform::get().cpu().bar_backend().is_none());
    /// ```
    pub fn bar_backend(&self) -> Option<Arc<BarBackend>> {
        self.backend()?.into_bar()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::platform::Platform;

    #[test]
    fn the_cpu_reaches_every_usm_kind_and_any_pointer() {
        // Was the doc example of `ext::usm::device_usm_capabilities`
        // (removed: it returned `device.usm`, and nothing called it).
        let caps = Platform::get().cpu().usm;
        assert_eq!(caps.host, usm_caps::ALL);
        assert_eq!(caps.shared_system, usm_caps::ALL, "the CPU reaches any pointer of the process");
    }
}
