//! The edu device as a copy engine: host-to-host copies by DMA through its
//! 4 KiB buffer.
//!
//! A copy maps the pages covering the source (device-readable) and the
//! destination (device-writable) into the domain's IOMMU context, then moves
//! each chunk of at most 4096 bytes RAM → edu buffer → RAM, then unmaps. At
//! most [`MAP_WINDOW`] bytes of each side are pinned at once, so a large copy
//! neither exhausts edu's 256 MiB of bus addresses nor the memlock limit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::domain::DmaDomain;
use super::edu::{Direction, Edu, EduError, BUFFER_SIZE, DEFAULT_DMA_MASK};
use super::lost::{Loss, Watch};
use super::Backend;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::sync;
use crate::sys::access::Access;
use crate::sys::addr::HostAddr;
use crate::sys::page_size;
use crate::sys::pci::{PciAddress, PciFunction, EDU_ID};
use crate::sys::vfio::Container;

/// Bytes of source (and of destination) mapped at a time.
pub const MAP_WINDOW: usize = 1 << 20;

/// How long one transfer may take (edu completes each on a 100 ms
/// virtual-clock timer; under TCG that is about 100 ms of wall time).
pub const TRANSFER_TIMEOUT: Duration = Duration::from_secs(10);

/// An edu function opened through VFIO in a shared [`DmaDomain`].
pub struct EduBackend {
    edu: Edu,
    domain: Arc<DmaDomain>,
    name: String,
    /// Held across the two transfers of a chunk: the staging buffer is
    /// shared by every copy running on this device.
    staging: Mutex<()>,
    /// Watches for the function's removal (device request) and errors.
    _watch: Option<Watch>,
}

impl std::fmt::Debug for EduBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EduBackend").field("edu", &self.edu).finish_non_exhaustive()
    }
}

impl EduBackend {
    /// Opens the edu at `address` in `domain`'s container. edu cannot report
    /// its DMA mask: the domain's mask is taken to be its `dma_mask`
    /// property (QEMU's default is 28 bits; see [`dma_mask_from_env`]), and
    /// every IOVA the domain hands out stays below it.
    ///
    /// No OpenCL function of its own: device discovery (`clGetDeviceIDs`).
    ///
    /// ```no_run
    /// use dmabridge::runtime::backend::{domain::DmaDomain, edu::DEFAULT_DMA_MASK, edu_backend::EduBackend};
    /// use dmabridge::sys::vfio::Container;
    /// // Needs an edu bound to vfio-pci (the guest rig).
    /// let domain = DmaDomain::new(Container::open()?, DEFAULT_DMA_MASK);
    /// let edu = EduBackend::open(&domain, "0000:00:10.0".parse()?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The function's request and error interrupts are watched from then on
    /// ([`lost`](super::lost)): when it is unbound, removed or fails, its
    /// work fails and the backend lets go of it.
    pub fn open(domain: &Arc<DmaDomain>, address: PciAddress) -> Result<Arc<EduBackend>, EduError> {
        let edu = Edu::open_with_mask(domain.container(), address, domain.dma_mask())?;
        let name = format!("edu {address}");
        Ok(Arc::new_cyclic(|me: &std::sync::Weak<EduBackend>| {
            let me = me.clone();
            let watch = Watch::start(edu.device(), &name, move |why| {
                if let Some(b) = me.upgrade() {
                    b.lose(&why);
                }
            });
            let watch = watch.map_err(|e| log::error!("{name}: its removal cannot be noticed: {e}")).ok();
            EduBackend { edu, domain: domain.clone(), name, staging: Mutex::new(()), _watch: watch }
        }))
    }

    /// Marks the device lost for `why` and lets go of the function
    /// ([`lost`](super::lost)); idempotent.
    pub(crate) fn lose(&self, why: &str) {
        self.edu.loss().mark(why);
        self.edu.shut_down();
    }

