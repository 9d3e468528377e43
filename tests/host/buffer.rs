//! Buffer objects on the CPU device (host-unified memory, so every pair is
//! linked): creation rules and errors, sub-buffers, queries, and the linked
//! rows of seed 003's table, proven by the buffer's counters. The unlinked
//! rows need a device without host-unified memory: the guest tests
//! (`tests/guest/buffer_*.rs`) run them on the ivshmem BAR device.

use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::{svm, usm};
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::store::{Location, LocationStats};
use dmabridge::runtime::buffer::{commands, mem_flags, mem_info, Buffer, BUFFER_CREATE_TYPE_REGION, MEM_OBJECT_BUFFER};
use dmabridge::runtime::event::Event;
use dmabridge::runtime::info::InfoValue;
use dmabridge_tests::{cpu_context, cpu_context_and_queue, cpu_device, err_kind, Resources};

fn create(ctx: &Arc<dmabridge::runtime::context::Context>, flags: u64, size: usize) -> Arc<Buffer> {
    // SAFETY: no host pointer.
    unsafe { Buffer::create(ctx, flags, size, null_mut()) }.unwrap()
}

fn cpu_loc() -> Location {
    Location::Device(cpu_device().index)
}

#[test]
fn creation_flag_rules_and_errors() {
    let ctx = cpu_context();
    let mut data = vec![1u8; 4096];
    let p = data.as_mut_ptr();
    let k = |flags: u64, size: usize, ptr: *mut u8| {
        // SAFETY: `data` outlives every buffer created here, for 4096 bytes.
        err_kind(unsafe { Buffer::create(&ctx, flags, size, ptr) })
    };
    use mem_flags::*;
    assert_eq!(k(1 << 12, 64, null_mut()), ClErrorKind::InvalidValue, "unknown bit");
    assert_eq!(k(READ_WRITE | READ_ONLY, 64, null_mut()), ClErrorKind::InvalidValue);
    assert_eq!(k(WRITE_ONLY | READ_ONLY, 64, null_mut()), ClErrorKind::InvalidValue);
    assert_eq!(k(HOST_READ_ONLY | HOST_NO_ACCESS, 64, null_mut()), ClErrorKind::InvalidValue);
    assert_eq!(k(USE_HOST_PTR | ALLOC_HOST_PTR, 64, p), ClErrorKind::InvalidValue);
    assert_eq!(k(USE_HOST_PTR | COPY_HOST_PTR, 64, p), ClErrorKind::InvalidValue);
    assert_eq!(k(0, 0, null_mut()), ClErrorKind::InvalidBufferSize);
    let max = cpu_device().max_mem_alloc_size as usize;
    assert_eq!(k(0, max + 1, null_mut()), ClErrorKind::InvalidBufferSize);
    assert_eq!(k(USE_HOST_PTR, 64, null_mut()), ClErrorKind::InvalidHostPtr);
    assert_eq!(k(COPY_HOST_PTR, 64, null_mut()), ClErrorKind::InvalidHostPtr);
    assert_eq!(k(READ_WRITE, 64, p), ClErrorKind::InvalidHostPtr, "a pointer without USE/COPY_HOST_PTR");
    assert_eq!(k(ALLOC_HOST_PTR, 64, p), ClErrorKind::InvalidHostPtr);
    // Allowed combinations.
    // SAFETY: `data` holds 4096 bytes and outlives the buffers.
    unsafe {
        Buffer::create(&ctx, ALLOC_HOST_PTR | COPY_HOST_PTR, 64, p).unwrap();
        Buffer::create(&ctx, USE_HOST_PTR | READ_ONLY | HOST_NO_ACCESS, 4096, p).unwrap();
    }
    let b = create(&ctx, 0, 64);
    assert_eq!(b.flags(), READ_WRITE, "no access flag means READ_WRITE");
    drop(data);
}

