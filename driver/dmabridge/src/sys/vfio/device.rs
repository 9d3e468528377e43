//! A VFIO device: regions (BARs, config space), interrupts, reset.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::io::Errno;
use vfio_bindings::bindings::vfio as uapi;

use super::group::Group;
use super::VfioError;
use crate::sys::ioctl::{ioctl_ptr, opcode, Opcode};
use crate::sys::mmap::{Access, Mapping};
use crate::sys::pci::PciAddress;
use crate::sys::OsError;

const VFIO_DEVICE_GET_INFO: Opcode = opcode::none(b';', 107);
const VFIO_DEVICE_GET_REGION_INFO: Opcode = opcode::none(b';', 108);
const VFIO_DEVICE_GET_IRQ_INFO: Opcode = opcode::none(b';', 109);
const VFIO_DEVICE_SET_IRQS: Opcode = opcode::none(b';', 110);
const VFIO_DEVICE_RESET: Opcode = opcode::none(b';', 111);

/// Index of the PCI config space region.
pub const CONFIG_REGION: u32 = uapi::VFIO_PCI_CONFIG_REGION_INDEX;
const PCI_COMMAND: u64 = 0x04;
const PCI_COMMAND_MASTER: u16 = 1 << 2;

/// A region of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// Region index (BAR n is n, config space is 7).
    pub index: u32,
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
    /// Size in bytes (0: the region is absent).
    pub size: u64,
    /// Offset of the region in the device fd.
    pub offset: u64,
}

impl RegionInfo {
    /// True if the region may be mmapped.
    pub fn mappable(&self) -> bool {
        self.flags & uapi::VFIO_REGION_INFO_FLAG_MMAP != 0
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
}

impl std::fmt::Display for IrqKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IrqKind::Intx => "INTx",
            IrqKind::Msi => "MSI",
            IrqKind::Msix => "MSI-X",
        })
    }
}

impl IrqKind {
    fn index(self) -> u32 {
        match self {
            IrqKind::Intx => uapi::VFIO_PCI_INTX_IRQ_INDEX,
            IrqKind::Msi => uapi::VFIO_PCI_MSI_IRQ_INDEX,
            IrqKind::Msix => uapi::VFIO_PCI_MSIX_IRQ_INDEX,
        }
    }
}

/// An interrupt index of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqInfo {
    /// IRQ index.
    pub index: u32,
    /// `VFIO_IRQ_INFO_*`.
    pub flags: u32,
    /// Number of vectors (0: not supported).
    pub count: u32,
}

/// An open VFIO device.
pub struct Device {
    fd: OwnedFd,
    address: PciAddress,
    group: Arc<Group>,
    flags: u32,
    num_regions: u32,
    num_irqs: u32,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("address", &self.address).field("group", &self.group.number()).finish()
    }
}

