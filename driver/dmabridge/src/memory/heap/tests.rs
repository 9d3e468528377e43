//! The heap's unit tests (and `finishes_on_another_shard`, which the
//! context's tests share).

use super::*;
use crate::sys::addr::HostAddr;

#[test]
fn lookups_find_every_interior_pointer_and_nothing_else() {
    let h = Heap::with_granules(64).unwrap();
    let sizes = [1usize, 63, 64, 65, 1000, 4096, 5000, 1 << 20, (1 << 20) + 1, 5 << 20];
    let ptrs: Vec<usize> = sizes.iter().map(|&s| h.alloc(s, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
    for (&p, &s) in ptrs.iter().zip(&sizes) {
        assert_eq!(p % MIN_CLASS, 0);
        let want = AllocInfo { base: HostAddr(p), size: s, meta: AllocMeta::HOST };
        assert_eq!(h.lookup(HostAddr(p)), Some(want));
        assert_eq!(h.lookup(HostAddr(p + s / 2)), Some(want));
        assert_eq!(h.lookup(HostAddr(p + s - 1)), Some(want));
        assert_ne!(h.lookup(HostAddr(p + s)).map(|i| i.base), Some(HostAddr(p)), "one past the end is not inside");
        // The memory is there and private to the allocation.
        // SAFETY: p..p+s is a live allocation of this test.
        unsafe { std::ptr::write_bytes(p as *mut u8, s as u8, s) };
    }
    for (&p, &s) in ptrs.iter().zip(&sizes) {
        // SAFETY: as above.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, s) };
        assert!(bytes.iter().all(|&b| b == s as u8), "allocation of {s} bytes was overwritten");
    }
    assert_eq!(h.lookup(HostAddr(0)), None);
    assert_eq!(h.lookup(HostAddr(&h as *const _ as usize)), None);
    assert_eq!(h.stats().live, sizes.len());
    for p in ptrs {
        h.free(HostAddr(p)).unwrap();
    }
    assert_eq!(h.stats().live, 0);
}

#[test]
fn bad_frees_change_nothing() {
    let h = Heap::with_granules(8).unwrap();
    let p = h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    let big = h.alloc(3 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert_eq!(h.free(HostAddr(p + 8)), Err(FreeError::Interior { ptr: HostAddr(p + 8), base: HostAddr(p) }));
    assert_eq!(
        h.free(HostAddr(big + 4096)),
        Err(FreeError::Interior { ptr: HostAddr(big + 4096), base: HostAddr(big) })
    );
    assert_eq!(h.free(HostAddr(12345)), Err(FreeError::Unknown(HostAddr(12345))));
    let other = Heap::with_granules(8).unwrap();
    let q = other.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert_eq!(h.free(HostAddr(q)), Err(FreeError::Unknown(HostAddr(q))), "another heap's pointer");
    assert_eq!(h.lookup(HostAddr(p)).unwrap().size, 100);
    assert_eq!(h.free(HostAddr(p)).unwrap().size, 100);
    assert_eq!(h.free(HostAddr(p)), Err(FreeError::Unknown(HostAddr(p))), "double free");
    assert_eq!(h.free(HostAddr(big)).unwrap().size, 3 << 20);
    assert_eq!(h.free(HostAddr(big)), Err(FreeError::Unknown(HostAddr(big))));
    assert_eq!(other.lookup(HostAddr(q)).unwrap().size, 100);
}

#[test]
fn alignment_and_meta_are_kept() {
    let h = Heap::with_granules(32).unwrap();
    let meta = AllocMeta { kind: AllocKind::Shared, device: Some(3), flags: 0b101 };
    for align in [1usize, 64, 256, 4096, 1 << 16, 1 << 21, 1 << 22] {
        let p = h.alloc(10, align, meta).unwrap().as_ptr() as usize;
        assert_eq!(p % align, 0, "align {align}");
        assert_eq!(h.lookup(HostAddr(p + 9)).unwrap().meta, meta);
        h.free(HostAddr(p)).unwrap();
    }
    assert_eq!(h.alloc(0, 0, meta), Err(AllocError::ZeroSize));
    assert_eq!(h.alloc(8, 24, meta), Err(AllocError::BadAlignment(24)));
    assert!(matches!(h.alloc(64 << 20, 0, meta), Err(AllocError::OutOfAddressSpace { .. })));
    assert_eq!((h.stats().live, h.stats().large), (0, 0));
}

#[test]
fn empty_chunks_go_back_to_the_system() {
    const MIB: u64 = 1 << 20;
    let h = Heap::with_granules(16).unwrap();
    // The 1 MiB class has two slots per chunk: five allocations, three chunks.
    let ps: Vec<usize> = (0..5).map(|_| h.alloc(1 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
    assert_eq!(h.stats().chunks, 3);
    assert_eq!(h.stats().resident_bytes, 0, "nothing is resident before it is touched");
    for p in &ps {
        // SAFETY: a live 1 MiB allocation.
        unsafe { std::ptr::write_bytes(*p as *mut u8, 1, 1 << 20) };
    }
    assert_eq!(h.stats().resident_bytes, 5 * MIB);
    for p in &ps {
        h.free(HostAddr(*p)).unwrap();
    }
    assert_eq!(h.stats().chunks, 1, "one empty chunk stays warm");
    assert_eq!(h.stats().resident_bytes, MIB, "freed chunks' pages went back");
    h.trim();
    assert_eq!(h.stats().chunks, 0);
    assert_eq!(h.stats().resident_bytes, 0);
    // Large allocations hand their pages back when freed.
    let big = h.alloc(5 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    // SAFETY: a live 5 MiB allocation.
    unsafe { std::ptr::write_bytes(big as *mut u8, 1, 5 << 20) };
    assert_eq!(h.stats().resident_bytes, 5 * MIB);
    h.free(HostAddr(big)).unwrap();
    assert_eq!(h.stats().resident_bytes, 0);
    // The address space is reusable.
    let p = h.alloc(1 << 20, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert!(h.lookup(HostAddr(p)).is_some());
}

#[test]
fn threads_allocate_look_up_and_free_at_once() {
    let h = Heap::new().unwrap();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let h = &h;
            s.spawn(move || {
                let mut live = Vec::new();
                for i in 0..5000usize {
                    let size = [24, 100, 4096, 70_000, 3 << 20][(i + t) % 5];
                    let p = h.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
                    // SAFETY: a fresh allocation of `size` bytes.
                    unsafe { *(p as *mut u8) = t as u8 };
                    live.push((p, size));
                    if i % 3 == 0 {
                        let (q, qs) = live.swap_remove(i % live.len());
                        assert_eq!(h.lookup(HostAddr(q + qs - 1)).unwrap().base, HostAddr(q));
                        // SAFETY: still live.
                        assert_eq!(unsafe { *(q as *const u8) }, t as u8);
                        h.free(HostAddr(q)).unwrap();
                    }
                }
                for (p, _) in live {
                    h.free(HostAddr(p)).unwrap();
                }
            });
        }
    });
    assert_eq!(h.stats().live, 0);
    assert_eq!(h.stats().large, 0);
}

/// Runs `f` on a new thread of another shard than the caller's while
/// the caller still holds `held`, and waits up to a minute for it:
/// false if it did not finish (blocked on something `held` holds).
/// `held` is let go before this returns either way.
pub(crate) fn finishes_on_another_shard<G>(held: G, f: impl Fn() + Send + Sync) -> bool {
    let mine = shard();
    let f = &f;
    std::thread::scope(|s| {
        let finished = loop {
            let (tx, rx) = std::sync::mpsc::channel();
            s.spawn(move || {
                if shard() == mine {
                    return tx.send(false).unwrap();
                }
                f();
                let _ = tx.send(true);
            });
            match rx.recv_timeout(std::time::Duration::from_secs(60)) {
                Ok(true) => break true,
                Ok(false) => continue,
                Err(_) => break false,
            }
        };
        // A blocked thread finishes once `held` goes; the scope joins it.
        drop(held);
        finished
    })
}

#[test]
fn threads_of_different_shards_allocate_and_free_without_a_shared_lock() {
    let h = Heap::with_granules(16).unwrap();
    let p = h.alloc(4096, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    let c = (4096 / MIN_CLASS).trailing_zeros() as usize;
    // Hold this thread's pool of the 4 KiB class (and nothing else):
    // a thread of another shard allocates and frees in that class.
    let held = sync::lock(h.pool(c, shard()));
    let done = finishes_on_another_shard(held, || {
        for _ in 0..1000 {
            let q = h.alloc(4096, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
            h.free(HostAddr(q)).unwrap();
        }
    });
    assert!(done, "another shard's thread waited for this thread's pool lock");
    // A free from another thread goes back to the allocating shard's pool.
    assert!(finishes_on_another_shard((), || assert_eq!(h.free(HostAddr(p)).unwrap().size, 4096)));
    assert_eq!(h.stats().live, 0);
}

#[test]
fn the_shard_of_an_allocation_is_its_allocating_threads_from_any_thread() {
    let h = Heap::with_granules(16).unwrap();
    let small = h.alloc(4096, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    let large = h.alloc(3 * GRANULE, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    let mine = shard();
    std::thread::spawn(move || {
        assert_eq!(h.shard_of(HostAddr(small)), mine, "the pool the allocation came from");
        assert!(h.shard_of(HostAddr(large)) < SHARDS && h.shard_of(HostAddr(usize::MAX)) < SHARDS);
        h.free(HostAddr(small)).unwrap();
        h.free(HostAddr(large)).unwrap();
    })
    .join()
    .unwrap();
}

/// Marks the allocation at `p` exported, as `export_dmabuf` does after
/// udmabuf made the dma-buf (udmabuf exists only in the guest; the guest
/// tests check the dma-buf side). Returns the exported byte range.
fn mark_exported(h: &Heap, p: usize) -> (usize, usize) {
    h.export_with(HostAddr(p), |_, offset, len| Ok(((h.va.base() + offset as usize).0, len as usize))).unwrap()
}

/// The `n` bytes at `p`.
///
/// # Safety
/// `p..p + n` lies in a heap's mapping, which outlives the call.
unsafe fn bytes(p: usize, n: usize) -> Vec<u8> {
    // SAFETY: forwarded to the caller.
    unsafe { std::slice::from_raw_parts(p as *const u8, n) }.to_vec()
}

#[test]
fn a_sub_page_export_closes_its_page_until_it_empties() {
    let h = Heap::with_granules(4).unwrap();
    let page = page_size();
    let a = h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    let n = h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    let (first, len) = mark_exported(&h, a + 5);
    assert_eq!((first, len), (a / page * page, page));
    assert_eq!(n / page * page, first, "the neighbour shares the exported page");
    // SAFETY: `a` and `n` are live 100-byte allocations of this test.
    unsafe { (a as *mut u8).write_bytes(0xa1, 100) };
    h.free(HostAddr(a)).unwrap();
    let later: Vec<usize> = (0..100).map(|_| h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
    assert!(later.iter().all(|&p| p / page * page != first), "no new allocation in a closed page");
    // SAFETY: the freed slot lies in the heap's mapping.
    assert_eq!(unsafe { bytes(a, 100) }, [0xa1; 100], "not handed back while the neighbour lives");
    assert_eq!(h.stats().live, 101);
    h.free(HostAddr(n)).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { bytes(a, 100) }, [0; 100], "emptied: handed back (fresh pages)");
    let again: Vec<usize> = (0..64).map(|_| h.alloc(100, 0, AllocMeta::HOST).unwrap().as_ptr() as usize).collect();
    assert!(again.iter().any(|&p| p / page * page == first), "the page is open again");
    for p in later.into_iter().chain(again) {
        h.free(HostAddr(p)).unwrap();
    }
    assert_eq!(h.stats().live, 0);
    h.trim();
    assert_eq!((h.stats().chunks, h.stats().resident_bytes), (0, 0));
}

#[test]
fn freed_exported_slots_and_large_allocations_get_fresh_pages() {
    let h = Heap::with_granules(8).unwrap();
    // A page slot, a two-page slot exported in part, a 1 MiB slot, and a
    // large allocation.
    for size in [4096usize, 5000, 1 << 20, 3 << 20] {
        let p = h.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        // SAFETY: a live allocation of `size` bytes.
        unsafe { (p as *mut u8).write_bytes(0x11, size) };
        let (first, len) = mark_exported(&h, p);
        assert_eq!((first, len), (p, size.next_multiple_of(page_size())));
        h.free(HostAddr(p)).unwrap();
        // SAFETY: the freed range lies in the heap's mapping.
        assert!(unsafe { bytes(p, size) }.iter().all(|&b| b == 0), "{size}: handed back on free");
        let q = h.alloc(size, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert_eq!(q, p, "{size}: the slot is free again at once");
        h.free(HostAddr(q)).unwrap();
    }
    assert_eq!(h.stats().live, 0);
    h.trim();
    assert_eq!(h.stats().resident_bytes, 0);
}

#[test]
fn a_chunk_of_closed_pages_is_released_when_it_empties() {
    let h = Heap::with_granules(4).unwrap();
    let page = page_size();
    // 64-byte slots: one per page exported closes every page of the chunk.
    let mut live = Vec::new();
    for k in 0..GRANULE / page {
        let p = h.alloc(64, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
        assert_eq!(p % page, 0, "the first slot of page {k}: the others were closed");
        mark_exported(&h, p);
        live.push(p);
    }
    assert_eq!(h.stats().chunks, 1);
    // The chunk is closed: the next allocation takes a new one.
    let other = h.alloc(64, 0, AllocMeta::HOST).unwrap().as_ptr() as usize;
    assert_eq!(h.stats().chunks, 2);
    assert_ne!(other / GRANULE, live[0] / GRANULE);
    for p in live {
        h.free(HostAddr(p)).unwrap();
    }
    // Emptied, and another chunk of the class has room: released.
    assert_eq!(h.stats().chunks, 1);
    h.free(HostAddr(other)).unwrap();
    assert_eq!(h.stats().live, 0);
}