#[test]
fn use_host_ptr_over_usm_and_svm_follows_seed_000_and_001() {
    let ctx = cpu_context();
    let cpu = cpu_device();
    let host = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap().as_ptr();
    let dev = usm::device_mem_alloc(&ctx, &cpu, &[], 4096, 0).unwrap().as_ptr();
    let shared = usm::shared_mem_alloc(&ctx, None, &[], 4096, 0).unwrap().as_ptr();
    let svm_ptr = svm::svm_alloc(&ctx, 1, 4096, 0).unwrap().as_ptr();
    use mem_flags::*;
    // SAFETY: every pointer holds 4096 bytes that outlive the buffers made here.
    unsafe {
        // Issue 20: no USE_HOST_PTR over any USM allocation of the context.
        for p in [host, dev, shared] {
            assert_eq!(err_kind(Buffer::create(&ctx, USE_HOST_PTR, 64, p)), ClErrorKind::InvalidHostPtr);
        }
        // Issue 21: COPY_HOST_PTR from host USM only.
        Buffer::create(&ctx, COPY_HOST_PTR, 64, host).unwrap();
        assert_eq!(err_kind(Buffer::create(&ctx, COPY_HOST_PTR, 64, dev)), ClErrorKind::InvalidHostPtr);
        assert_eq!(err_kind(Buffer::create(&ctx, COPY_HOST_PTR, 64, shared)), ClErrorKind::InvalidHostPtr);
        // SVM: allowed, within the allocation; CL_MEM_USES_SVM_POINTER says so.
        let b = Buffer::create(&ctx, USE_HOST_PTR, 4096, svm_ptr).unwrap();
        assert_eq!(b.info(mem_info::USES_SVM_POINTER).unwrap(), InfoValue::Bool(true));
        let tail = svm_ptr.add(2048);
        assert_eq!(err_kind(Buffer::create(&ctx, USE_HOST_PTR, 4096, tail)), ClErrorKind::InvalidBufferSize);
        drop(b);
    }
    for p in [host, dev, shared] {
        usm::mem_free(&ctx, p).unwrap();
    }
    assert!(svm::svm_free(&ctx, svm_ptr));
}

#[test]
fn queries_answer_what_clgetmemobjectinfo_says() {
    let ctx = cpu_context();
    let mut data = [0u8; 256];
    // SAFETY: `data` outlives the buffer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::USE_HOST_PTR, 256, data.as_mut_ptr()) }.unwrap();
    use mem_info::*;
    assert_eq!(b.info(TYPE).unwrap(), InfoValue::U32(MEM_OBJECT_BUFFER));
    assert_eq!(b.info(FLAGS).unwrap(), InfoValue::Bits(mem_flags::USE_HOST_PTR | mem_flags::READ_WRITE));
    assert_eq!(b.info(SIZE).unwrap(), InfoValue::Usize(256));
    assert_eq!(b.info(HOST_PTR).unwrap(), InfoValue::Usize(data.as_ptr() as usize));
    assert_eq!(b.info(MAP_COUNT).unwrap(), InfoValue::U32(0));
    assert_eq!(b.info(REFERENCE_COUNT).unwrap(), InfoValue::U32(1));
    assert_eq!(b.info(CONTEXT).unwrap(), InfoValue::Context(ctx.clone()));
    assert_eq!(b.info(ASSOCIATED_MEMOBJECT).unwrap(), InfoValue::Mem(None));
    assert_eq!(b.info(OFFSET).unwrap(), InfoValue::Usize(0));
    assert_eq!(b.info(USES_SVM_POINTER).unwrap(), InfoValue::Bool(false));
    assert_eq!(b.info(PROPERTIES).unwrap(), InfoValue::Properties(Vec::new()), "none for clCreateBuffer");
    assert_eq!(err_kind(b.info(0x110B)), ClErrorKind::InvalidValue);
    let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 128, 64).unwrap();
    assert_eq!(sub.info(ASSOCIATED_MEMOBJECT).unwrap(), InfoValue::Mem(Some(b.clone())));
    assert_eq!(sub.info(OFFSET).unwrap(), InfoValue::Usize(128));
    assert_eq!(sub.info(HOST_PTR).unwrap(), InfoValue::Usize(data.as_ptr() as usize + 128));
    assert_eq!(b.info(REFERENCE_COUNT).unwrap(), InfoValue::U32(2), "the sub-buffer holds its parent");
    drop(sub);
}

