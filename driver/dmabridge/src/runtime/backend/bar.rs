//! A device whose local memory is a PCI BAR (in the rig: ivshmem-plain's
//! BAR 2, the 4 MiB of a host file), the one device of the platform that is
//! not host-unified.
//!
//! [`BarBackend::open`] opens the PCI function in the platform's VFIO
//! container and mmaps the BAR; the mapping is the device's
//! [`LocalMemory`], sub-allocated by [`LocalAllocator`]. With an engine (an
//! edu function of the same container) the whole BAR is also made resident
//! in the DMA domain for the life of the backend, at an IOVA under the
//! engine's DMA mask, so that the engine moves bytes in and out of it
//! peer-to-peer; host memory on the other side of a copy is mapped per copy
//! as for any edu copy. Without an engine, the CPU copies through the BAR
//! mapping.
//!
//! Configuration is explicit ([`BarConfig`], from `DMABRIDGE_BAR_DEVICE`).

mod config;

pub use config::{BadBarConfig, BarConfig, ENV, UNPARSED};

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use super::domain::DmaDomain;
use super::edu_backend::EduBackend;
use super::lost::{self, Loss, Watch};
use super::{Backend, LocalMemory};
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::local::{LocalAllocator, LocalError};
use crate::runtime::transfer;
use crate::sync;
use crate::sys::addr::{BusAddr, HostAddr, Iova};
use crate::sys::bytes::{Bytes, BytesError};
use crate::sys::mmap::Mapping;
use crate::sys::pci::{PciAddress, PciFunction};
use crate::sys::vfio;

/// A mapped BAR and its sub-allocator.
pub struct BarMemory {
    /// Declared before `mapping`; dropped (evicted) first, in `Drop`.
    domain: Option<Arc<DmaDomain>>,
    iova: Option<Iova>,
    alloc: Mutex<LocalAllocator>,
    /// The mapping registered as I/O memory (the CPU's copies and fills
    /// reach it with aligned volatile accesses); unregistered before it goes.
    _io: transfer::io::IoRange,
    mapping: Mapping,
}

impl std::fmt::Debug for BarMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BarMemory")
            .field("base", &self.mapping.as_ptr())
            .field("size", &self.mapping.len())
            .field("iova", &self.iova.map(|i| format!("{i:#x}")))
            .finish_non_exhaustive()
    }
}

impl BarMemory {
    fn offset_of(&self, ptr: *const u8) -> Option<usize> {
        let off = (ptr as usize).wrapping_sub(self.mapping.as_ptr() as usize);
        (off < self.mapping.len()).then_some(off)
    }

    /// True if `[ptr, ptr + size)` lies in the BAR; `None` if it straddles
    /// its edge.
    fn holds(&self, ptr: usize, size: usize) -> Option<bool> {
        let (lo, hi) = (self.mapping.as_ptr() as usize, self.mapping.as_ptr() as usize + self.mapping.len());
        let end = ptr.checked_add(size)?;
        if ptr >= lo && end <= hi {
            Some(true)
        } else if end <= lo || ptr >= hi {
            Some(false)
        } else {
            None
        }
    }
}

impl Drop for BarMemory {
    fn drop(&mut self) {
        if let Some(domain) = &self.domain {
            // The engine must lose the BAR before the mapping goes.
            if let Err(e) = domain.evict(HostAddr::of(self.mapping.as_ptr())) {
                log::error!("releasing the BAR's bus address: {e}");
            }
        }
    }
}

impl BarMemory {
    /// Claims the bytes `[ptr, ptr + size)` of this memory so that no device
    /// allocation gets them (see [`LocalAllocator::reserve`](crate::memory::local::LocalAllocator::reserve));
    /// returns what to give to [`LocalMemory::free`] afterwards.
    /// `CL_OUT_OF_RESOURCES` if a live allocation has some of them,
    /// `CL_INVALID_VALUE` for a range not inside the memory.
    pub(crate) fn claim(&self, ptr: *const u8, size: usize) -> ClResult<*const u8> {
        let off = self.offset_of(ptr).ok_or_else(|| {
            ClError::new(ClErrorKind::InvalidValue, format!("{ptr:?} is not in this device's memory (PCI BAR)"))
        })?;
        let start = sync::lock(&self.alloc).reserve(off, size).map_err(|e| {
            let kind = match e {
                LocalError::Taken { .. } => ClErrorKind::OutOfResources,
                _ => ClErrorKind::InvalidValue,
            };
            ClError::new(kind, format!("device memory (PCI BAR): {e}"))
        })?;
        Ok(self.mapping.as_ptr().wrapping_add(start))
    }
}

