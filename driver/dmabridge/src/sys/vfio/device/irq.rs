//! The device's interrupts: what each index offers, eventfds signalled by
//! its vectors, INTx unmasking.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use vfio_bindings::bindings::vfio as uapi;

use super::Device;
use crate::sys::ioctl::{ioctl_ptr, opcode, Opcode};
use crate::sys::vfio::VfioError;
use crate::sys::OsError;

const VFIO_DEVICE_GET_IRQ_INFO: Opcode = opcode::none(b';', 109);
const VFIO_DEVICE_SET_IRQS: Opcode = opcode::none(b';', 110);

bitflags::bitflags! {
    /// `VFIO_IRQ_INFO_*`: what an interrupt index supports. Bits this crate
    /// does not name are kept.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct IrqFlags: u32 {
        /// Vectors can signal eventfds.
        const EVENTFD = uapi::VFIO_IRQ_INFO_EVENTFD;
        /// Vectors can be masked and unmasked.
        const MASKABLE = uapi::VFIO_IRQ_INFO_MASKABLE;
        /// The vector is masked on delivery (INTx): unmask after the ack.
        const AUTOMASKED = uapi::VFIO_IRQ_INFO_AUTOMASKED;
        /// The vector count cannot change once enabled.
        const NORESIZE = uapi::VFIO_IRQ_INFO_NORESIZE;
        const _ = !0;
    }
}

/// The PCI interrupt kinds VFIO exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IrqKind {
    /// Legacy INTx (level triggered: masked on delivery, unmask after ack).
    Intx,
    /// MSI.
    Msi,
    /// MSI-X.
    Msix,
    /// The error interrupt (`VFIO_PCI_ERR_IRQ_INDEX`): vfio-pci signals it
    /// when AER reports an error of the function (PCIe functions only).
    Err,
    /// The device request (`VFIO_PCI_REQ_IRQ_INDEX`): vfio-pci signals it
    /// when the kernel wants the device back (unbind, removal) and then
    /// waits until every fd and mapping of the device is closed.
    Req,
}

impl std::fmt::Display for IrqKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IrqKind::Intx => "INTx",
            IrqKind::Msi => "MSI",
            IrqKind::Msix => "MSI-X",
            IrqKind::Err => "error",
            IrqKind::Req => "device request",
        })
    }
}

impl IrqKind {
    fn index(self) -> u32 {
        match self {
            IrqKind::Intx => uapi::VFIO_PCI_INTX_IRQ_INDEX,
            IrqKind::Msi => uapi::VFIO_PCI_MSI_IRQ_INDEX,
            IrqKind::Msix => uapi::VFIO_PCI_MSIX_IRQ_INDEX,
            IrqKind::Err => uapi::VFIO_PCI_ERR_IRQ_INDEX,
            IrqKind::Req => uapi::VFIO_PCI_REQ_IRQ_INDEX,
        }
    }
}

/// An interrupt index of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqInfo {
    /// IRQ index.
    pub index: u32,
    /// `VFIO_IRQ_INFO_*`.
    pub flags: IrqFlags,
    /// Number of vectors (0: not supported).
    pub count: u32,
}