#[test]
fn sub_buffer_rules() {
    let ctx = cpu_context();
    use mem_flags::*;
    let b = create(&ctx, WRITE_ONLY | HOST_READ_ONLY, 4096);
    let sub = |flags, ty, origin, size| Buffer::create_sub_buffer(&b, flags, ty, origin, size);
    let r = BUFFER_CREATE_TYPE_REGION;
    assert_eq!(err_kind(sub(READ_WRITE, r, 0, 64)), ClErrorKind::InvalidValue, "parent is WRITE_ONLY");
    assert_eq!(err_kind(sub(READ_ONLY, r, 0, 64)), ClErrorKind::InvalidValue);
    assert_eq!(err_kind(sub(HOST_WRITE_ONLY, r, 0, 64)), ClErrorKind::InvalidValue, "parent is HOST_READ_ONLY");
    assert_eq!(err_kind(sub(USE_HOST_PTR, r, 0, 64)), ClErrorKind::InvalidValue);
    assert_eq!(err_kind(sub(0, 0x1221, 0, 64)), ClErrorKind::InvalidValue, "unknown create type");
    assert_eq!(err_kind(sub(0, r, 0, 0)), ClErrorKind::InvalidBufferSize);
    assert_eq!(err_kind(sub(0, r, 4096 - 64, 128)), ClErrorKind::InvalidValue, "past the end");
    assert_eq!(err_kind(sub(0, r, usize::MAX - 8, 64)), ClErrorKind::InvalidValue, "overflow");
    assert_eq!(err_kind(sub(0, r, 64, 64)), ClErrorKind::MisalignedSubBufferOffset, "64 is not 128-aligned");
    let s = sub(0, r, 128, 256).unwrap();
    assert_eq!(s.flags(), WRITE_ONLY | HOST_READ_ONLY, "inherited");
    assert_eq!(
        err_kind(Buffer::create_sub_buffer(&s, 0, r, 0, 64)),
        ClErrorKind::InvalidMemObject,
        "no sub-buffer of a sub-buffer"
    );
}

#[test]
fn creating_a_buffer_allocates_nothing_until_first_use() {
    let (ctx, q) = cpu_context_and_queue();
    let b = create(&ctx, 0, 1 << 20);
    assert_eq!(b.stats(Location::Host), LocationStats::default());
    assert_eq!(b.stats(cpu_loc()), LocationStats::default());
    assert_eq!(b.linked(&cpu_device()), None);
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &[7], 0, 1 << 20, &[]).unwrap()]).unwrap();
    assert_eq!(b.linked(&cpu_device()), Some(true), "the CPU device has host-unified memory");
    let s = b.stats(cpu_loc());
    assert_eq!((s.allocations, s.bytes_allocated), (1, 1 << 20), "the device allocation came first: it allocates");
    assert_eq!(b.stats(Location::Host).allocations, 0);
}

/// Seed 003, linked column, "native memory object creation": created with
/// USE_HOST_PTR when a suitable host pointer is available, whatever the
/// first access mode — no allocation, no transfer.
#[test]
fn linked_device_allocation_reuses_the_users_pages() {
    let (ctx, q) = cpu_context_and_queue();
    let mut data: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
    // SAFETY: `data` outlives the buffer and is touched only through maps.
    let b = unsafe { Buffer::create(&ctx, mem_flags::USE_HOST_PTR, 4096, data.as_mut_ptr()) }.unwrap();
    // A discarding first access (a whole-buffer fill)...
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &[0xee; 4], 0, 4096, &[]).unwrap()]).unwrap();
    let s = b.stats(cpu_loc());
    assert_eq!((s.allocations, s.bytes_allocated, s.bytes_in), (1, 0, 0));
    // ... wrote the user's pages: they are the device allocation.
    let (p, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, 4096).unwrap();
    assert_eq!(p.as_ptr(), data.as_mut_ptr(), "the host allocation is the user's pointer");
    // SAFETY: mapped for reading.
    assert!(unsafe { std::slice::from_raw_parts(p.as_ptr(), 4096) }.iter().all(|&x| x == 0xee));
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[]).unwrap()]).unwrap();
    let h = b.stats(Location::Host);
    assert_eq!((h.allocations, h.bytes_allocated, h.bytes_in, h.bytes_out), (1, 0, 0, 0), "host allocation skipped");
}