impl LocalMemory for BarMemory {
    fn size(&self) -> usize {
        sync::lock(&self.alloc).size()
    }

    fn allocated(&self) -> usize {
        sync::lock(&self.alloc).allocated()
    }

    fn base(&self) -> NonNull<u8> {
        NonNull::new(self.mapping.as_ptr()).expect("mappings are never null")
    }

    fn alloc(&self, size: usize, align: usize) -> ClResult<NonNull<u8>> {
        let off = sync::lock(&self.alloc).alloc(size, align).map_err(|e| {
            let kind = match e {
                LocalError::BadSize { .. } => ClErrorKind::InvalidBufferSize,
                LocalError::BadAlignment(_) => ClErrorKind::InvalidValue,
                _ => ClErrorKind::OutOfResources,
            };
            ClError::new(kind, format!("device memory (PCI BAR): {e}"))
        })?;
        // SAFETY: the allocator only hands out offsets below the mapping's
        // length, so the pointer stays inside the mapping.
        let p = unsafe { self.mapping.as_ptr().add(off) };
        Ok(NonNull::new(p).expect("inside a mapping"))
    }

    fn free(&self, ptr: *const u8) -> ClResult<usize> {
        let off = self.offset_of(ptr).ok_or_else(|| {
            ClError::new(ClErrorKind::InvalidValue, format!("{ptr:?} is not in this device's memory (PCI BAR)"))
        })?;
        sync::lock(&self.alloc).free(off).map_err(|e| {
            let what = match e {
                LocalError::Interior { start, .. } => format!(
                    "{ptr:?} points inside the device allocation at {:?}; free takes the pointer the allocation returned",
                    self.mapping.as_ptr().wrapping_add(start)
                ),
                _ => format!("{ptr:?} is not a live device allocation (never allocated, or already freed)"),
            };
            ClError::new(ClErrorKind::InvalidValue, what)
        })
    }

    fn lookup(&self, ptr: *const u8) -> Option<(usize, usize)> {
        let off = self.offset_of(ptr)?;
        let (base, size) = sync::lock(&self.alloc).lookup(off)?;
        Some((self.mapping.as_ptr() as usize + base, size))
    }

    fn contains(&self, ptr: *const u8) -> bool {
        self.offset_of(ptr).is_some()
    }

    fn bus_address(&self, ptr: *const u8) -> Option<BusAddr> {
        Some(BusAddr::from(self.iova? + self.offset_of(ptr)? as u64))
    }
}

/// A PCI BAR as device memory, with an optional edu engine.
pub struct BarBackend {
    name: String,
    config: BarConfig,
    memory: Arc<BarMemory>,
    engine: Option<Arc<EduBackend>>,
    /// Keeps the function open (and its group attached) for the backend's
    /// life, or until it is lost.
    device: vfio::Device,
    /// Where its BAR's bus addresses live (peer-to-peer, external buffers).
    domain: Arc<DmaDomain>,
    loss: Arc<Loss>,
    /// Watches for the function's removal (device request) and errors.
    _watch: Option<Watch>,
}

impl std::fmt::Debug for BarBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BarBackend")
            .field("name", &self.name)
            .field("memory", &self.memory)
            .field("engine", &self.engine.as_ref().map(|e| e.name().to_owned()))
            .finish_non_exhaustive()
    }
}

