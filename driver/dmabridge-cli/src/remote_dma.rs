//! `dmabridge remote-dma`: `cl_amd_bus_addressable_memory` end to end.
//!
//! A remote device (an edu function of the platform, standing in for a
//! capture card) DMAs each YUYV frame and then its marker into a
//! bus-addressable buffer, by bus address only; `WaitSignal` releases the
//! CPU queue, the built-in `yuyv_to_rgba` converts the frame, the engine edu
//! copies the result peer-to-peer into an external physical buffer on the
//! ivshmem BAR (frame `k` in slot `k`), and `WriteSignal` writes marker `k`
//! after it. A process outside the guest watching the ivshmem backing file
//! sees each frame, then its marker.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _};

use dmabridge::ext::amd_bus::{self, BusAddress, RemoteDma};
use dmabridge::runtime::buffer::{commands, mem_flags, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::kernel::{self, adler32, Kernel};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::addr::BusAddr;
use dmabridge::sys::pci::{PciAddress, PciFunction, IVSHMEM_ID};

use crate::Outcome;

/// The long help of `dmabridge remote-dma`.
pub fn long_about() -> String {
    let how = match dmabridge::sys::hints::Layout::current() {
        dmabridge::sys::hints::Layout::Checkout(_) => {
            ":
  qemu/run-in-guest --edu 3 --bind 0000:00:10.0 --bind 0000:00:12.0 \\
      --bind 0000:00:08.0 --ivshmem /dev/shm/frames -- dmabridge remote-dma"
        }
        dmabridge::sys::hints::Layout::Installed { .. } => {
            " (dmabridge-kmod bind
ADDRESS): in QEMU, three -device edu and a -device ivshmem-plain."
        }
    };
    format!(
        "\
cl_amd_bus_addressable_memory end to end, in the QEMU guest.

A remote edu function (the capture card) DMAs each YUYV frame and then its
marker into a bus-addressable buffer by bus address; WaitSignal releases the
CPU queue; the built-in yuyv_to_rgba converts the frame; the engine edu copies
the RGBA frame peer-to-peer into an external physical buffer on the ivshmem
BAR 2 (frame k at --bar-offset + (k-1) * stride); WriteSignal then writes the
32-bit marker k at the signal surface (printed). A host process watching the
ivshmem backing file sees every frame before its marker.

Needs two edu functions and the ivshmem function bound to vfio-pci{how}"
    )
}

/// Options of `dmabridge remote-dma`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The edu that plays the remote device (default: the last edu device).
    #[arg(long)]
    remote: Option<PciAddress>,
    /// The edu whose queue copies into the BAR (default: the first one).
    #[arg(long)]
    engine: Option<PciAddress>,
    /// The ivshmem function (default: the first bound to vfio-pci).
    #[arg(long)]
    ivshmem: Option<PciAddress>,
    /// How many frames.
    #[arg(long, default_value_t = 4)]
    frames: u32,
    /// Frame width in pixels (even).
    #[arg(long, default_value_t = 32)]
    width: u32,
    /// Frame height in pixels.
    #[arg(long, default_value_t = 8)]
    height: u32,
    /// Where the frames land in the BAR (page aligned; decimal or 0x hex).
    #[arg(long, default_value = "0x100000", value_parser = crate::proof::parse_u64)]
    bar_offset: u64,
}

/// Frame `k` in YUYV: a gradient that moves with `k`.
fn yuyv_frame(k: u32, width: u32, height: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity((width * height * 2) as usize);
    for y in 0..height {
        for x in (0..width).step_by(2) {
            let luma = (16 + (x + y * 3 + k * 20) % 220) as u8;
            f.extend_from_slice(&[luma, (64 + k * 30) as u8, luma.wrapping_add(7), (192 - k * 10) as u8]);
        }
    }
    f
}

fn edu_devices() -> Vec<Arc<Device>> {
    Platform::get().devices().iter().filter(|d| d.name.starts_with("edu ")).cloned().collect()
}

fn bar2_of(address: PciAddress) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/sys/bus/pci/devices/{address}/resource"))
        .with_context(|| format!("reading the BARs of {address} from sysfs"))?;
    let line = text.lines().nth(2).context("no BAR 2 line")?;
    let start = line.split_whitespace().next().context("an empty BAR 2 line")?;
    let bar = u64::from_str_radix(start.trim_start_matches("0x"), 16).context("BAR 2's address")?;
    if bar == 0 {
        bail!("{address} has no BAR 2");
    }
    Ok(bar)
}

