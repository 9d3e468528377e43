//! QEMU's `edu` PCI device as a DMA engine, driven through VFIO.
//!
//! edu has a 4 KiB buffer at device address 0x40000 and one DMA channel that
//! copies between that buffer and a bus address (an IOVA of its IOMMU
//! domain). Each transfer completes on a 100 ms virtual-clock timer and raises
//! an interrupt (MSI, or INTx), which arrives on an eventfd and is waited for
//! through io_uring — no busy loop. edu only drives the low 28 bits of a DMA
//! address by default and silently drops the rest, and it aborts the VM on a
//! transfer outside its buffer, so both are checked before a transfer starts.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::lost::Loss;
use crate::sync;
use crate::sys::addr::Iova;
use crate::sys::eventfd::EventFd;
use crate::sys::mmap::Mapping;
use crate::sys::pci::{PciAddress, PciFunction, EDU_ID};
use crate::sys::uring::EventWaiter;
use crate::sys::vfio::{Container, Device, IrqKind, VfioError};
use crate::sys::OsError;

/// Register offsets in BAR0 (QEMU hw/misc/edu.c).
mod reg {
    pub const IDENT: usize = 0x00;
    pub const LIVENESS: usize = 0x04;
    pub const IRQ_STATUS: usize = 0x24;
    pub const IRQ_RAISE: usize = 0x60;
    pub const IRQ_ACK: usize = 0x64;
    pub const DMA_SRC: usize = 0x80;
    pub const DMA_DST: usize = 0x88;
    pub const DMA_COUNT: usize = 0x90;
    pub const DMA_CMD: usize = 0x98;
}

const IDENT_MAGIC_MASK: u32 = 0xff;
const IDENT_MAGIC: u32 = 0xed;
const CMD_START: u64 = 1 << 0;
const CMD_TO_RAM: u64 = 1 << 1;
const CMD_IRQ: u64 = 1 << 2;

/// Device address of edu's DMA buffer.
pub const BUFFER_ADDR: u64 = 0x40000;
/// Size of edu's DMA buffer.
pub const BUFFER_SIZE: usize = 4096;
/// The DMA mask QEMU gives edu unless its `dma_mask` property is changed.
pub const DEFAULT_DMA_MASK: u64 = (1 << 28) - 1;

/// Why an edu operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EduError {
    /// No edu device in the machine.
    #[error(
        "no edu device (PCI 1234:11e8): start QEMU with -device edu{rig}",
        rig = crate::sys::hints::checkout_only(", e.g. qemu/run-in-guest --edu 1")
    )]
    NoDevice,
    /// The function does not identify as edu.
    #[error("{address} is not an edu device (ident register {ident:#010x})")]
    NotEdu {
        /// The function.
        address: PciAddress,
        /// What its ident register said.
        ident: u32,
    },
    /// A transfer outside edu's 4 KiB buffer (QEMU would abort the VM).
    #[error("transfer of {len} bytes at buffer offset {offset} does not fit edu's {BUFFER_SIZE}-byte buffer")]
    OutsideBuffer {
        /// Offset in the buffer.
        offset: usize,
        /// Length.
        len: usize,
    },
    /// A bus address the device cannot drive (it would silently DMA to the
    /// address with the high bits dropped).
    #[error("bus address range {iova:#x}+{len} is beyond edu's DMA mask {mask:#x}")]
    BeyondDmaMask {
        /// Bus address.
        iova: Iova,
        /// Length.
        len: usize,
        /// The mask.
        mask: u64,
    },
    /// The device did not raise its completion interrupt in time.
    #[error("edu DMA did not complete within {0:?} (is bus mastering on, and the IOVA mapped?)")]
    Timeout(Duration),
    /// The device still reports the transfer as running after its interrupt.
    #[error("edu DMA still running after its completion interrupt")]
    StillRunning,
    /// The device is gone (removed, unbound, broken; see
    /// [`lost`](super::lost)): nothing is started on it any more.
    #[error("the device is lost: {0}")]
    Lost(String),
    /// VFIO refused something.
    #[error(transparent)]
    Vfio(#[from] VfioError),
    /// A system call failed.
    #[error(transparent)]
    Os(#[from] OsError),
}

/// Which way a transfer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From a bus address (host memory or a peer's BAR) into edu's buffer.
    ToDevice,
    /// From edu's buffer to a bus address.
    FromDevice,
}