impl BarBackend {
    /// Opens `config`'s function in `domain`'s container and maps its BAR.
    /// With `engine` (which must be the edu that `config.engine` names, in
    /// the same domain), the BAR is made resident in the domain so that the
    /// engine reaches it peer-to-peer.
    ///
    /// No OpenCL function of its own: device discovery (`clGetDeviceIDs`).
    ///
    /// Errors (`CL_DEVICE_NOT_AVAILABLE`, with the reason and the fix): the
    /// function does not exist or is not bound to vfio-pci, its group is
    /// busy, the BAR is absent or cannot be mmapped, the engine does not
    /// match the configuration or lives in another container, or the BAR
    /// cannot be mapped for DMA.
    ///
    /// ```no_run
    /// use dmabridge::runtime::backend::bar::{BarBackend, BarConfig};
    /// use dmabridge::runtime::backend::{domain::DmaDomain, edu::DEFAULT_DMA_MASK, Backend};
    /// use dmabridge::sys::vfio::Container;
    /// // Needs ivshmem bound to vfio-pci (the guest rig).
    /// let domain = DmaDomain::new(Container::open()?, DEFAULT_DMA_MASK);
    /// let bar = BarBackend::open(&domain, &"0000:00:08.0,bar=2".parse()?, None)?;
    /// assert_eq!(bar.local_memory().unwrap().size(), 4 << 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(
        domain: &Arc<DmaDomain>,
        config: &BarConfig,
        engine: Option<Arc<EduBackend>>,
    ) -> ClResult<Arc<BarBackend>> {
        let address = config.address;
        let fail = |why: String| ClError::new(ClErrorKind::DeviceNotAvailable, format!("BAR device {address}: {why}"));
        match (&engine, config.engine) {
            (None, None) => {}
            (Some(e), Some(want)) if e.pci_address() == Some(want) => {
                if !Arc::ptr_eq(e.domain(), domain) {
                    return Err(fail(format!("engine {want} is in another VFIO container: open both in one domain")));
                }
            }
            (_, want) => {
                return Err(fail(format!(
                    "the configuration names engine {want:?} but {:?} was given",
                    engine.as_ref().map(|e| e.name().to_owned())
                )))
            }
        }
        match PciFunction::read(address) {
            None => return Err(fail("no such PCI function (lspci -D lists them)".into())),
            Some(f) if !f.is_vfio_bound() => {
                return Err(fail(format!(
                    "bound to {}, not vfio-pci: run {} bind {address}",
                    f.driver.as_deref().unwrap_or("no driver"),
                    crate::sys::hints::kmod()
                )))
            }
            Some(_) => {}
        }
        let device = domain.container().device(address).map_err(|e| fail(format!("opening it through VFIO: {e}")))?;
        let region = device.region(config.bar).map_err(|e| fail(format!("BAR {}: {e}", config.bar)))?;
        let mapping = device
            .map_region(config.bar)
            .map_err(|e| fail(format!("mapping BAR {} into the process: {e}", config.bar)))?;
        if !mapping.access().writable() {
            return Err(fail(format!("BAR {} is read-only: it cannot be device memory", config.bar)));
        }
        let size = usize::try_from(region.size).unwrap_or(usize::MAX).min(mapping.len());
        let (dom, iova) = match &engine {
            None => (None, None),
            Some(_) => {
                // The BAR stays mapped until `BarMemory::drop` evicts it.
                // SAFETY: Rust reaches the BAR mapping only through raw
                // pointers, so the engine writing it breaks no reference.
                let iova = unsafe { domain.make_resident(HostAddr::of(mapping.as_ptr()), mapping.len()) }
                    .map_err(|e| fail(format!("mapping BAR {} for peer-to-peer DMA: {e}", config.bar)))?;
                (Some(domain.clone()), Some(iova))
            }
        };
        let loss = Arc::new(Loss::new().map_err(|e| fail(e.to_string()))?);
        let name = format!("bar {address}/{}", config.bar);
        // Its memory, named: a copy into it on another device's queue fails
        // once it is lost instead of landing in the inert mapping.
        let io = transfer::io::IoRange::of_device(mapping.span(), &name, loss.clone());
        let memory =
            Arc::new(BarMemory { domain: dom, iova, alloc: Mutex::new(LocalAllocator::new(size)), _io: io, mapping });
        Ok(Arc::new_cyclic(|me: &std::sync::Weak<BarBackend>| {
            let me = me.clone();
            let watch = Watch::start(&device, &name, move |why| {
                if let Some(b) = me.upgrade() {
                    b.lose(&why);
                }
            });
            let watch = watch.map_err(|e| log::error!("{name}: its removal cannot be noticed: {e}")).ok();
            BarBackend { name, config: *config, memory, engine, device, domain: domain.clone(), loss, _watch: watch }
        }))
    }

    /// Marks the device lost for `why` and lets go of the function
    /// ([`lost`]): its bus addresses unmapped, the BAR mapping made inert
    /// (device allocations and external buffers in it then hold anonymous
    /// memory, reachable but no longer the device's), the device closed.
    /// Idempotent.
    pub(crate) fn lose(&self, why: &str) {
        if self.loss.mark(why) {
            lost::release_bar(&self.name, &self.device, &self.memory.mapping, Some(&self.domain));
        }
    }

    /// The configuration it was opened with.
    ///
    /// No OpenCL function of its own.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// for d in Platform::get().devices() {
    ///     if let Some(bar) = d.bar_backend() {
    ///         println!("{} is BAR {} of {}", d.name, bar.config().bar, bar.config().address);
    ///     }
    /// }
    /// ```
    pub fn config(&self) -> &BarConfig {
        &self.config
    }

    /// The edu engine that moves its bytes, if one is configured.
    ///
    /// No OpenCL function of its own.
    ///
    /// ```
    /// use dmabridge::runtime::platform::Platform;
    /// for d in Platform::get().devices() {
    ///     if let Some(bar) = d.bar_backend() {
    ///         println!("{}: engine {:?}", d.name, bar.engine().map(|e| e.edu().address()));
    ///     }
    /// }
    /// ```
    pub fn engine(&self) -> Option<&Arc<EduBackend>> {
        self.engine.as_ref()
    }

    /// The BAR memory itself (also reachable as `dyn LocalMemory`).
    ///
    /// No OpenCL function of its own.
    ///
    /// ```
    /// use dmabridge::runtime::backend::LocalMemory;
    /// use dmabridge::runtime::platform::Platform;
    /// for d in Platform::get().devices() {
    ///     if let Some(bar) = d.bar_backend() {
    ///         println!("{}: {} of {} bytes used", d.name, bar.memory().allocated(), bar.memory().size());
    ///     }
    /// }
    /// ```
    pub fn memory(&self) -> &Arc<BarMemory> {
        &self.memory
    }
}

