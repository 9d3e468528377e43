//! The memory layer against the guest kernel: a pooled heap allocation is
//! exported as a dma-buf and DMAed into by edu through the IOMMU; the bytes
//! are the same through the allocation's pointer and the dma-buf.

use std::time::Duration;

use dmabridge::memory::heap::{AllocMeta, ExportError, Heap};
use dmabridge::memory::iova::IovaAllocator;
use dmabridge::runtime::backend::edu::{Direction, Edu};
use dmabridge::sys::access::Access;
use dmabridge::sys::addr::HostAddr;
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge::sys::vfio::Container;
use dmabridge_tests::{addr, require_guest, Resources, EDU0};

const PAGE: usize = 4096;

#[test]
fn a_heap_allocation_is_a_dma_buf_and_a_dma_target() {
    require_guest();
    let before = Resources::now();
    {
        let heap = Heap::with_granules(64).unwrap();
        let udmabuf = Udmabuf::open().unwrap();
        let neighbour = heap.alloc(PAGE, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        let p = heap.alloc(PAGE, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert_eq!(p % PAGE, 0, "4 KiB allocations are page aligned");

        let buf = heap.export_dmabuf(&udmabuf, HostAddr(p + 100)).unwrap();
        assert_eq!(buf.size().unwrap(), PAGE as u64, "the export spans the allocation's page");
        let view = buf.map(Access::ReadWrite).unwrap();
        // SAFETY: p..p+PAGE is a live allocation of this test.
        unsafe { std::ptr::copy_nonoverlapping(b"via pointer".as_ptr(), p as *mut u8, 11) };
        let mut out = [0u8; 11];
        {
            let _cpu = buf.cpu_access(Access::Read).unwrap();
            view.read_bytes(0, &mut out);
        }
        assert_eq!(&out, b"via pointer");

        // edu writes into the allocation through the IOMMU.
        let c = Container::open().unwrap();
        let e = Edu::open(&c, addr(EDU0)).unwrap();
        let iova = IovaAllocator::new(e.dma_mask(), PAGE as u64).unwrap().alloc(PAGE as u64, PAGE as u64).unwrap();
        // SAFETY: the page is a live heap allocation that no Rust reference
        // points into while the device may write it.
        unsafe { c.map_dma_raw(iova, PAGE as u64, HostAddr(p), Access::ReadWrite) }.unwrap();
        e.dma(Direction::ToDevice, iova, 0, 11, Duration::from_secs(10)).unwrap();
        e.dma(Direction::FromDevice, iova + 2000, 0, 11, Duration::from_secs(10)).unwrap();
        {
            let _cpu = buf.cpu_access(Access::Read).unwrap();
            view.read_bytes(2000, &mut out);
        }
        assert_eq!(&out, b"via pointer", "edu's write is seen through the dma-buf");
        // SAFETY: as above; the DMA has completed.
        let direct = unsafe { std::slice::from_raw_parts((p + 2000) as *const u8, 11) };
        assert_eq!(direct, b"via pointer", "and through the allocation's pointer");
        c.unmap_dma(iova, PAGE as u64).unwrap();

        // Unknown pointers are refused; the neighbour was not disturbed.
        assert_eq!(heap.export_dmabuf(&udmabuf, HostAddr(8)).unwrap_err(), ExportError::Unknown(HostAddr(8)));
        // SAFETY: a live allocation.
        assert_eq!(unsafe { *(neighbour as *const u8) }, 0);
        drop((view, buf));
        heap.free(HostAddr(p)).unwrap();
        assert!(matches!(heap.export_dmabuf(&udmabuf, HostAddr(p)), Err(ExportError::Unknown(_))));
        heap.free(HostAddr(neighbour)).unwrap();
    }
    before.assert_unchanged();
}

#[test]
fn large_allocations_export_up_to_the_udmabuf_limit() {
    require_guest();
    let heap = Heap::with_granules(128).unwrap();
    let udmabuf = Udmabuf::open().unwrap();
    let limit = udmabuf.limits().size_limit as usize;
    let ok = heap.alloc(limit, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert_eq!(heap.export_dmabuf(&udmabuf, HostAddr(ok)).unwrap().size().unwrap(), limit as u64);
    let too_big = heap.alloc(limit + PAGE, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert!(matches!(
        heap.export_dmabuf(&udmabuf, HostAddr(too_big)),
        Err(ExportError::Udmabuf(dmabridge::sys::udmabuf::UdmabufError::OverSizeLimit { .. }))
    ));
}

/// A freed allocation's exported pages never go to a later allocation while
/// the dma-buf may still map them. A sub-page allocation shares its page with
/// neighbours: once exported, that page takes no new allocation until every
/// allocation in it is freed (then its pages are handed back, which detaches
/// them from the dma-buf); a whole-page or large allocation gets fresh pages
/// when it is freed.
#[test]
fn freed_exported_pages_never_go_to_a_later_allocation() {
    require_guest();
    let heap = Heap::with_granules(16).unwrap();
    let udmabuf = Udmabuf::open().unwrap();
    let page_of = |p: usize| p & !(PAGE - 1);
    // SAFETY (every call): `p` is a live allocation of at least `n` bytes, or
    // a live dma-buf mapping of `n` or more bytes, and this test is its only user.
    let fill = |p: usize, byte: u8, n: usize| unsafe { (p as *mut u8).write_bytes(byte, n) };
    // SAFETY (every call): as for `fill`, for reads.
    let bytes = |p: usize, n: usize| unsafe { std::slice::from_raw_parts(p as *const u8, n) }.to_vec();

    // Sub-page: 100-byte allocations share pages (the 128-byte class).
    let a = heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    let neighbour = heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert_eq!(page_of(a), page_of(neighbour), "two slots of one page");
    fill(a, 0xa1, 100);
    fill(neighbour, 0xb2, 100);
    let dmabuf = heap.export_dmabuf(&udmabuf, HostAddr(a)).unwrap();
    assert_eq!(dmabuf.size().unwrap(), PAGE as u64);
    let m = dmabuf.map(Access::ReadWrite).unwrap();
    let view = m.as_ptr() as usize;
    let at = a - page_of(a);
    heap.free(HostAddr(a)).unwrap();
    let later: Vec<usize> = (0..200).map(|_| heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
    for (k, &p) in later.iter().enumerate() {
        assert_ne!(page_of(p), page_of(a), "allocation {k} went into the page of a freed, exported allocation");
        fill(p, 0xc3, 100);
    }
    assert_eq!(bytes(view + at, 100), [0xa1; 100], "the dma-buf still shows the freed allocation's bytes");
    assert_eq!(heap.lookup(HostAddr(neighbour)).unwrap().size, 100, "the neighbour lives on");
    assert_eq!(bytes(neighbour, 100), [0xb2; 100]);
    // The page's last allocation goes: its pages are handed back, and the
    // address may be used again — with other pages than the dma-buf's.
    heap.free(HostAddr(neighbour)).unwrap();
    let again: Vec<usize> = (0..64).map(|_| heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
    for &p in &again {
        fill(p, 0xd4, 100);
    }
    assert!(again.iter().any(|&p| page_of(p) == page_of(a)), "the emptied page is used again");
    assert_eq!(bytes(view + at, 100), [0xa1; 100], "…but not the dma-buf's pages");
    fill(view, 0xee, PAGE);
    assert!(
        again.iter().all(|&p| bytes(p, 100) == [0xd4; 100]),
        "a write through the dma-buf reached a new allocation"
    );
    drop((m, dmabuf));

    // Whole pages (4 KiB) and a large allocation (3 MiB): freed, the same
    // address comes back at once, with fresh pages.
    for size in [PAGE, 3 << 20] {
        let p = heap.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        fill(p, 0x11, size);
        let dmabuf = heap.export_dmabuf(&udmabuf, HostAddr(p)).unwrap();
        let m = dmabuf.map(Access::ReadWrite).unwrap();
        let view = m.as_ptr() as usize;
        heap.free(HostAddr(p)).unwrap();
        let q = heap.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert_eq!(bytes(q, size), vec![0; size], "{size} bytes: a fresh allocation over fresh pages");
        fill(q, 0x22, size);
        assert_eq!(bytes(view, size), vec![0x11; size], "{size} bytes: the dma-buf keeps the freed allocation's bytes");
        fill(view, 0x33, size);
        assert_eq!(bytes(q, size), vec![0x22; size], "{size} bytes: the dma-buf's pages are not the new allocation's");
        heap.free(HostAddr(q)).unwrap();
        drop((m, dmabuf));
    }
    for p in later.into_iter().chain(again) {
        heap.free(HostAddr(p)).unwrap();
    }
    assert_eq!(heap.stats().live, 0);
}
