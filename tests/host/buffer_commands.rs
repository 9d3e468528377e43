//! Buffer commands on the CPU device: read, write, copy, fill, map, unmap
//! and the rectangular variants, blocking and not, with events — and every
//! error each can return, with the buffer's contents and allocations left
//! as they were.

use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::usm;
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::rect::{self, CopyRect, HostRect};
use dmabridge::runtime::buffer::store::Location;
use dmabridge::runtime::buffer::{commands, mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::{command_type, Event};
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge_tests::{cpu_context, cpu_context_and_queue, cpu_device, err_kind};

fn filled(ctx: &Arc<Context>, size: usize) -> (Arc<Buffer>, Vec<u8>) {
    let data: Vec<u8> = (0..size).map(|i| (i * 13 + 5) as u8).collect();
    // SAFETY: COPY_HOST_PTR reads `data` now.
    let b = unsafe { Buffer::create(ctx, mem_flags::COPY_HOST_PTR, size, data.as_ptr().cast_mut()) }.unwrap();
    (b, data)
}

fn read_all(q: &Arc<Queue>, b: &Arc<Buffer>) -> Vec<u8> {
    let mut out = vec![0u8; b.size()];
    // SAFETY: blocking read into `out`.
    unsafe { commands::enqueue_read_buffer(q, b, true, 0, b.size(), out.as_mut_ptr(), &[]).unwrap() };
    out
}

#[test]
fn read_write_copy_fill_move_the_right_bytes() {
    let (ctx, q) = cpu_context_and_queue();
    let (a, data) = filled(&ctx, 4096);
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, 4096, null_mut()) }.unwrap();
    let e1 = commands::enqueue_copy_buffer(&q, &a, &b, 100, 200, 1000, &[]).unwrap();
    let e2 = commands::enqueue_fill_buffer(&q, &b, &[0xab, 0xcd], 0, 200, std::slice::from_ref(&e1)).unwrap();
    let patch = [9u8; 10];
    // SAFETY: non-blocking write of `patch`, which outlives the wait below.
    let e3 = unsafe { commands::enqueue_write_buffer(&q, &b, false, 1200, 10, patch.as_ptr(), &[e2]).unwrap() };
    Event::wait(std::slice::from_ref(&e3)).unwrap();
    assert_eq!(e1.command_type(), command_type::COPY_BUFFER);
    assert_eq!(e3.command_type(), command_type::WRITE_BUFFER);
    let out = read_all(&q, &b);
    assert!(out[..200].chunks(2).all(|c| c == [0xab, 0xcd]));
    assert_eq!(&out[200..1200], &data[100..1100]);
    assert_eq!(&out[1200..1210], &patch);
    // Within one buffer, non-overlapping ranges.
    Event::wait(&[commands::enqueue_copy_buffer(&q, &a, &a, 0, 2048, 1024, &[]).unwrap()]).unwrap();
    let out = read_all(&q, &a);
    assert_eq!(&out[2048..3072], &data[..1024]);
}

#[test]
fn rect_commands_move_rows() {
    let (ctx, q) = cpu_context_and_queue();
    // A 2-slice volume of 4 rows x 8 bytes.
    let (b, data) = filled(&ctx, 64);
    let r = HostRect {
        buffer_origin: [2, 1, 0],
        host_origin: [1, 0, 0],
        region: [3, 2, 2],
        buffer_row_pitch: 8,
        buffer_slice_pitch: 32,
        host_row_pitch: 4,
        host_slice_pitch: 8,
    };
    let mut out = [0u8; 16];
    // SAFETY: blocking; the host rectangle ends at 1 + 1*8 + 1*4 + 3 = 16 bytes.
    unsafe { rect::enqueue_read_buffer_rect(&q, &b, true, &r, out.as_mut_ptr(), &[]).unwrap() };
    for z in 0..2 {
        for y in 0..2 {
            let src = 2 + (y + 1) * 8 + z * 32;
            let dst = 1 + y * 4 + z * 8;
            assert_eq!(&out[dst..dst + 3], &data[src..src + 3], "row {y} of slice {z}");
        }
    }
    // Write them back one row lower, then copy a rect to another buffer.
    let w = HostRect { buffer_origin: [2, 2, 0], ..r };
    // SAFETY: blocking; `out` as above.
    unsafe { rect::enqueue_write_buffer_rect(&q, &b, true, &w, out.as_ptr(), &[]).unwrap() };
    let now = read_all(&q, &b);
    assert_eq!(&now[2 + 2 * 8..2 + 2 * 8 + 3], &data[2 + 8..2 + 8 + 3]);
    // SAFETY: no host pointer.
    let c = unsafe { Buffer::create(&ctx, 0, 64, null_mut()) }.unwrap();
    let cr = CopyRect { region: [8, 4, 2], src_row_pitch: 8, dst_row_pitch: 8, ..Default::default() };
    Event::wait(&[rect::enqueue_copy_buffer_rect(&q, &b, &c, &cr, &[]).unwrap()]).unwrap();
    assert_eq!(read_all(&q, &c), now);
}

