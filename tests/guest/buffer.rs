//! Buffer objects on the guest's devices: the linked pairs of the edu device
//! (host-unified, behind the IOMMU) and the unlinked pairs of the BAR device
//! (ivshmem's BAR 2: device-local memory), each row of seed 003's table
//! proven by the buffer's counters, and data that survives every move.
//!
//! As in `edu_device.rs`, each test builds the platform in a child process
//! (the platform keeps its VFIO groups for the life of the process).
//! edu completes each DMA on a 100 ms timer: the edu buffers are one page.

use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind;
use dmabridge::runtime::backend::bar::ENV;
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::store::{Location, LocationStats};
use dmabridge::runtime::buffer::{commands, mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::runtime::event::Event;
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::addr::HostAddr;
use dmabridge::sys::mmap::Access;
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge_tests::{err_kind, run_in_child, EDU0, IVSHMEM};

/// Runs the ignored test `name` of this module alone in a child process,
/// with `DMABRIDGE_BAR_DEVICE` set to `bar` (unset if `None`).
fn in_child(name: &str, bar: Option<&str>) {
    run_in_child(&format!("buffer::{name}"), &[(ENV, bar)]);
}

pub(super) fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed)).collect()
}

pub(super) fn edu(p: &Platform) -> Arc<Device> {
    let edu = p.devices().iter().find(|d| d.device_type == DeviceType::Accelerator && d.host_unified_memory);
    edu.cloned().unwrap_or_else(|| panic!("no edu device: {:?}, skipped {:?}", p.devices(), p.skipped()))
}

pub(super) fn bar(p: &Platform) -> Arc<Device> {
    let bar = p.devices().iter().find(|d| d.local_memory().is_some());
    bar.cloned().unwrap_or_else(|| panic!("no BAR device: {:?}, skipped {:?}", p.devices(), p.skipped()))
}

pub(super) fn queue(ctx: &Arc<Context>, d: &Arc<Device>) -> Arc<Queue> {
    Queue::new(ctx, d, QueueProps::default()).unwrap()
}

pub(super) fn read(q: &Arc<Queue>, b: &Arc<Buffer>) -> Vec<u8> {
    let mut out = vec![0u8; b.size()];
    // SAFETY: blocking read into `out`.
    unsafe { commands::enqueue_read_buffer(q, b, true, 0, b.size(), out.as_mut_ptr(), &[]).unwrap() };
    out
}

pub(super) fn write(q: &Arc<Queue>, b: &Arc<Buffer>, data: &[u8]) {
    // SAFETY: blocking write from `data`.
    unsafe { commands::enqueue_write_buffer(q, b, true, 0, data.len(), data.as_ptr(), &[]).unwrap() };
}

/// Maps the whole buffer, checks it holds `expect`, writes `new`, unmaps.
fn map_check_write(q: &Arc<Queue>, b: &Arc<Buffer>, expect: &[u8], new: &[u8]) -> usize {
    let flags = map_flags::READ | map_flags::WRITE;
    let (p, _) = map::enqueue_map_buffer(q, b, true, flags, 0, b.size()).unwrap();
    // SAFETY: mapped for reading and writing, `b.size()` bytes, until unmapped below.
    let bytes = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), b.size()) };
    assert_eq!(bytes, expect);
    bytes.copy_from_slice(new);
    Event::wait(&[map::enqueue_unmap_mem_object(q, b, p.as_ptr(), &[]).unwrap()]).unwrap();
    p.as_ptr() as usize
}