    /// The edu device.
    ///
    /// No OpenCL function of its own: the engine's registers and
    /// interrupts, for tests and diagnostics.
    ///
    /// ```
    /// use dmabridge::runtime::backend::{edu_backend, Backend};
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert_eq!(b.pci_address(), Some(b.edu().address()));
    ///     assert_eq!(b.edu().liveness(1), !1);
    /// }
    /// ```
    pub fn edu(&self) -> &Edu {
        &self.edu
    }

    /// Its DMA domain.
    ///
    /// No OpenCL function of its own: where the edu device's memory is made
    /// resident (`clDeviceMemAllocINTEL`, `clEnqueueMigrateMemINTEL`) and
    /// its copies are mapped.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::backend::edu_backend;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// let found = edu_backend::discover();
    /// for b in &found.backends {
    ///     assert!(Arc::ptr_eq(b.domain(), found.domain.as_ref().unwrap()), "one container for all");
    /// }
    /// ```
    pub fn domain(&self) -> &Arc<DmaDomain> {
        &self.domain
    }

    /// Holds edu's 4 KiB buffer for a sequence of transfers through it:
    /// copies and other users of the engine (a remote DMA by bus address,
    /// `ext::amd_bus::RemoteDma`) take it around the two transfers of each
    /// chunk, so that none overwrites what another staged.
    pub(crate) fn staging(&self) -> std::sync::MutexGuard<'_, ()> {
        sync::lock(&self.staging)
    }

    fn dma_error(&self, what: &str, e: EduError) -> ClError {
        if self.edu.loss().is_lost() {
            self.edu.shut_down();
            return ClError::new(ClErrorKind::DeviceNotAvailable, format!("{}: {what}: {e}", self.name));
        }
        ClError::new(ClErrorKind::OutOfResources, format!("{}: {what}: {e}", self.name))
    }

    /// One window: both spans mapped, then chunk by chunk through the buffer.
    ///
    /// # Safety
    /// As [`Backend::copy`].
    unsafe fn copy_window(&self, dst: usize, src: usize, size: usize) -> ClResult<()> {
        let page = page_size();
        let span = |a: usize| (a & !(page - 1), (a + size).next_multiple_of(page));
        let ((s0, s1), (d0, d1)) = (span(src), span(dst));
        // Resident sides need no mapping; the others are mapped for the
        // window and unmapped when `maps` drops.
        let mut maps = Vec::with_capacity(2);
        let (src, dst) = (HostAddr(src), HostAddr(dst));
        let (src_iova, dst_iova) = match (self.domain.resident_iova(src, size), self.domain.resident_iova(dst, size)) {
            (Some(s), Some(d)) => (s, d),
            (Some(s), None) => {
                // SAFETY: the caller guarantees no Rust reference into the
                // destination while the device writes it.
                let m = unsafe { self.domain.map_span(dst, size, Access::ReadWrite) }?;
                let d = m.iova_of(dst);
                maps.push(m);
                (s, d)
            }
            (None, Some(d)) => {
                // SAFETY: the device only reads these pages.
                let m = unsafe { self.domain.map_span(src, size, Access::Read) }?;
                let s = m.iova_of(src);
                maps.push(m);
                (s, d)
            }
            // Spans sharing a page are mapped once (read and write): a page
            // cannot sit at two IOVAs of one mapping call, and one pin suffices.
            (None, None) if s0 < d1 && d0 < s1 => {
                let lo = s0.min(d0);
                let len = s1.max(d1) - lo;
                // SAFETY: the caller guarantees no Rust reference into the
                // destination; the source is only read by the device.
                let m = unsafe { self.domain.map_span(HostAddr(lo), len, Access::ReadWrite) }?;
                let r = (m.iova_of(src), m.iova_of(dst));
                maps.push(m);
                r
            }
            (None, None) => {
                // SAFETY: the device only reads these pages.
                let s = unsafe { self.domain.map_span(src, size, Access::Read) }?;
                // SAFETY: as above (the caller's contract on `dst`).
                let d = unsafe { self.domain.map_span(dst, size, Access::ReadWrite) }?;
                let r = (s.iova_of(src), d.iova_of(dst));
                maps.push(s);
                maps.push(d);
                r
            }
        };
        let mut done = 0;
        while done < size {
            let n = (size - done).min(BUFFER_SIZE);
            let _staging = self.staging();
            let moved = self
                .edu
                .dma(Direction::ToDevice, src_iova + done as u64, 0, n, TRANSFER_TIMEOUT)
                .map_err(|e| self.dma_error("reading the source", e))
                .and_then(|()| {
                    self.edu
                        .dma(Direction::FromDevice, dst_iova + done as u64, 0, n, TRANSFER_TIMEOUT)
                        .map_err(|e| self.dma_error("writing the destination", e))
                });
            if let Err(e) = moved {
                // The engine may still hold the bus addresses of a failed
                // transfer: unmap them, but never hand them out again.
                maps.into_iter().rev().for_each(super::domain::SpanMap::retire);
                return Err(e);
            }
            done += n;
        }
        // Destination first, as before: the reverse of the mapping order.
        while let Some(m) = maps.pop() {
            drop(m);
        }
        Ok(())
    }
}