#[test]
fn rect_errors() {
    let (ctx, q) = cpu_context_and_queue();
    let (b, data) = filled(&ctx, 64);
    let mut out = [0u8; 64];
    let read = |r: &HostRect, p: *mut u8| {
        // SAFETY: `out` holds 64 bytes, enough for every accepted rectangle here.
        err_kind(unsafe { rect::enqueue_read_buffer_rect(&q, &b, true, r, p, &[]) })
    };
    let ok = HostRect { region: [8, 8, 1], buffer_row_pitch: 8, ..Default::default() };
    let p = out.as_mut_ptr();
    assert_eq!(read(&HostRect { region: [0, 1, 1], ..ok }, p), ClErrorKind::InvalidValue);
    assert_eq!(read(&HostRect { buffer_row_pitch: 4, ..ok }, p), ClErrorKind::InvalidValue);
    assert_eq!(read(&HostRect { buffer_slice_pitch: 60, ..ok }, p), ClErrorKind::InvalidValue);
    assert_eq!(read(&HostRect { host_slice_pitch: 68, ..ok }, p), ClErrorKind::InvalidValue);
    assert_eq!(read(&HostRect { buffer_origin: [1, 0, 0], ..ok }, p), ClErrorKind::InvalidValue, "past the end");
    assert_eq!(read(&ok, null_mut()), ClErrorKind::InvalidValue);
    let same = CopyRect { region: [4, 4, 1], src_row_pitch: 8, dst_row_pitch: 8, ..Default::default() };
    let copy = |r: &CopyRect| err_kind(rect::enqueue_copy_buffer_rect(&q, &b, &b, r, &[]));
    assert_eq!(copy(&CopyRect { dst_origin: [2, 0, 0], ..same }), ClErrorKind::MemCopyOverlap);
    assert_eq!(copy(&CopyRect { dst_origin: [0, 1, 0], ..same }), ClErrorKind::MemCopyOverlap);
    assert_eq!(copy(&CopyRect { dst_row_pitch: 16, region: [4, 2, 1], ..same }), ClErrorKind::InvalidValue);
    // Interleaved rows of one buffer do not overlap.
    Event::wait(&[
        rect::enqueue_copy_buffer_rect(&q, &b, &b, &CopyRect { dst_origin: [4, 0, 0], ..same }, &[]).unwrap()
    ])
    .unwrap();
    let now = read_all(&q, &b);
    for y in 0..4 {
        assert_eq!(&now[y * 8 + 4..y * 8 + 8], &data[y * 8..y * 8 + 4]);
    }
}

#[test]
fn every_error_of_read_write_copy_fill_leaves_the_buffer_as_it_was() {
    let (ctx, q) = cpu_context_and_queue();
    let (b, data) = filled(&ctx, 1024);
    let before_host = b.stats(Location::Host);
    let before_dev = b.stats(Location::Device(cpu_device().index));
    let mut out = vec![0u8; 2048];
    let o = out.as_mut_ptr();
    // SAFETY (every call below): `out` holds 2048 bytes and outlives the calls; all of them fail or block.
    unsafe {
        let rd = |off, size, p| err_kind(commands::enqueue_read_buffer(&q, &b, true, off, size, p, &[]));
        assert_eq!(rd(0, 0, o), ClErrorKind::InvalidValue, "size 0");
        assert_eq!(rd(1000, 25, o), ClErrorKind::InvalidValue, "past the end");
        assert_eq!(rd(usize::MAX, 2, o), ClErrorKind::InvalidValue, "overflow");
        assert_eq!(rd(0, 16, null_mut()), ClErrorKind::InvalidValue, "NULL ptr");
        let wr = |off, size, p: *const u8| err_kind(commands::enqueue_write_buffer(&q, &b, true, off, size, p, &[]));
        assert_eq!(wr(0, 0, o), ClErrorKind::InvalidValue);
        assert_eq!(wr(1, 1024, o), ClErrorKind::InvalidValue);
        assert_eq!(wr(0, 16, std::ptr::null()), ClErrorKind::InvalidValue);
    }
    let cp = |s, d, n| err_kind(commands::enqueue_copy_buffer(&q, &b, &b, s, d, n, &[]));
    assert_eq!(cp(0, 512, 0), ClErrorKind::InvalidValue);
    assert_eq!(cp(0, 1000, 100), ClErrorKind::InvalidValue, "destination past the end");
    assert_eq!(cp(0, 10, 100), ClErrorKind::MemCopyOverlap);
    let s1 = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 0, 512).unwrap();
    let s2 = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 256, 512).unwrap();
    assert_eq!(
        err_kind(commands::enqueue_copy_buffer(&q, &s1, &s2, 300, 0, 100, &[])),
        ClErrorKind::MemCopyOverlap,
        "sub-buffers of one buffer overlapping in the parent"
    );
    let fill = |pat: &[u8], off, n| err_kind(commands::enqueue_fill_buffer(&q, &b, pat, off, n, &[]));
    assert_eq!(fill(&[], 0, 16), ClErrorKind::InvalidValue);
    assert_eq!(fill(&[1, 2, 3], 0, 18), ClErrorKind::InvalidValue, "pattern size 3");
    assert_eq!(fill(&[0; 256], 0, 256), ClErrorKind::InvalidValue, "pattern larger than 128");
    assert_eq!(fill(&[1, 2, 3, 4], 2, 16), ClErrorKind::InvalidValue, "offset not a multiple");
    assert_eq!(fill(&[1, 2, 3, 4], 0, 18), ClErrorKind::InvalidValue, "size not a multiple");
    assert_eq!(fill(&[1, 2, 3, 4], 1020, 8), ClErrorKind::InvalidValue, "past the end");
    assert_eq!(b.stats(Location::Host), before_host, "no allocation or transfer");
    assert_eq!(b.stats(Location::Device(cpu_device().index)), before_dev);
    assert_eq!(read_all(&q, &b), data, "contents unchanged");
}