struct Irq {
    kind: IrqKind,
    fd: EventFd,
    waiter: EventWaiter,
    /// [`Edu::shut_down`] ran: the registers are gone.
    shut: bool,
}

/// An edu device opened through VFIO, bus mastering on, its interrupt routed
/// to an eventfd.
pub struct Edu {
    device: Device,
    bar0: Mapping,
    dma_mask: u64,
    irq: Mutex<Irq>,
    loss: Loss,
}

impl std::fmt::Debug for Edu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edu").field("address", &self.device.address()).field("dma_mask", &self.dma_mask).finish()
    }
}

impl Edu {
    /// The edu functions of this machine.
    ///
    /// No OpenCL function of its own: the candidates of device discovery
    /// (`clGetDeviceIDs`).
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu::Edu;
    /// use dmabridge::sys::pci::EDU_ID;
    /// // Empty on the development host; the guest rig has some.
    /// for f in Edu::find() {
    ///     assert_eq!((f.vendor, f.device), EDU_ID);
    ///     println!("{}: {}", f.address, f.driver.as_deref().unwrap_or("no driver"));
    /// }
    /// ```
    pub fn find() -> Vec<PciFunction> {
        PciFunction::with_id(EDU_ID)
    }

    /// Opens the edu at `address` in `container` with QEMU's default DMA mask.
    ///
    /// No OpenCL function of its own: the engine under an edu device of
    /// `clGetDeviceIDs`.
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu::{Edu, EduError, DEFAULT_DMA_MASK};
    /// use dmabridge::sys::vfio::Container;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for f in Edu::find().into_iter().filter(|f| f.is_vfio_bound()) {
    ///     let edu = Edu::open(&Container::open()?, f.address)?;
    ///     assert_eq!(edu.address(), f.address);
    ///     assert_eq!(edu.dma_mask(), DEFAULT_DMA_MASK);
    /// }
    /// # Ok::<(), EduError>(())
    /// ```
    pub fn open(container: &Arc<Container>, address: PciAddress) -> Result<Edu, EduError> {
        Self::open_with_mask(container, address, DEFAULT_DMA_MASK)
    }

    /// Opens the edu at `address`, whose `dma_mask` property is `dma_mask`;
    /// completions arrive by MSI when the device offers it, else by INTx.
    ///
    /// No OpenCL function of its own: the engine under an edu device of
    /// `clGetDeviceIDs` when QEMU gave edu a wider DMA mask
    /// (`DMABRIDGE_EDU_DMA_MASK`).
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu::{Edu, EduError};
    /// use dmabridge::sys::vfio::Container;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for f in Edu::find().into_iter().filter(|f| f.is_vfio_bound()) {
    ///     let edu = Edu::open_with_mask(&Container::open()?, f.address, (1 << 32) - 1)?;
    ///     assert_eq!(edu.dma_mask(), (1 << 32) - 1, "what the caller says: edu cannot report it");
    /// }
    /// # Ok::<(), EduError>(())
    /// ```
    pub fn open_with_mask(container: &Arc<Container>, address: PciAddress, dma_mask: u64) -> Result<Edu, EduError> {
        Self::open_with(container, address, dma_mask, None)
    }

