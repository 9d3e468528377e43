//! The OpenCL devices section of `dmabridge info`: the platform opened as
//! an application would open it, and for each device it offers (or a
//! function it was meant to offer) whether it is available now, and if not,
//! why and the fix.
//!
//! The rest of the report only looks (`dmabridge::sys::probe`); this section
//! opens the platform (`Platform::get`: the VFIO groups of the edu functions
//! bound to vfio-pci and of `DMABRIDGE_BAR_DEVICE`, for as long as the
//! command runs), because only opening a function shows whether it can be
//! used: its group may be held by another process, its registers may read all
//! ones, its removal may be under way. A device lost during discovery (its
//! request interrupt fired, an engine timed out) is reported unavailable
//! (`CL_DEVICE_AVAILABLE` false), and a function the configuration names
//! that is no longer in sysfs (removed) is named as gone. A device whose
//! function, or a PCIe port above it, counted uncorrectable errors since boot
//! (the kernel's AER counters) is reported with them, as a warning when it is
//! available: a process using it then lost it, although the function works
//! again after the kernel's recovery.

use std::fmt;
use std::path::Path;

use serde::Serialize;

use dmabridge::runtime::backend::bar::{BarConfig, ENV, UNPARSED};
use dmabridge::runtime::platform::Platform;
use dmabridge::sys::hints;
use dmabridge::sys::pci::PciAddress;
use dmabridge::sys::pci_aer;
use dmabridge::sys::probe::Verdict;

/// Whether a device can be used now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Offered and usable (`CL_DEVICE_AVAILABLE` true).
    Available,
    /// The function is there, but the platform cannot use it: not offered
    /// (open failed, group busy, not bound), or offered and lost
    /// (`CL_DEVICE_AVAILABLE` false).
    Unavailable,
    /// The function the configuration names is not on the bus (removed).
    Gone,
}

/// One OpenCL device, or one function the platform meant to offer as one.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceReport {
    /// The OpenCL device's name (`CL_DEVICE_NAME`); `None` for a function
    /// the platform does not offer.
    pub name: Option<String>,
    /// Its PCI function (`None` for the CPU device and for a
    /// `DMABRIDGE_BAR_DEVICE` entry whose address cannot be read).
    pub address: Option<String>,
    /// Available, unavailable or gone.
    pub state: State,
    /// Why it is not available, when it is not.
    pub reason: Option<String>,
    /// Ok when available.
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
    /// The uncorrectable PCIe errors counted since boot on its function or
    /// a port above it (`None`: none counted).
    pub pcie_errors: Option<String>,
}

/// The section: every device, then the section's verdict (the worst).
#[derive(Debug, Clone, Serialize)]
pub struct DevicesReport {
    /// The devices, the CPU device first.
    pub devices: Vec<DeviceReport>,
    /// The worst verdict of the devices.
    pub verdict: Verdict,
    /// The fix of the first device that is not ok, when one is not.
    pub hint: Option<String>,
    /// Programs from source on the CPU device: PoCL's version and OpenCL C
    /// version when the ICD can load it (`CL_DEVICE_COMPILER_AVAILABLE`
    /// true), else why not and the fix (false: builds answer
    /// `CL_COMPILER_NOT_AVAILABLE`).
    pub compiler: Result<String, NoCompiler>,
}

/// Why the CPU device has no compiler, and the fix.
#[derive(Debug, Clone, Serialize)]
pub struct NoCompiler {
    pub why: String,
    pub fix: String,
}

fn bring_back(address: impl fmt::Display) -> String {
    format!(
        "bring the function back (echo 1 > /sys/bus/pci/rescan, then {} bind {address}) or correct {ENV}",
        hints::kmod()
    )
}

fn on_bus(address: PciAddress) -> bool {
    Path::new("/sys/bus/pci/devices").join(address.to_string()).exists()
}

/// A function the platform does not offer, and why (from
/// `Platform::skipped`): which state, verdict and fix that reason means.
fn skipped(address: PciAddress, why: &str) -> DeviceReport {
    let (state, verdict, hint) = if address == UNPARSED {
        (State::Unavailable, Verdict::Missing, format!("correct {ENV}: ADDRESS,bar=N[,engine=ADDRESS]"))
    } else if !on_bus(address) {
        (State::Gone, Verdict::Missing, bring_back(address))
    } else if why.contains("EBUSY") {
        (
            State::Unavailable,
            Verdict::Warning,
            "another process holds its VFIO group (a device serves one process at a time): end that process, or \
             use the device there"
                .to_owned(),
        )
    } else if why.contains("EACCES") || why.contains("EPERM") {
        (State::Unavailable, Verdict::NoAccess, format!("{}, or run as root", hints::join_group()))
    } else if why.contains("not vfio-pci") {
        (State::Unavailable, Verdict::Warning, format!("{} bind {address}", hints::kmod()))
    } else {
        (
            State::Unavailable,
            Verdict::Missing,
            format!(
                "the function cannot be used as it is (reset or removed, or broken): {}, then start a new process",
                bring_back(address)
            ),
        )
    };
    let reason = if state == State::Gone { format!("not on the PCI bus (removed?); {why}") } else { why.to_owned() };
    let address = (address != UNPARSED).then(|| address.to_string());
    DeviceReport { name: None, address, state, reason: Some(reason), verdict, hint: Some(hint), pcie_errors: None }
}