#[test]
fn data_moves_cpu_edu_host_and_back_through_linked_allocations() {
    in_child("child_data_moves_cpu_edu_host_and_back_through_linked_allocations", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_data_moves_cpu_edu_host_and_back_through_linked_allocations() {
    let p = Platform::get();
    let (cpu, edu) = (p.cpu().clone(), edu(p));
    let domain = edu.dma_domain().expect("edu sits in a DMA domain");
    let ctx = Context::new(&[cpu.clone(), edu.clone()]).unwrap();
    let (qc, qe) = (queue(&ctx, &cpu), queue(&ctx, &edu));
    const N: usize = 4096;
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, N, null_mut()) }.unwrap();
    let (a, bb, c, d) = (pattern(N, 3), pattern(N, 5), pattern(N, 7), pattern(N, 11));
    // CPU device first: its linked allocation allocates the pages.
    write(&qc, &b, &a);
    // The edu device: linked, reuses those pages, made resident in its
    // domain; its DMA engine reads what the CPU wrote.
    assert_eq!(read(&qe, &b), a);
    assert_eq!(b.linked(&edu), Some(true));
    let e = b.stats(Location::Device(edu.index));
    assert_eq!((e.allocations, e.bytes_allocated, e.bytes_in, e.bytes_out), (1, 0, 0, 0));
    // edu writes by DMA; the host maps (the host allocation is obtained by
    // mapping, no copy) and sees edu's bytes, then writes its own.
    write(&qe, &b, &bb);
    let host_ptr = map_check_write(&qc, &b, &bb, &c);
    assert!(domain.resident_iova(HostAddr(host_ptr), N).is_some(), "the linked pages are resident in edu's domain");
    let h = b.stats(Location::Host);
    assert_eq!((h.allocations, h.obtained_by_mapping, h.bytes_allocated, h.bytes_in), (1, 1, 0, 0));
    // Both devices see the host's write; then back through edu once more.
    assert_eq!(read(&qe, &b), c);
    assert_eq!(read(&qc, &b), c);
    write(&qe, &b, &d);
    map_check_write(&qe, &b, &d, &a);
    assert_eq!(read(&qc, &b), a);
    let total: u64 = [Location::Host, Location::Device(cpu.index), Location::Device(edu.index)]
        .iter()
        .map(|l| b.stats(*l).bytes_in + b.stats(*l).bytes_out)
        .sum();
    assert_eq!(total, 0, "linked pairs never transfer");
    drop(b);
    assert!(domain.resident_iova(HostAddr(host_ptr), N).is_none(), "released: evicted from edu's domain");
}

/// The unlinked rows of seed 003 on the BAR device (CPU copies through the
/// BAR mapping).
#[test]
fn unlinked_rows_on_the_bar_device() {
    in_child("child_unlinked_rows_on_the_bar_device", Some(&format!("{IVSHMEM},bar=2")));
}