/// The BAR's bytes through the VFIO device fd (`pread`/`pwrite`, the
/// kernel's own mapping of the BAR), not through the process mapping: a
/// second view, to check where bytes landed.
///
/// No OpenCL function of its own: for tests and diagnostics.
///
/// ```
/// use dmabridge::runtime::platform::Platform;
/// use dmabridge::sys::bytes::Bytes;
/// for d in Platform::get().devices() {
///     if let Some(bar) = d.bar_backend() {
///         let mut head = [0u8; 16];
///         bar.read_slice(0, &mut head)?;
///     }
/// }
/// # Ok::<(), dmabridge::sys::bytes::BytesError>(())
/// ```
impl Bytes for BarBackend {
    fn read_slice(&self, offset: u64, buf: &mut [u8]) -> Result<(), BytesError> {
        self.device.region_bytes(self.config.bar).read_slice(offset, buf)
    }

    fn write_slice(&self, offset: u64, data: &[u8]) -> Result<(), BytesError> {
        self.device.region_bytes(self.config.bar).write_slice(offset, data)
    }
}

impl Backend for BarBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn pci_address(&self) -> Option<PciAddress> {
        Some(self.config.address)
    }

    fn max_transfer(&self) -> usize {
        match &self.engine {
            Some(e) => e.max_transfer(),
            None => usize::MAX,
        }
    }

    /// Host→BAR, BAR→host, BAR→BAR and host→host: by the engine's DMA
    /// (peer-to-peer on the BAR side) if one is configured, else by the CPU
    /// through the BAR mapping. A range that straddles the BAR's edge is
    /// `CL_INVALID_VALUE`.
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, size: usize) -> ClResult<()> {
        self.loss.check(&self.name)?;
        let (d, s) = (dst as usize, src as usize);
        for (what, p) in [("destination", d), ("source", s)] {
            if self.memory.holds(p, size).is_none() {
                return Err(ClError::new(
                    ClErrorKind::InvalidValue,
                    format!("{}: the {what} {p:#x}+{size:#x} straddles the edge of the device memory", self.name),
                ));
            }
        }
        match &self.engine {
            // The engine's transfers, a chunk at a time: a loss of this
            // device (its error interrupt, its removal) does not stop the
            // engine, whose own waits go on, so it is asked between chunks.
            Some(e) => {
                let chunk = e.max_transfer().max(1);
                for at in (0..size).step_by(chunk) {
                    self.loss.check(&self.name)?;
                    let n = chunk.min(size - at);
                    // SAFETY: forwarded to the caller (a part of its range).
                    // The BAR side is resident in the engine's domain, so the
                    // engine maps only the host side.
                    unsafe { e.copy(dst.add(at), src.add(at), n) }?;
                }
            }
            None => {
                // SAFETY: forwarded to the caller. The BAR mapping is
                // registered as I/O memory: transfer::copy reaches it with
                // aligned volatile accesses only (Device memory on arm64).
                unsafe { transfer::copy(dst, src, size) };
            }
        }
        // Lost while it ran: its bus addresses were revoked and its mapping
        // made inert, so the bytes may have gone nowhere.
        self.loss.check(&self.name)
    }

    fn local_memory(&self) -> Option<Arc<dyn LocalMemory>> {
        Some(self.memory.clone())
    }

    fn into_bar(self: Arc<Self>) -> Option<Arc<BarBackend>> {
        Some(self)
    }

    /// Its own loss, or its engine's: without the engine it was configured
    /// with, its commands cannot run either.
    fn loss(&self) -> Option<&Loss> {
        match self.engine.as_ref().and_then(|e| e.loss()) {
            Some(l) if l.is_lost() && !self.loss.is_lost() => Some(l),
            _ => Some(&self.loss),
        }
    }
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Discovered {
    /// The backends that opened, in configuration order.
    pub backends: Vec<Arc<BarBackend>>,
    /// Entries that did not, and why.
    pub skipped: Vec<(PciAddress, String)>,
    /// The domain they were opened in, when `discover` had to open one (no
    /// edu was there to share its own).
    pub domain: Option<Arc<DmaDomain>>,
}