impl Device {
    pub(super) fn new(fd: OwnedFd, address: PciAddress, group: Arc<Group>) -> Result<Device, VfioError> {
        let mut info = uapi::vfio_device_info {
            argsz: std::mem::size_of::<uapi::vfio_device_info>() as u32,
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_INFO fills one `vfio_device_info` (argsz
        // bytes at most).
        unsafe { ioctl_ptr(fd.as_fd(), VFIO_DEVICE_GET_INFO, &mut info) }
            .map_err(OsError::tag("VFIO_DEVICE_GET_INFO"))?;
        Ok(Device { fd, address, group, flags: info.flags, num_regions: info.num_regions, num_irqs: info.num_irqs })
    }

    /// The function's PCI address.
    pub fn address(&self) -> PciAddress {
        self.address
    }

    /// The group the device belongs to.
    pub fn group(&self) -> &Arc<Group> {
        &self.group
    }

    /// Describes region `index`.
    pub fn region(&self, index: u32) -> Result<RegionInfo, VfioError> {
        if index >= self.num_regions {
            return Err(VfioError::NoRegion(index));
        }
        let mut info = uapi::vfio_region_info {
            argsz: std::mem::size_of::<uapi::vfio_region_info>() as u32,
            index,
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_REGION_INFO reads index/argsz and fills one
        // `vfio_region_info`; capabilities beyond argsz are not written.
        unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_DEVICE_GET_REGION_INFO, &mut info) }
            .map_err(OsError::tag("VFIO_DEVICE_GET_REGION_INFO"))?;
        if info.size == 0 {
            return Err(VfioError::NoRegion(index));
        }
        Ok(RegionInfo { index, flags: info.flags, size: info.size, offset: info.offset })
    }

    fn bounds(&self, index: u32, offset: u64, len: usize) -> Result<RegionInfo, VfioError> {
        let r = self.region(index)?;
        if offset.checked_add(len as u64).is_none_or(|end| end > r.size) {
            return Err(VfioError::OutsideRegion { index, offset, len, size: r.size });
        }
        Ok(r)
    }

    /// Reads `buf.len()` bytes of region `index` at `offset` (pread on the
    /// device fd: works for regions that cannot be mmapped, like config).
    pub fn read_region(&self, index: u32, offset: u64, buf: &mut [u8]) -> Result<(), VfioError> {
        let r = self.bounds(index, offset, buf.len())?;
        let n = rustix::io::pread(&self.fd, &mut *buf, r.offset + offset).map_err(OsError::tag("pread vfio region"))?;
        if n != buf.len() {
            return Err(OsError::new("pread vfio region", Errno::IO).into());
        }
        Ok(())
    }

    /// Writes `data` to region `index` at `offset` (pwrite on the device fd).
    pub fn write_region(&self, index: u32, offset: u64, data: &[u8]) -> Result<(), VfioError> {
        let r = self.bounds(index, offset, data.len())?;
        let n = rustix::io::pwrite(&self.fd, data, r.offset + offset).map_err(OsError::tag("pwrite vfio region"))?;
        if n != data.len() {
            return Err(OsError::new("pwrite vfio region", Errno::IO).into());
        }
        Ok(())
    }

    /// Maps the whole of region `index` (a BAR) into the process.
    pub fn map_region(&self, index: u32) -> Result<Mapping, VfioError> {
        let r = self.region(index)?;
        if !r.mappable() {
            return Err(VfioError::RegionNotMappable(index));
        }
        let access = if r.flags & uapi::VFIO_REGION_INFO_FLAG_WRITE != 0 { Access::ReadWrite } else { Access::Read };
        Ok(Mapping::shared(self.fd.as_fd(), r.offset, r.size as usize, access)?)
    }

    /// Reads a 16-bit config-space register.
    pub fn config_read_u16(&self, offset: u64) -> Result<u16, VfioError> {
        let mut b = [0u8; 2];
        self.read_region(CONFIG_REGION, offset, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    /// Writes a 16-bit config-space register.
    pub fn config_write_u16(&self, offset: u64, value: u16) -> Result<(), VfioError> {
        self.write_region(CONFIG_REGION, offset, &value.to_le_bytes())
    }

    /// Reads a 32-bit config-space register.
    pub fn config_read_u32(&self, offset: u64) -> Result<u32, VfioError> {
        let mut b = [0u8; 4];
        self.read_region(CONFIG_REGION, offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Sets Bus Master Enable in PCI_COMMAND. vfio-pci leaves it off when it
    /// opens a device, and a device without it cannot DMA.
    pub fn enable_bus_master(&self) -> Result<(), VfioError> {
        let cmd = self.config_read_u16(PCI_COMMAND)?;
        if cmd & PCI_COMMAND_MASTER == 0 {
            self.config_write_u16(PCI_COMMAND, cmd | PCI_COMMAND_MASTER)?;
        }
        if self.config_read_u16(PCI_COMMAND)? & PCI_COMMAND_MASTER == 0 {
            return Err(OsError::new("enable PCI bus mastering", Errno::IO).into());
        }
        Ok(())
    }

    /// True if Bus Master Enable is set.
    pub fn bus_master_enabled(&self) -> Result<bool, VfioError> {
        Ok(self.config_read_u16(PCI_COMMAND)? & PCI_COMMAND_MASTER != 0)
    }

    /// Describes an interrupt kind.
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
        Ok(IrqInfo { index, flags: info.flags, count: info.count })
    }

    /// Routes vectors `0..fds.len()` of `kind` to the eventfds (enables
    /// MSI/MSI-X in the device as a side effect).
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
    pub fn disable_irq(&self, kind: IrqKind) -> Result<(), VfioError> {
        self.set_irqs(kind.index(), uapi::VFIO_IRQ_SET_DATA_NONE | uapi::VFIO_IRQ_SET_ACTION_TRIGGER, 0, &[])
    }

    /// Unmasks INTx after the device's interrupt was acknowledged.
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

    /// True if vfio-pci can reset the function (`VFIO_DEVICE_FLAGS_RESET`:
    /// it has FLR, a PM reset, or a bus it can reset alone).
    pub fn supports_reset(&self) -> bool {
        self.flags & uapi::VFIO_DEVICE_FLAGS_RESET != 0
    }

    /// Resets the function (`VFIO_DEVICE_RESET`).
    pub fn reset(&self) -> Result<(), VfioError> {
        if !self.supports_reset() {
            return Err(VfioError::ResetUnsupported(self.address));
        }
        // SAFETY: VFIO_DEVICE_RESET takes no argument.
        unsafe { crate::sys::ioctl::ioctl_int(self.fd.as_fd(), VFIO_DEVICE_RESET, 0) }
            .map_err(OsError::tag("VFIO_DEVICE_RESET"))?;
        Ok(())
    }
}

impl AsFd for Device {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