    /// Opens the edu at `address` with completions on `irq` (`None`: MSI if
    /// offered, else INTx).
    ///
    /// No OpenCL function of its own: lets tests drive edu's completions
    /// over INTx as well as MSI.
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu::{Edu, EduError, DEFAULT_DMA_MASK};
    /// use dmabridge::sys::vfio::{Container, IrqKind};
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for f in Edu::find().into_iter().filter(|f| f.is_vfio_bound()) {
    ///     let edu = Edu::open_with(&Container::open()?, f.address, DEFAULT_DMA_MASK, Some(IrqKind::Intx))?;
    ///     assert_eq!(edu.irq_kind(), IrqKind::Intx);
    /// }
    /// # Ok::<(), EduError>(())
    /// ```
    pub fn open_with(
        container: &Arc<Container>,
        address: PciAddress,
        dma_mask: u64,
        irq: Option<IrqKind>,
    ) -> Result<Edu, EduError> {
        let device = container.device(address)?;
        let bar0 = device.map_region(0)?;
        let ident = bar0.read_u32(reg::IDENT);
        if ident & IDENT_MAGIC_MASK != IDENT_MAGIC {
            return Err(EduError::NotEdu { address, ident });
        }
        device.enable_bus_master()?;
        let fd = EventFd::new()?;
        // MSI when the device offers it (it does, unless QEMU was told
        // otherwise), else INTx.
        let kind = match (irq, device.irq_info(IrqKind::Msi)) {
            (Some(kind), _) => kind,
            (None, Ok(i)) if i.count >= 1 => IrqKind::Msi,
            (None, _) => IrqKind::Intx,
        };
        device.set_irq_eventfds(kind, &[fd.as_fd()])?;
        // The completion interrupt and the device's loss.
        let waiter = EventWaiter::new(2)?;
        let irq = Mutex::new(Irq { kind, fd, waiter, shut: false });
        Ok(Edu { device, bar0, dma_mask, irq, loss: Loss::new()? })
    }

    /// The function's address.
    ///
    /// No OpenCL function of its own: names the device (`CL_DEVICE_NAME`
    /// is `edu <address>`).
    ///
    /// ```
    /// use dmabridge::runtime::backend::{edu_backend, Backend};
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert_eq!(b.name(), format!("edu {}", b.edu().address()));
    /// }
    /// ```
    pub fn address(&self) -> PciAddress {
        self.device.address()
    }

    /// The VFIO device.
    ///
    /// No OpenCL function of its own: edu's regions and interrupts, for
    /// tests and diagnostics.
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu_backend;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert_eq!(b.edu().device().address(), b.edu().address());
    /// }
    /// ```
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The highest bus address the device can drive.
    ///
    /// No OpenCL function of its own: bounds `CL_DEVICE_MAX_MEM_ALLOC_SIZE`
    /// of the edu device (`clGetDeviceInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu_backend;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert_eq!(b.edu().dma_mask(), b.domain().dma_mask(), "the domain never hands out more");
    /// }
    /// ```
    pub fn dma_mask(&self) -> u64 {
        self.dma_mask
    }

    /// Which interrupt carries completions.
    ///
    /// No OpenCL function of its own: how a command on edu learns that it
    /// completed (`CL_COMPLETE`).
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu_backend;
    /// use dmabridge::sys::vfio::IrqKind;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert!(matches!(b.edu().irq_kind(), IrqKind::Msi | IrqKind::Intx), "edu has no MSI-X");
    /// }
    /// ```
    pub fn irq_kind(&self) -> IrqKind {
        sync::lock(&self.irq).kind
    }

    /// A duplicate of the eventfd the interrupt signals, for a waiter that
    /// only polls it to learn that the device signalled (the count is this
    /// device's: its own waits read it, so a reader would steal a
    /// completion).
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu_backend;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     b.edu().interrupt_fd()?;
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn interrupt_fd(&self) -> std::io::Result<OwnedFd> {
        sync::lock(&self.irq).fd.as_fd().try_clone_to_owned()
    }

    /// The liveness register: returns the bitwise NOT of `value`.
    ///
    /// No OpenCL function of its own: a check that the device answers
    /// (tests).
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu_backend;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert_eq!(b.edu().liveness(0x1234_5678), !0x1234_5678);
    /// }
    /// ```
    pub fn liveness(&self, value: u32) -> u32 {
        self.bar0.write_u32(reg::LIVENESS, value);
        self.bar0.read_u32(reg::LIVENESS)
    }

    /// Copies `len` bytes between the bus address `iova` and edu's buffer at
    /// `offset`, and waits (up to `timeout`) for the completion interrupt.
    ///
    /// No OpenCL function of its own: one transfer of the copies an edu
    /// device runs (`clEnqueueMemcpyINTEL`, `clEnqueueCopyBuffer`, the
    /// `dma_copy` built-in kernel).
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu::{Direction, EduError};
    /// use dmabridge::runtime::backend::edu_backend::{self, TRANSFER_TIMEOUT};
    /// use dmabridge::sys::{access::Access, addr::{HostAddr, Iova}};
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     let (edu, domain) = (b.edu(), b.domain());
    ///     let src = vec![7u8; 64];
    ///     let mut dst = vec![0u8; 64];
    ///     // SAFETY: the device only reads `src`.
    ///     let s = unsafe { domain.map_span(HostAddr::of(src.as_ptr()), 64, Access::Read) }?;
    ///     // SAFETY: no reference into `dst` is used while the device writes it.
    ///     let d = unsafe { domain.map_span(HostAddr::of(dst.as_mut_ptr()), 64, Access::ReadWrite) }?;
    ///     edu.dma(Direction::ToDevice, s.iova_of(HostAddr::of(src.as_ptr())), 0, 64, TRANSFER_TIMEOUT)?;
    ///     edu.dma(Direction::FromDevice, d.iova_of(HostAddr::of(dst.as_ptr())), 0, 64, TRANSFER_TIMEOUT)?;
    ///     drop((s, d));
    ///     assert_eq!(dst, src);
    ///     let outside = edu.dma(Direction::ToDevice, Iova(0x1000), 4000, 200, TRANSFER_TIMEOUT);
    ///     assert!(matches!(outside, Err(EduError::OutsideBuffer { .. })), "refused before QEMU sees it");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dma(
        &self,
        dir: Direction,
        iova: Iova,
        offset: usize,
        len: usize,
        timeout: Duration,
    ) -> Result<(), EduError> {
        if len == 0 || offset.checked_add(len).is_none_or(|end| end > BUFFER_SIZE) {
            return Err(EduError::OutsideBuffer { offset, len });
        }
        if iova.0.checked_add(len as u64 - 1).is_none_or(|last| last > self.dma_mask) {
            return Err(EduError::BeyondDmaMask { iova, len, mask: self.dma_mask });
        }
        let dev = BUFFER_ADDR + offset as u64;
        let (src, dst, cmd) = match dir {
            Direction::ToDevice => (iova.0, dev, CMD_START | CMD_IRQ),
            Direction::FromDevice => (dev, iova.0, CMD_START | CMD_IRQ | CMD_TO_RAM),
        };
        // One transfer at a time: edu ignores register writes while busy.
        let mut irq = sync::lock(&self.irq);
        self.check_live()?;
        let _ = irq.fd.try_take()?;
        self.bar0.write_u64(reg::DMA_SRC, src);
        self.bar0.write_u64(reg::DMA_DST, dst);
        self.bar0.write_u64(reg::DMA_COUNT, len as u64);
        self.bar0.write_u64(reg::DMA_CMD, cmd);
        let (fired, _) = self.wait_and_ack(&mut irq, timeout)?;
        if !fired {
            // An engine that misses its completion is not trusted again: it
            // may still be writing the bus address.
            self.lose(&mut irq, &format!("{}: a DMA transfer did not complete within {timeout:?}", self.address()));
            return Err(EduError::Timeout(timeout));
        }
        let cmd = self.bar0.read_u64(reg::DMA_CMD);
        self.check_register(&mut irq, cmd == u64::MAX, "DMA command")?;
        if cmd & CMD_START != 0 {
            return Err(EduError::StillRunning);
        }
        Ok(())
    }