#[test]
#[ignore = "run in a child process"]
fn child_unlinked_rows_on_the_bar_device() {
    let p = Platform::get();
    let (cpu, bar) = (p.cpu().clone(), bar(p));
    assert!(!bar.host_unified_memory);
    let ctx = Context::new(&[cpu.clone(), bar.clone()]).unwrap();
    let (qc, qb) = (queue(&ctx, &cpu), queue(&ctx, &bar));
    let local = bar.local_memory().unwrap();
    let in_bar = |ptr: usize| local.contains(ptr as *const u8);
    const N: usize = 64 << 10;
    let (bl, hl, cl) = (Location::Device(bar.index), Location::Host, Location::Device(cpu.index));

    // Native creation, unlinked: no host pointer at creation; initialised by
    // a separate transfer because the first access (a read) does not discard.
    let mut user = pattern(N, 3);
    let expect = user.clone();
    // SAFETY: `user` outlives the buffer and is touched only through maps.
    let b = unsafe { Buffer::create(&ctx, mem_flags::USE_HOST_PTR, N, user.as_mut_ptr()) }.unwrap();
    let allocated_before = local.allocated();
    assert_eq!(read(&qb, &b), expect);
    assert_eq!(b.linked(&bar), Some(false));
    assert!(local.allocated() >= allocated_before + N, "the device allocation is in the BAR");
    let s = b.stats(bl);
    assert_eq!((s.allocations, s.bytes_allocated, s.bytes_in), (1, N as u64, N as u64), "created, then initialised");
    // Host allocation skipped: the user's pointer is suitable.
    let host_ptr = map_check_write(&qc, &b, &expect, &pattern(N, 5));
    assert_eq!(host_ptr, user.as_ptr() as usize);
    let h = b.stats(hl);
    assert_eq!((h.allocations, h.bytes_allocated, h.bytes_in), (1, 0, 0), "the BAR copy was not newer: no transfer");
    // Memory transfer by read/write: the host's write reaches the BAR on
    // its next use there, and a BAR write reaches the host on the next map.
    assert_eq!(read(&qb, &b), pattern(N, 5));
    assert_eq!(b.stats(bl).bytes_in, 2 * N as u64);
    write(&qb, &b, &pattern(N, 7));
    assert_eq!(b.stats(bl).bytes_in, 2 * N as u64, "a whole-buffer write discards: no transfer in");
    map_check_write(&qc, &b, &pattern(N, 7), &pattern(N, 9));
    assert_eq!((b.stats(bl).bytes_out, b.stats(hl).bytes_in), (N as u64, N as u64), "BAR → host pages");
    drop(b);
    assert_eq!(local.allocated(), allocated_before, "released: the BAR range is free again");

    // Device-to-device between an unlinked allocation (A: the BAR) and a
    // linked one (B: the CPU device) goes through B's host pages: "map B,
    // read A into it, unmap B" — one transfer, and no extra host allocation.
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, N, null_mut()) }.unwrap();
    write(&qb, &b, &pattern(N, 13));
    assert_eq!(b.stats(bl).bytes_in, 0, "first access discards: no initialisation transfer");
    assert_eq!(read(&qc, &b), pattern(N, 13));
    assert_eq!((b.stats(bl).bytes_out, b.stats(cl).bytes_in), (N as u64, N as u64));
    assert_eq!(b.stats(hl).allocations, 0, "the linked CPU allocation's pages were the intermediary");
    // And back: the CPU writes, the BAR reads (linked → unlinked).
    write(&qc, &b, &pattern(N, 17));
    assert_eq!(read(&qb, &b), pattern(N, 17));
    assert_eq!(b.stats(bl).bytes_in, N as u64);
    // A copy between two buffers on the BAR device stays in the BAR.
    // SAFETY: no host pointer.
    let c = unsafe { Buffer::create(&ctx, 0, N, null_mut()) }.unwrap();
    Event::wait(&[commands::enqueue_copy_buffer(&qb, &b, &c, 0, 0, N, &[]).unwrap()]).unwrap();
    assert_eq!(c.stats(bl).bytes_in, 0, "a whole-buffer copy discards the destination");
    let (cp, _) = map::enqueue_map_buffer(&qc, &c, true, map_flags::READ, 0, N).unwrap();
    assert!(!in_bar(cp.as_ptr() as usize), "maps give host pages, not the BAR");
    // SAFETY: mapped for reading.
    assert_eq!(unsafe { std::slice::from_raw_parts(cp.as_ptr(), N) }, &pattern(N, 17)[..]);
    map::enqueue_unmap_mem_object(&qc, &c, cp.as_ptr(), &[]).unwrap();
    // Fill on the BAR device.
    Event::wait(&[commands::enqueue_fill_buffer(&qb, &c, &[1, 2, 3, 4], 0, N, &[]).unwrap()]).unwrap();
    assert!(read(&qc, &c).chunks(4).all(|x| x == [1, 2, 3, 4]));
    qc.finish().unwrap();
    qb.finish().unwrap();
}

#[test]
fn a_buffer_larger_than_the_bar_fails_to_allocate_there_and_changes_nothing() {
    in_child(
        "child_a_buffer_larger_than_the_bar_fails_to_allocate_there_and_changes_nothing",
        Some(&format!("{IVSHMEM},bar=2")),
    );
}