/// Adds the uncorrectable PCIe errors counted on `d`'s function and the
/// ports above it; an available device with some gets a warning.
fn note_pcie_errors(d: &mut DeviceReport) {
    let Some(address) = d.address.as_deref().and_then(|a| a.parse::<PciAddress>().ok()) else { return };
    let counts = pci_aer::uncorrectable_errors(address);
    if counts.is_empty() {
        return;
    }
    d.pcie_errors = Some(counts.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "));
    if d.verdict == Verdict::Ok {
        d.verdict = Verdict::Warning;
        d.hint = Some(format!(
            "uncorrectable PCIe errors were reported on {address} or a port above it since boot (a process using it \
             then lost it; the kernel recovered the link): see dmesg | grep AER, and check the device and its slot"
        ));
    }
}

impl DevicesReport {
    /// Opens the platform (`Platform::get`) and reports each of its devices,
    /// each function it skipped, and each function `DMABRIDGE_BAR_DEVICE`
    /// names (as a BAR device or as its engine) that is not on the bus.
    pub fn gather() -> DevicesReport {
        let p = Platform::get();
        let mut devices: Vec<DeviceReport> = p
            .devices()
            .iter()
            .map(|d| {
                let address = d.pci_address().map(|a| a.to_string());
                match d.lost() {
                    None => DeviceReport {
                        name: Some(d.name.clone()),
                        address,
                        state: State::Available,
                        reason: None,
                        verdict: Verdict::Ok,
                        hint: None,
                        pcie_errors: None,
                    },
                    Some(e) => DeviceReport {
                        name: Some(d.name.clone()),
                        hint: Some(format!(
                            "{}, then start a new process (this one cannot use it again)",
                            bring_back(address.as_deref().unwrap_or("ADDRESS"))
                        )),
                        address,
                        state: State::Unavailable,
                        reason: Some(format!("CL_DEVICE_AVAILABLE is false: {}", e.message)),
                        verdict: Verdict::Missing,
                        pcie_errors: None,
                    },
                }
            })
            .collect();
        devices.extend(p.skipped().iter().map(|(a, why)| skipped(*a, why)));
        // Configured functions that left no trace above: an engine that was
        // removed (its BAR device is skipped for want of it).
        for c in BarConfig::from_env().into_iter().flatten() {
            let wanted = std::iter::once((c.address, format!("a BAR device in {ENV}")))
                .chain(c.engine.map(|e| (e, format!("the engine of the BAR device {} in {ENV}", c.address))));
            for (address, role) in wanted {
                let listed = devices.iter().any(|d| d.address.as_deref() == Some(&address.to_string()));
                if !listed && !on_bus(address) {
                    devices.push(skipped(address, &format!("configured as {role}")));
                }
            }
        }
        devices.iter_mut().for_each(note_pcie_errors);
        let verdict = devices.iter().map(|d| d.verdict).max().unwrap_or(Verdict::Ok);
        let hint = devices.iter().find_map(|d| d.hint.clone());
        let compiler = match dmabridge_icd::pocl::status() {
            Ok(p) => Ok(format!("{} ({})", p.version, p.c_version)),
            Err(u) => Err(NoCompiler { why: u.why.clone(), fix: u.fix.to_owned() }),
        };
        DevicesReport { devices, verdict, hint, compiler }
    }
}

impl fmt::Display for DevicesReport {
    /// Aligned like the rest of the report: verdict, label (the PCI
    /// address, or the name), detail; the fix on its own line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "OpenCL devices (the platform opened as an application opens it)")?;
        for d in &self.devices {
            let label = d.address.clone().or_else(|| d.name.clone()).unwrap_or_else(|| ENV.to_owned());
            let what = match (&d.name, &d.address) {
                (Some(name), Some(_)) => format!("{name:?}, "),
                _ => String::new(),
            };
            let detail = match (d.state, &d.reason) {
                (State::Available, _) => format!("{what}available"),
                (State::Gone, Some(r)) => format!("{what}GONE: {r}"),
                (_, Some(r)) => format!("{what}unavailable: {r}"),
                (_, None) => format!("{what}unavailable"),
            };
            let line = format!("  {:<10} {label:<22} {detail}", d.verdict.label());
            writeln!(f, "{}", line.trim_end())?;
            if let Some(e) = &d.pcie_errors {
                writeln!(f, "  {:10} uncorrectable PCIe errors since boot: {e}", "")?;
            }
            if let Some(h) = &d.hint {
                writeln!(f, "  {:10} fix: {h}", "")?;
            }
        }
        // Optional: without a compiler the report's verdict stays the devices'.
        match &self.compiler {
            Ok(c) => writeln!(f, "  {:<10} {:<22} OpenCL C from source on the CPU device: {c}", "ok", "compiler")?,
            Err(NoCompiler { why, fix }) => {
                writeln!(
                    f,
                    "  {:<10} {:<22} none: clBuildProgram answers CL_COMPILER_NOT_AVAILABLE ({why})",
                    "info", "compiler"
                )?;
                writeln!(f, "  {:10} fix: {fix}", "")?;
            }
        }
        Ok(())
    }
}
