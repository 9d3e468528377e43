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
fn every_advice_is_unsupported() {
    let (ctx, q) = setup();
    let p = host(&ctx, 64);
    for advice in [0u32, 1, 0x4208] {
        assert_eq!(cmd::enqueue_mem_advise(&q, p, 64, advice, &[]).unwrap_err().kind, InvalidValue);
    }
    let (other, _) = setup();
    assert_eq!(cmd::enqueue_mem_advise(&q, p, 64, 1, &[Event::user(&other)]).unwrap_err().kind, InvalidContext);
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