#[test]
fn usm_pointers_as_host_memory_follow_seed_000_issues_22_and_23() {
    let (ctx, q) = cpu_context_and_queue();
    let cpu = cpu_device();
    let (b, data) = filled(&ctx, 256);
    let host = usm::host_mem_alloc(&ctx, &[], 256, 0).unwrap().as_ptr();
    let dev = usm::device_mem_alloc(&ctx, &cpu, &[], 256, 0).unwrap().as_ptr();
    let shared = usm::shared_mem_alloc(&ctx, None, &[], 256, 0).unwrap().as_ptr();
    // SAFETY: each allocation holds 256 bytes and outlives the blocking calls.
    unsafe {
        commands::enqueue_read_buffer(&q, &b, true, 0, 256, host, &[]).unwrap();
        commands::enqueue_read_buffer(&q, &b, true, 0, 256, dev, &[]).unwrap();
        assert_eq!(std::slice::from_raw_parts(dev, 256), &data[..]);
        assert_eq!(
            err_kind(commands::enqueue_read_buffer(&q, &b, true, 0, 256, shared, &[])),
            ClErrorKind::InvalidHostPtr
        );
        assert_eq!(
            err_kind(commands::enqueue_write_buffer(&q, &b, true, 0, 256, shared, &[])),
            ClErrorKind::InvalidHostPtr
        );
        let pattern = std::slice::from_raw_parts(dev, 4);
        assert_eq!(err_kind(commands::enqueue_fill_buffer(&q, &b, pattern, 0, 256, &[])), ClErrorKind::InvalidHostPtr);
        let pattern = std::slice::from_raw_parts(host, 4);
        Event::wait(&[commands::enqueue_fill_buffer(&q, &b, pattern, 0, 256, &[]).unwrap()]).unwrap();
    }
    for p in [host, dev, shared] {
        usm::mem_free(&ctx, p).unwrap();
    }
}

#[test]
fn host_access_flags_refuse_what_they_exclude() {
    let (ctx, q) = cpu_context_and_queue();
    use mem_flags::*;
    let mut out = [0u8; 16];
    let o = out.as_mut_ptr();
    for (flags, can_read, can_write) in
        [(HOST_WRITE_ONLY, false, true), (HOST_READ_ONLY, true, false), (HOST_NO_ACCESS, false, false)]
    {
        // SAFETY: no host pointer.
        let b = unsafe { Buffer::create(&ctx, flags, 16, null_mut()) }.unwrap();
        // SAFETY: `out` holds 16 bytes; the calls block.
        let (r, w) = unsafe {
            (
                commands::enqueue_read_buffer(&q, &b, true, 0, 16, o, &[]),
                commands::enqueue_write_buffer(&q, &b, true, 0, 16, o, &[]),
            )
        };
        assert_eq!(r.is_ok(), can_read, "read of {flags:#x}");
        assert_eq!(w.is_ok(), can_write, "write of {flags:#x}");
        if !can_read {
            assert_eq!(
                err_kind(map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, 16)),
                ClErrorKind::InvalidOperation
            );
        }
        if !can_write {
            let m = map::enqueue_map_buffer(&q, &b, true, map_flags::WRITE, 0, 16);
            assert_eq!(err_kind(m), ClErrorKind::InvalidOperation);
            let m = map::enqueue_map_buffer(&q, &b, true, map_flags::WRITE_INVALIDATE_REGION, 0, 16);
            assert_eq!(err_kind(m), ClErrorKind::InvalidOperation);
        }
        assert_eq!(b.map_count(), 0, "failed maps leave no map behind");
    }
}

#[test]
fn map_errors_and_map_counts() {
    let (ctx, q) = cpu_context_and_queue();
    let (b, data) = filled(&ctx, 256);
    use map_flags::*;
    let m = |flags, off, n| err_kind(map::enqueue_map_buffer(&q, &b, true, flags, off, n));
    assert_eq!(m(READ, 0, 0), ClErrorKind::InvalidValue);
    assert_eq!(m(READ, 200, 100), ClErrorKind::InvalidValue);
    assert_eq!(m(1 << 3, 0, 16), ClErrorKind::InvalidValue, "unknown map flag");
    assert_eq!(m(READ | WRITE_INVALIDATE_REGION, 0, 16), ClErrorKind::InvalidValue);
    assert_eq!(m(WRITE | WRITE_INVALIDATE_REGION, 0, 16), ClErrorKind::InvalidValue);
    assert_eq!(b.map_count(), 0);
    let (p1, _) = map::enqueue_map_buffer(&q, &b, true, READ, 0, 16).unwrap();
    let (p2, _) = map::enqueue_map_buffer(&q, &b, true, READ, 0, 16).unwrap();
    assert_eq!(p1, p2);
    assert_eq!(b.map_count(), 2);
    let stray = [0u8; 4];
    assert_eq!(
        err_kind(map::enqueue_unmap_mem_object(&q, &b, stray.as_ptr().cast_mut(), &[])),
        ClErrorKind::InvalidValue
    );
    // SAFETY: an interior pointer of the mapping, never dereferenced.
    let interior = unsafe { p1.as_ptr().add(1) };
    assert_eq!(err_kind(map::enqueue_unmap_mem_object(&q, &b, interior, &[])), ClErrorKind::InvalidValue);
    map::enqueue_unmap_mem_object(&q, &b, p1.as_ptr(), &[]).unwrap();
    map::enqueue_unmap_mem_object(&q, &b, p2.as_ptr(), &[]).unwrap();
    assert_eq!(err_kind(map::enqueue_unmap_mem_object(&q, &b, p1.as_ptr(), &[])), ClErrorKind::InvalidValue);
    q.finish().unwrap();
    assert_eq!(b.map_count(), 0);
    assert_eq!(read_all(&q, &b), data);
}

