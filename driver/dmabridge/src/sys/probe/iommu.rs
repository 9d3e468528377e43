//! The IOMMU, as sysfs shows its groups and units.

use serde::Serialize;

use super::Verdict;

/// How to turn the IOMMU on, for this machine's architecture.
#[cfg(not(target_arch = "aarch64"))]
pub(crate) const IOMMU_HINT: &str = "boot with intel_iommu=on / amd_iommu=on";
/// How to turn the IOMMU on, for this machine's architecture: on arm64 boards
/// the SMMU must be described by the firmware (device tree or ACPI IORT) and
/// translating, and VFIO also needs MSI isolation, which a GICv3 ITS gives.
#[cfg(target_arch = "aarch64")]
pub(crate) const IOMMU_HINT: &str = "enable the SMMU (CONFIG_ARM_SMMU_V3 or CONFIG_ARM_SMMU, described by the device tree or ACPI IORT) and boot with iommu.passthrough=0; VFIO also needs MSI isolation (a GICv3 with an ITS)";

/// The IOMMU.
#[derive(Debug, Clone, Serialize)]
pub struct IommuReport {
    /// True if `/sys/kernel/iommu_groups` has entries.
    pub on: bool,
    /// How many IOMMU groups there are.
    pub groups: usize,
    /// The IOMMU units of `/sys/class/iommu` (e.g. `dmar0`).
    pub units: Vec<String>,
    /// Ok, missing (no groups), or warning (groups but no unit: VFIO's
    /// no-IOMMU mode, without DMA isolation).
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

fn dir_names(path: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

impl IommuReport {
    /// Counts `/sys/kernel/iommu_groups` and lists `/sys/class/iommu`.
    ///
    /// Reads sysfs: `/sys/kernel/iommu_groups` and `/sys/class/iommu`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::{IommuReport, Verdict};
    ///
    /// let iommu = IommuReport::gather();
    /// assert_eq!(iommu.on, iommu.groups > 0);
    /// assert_eq!(iommu.verdict == Verdict::Missing, !iommu.on);
    /// ```
    pub fn gather() -> IommuReport {
        let groups = dir_names("/sys/kernel/iommu_groups").len();
        let units = dir_names("/sys/class/iommu");
        let (verdict, hint) = match (groups, units.is_empty()) {
            (0, _) => (Verdict::Missing, Some(IOMMU_HINT.to_owned())),
            (_, true) => (
                Verdict::Warning,
                Some(format!(
                    "IOMMU groups but no IOMMU unit: VFIO's no-IOMMU mode gives no DMA isolation; {IOMMU_HINT}"
                )),
            ),
            _ => (Verdict::Ok, None),
        };
        IommuReport { on: groups > 0, groups, units, verdict, hint }
    }
}