#[test]
#[ignore = "run in a child process"]
fn child_a_buffer_larger_than_the_bar_fails_to_allocate_there_and_changes_nothing() {
    let p = Platform::get();
    let (cpu, bar) = (p.cpu().clone(), bar(p));
    let ctx = Context::new(&[cpu.clone(), bar.clone()]).unwrap();
    let (qc, qb) = (queue(&ctx, &cpu), queue(&ctx, &bar));
    let size = bar.local_memory().unwrap().size() * 2;
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, size, null_mut()) }.unwrap();
    Event::wait(&[commands::enqueue_fill_buffer(&qc, &b, &[0x5a], 0, size, &[]).unwrap()]).unwrap();
    let before = b.stats(Location::Device(bar.index));
    let mut out = [0u8; 16];
    // SAFETY: `out` holds 16 bytes; the call fails.
    let r = unsafe { commands::enqueue_read_buffer(&qb, &b, true, 0, 16, out.as_mut_ptr(), &[]) };
    assert_eq!(err_kind(r), ClErrorKind::MemObjectAllocationFailure);
    assert_eq!(b.stats(Location::Device(bar.index)), before);
    assert_eq!(before, LocationStats::default());
    assert_eq!(b.linked(&bar), None);
    // SAFETY: blocking read into `out`.
    unsafe { commands::enqueue_read_buffer(&qc, &b, true, size - 16, 16, out.as_mut_ptr(), &[]).unwrap() };
    assert_eq!(out, [0x5a; 16], "contents unchanged");
}

/// The BAR device with the edu engine: transfers between the host pages and
/// the BAR run peer-to-peer by edu's DMA.
#[test]
fn unlinked_transfers_by_the_edu_engine_peer_to_peer() {
    in_child(
        "child_unlinked_transfers_by_the_edu_engine_peer_to_peer",
        Some(&format!("{IVSHMEM},bar=2,engine={EDU0}")),
    );
}

#[test]
#[ignore = "run in a child process"]
fn child_unlinked_transfers_by_the_edu_engine_peer_to_peer() {
    let p = Platform::get();
    let (cpu, bar) = (p.cpu().clone(), bar(p));
    let ctx = Context::new(&[cpu.clone(), bar.clone()]).unwrap();
    let (qc, qb) = (queue(&ctx, &cpu), queue(&ctx, &bar));
    const N: usize = 4096;
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, N, null_mut()) }.unwrap();
    write(&qc, &b, &pattern(N, 19));
    // Host pages → BAR by DMA (initialisation), then BAR → user memory.
    let mut out = vec![0u8; N];
    // SAFETY: blocking read into `out`.
    unsafe { commands::enqueue_read_buffer(&qb, &b, true, 0, N, out.as_mut_ptr(), &[]).unwrap() };
    assert_eq!(out, pattern(N, 19));
    assert_eq!(b.stats(Location::Device(bar.index)).bytes_in, N as u64);
    // BAR → host pages by DMA on the next map after a BAR write.
    write(&qb, &b, &pattern(N, 23));
    map_check_write(&qc, &b, &pattern(N, 23), &pattern(N, 29));
    assert_eq!(b.stats(Location::Host).bytes_in, N as u64);
}

#[test]
fn alloc_host_ptr_buffers_export_as_dma_bufs() {
    in_child("child_alloc_host_ptr_buffers_export_as_dma_bufs", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_alloc_host_ptr_buffers_export_as_dma_bufs() {
    let p = Platform::get();
    let cpu = p.cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let q = queue(&ctx, &cpu);
    const N: usize = 1 << 20;
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, N, null_mut()) }.unwrap();
    write(&q, &b, &pattern(N, 31));
    let udmabuf = Udmabuf::open().unwrap();
    let dmabuf = b.export_dmabuf(&udmabuf).unwrap();
    assert_eq!(dmabuf.size().unwrap(), N as u64);
    let m = dmabuf.map(Access::ReadWrite).unwrap();
    // SAFETY: the dma-buf mapping is `N` bytes; only read here.
    assert_eq!(unsafe { std::slice::from_raw_parts(m.as_ptr(), N) }, &pattern(N, 31)[..]);
    let mut user = [0u8; 64];
    // SAFETY: `user` outlives the buffer.
    let u = unsafe { Buffer::create(&ctx, mem_flags::USE_HOST_PTR, 64, user.as_mut_ptr()) }.unwrap();
    assert_eq!(err_kind(u.export_dmabuf(&udmabuf)), ClErrorKind::InvalidMemObject);
}

