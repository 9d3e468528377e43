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
use super::Backend;
use crate::error::{ClError, ClErrorKind, ClResult};
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
}

impl std::fmt::Debug for EduBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EduBackend").field("edu", &self.edu).finish_non_exhaustive()
    }
}

impl EduBackend {
    /// Opens the edu at `address` in `domain`'s container. edu drives QEMU's
    /// default 28-bit DMA mask; the domain's IOVAs must stay below it.
    pub fn open(domain: &Arc<DmaDomain>, address: PciAddress) -> Result<Arc<EduBackend>, EduError> {
        assert!(domain.dma_mask() <= DEFAULT_DMA_MASK, "the domain hands out IOVAs edu cannot drive");
        let edu = Edu::open(domain.container(), address)?;
        Ok(Arc::new(EduBackend {
            edu,
            domain: domain.clone(),
            name: format!("edu {address}"),
            staging: Mutex::new(()),
        }))
    }

    /// The edu device.
    pub fn edu(&self) -> &Edu {
        &self.edu
    }

    /// Its DMA domain.
    pub fn domain(&self) -> &Arc<DmaDomain> {
        &self.domain
    }

    fn dma_error(&self, what: &str, e: EduError) -> ClError {
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
        // Spans sharing a page are mapped once (read and write): a page
        // cannot sit at two IOVAs of one mapping call, and one pin suffices.
        let (src_map, dst_map);
        let (src_iova, dst_iova) = if s0 < d1 && d0 < s1 {
            let lo = s0.min(d0);
            let len = s1.max(d1) - lo;
            // SAFETY: the caller guarantees no Rust reference into the
            // destination; the source is only read by the device.
            let m = unsafe { self.domain.map_span(lo, len, true, true) }?;
            let r = (m.iova_of(src), m.iova_of(dst));
            src_map = Some(m);
            dst_map = None;
            r
        } else {
            // SAFETY: the device only reads these pages.
            let s = unsafe { self.domain.map_span(src, size, true, false) }?;
            // SAFETY: as above (the caller's contract on `dst`).
            let d = unsafe { self.domain.map_span(dst, size, true, true) }?;
            let r = (s.iova_of(src), d.iova_of(dst));
            src_map = Some(s);
            dst_map = Some(d);
            r
        };
        let mut done = 0;
        while done < size {
            let n = (size - done).min(BUFFER_SIZE);
            let _staging = self.staging.lock().unwrap();
            self.edu
                .dma(Direction::ToDevice, src_iova + done as u64, 0, n, TRANSFER_TIMEOUT)
                .map_err(|e| self.dma_error("reading the source", e))?;
            self.edu
                .dma(Direction::FromDevice, dst_iova + done as u64, 0, n, TRANSFER_TIMEOUT)
                .map_err(|e| self.dma_error("writing the destination", e))?;
            done += n;
        }
        drop(dst_map);
        drop(src_map);
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

    fn max_transfer(&self) -> usize {
        BUFFER_SIZE
    }

    unsafe fn copy(&self, dst: *mut u8, src: *const u8, size: usize) -> ClResult<()> {
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
    let container = match Container::open() {
        Ok(c) => c,
        Err(e) => {
            skipped.extend(candidates.into_iter().map(|a| (a, format!("opening the VFIO container: {e}"))));
            return Discovered { skipped, ..Discovered::default() };
        }
    };
    let domain = DmaDomain::new(container, DEFAULT_DMA_MASK);
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
