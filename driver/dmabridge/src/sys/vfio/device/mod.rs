//! A VFIO device: regions (BARs, config space), interrupts, reset.
//!
//! One idea a file: opening, regions, reset and revocation here; `config`
//! (PCI config-space registers, bus mastering), `irq` (interrupts).

mod config;
mod irq;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, OnceLock};

use rustix::io::Errno;
use vfio_bindings::bindings::vfio as uapi;

use super::group::Group;
use super::VfioError;
use crate::sync;
use crate::sys::bytes::{Bytes, BytesError, BytesFault};
use crate::sys::ioctl::{ioctl_ptr, opcode, Opcode};
use crate::sys::mmap::{Access, Mapping};
use crate::sys::pci::PciAddress;
use crate::sys::OsError;
pub use irq::{IrqFlags, IrqInfo, IrqKind};

const VFIO_DEVICE_GET_INFO: Opcode = opcode::none(b';', 107);
const VFIO_DEVICE_GET_REGION_INFO: Opcode = opcode::none(b';', 108);
const VFIO_DEVICE_RESET: Opcode = opcode::none(b';', 111);

/// Index of the PCI config space region.
pub const CONFIG_REGION: u32 = uapi::VFIO_PCI_CONFIG_REGION_INDEX;
const PCI_COMMAND: u64 = 0x04;
const PCI_COMMAND_MEMORY: u8 = 1 << 1;
const PCI_COMMAND_MASTER: u16 = 1 << 2;
const PCI_STATUS: u64 = 0x06;
const PCI_STATUS_CAP_LIST: u16 = 1 << 4;
const PCI_CAPABILITY_LIST: u64 = 0x34;
const PCI_CAP_ID_PM: u8 = 0x01;
/// PMCSR, the power management control/status register, in the PM capability.
const PCI_PM_CTRL: u64 = 4;
const PCI_PM_CTRL_STATE_MASK: u8 = 0x3;
/// At most this many capabilities are walked (the kernel's PCI_FIND_CAP_TTL).
const PCI_FIND_CAP_TTL: usize = 48;

bitflags::bitflags! {
    /// `VFIO_REGION_INFO_FLAG_*`: what a region allows. Bits this crate does
    /// not name are kept.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct RegionFlags: u32 {
        /// The region can be read (pread on the device fd).
        const READ = uapi::VFIO_REGION_INFO_FLAG_READ;
        /// The region can be written.
        const WRITE = uapi::VFIO_REGION_INFO_FLAG_WRITE;
        /// The region can be mmapped.
        const MMAP = uapi::VFIO_REGION_INFO_FLAG_MMAP;
        /// The region info has a capability chain.
        const CAPS = uapi::VFIO_REGION_INFO_FLAG_CAPS;
        const _ = !0;
    }
}

/// A region of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// Region index (BAR n is n, config space is 7).
    pub index: u32,
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: RegionFlags,
    /// Size in bytes (0: the region is absent).
    pub size: u64,
    /// Offset of the region in the device fd.
    pub offset: u64,
}

impl RegionInfo {
    /// True if the region may be mmapped.
    ///
    /// No system call: tests `VFIO_REGION_INFO_FLAG_MMAP` in what
    /// `VFIO_DEVICE_GET_REGION_INFO` returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::{RegionFlags, RegionInfo};
    ///
    /// let flags = RegionFlags::READ | RegionFlags::WRITE | RegionFlags::MMAP;
    /// let bar = RegionInfo { index: 0, flags, size: 4096, offset: 0 };
    /// assert!(bar.mappable());
    /// assert_eq!(bar.flags.bits(), 0b111);
    /// let config = RegionInfo { index: 7, flags: RegionFlags::READ | RegionFlags::WRITE, size: 256, offset: 7 << 40 };
    /// assert!(!config.mappable());
    /// ```
    pub fn mappable(&self) -> bool {
        self.flags.contains(RegionFlags::MMAP)
    }
}