/// Two unlinked allocations (two BAR devices: the rig's two ivshmems): a
/// device-to-device transfer goes through a host allocation made for it
/// (seed 003: "device-to-device transfer is done with a host allocation as an
/// intermediary"). Needs `qemu/run-in-guest --ivshmem2`: the rig test
/// `buffer_moves_between_two_device_memories_through_the_host` runs it.
#[test]
#[ignore = "run by the rig test buffer_moves_between_two_device_memories_through_the_host"]
fn child_unlinked_to_unlinked_goes_through_a_host_allocation() {
    let p = Platform::get();
    let bars: Vec<Arc<Device>> = p.devices().iter().filter(|d| d.local_memory().is_some()).cloned().collect();
    assert_eq!(bars.len(), 2, "two BAR devices: {:?}, skipped {:?}", p.devices(), p.skipped());
    let ctx = Context::new(&bars).unwrap();
    let (qa, qb) = (queue(&ctx, &bars[0]), queue(&ctx, &bars[1]));
    let (la, lb, h) = (Location::Device(bars[0].index), Location::Device(bars[1].index), Location::Host);
    const N: usize = 256 << 10;
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, N, null_mut()) }.unwrap();
    write(&qa, &b, &pattern(N, 37));
    assert_eq!(b.stats(h), LocationStats::default(), "no host allocation yet");
    assert_eq!(read(&qb, &b), pattern(N, 37));
    assert_eq!((b.linked(&bars[0]), b.linked(&bars[1])), (Some(false), Some(false)));
    let hs = b.stats(h);
    assert_eq!((hs.allocations, hs.bytes_allocated, hs.bytes_in), (1, N as u64, N as u64), "the intermediary");
    assert_eq!(b.stats(la).bytes_out, N as u64);
    assert_eq!(b.stats(lb).bytes_in, N as u64);
    // Back the other way: B writes part of it, A reads it all.
    // SAFETY: blocking write of 16 bytes.
    unsafe { commands::enqueue_write_buffer(&qb, &b, true, 16, 16, [0xffu8; 16].as_ptr(), &[]).unwrap() };
    let mut expect = pattern(N, 37);
    expect[16..32].fill(0xff);
    assert_eq!(read(&qa, &b), expect);
    assert_eq!(b.stats(h).allocations, 1, "the host allocation is reused");
    assert_eq!((b.stats(lb).bytes_out, b.stats(la).bytes_in), (N as u64, N as u64));
}

/// Seed 000's issues 20-23 for USM device allocations that live in the BAR
/// (the context's lookup, not only its heap, must know them); and a copy
/// whose destination cannot be allocated on the BAR undoes the source's
/// fresh allocation there.
#[test]
fn bar_usm_pointers_and_failed_copies_change_nothing() {
    in_child("child_bar_usm_pointers_and_failed_copies_change_nothing", Some(&format!("{IVSHMEM},bar=2")));
}