#[test]
fn commands_across_contexts_and_misaligned_sub_buffers_are_refused() {
    let (ctx, q) = cpu_context_and_queue();
    let other = cpu_context();
    let (b, _) = filled(&ctx, 1024);
    let (x, _) = filled(&other, 1024);
    let mut out = [0u8; 16];
    // SAFETY: `out` holds 16 bytes; the call fails.
    let r = unsafe { commands::enqueue_read_buffer(&q, &x, true, 0, 16, out.as_mut_ptr(), &[]) };
    assert_eq!(err_kind(r), ClErrorKind::InvalidContext);
    assert_eq!(err_kind(commands::enqueue_copy_buffer(&q, &b, &x, 0, 0, 16, &[])), ClErrorKind::InvalidContext);
    assert_eq!(err_kind(commands::enqueue_fill_buffer(&q, &x, &[0], 0, 16, &[])), ClErrorKind::InvalidContext);
    assert_eq!(err_kind(map::enqueue_map_buffer(&q, &x, true, 1, 0, 16)), ClErrorKind::InvalidContext);
    let foreign = Event::user(&other);
    assert_eq!(
        err_kind(commands::enqueue_fill_buffer(&q, &b, &[0], 0, 16, std::slice::from_ref(&foreign))),
        ClErrorKind::InvalidContext,
        "a wait-list event of another context"
    );
    assert_eq!(
        err_kind(map::enqueue_map_buffer_after(&q, &b, false, 1, 0, 16, &[foreign])),
        ClErrorKind::InvalidContext
    );
    assert_eq!(b.map_count(), 0);
}

#[test]
fn a_blocking_command_after_a_failed_event_reports_it() {
    let (ctx, q) = cpu_context_and_queue();
    let (b, data) = filled(&ctx, 64);
    let gate = Event::user(&ctx);
    let patch = [0u8; 64];
    // SAFETY: `patch` outlives the queue's work (the queue is finished below).
    let w =
        unsafe { commands::enqueue_write_buffer(&q, &b, false, 0, 64, patch.as_ptr(), std::slice::from_ref(&gate)) }
            .unwrap();
    gate.set_user_status(-5).unwrap();
    assert!(Event::wait(&[w]).is_err());
    let mut out = [0u8; 64];
    // SAFETY: `out` holds 64 bytes.
    let r =
        unsafe { commands::enqueue_read_buffer(&q, &b, true, 0, 64, out.as_mut_ptr(), std::slice::from_ref(&gate)) };
    assert_eq!(err_kind(r), ClErrorKind::ExecStatusErrorForEventsInWaitList);
    let m = map::enqueue_map_buffer_after(&q, &b, true, map_flags::READ, 0, 64, &[gate]);
    assert_eq!(err_kind(m), ClErrorKind::ExecStatusErrorForEventsInWaitList);
    q.finish().unwrap();
    assert_eq!(read_all(&q, &b), data, "the failed write wrote nothing");
}

#[test]
fn an_out_of_order_queue_runs_buffer_commands_with_their_events() {
    let cpu = cpu_device();
    let ctx = cpu_context();
    let q = Queue::new(&ctx, &cpu, QueueProps { out_of_order: true, profiling: false }).unwrap();
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, 1 << 20, null_mut()) }.unwrap();
    let fill = commands::enqueue_fill_buffer(&q, &b, &[3; 8], 0, 1 << 20, &[]).unwrap();
    let (p, map_ev) = map::enqueue_map_buffer_after(&q, &b, false, map_flags::READ, 0, 1 << 20, &[fill]).unwrap();
    Event::wait(std::slice::from_ref(&map_ev)).unwrap();
    // SAFETY: the map completed; 1 MiB mapped for reading.
    assert!(unsafe { std::slice::from_raw_parts(p.as_ptr(), 1 << 20) }.iter().all(|&x| x == 3));
    let un = map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[map_ev]).unwrap();
    Event::wait(&[un]).unwrap();
}