/// An open VFIO device.
///
/// It lends no fd: a raw `pwrite` to its config space could switch memory
/// decoding off under a safe [`Device::map_region`] mapping (a SIGBUS on the
/// next access), so every access goes through the checked methods.
///
/// ```compile_fail
/// fn lends_its_fd<T: std::os::fd::AsFd>() {}
/// lends_its_fd::<dmabridge::sys::vfio::device::Device>();
/// ```
pub struct Device {
    fd: OwnedFd,
    address: PciAddress,
    group: Arc<Group>,
    flags: u32,
    num_regions: u32,
    num_irqs: u32,
    /// Config-space offset of the power management capability, once found.
    pm_cap: OnceLock<Option<u64>>,
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
        Ok(Device {
            fd,
            address,
            group,
            flags: info.flags,
            num_regions: info.num_regions,
            num_irqs: info.num_irqs,
            pm_cap: OnceLock::new(),
        })
    }

    /// The function's PCI address.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// let function = PciFunction::read(device.address()).expect("the function exists");
    /// assert!(function.is_vfio_bound());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn address(&self) -> PciAddress {
        self.address
    }

    /// The group the device belongs to.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// let sysfs_group = PciFunction::read(device.address()).and_then(|f| f.iommu_group);
    /// assert_eq!(Some(device.group().number()), sysfs_group);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn group(&self) -> &Arc<Group> {
        &self.group
    }

    /// Describes region `index`.
    ///
    /// Wraps `VFIO_DEVICE_GET_REGION_INFO`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::VfioError;
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// // Region 7 is PCI config space: at least the 256-byte header.
    /// assert!(device.region(7)?.size >= 256);
    /// assert_eq!(device.region(1000).unwrap_err(), VfioError::NoRegion(1000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
        Ok(RegionInfo { index, flags: RegionFlags::from_bits_retain(info.flags), size: info.size, offset: info.offset })
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
    ///
    /// Wraps `pread(2)` on the device fd.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// // The vendor id, at offset 0 of config space (region 7).
    /// let mut id = [0u8; 2];
    /// device.read_region(7, 0, &mut id)?;
    /// let function = PciFunction::read(device.address()).expect("the function exists");
    /// assert_eq!(u16::from_le_bytes(id), function.vendor);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_region(&self, index: u32, offset: u64, buf: &mut [u8]) -> Result<(), VfioError> {
        let r = self.bounds(index, offset, buf.len())?;
        let n = rustix::io::pread(&self.fd, &mut *buf, r.offset + offset).map_err(OsError::tag("pread vfio region"))?;
        if n != buf.len() {
            return Err(OsError::new("pread vfio region", Errno::IO).into());
        }
        Ok(())
    }

    /// Writes `data` to region `index` at `offset` (pwrite on the device fd).
    ///
    /// A config-space write that would stop the function decoding memory
    /// while it decodes it — clearing Memory Space Enable in PCI_COMMAND, or
    /// asking its power management capability for a state other than D0 — is
    /// refused with [`VfioError::WouldDisableMemory`]: vfio-pci would answer
    /// every later access to a mapping of its BARs with SIGBUS.
    /// [`Device::write_region_unchecked`] makes such writes under a contract.
    ///
    /// Wraps `pwrite(2)` on the device fd (config writes first read
    /// PCI_COMMAND and walk the capability list with `pread(2)`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::VfioError;
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// // PCI_COMMAND (config space, region 7, offset 4), written back unchanged.
    /// let mut command = [0u8; 2];
    /// device.read_region(7, 4, &mut command)?;
    /// device.write_region(7, 4, &command)?;
    /// assert_eq!(device.config_read_u16(4)?, u16::from_le_bytes(command));
    /// // Memory Space Enable (bit 1) cleared: refused while the function decodes memory.
    /// if command[0] & 2 != 0 {
    ///     let err = device.write_region(7, 4, &[command[0] & !2]).unwrap_err();
    ///     assert_eq!(err, VfioError::WouldDisableMemory { address: device.address(), offset: 4, len: 1 });
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_region(&self, index: u32, offset: u64, data: &[u8]) -> Result<(), VfioError> {
        self.bounds(index, offset, data.len())?;
        if index != CONFIG_REGION || !stops_memory_decoding(offset, data, self.pm_cap()?) {
            // SAFETY: the write leaves memory decoding as it is or turns it
            // on, so mappings of the BARs keep faulting in.
            return unsafe { self.write_region_unchecked(index, offset, data) };
        }
        // A write that leaves decoding off is fine only if it is off already,
        // which means that no safe mapping of the BARs exists: `map_region`
        // refuses while decoding is off, and no safe write turns it off while
        // it is on. The lock keeps a `map_region` (or a write that turns
        // decoding on and is followed by one) from slipping in between this
        // check and the write.
        let _decoding = sync::lock(&self.group.memory_decoding);
        if self.decodes_memory()? {
            return Err(VfioError::WouldDisableMemory { address: self.address, offset, len: data.len() });
        }
        // SAFETY: the function does not decode memory now (checked under the
        // lock), so no mapping of its BARs was made by the safe API since
        // decoding last went off, and none can be made before the write lands.
        unsafe { self.write_region_unchecked(index, offset, data) }
    }

    /// Writes `data` to region `index` at `offset` like
    /// [`Device::write_region`], without refusing config writes that stop the
    /// function decoding memory (clearing Memory Space Enable in PCI_COMMAND,
    /// or a power state other than D0 in the PM capability).
    ///
    /// Wraps `pwrite(2)` on the device fd.
    ///
    /// # Safety
    /// While the function does not decode memory, vfio-pci answers every
    /// fault on a mapping of its BARs with SIGBUS: no mapping of this
    /// device's regions ([`Device::map_region`]) may be touched until memory
    /// decoding is restored (by another write or a [`Device::reset`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// // Memory decoding off and on again (PCI_COMMAND bit 1), with no BAR
    /// // mapping touched in between.
    /// let command = device.config_read_u16(4)?;
    /// // SAFETY: no mapping of the device's BARs exists in this example.
    /// unsafe { device.write_region_unchecked(7, 4, &(command & !2).to_le_bytes()) }?;
    /// assert_eq!(device.config_read_u16(4)? & 2, 0);
    /// // SAFETY: as above.
    /// unsafe { device.write_region_unchecked(7, 4, &command.to_le_bytes()) }?;
    /// assert_eq!(device.config_read_u16(4)?, command);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn write_region_unchecked(&self, index: u32, offset: u64, data: &[u8]) -> Result<(), VfioError> {
        let r = self.bounds(index, offset, data.len())?;
        let n = rustix::io::pwrite(&self.fd, data, r.offset + offset).map_err(OsError::tag("pwrite vfio region"))?;
        if n != data.len() {
            return Err(OsError::new("pwrite vfio region", Errno::IO).into());
        }
        Ok(())
    }

    /// Maps the whole of region `index` (a BAR) into the process.
    ///
    /// Safe because the region's pages stay backed: its size is fixed, and
    /// the function decodes memory now ([`VfioError::MemoryDisabled`]
    /// otherwise) and keeps doing so, as [`Device::write_region`] refuses the
    /// config writes that would stop it.
    ///
    /// Wraps `VFIO_DEVICE_GET_REGION_INFO`, `pread(2)` of PCI_COMMAND (and of
    /// the power management capability), then `mmap(2)` of the device fd.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::VfioError;
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// for bar in 0..6 {
    ///     // A BAR the function does not implement is `VfioError::NoRegion`.
    ///     let Ok(region) = device.region(bar) else { continue };
    ///     if region.size > 0 && region.mappable() {
    ///         assert_eq!(device.map_region(bar)?.len() as u64, region.size);
    ///     }
    /// }
    /// // Config space is read and written, never mapped.
    /// assert_eq!(device.map_region(7).unwrap_err(), VfioError::RegionNotMappable(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map_region(&self, index: u32) -> Result<Mapping, VfioError> {
        let r = self.region(index)?;
        if !r.mappable() {
            return Err(VfioError::RegionNotMappable(index));
        }
        let access = if r.flags.contains(RegionFlags::WRITE) { Access::ReadWrite } else { Access::Read };
        let len = usize::try_from(r.size).map_err(|_| OsError::new("mmap vfio region", Errno::OVERFLOW))?;
        // Checked and mapped under the lock that config writes leaving memory
        // decoding off take (see `write_region`).
        let _decoding = sync::lock(&self.group.memory_decoding);
        if !self.decodes_memory()? {
            return Err(VfioError::MemoryDisabled(self.address));
        }
        // The region's pages fault in for as long as the function decodes
        // memory, which it does now (checked just above, under the lock); the
        // safe API refuses every config write that would stop it
        // (`write_region`, and `Device` lends no fd), a reset restores it
        // before faults resume, and no other process can open the device while
        // this one holds its group.
        // SAFETY: the mapping covers exactly the region, whose size the kernel
        // fixes for the device's life, and the device file outlives it.
        Ok(unsafe { Mapping::shared(self.fd.as_fd(), r.offset, len, access) }?)
    }

    /// True if the function decodes memory now: Memory Space Enable is set in
    /// PCI_COMMAND and, if it has a power management capability, it is in
    /// D0. Otherwise vfio-pci answers faults on its BAR mappings with SIGBUS.
    fn decodes_memory(&self) -> Result<bool, VfioError> {
        let mut command = [0u8; 1];
        self.read_region(CONFIG_REGION, PCI_COMMAND, &mut command)?;
        if command[0] & PCI_COMMAND_MEMORY == 0 {
            return Ok(false);
        }
        let Some(pm) = self.pm_cap()? else { return Ok(true) };
        let mut pmcsr = [0u8; 1];
        self.read_region(CONFIG_REGION, pm + PCI_PM_CTRL, &mut pmcsr)?;
        Ok(pmcsr[0] & PCI_PM_CTRL_STATE_MASK == 0)
    }

    /// Config-space offset of the power management capability (walked once,
    /// then remembered: the capability list does not change).
    fn pm_cap(&self) -> Result<Option<u64>, VfioError> {
        if let Some(pm) = self.pm_cap.get() {
            return Ok(*pm);
        }
        let mut found = None;
        if self.config_read_u16(PCI_STATUS)? & PCI_STATUS_CAP_LIST != 0 {
            let mut next = [0u8; 1];
            self.read_region(CONFIG_REGION, PCI_CAPABILITY_LIST, &mut next)?;
            let mut pos = u64::from(next[0] & !3);
            for _ in 0..PCI_FIND_CAP_TTL {
                if pos < 0x40 {
                    break;
                }
                let mut header = [0u8; 2];
                self.read_region(CONFIG_REGION, pos, &mut header)?;
                if header[0] == PCI_CAP_ID_PM {
                    found = Some(pos);
                    break;
                }
                pos = u64::from(header[1] & !3);
            }
        }
        Ok(*self.pm_cap.get_or_init(|| found))
    }

    /// True if vfio-pci can reset the function (`VFIO_DEVICE_FLAGS_RESET`:
    /// it has FLR, a PM reset, or a bus it can reset alone).
    ///
    /// No system call: the flag `VFIO_DEVICE_GET_INFO` gave at open.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// println!("{} can be reset: {}", device.address(), device.supports_reset());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn supports_reset(&self) -> bool {
        self.flags & uapi::VFIO_DEVICE_FLAGS_RESET != 0
    }

    /// Resets the function (`VFIO_DEVICE_RESET`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::VfioError;
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// if device.supports_reset() {
    ///     device.reset()?;
    /// } else {
    ///     assert_eq!(device.reset().unwrap_err(), VfioError::ResetUnsupported(device.address()));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

