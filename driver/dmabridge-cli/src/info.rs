//! `dmabridge info`: what this machine can do for zero-copy work.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;

use dmabridge::sys::probe::Report;

use crate::Outcome;

/// The long help of `dmabridge info`.
pub const LONG_ABOUT: &str = "\
Report what this machine can do for zero-copy work: the kernel and io_uring,
/dev/udmabuf and its limits, the DMA-BUF heaps, the IOMMU, VFIO (container,
modules, and every PCI function by IOMMU group, with edu and ivshmem marked),
and the memlock limit; then the zero-copy paths these add up to (memfd ->
udmabuf dma-buf export, DMA-BUF heaps, VFIO DMA mapping).

Every item is ok, WARNING, NO ACCESS or MISSING; an item that is not ok is
followed by a `fix:` line. The report only looks: it loads nothing, binds
nothing and opens no VFIO group, so it is safe to run at any time and as any
user (it reports what that user may do). The exit status is 0 whatever the
report says; use --json and its `verdict` fields to act on it in scripts.";

/// Arguments of `dmabridge info`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as pretty JSON instead of text.
    #[arg(
        long,
        long_help = "Print the report as pretty JSON instead of text. Every section and item\n\
                     has a \"verdict\" (\"ok\", \"warning\", \"no-access\" or \"missing\") and a\n\
                     \"hint\", null when ok; \"overall\".\"paths\" lists the zero-copy paths."
    )]
    json: bool,
}

/// Gathers the report and prints it; fails only if the output cannot be
/// written.
pub fn run(args: Args) -> Outcome {
    let report = Report::gather();
    match print(&report, args.json) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // The reader left (`dmabridge info | head`): fail, but quietly.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::FAILURE),
        Err(e) => Err(e).context("writing the report to stdout"),
    }
}

fn print(report: &Report, json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, report)?;
        writeln!(out)?;
    } else {
        write!(out, "{report}")?;
    }
    out.flush()
}
