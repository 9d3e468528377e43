//! `dmabridge info`: what this machine can do for zero-copy work.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;

use dmabridge::sys::probe::Report;
use serde::Serialize;

use crate::devices::DevicesReport;
use crate::Outcome;

/// The long help of `dmabridge info`.
pub const LONG_ABOUT: &str = "\
Report what this machine can do for zero-copy work: the kernel and io_uring,
/dev/udmabuf and its limits, the DMA-BUF heaps, the IOMMU, VFIO (container,
modules, and every PCI function by IOMMU group, with edu and ivshmem marked),
and the memlock limit; then the zero-copy paths these add up to (memfd ->
udmabuf dma-buf export, DMA-BUF heaps, VFIO DMA mapping); then the OpenCL
devices of the platform, each available or not, and why: a function whose
VFIO group another process holds, that fails to open, or that was lost (its
removal under way: CL_DEVICE_AVAILABLE false), and a function that
DMABRIDGE_BAR_DEVICE names but that is no longer on the bus (GONE).

Every item is ok, WARNING, NO ACCESS or MISSING; an item that is not ok is
followed by a `fix:` line. Up to the devices, the report only looks: it loads
nothing, binds nothing and opens no VFIO group. The devices section opens the
platform as an application would (the VFIO groups of the edus bound to
vfio-pci and of DMABRIDGE_BAR_DEVICE, while the command runs): only that
shows whether a device can be used. --no-devices leaves it out, which makes
the report safe to run at any time and as any user (it reports what that
user may do). The exit status is 0 whatever the report says; use --json and
its `verdict` fields to act on it in scripts.";

/// Arguments of `dmabridge info`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as pretty JSON instead of text.
    #[arg(
        long,
        long_help = "Print the report as pretty JSON instead of text. Every section and item\n\
                     has a \"verdict\" (\"ok\", \"warning\", \"no-access\" or \"missing\") and a\n\
                     \"hint\", null when ok; \"overall\".\"paths\" lists the zero-copy paths;\n\
                     \"devices\".\"devices\" lists the OpenCL devices, each with a \"state\"\n\
                     (\"available\", \"unavailable\" or \"gone\") and a \"reason\";\n\
                     \"devices\".\"compiler\" is {\"Ok\": PoCL's version} or {\"Err\": {\"why\", \"fix\"}}."
    )]
    json: bool,
    /// Leave out the OpenCL devices (which opens the platform's VFIO groups).
    #[arg(long)]
    no_devices: bool,
}

/// The whole output: the machine report, then the devices.
#[derive(Serialize)]
struct Full<'a> {
    #[serde(flatten)]
    report: &'a Report,
    devices: Option<&'a DevicesReport>,
}

/// Gathers the report and prints it; fails only if the output cannot be
/// written.
pub fn run(args: Args) -> Outcome {
    let report = Report::gather();
    let devices = (!args.no_devices).then(DevicesReport::gather);
    match print(&Full { report: &report, devices: devices.as_ref() }, args.json) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // The reader left (`dmabridge info | head`): fail, but quietly.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::FAILURE),
        Err(e) => Err(e).context("writing the report to stdout"),
    }
}

fn print(full: &Full<'_>, json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, full)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", full.report)?;
        if let Some(d) = full.devices {
            write!(out, "{d}")?;
        }
    }
    out.flush()
}