/// Letting go of a device the kernel wants back (see `runtime::backend::lost`).
impl Device {
    /// Clears Bus Master Enable, so that the function starts no more DMA
    /// (best effort on a function that is going away: the error says why not).
    ///
    /// Read-modify-write of `PCI_COMMAND` with `pread(2)` and `pwrite(2)` of
    /// the config region.
    pub(crate) fn disable_bus_master(&self) -> Result<(), VfioError> {
        let cmd = self.config_read_u16(PCI_COMMAND)?;
        if cmd & PCI_COMMAND_MASTER != 0 {
            self.config_write_u16(PCI_COMMAND, cmd & !PCI_COMMAND_MASTER)?;
        }
        Ok(())
    }

    /// Closes the device file while the `Device` lives on: its fd number is
    /// pointed at `/dev/null` (`dup3(2)`), so the kernel's last reference
    /// to the VFIO device goes as soon as no mapping of it is left, and an
    /// unbind or removal waiting for it can finish. Every later operation
    /// fails (`ENOTTY`, `EINVAL`: `/dev/null` has no VFIO ioctls and no
    /// regions); nothing can reach the function again through this object.
    /// The number stays owned by `self` and is closed on drop as before, so
    /// no other file can appear under it meanwhile.
    ///
    /// Mappings of its regions keep the file open: make them inert first
    /// ([`Mapping::make_inert`]).
    pub fn revoke(&self) -> Result<(), VfioError> {
        let null = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(OsError::tag("open /dev/null"))?;
        // dup3 replaces the file behind the number atomically: a concurrent user of `self.fd` sees the device or
        // /dev/null, never a closed or reused number.
        // SAFETY: a second owner of `self.fd`'s number, for the one call that needs an `&mut OwnedFd`; it is never
        // dropped (ManuallyDrop), so the number is closed only once, by `self.fd`.
        let mut target = std::mem::ManuallyDrop::new(unsafe {
            <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(self.fd.as_raw_fd())
        });
        rustix::io::dup3(&null, &mut target, rustix::io::DupFlags::CLOEXEC).map_err(OsError::tag("dup3"))?;
        Ok(())
    }
}

