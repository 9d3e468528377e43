//! DMA-BUF heaps against the guest kernel.

use dmabridge::sys::access::Access;
use dmabridge::sys::dma_heap::{self, DmaHeap, HeapError};
use dmabridge::sys::mmap::MapError;
use dmabridge_tests::{dma_heaps_or_skip, require_guest, Resources};
use rustix::fs::OFlags;

#[test]
fn system_heap_allocates_mappable_buffers() {
    require_guest();
    if !dma_heaps_or_skip("system_heap_allocates_mappable_buffers") {
        return;
    }
    assert!(dma_heap::list().iter().any(|h| h == "system"), "heaps: {:?}", dma_heap::list());
    let before = Resources::now();
    {
        let heap = DmaHeap::open("system").unwrap();
        for len in [4096u64, 1 << 20] {
            let buf = heap.alloc(len).unwrap();
            assert_eq!(buf.size().unwrap(), len);
            assert!(rustix::io::fcntl_getfd(&buf).unwrap().contains(rustix::io::FdFlags::CLOEXEC));
            let map = buf.map(Access::ReadWrite).unwrap();
            let cpu = buf.cpu_access(Access::ReadWrite).unwrap();
            map.write_bytes(len as usize - 4, b"heap");
            let mut out = [0u8; 4];
            map.read_bytes(len as usize - 4, &mut out);
            cpu.end().unwrap();
            assert_eq!(&out, b"heap");
            // The buffer's size bounds its mappings.
            let past = buf.map_range(len, 4096, Access::Read).unwrap_err();
            assert_eq!(past, MapError::OutOfBounds { offset: len, len: 4096, size: len });
        }
    }
    before.assert_unchanged();
}

#[test]
fn bad_flags_and_names_are_refused() {
    require_guest();
    if !dma_heaps_or_skip("bad_flags_and_names_are_refused") {
        return;
    }
    let heap = DmaHeap::open("system").unwrap();
    let before = Resources::now();
    let ok = (OFlags::RDWR | OFlags::CLOEXEC).bits();
    let bad_fd_flags = ok | OFlags::NONBLOCK.bits();
    assert_eq!(
        heap.alloc_with_flags(4096, bad_fd_flags, 0).map(drop),
        Err(HeapError::InvalidFlags { fd_flags: bad_fd_flags, heap_flags: 0 })
    );
    assert_eq!(
        heap.alloc_with_flags(4096, ok, 1).map(drop),
        Err(HeapError::InvalidFlags { fd_flags: ok, heap_flags: 1 })
    );
    assert_eq!(heap.alloc_with_flags(0, ok, 0).map(drop), Err(HeapError::ZeroLength));
    assert_eq!(DmaHeap::open("no-such-heap").map(drop), Err(HeapError::NoHeap("no-such-heap".into())));
    assert_eq!(DmaHeap::open("../udmabuf").map(drop), Err(HeapError::NoHeap("../udmabuf".into())));
    before.assert_unchanged();
    // The heap still works after the refusals.
    heap.alloc(4096).unwrap();
}
