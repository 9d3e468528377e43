//! `dmabridge`: the command line of the dmabridge userspace memory driver.
//!
//! Each subcommand lives in its own module that exposes `Args` (its clap
//! arguments) and `run(Args) -> Outcome`; adding one takes a variant of
//! [`Command`] and an arm in [`main`].

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use dmabridge::sys::hints;

mod capture;
mod devices;
mod info;
mod memlock;
mod proof;
mod remote_dma;

/// What a subcommand returns: its exit status, or an error that `main`
/// prints with its whole chain of causes, `dmabridge: WHAT WAS BEING DONE:
/// ...: CAUSE`, before exiting with status 1. Each fallible step adds the
/// step it was as [`anyhow::Context`]; the library's typed errors are the
/// causes at the end of the chain.
pub type Outcome = anyhow::Result<ExitCode>;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "dmabridge",
    version,
    about = "Zero-copy memory for Linux pipelines: memfd, udmabuf, dma-buf, DMA-BUF heaps, VFIO and io_uring",
    long_about = format!(
        "\
dmabridge is a userspace memory driver for zero-copy Linux pipelines. It backs
buffers with memfd, exports them as dma-bufs through udmabuf (or allocates them
from DMA-BUF heaps), maps them for devices through VFIO and the IOMMU, and waits
for device completions with io_uring, so that data moves between CPU, devices
and processes without copies.

Start with `dmabridge info`: it reports which of these this machine offers and,
for each missing piece, one line saying how to fix it. Setting a machine up
(loading modules, binding devices to vfio-pci, raising the memlock limit) is
the job of {}{}.",
        hints::kmod(),
        hints::checkout_only("; `make demo` runs everything in a QEMU\nguest that has all of it")
    ),
    after_help = "Exit status: 0 on success, 1 if the command failed, 2 for a usage error.\n\
                  Errors are printed as `dmabridge: STEP: ...: CAUSE`. Warnings of the library go to stderr; \
                  RUST_LOG sets their level (default warn)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Report what this machine can do for zero-copy work.
    #[command(long_about = info::LONG_ABOUT)]
    Info(info::Args),
    /// Prove the zero-copy path end to end on an edu DMA device.
    #[command(long_about = proof::long_about())]
    Proof(proof::ProofArgs),
    /// Capture video frames zero-copy into dmabridge memory and convert them.
    ///
    /// V4L2 device -> dmabridge memory (dma-bufs, no copy) -> yuyv_to_rgba on
    /// a dmabridge queue -> PNGs; prints latency, frames/s and bytes copied.
    #[command(long_about = capture::long_about())]
    Capture(capture::Args),
    /// Bus-addressable memory end to end: a remote edu DMAs frames and
    /// markers, the queue converts them and writes them peer-to-peer into the
    /// ivshmem BAR, then signals (cl_amd_bus_addressable_memory).
    #[command(long_about = remote_dma::long_about())]
    RemoteDma(remote_dma::Args),
}

fn main() -> ExitCode {
    // The library reports what it cannot return (failed undo and release
    // paths, the reason behind a failed command's status) through the `log`
    // facade; show those records on stderr. RUST_LOG chooses the level
    // (e.g. RUST_LOG=debug, RUST_LOG=dmabridge=info); the default is warn.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Info(args) => info::run(args).context("info"),
        Command::Proof(args) => proof::run(&args).map(|()| ExitCode::SUCCESS).context("proof"),
        Command::Capture(args) => capture::run(&args).context("capture"),
        Command::RemoteDma(args) => remote_dma::run(&args).context("remote-dma"),
    };
    outcome.unwrap_or_else(|e| {
        // `{:#}`: every context, then the cause, separated by ": ".
        eprintln!("dmabridge: {e:#}");
        if let Some(advice) = memlock::explain(&e) {
            eprintln!("dmabridge: {advice}");
        }
        ExitCode::FAILURE
    })
}
