//! PCI functions as sysfs shows them: address, ids, bound driver, IOMMU group.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Root of the PCI device folder (overridable for tests of parsing only).
const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// Vendor:device of QEMU's edu DMA device.
pub const EDU_ID: (u16, u16) = (0x1234, 0x11e8);
/// Vendor:device of QEMU's ivshmem-plain device.
pub const IVSHMEM_ID: (u16, u16) = (0x1af4, 0x1110);

/// A PCI address `domain:bus:device.function`, e.g. `0000:00:10.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    /// Segment.
    pub domain: u16,
    /// Bus.
    pub bus: u8,
    /// Device (0-31).
    pub device: u8,
    /// Function (0-7).
    pub function: u8,
}

/// A string that is not a PCI address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a PCI address: write it as 0000:00:10.0 (domain:bus:device.function) or 00:10.0")]
pub struct BadPciAddress(pub String);

impl FromStr for PciAddress {
    type Err = BadPciAddress;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadPciAddress(s.to_owned());
        let (rest, function) = s.rsplit_once('.').ok_or_else(bad)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [d, b, v] => (*d, *b, *v),
            [b, v] => ("0000", *b, *v),
            _ => return Err(bad()),
        };
        let addr = PciAddress {
            domain: u16::from_str_radix(domain, 16).map_err(|_| bad())?,
            bus: u8::from_str_radix(bus, 16).map_err(|_| bad())?,
            device: u8::from_str_radix(device, 16).map_err(|_| bad())?,
            function: u8::from_str_radix(function, 16).map_err(|_| bad())?,
        };
        if addr.device > 31 || addr.function > 7 {
            return Err(bad());
        }
        Ok(addr)
    }
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.device, self.function)
    }
}

/// One PCI function, read from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PciFunction {
    /// Its address.
    #[serde(serialize_with = "ser_display")]
    pub address: PciAddress,
    /// Vendor id.
    pub vendor: u16,
    /// Device id.
    pub device: u16,
    /// The bound driver's name, if any.
    pub driver: Option<String>,
    /// Its IOMMU group number, if the IOMMU is on.
    pub iommu_group: Option<u32>,
}

fn ser_display<S: serde::Serializer>(v: &PciAddress, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

fn read_hex(path: &Path) -> Option<u16> {
    let s = std::fs::read_to_string(path).ok()?;
    u16::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn link_name(path: &Path) -> Option<String> {
    std::fs::read_link(path).ok()?.file_name().map(|n| n.to_string_lossy().into_owned())
}

impl PciFunction {
    /// The sysfs folder of `address`.
    ///
    /// No system call: the path under `/sys/bus/pci/devices`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use dmabridge::sys::pci::{PciAddress, PciFunction};
    ///
    /// let address: PciAddress = "00:10.0".parse()?;
    /// assert_eq!(PciFunction::sysfs_path(address), Path::new("/sys/bus/pci/devices/0000:00:10.0"));
    /// # Ok::<(), dmabridge::sys::pci::BadPciAddress>(())
    /// ```
    pub fn sysfs_path(address: PciAddress) -> PathBuf {
        Path::new(PCI_DEVICES).join(address.to_string())
    }

    /// Reads one function; `None` if it does not exist.
    ///
    /// Reads sysfs: `vendor`, `device`, and the `driver` and `iommu_group` links.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    ///
    /// // Reading a function again gives what the scan of sysfs gave.
    /// for f in PciFunction::all() {
    ///     assert_eq!(PciFunction::read(f.address).as_ref(), Some(&f));
    /// }
    /// assert_eq!(PciFunction::read("ffff:ff:1f.7".parse()?), None);
    /// # Ok::<(), dmabridge::sys::pci::BadPciAddress>(())
    /// ```
    pub fn read(address: PciAddress) -> Option<PciFunction> {
        let dir = Self::sysfs_path(address);
        Some(PciFunction {
            address,
            vendor: read_hex(&dir.join("vendor"))?,
            device: read_hex(&dir.join("device"))?,
            driver: link_name(&dir.join("driver")),
            iommu_group: link_name(&dir.join("iommu_group")).and_then(|g| g.parse().ok()),
        })
    }

    /// Every PCI function of the machine, by address.
    ///
    /// Reads sysfs: every entry of `/sys/bus/pci/devices` (empty without sysfs).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    ///
    /// let functions = PciFunction::all();
    /// assert!(functions.windows(2).all(|w| w[0].address < w[1].address));
    /// for f in &functions {
    ///     println!("{} {:04x}:{:04x} {:?}", f.address, f.vendor, f.device, f.driver);
    /// }
    /// ```
    pub fn all() -> Vec<PciFunction> {
        let mut v: Vec<PciFunction> = std::fs::read_dir(PCI_DEVICES)
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .filter_map(PciFunction::read)
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by_key(|f| f.address);
        v
    }

    /// Every function with the given vendor:device.
    ///
    /// Reads sysfs, as [`PciFunction::all`].
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::{PciFunction, EDU_ID};
    ///
    /// for edu in PciFunction::with_id(EDU_ID) {
    ///     assert_eq!((edu.vendor, edu.device), (0x1234, 0x11e8));
    /// }
    /// ```
    pub fn with_id(id: (u16, u16)) -> Vec<PciFunction> {
        Self::all().into_iter().filter(|f| (f.vendor, f.device) == id).collect()
    }

    /// True if vfio-pci drives this function.
    ///
    /// No system call: looks at the `driver` link read from sysfs.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    ///
    /// let mut f = PciFunction {
    ///     address: "0000:00:04.0".parse()?,
    ///     vendor: 0x1234,
    ///     device: 0x11e8,
    ///     driver: Some("vfio-pci".into()),
    ///     iommu_group: Some(7),
    /// };
    /// assert!(f.is_vfio_bound());
    /// f.driver = None;
    /// assert!(!f.is_vfio_bound());
    /// # Ok::<(), dmabridge::sys::pci::BadPciAddress>(())
    /// ```
    pub fn is_vfio_bound(&self) -> bool {
        self.driver.as_deref() == Some("vfio-pci")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_addresses() {
        let a: PciAddress = "0000:00:10.0".parse().unwrap();
        assert_eq!(a, PciAddress { domain: 0, bus: 0, device: 0x10, function: 0 });
        assert_eq!(a.to_string(), "0000:00:10.0");
        assert_eq!("01:1f.7".parse::<PciAddress>().unwrap().to_string(), "0000:01:1f.7");
        for bad in ["", "00:10", "0000:00:20.0", "0000:00:10.8", "x:00:10.0", "1:2:3:4.0"] {
            assert!(bad.parse::<PciAddress>().is_err(), "{bad}");
        }
    }
}