impl Backend for EduBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn pci_address(&self) -> Option<PciAddress> {
        Some(self.edu.address())
    }

    fn into_edu(self: Arc<Self>) -> Option<Arc<EduBackend>> {
        Some(self)
    }

    fn max_transfer(&self) -> usize {
        BUFFER_SIZE
    }

    fn loss(&self) -> Option<&Loss> {
        Some(self.edu.loss())
    }

    unsafe fn copy(&self, dst: *mut u8, src: *const u8, size: usize) -> ClResult<()> {
        self.edu.loss().check(&self.name)?;
        let (d, s) = (dst as usize, src as usize);
        if d.checked_add(size).is_none() || s.checked_add(size).is_none() {
            return Err(ClError::new(ClErrorKind::InvalidValue, format!("{size} bytes at {src:?}/{dst:?} wrap")));
        }
        let mut done = 0;
        while done < size {
            let n = (size - done).min(MAP_WINDOW);
            // SAFETY: forwarded to the caller.
            unsafe { self.copy_window(d + done, s + done, n) }?;
            done += n;
        }
        Ok(())
    }
}

/// The variable that tells dmabridge the edu devices' `dma_mask` property.
pub const DMA_MASK_ENV: &str = "DMABRIDGE_EDU_DMA_MASK";

/// The DMA mask of the machine's edu devices: [`DMA_MASK_ENV`] if set (hex
/// with `0x`, or decimal), else QEMU's default [`DEFAULT_DMA_MASK`]. edu
/// cannot report its `dma_mask` property, so whoever starts QEMU with
/// another (`qemu/run-in-guest --edu-dma-mask M`) says so here. The value
/// must be `2^n - 1` with `n` from 13 to 64 (at least two pages of bus
/// addresses); `Err` says what is wrong with it.
///
/// No OpenCL function of its own: device discovery (`clGetDeviceIDs`).
///
/// ```
/// use dmabridge::runtime::backend::edu_backend::{dma_mask_from_env, DMA_MASK_ENV};
/// if std::env::var_os(DMA_MASK_ENV).is_none() {
///     assert_eq!(dma_mask_from_env(), Ok((1 << 28) - 1));
/// }
/// ```
pub fn dma_mask_from_env() -> Result<u64, String> {
    match std::env::var(DMA_MASK_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_DMA_MASK),
        Err(e) => Err(format!("{DMA_MASK_ENV}: {e}")),
        Ok(v) => parse_dma_mask(&v).map_err(|why| format!("{DMA_MASK_ENV}={v:?} is not a usable DMA mask: {why}")),
    }
}