/// Runs the pipeline.
pub fn run(args: &Args) -> Outcome {
    if args.frames == 0 || args.width == 0 || args.width % 2 != 0 || args.height == 0 {
        bail!("--frames and --height must be above 0, --width even and above 0");
    }
    let edus = edu_devices();
    if edus.len() < 2 {
        bail!(
            "needs two edu devices bound to vfio-pci (one plays the remote device), found {}: run in the QEMU guest \
             with --edu 3 --bind 0000:00:10.0 --bind 0000:00:12.0 --bind 0000:00:08.0",
            edus.len()
        );
    }
    let pick = |want: Option<PciAddress>, default: &Arc<Device>| match want {
        None => Ok(default.clone()),
        Some(a) => edus.iter().find(|d| d.pci_address() == Some(a)).cloned().context(format!("no edu device at {a}")),
    };
    let engine = pick(args.engine, &edus[0])?;
    let remote_dev = pick(args.remote, edus.last().expect("two or more"))?;
    if Arc::ptr_eq(&engine, &remote_dev) {
        bail!("the engine and the remote device must be two different edu functions");
    }
    let ivshmem = match args.ivshmem {
        Some(a) => a,
        None => PciFunction::with_id(IVSHMEM_ID)
            .into_iter()
            .find(|f| f.is_vfio_bound())
            .map(|f| f.address)
            .context("no ivshmem function bound to vfio-pci")?,
    };
    let remote = RemoteDma::open(remote_dev.pci_address().expect("edu devices are PCI functions"))?;
    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(&[cpu.clone(), engine.clone()])?;
    let cpu_q = Queue::new(&ctx, &cpu, QueueProps::default())?;
    let edu_q = Queue::new(&ctx, &engine, QueueProps::default())?;

    let (w, h) = (args.width, args.height);
    let (yuyv_len, rgba_len) = ((w * h * 2) as usize, (w * h * 4) as usize);
    let stride = rgba_len.next_multiple_of(4096);
    let slots = stride * args.frames as usize;
    // SAFETY: no host pointer.
    let input = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, yuyv_len, std::ptr::null_mut()) }?;
    // SAFETY: no host pointer.
    let rgba = unsafe { Buffer::create(&ctx, mem_flags::READ_WRITE, rgba_len, std::ptr::null_mut()) }?;
    let bar = bar2_of(ivshmem)?;
    let surface = bar + args.bar_offset;
    let at = BusAddress { surface_bus_address: BusAddr(surface), marker_bus_address: BusAddr(surface + slots as u64) };
    let mut at_c = at;
    // SAFETY: a whole BusAddress.
    let output = unsafe {
        amd_bus::create_buffer(&ctx, amd_bus::EXTERNAL_PHYSICAL, slots, &mut at_c as *mut BusAddress as *mut u8)
    }
    .context("the external physical buffer on the ivshmem BAR")?;
    let (bus, _) = amd_bus::make_buffers_resident(&cpu_q, std::slice::from_ref(&input), true, &[])?;
    let bus = bus[0];
    let convert = Kernel::builtin(&ctx, &cpu, "yuyv_to_rgba")?;
    convert.set_arg_buffer(0, &input)?;
    convert.set_arg_buffer(1, &rgba)?;
    convert.set_arg_scalar(2, &w.to_ne_bytes())?;
    convert.set_arg_scalar(3, &h.to_ne_bytes())?;
    println!(
        "remote {} DMAs {w}x{h} YUYV frames to bus address {:#x} (signal {:#x}); engine {} copies RGBA into {} BAR 2",
        remote.address(),
        bus.surface_bus_address,
        bus.marker_bus_address,
        engine.name,
        ivshmem
    );
    println!(
        "layout: frame k at BAR offset {:#x} + (k-1)*{stride:#x}, {rgba_len} bytes; marker (u32) at BAR offset {:#x}",
        args.bar_offset,
        args.bar_offset + slots as u64
    );
    for k in 1..=args.frames {
        let wait = amd_bus::enqueue_wait_signal(&cpu_q, &input, k, &[])?;
        // SAFETY: the kernel's arguments are the two buffers, held by the launch.
        let conv = unsafe { kernel::enqueue_task(&cpu_q, &convert, &[]) }?;
        let slot = (k as usize - 1) * stride;
        let copy =
            commands::enqueue_copy_buffer(&edu_q, &rgba, &output, 0, slot, rgba_len, std::slice::from_ref(&conv))?;
        let signal = amd_bus::enqueue_write_signal(&edu_q, &output, k, 0, &[copy])?;
        // The capture card: the frame, then its marker, then its interrupt.
        let t0 = Instant::now();
        let frame = yuyv_frame(k, w, h);
        // SAFETY: the input buffer's surface and signal page, resident and
        // reached by dmabridge only through raw pointers.
        unsafe {
            remote.write(bus.surface_bus_address, &frame)?;
            remote.write_u32(bus.marker_bus_address, k)?;
        }
        remote.raise_irq()?;
        Event::wait(&[wait, signal])?;
        // What the host should find in slot k.
        let mut out = vec![0u8; rgba_len];
        // SAFETY: `out` holds rgba_len bytes; blocking.
        unsafe { commands::enqueue_read_buffer(&cpu_q, &rgba, true, 0, rgba_len, out.as_mut_ptr(), &[]) }?;
        println!(
            "frame {k}: adler32 {:#010x} in slot at BAR offset {:#x}, marker {k} written ({:.1} ms after the remote \
             started)",
            adler32(&out),
            args.bar_offset + slot as u64,
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
    println!("{} frames delivered", args.frames);
    Ok(ExitCode::SUCCESS)
}
