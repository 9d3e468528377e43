//! The memory layer against the guest kernel: a pooled heap allocation is
//! exported as a dma-buf and DMAed into by edu through the IOMMU; the bytes
//! are the same through the allocation's pointer and the dma-buf.

use std::time::Duration;

use dmabridge::memory::heap::{AllocMeta, ExportError, Heap};
use dmabridge::memory::iova::IovaAllocator;
use dmabridge::runtime::backend::edu::{Direction, Edu};
use dmabridge::sys::dma_buf::SyncDir;
use dmabridge::sys::mmap::Access;
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

        let buf = heap.export_dmabuf(&udmabuf, p + 100).unwrap();
        assert_eq!(buf.size().unwrap(), PAGE as u64, "the export spans the allocation's page");
        let view = buf.map(Access::ReadWrite).unwrap();
        // SAFETY: p..p+PAGE is a live allocation of this test.
        unsafe { std::ptr::copy_nonoverlapping(b"via pointer".as_ptr(), p as *mut u8, 11) };
        let mut out = [0u8; 11];
        {
            let _cpu = buf.cpu_access(SyncDir::Read).unwrap();
            view.read_bytes(0, &mut out);
        }
        assert_eq!(&out, b"via pointer");

        // edu writes into the allocation through the IOMMU.
        let c = Container::open().unwrap();
        let e = Edu::open(&c, addr(EDU0)).unwrap();
        let iova = IovaAllocator::new(e.dma_mask(), PAGE as u64).alloc(PAGE as u64, PAGE as u64).unwrap();
        // SAFETY: the page is a live heap allocation that no Rust reference
        // points into while the device may write it.
        unsafe { c.map_dma_raw(p as u64, PAGE as u64, iova, true, true) }.unwrap();
        e.dma(Direction::ToDevice, iova, 0, 11, Duration::from_secs(10)).unwrap();
        e.dma(Direction::FromDevice, iova + 2000, 0, 11, Duration::from_secs(10)).unwrap();
        {
            let _cpu = buf.cpu_access(SyncDir::Read).unwrap();
            view.read_bytes(2000, &mut out);
        }
        assert_eq!(&out, b"via pointer", "edu's write is seen through the dma-buf");
        // SAFETY: as above; the DMA has completed.
        let direct = unsafe { std::slice::from_raw_parts((p + 2000) as *const u8, 11) };
        assert_eq!(direct, b"via pointer", "and through the allocation's pointer");
        c.unmap_dma(iova, PAGE as u64).unwrap();

        // Unknown pointers are refused; the neighbour was not disturbed.
        assert_eq!(heap.export_dmabuf(&udmabuf, 8).unwrap_err(), ExportError::Unknown(8));
        // SAFETY: a live allocation.
        assert_eq!(unsafe { *(neighbour as *const u8) }, 0);
        drop((view, buf));
        heap.free(p).unwrap();
        assert!(matches!(heap.export_dmabuf(&udmabuf, p), Err(ExportError::Unknown(_))));
        heap.free(neighbour).unwrap();
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
    assert_eq!(heap.export_dmabuf(&udmabuf, ok).unwrap().size().unwrap(), limit as u64);
    let too_big = heap.alloc(limit + PAGE, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert!(matches!(
        heap.export_dmabuf(&udmabuf, too_big),
        Err(ExportError::Udmabuf(dmabridge::sys::udmabuf::UdmabufError::OverSizeLimit { .. }))
    ));
}