/// Seed 003, linked column, "host allocation command behaviour": created
/// after its linked device allocation, the host allocation is obtained by
/// mapping, not allocated; and map/unmap move no byte.
#[test]
fn host_allocation_after_its_linked_device_allocation_is_a_map() {
    let (ctx, q) = cpu_context_and_queue();
    let b = create(&ctx, 0, 64 << 10);
    let pattern = [1u8, 2, 3, 4];
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &pattern, 0, 64 << 10, &[]).unwrap()]).unwrap();
    for _ in 0..3 {
        let (p, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ | map_flags::WRITE, 0, 64 << 10).unwrap();
        // SAFETY: mapped for reading and writing, 64 KiB.
        let bytes = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), 64 << 10) };
        assert_eq!(&bytes[..8], &[1, 2, 3, 4, 1, 2, 3, 4]);
        bytes[0] = 9;
        Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[]).unwrap()]).unwrap();
        let mut first = [0u8; 1];
        // SAFETY: blocking read into `first`.
        unsafe { commands::enqueue_read_buffer(&q, &b, true, 0, 1, first.as_mut_ptr(), &[]).unwrap() };
        assert_eq!(first, [9], "the device side sees the host's write: the same pages");
        // SAFETY: blocking write from `pattern`.
        unsafe { commands::enqueue_write_buffer(&q, &b, true, 0, 1, pattern.as_ptr(), &[]).unwrap() };
    }
    let h = b.stats(Location::Host);
    assert_eq!(h.allocations, 1);
    assert_eq!(h.obtained_by_mapping, 1, "obtained by mapping the device allocation");
    assert_eq!((h.bytes_allocated, h.bytes_in, h.bytes_out), (0, 0, 0));
    let d = b.stats(cpu_loc());
    assert_eq!((d.allocations, d.bytes_allocated, d.bytes_in, d.bytes_out), (1, 64 << 10, 0, 0));
}

/// The host allocation first (a map), then the linked device allocation:
/// it reuses the host pages.
#[test]
fn linked_device_allocation_after_the_host_one_reuses_its_pages() {
    let (ctx, q) = cpu_context_and_queue();
    let b = create(&ctx, mem_flags::ALLOC_HOST_PTR, 8192);
    let (p, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::WRITE_INVALIDATE_REGION, 0, 8192).unwrap();
    // SAFETY: mapped for writing, 8192 bytes.
    unsafe { p.as_ptr().write_bytes(0x42, 8192) };
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[]).unwrap()]).unwrap();
    let mut out = vec![0u8; 8192];
    // SAFETY: blocking read into `out`.
    unsafe { commands::enqueue_read_buffer(&q, &b, true, 0, 8192, out.as_mut_ptr(), &[]).unwrap() };
    assert!(out.iter().all(|&x| x == 0x42));
    let h = b.stats(Location::Host);
    assert_eq!((h.allocations, h.bytes_allocated, h.obtained_by_mapping), (1, 8192, 0));
    let d = b.stats(cpu_loc());
    assert_eq!((d.allocations, d.bytes_allocated, d.bytes_in), (1, 0, 0), "reused the host pages");
}

#[test]
fn copy_host_ptr_keeps_the_data_in_a_host_allocation_made_at_creation() {
    let (ctx, q) = cpu_context_and_queue();
    let mut data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    // SAFETY: COPY_HOST_PTR reads `data` now.
    let b = unsafe { Buffer::create(&ctx, mem_flags::COPY_HOST_PTR, 1000, data.as_mut_ptr()) }.unwrap();
    let expected = data.clone();
    data.fill(0); // the buffer holds its own copy
    let h = b.stats(Location::Host);
    assert_eq!((h.allocations, h.bytes_allocated, h.bytes_in), (1, 1000, 1000));
    let mut out = vec![0u8; 1000];
    // SAFETY: blocking read.
    unsafe { commands::enqueue_read_buffer(&q, &b, true, 0, 1000, out.as_mut_ptr(), &[]).unwrap() };
    assert_eq!(out, expected);
    assert_eq!(b.stats(cpu_loc()).bytes_allocated, 0, "linked: the device reuses the host pages");
}