fn parse_dma_mask(v: &str) -> Result<u64, String> {
    let t = v.trim();
    let m = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => t.replace('_', "").parse::<u64>(),
    }
    .map_err(|e| format!("{e} (write it in hex with 0x, e.g. 0xffffffffffffffff, or in decimal)"))?;
    if m & m.wrapping_add(1) != 0 {
        return Err(format!("{m:#x} is not of the form 2^n - 1 (all low bits set)"));
    }
    if m < (1 << 13) - 1 {
        return Err(format!("{m:#x} leaves fewer than two pages of bus addresses"));
    }
    Ok(m)
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Discovered {
    /// The container they share (`None` if no edu opened).
    pub domain: Option<Arc<DmaDomain>>,
    /// The edus that opened, by address.
    pub backends: Vec<Arc<EduBackend>>,
    /// Every other edu function and why it is not used.
    pub skipped: Vec<(PciAddress, String)>,
}

/// The edu functions of the machine opened as backends in one new VFIO
/// container: those bound to vfio-pci that open, and, for every other edu
/// function, why it is not used. No container is opened when no edu is
/// bound; the container closes again if none opens.
///
/// No OpenCL function of its own: the edu half of device discovery
/// (`clGetDeviceIDs`), which the platform runs once.
///
/// ```
/// use dmabridge::runtime::backend::edu_backend;
/// let found = edu_backend::discover();
/// // The development host has no edu: nothing opens and no container stays.
/// assert_eq!(found.domain.is_some(), !found.backends.is_empty());
/// for (pci, why) in &found.skipped {
///     println!("{pci}: {why}");
/// }
/// ```
pub fn discover() -> Discovered {
    let mut skipped = Vec::new();
    let mut candidates = Vec::new();
    for f in PciFunction::with_id(EDU_ID) {
        if f.is_vfio_bound() {
            candidates.push(f.address);
        } else {
            let driver = f.driver.as_deref().unwrap_or("no driver");
            skipped.push((f.address, format!("bound to {driver}, not vfio-pci")));
        }
    }
    if candidates.is_empty() {
        return Discovered { skipped, ..Discovered::default() };
    }
    let dma_mask = match dma_mask_from_env() {
        Ok(m) => m,
        Err(why) => {
            skipped.extend(candidates.into_iter().map(|a| (a, why.clone())));
            skipped.sort_by_key(|(a, _)| *a);
            return Discovered { skipped, ..Discovered::default() };
        }
    };
    let container = match Container::open() {
        Ok(c) => c,
        Err(e) => {
            skipped.extend(candidates.into_iter().map(|a| (a, format!("opening the VFIO container: {e}"))));
            return Discovered { skipped, ..Discovered::default() };
        }
    };
    let domain = DmaDomain::new(container, dma_mask);
    let mut opened = Vec::new();
    for address in candidates {
        match EduBackend::open(&domain, address) {
            Ok(b) => opened.push(b),
            Err(e) => skipped.push((address, e.to_string())),
        }
    }
    skipped.sort_by_key(|(a, _)| *a);
    let domain = (!opened.is_empty()).then_some(domain);
    Discovered { domain, backends: opened, skipped }
}

#[cfg(test)]
mod tests {
    use super::parse_dma_mask;

    #[test]
    fn dma_masks_parse_in_hex_and_decimal_and_bad_ones_say_why() {
        assert_eq!(parse_dma_mask("0xffffffffffffffff"), Ok(u64::MAX));
        assert_eq!(parse_dma_mask("0xfffffff"), Ok((1 << 28) - 1));
        assert_eq!(parse_dma_mask(" 268435455 "), Ok((1 << 28) - 1));
        assert!(parse_dma_mask("0x1000").unwrap_err().contains("2^n - 1"));
        assert!(parse_dma_mask("0xfff").unwrap_err().contains("two pages"));
        assert!(parse_dma_mask("lots").unwrap_err().contains("hex"));
        assert!(parse_dma_mask("0x1ffffffffffffffff").is_err());
    }
}
