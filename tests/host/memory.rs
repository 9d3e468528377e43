//! The memory layer with hostile sizes: granule counts, sizes, alignments,
//! offsets and IOVA ranges near the ends of their types are refused with a
//! typed error — never a panic, an abort or a huge allocation — and what
//! exists stays as it was.

use dmabridge::memory::heap::{AllocError, AllocMeta, FreeError, Heap};
use dmabridge::memory::iova::{IovaAllocator, IovaError};
use dmabridge::memory::local::{LocalAllocator, LocalError, GRANULE};
use dmabridge::memory::vaspace::{ReserveError, VaSpace, MAX_GRANULES};
use dmabridge::sys::addr::HostAddr;
use dmabridge::sys::addr::Iova;

const PAGE: u64 = 4096;

#[test]
fn absurd_granule_counts_are_refused_before_anything_is_reserved() {
    for granules in [0, MAX_GRANULES + 1, 1 << 40, 1 << 43, (1 << 43) + 1, usize::MAX / 2, usize::MAX] {
        let want = ReserveError::Granules { granules, max: MAX_GRANULES };
        assert_eq!(Heap::with_granules(granules).unwrap_err(), want);
        assert_eq!(VaSpace::reserve(granules).unwrap_err(), want);
    }
    // The largest count reserves address space only (and a table of 12
    // bytes per granule): it works, or the kernel's refusal is an error.
    match Heap::with_granules(MAX_GRANULES) {
        Ok(heap) => {
            let p = heap.alloc(5 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
            assert_eq!(heap.lookup(HostAddr(p + (5 << 20) - 1)).unwrap().base, HostAddr(p));
            heap.free(HostAddr(p)).unwrap();
        }
        Err(e) => assert!(matches!(e, ReserveError::Os(_)), "{e}"),
    }
}

#[test]
fn hostile_heap_sizes_alignments_and_pointers_change_nothing() {
    let heap = Heap::with_granules(8).unwrap();
    let keep = heap.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr();
    // SAFETY: a live 100-byte allocation that only this test uses.
    unsafe { keep.write_bytes(0x5a, 100) };
    let reserved = 8 << 21;
    let half = 1usize << (usize::BITS - 1);
    for (size, align) in [
        (usize::MAX, 0),
        (usize::MAX, half),
        (usize::MAX - 4095, 4096),
        (half, 0),
        (half + 1, 1 << 21),
        (1, half),
        (reserved + 1, 0),
        (reserved, 1 << 22),
        (1 << 20, half),
    ] {
        assert_eq!(
            heap.alloc(size, align, AllocMeta::HOST),
            Err(AllocError::OutOfAddressSpace { size, reserved }),
            "size {size} align {align}"
        );
    }
    for align in [3, usize::MAX, half + 1, half - 1] {
        assert_eq!(heap.alloc(8, align, AllocMeta::HOST), Err(AllocError::BadAlignment(align)));
    }
    for p in [0, 1, usize::MAX, usize::MAX - 63, half] {
        assert_eq!(heap.free(HostAddr(p)), Err(FreeError::Unknown(HostAddr(p))));
        assert_eq!(heap.lookup(HostAddr(p)), None);
        assert!(!heap.owns_range(HostAddr(p)));
    }
    let s = heap.stats();
    assert_eq!((s.live, s.large), (1, 0));
    // SAFETY: as above.
    assert!(unsafe { std::slice::from_raw_parts(keep, 100) }.iter().all(|&b| b == 0x5a));
    // The whole reservation is still there to be had.
    let all = heap.alloc(reserved - (2 << 20), 0, AllocMeta::HOST).unwrap();
    heap.free(HostAddr::of(all.as_ptr())).unwrap();
}

#[test]
fn hostile_local_memory_requests_change_nothing() {
    let mut a = LocalAllocator::new(usize::MAX);
    assert_eq!(a.size(), usize::MAX / GRANULE * GRANULE);
    let half = 1usize << (usize::BITS - 1);
    let x = a.alloc(half + 1, 0).unwrap();
    assert_eq!(x, 0);
    let used = (a.allocated(), a.count());
    // Rounding the end of `x` up to a 2^63 alignment passes usize::MAX.
    assert!(matches!(a.alloc(1, half), Err(LocalError::Full { .. })));
    assert!(matches!(a.alloc(half, GRANULE), Err(LocalError::Full { .. })));
    assert!(matches!(a.alloc(usize::MAX, 0), Err(LocalError::BadSize { .. })));
    assert_eq!(a.alloc(1, usize::MAX), Err(LocalError::BadAlignment(usize::MAX)));
    assert_eq!(a.free(usize::MAX), Err(LocalError::NotAllocated(usize::MAX)));
    assert_eq!(a.free(half), Err(LocalError::Interior { offset: half, start: 0 }));
    assert_eq!(a.lookup(usize::MAX), None);
    assert_eq!((a.allocated(), a.count()), used);
    // Below the top, the allocator still works.
    let y = a.alloc(100, 4096).unwrap();
    assert_eq!(y % 4096, 0);
    assert!(y > half);
    assert_eq!(a.free(x), Ok(half + 1));
    assert_eq!(a.alloc(1, half), Ok(0));
}

#[test]
fn hostile_iova_requests_are_errors() {
    for page in [0, 3, 4097, u64::MAX] {
        assert_eq!(IovaAllocator::new(u64::MAX, page).unwrap_err(), IovaError::BadPageSize(page));
    }
    // A device that drives all 64 address bits: ranges may end at 2^64 - 1.
    let mut a = IovaAllocator::new(u64::MAX, PAGE).unwrap();
    let top = Iova(u64::MAX - (PAGE - 1));
    a.reserve(top, PAGE).unwrap();
    assert_eq!(a.reserve(top, PAGE), Err(IovaError::Overlap { iova: top, size: PAGE }));
    assert!(matches!(a.reserve(top, 2 * PAGE), Err(IovaError::BeyondMask { .. })));
    let half = Iova(1u64 << 63);
    assert_eq!(a.alloc(PAGE, half.0), Ok(half));
    // Everything above what is in use would end past 2^64.
    let big = !(PAGE - 1);
    assert_eq!(a.alloc(big, 0), Err(IovaError::Exhausted { size: big, mask: u64::MAX }));
    assert_eq!(a.alloc(PAGE, half.0), Err(IovaError::Exhausted { size: PAGE, mask: u64::MAX }));
    assert_eq!(a.allocated_bytes(), 2 * PAGE);
    assert_eq!(a.free(top), Ok(PAGE));
    assert_eq!(a.free(half), Ok(PAGE));
    assert_eq!(a.allocated_bytes(), 0);
    assert_eq!(a.alloc(big - PAGE, 0), Ok(Iova(PAGE)), "all but page 0 and the top page");
    assert_eq!(a.allocated_bytes(), big - PAGE);

    // Usable ranges that leave almost nothing: holes up to 2^64 - 1.
    let mut b = IovaAllocator::new(u64::MAX, PAGE).unwrap();
    b.restrict_to(&[Iova(0x1000)..=Iova(0x1fff)]);
    assert_eq!(b.alloc(PAGE, 0), Ok(Iova(0x1000)));
    assert!(matches!(b.alloc(PAGE, 0), Err(IovaError::Exhausted { .. })));
    assert!(matches!(b.reserve(top, PAGE), Err(IovaError::Overlap { .. })));
    assert_eq!(b.allocated_bytes(), PAGE);
    let mut c = IovaAllocator::new(u64::MAX, PAGE).unwrap();
    c.restrict_to(&[Iova(0)..=Iova(0)]);
    assert!(matches!(c.alloc(PAGE, 0), Err(IovaError::Exhausted { .. })), "no usable page at all");
    assert_eq!(c.allocated_bytes(), 0);
    let mut d = IovaAllocator::new(u64::MAX, PAGE).unwrap();
    d.restrict_to(&[Iova(0)..=Iova(u64::MAX)]);
    assert_eq!(d.alloc(PAGE, half.0), Ok(half), "the whole space is usable");
}

/// Poisons a lock of `ctx`'s heap: a thread walks the live allocations
/// (`for_each_allocation` runs its callback under the pool and large
/// allocation locks) and panics in the callback at the first allocation
/// `at` picks.
fn poison_heap_lock(ctx: &std::sync::Arc<dmabridge::runtime::context::Context>, at: fn(usize) -> bool) {
    let ctx = ctx.clone();
    let walk = std::thread::spawn(move || {
        ctx.heap().for_each_allocation(|a| {
            if at(a.size) {
                panic!("a callback that panics under the heap's lock (poisons it on purpose)");
            }
        })
    });
    assert!(walk.join().is_err(), "the callback panicked");
}

#[test]
fn allocations_work_after_a_panic_under_a_heap_lock() {
    use dmabridge::ext::usm;
    use dmabridge::runtime::{context::Context, platform::Platform};
    let ctx = Context::new(std::slice::from_ref(Platform::get().cpu())).unwrap();
    // Made by this thread, so in this thread's pool of the 4 KiB class; and
    // one large allocation (above the 2 MiB granule).
    let small = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap();
    let large = usm::host_mem_alloc(&ctx, &[], 3 << 20, 0).unwrap();
    // The C boundary catches such panics and the process goes on: its
    // later calls must not fail because of the poisoned lock.
    poison_heap_lock(&ctx, |size| size == 4096);
    poison_heap_lock(&ctx, |size| size == 3 << 20);
    for size in [4096, 3 << 20] {
        let p = usm::host_mem_alloc(&ctx, &[], size, 0).expect("an allocation after the panic");
        // SAFETY: `p` is a fresh allocation of `size` bytes.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0x5a, size) };
        usm::mem_free(&ctx, p.as_ptr()).expect("a free after the panic");
    }
    let mut live = Vec::new();
    ctx.heap().for_each_allocation(|a| live.push(a.base));
    live.sort_unstable();
    let mut want = vec![HostAddr::of(small.as_ptr()), HostAddr::of(large.as_ptr())];
    want.sort_unstable();
    assert_eq!(live, want, "the walk sees the live allocations, no more");
    usm::mem_free(&ctx, small.as_ptr()).unwrap();
    usm::mem_free(&ctx, large.as_ptr()).unwrap();
}