#[test]
#[ignore = "run in a child process"]
fn child_bar_usm_pointers_and_failed_copies_change_nothing() {
    use dmabridge::ext::usm;
    let p = Platform::get();
    let (cpu, bar) = (p.cpu().clone(), bar(p));
    let ctx = Context::new(&[cpu.clone(), bar.clone()]).unwrap();
    let (qc, qb) = (queue(&ctx, &cpu), queue(&ctx, &bar));
    let dev = usm::device_mem_alloc(&ctx, &bar, &[], 4096, 0).unwrap().as_ptr();
    assert!(bar.local_memory().unwrap().contains(dev));
    // SAFETY (all calls): `dev` holds 4096 bytes; every call here fails before touching it,
    // or (the BAR queue's own device allocation) is a blocking read of 64 bytes.
    unsafe {
        assert_eq!(err_kind(Buffer::create(&ctx, mem_flags::USE_HOST_PTR, 64, dev)), ClErrorKind::InvalidHostPtr);
        assert_eq!(err_kind(Buffer::create(&ctx, mem_flags::COPY_HOST_PTR, 64, dev)), ClErrorKind::InvalidHostPtr);
        let b = Buffer::create(&ctx, 0, 64, null_mut()).unwrap();
        let r = commands::enqueue_read_buffer(&qc, &b, true, 0, 64, dev, &[]);
        assert_eq!(err_kind(r), ClErrorKind::InvalidHostPtr, "a device allocation of another device than the queue's");
        let pattern = std::slice::from_raw_parts(dev, 4);
        assert_eq!(err_kind(commands::enqueue_fill_buffer(&qc, &b, pattern, 0, 64, &[])), ClErrorKind::InvalidHostPtr);
        commands::enqueue_read_buffer(&qb, &b, true, 0, 64, dev, &[]).unwrap();
    }
    usm::mem_free(&ctx, dev).unwrap();

    let local = bar.local_memory().unwrap();
    // SAFETY: no host pointers.
    let (small, big) = unsafe {
        (
            Buffer::create(&ctx, 0, 4096, null_mut()).unwrap(),
            Buffer::create(&ctx, 0, local.size() * 2, null_mut()).unwrap(),
        )
    };
    let used = local.allocated();
    let r = commands::enqueue_copy_buffer(&qb, &small, &big, 0, 0, 4096, &[]);
    assert_eq!(err_kind(r), ClErrorKind::MemObjectAllocationFailure);
    assert_eq!(local.allocated(), used, "the source's fresh BAR allocation was undone");
    assert_eq!(small.linked(&bar), None);
    assert_eq!(small.stats(Location::Device(bar.index)), LocationStats::default());
}

/// A sub-page ALLOC_HOST_PTR buffer exports as a dma-buf that starts with its
/// bytes and holds nothing of any other buffer; data written by the BAR
/// device is moved to the host pages before the export.
#[test]
fn small_buffers_export_whole_pages_of_their_own() {
    in_child("child_small_buffers_export_whole_pages_of_their_own", Some(&format!("{IVSHMEM},bar=2")));
}

#[test]
#[ignore = "run in a child process"]
fn child_small_buffers_export_whole_pages_of_their_own() {
    let p = Platform::get();
    let (cpu, bar) = (p.cpu().clone(), bar(p));
    let ctx = Context::new(&[cpu.clone(), bar.clone()]).unwrap();
    let (qc, qb) = (queue(&ctx, &cpu), queue(&ctx, &bar));
    let udmabuf = Udmabuf::open().unwrap();
    // SAFETY: no host pointers.
    let (a, b) = unsafe {
        (
            Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, 100, null_mut()).unwrap(),
            Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, 100, null_mut()).unwrap(),
        )
    };
    write(&qc, &b, &[0xbb; 100]);
    write(&qb, &a, &pattern(100, 41)); // current only in the BAR
    let dmabuf = a.export_dmabuf(&udmabuf).unwrap();
    assert_eq!(dmabuf.size().unwrap(), 4096, "one whole page");
    let m = dmabuf.map(Access::Read).unwrap();
    // SAFETY: the mapping is 4096 bytes; only read.
    let bytes = unsafe { std::slice::from_raw_parts(m.as_ptr(), 4096) };
    assert_eq!(&bytes[..100], &pattern(100, 41)[..], "the BAR's data was moved to the host pages first");
    assert!(bytes[100..].iter().all(|&x| x != 0xbb), "no byte of the other buffer");
}

