//! PCI config space: 16- and 32-bit registers, bus mastering.

use super::*;

impl Device {
    /// Reads a 16-bit config-space register.
    ///
    /// Wraps `pread(2)` of the config region.
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
    /// assert_eq!(device.config_read_u16(0)?, function.vendor);
    /// assert_eq!(device.config_read_u16(2)?, function.device);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config_read_u16(&self, offset: u64) -> Result<u16, VfioError> {
        let mut b = [0u8; 2];
        self.read_region(CONFIG_REGION, offset, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    /// Writes a 16-bit config-space register, with the refusals of
    /// [`Device::write_region`].
    ///
    /// Wraps `pwrite(2)` of the config region.
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
    /// // PCI_COMMAND, written back unchanged.
    /// let command = device.config_read_u16(4)?;
    /// device.config_write_u16(4, command)?;
    /// assert_eq!(device.config_read_u16(4)?, command);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config_write_u16(&self, offset: u64, value: u16) -> Result<(), VfioError> {
        self.write_region(CONFIG_REGION, offset, &value.to_le_bytes())
    }

    /// Reads a 32-bit config-space register.
    ///
    /// Wraps `pread(2)` of the config region.
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
    /// let id = device.config_read_u32(0)?;
    /// assert_eq!(id, u32::from(function.device) << 16 | u32::from(function.vendor));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config_read_u32(&self, offset: u64) -> Result<u32, VfioError> {
        let mut b = [0u8; 4];
        self.read_region(CONFIG_REGION, offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Sets Bus Master Enable in PCI_COMMAND. vfio-pci leaves it off when it
    /// opens a device, and a device without it cannot DMA.
    ///
    /// Read-modify-write of `PCI_COMMAND` with `pread(2)` and `pwrite(2)` of the
    /// config region.
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
    /// device.enable_bus_master()?;
    /// assert!(device.bus_master_enabled()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// Wraps `pread(2)` of `PCI_COMMAND` in the config region.
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
    /// // Bus Master Enable is bit 2 of PCI_COMMAND.
    /// assert_eq!(device.bus_master_enabled()?, device.config_read_u16(4)? & (1 << 2) != 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bus_master_enabled(&self) -> Result<bool, VfioError> {
        Ok(self.config_read_u16(PCI_COMMAND)? & PCI_COMMAND_MASTER != 0)
    }
}
