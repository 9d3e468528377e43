//! `dmabridge proof`: the vertical proof, step by step, saying what moved where.
//!
//! memfd pages → udmabuf dma-buf → VFIO IOMMU mapping → edu DMA RAM→device→RAM
//! (completion by interrupt through io_uring) → the bytes checked through the
//! dma-buf's own mapping inside a DMA_BUF_IOCTL_SYNC guard; then, if an
//! ivshmem function is bound to vfio-pci, edu DMA peer-to-peer into its BAR2.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};

use dmabridge::memory::iova::IovaAllocator;
use dmabridge::runtime::backend::edu::{self, Direction, Edu};
use dmabridge::sys::access::Access;
use dmabridge::sys::hints;
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::pci::{PciAddress, PciFunction, EDU_ID, IVSHMEM_ID};
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge::sys::vfio::Container;

/// The long help of `dmabridge proof` (what it needs names the source tree's
/// guest only in a checkout: [`hints`]).
pub fn long_about() -> String {
    format!(
        "Prove the zero-copy path end to end on an edu DMA device.

Moves bytes memfd -> udmabuf -> VFIO -> edu DMA -> dma-buf view, then
edu -> ivshmem BAR peer-to-peer, saying what moved where. Needs an edu
bound to vfio-pci ({} bind 1234:11e8){}.",
        hints::kmod(),
        hints::checkout_only(":\nrun it in the QEMU guest, as `make demo` does")
    )
}

const TIMEOUT: Duration = Duration::from_secs(10);

/// Options of `dmabridge proof`.
#[derive(Debug, clap::Args)]
pub struct ProofArgs {
    /// The edu function to use (default: the first one bound to vfio-pci).
    #[arg(long)]
    edu: Option<PciAddress>,
    /// The ivshmem function for the peer-to-peer step (default: the first one
    /// bound to vfio-pci; the step is skipped if there is none).
    #[arg(long)]
    ivshmem: Option<PciAddress>,
    /// Text written at the start of the peer-to-peer transfer, so that the
    /// host side can find it in the ivshmem backing file.
    #[arg(long, default_value = "dmabridge proof")]
    marker: String,
    /// Offset in the ivshmem BAR at which the transfer lands (page aligned;
    /// decimal or 0x-prefixed hex).
    #[arg(long, default_value = "0", value_parser = parse_u64)]
    bar_offset: u64,
}

/// A decimal or 0x-prefixed hex number (also `dmabridge remote-dma`'s).
pub(crate) fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a number (write 4096 or 0x1000)"))
}

fn first_bound(id: (u16, u16)) -> Option<PciAddress> {
    PciFunction::with_id(id).into_iter().find(|f| f.is_vfio_bound()).map(|f| f.address)
}