/// `CL_MISALIGNED_SUB_BUFFER_OFFSET` at enqueue: a sub-buffer whose origin
/// suits one device of the context but not the queue's. The platform's
/// devices all align to 128 bytes, so the second device here is the CPU
/// device's description with a 4 KiB `CL_DEVICE_MEM_BASE_ADDR_ALIGN`.
#[test]
fn a_sub_buffer_misaligned_for_the_queues_device_is_refused_at_enqueue() {
    use dmabridge::runtime::device::Device;
    let cpu = cpu_device();
    let strict = Arc::new(Device {
        index: 99,
        name: "strict CPU".into(),
        device_type: cpu.device_type,
        max_mem_alloc_size: cpu.max_mem_alloc_size,
        max_alignment: 4096,
        host_unified_memory: true,
        usm: cpu.usm,
        svm: cpu.svm,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    });
    let ctx = Context::new(&[cpu.clone(), strict.clone()]).unwrap();
    let q = Queue::new(&ctx, &strict, QueueProps::default()).unwrap();
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, 8192, null_mut()) }.unwrap();
    let s = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 128, 256).unwrap();
    assert_eq!(
        err_kind(commands::enqueue_fill_buffer(&q, &s, &[0], 0, 256, &[])),
        ClErrorKind::MisalignedSubBufferOffset
    );
    assert_eq!(err_kind(map::enqueue_map_buffer(&q, &s, true, 1, 0, 256)), ClErrorKind::MisalignedSubBufferOffset);
    let aligned = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 4096, 256).unwrap();
    Event::wait(&[commands::enqueue_fill_buffer(&q, &aligned, &[0], 0, 256, &[]).unwrap()]).unwrap();
}

#[test]
fn rect_and_unmap_errors_the_other_tests_leave_out() {
    let (ctx, q) = cpu_context_and_queue();
    let (other_ctx, other_q) = cpu_context_and_queue();
    let _ = other_ctx;
    use mem_flags::*;
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, HOST_WRITE_ONLY, 64, null_mut()) }.unwrap();
    // SAFETY: no host pointer.
    let c = unsafe { Buffer::create(&ctx, HOST_READ_ONLY, 64, null_mut()) }.unwrap();
    let r = HostRect { region: [8, 8, 1], ..Default::default() };
    let mut out = [0u8; 64];
    // SAFETY (both calls): `out` holds the 64-byte packed rectangle; they fail before any access.
    unsafe {
        let rd = rect::enqueue_read_buffer_rect(&q, &b, true, &r, out.as_mut_ptr(), &[]);
        assert_eq!(err_kind(rd), ClErrorKind::InvalidOperation, "rect read of a HOST_WRITE_ONLY buffer");
        let wr = rect::enqueue_write_buffer_rect(&q, &c, true, &r, out.as_ptr(), &[]);
        assert_eq!(err_kind(wr), ClErrorKind::InvalidOperation, "rect write of a HOST_READ_ONLY buffer");
        let wr = rect::enqueue_write_buffer_rect(&q, &b, true, &HostRect { region: [8, 9, 1], ..r }, out.as_ptr(), &[]);
        assert_eq!(err_kind(wr), ClErrorKind::InvalidValue, "rect write past the end");
    }
    let cr = CopyRect { region: [8, 8, 1], src_origin: [0, 1, 0], ..Default::default() };
    assert_eq!(err_kind(rect::enqueue_copy_buffer_rect(&q, &b, &c, &cr, &[])), ClErrorKind::InvalidValue);
    assert_eq!(b.stats(Location::Device(cpu_device().index)).allocations, 0, "failed calls allocate nothing");
    // Unmap through a queue of another context.
    let (p, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::WRITE, 0, 64).unwrap();
    assert_eq!(err_kind(map::enqueue_unmap_mem_object(&other_q, &b, p.as_ptr(), &[])), ClErrorKind::InvalidContext);
    assert_eq!(b.map_count(), 1, "the map is still outstanding");
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[]).unwrap()]).unwrap();
}

/// OpenCL allows a read or write that names a USE_HOST_PTR buffer's own
/// memory (`host_ptr + offset`): on the host-unified CPU device that is the
/// buffer itself, so nothing moves (and no non-overlapping copy is made of
/// one range onto itself).
#[test]
fn reading_a_use_host_ptr_buffer_into_its_own_memory_is_a_no_op() {
    let (ctx, q) = cpu_context_and_queue();
    let mut data: Vec<u8> = (0..4096u32).map(|i| (i * 3) as u8).collect();
    let expect = data.clone();
    let p = data.as_mut_ptr();
    // SAFETY: `data` outlives the buffer; it is only touched through the buffer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::USE_HOST_PTR, 4096, p) }.unwrap();
    // SAFETY: blocking; the ranges are the buffer's own memory.
    unsafe {
        commands::enqueue_read_buffer(&q, &b, true, 100, 1000, p.add(100), &[]).unwrap();
        commands::enqueue_write_buffer(&q, &b, true, 0, 4096, p, &[]).unwrap();
        // Overlapping but not equal: moved as memmove would.
        commands::enqueue_read_buffer(&q, &b, true, 0, 8, p.add(4), &[]).unwrap();
    }
    drop(b);
    assert_eq!(&data[..4], &expect[..4]);
    assert_eq!(&data[4..12], &expect[..8]);
    assert_eq!(&data[12..], &expect[12..]);
}