/// A dma-buf outlives the buffer it was exported from: after the buffer is
/// released its pages never go to a later buffer. The dma-buf keeps showing
/// the released buffer's last bytes, and writes through either side never
/// show through the other — for sub-page, page, pooled and large buffers.
#[test]
fn a_dma_buf_outlives_its_buffer_and_no_later_buffer_shares_its_pages() {
    in_child("child_a_dma_buf_outlives_its_buffer_and_no_later_buffer_shares_its_pages", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_a_dma_buf_outlives_its_buffer_and_no_later_buffer_shares_its_pages() {
    let p = Platform::get();
    let cpu = p.cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let q = queue(&ctx, &cpu);
    let udmabuf = Udmabuf::open().unwrap();
    for (i, size) in [100usize, 4096, 64 << 10, 1 << 20, 3 << 20].into_iter().enumerate() {
        let seed = 2 * i as u8 + 3;
        let old = pattern(size, seed);
        // SAFETY: no host pointer.
        let a = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, size, null_mut()) }.unwrap();
        write(&q, &a, &old);
        let dmabuf = a.export_dmabuf(&udmabuf).unwrap();
        let m = dmabuf.map(Access::ReadWrite).unwrap();
        let view = m.as_ptr();
        // SAFETY (every read of `view` below): the dma-buf mapping holds at least `size` bytes and
        // lives until the end of the iteration; this test is its only user.
        let shown = || unsafe { std::slice::from_raw_parts(view, size) }.to_vec();
        assert!(shown() == old, "{size} bytes: the dma-buf shows the buffer");
        drop(a);
        // Later buffers of the same size (the heap's first choice is the
        // slot just freed), each with bytes of its own.
        let later: Vec<(Arc<Buffer>, Vec<u8>)> = (0..4u8)
            .map(|k| {
                // SAFETY: no host pointer.
                let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, size, null_mut()) }.unwrap();
                let data = pattern(size, seed.wrapping_mul(17).wrapping_add(k + 1));
                write(&q, &b, &data);
                (b, data)
            })
            .collect();
        assert!(shown() == old, "{size} bytes: a later buffer's bytes show through the released one's dma-buf");
        // And the other way: writing through the dma-buf changes no later buffer.
        // SAFETY: as above, for writes.
        unsafe { view.write_bytes(0xee, size) };
        for (b, data) in &later {
            assert!(read(&q, b) == *data, "{size} bytes: a write through the old dma-buf reached a later buffer");
        }
        drop((m, dmabuf));
    }
}

/// An export that fails (a buffer beyond udmabuf's size limit) leaves no host
/// allocation behind that it made, and keeps the data of one that existed; a
/// sub-buffer is refused (it shares its parent's pages).
#[test]
fn failed_exports_leave_nothing_behind() {
    in_child("child_failed_exports_leave_nothing_behind", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_failed_exports_leave_nothing_behind() {
    let p = Platform::get();
    let cpu = p.cpu().clone();
    let udmabuf = Udmabuf::open().unwrap();
    let too_big = udmabuf.limits().size_limit as usize + 4096;
    // A host-unified device that allocates more than udmabuf exports.
    let big = dmabridge_tests::boundless_device(200, "big");
    let ctx = Context::new(&[cpu.clone(), big]).unwrap();
    let q = queue(&ctx, &cpu);
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, too_big, null_mut()) }.unwrap();
    assert_eq!(err_kind(b.export_dmabuf(&udmabuf)), ClErrorKind::OutOfResources);
    assert_eq!(b.stats(Location::Host), LocationStats::default(), "the host allocation it made was undone");
    // Pages that existed (the CPU's linked allocation) stay, with their data.
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &[0x5c], too_big - 64, 64, &[]).unwrap()]).unwrap();
    assert_eq!(err_kind(b.export_dmabuf(&udmabuf)), ClErrorKind::OutOfResources);
    let mut tail = [0u8; 64];
    // SAFETY: blocking read into `tail`.
    unsafe { commands::enqueue_read_buffer(&q, &b, true, too_big - 64, 64, tail.as_mut_ptr(), &[]).unwrap() };
    assert_eq!(tail, [0x5c; 64]);
    assert_eq!(b.linked(&cpu), Some(true));
    // A sub-buffer's bytes start inside its parent's pages.
    // SAFETY: no host pointer.
    let parent = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, 8192, null_mut()) }.unwrap();
    let sub = Buffer::create_sub_buffer(&parent, 0, BUFFER_CREATE_TYPE_REGION, 4096, 4096).unwrap();
    assert_eq!(err_kind(sub.export_dmabuf(&udmabuf)), ClErrorKind::InvalidMemObject);
    assert_eq!(parent.stats(Location::Host), LocationStats::default(), "nothing was allocated for it");
    assert_eq!(parent.export_dmabuf(&udmabuf).unwrap().size().unwrap(), 8192);
}