impl Device {
    /// Describes an interrupt kind.
    ///
    /// Wraps `VFIO_DEVICE_GET_IRQ_INFO`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::IrqKind;
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// for kind in [IrqKind::Intx, IrqKind::Msi, IrqKind::Msix] {
    ///     match device.irq_info(kind) {
    ///         Ok(info) => println!("{kind}: {} vectors", info.count),
    ///         Err(e) => println!("{e}"),
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn irq_info(&self, kind: IrqKind) -> Result<IrqInfo, VfioError> {
        let index = kind.index();
        if index >= self.num_irqs {
            return Err(VfioError::NoIrq { index, count: 1 });
        }
        let mut info = uapi::vfio_irq_info {
            argsz: std::mem::size_of::<uapi::vfio_irq_info>() as u32,
            index,
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_IRQ_INFO fills one `vfio_irq_info`.
        unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_DEVICE_GET_IRQ_INFO, &mut info) }
            .map_err(OsError::tag("VFIO_DEVICE_GET_IRQ_INFO"))?;
        Ok(IrqInfo { index, flags: IrqFlags::from_bits_retain(info.flags), count: info.count })
    }

    /// Routes vectors `0..fds.len()` of `kind` to the eventfds (enables
    /// MSI/MSI-X in the device as a side effect).
    ///
    /// Wraps `VFIO_DEVICE_SET_IRQS` (`DATA_EVENTFD | ACTION_TRIGGER`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::eventfd::EventFd;
    /// use dmabridge::sys::vfio::{IrqKind, VfioError};
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// let efd = EventFd::new()?;
    /// match device.irq_info(IrqKind::Msi) {
    ///     Ok(info) if info.count >= 1 => {
    ///         device.set_irq_eventfds(IrqKind::Msi, &[efd.as_fd()])?;
    ///         device.disable_irq(IrqKind::Msi)?;
    ///     }
    ///     _ => println!("no MSI on {}", device.address()),
    /// }
    /// // At least one eventfd is needed.
    /// assert!(matches!(device.set_irq_eventfds(IrqKind::Msi, &[]), Err(VfioError::NoIrq { count: 0, .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_irq_eventfds(&self, kind: IrqKind, fds: &[BorrowedFd<'_>]) -> Result<(), VfioError> {
        let info = self.irq_info(kind)?;
        if fds.is_empty() || fds.len() > info.count as usize {
            return Err(VfioError::NoIrq { index: info.index, count: fds.len() });
        }
        let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
        self.set_irqs(
            info.index,
            uapi::VFIO_IRQ_SET_DATA_EVENTFD | uapi::VFIO_IRQ_SET_ACTION_TRIGGER,
            raw.len() as u32,
            &raw,
        )
    }

    /// Disables every vector of `kind` (and MSI/MSI-X in the device).
    ///
    /// Wraps `VFIO_DEVICE_SET_IRQS` (`DATA_NONE | ACTION_TRIGGER`, count 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::eventfd::EventFd;
    /// use dmabridge::sys::vfio::IrqKind;
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// let vectors = device.irq_info(IrqKind::Msix).map(|i| i.count).unwrap_or(0);
    /// if vectors >= 2 {
    ///     let (a, b) = (EventFd::new()?, EventFd::new()?);
    ///     device.set_irq_eventfds(IrqKind::Msix, &[a.as_fd(), b.as_fd()])?;
    ///     device.disable_irq(IrqKind::Msix)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn disable_irq(&self, kind: IrqKind) -> Result<(), VfioError> {
        self.set_irqs(kind.index(), uapi::VFIO_IRQ_SET_DATA_NONE | uapi::VFIO_IRQ_SET_ACTION_TRIGGER, 0, &[])
    }

    /// Unmasks INTx after the device's interrupt was acknowledged.
    ///
    /// Wraps `VFIO_DEVICE_SET_IRQS` (`DATA_NONE | ACTION_UNMASK`) on the INTx index.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::eventfd::EventFd;
    /// use dmabridge::sys::vfio::IrqKind;
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// if device.irq_info(IrqKind::Intx).is_ok_and(|i| i.count == 1) {
    ///     let efd = EventFd::new()?;
    ///     device.set_irq_eventfds(IrqKind::Intx, &[efd.as_fd()])?;
    ///     // After the driver acknowledged an interrupt in the device:
    ///     device.unmask_intx()?;
    ///     device.disable_irq(IrqKind::Intx)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unmask_intx(&self) -> Result<(), VfioError> {
        self.set_irqs(
            uapi::VFIO_PCI_INTX_IRQ_INDEX,
            uapi::VFIO_IRQ_SET_DATA_NONE | uapi::VFIO_IRQ_SET_ACTION_UNMASK,
            1,
            &[],
        )
    }

    fn set_irqs(&self, index: u32, flags: u32, count: u32, data: &[i32]) -> Result<(), VfioError> {
        // struct vfio_irq_set is 20 bytes followed by the data; build it in a
        // u32 buffer, which gives the 4-byte alignment it needs.
        let head = std::mem::size_of::<uapi::vfio_irq_set>() / 4;
        let mut buf = vec![0u32; head + data.len()];
        buf[0] = ((head + data.len()) * 4) as u32; // argsz
        buf[1] = flags;
        buf[2] = index;
        buf[3] = 0; // start
        buf[4] = count;
        for (i, fd) in data.iter().enumerate() {
            buf[head + i] = *fd as u32;
        }
        // SAFETY: VFIO_DEVICE_SET_IRQS reads `argsz` bytes: the header and
        // `data.len()` ints, all inside `buf`; the eventfds are borrowed by
        // the caller for the call (the kernel takes its own references).
        unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_DEVICE_SET_IRQS, buf.as_mut_ptr()) }
            .map_err(OsError::tag("VFIO_DEVICE_SET_IRQS"))?;
        Ok(())
    }
}