fn pattern(marker: &[u8], seed: u8) -> Vec<u8> {
    let mut p: Vec<u8> = (0..edu::BUFFER_SIZE).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
    let n = marker.len().min(p.len());
    p[..n].copy_from_slice(&marker[..n]);
    p
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Runs the proof. An error names the step that failed, then its cause.
pub fn run(args: &ProofArgs) -> anyhow::Result<()> {
    const PAGE: u64 = 4096;
    let edu_addr = match args.edu.or_else(|| first_bound(EDU_ID)) {
        Some(a) => a,
        None => bail!(
            "no edu function bound to vfio-pci: bind one with {} bind 1234:11e8{}",
            hints::kmod(),
            hints::checkout_only(", or run `make demo`, which boots the QEMU guest")
        ),
    };
    let container = Container::open().context("opening the VFIO container")?;
    let e = Edu::open(&container, edu_addr).with_context(|| format!("opening edu {edu_addr}"))?;
    println!(
        "[1/5] edu {edu_addr}: VFIO group {}, bus mastering on, completion interrupt {} -> eventfd -> io_uring",
        e.device().group().number(),
        e.irq_kind()
    );

    let memfd = Memfd::create(c"dmabridge-proof", 2 * PAGE).context("creating the 8 KiB memfd")?;
    memfd.add_seals(Seals::SHRINK).context("sealing the memfd against shrinking")?;
    let buf = Udmabuf::open()
        .context("opening /dev/udmabuf")?
        .create(memfd.as_fd(), 0, 2 * PAGE)
        .context("exporting the memfd as a udmabuf dma-buf")?;
    let view = buf.map(Access::ReadWrite).context("mapping the dma-buf")?;
    let host = memfd.map(0, 2 * PAGE as usize, Access::ReadWrite).context("mapping the memfd")?;
    println!(
        "[2/5] memfd 'dmabridge-proof' (8 KiB, F_SEAL_SHRINK) -> udmabuf dma-buf inode {} ({} bytes)",
        buf.inode().context("reading the dma-buf's inode")?,
        buf.size().context("reading the dma-buf's size")?
    );

    let mut iovas = IovaAllocator::new(e.dma_mask(), PAGE).context("setting up the IOVA allocator")?;
    iovas.restrict_to(&container.iommu_info().context("reading the IOMMU's usable IOVA ranges")?.iova_ranges);
    let iova = iovas.alloc(2 * PAGE, PAGE).context("choosing an IOVA for the memfd pages")?;
    container
        .map_dma(&host, 0, 2 * PAGE, iova, Access::ReadWrite)
        .with_context(|| format!("mapping the memfd pages into the IOMMU domain at IOVA {iova:#x}"))?;
    println!("[3/5] the memfd pages mapped into the IOMMU domain at IOVA {iova:#x} (edu DMA mask {:#x})", e.dma_mask());

    let data = pattern(b"dmabridge round trip", 7);
    {
        let cpu = buf.cpu_access(Access::Write).context("starting CPU write access to the dma-buf")?;
        view.write_bytes(0, &data);
        view.write_bytes(PAGE as usize, &[0u8; PAGE as usize]);
        cpu.end().context("ending CPU write access to the dma-buf")?;
    }
    let t = Instant::now();
    e.dma(Direction::ToDevice, iova, 0, edu::BUFFER_SIZE, TIMEOUT)
        .with_context(|| format!("edu DMA from IOVA {iova:#x} into its buffer"))?;
    let to_dev = t.elapsed();
    let t = Instant::now();
    e.dma(Direction::FromDevice, iova + PAGE, 0, edu::BUFFER_SIZE, TIMEOUT)
        .with_context(|| format!("edu DMA from its buffer to IOVA {:#x}", iova + PAGE))?;
    let from_dev = t.elapsed();
    let mut out = vec![0u8; PAGE as usize];
    {
        let cpu = buf.cpu_access(Access::Read).context("starting CPU read access to the dma-buf")?;
        view.read_bytes(PAGE as usize, &mut out);
        cpu.end().context("ending CPU read access to the dma-buf")?;
    }
    ensure!(out == data, "round trip: the bytes read through the dma-buf differ from those written");
    println!(
        "[4/5] edu DMA: IOVA {iova:#x} -> edu buffer 0x{:x} ({} B, {}), edu buffer -> IOVA {:#x} ({} B, {}); \
         the dma-buf view (inside DMA_BUF_IOCTL_SYNC) shows page 1 == page 0: {} bytes match",
        edu::BUFFER_ADDR,
        edu::BUFFER_SIZE,
        ms(to_dev),
        iova + PAGE,
        edu::BUFFER_SIZE,
        ms(from_dev),
        out.len()
    );
    container.unmap_dma(iova, 2 * PAGE).with_context(|| format!("unmapping IOVA {iova:#x}"))?;

    match args.ivshmem.or_else(|| first_bound(IVSHMEM_ID)) {
        None => println!("[5/5] skipped: no ivshmem function bound to vfio-pci (peer-to-peer step)"),
        Some(addr) => {
            p2p(&container, &e, &mut iovas, addr, args).with_context(|| format!("peer-to-peer into {addr}"))?
        }
    }
    println!("proof: ok");
    Ok(())
}

fn p2p(
    container: &Arc<Container>,
    e: &Edu,
    iovas: &mut IovaAllocator,
    addr: PciAddress,
    args: &ProofArgs,
) -> anyhow::Result<()> {
    const PAGE: u64 = 4096;
    let dev = container.device(addr).with_context(|| format!("opening ivshmem {addr}"))?;
    let bar2 = dev.map_region(2).with_context(|| format!("mapping BAR2 of {addr}"))?;
    let size = bar2.len() as u64;
    ensure!(
        args.bar_offset % PAGE == 0 && args.bar_offset.checked_add(PAGE).is_some_and(|end| end <= size),
        "--bar-offset {:#x} must be page aligned and inside BAR2 ({size} bytes)",
        args.bar_offset
    );
    let src_mem = Memfd::create(c"dmabridge-proof-p2p", PAGE).context("creating the source memfd")?;
    src_mem.add_seals(Seals::SHRINK).context("sealing the source memfd against shrinking")?;
    let src = src_mem.map(0, PAGE as usize, Access::ReadWrite).context("mapping the source memfd")?;
    let src_iova = iovas.alloc(PAGE, PAGE).context("choosing an IOVA for the source page")?;
    let bar_iova = iovas.alloc(size, size.next_power_of_two()).context("choosing an IOVA for BAR2")?;
    container.map_dma(&src, 0, PAGE, src_iova, Access::Read).context("mapping the source page for DMA")?;
    container.map_dma(&bar2, 0, size, bar_iova, Access::ReadWrite).context("mapping BAR2 for peer-to-peer DMA")?;
    let data = pattern(args.marker.as_bytes(), 42);
    src.write_bytes(0, &data);
    e.dma(Direction::ToDevice, src_iova, 0, edu::BUFFER_SIZE, TIMEOUT).context("edu DMA from the source page")?;
    e.dma(Direction::FromDevice, bar_iova + args.bar_offset, 0, edu::BUFFER_SIZE, TIMEOUT)
        .context("edu DMA into BAR2")?;
    let mut out = vec![0u8; PAGE as usize];
    bar2.read_bytes(args.bar_offset as usize, &mut out);
    ensure!(out == data, "BAR2 does not hold what edu wrote");
    println!(
        "[5/5] peer-to-peer: ivshmem {addr} BAR2 ({} KiB) at IOVA {bar_iova:#x}; edu wrote {} B with marker {:?} \
         at BAR2 offset {:#x}; read back through the BAR mapping: match (the host sees it in the ivshmem backing file)",
        size >> 10,
        edu::BUFFER_SIZE,
        args.marker,
        args.bar_offset
    );
    Ok(())
}