    /// Raises edu's interrupt by hand (`value` lands in the status register)
    /// and waits for it on the eventfd; true if it arrived within `timeout`.
    /// One that does not arrive, or a status register that then reads all
    /// ones, loses the device ([`lost`](super::lost)).
    ///
    /// No OpenCL function of its own: a check that completions can arrive
    /// (tests).
    ///
    /// ```
    /// use std::time::Duration;
    /// use dmabridge::runtime::backend::edu_backend;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert!(b.edu().raise_and_wait_irq(0x100, Duration::from_secs(5))?);
    /// }
    /// # Ok::<(), dmabridge::runtime::backend::edu::EduError>(())
    /// ```
    pub fn raise_and_wait_irq(&self, value: u32, timeout: Duration) -> Result<bool, EduError> {
        let mut irq = sync::lock(&self.irq);
        self.check_live()?;
        let _ = irq.fd.try_take()?;
        self.bar0.write_u32(reg::IRQ_RAISE, value);
        let (fired, status) = self.wait_and_ack(&mut irq, timeout)?;
        if !fired {
            // As a transfer that misses its completion: the interrupt path
            // is broken, nothing that waits for this device would end.
            self.lose(
                &mut irq,
                &format!("{}: an interrupt raised by hand did not arrive within {timeout:?}", self.address()),
            );
        }
        Ok(fired && status & value == value)
    }