#[test]
fn sub_buffers_share_the_parents_allocations() {
    let (ctx, q) = cpu_context_and_queue();
    let b = create(&ctx, 0, 4096);
    let s = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 1024, 1024).unwrap();
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &[1], 0, 4096, &[]).unwrap()]).unwrap();
    Event::wait(&[commands::enqueue_fill_buffer(&q, &s, &[2], 0, 1024, &[]).unwrap()]).unwrap();
    let mut out = vec![0u8; 4096];
    // SAFETY: blocking read.
    unsafe { commands::enqueue_read_buffer(&q, &b, true, 0, 4096, out.as_mut_ptr(), &[]).unwrap() };
    assert!(out[..1024].iter().all(|&x| x == 1) && out[2048..].iter().all(|&x| x == 1));
    assert!(out[1024..2048].iter().all(|&x| x == 2));
    assert_eq!(b.stats(cpu_loc()).allocations, 1, "one allocation for the buffer and its sub-buffer");
    let (p, _) = map::enqueue_map_buffer(&q, &s, true, map_flags::READ, 0, 1024).unwrap();
    let (pp, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, 4096).unwrap();
    // SAFETY: both mapped for reading.
    assert_eq!(p.as_ptr(), unsafe { pp.as_ptr().add(1024) });
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &s, p.as_ptr(), &[]).unwrap()]).unwrap();
    assert_eq!(
        err_kind(map::enqueue_unmap_mem_object(&q, &s, pp.as_ptr(), &[])),
        ClErrorKind::InvalidValue,
        "a pointer mapped through another buffer object"
    );
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, pp.as_ptr(), &[]).unwrap()]).unwrap();
}

/// Buffers released while commands on them are still queued (sub-buffers,
/// fills, maps) leave no fd or mapping behind once the queue is done. The
/// counting runs alone in a child process: tests beside it open and close
/// their own.
#[test]
fn releasing_buffers_frees_their_memory() {
    dmabridge_tests::run_alone("buffer::child_releasing_buffers_frees_their_memory", &[]);
}

#[test]
#[ignore = "run alone in a child process by releasing_buffers_frees_their_memory"]
fn child_releasing_buffers_frees_their_memory() {
    let rounds = |n: usize| {
        let (ctx, q) = cpu_context_and_queue();
        for i in 0..n {
            let b = create(&ctx, mem_flags::ALLOC_HOST_PTR, 3 << 20);
            let s = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 1 << 20, 1 << 20).unwrap();
            let ev = commands::enqueue_fill_buffer(&q, &s, &[i as u8], 0, 1 << 20, &[]).unwrap();
            let (p, _) = map::enqueue_map_buffer_after(&q, &b, false, map_flags::READ, 0, 3 << 20, &[ev]).unwrap();
            map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[]).unwrap();
            // Released with commands still queued: they keep it alive.
        }
        q.finish().unwrap();
    };
    // One round first, so that what the process keeps after its first queue
    // worker (glibc's cached thread stack and the thread's malloc arena) is
    // there before counting, whichever tests ran before this one.
    rounds(1);
    let before = Resources::now();
    rounds(20);
    before.assert_unchanged();
}

