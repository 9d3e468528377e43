//! The PCIe errors the kernel's AER driver counted for a function and for
//! the ports above it (sysfs `aer_dev_fatal` and `aer_dev_nonfatal`).
//!
//! A process loses a device whose function, or whose port, reports an
//! uncorrectable error (vfio-pci signals the error interrupt); the kernel
//! then recovers the link and the function looks healthy to the next
//! process. The counters are what is left to tell: `dmabridge info` reports
//! them, so that a device that broke a pipeline is not taken for a sound one.
//! A function without an AER capability (QEMU's NVMe controller) has no
//! counters of its own; its port's count the errors it reports.

use std::path::Path;

use super::pci::{PciAddress, PciFunction};

/// The uncorrectable errors counted on one function since boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AerCount {
    /// The function (the device itself, or a port above it).
    pub address: PciAddress,
    /// Fatal ones (`TOTAL_ERR_FATAL`).
    pub fatal: u64,
    /// Non-fatal ones (`TOTAL_ERR_NONFATAL`).
    pub nonfatal: u64,
    /// The kinds counted, as the kernel names them (`CmpltTO`, `SDES`, ...).
    pub kinds: Vec<String>,
}

impl std::fmt::Display for AerCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} fatal, {} non-fatal ({})", self.address, self.fatal, self.nonfatal, self.kinds.join(", "))
    }
}

/// For `address` and each PCI function above it in the hierarchy (nearest
/// first), the uncorrectable errors counted since boot, for those with any.
/// Empty when none were counted, or when the kernel has no AER counters for
/// them (no AER capability, `CONFIG_PCIEAER` unset, not on the bus).
///
/// Reads sysfs: the function's path under `/sys/devices` and each
/// function's `aer_dev_fatal` and `aer_dev_nonfatal`.
///
/// # Examples
///
/// ```
/// use dmabridge::sys::pci::PciFunction;
/// use dmabridge::sys::pci_aer::uncorrectable_errors;
///
/// for f in PciFunction::all() {
///     for c in uncorrectable_errors(f.address) {
///         assert!(c.fatal + c.nonfatal > 0);
///         println!("{} (counted above {})", c, f.address);
///     }
/// }
/// assert!(uncorrectable_errors("ffff:ff:1f.7".parse()?).is_empty());
/// # Ok::<(), dmabridge::sys::pci::BadPciAddress>(())
/// ```
pub fn uncorrectable_errors(address: PciAddress) -> Vec<AerCount> {
    let Ok(path) = std::fs::canonicalize(PciFunction::sysfs_path(address)) else { return Vec::new() };
    // /sys/devices/pci0000:00/0000:00:1c.0/0000:01:00.0: the function, then
    // the bridges above it, up to the host bridge (not a function).
    path.ancestors()
        .map_while(|dir| Some((dir.file_name()?.to_str()?.parse::<PciAddress>().ok()?, dir)))
        .filter_map(|(address, dir)| count(address, dir))
        .collect()
}

fn count(address: PciAddress, dir: &Path) -> Option<AerCount> {
    let (fatal, mut kinds) = parse(&std::fs::read_to_string(dir.join("aer_dev_fatal")).unwrap_or_default());
    let (nonfatal, more) = parse(&std::fs::read_to_string(dir.join("aer_dev_nonfatal")).unwrap_or_default());
    kinds.extend(more.into_iter().filter(|k| !kinds.contains(k)).collect::<Vec<_>>());
    (fatal + nonfatal > 0).then_some(AerCount { address, fatal, nonfatal, kinds })
}

/// One counter file: lines `NAME COUNT`, the last `TOTAL_ERR_* COUNT`.
/// Returns the total and the names counted.
fn parse(text: &str) -> (u64, Vec<String>) {
    let mut total = 0;
    let mut kinds = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(name), Some(n)) = (it.next(), it.next().and_then(|n| n.parse::<u64>().ok())) else { continue };
        if name.starts_with("TOTAL_ERR_") {
            total = n;
        } else if n > 0 {
            kinds.push(name.to_owned());
        }
    }
    (total, kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_files_parse() {
        let text = "Undefined 0\nDLP 0\nCmpltTO 2\nUnsupReq 1\nbad line\nTOTAL_ERR_NONFATAL 3\n";
        assert_eq!(parse(text), (3, vec!["CmpltTO".to_owned(), "UnsupReq".to_owned()]));
        assert_eq!(parse(""), (0, Vec::new()));
    }
}