#[test]
fn map_flags_zero_and_rect_pitch_rules_follow_opencl() {
    let (ctx, q) = cpu_context_and_queue();
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::HOST_READ_ONLY, 256, null_mut()) }.unwrap();
    // Flags 0 name neither CL_MAP_READ nor CL_MAP_WRITE: no host-access rule applies.
    let (p, _) = map::enqueue_map_buffer(&q, &b, true, 0, 0, 256).unwrap();
    map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[]).unwrap();
    // Same buffer, one pitch differing: allowed (only both differing is an error).
    let r = CopyRect {
        src_origin: [0, 0, 0],
        dst_origin: [0, 0, 2],
        region: [8, 2, 1],
        src_row_pitch: 8,
        dst_row_pitch: 8,
        src_slice_pitch: 32,
        dst_slice_pitch: 64,
    };
    Event::wait(&[rect::enqueue_copy_buffer_rect(&q, &b, &b, &r, &[]).unwrap()]).unwrap();
    let both = CopyRect { dst_row_pitch: 16, ..r };
    assert_eq!(err_kind(rect::enqueue_copy_buffer_rect(&q, &b, &b, &both, &[])), ClErrorKind::InvalidValue);
}

#[test]
fn a_map_that_fails_on_its_wait_list_leaves_no_host_allocation() {
    let (ctx, q) = cpu_context_and_queue();
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, 0, 4096, null_mut()) }.unwrap();
    let gate = Event::user(&ctx);
    gate.set_user_status(-5).unwrap();
    let m = map::enqueue_map_buffer_after(&q, &b, true, map_flags::READ, 0, 4096, std::slice::from_ref(&gate));
    assert_eq!(err_kind(m), ClErrorKind::ExecStatusErrorForEventsInWaitList);
    assert_eq!(b.stats(Location::Host), Default::default(), "the host allocation was undone");
    assert_eq!(b.map_count(), 0);
    let mut out = [0u8; 16];
    // SAFETY: `out` holds 16 bytes; the call fails.
    let r =
        unsafe { commands::enqueue_read_buffer(&q, &b, true, 0, 16, out.as_mut_ptr(), std::slice::from_ref(&gate)) };
    assert_eq!(err_kind(r), ClErrorKind::ExecStatusErrorForEventsInWaitList);
    assert_eq!(b.linked(&cpu_device()), None, "the device allocation was undone");
    assert_eq!(b.stats(Location::Device(cpu_device().index)), Default::default());
}

/// The remaining error rules of buffer creation, sub-buffers and commands,
/// one line each.
#[test]
fn the_remaining_error_rules_one_by_one() {
    use mem_flags::*;
    let (ctx, q) = cpu_context_and_queue();
    let (_other, other_q) = cpu_context_and_queue();
    let create = |flags| {
        // SAFETY: no host pointer.
        err_kind(unsafe { Buffer::create(&ctx, flags, 64, null_mut()) })
    };
    assert_eq!(create(READ_WRITE | WRITE_ONLY), ClErrorKind::InvalidValue);
    assert_eq!(create(HOST_WRITE_ONLY | HOST_READ_ONLY), ClErrorKind::InvalidValue);
    assert_eq!(create(HOST_WRITE_ONLY | HOST_NO_ACCESS), ClErrorKind::InvalidValue);
    let sub_err = |parent_flags, flags| {
        // SAFETY: no host pointer.
        let p = unsafe { Buffer::create(&ctx, parent_flags, 4096, null_mut()) }.unwrap();
        err_kind(Buffer::create_sub_buffer(&p, flags, BUFFER_CREATE_TYPE_REGION, 0, 64))
    };
    assert_eq!(sub_err(READ_ONLY, WRITE_ONLY), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(READ_ONLY, READ_WRITE), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(HOST_WRITE_ONLY, HOST_READ_ONLY), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(HOST_NO_ACCESS, HOST_READ_ONLY), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(HOST_NO_ACCESS, HOST_WRITE_ONLY), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(0, ALLOC_HOST_PTR), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(0, COPY_HOST_PTR), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(0, 1 << 12), ClErrorKind::InvalidValue);
    assert_eq!(sub_err(0, READ_ONLY | WRITE_ONLY), ClErrorKind::InvalidValue);

    let (b, data) = filled(&ctx, 1024);
    let mut out = [0u8; 64];
    // SAFETY (every call below): `out` holds 64 bytes; each call fails before using it, or blocks.
    unsafe {
        let w = commands::enqueue_write_buffer(&other_q, &b, true, 0, 16, out.as_ptr(), &[]);
        assert_eq!(err_kind(w), ClErrorKind::InvalidContext, "write through another context's queue");
        let r = HostRect { region: [8, 2, 1], host_row_pitch: 4, ..Default::default() };
        let rr = rect::enqueue_read_buffer_rect(&q, &b, true, &r, out.as_mut_ptr(), &[]);
        assert_eq!(err_kind(rr), ClErrorKind::InvalidValue, "host_row_pitch below the row");
        let r = HostRect { region: [8, 2, 1], ..Default::default() };
        let rr = rect::enqueue_read_buffer_rect(&other_q, &b, true, &r, out.as_mut_ptr(), &[]);
        assert_eq!(err_kind(rr), ClErrorKind::InvalidContext);
        let gate = Event::user(&ctx);
        gate.set_user_status(-1).unwrap();
        let w = commands::enqueue_write_buffer(&q, &b, true, 0, 16, out.as_ptr(), std::slice::from_ref(&gate));
        assert_eq!(err_kind(w), ClErrorKind::ExecStatusErrorForEventsInWaitList);
    }
    let shared = dmabridge::ext::usm::shared_mem_alloc(&ctx, None, &[], 64, 0).unwrap().as_ptr();
    // SAFETY: `shared` holds 64 bytes; the fill refuses it before reading.
    let pattern = unsafe { std::slice::from_raw_parts(shared, 4) };
    assert_eq!(err_kind(commands::enqueue_fill_buffer(&q, &b, pattern, 0, 64, &[])), ClErrorKind::InvalidHostPtr);
    usm::mem_free(&ctx, shared).unwrap();
    assert_eq!(err_kind(commands::enqueue_copy_buffer(&q, &b, &b, 1000, 0, 100, &[])), ClErrorKind::InvalidValue);
    // Adjacent ranges in one buffer do not overlap.
    Event::wait(&[commands::enqueue_copy_buffer(&q, &b, &b, 0, 100, 100, &[]).unwrap()]).unwrap();
    let cr = CopyRect { region: [8, 2, 1], src_slice_pitch: 12, ..Default::default() };
    assert_eq!(
        err_kind(rect::enqueue_copy_buffer_rect(&q, &b, &b, &cr, &[])),
        ClErrorKind::InvalidValue,
        "slice pitch"
    );
    let cr = CopyRect { region: [8, 2, 1], dst_origin: [0, 0, 64], ..Default::default() };
    assert_eq!(
        err_kind(rect::enqueue_copy_buffer_rect(&q, &b, &b, &cr, &[])),
        ClErrorKind::InvalidValue,
        "dst past the end"
    );
    // A sub-buffer's mapping is not the parent's to unmap.
    let s = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 512, 256).unwrap();
    let (p, _) = map::enqueue_map_buffer(&q, &s, true, map_flags::READ, 0, 256).unwrap();
    assert_eq!(err_kind(map::enqueue_unmap_mem_object(&q, &b, p.as_ptr(), &[])), ClErrorKind::InvalidValue);
    map::enqueue_unmap_mem_object(&q, &s, p.as_ptr(), &[]).unwrap();
    q.finish().unwrap();
    let now = read_all(&q, &b);
    assert_eq!(&now[100..200], &data[..100]);
    assert_eq!(&now[200..], &data[200..]);
}

