//! The first vertical proof: memory a process owns moves through the kernel's
//! zero-copy objects and a real DMA master, with nothing copied by the CPU.
//!
//! memfd → udmabuf → VFIO map (IOVA under edu's 28-bit mask) → edu DMA
//! RAM→device→RAM, completion by MSI through io_uring → the bytes are seen
//! through the dma-buf's own mapping inside a SYNC guard; and edu DMA
//! peer-to-peer into the ivshmem BAR mapped through VFIO.

use std::os::fd::AsFd;
use std::time::Duration;

use dmabridge::memory::iova::IovaAllocator;
use dmabridge::runtime::backend::edu::{self, Direction, Edu};
use dmabridge::sys::access::Access;
use dmabridge::sys::addr::HostAddr;
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge::sys::vfio::{Container, VfioError};
use dmabridge_tests::{addr, require_guest, Resources, EDU0, IVSHMEM};

const PAGE: u64 = 4096;
const T: Duration = Duration::from_secs(10);

fn pattern(seed: u8) -> Vec<u8> {
    (0..edu::BUFFER_SIZE).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn udmabuf_pages_round_trip_through_edu_dma() {
    require_guest();
    let before = Resources::now();
    {
        let c = Container::open().unwrap();
        let e = Edu::open(&c, addr(EDU0)).unwrap();
        let m = Memfd::create(c"proof", 2 * PAGE).unwrap();
        m.add_seals(Seals::SHRINK).unwrap();
        let buf = Udmabuf::open().unwrap().create(m.as_fd(), 0, 2 * PAGE).unwrap();
        let view = buf.map(Access::ReadWrite).unwrap();
        let host = m.map(0, 2 * PAGE as usize, Access::ReadWrite).unwrap();

        // The device sees the dma-buf's pages at an IOVA it can drive. VFIO
        // pins through the memfd's mapping: the dma-buf's own mmap is
        // PFN-mapped RAM, which VFIO refuses.
        let mut iovas = IovaAllocator::new(e.dma_mask(), PAGE).unwrap();
        iovas.restrict_to(&c.iommu_info().unwrap().iova_ranges);
        let iova = iovas.alloc(2 * PAGE, PAGE).unwrap();
        assert_eq!(
            c.map_dma(&view, 0, 2 * PAGE, iova, Access::ReadWrite).unwrap_err(),
            VfioError::NotPinnable { vaddr: HostAddr::of(view.as_ptr()) }
        );
        assert!(c.mappings().is_empty());
        c.map_dma(&host, 0, 2 * PAGE, iova, Access::ReadWrite).unwrap();

        let data = pattern(7);
        let cpu = buf.cpu_access(Access::Write).unwrap();
        view.write_bytes(0, &data);
        view.write_bytes(PAGE as usize, &[0u8; PAGE as usize]);
        cpu.end().unwrap();

        e.dma(Direction::ToDevice, iova, 0, edu::BUFFER_SIZE, T).unwrap();
        e.dma(Direction::FromDevice, iova + PAGE, 0, edu::BUFFER_SIZE, T).unwrap();

        let mut out = vec![0u8; PAGE as usize];
        let cpu = buf.cpu_access(Access::Read).unwrap();
        view.read_bytes(PAGE as usize, &mut out);
        cpu.end().unwrap();
        assert!(out == data, "page 1 after DMA differs from page 0");
        // The memfd, the allocation's owner, sees the same bytes.
        let mut via_memfd = vec![0u8; PAGE as usize];
        host.read_bytes(PAGE as usize, &mut via_memfd);
        assert!(via_memfd == data);

        // A partial transfer lands exactly where asked and nowhere else.
        host.write_bytes(PAGE as usize, &[0u8; PAGE as usize]);
        e.dma(Direction::FromDevice, iova + PAGE + 100, 200, 50, T).unwrap();
        let cpu = buf.cpu_access(Access::Read).unwrap();
        view.read_bytes(PAGE as usize, &mut out);
        cpu.end().unwrap();
        assert!(out[..100].iter().chain(&out[150..]).all(|&b| b == 0), "bytes outside the transfer changed");
        assert_eq!(&out[100..150], &data[200..250]);
        c.unmap_dma(iova, 2 * PAGE).unwrap();
        iovas.free(iova).unwrap();
    }
    before.assert_unchanged();
}

#[test]
fn edu_dma_reaches_the_ivshmem_bar_peer_to_peer() {
    require_guest();
    let before = Resources::now();
    {
        let c = Container::open().unwrap();
        let e = Edu::open(&c, addr(EDU0)).unwrap();
        let ivshmem = c.device(addr(IVSHMEM)).unwrap();
        let bar2 = ivshmem.map_region(2).unwrap();
        let ram = Memfd::create(c"p2p-src", PAGE).unwrap();
        ram.add_seals(Seals::SHRINK).unwrap();
        let ram_map = ram.map(0, PAGE as usize, Access::ReadWrite).unwrap();

        let mut iovas = IovaAllocator::new(e.dma_mask(), PAGE).unwrap();
        iovas.restrict_to(&c.iommu_info().unwrap().iova_ranges);
        let src = iovas.alloc(PAGE, PAGE).unwrap();
        let bar_iova = iovas.alloc(bar2.len() as u64, 1 << 21).unwrap();
        c.map_dma(&ram_map, 0, PAGE, src, Access::Read).unwrap();
        c.map_dma(&bar2, 0, bar2.len() as u64, bar_iova, Access::ReadWrite).unwrap();

        let data = pattern(42);
        ram_map.write_bytes(0, &data);
        bar2.write_bytes(PAGE as usize, &[0u8; PAGE as usize]);
        e.dma(Direction::ToDevice, src, 0, edu::BUFFER_SIZE, T).unwrap();
        e.dma(Direction::FromDevice, bar_iova + PAGE, 0, edu::BUFFER_SIZE, T).unwrap();
        let mut out = vec![0u8; PAGE as usize];
        bar2.read_bytes(PAGE as usize, &mut out);
        assert!(out == data, "the ivshmem BAR does not hold what edu wrote");

        // And back: edu reads the BAR peer-to-peer.
        bar2.write_bytes(2 * PAGE as usize, &pattern(99));
        e.dma(Direction::ToDevice, bar_iova + 2 * PAGE, 0, edu::BUFFER_SIZE, T).unwrap();
        let dst = iovas.alloc(PAGE, PAGE).unwrap();
        c.map_dma(&ram_map, 0, PAGE, dst, Access::ReadWrite).unwrap();
        e.dma(Direction::FromDevice, dst, 0, edu::BUFFER_SIZE, T).unwrap();
        let mut back = vec![0u8; PAGE as usize];
        ram_map.read_bytes(0, &mut back);
        assert!(back == pattern(99), "edu did not read the ivshmem BAR");
    }
    before.assert_unchanged();
}