    /// Waits for the interrupt, then acknowledges whatever the status
    /// register holds (and unmasks INTx, which VFIO masked on delivery).
    /// Returns whether it fired and the status it acknowledged.
    /// The device's loss ends the wait at once ([`EduError::Lost`]).
    fn wait_and_ack(&self, irq: &mut Irq, timeout: Duration) -> Result<(bool, u32), EduError> {
        let fired = irq.waiter.wait(&[irq.fd.as_fd(), self.loss.wake_fd()], Some(timeout))?;
        self.check_live()?;
        let status = self.bar0.read_u32(reg::IRQ_STATUS);
        self.check_register(irq, status == u32::MAX, "interrupt status")?;
        self.bar0.write_u32(reg::IRQ_ACK, status);
        if irq.kind == IrqKind::Intx {
            self.device.unmask_intx()?;
        }
        Ok((!fired.is_empty(), status))
    }
}

/// Device loss (see [`lost`](super::lost)).
impl Edu {
    /// Whether the device is still there, and why not.
    ///
    /// No OpenCL function of its own: behind `CL_DEVICE_AVAILABLE` of the
    /// edu device.
    ///
    /// ```
    /// use dmabridge::runtime::backend::edu_backend;
    /// // Only where an edu is bound to vfio-pci (the guest rig).
    /// for b in edu_backend::discover().backends {
    ///     assert!(!b.edu().loss().is_lost());
    /// }
    /// ```
    pub fn loss(&self) -> &Loss {
        &self.loss
    }

    fn check_live(&self) -> Result<(), EduError> {
        match self.loss.reason() {
            Some(why) => Err(EduError::Lost(why.to_owned())),
            None => Ok(()),
        }
    }

    /// A register that reads all ones: the function no longer answers
    /// (removed, or its link is down), which edu never reports otherwise.
    fn check_register(&self, irq: &mut Irq, all_ones: bool, what: &str) -> Result<(), EduError> {
        if all_ones {
            let why = format!("{}: the {what} register reads all ones (the device no longer answers)", self.address());
            self.lose(irq, &why);
        }
        self.check_live()
    }

    /// Marks the device lost for `why` and lets go of it, as its request
    /// interrupt does (`EduBackend::lose`): a loss this engine finds itself
    /// (a register reading all ones, a transfer that never completes) must
    /// leave it in the same state whoever drives it (the copy backend, a
    /// remote DMA), not only marked.
    fn lose(&self, irq: &mut Irq, why: &str) {
        self.loss.mark(why);
        self.shut_down_locked(irq);
    }

    /// Lets go of the function once it is lost: no more DMA (Bus Master
    /// off), no interrupts, BAR 0 replaced by anonymous memory (a racing
    /// register access lands there, never a SIGBUS), and the device fd
    /// pointed at `/dev/null`, so the kernel's removal can finish.
    /// Waits for a transfer under way to end (the loss ends its wait);
    /// idempotent. Errors of a function that is already gone are logged.
    pub(crate) fn shut_down(&self) {
        self.shut_down_locked(&mut sync::lock(&self.irq));
    }

    /// [`Edu::shut_down`] with the interrupt state already held.
    fn shut_down_locked(&self, irq: &mut Irq) {
        if irq.shut {
            return;
        }
        irq.shut = true;
        let address = self.address();
        if let Err(e) = self.device.disable_bus_master() {
            log::warn!("{address}: turning bus mastering off: {e}");
        }
        let _ = self.device.disable_irq(irq.kind);
        if let Err(e) = self.bar0.make_inert() {
            log::error!("{address}: unmapping BAR 0: {e}");
        }
        if let Err(e) = self.device.revoke() {
            log::error!("{address}: closing the VFIO device: {e}");
        }
    }
}

impl Drop for Edu {
    fn drop(&mut self) {
        let kind = sync::get_mut(&mut self.irq).kind;
        let _ = self.device.disable_irq(kind);
    }
}