/// Offsets, sizes and patterns near `usize::MAX`: every linear command and
/// map answers `CL_INVALID_VALUE`, allocates nothing and changes no byte.
#[test]
fn hostile_offsets_and_sizes_of_linear_commands_are_invalid_values() {
    let (ctx, q) = cpu_context_and_queue();
    let (b, data) = filled(&ctx, 4096);
    let dev = Location::Device(cpu_device().index);
    let before = (b.stats(Location::Host), b.stats(dev));
    let (m, n) = (usize::MAX, usize::MAX - 3);
    let ranges = [(m, 1), (1, m), (m, m), (n, 4), (4, n), (4096, 1), (4092, 8), (m - 4095, 4096), (0, 4097)];
    let mut out = vec![0u8; 4096];
    for (off, size) in ranges {
        // SAFETY (both calls): they fail before touching `out`.
        unsafe {
            let r = commands::enqueue_read_buffer(&q, &b, true, off, size, out.as_mut_ptr(), &[]);
            assert_eq!(err_kind(r), ClErrorKind::InvalidValue, "read {off}+{size}");
            let w = commands::enqueue_write_buffer(&q, &b, true, off, size, out.as_ptr(), &[]);
            assert_eq!(err_kind(w), ClErrorKind::InvalidValue, "write {off}+{size}");
        }
        let c = commands::enqueue_copy_buffer(&q, &b, &b, off, 0, size, &[]);
        assert_eq!(err_kind(c), ClErrorKind::InvalidValue, "copy from {off}+{size}");
        let c = commands::enqueue_copy_buffer(&q, &b, &b, 0, off, size, &[]);
        assert_eq!(err_kind(c), ClErrorKind::InvalidValue, "copy to {off}+{size}");
        // The same ranges, rounded up to whole patterns (as far as usize goes).
        let up = |x: usize, p: usize| x.checked_next_multiple_of(p).unwrap_or(m & !(p - 1));
        let f = commands::enqueue_fill_buffer(&q, &b, &[1, 2, 3, 4], up(off, 4), up(size, 4), &[]);
        assert_eq!(err_kind(f), ClErrorKind::InvalidValue, "fill {off}+{size}");
        let f = commands::enqueue_fill_buffer(&q, &b, &[0; 128], up(off, 128), up(size, 128), &[]);
        assert_eq!(err_kind(f), ClErrorKind::InvalidValue, "fill of 128-byte patterns {off}+{size}");
        let mp = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, off, size);
        assert_eq!(err_kind(mp), ClErrorKind::InvalidValue, "map {off}+{size}");
    }
    // A host pointer whose bytes would wrap around the address space.
    let wraps = (usize::MAX - 15) as *mut u8;
    // SAFETY (both calls): refused before `wraps` is touched.
    unsafe {
        let r = commands::enqueue_read_buffer(&q, &b, true, 0, 64, wraps, &[]);
        assert_eq!(err_kind(r), ClErrorKind::InvalidValue, "read into memory that wraps around");
        let w = commands::enqueue_write_buffer(&q, &b, true, 0, 64, wraps, &[]);
        assert_eq!(err_kind(w), ClErrorKind::InvalidValue, "write from memory that wraps around");
    }
    assert_eq!((b.stats(Location::Host), b.stats(dev)), before, "no allocation or transfer");
    assert_eq!(read_all(&q, &b), data);
}

