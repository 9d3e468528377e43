//! A remote DMA engine driven by bus address: what a capture card does to a
//! bus-addressable buffer, played in the rig by an edu function of the
//! platform's IOMMU domain.
//!
//! [`RemoteDma`] writes (and reads) bytes at bus addresses through edu's
//! 4 KiB buffer: each chunk is staged from host memory into edu's buffer
//! (RAM → device), then DMAed to the bus address (device → RAM). It knows
//! nothing of the buffers it writes: only their bus addresses, as a real
//! device would. Each transfer ends with edu's completion interrupt (MSI on
//! a VFIO eventfd, waited for through io_uring); that interrupt, and one
//! raised on purpose ([`RemoteDma::raise_irq`]), wake the wait-signal
//! commands under way (see [`super::signal`]).

use std::sync::Arc;
use std::time::Duration;

use super::signal::{ring_doorbells, Source};
use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::runtime::backend::edu::{Direction, BUFFER_SIZE};
use crate::runtime::backend::edu_backend::{EduBackend, TRANSFER_TIMEOUT};
use crate::runtime::platform::Platform;
use crate::sys::access::Access;
use crate::sys::addr::{BusAddr, HostAddr, Iova};
use crate::sys::pci::PciAddress;

/// The status bit [`RemoteDma::raise_irq`] raises (edu's "raise" register).
const SIGNAL_IRQ: u32 = 0x100;

/// An edu function of the platform used as a remote DMA engine.
#[derive(Debug)]
pub struct RemoteDma {
    engine: Arc<EduBackend>,
    _source: Source,
}