/// True if a config-space write of `data` at `offset` leaves the function not
/// decoding memory: the byte it writes to PCI_COMMAND has Memory Space Enable
/// clear, or the byte it writes to PMCSR of the power management capability
/// at `pm` asks for a state other than D0 (vfio-pci splits config writes into
/// naturally aligned pieces, so any write covering those bytes counts).
fn stops_memory_decoding(offset: u64, data: &[u8], pm: Option<u64>) -> bool {
    let byte_at =
        |reg: u64| reg.checked_sub(offset).and_then(|i| usize::try_from(i).ok()).and_then(|i| data.get(i)).copied();
    byte_at(PCI_COMMAND).is_some_and(|b| b & PCI_COMMAND_MEMORY == 0)
        || pm
            .and_then(|pm| pm.checked_add(PCI_PM_CTRL))
            .and_then(byte_at)
            .is_some_and(|b| b & PCI_PM_CTRL_STATE_MASK != 0)
}

/// One region of a [`Device`] (a BAR, config space) as [`Bytes`]: reads and
/// writes with `pread(2)`/`pwrite(2)` on the device fd, as
/// [`Device::read_region`] and [`Device::write_region`] make them (so config
/// writes that would stop memory decoding are refused here too).
///
/// ```
/// use dmabridge::sys::bytes::{Bytes, BytesFault};
/// # use dmabridge::sys::pci::PciFunction;
/// # use dmabridge::sys::vfio::{Container, Device};
/// # fn vfio_device() -> Option<Device> {
/// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
/// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
/// # }
/// let Some(device) = vfio_device() else { return Ok(()) };
/// let config = device.region_bytes(7);
/// let function = PciFunction::read(device.address()).expect("the function exists");
/// assert_eq!(config.read_obj::<u16>(0)?, function.vendor);
/// let err = config.read_slice(u64::MAX, &mut [0u8; 2]).unwrap_err();
/// assert!(matches!(err.fault, BytesFault::OutOfBounds { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Region<'a> {
    device: &'a Device,
    index: u32,
}