/// Rectangles whose origin, region or pitches overflow `usize` on either
/// side — region products, pitch products, origin + region, and a host
/// rectangle that wraps around the address space — are `CL_INVALID_VALUE`,
/// allocate nothing and change no byte.
#[test]
fn hostile_rectangles_are_invalid_values() {
    let (ctx, q) = cpu_context_and_queue();
    let (b, data) = filled(&ctx, 4096);
    // SAFETY: no host pointer.
    let fresh = unsafe { Buffer::create(&ctx, 0, 4096, null_mut()) }.unwrap();
    let dev = Location::Device(cpu_device().index);
    let m = usize::MAX;
    let half = 1usize << (usize::BITS - 1);
    let ok = HostRect { region: [8, 8, 2], buffer_row_pitch: 16, ..Default::default() };
    let hostile = [
        HostRect { region: [m, 1, 1], ..ok },
        HostRect { region: [1, m, 1], ..ok },
        HostRect { region: [1, 1, m], ..ok },
        HostRect { region: [m, m, m], ..ok },
        HostRect { region: [8, 2, 2], buffer_row_pitch: half, ..ok },
        HostRect { region: [8, 2, 2], buffer_row_pitch: half, buffer_slice_pitch: half, ..ok },
        HostRect { region: [8, 1, 2], buffer_row_pitch: half, buffer_slice_pitch: half, ..ok },
        HostRect { region: [8, 2, 2], buffer_row_pitch: 16, buffer_slice_pitch: m - 15, ..ok },
        HostRect { region: [8, 2, 2], host_row_pitch: half, ..ok },
        HostRect { region: [8, 2, 2], host_row_pitch: 8, host_slice_pitch: m & !7, ..ok },
        HostRect { region: [8, 3, 1], host_row_pitch: m / 2, ..ok },
        HostRect { buffer_origin: [m, 0, 0], ..ok },
        HostRect { buffer_origin: [0, m, 0], ..ok },
        HostRect { buffer_origin: [0, 0, m], ..ok },
        HostRect { buffer_origin: [m - 7, 0, 0], ..ok },
        HostRect { buffer_origin: [0, half, 0], ..ok },
        HostRect { host_origin: [m, 0, 0], ..ok },
        HostRect { host_origin: [0, m, 0], ..ok },
        HostRect { host_origin: [0, 0, m], ..ok },
        HostRect { host_origin: [m - 7, 0, 0], ..ok },
    ];
    let mut out = vec![0u8; 4096];
    for r in &hostile {
        for buf in [&b, &fresh] {
            // SAFETY (both calls): refused before `out` is touched.
            unsafe {
                let rd = rect::enqueue_read_buffer_rect(&q, buf, true, r, out.as_mut_ptr(), &[]);
                assert_eq!(err_kind(rd), ClErrorKind::InvalidValue, "read {r:?}");
                let wr = rect::enqueue_write_buffer_rect(&q, buf, true, r, out.as_ptr(), &[]);
                assert_eq!(err_kind(wr), ClErrorKind::InvalidValue, "write {r:?}");
            }
        }
        let c = CopyRect {
            src_origin: r.buffer_origin,
            dst_origin: r.host_origin,
            region: r.region,
            src_row_pitch: r.buffer_row_pitch,
            src_slice_pitch: r.buffer_slice_pitch,
            dst_row_pitch: r.host_row_pitch,
            dst_slice_pitch: r.host_slice_pitch,
        };
        for (s, d) in [(&b, &fresh), (&fresh, &b), (&b, &b)] {
            assert_eq!(err_kind(rect::enqueue_copy_buffer_rect(&q, s, d, &c, &[])), ClErrorKind::InvalidValue, "{c:?}");
        }
    }
    // The rectangle fits the buffer, but the host memory it names would wrap
    // around the end of the address space.
    let wraps = (usize::MAX - 63) as *mut u8;
    // SAFETY (both calls): refused before `wraps` is touched.
    unsafe {
        let rd = rect::enqueue_read_buffer_rect(&q, &b, true, &ok, wraps, &[]);
        assert_eq!(err_kind(rd), ClErrorKind::InvalidValue, "a host rectangle that wraps around");
        let wr = rect::enqueue_write_buffer_rect(&q, &b, true, &ok, wraps, &[]);
        assert_eq!(err_kind(wr), ClErrorKind::InvalidValue, "a host rectangle that wraps around");
    }
    assert_eq!(fresh.stats(Location::Host), Default::default(), "failed calls allocate nothing");
    assert_eq!(fresh.stats(dev), Default::default());
    assert_eq!(fresh.linked(&cpu_device()), None);
    assert_eq!(read_all(&q, &b), data, "contents unchanged");
}