impl RemoteDma {
    /// The edu function at `address`, which must be a device of the
    /// platform (bound to vfio-pci, so in the platform's IOMMU domain).
    ///
    /// Errors: `CL_DEVICE_NOT_FOUND` if the platform has no edu device
    /// there (the message lists the skipped functions' reasons).
    ///
    /// ```
    /// use dmabridge::ext::amd_bus::RemoteDma;
    /// use dmabridge::runtime::platform::Platform;
    /// for d in Platform::get().devices() {
    ///     if let (Some(a), true) = (d.pci_address(), d.name.starts_with("edu")) {
    ///         assert_eq!(RemoteDma::open(a)?.address(), a);
    ///     }
    /// }
    /// assert!(RemoteDma::open("0000:00:1f.7".parse().unwrap()).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn open(address: PciAddress) -> ClResult<RemoteDma> {
        let p = Platform::get();
        let engine =
            p.devices().iter().filter(|d| d.pci_address() == Some(address)).find_map(|d| d.backend()?.into_edu());
        match engine {
            Some(engine) => {
                // Without a duplicate (no fd left) the waits learn of the
                // interrupts by the doorbell only, later but as surely.
                let irq = engine.edu().interrupt_fd().inspect_err(|e| log::warn!("{address}: interrupt eventfd: {e}"));
                Ok(RemoteDma { engine, _source: Source::new(irq.ok()) })
            }
            None => {
                let why = p.skipped().iter().find(|(a, _)| *a == address).map(|(_, w)| w.as_str());
                cl_err!(
                    DeviceNotFound,
                    "no edu device of the platform at {address}{}",
                    why.map(|w| format!(": {w}")).unwrap_or_default()
                )
            }
        }
    }

    /// The PCI function.
    ///
    /// ```
    /// use dmabridge::ext::amd_bus::RemoteDma;
    /// use dmabridge::runtime::platform::Platform;
    /// // Only in the rig, with an edu device.
    /// if let Some(a) = Platform::get().devices().iter().find(|d| d.name.starts_with("edu")).and_then(|d| d.pci_address()) {
    ///     assert_eq!(RemoteDma::open(a)?.address(), a);
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn address(&self) -> PciAddress {
        self.engine.edu().address()
    }

    /// `CL_DEVICE_NOT_AVAILABLE` once the engine is lost (the transfer
    /// found it gone, or made it so: a register reading all ones, a missed
    /// completion), as for the engine's own copies; else
    /// `CL_OUT_OF_RESOURCES`.
    fn fail(&self, what: String, e: impl std::fmt::Display) -> ClError {
        let kind = match self.engine.edu().loss().is_lost() {
            true => ClErrorKind::DeviceNotAvailable,
            false => ClErrorKind::OutOfResources,
        };
        ClError::new(kind, format!("remote DMA by {}: {what}: {e}", self.address()))
    }

    /// Moves `len` bytes between host memory at `host` and the bus address
    /// `bus`, a chunk at a time through edu's buffer.
    ///
    /// # Safety
    /// `host` is valid for `len` bytes (for writing when `to_host`), and no
    /// reference points into it during the call.
    unsafe fn transfer(&self, bus: BusAddr, host: HostAddr, len: usize, to_host: bool) -> ClResult<()> {
        let domain = self.engine.domain();
        let access = if to_host { Access::ReadWrite } else { Access::Read };
        // SAFETY: forwarded to the caller; edu writes the staging pages
        // only when `to_host`.
        let span = unsafe { domain.map_span(host, len, access) }?;
        let edu = self.engine.edu();
        let mut done = 0;
        while done < len {
            let n = (len - done).min(BUFFER_SIZE);
            // edu sits behind the domain's IOMMU: the bus addresses it puts
            // out are IOVAs of the domain.
            let (b, h) = (Iova(bus.0 + done as u64), span.iova_of(host + done));
            let (first, second) = if to_host { (b, h) } else { (h, b) };
            let _staging = self.engine.staging();
            edu.dma(Direction::ToDevice, first, 0, n, TRANSFER_TIMEOUT)
                .map_err(|e| self.fail(format!("reading {n} bytes at {first:#x}"), e))?;
            edu.dma(Direction::FromDevice, second, 0, n, TRANSFER_TIMEOUT)
                .map_err(|e| self.fail(format!("writing {n} bytes at {second:#x}"), e))?;
            done += n;
        }
        Ok(())
    }

    /// Writes `bytes` at the bus address `bus` by DMA, and returns once the
    /// device reported (by interrupt) that they arrived; then wakes the
    /// wait-signal commands under way. A bus address outside every mapping
    /// of the IOMMU domain changes nothing (the IOMMU faults the DMA; edu
    /// still completes it).
    ///
    /// Errors: `CL_INVALID_VALUE` for no bytes or a range that wraps;
    /// `CL_OUT_OF_RESOURCES` when a transfer fails (e.g. beyond edu's DMA
    /// mask); `CL_DEVICE_NOT_AVAILABLE` when the engine is lost, or is lost
    /// by the transfer (no completion interrupt, a register reading all
    /// ones: see `runtime::backend::lost`).
    ///
    /// # Safety
    /// The device writes whatever the IOMMU maps at those bus addresses,
    /// which may be any memory of this process made resident in the domain.
    /// Every byte of `[bus, bus + bytes.len())` must, for the whole call,
    /// either lie in resident memory that no Rust reference points into (a
    /// bus-addressable buffer's surface or signal page, a device
    /// allocation), or lie in no mapping of the domain (the IOMMU then
    /// faults the DMA and nothing changes).
    ///
    /// ```
    /// use dmabridge::ext::amd_bus::{self, RemoteDma};
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::runtime::{context::Context, queue::{Queue, QueueProps}};
    /// let p = Platform::get();
    /// // Only in the rig, with an edu device.
    /// if let Some(edu) = p.devices().iter().find(|d| d.name.starts_with("edu")) {
    ///     let remote = RemoteDma::open(edu.pci_address().unwrap())?;
    ///     let ctx = Context::new(std::slice::from_ref(p.cpu()))?;
    ///     let q = Queue::new(&ctx, p.cpu(), QueueProps::default())?;
    ///     // SAFETY: no host pointer.
    ///     let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 4096, std::ptr::null_mut()) }?;
    ///     let (at, _) = amd_bus::make_buffers_resident(&q, &[b.clone()], true, &[])?;
    ///     // SAFETY: the buffer's surface, which dmabridge reaches only
    ///     // through raw pointers.
    ///     unsafe { remote.write(at[0].surface_bus_address + 8, b"frame") }?;
    ///     let (surface, _) = amd_bus::cpu_pages(&b)?;
    ///     // SAFETY: the buffer's pages, read while no device writes them.
    ///     let got = unsafe { std::slice::from_raw_parts(surface.add(8), 5) }.to_vec();
    ///     assert_eq!(got, b"frame");
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn write(&self, bus: BusAddr, bytes: &[u8]) -> ClResult<()> {
        if bytes.is_empty() || bus.checked_add(bytes.len() as u64).is_none() {
            return cl_err!(InvalidValue, "{} bytes at bus address {bus:#x}: empty or wrapping", bytes.len());
        }
        let staged = bytes.to_vec();
        // SAFETY: `staged` is ours, only read by the device.
        let r = unsafe { self.transfer(bus, HostAddr::of(staged.as_ptr()), staged.len(), false) };
        ring_doorbells();
        r
    }

    /// Writes `value` (4 bytes, little-endian) at the bus address `bus`: a
    /// marker into a signal page. As [`RemoteDma::write`].
    ///
    /// # Safety
    /// As [`RemoteDma::write`], for the 4 bytes at `bus`.
    ///
    /// ```
    /// use dmabridge::ext::amd_bus::{self, RemoteDma};
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::runtime::{context::Context, queue::{Queue, QueueProps}};
    /// let p = Platform::get();
    /// // Only in the rig, with an edu device.
    /// if let Some(edu) = p.devices().iter().find(|d| d.name.starts_with("edu")) {
    ///     let remote = RemoteDma::open(edu.pci_address().unwrap())?;
    ///     let ctx = Context::new(std::slice::from_ref(p.cpu()))?;
    ///     let q = Queue::new(&ctx, p.cpu(), QueueProps::default())?;
    ///     // SAFETY: no host pointer.
    ///     let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 64, std::ptr::null_mut()) }?;
    ///     let (at, _) = amd_bus::make_buffers_resident(&q, &[b.clone()], true, &[])?;
    ///     let ev = amd_bus::enqueue_wait_signal(&q, &b, 3, &[])?;
    ///     // SAFETY: the buffer's signal page.
    ///     unsafe { remote.write_u32(at[0].marker_bus_address, 3) }?;
    ///     dmabridge::runtime::event::Event::wait(&[ev])?;
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn write_u32(&self, bus: BusAddr, value: u32) -> ClResult<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.write(bus, &value.to_le_bytes()) }
    }

    /// Reads `len` bytes at the bus address `bus` by DMA. From an address
    /// outside every mapping of the domain the IOMMU faults the read and
    /// the bytes returned are whatever edu's buffer held.
    ///
    /// Errors as [`RemoteDma::write`].
    ///
    /// ```
    /// use dmabridge::ext::amd_bus::{self, RemoteDma};
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer};
    /// use dmabridge::runtime::platform::Platform;
    /// use dmabridge::runtime::{context::Context, queue::{Queue, QueueProps}};
    /// let p = Platform::get();
    /// // Only in the rig, with an edu device.
    /// if let Some(edu) = p.devices().iter().find(|d| d.name.starts_with("edu")) {
    ///     let remote = RemoteDma::open(edu.pci_address().unwrap())?;
    ///     let ctx = Context::new(std::slice::from_ref(p.cpu()))?;
    ///     let q = Queue::new(&ctx, p.cpu(), QueueProps::default())?;
    ///     let data = [9u8; 100];
    ///     let flags = amd_bus::BUS_ADDRESSABLE | mem_flags::COPY_HOST_PTR;
    ///     // SAFETY: `data` holds 100 bytes.
    ///     let b = unsafe { amd_bus::create_buffer(&ctx, flags, 100, data.as_ptr() as *mut u8) }?;
    ///     let (at, _) = amd_bus::make_buffers_resident(&q, &[b.clone()], true, &[])?;
    ///     assert_eq!(remote.read(at[0].surface_bus_address, 100)?, data);
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn read(&self, bus: BusAddr, len: usize) -> ClResult<Vec<u8>> {
        if len == 0 || bus.checked_add(len as u64).is_none() {
            return cl_err!(InvalidValue, "{len} bytes at bus address {bus:#x}: empty or wrapping");
        }
        let mut out = vec![0u8; len];
        // SAFETY: `out` is ours; no reference into it is used meanwhile.
        unsafe { self.transfer(bus, HostAddr::of(out.as_mut_ptr()), len, true) }?;
        Ok(out)
    }

    /// Raises the device's interrupt (as a capture card does when a frame is
    /// complete), waits for it to arrive on the MSI eventfd through
    /// io_uring, and wakes the wait-signal commands under way.
    ///
    /// Errors: `CL_DEVICE_NOT_AVAILABLE` if the interrupt does not arrive
    /// within 10 s (the engine is lost then, as for a removal) or the
    /// engine is lost.
    ///
    /// ```
    /// use dmabridge::ext::amd_bus::RemoteDma;
    /// use dmabridge::runtime::platform::Platform;
    /// // Only in the rig, with an edu device.
    /// if let Some(edu) = Platform::get().devices().iter().find(|d| d.name.starts_with("edu")) {
    ///     RemoteDma::open(edu.pci_address().unwrap())?.raise_irq()?;
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn raise_irq(&self) -> ClResult<()> {
        let timeout = Duration::from_secs(10);
        let fired = self
            .engine
            .edu()
            .raise_and_wait_irq(SIGNAL_IRQ, timeout)
            .map_err(|e| self.fail("raising the interrupt".into(), e))?;
        ring_doorbells();
        if !fired {
            return Err(self.fail("raising the interrupt".into(), format!("it did not arrive within {timeout:?}")));
        }
        Ok(())
    }
}
