//! Seed 000's enqueued commands on the CPU device: fill, memcpy, migrate,
//! advise and the blocking free, with every error bullet and real effects.

use std::time::Duration;

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext::usm;
use dmabridge::ext::usm_commands::{self as cmd, migration};
use dmabridge::runtime::event::{command_type, Event, EventStatus};
use dmabridge_tests::{cpu_context_and_queue as setup, host_alloc as host};

#[test]
fn memcpy_copies_and_refuses_what_it_must() {
    let (ctx, q) = setup();
    let a = host(&ctx, 4096);
    let b = host(&ctx, 4096);
    // SAFETY (this test): a and b are live 4 KiB allocations.
    unsafe {
        std::ptr::write_bytes(a, 7, 4096);
        let e = cmd::enqueue_memcpy(&q, true, b, a, 4096, &[]).unwrap();
        assert_eq!(e.status(), EventStatus::Complete);
        assert_eq!(e.command_type(), command_type::MEMCPY_INTEL);
        assert!(std::slice::from_raw_parts(b, 4096).iter().all(|&x| x == 7));
        assert_eq!(cmd::enqueue_memcpy(&q, true, std::ptr::null_mut(), a, 8, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_memcpy(&q, true, b, std::ptr::null(), 8, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_memcpy(&q, true, a.add(10), a, 100, &[]).unwrap_err().kind, MemCopyOverlap);
        assert_eq!(cmd::enqueue_memcpy(&q, true, a, a.add(10), 100, &[]).unwrap_err().kind, MemCopyOverlap);
        cmd::enqueue_memcpy(&q, true, a.add(100), a, 100, &[]).unwrap();
        // A wait-list event of another context.
        let (other, _) = setup();
        let foreign = Event::user(&other);
        assert_eq!(cmd::enqueue_memcpy(&q, true, b, a, 8, &[foreign]).unwrap_err().kind, InvalidContext);
    }
    usm::mem_free(&ctx, a).unwrap();
    usm::mem_free(&ctx, b).unwrap();
}

#[test]
fn a_blocking_memcpy_after_a_failed_event_reports_it_and_copies_nothing() {
    let (ctx, q) = setup();
    let a = host(&ctx, 64);
    let b = host(&ctx, 64);
    let gate = Event::user(&ctx);
    gate.set_user_status(-5).unwrap();
    // SAFETY: live 64-byte allocations.
    unsafe {
        std::ptr::write_bytes(a, 1, 64);
        std::ptr::write_bytes(b, 2, 64);
        let err = cmd::enqueue_memcpy(&q, true, b, a, 64, &[gate]).unwrap_err();
        assert_eq!(err.kind, ExecStatusErrorForEventsInWaitList, "{err}");
        assert!(std::slice::from_raw_parts(b, 64).iter().all(|&x| x == 2), "the copy must not run");
    }
}

#[test]
fn a_non_blocking_memcpy_waits_for_its_wait_list() {
    let (ctx, q) = setup();
    let a = host(&ctx, 64);
    let b = host(&ctx, 64);
    let gate = Event::user(&ctx);
    // SAFETY: live allocations, kept until the event completes.
    let e = unsafe {
        std::ptr::write_bytes(a, 9, 64);
        cmd::enqueue_memcpy(&q, false, b, a, 64, std::slice::from_ref(&gate)).unwrap()
    };
    std::thread::sleep(Duration::from_millis(20));
    assert_ne!(e.status(), EventStatus::Complete);
    // SAFETY: the copy has not run yet; b is live.
    assert_eq!(unsafe { *b }, 0);
    gate.set_user_status(0).unwrap();
    Event::wait(&[e]).unwrap();
    // SAFETY: the copy completed.
    assert_eq!(unsafe { *b.add(63) }, 9);
}

#[test]
fn fill_rules_and_results() {
    let (ctx, q) = setup();
    let p = host(&ctx, 4096);
    // SAFETY (this test): p is a live 4 KiB allocation; blocking waits below.
    unsafe {
        let ok = [1u8, 2, 3, 4];
        assert_eq!(cmd::enqueue_mem_fill(&q, std::ptr::null_mut(), &ok, 8, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_mem_fill(&q, p, &[], 8, &[]).unwrap_err().kind, InvalidValue, "NULL pattern");
        assert_eq!(cmd::enqueue_mem_fill(&q, p, &[1, 2, 3], 9, &[]).unwrap_err().kind, InvalidValue, "size 3");
        assert_eq!(cmd::enqueue_mem_fill(&q, p, &[0; 256], 256, &[]).unwrap_err().kind, InvalidValue, "> 128");
        assert_eq!(cmd::enqueue_mem_fill(&q, p.add(2), &ok, 8, &[]).unwrap_err().kind, InvalidValue, "misaligned");
        assert_eq!(cmd::enqueue_mem_fill(&q, p, &ok, 10, &[]).unwrap_err().kind, InvalidValue, "size not a multiple");
        for size in [1usize, 2, 4, 8, 16, 32, 64, 128] {
            let pattern: Vec<u8> = (0..size as u8).map(|i| i + 1).collect();
            let e = cmd::enqueue_mem_fill(&q, p, &pattern, 4096, &[]).unwrap();
            assert_eq!(e.command_type(), command_type::MEMFILL_INTEL);
            Event::wait(&[e]).unwrap();
            let got = std::slice::from_raw_parts(p, 4096);
            assert!(got.chunks(size).all(|c| c == pattern.as_slice()), "{size}-byte pattern");
        }
    }
}

#[test]
fn migrate_populates_and_drops_pages_for_real() {
    let (ctx, q) = setup();
    let before = ctx.heap().stats().resident_bytes;
    let p = usm::shared_mem_alloc(&ctx, None, &[], 1 << 21, 0).unwrap().as_ptr();
    assert_eq!(ctx.heap().stats().resident_bytes, before, "nothing resident before use");
    assert_eq!(cmd::enqueue_migrate_mem(&q, p, 1 << 21, 0, &[]).unwrap_err().kind, InvalidValue);
    assert_eq!(cmd::enqueue_migrate_mem(&q, p, 1 << 21, 4, &[]).unwrap_err().kind, InvalidValue);
    assert_eq!(cmd::enqueue_migrate_mem(&q, std::ptr::null(), 8, migration::HOST, &[]).unwrap_err().kind, InvalidValue);
    let e = cmd::enqueue_migrate_mem(&q, p, 1 << 21, migration::HOST, &[]).unwrap();
    Event::wait(&[e]).unwrap();
    assert_eq!(ctx.heap().stats().resident_bytes, before + (1 << 21), "migration faulted the pages in");
    // SAFETY: a live 2 MiB allocation.
    unsafe { std::ptr::write_bytes(p, 0xab, 1 << 21) };
    let e = cmd::enqueue_migrate_mem(&q, p, 1 << 21, migration::HOST | migration::CONTENT_UNDEFINED, &[]).unwrap();
    Event::wait(&[e]).unwrap();
    assert_eq!(ctx.heap().stats().resident_bytes, before, "content-undefined migration dropped the pages");
    // SAFETY: still live; dropped pages read as zeros.
    assert_eq!(unsafe { *p.add(12345) }, 0);
    usm::mem_free(&ctx, p).unwrap();
}

#[test]
fn content_undefined_migration_never_touches_neighbours() {
    let (ctx, q) = setup();
    let a = host(&ctx, 64);
    let b = host(&ctx, 64);
    // SAFETY: live allocations in the same page.
    unsafe {
        std::ptr::write_bytes(a, 1, 64);
        std::ptr::write_bytes(b, 2, 64);
    }
    let e = cmd::enqueue_migrate_mem(&q, a, 64, migration::CONTENT_UNDEFINED, &[]).unwrap();
    Event::wait(&[e]).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { *b }, 2, "a sub-page allocation's page is kept");
}

#[test]
fn advice_zero_is_an_empty_set_of_hints_and_other_advice_is_unsupported() {
    let (ctx, q) = setup();
    let p = host(&ctx, 64);
    // SAFETY: a live 64-byte allocation.
    unsafe { std::ptr::write_bytes(p, 3, 64) };
    // Seed 000, revision Q: "allow zero memory advice". Nothing to do, but
    // an event that completes as any command's does.
    let e = cmd::enqueue_mem_advise(&q, p, 64, 0, &[]).unwrap();
    assert_eq!(e.command_type(), command_type::MEMADVISE_INTEL);
    Event::wait(std::slice::from_ref(&e)).unwrap();
    assert_eq!(e.status(), EventStatus::Complete);
    // After its wait list, as any command.
    let gate = Event::user(&ctx);
    let e = cmd::enqueue_mem_advise(&q, p, 64, 0, std::slice::from_ref(&gate)).unwrap();
    assert_ne!(e.status(), EventStatus::Complete);
    gate.set_user_status(0).unwrap();
    Event::wait(&[e]).unwrap();
    // SAFETY: as above.
    assert!(unsafe { std::slice::from_raw_parts(p, 64) }.iter().all(|&b| b == 3), "advice changes nothing");
    for advice in [1u32, 0x4208, u32::MAX] {
        assert_eq!(cmd::enqueue_mem_advise(&q, p, 64, advice, &[]).unwrap_err().kind, InvalidValue, "{advice:#x}");
    }
    // Zero advice still checks its range and its wait list.
    assert_eq!(cmd::enqueue_mem_advise(&q, p, 65, 0, &[]).unwrap_err().kind, InvalidValue, "past the end");
    assert_eq!(cmd::enqueue_mem_advise(&q, std::ptr::null(), 8, 0, &[]).unwrap_err().kind, InvalidValue);
    let (other, _) = setup();
    assert_eq!(cmd::enqueue_mem_advise(&q, p, 64, 1, &[Event::user(&other)]).unwrap_err().kind, InvalidContext);
    assert_eq!(cmd::enqueue_mem_advise(&q, p, 64, 0, &[Event::user(&other)]).unwrap_err().kind, InvalidContext);
}

/// Pointers and sizes that no range inside an allocation has: each must be
/// `CL_INVALID_VALUE` at enqueue, never a panic inside the command.
#[test]
fn advise_and_migrate_refuse_hostile_ranges() {
    let (ctx, q) = setup();
    let p = host(&ctx, 4096);
    let top = usize::MAX as *const u8;
    let near_top = (usize::MAX - 100) as *const u8;
    let hostile: [(*const u8, usize, &str); 8] = [
        (p, usize::MAX, "size usize::MAX"),
        (p.wrapping_add(1), usize::MAX, "inside, size usize::MAX"),
        (p.wrapping_add(4095), usize::MAX - 4094, "the last byte, a wrapping size"),
        (p, 4097, "one byte past the end"),
        (p.wrapping_add(4095), 2, "from the last byte, one past"),
        (near_top, 1000, "a pointer near usize::MAX"),
        (top, 1, "usize::MAX itself"),
        (top, 0, "usize::MAX, size 0"),
    ];
    for (ptr, size, what) in hostile {
        assert_eq!(cmd::enqueue_mem_advise(&q, ptr, size, 0, &[]).unwrap_err().kind, InvalidValue, "advise: {what}");
        for flags in [migration::HOST, migration::CONTENT_UNDEFINED, migration::HOST | migration::CONTENT_UNDEFINED] {
            let r = cmd::enqueue_migrate_mem(&q, ptr, size, flags, &[]);
            assert_eq!(r.unwrap_err().kind, InvalidValue, "migrate {flags}: {what}");
        }
    }
    // The edges that are inside: the last byte, and size 0 anywhere inside.
    for (ptr, size) in [(p.wrapping_add(4095), 1), (p, 0), (p.wrapping_add(4095), 0), (p, 4096)] {
        Event::wait(&[cmd::enqueue_mem_advise(&q, ptr, size, 0, &[]).unwrap()]).unwrap();
        Event::wait(&[cmd::enqueue_migrate_mem(&q, ptr, size, migration::HOST, &[]).unwrap()]).unwrap();
    }
    usm::mem_free(&ctx, p).unwrap();
    assert_eq!(ctx.heap().stats().live, 0);
}

/// The defect of issue 8: migrating a 4 KiB allocation with a size of
/// 256 MiB committed 256 MiB of the heap, and a content-undefined one could
/// reach other allocations. Refused ranges change and commit nothing.
#[test]
fn a_migration_past_its_allocation_is_refused_and_commits_and_changes_nothing() {
    let (ctx, q) = setup();
    let page = rustix::param::page_size();
    let a = usm::shared_mem_alloc(&ctx, None, &[], 4096, 0).unwrap().as_ptr();
    let b = usm::shared_mem_alloc(&ctx, None, &[], 4096, 0).unwrap().as_ptr();
    let big = usm::shared_mem_alloc(&ctx, None, &[], 4 << 20, 0).unwrap().as_ptr();
    // SAFETY: live allocations of the sizes written.
    unsafe {
        std::ptr::write_bytes(a, 0xa1, 4096);
        std::ptr::write_bytes(b, 0xb2, 4096);
        std::ptr::write_bytes(big, 0xc3, 4 << 20);
    }
    let before = ctx.heap().stats().resident_bytes;
    let (other, _) = setup();
    let foreign = usm::shared_mem_alloc(&other, None, &[], 4096, 0).unwrap().as_ptr();
    let on_stack = [0u8; 64];
    for flags in [migration::HOST, migration::CONTENT_UNDEFINED, migration::HOST | migration::CONTENT_UNDEFINED] {
        for (ptr, size) in [
            (a.cast_const(), 256 << 20),
            (a.cast_const(), 4097),
            (b.cast_const(), 8192),
            (big.cast_const(), (4 << 20) + 1),
            (big.wrapping_add(4 << 20).cast_const(), 4096),
            (foreign.cast_const(), 4096),
            (on_stack.as_ptr(), 64),
        ] {
            let r = cmd::enqueue_migrate_mem(&q, ptr, size, flags, &[]);
            assert_eq!(r.unwrap_err().kind, InvalidValue, "flags {flags}, {size} bytes at {ptr:?}");
        }
    }
    q.finish().unwrap();
    assert_eq!(ctx.heap().stats().resident_bytes, before, "a refused migration committed memory");
    // SAFETY: the allocations are live; nothing ran on them.
    unsafe {
        assert!(std::slice::from_raw_parts(a, 4096).iter().all(|&x| x == 0xa1));
        assert!(std::slice::from_raw_parts(b, 4096).iter().all(|&x| x == 0xb2));
        assert!(std::slice::from_raw_parts(big, 4 << 20).iter().all(|&x| x == 0xc3));
    }
    // An accepted migration of a 4 KiB allocation commits its pages only.
    let fresh = usm::shared_mem_alloc(&ctx, None, &[], 4096, 0).unwrap().as_ptr();
    let before = ctx.heap().stats().resident_bytes;
    Event::wait(&[cmd::enqueue_migrate_mem(&q, fresh, 4096, migration::HOST, &[]).unwrap()]).unwrap();
    let grown = ctx.heap().stats().resident_bytes - before;
    assert!(grown as usize <= 2 * page, "migrating 4 KiB committed {grown} bytes");
    // A content-undefined migration of part of a large allocation drops
    // exactly the whole pages inside that part.
    let (from, len) = (big.wrapping_add(100), 3 * page);
    Event::wait(&[cmd::enqueue_migrate_mem(&q, from, len, migration::CONTENT_UNDEFINED, &[]).unwrap()]).unwrap();
    // SAFETY: `big` is live.
    let got = unsafe { std::slice::from_raw_parts(big, 4 << 20) };
    let (start, end) = ((100usize).next_multiple_of(page), (100 + len) / page * page);
    assert!(got[..start].iter().all(|&x| x == 0xc3), "the partial page before the range is kept");
    assert!(got[start..end].iter().all(|&x| x == 0), "the whole pages inside were dropped");
    assert!(got[end..].iter().all(|&x| x == 0xc3), "the rest is kept");
    for p in [a, b, big, fresh] {
        usm::mem_free(&ctx, p).unwrap();
    }
    usm::mem_free(&other, foreign).unwrap();
}

/// An allocation freed (`clMemFreeINTEL` does not wait) before an enqueued
/// migration runs, and its address handed to a new allocation: the
/// migration must neither drop the new allocation's content nor commit
/// freed memory.
#[test]
fn a_migration_of_an_allocation_freed_before_it_runs_touches_nothing() {
    let (ctx, q) = setup();
    const SIZE: usize = 4 << 20;
    let baseline = ctx.heap().stats().resident_bytes;
    // Dropping: the allocation is replaced by one at the same address.
    let old = usm::shared_mem_alloc(&ctx, None, &[], SIZE, 0).unwrap().as_ptr();
    let gate = Event::user(&ctx);
    let e = cmd::enqueue_migrate_mem(&q, old, SIZE, migration::CONTENT_UNDEFINED, std::slice::from_ref(&gate));
    let e = e.unwrap();
    usm::mem_free(&ctx, old).unwrap();
    let new = usm::shared_mem_alloc(&ctx, None, &[], SIZE, 0).unwrap().as_ptr();
    assert_eq!(new, old, "the heap reuses the freed range (the case under test)");
    // SAFETY: `new` is a live allocation of SIZE bytes.
    unsafe { std::ptr::write_bytes(new, 0x5a, SIZE) };
    gate.set_user_status(0).unwrap();
    Event::wait(&[e]).unwrap();
    // SAFETY: as above.
    assert!(
        unsafe { std::slice::from_raw_parts(new, SIZE) }.iter().all(|&x| x == 0x5a),
        "the migration dropped a later allocation's content"
    );
    usm::mem_free(&ctx, new).unwrap();
    // Populating: the freed range stays uncommitted.
    let old = usm::shared_mem_alloc(&ctx, None, &[], SIZE, 0).unwrap().as_ptr();
    let gate = Event::user(&ctx);
    let e = cmd::enqueue_migrate_mem(&q, old, SIZE, migration::HOST, std::slice::from_ref(&gate)).unwrap();
    usm::mem_free(&ctx, old).unwrap();
    gate.set_user_status(0).unwrap();
    Event::wait(&[e]).unwrap();
    assert_eq!(ctx.heap().stats().resident_bytes, baseline, "the migration committed freed memory");
    // A command that never runs (its wait list failed) lets go of its claim.
    let p = usm::shared_mem_alloc(&ctx, None, &[], SIZE, 0).unwrap().as_ptr();
    let gate = Event::user(&ctx);
    let e = cmd::enqueue_migrate_mem(&q, p, SIZE, migration::HOST, std::slice::from_ref(&gate)).unwrap();
    gate.set_user_status(-1).unwrap();
    assert!(Event::wait(&[e]).is_err());
    usm::mem_free(&ctx, p).unwrap();
}

/// memcpy and fill ranges that wrap around the address space: refused at
/// enqueue (no valid range does), never a crash inside the command.
#[test]
fn memcpy_and_fill_refuse_ranges_past_the_end_of_the_address_space() {
    let (ctx, q) = setup();
    let a = host(&ctx, 4096);
    // Aligned to 128, so that only the range is wrong.
    let near_top = (usize::MAX - 127) as *mut u8;
    // SAFETY (this test): every call is refused before anything is touched,
    // as the functions document; `a` is live for the ones that run.
    unsafe {
        for (dst, src, size) in [
            (near_top, a.cast_const(), 256),
            (a, near_top.cast_const(), 256),
            (a, a.add(8).cast_const(), usize::MAX),
            (near_top, near_top.cast_const().wrapping_sub(4096), usize::MAX),
        ] {
            let r = cmd::enqueue_memcpy(&q, true, dst, src, size, &[]);
            assert_eq!(r.unwrap_err().kind, InvalidValue, "{size} bytes {src:?} -> {dst:?}");
        }
        for (dst, pattern, size) in
            [(near_top, &[1u8][..], 256), (near_top, &[0u8; 128][..], 256), (a, &[1u8; 4][..], usize::MAX - 3)]
        {
            assert_eq!(cmd::enqueue_mem_fill(&q, dst, pattern, size, &[]).unwrap_err().kind, InvalidValue);
        }
        // Size 0 is a copy or fill of nothing.
        cmd::enqueue_memcpy(&q, true, a, a.add(64), 0, &[]).unwrap();
        Event::wait(&[cmd::enqueue_mem_fill(&q, a, &[7; 4], 0, &[]).unwrap()]).unwrap();
    }
    usm::mem_free(&ctx, a).unwrap();
}

#[test]
fn blocking_free_waits_for_commands_that_use_the_allocation() {
    let (ctx, q) = setup();
    let p = host(&ctx, 4096);
    let gate = Event::user(&ctx);
    // SAFETY: p stays live until the blocking free, which waits for the fill.
    let fill = unsafe { cmd::enqueue_mem_fill(&q, p, &[5], 4096, std::slice::from_ref(&gate)).unwrap() };
    let opener = {
        let gate = gate.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            gate.set_user_status(0).unwrap();
        })
    };
    cmd::mem_blocking_free(&ctx, p).unwrap();
    assert_eq!(fill.status(), EventStatus::Complete, "the free returned before the fill ran");
    opener.join().unwrap();
    assert_eq!(usm::mem_free(&ctx, p).unwrap_err().kind, InvalidValue, "already freed");
    cmd::mem_blocking_free(&ctx, std::ptr::null_mut()).unwrap();
}

#[test]
fn blocking_free_counts_indirect_access_as_using_everything() {
    let (ctx, q) = setup();
    let p = host(&ctx, 64);
    let gate = Event::user(&ctx);
    // A command that did not say what it touches (a kernel with indirect
    // access) counts as using every allocation.
    let work = q.enqueue(command_type::MARKER, std::slice::from_ref(&gate), false, Box::new(|| Ok(()))).unwrap();
    let g = gate.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        g.set_user_status(0).unwrap();
    });
    cmd::mem_blocking_free(&ctx, p).unwrap();
    assert_eq!(work.status(), EventStatus::Complete);
    t.join().unwrap();
}