/// Opens the BAR devices that `entries` configure (normally
/// [`BarConfig::from_env`]): in `domain` (the edus' container) when there
/// is one, else in a container opened here (only if some entry parses).
/// Engines are looked up among `edus`; an entry whose engine is not an
/// opened edu is skipped, not downgraded to CPU copies, and so is an entry
/// that names one of `edus` itself (its BARs are the engine's registers).
///
/// No OpenCL function of its own: device discovery (`clGetDeviceIDs`).
///
/// ```
/// use dmabridge::runtime::backend::bar::{discover, BarConfig};
/// // A malformed entry is skipped with its reason; no container is opened.
/// let found = discover(BarConfig::parse_list("0000:00:08.0,bar=9"), None, &[]);
/// assert!(found.backends.is_empty() && found.domain.is_none());
/// assert!(found.skipped[0].1.contains("0 to 5"));
/// ```
pub fn discover(
    entries: Vec<Result<BarConfig, BadBarConfig>>,
    domain: Option<&Arc<DmaDomain>>,
    edus: &[Arc<EduBackend>],
) -> Discovered {
    let mut found = Discovered::default();
    let mut configs = Vec::new();
    for entry in entries {
        match entry {
            Ok(c) => configs.push(c),
            Err(e) => found.skipped.push((e.address, e.to_string())),
        }
    }
    if configs.is_empty() {
        return found;
    }
    let domain = match domain {
        Some(d) => d.clone(),
        None => match vfio::Container::open() {
            Ok(c) => {
                let mask = super::edu_backend::dma_mask_from_env().unwrap_or(super::edu::DEFAULT_DMA_MASK);
                let d = DmaDomain::new(c, mask);
                found.domain = Some(d.clone());
                d
            }
            Err(e) => {
                found.skipped.extend(configs.iter().map(|c| (c.address, format!("opening the VFIO container: {e}"))));
                return found;
            }
        },
    };
    for c in configs {
        let engine = match c.engine {
            None => None,
            Some(want) => match edus.iter().find(|e| e.pci_address() == Some(want)) {
                Some(e) => Some(e.clone()),
                None => {
                    found.skipped.push((
                        c.address,
                        format!("{ENV}: engine {want} is not an edu device of the platform (see the skipped edus)"),
                    ));
                    continue;
                }
            },
        };
        // An edu function's BARs hold its DMA engine's registers: as device
        // memory, every allocation there would reprogram the engine.
        if let Some(e) = edus.iter().find(|e| e.pci_address() == Some(c.address)) {
            found.skipped.push((
                c.address,
                format!(
                    "{ENV}: {} is driven as the DMA engine {:?}: its BAR {} holds the engine's registers, not memory",
                    c.address,
                    e.name(),
                    c.bar
                ),
            ));
            continue;
        }
        if found.backends.iter().any(|b| b.config.address == c.address) {
            found.skipped.push((c.address, format!("{ENV} names {} more than once", c.address)));
            continue;
        }
        match BarBackend::open(&domain, &c, engine) {
            Ok(b) => found.backends.push(b),
            Err(e) => found.skipped.push((c.address, e.to_string())),
        }
    }
    if found.backends.is_empty() {
        // Nothing opened: let a container opened here close again.
        found.domain = None;
    }
    found
}