/// Buffers of hostile sizes (up to `usize::MAX`, whose whole pages do not
/// fit in the address space) are created, as nothing is allocated yet; their
/// first use fails with `CL_MEM_OBJECT_ALLOCATION_FAILURE` and leaves no
/// allocation behind — neither its own nor the one a copy made for its source.
#[test]
fn hostile_buffer_sizes_fail_at_first_use_and_leave_nothing_behind() {
    use dmabridge::runtime::{context::Context, queue::Queue, queue::QueueProps};
    let dev = dmabridge_tests::boundless_device(200, "boundless");
    let ctx = Context::new(std::slice::from_ref(&dev)).unwrap();
    let q = Queue::new(&ctx, &dev, QueueProps::default()).unwrap();
    let (host, here) = (Location::Host, Location::Device(dev.index));
    let small = create(&ctx, 0, 4096);
    for size in [usize::MAX, usize::MAX - 1, usize::MAX - 4095, usize::MAX / 2 + 1, 1 << 62, 1 << 40] {
        let b = create(&ctx, mem_flags::ALLOC_HOST_PTR, size);
        let alloc_failed = |r: Result<_, _>, what: &str| {
            assert_eq!(err_kind(r), ClErrorKind::MemObjectAllocationFailure, "{what} of a {size}-byte buffer");
            assert_eq!(b.stats(host), LocationStats::default(), "{what}: no host allocation left behind");
            assert_eq!(b.stats(here), LocationStats::default(), "{what}: no device allocation left behind");
            assert_eq!(b.linked(&dev), None);
        };
        alloc_failed(commands::enqueue_fill_buffer(&q, &b, &[1], 0, 64, &[]).map(|_| ()), "a fill");
        alloc_failed(map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, 64).map(|_| ()), "a map");
        let data = [7u8; 16];
        // SAFETY: a blocking write of `data`'s 16 bytes (it fails before reading them).
        let w = unsafe { commands::enqueue_write_buffer(&q, &b, true, size - 16, 16, data.as_ptr(), &[]) };
        alloc_failed(w.map(|_| ()), "a write at its end");
        alloc_failed(commands::enqueue_copy_buffer(&q, &small, &b, 0, 0, 4096, &[]).map(|_| ()), "a copy into it");
        assert_eq!(small.linked(&dev), None, "the copy's fresh source allocation was undone");
        assert_eq!(small.stats(here), LocationStats::default());
        let s = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 0, 4096).unwrap();
        alloc_failed(commands::enqueue_fill_buffer(&q, &s, &[1], 0, 64, &[]).map(|_| ()), "a fill of a sub-buffer");
    }
    // A buffer of a size the heap can hold still works on that device.
    let b = create(&ctx, 0, 3 << 20);
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &[9], 0, 3 << 20, &[]).unwrap()]).unwrap();
    let (p, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, (3 << 20) - 1, 1).unwrap();
    // SAFETY: mapped for reading, 1 byte.
    assert_eq!(unsafe { p.as_ptr().read() }, 9);
    map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[]).unwrap();
    q.finish().unwrap();
}

/// Sub-buffer regions whose origin + size overflow, or that reach past the
/// parent by one byte, are `CL_INVALID_VALUE` (the seed's rule for a region
/// outside the parent); a zero size is `CL_INVALID_BUFFER_SIZE`.
#[test]
fn hostile_sub_buffer_regions_are_refused() {
    let ctx = cpu_context();
    let b = create(&ctx, 0, 8192);
    let sub = |origin, size| err_kind(Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, origin, size));
    for (origin, size) in [
        (usize::MAX, 1),
        (usize::MAX - 127, 128),
        (0, usize::MAX),
        (128, usize::MAX - 127),
        (4096, 4097),
        (8192, 1),
        (usize::MAX & !127, usize::MAX),
    ] {
        assert_eq!(sub(origin, size), ClErrorKind::InvalidValue, "origin {origin} size {size}");
    }
    assert_eq!(sub(usize::MAX & !127, 0), ClErrorKind::InvalidBufferSize);
    // A host pointer whose bytes would wrap around the address space is no
    // memory at all: refused at creation (its sub-buffers' host pointers
    // would overflow).
    for flags in [mem_flags::USE_HOST_PTR, mem_flags::COPY_HOST_PTR] {
        let wraps = (usize::MAX - 63) as *mut u8;
        // SAFETY: refused before `wraps` is used.
        let r = unsafe { Buffer::create(&ctx, flags, 128, wraps) };
        assert_eq!(err_kind(r), ClErrorKind::InvalidHostPtr, "flags {flags:#x}");
    }
    assert_eq!(Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 4096, 4096).unwrap().size(), 4096);
    assert_eq!(b.stats(Location::Host), LocationStats::default());
}