impl Device {
    /// Region `index` as [`Bytes`] (whether the device has it is checked at
    /// each access: [`BytesFault::Refused`] with [`VfioError::NoRegion`]'s
    /// message).
    ///
    /// No system call until an access.
    pub fn region_bytes(&self, index: u32) -> Region<'_> {
        Region { device: self, index }
    }
}

impl Region<'_> {
    fn fault(&self, offset: u64, len: usize, e: VfioError) -> BytesError {
        let fault = match e {
            VfioError::OutsideRegion { index, size, .. } => {
                BytesFault::OutOfBounds { object: format!("VFIO region {index} of {}", self.device.address), size }
            }
            e => BytesFault::Refused(format!("VFIO region {} of {}: {e}", self.index, self.device.address)),
        };
        BytesError::new(offset, len, fault)
    }
}

impl Bytes for Region<'_> {
    fn read_slice(&self, offset: u64, buf: &mut [u8]) -> Result<(), BytesError> {
        let len = buf.len();
        self.device.read_region(self.index, offset, buf).map_err(|e| self.fault(offset, len, e))
    }

    fn write_slice(&self, offset: u64, data: &[u8]) -> Result<(), BytesError> {
        self.device.write_region(self.index, offset, data).map_err(|e| self.fault(offset, data.len(), e))
    }
}

// No `AsFd` for `Device`, on purpose: with the device fd, safe code could
// `pwrite` the config space past `write_region`'s checks (clear the memory
// decoding bit) and then fault on a safe `map_region` mapping with SIGBUS.
// Every operation on the fd goes through the checked methods above.

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_that_stop_memory_decoding() {
        // PCI_COMMAND: memory (bit 1) kept, cleared, or not written at all.
        assert!(!stops_memory_decoding(4, &[0b110, 0], None));
        assert!(stops_memory_decoding(4, &[0b100, 0], None));
        assert!(stops_memory_decoding(0, &[0; 8], None));
        assert!(stops_memory_decoding(3, &[0xff, 0x00], None));
        assert!(!stops_memory_decoding(5, &[0], None));
        assert!(!stops_memory_decoding(0, &[0; 4], None));
        // PMCSR of a PM capability at 0x40: D0 is fine, D1..D3hot are not.
        assert!(!stops_memory_decoding(0x44, &[0, 0], Some(0x40)));
        assert!(stops_memory_decoding(0x44, &[3, 0], Some(0x40)));
        assert!(stops_memory_decoding(0x42, &[0, 0, 1, 0], Some(0x40)));
        assert!(!stops_memory_decoding(0x45, &[3], Some(0x40)));
        assert!(!stops_memory_decoding(0x44, &[3], None));
        // Offsets near the top of the range do not overflow.
        assert!(!stops_memory_decoding(u64::MAX, &[0], Some(u64::MAX - 4)));
        assert!(!stops_memory_decoding(u64::MAX - 1, &[0, 0], Some(0x40)));
    }
}
