//! The SVM enqueue commands with every rule, on the CPU device.

use std::sync::{Arc, Mutex};

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext::svm::{self, flags};
use dmabridge::ext::svm_commands::{self as cmd, map_flags};
use dmabridge::ext::usm;
use dmabridge::ext::usm_commands::migration;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::{command_type, Event, EventStatus};
use dmabridge_tests::cpu_context_and_queue as setup;

fn svm(ctx: &Arc<Context>, size: usize) -> *mut u8 {
    svm::svm_alloc(ctx, flags::READ_WRITE, size, 0).unwrap().as_ptr()
}

#[test]
fn free_with_and_without_callback() {
    let (ctx, q) = setup();
    let a = svm(&ctx, 64);
    let b = svm(&ctx, 64);
    // No pointer (clEnqueueSVMFree with 0 and NULL): a command that frees
    // nothing, whose callback still runs.
    let called = Arc::new(Mutex::new(None));
    let c = called.clone();
    let e = cmd::enqueue_svm_free(&q, &[], Some(Box::new(move |_q, ptrs| *c.lock().unwrap() = Some(ptrs.len()))), &[]);
    Event::wait(&[e.unwrap()]).unwrap();
    assert_eq!(*called.lock().unwrap(), Some(0));
    assert_eq!(cmd::enqueue_svm_free(&q, &[], None, &[]).map(|e| Event::wait(&[e])).unwrap(), Ok(()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let e = cmd::enqueue_svm_free(
        &q,
        &[a],
        Some(Box::new(move |_q, ptrs| s.lock().unwrap().extend(ptrs.iter().map(|&p| p as usize)))),
        &[],
    )
    .unwrap();
    Event::wait(std::slice::from_ref(&e)).unwrap();
    assert_eq!(e.command_type(), command_type::SVM_FREE);
    assert_eq!(*seen.lock().unwrap(), vec![a as usize], "the callback got the pointers");
    assert!(svm::svm_flags(&ctx, a).is_some(), "with a callback, freeing is the callback's job");
    let e = cmd::enqueue_svm_free(&q, &[a, b], None, &[]).unwrap();
    Event::wait(&[e]).unwrap();
    assert_eq!(ctx.heap().stats().live, 0, "without one, clSVMFree frees them");
}

#[test]
fn memcpy_and_fill() {
    let (ctx, q) = setup();
    let a = svm(&ctx, 256);
    let b = svm(&ctx, 256);
    // SAFETY (this test): live SVM allocations; every command is waited for.
    unsafe {
        let e = cmd::enqueue_svm_mem_fill(&q, a, &[1, 2], 256, &[]).unwrap();
        assert_eq!(e.command_type(), command_type::SVM_MEMFILL);
        Event::wait(&[e]).unwrap();
        let e = cmd::enqueue_svm_memcpy(&q, true, b, a, 256, &[]).unwrap();
        assert_eq!(e.command_type(), command_type::SVM_MEMCPY);
        assert!(std::slice::from_raw_parts(b, 256).chunks(2).all(|c| c == [1, 2]));
        assert_eq!(cmd::enqueue_svm_memcpy(&q, true, b, b.add(1), 8, &[]).unwrap_err().kind, MemCopyOverlap);
        assert_eq!(cmd::enqueue_svm_memcpy(&q, true, std::ptr::null_mut(), a, 8, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_svm_mem_fill(&q, a.add(1), &[1, 2], 8, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_svm_mem_fill(&q, a, &[1, 2, 3], 9, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_svm_mem_fill(&q, a, &[1, 2], 7, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_svm_mem_fill(&q, std::ptr::null_mut(), &[1], 8, &[]).unwrap_err().kind, InvalidValue);
    }
}

#[test]
fn map_and_unmap_rules() {
    let (ctx, q) = setup();
    let a = svm(&ctx, 64);
    use map_flags::*;
    for ok in [READ, WRITE, READ | WRITE, WRITE_INVALIDATE_REGION] {
        let e = cmd::enqueue_svm_map(&q, true, ok, a, 64, &[]).unwrap();
        assert_eq!((e.command_type(), e.status()), (command_type::SVM_MAP, EventStatus::Complete));
        let e = cmd::enqueue_svm_unmap(&q, a, &[]).unwrap();
        Event::wait(std::slice::from_ref(&e)).unwrap();
        assert_eq!(e.command_type(), command_type::SVM_UNMAP);
    }
    assert_eq!(cmd::enqueue_svm_map(&q, true, READ, std::ptr::null_mut(), 64, &[]).unwrap_err().kind, InvalidValue);
    assert_eq!(cmd::enqueue_svm_map(&q, true, READ, a, 0, &[]).unwrap_err().kind, InvalidValue);
    assert_eq!(cmd::enqueue_svm_map(&q, true, 1 << 3, a, 64, &[]).unwrap_err().kind, InvalidValue);
    assert_eq!(
        cmd::enqueue_svm_map(&q, true, READ | WRITE_INVALIDATE_REGION, a, 64, &[]).unwrap_err().kind,
        InvalidValue
    );
    assert_eq!(cmd::enqueue_svm_unmap(&q, std::ptr::null_mut(), &[]).unwrap_err().kind, InvalidValue);
    let failed = Event::user(&ctx);
    failed.set_user_status(-1).unwrap();
    assert_eq!(
        cmd::enqueue_svm_map(&q, true, READ, a, 64, &[failed]).unwrap_err().kind,
        ExecStatusErrorForEventsInWaitList
    );
}

#[test]
fn migrate_rules_and_effect() {
    let (ctx, q) = setup();
    let a = svm(&ctx, 1 << 21);
    let u = usm::host_mem_alloc(&ctx, &[], 64, 0).unwrap().as_ptr();
    let base = ctx.heap().stats().resident_bytes;
    assert_eq!(cmd::enqueue_svm_migrate_mem(&q, &[], None, 0, &[]).unwrap_err().kind, InvalidValue);
    assert_eq!(cmd::enqueue_svm_migrate_mem(&q, &[std::ptr::null()], None, 0, &[]).unwrap_err().kind, InvalidValue);
    assert_eq!(cmd::enqueue_svm_migrate_mem(&q, &[a], None, 8, &[]).unwrap_err().kind, InvalidValue, "bad flag");
    assert_eq!(cmd::enqueue_svm_migrate_mem(&q, &[u], None, 0, &[]).unwrap_err().kind, InvalidValue, "USM, not SVM");
    assert_eq!(
        cmd::enqueue_svm_migrate_mem(&q, &[a.wrapping_add(100)], Some(&[1 << 21]), 0, &[]).unwrap_err().kind,
        InvalidValue,
        "runs past the allocation"
    );
    assert_eq!(cmd::enqueue_svm_migrate_mem(&q, &[a], Some(&[1, 2]), 0, &[]).unwrap_err().kind, InvalidValue);
    // Flags 0 migrates to the queue's device: the pages are faulted in.
    let e = cmd::enqueue_svm_migrate_mem(&q, &[a], Some(&[0]), 0, &[]).unwrap();
    Event::wait(std::slice::from_ref(&e)).unwrap();
    assert_eq!(e.command_type(), command_type::MIGRATE_SVM_MEM_OBJECTS);
    assert_eq!(ctx.heap().stats().resident_bytes, base + (1 << 21));
    let e = cmd::enqueue_svm_migrate_mem(&q, &[a], None, migration::CONTENT_UNDEFINED, &[]).unwrap();
    Event::wait(&[e]).unwrap();
    assert_eq!(ctx.heap().stats().resident_bytes, base);
}

/// Sizes and pointers no range inside an SVM allocation has: each is
/// `CL_INVALID_VALUE` at enqueue (a size of `usize::MAX` used to overflow
/// the range check), and the edges that are inside are accepted.
#[test]
fn migrate_refuses_hostile_sizes_without_overflow() {
    let (ctx, q) = setup();
    let a = svm(&ctx, 4096);
    let b = svm(&ctx, 4096);
    // SAFETY: live SVM allocations.
    unsafe {
        std::ptr::write_bytes(a, 1, 4096);
        std::ptr::write_bytes(b, 2, 4096);
    }
    let before = ctx.heap().stats().resident_bytes;
    let inside = a.wrapping_add(8).cast_const();
    let hostile: [(*const u8, usize); 6] = [
        (inside, usize::MAX),
        (a.cast_const(), usize::MAX),
        (a.wrapping_add(4095).cast_const(), usize::MAX - 4094),
        (a.wrapping_add(4095).cast_const(), 2),
        ((usize::MAX - 100) as *const u8, 1000),
        (usize::MAX as *const u8, 0),
    ];
    for (p, size) in hostile {
        for flags in [0, migration::HOST, migration::CONTENT_UNDEFINED] {
            let r = cmd::enqueue_svm_migrate_mem(&q, &[p], Some(&[size]), flags, &[]);
            assert_eq!(r.unwrap_err().kind, InvalidValue, "{size} bytes at {p:?}, flags {flags}");
            // Also as the second of two ranges: nothing of the first runs.
            let r = cmd::enqueue_svm_migrate_mem(&q, &[b, p], Some(&[4096, size]), flags, &[]);
            assert_eq!(r.unwrap_err().kind, InvalidValue);
        }
    }
    q.finish().unwrap();
    assert_eq!(ctx.heap().stats().resident_bytes, before, "a refused migration committed memory");
    // SAFETY: as above; nothing ran on them.
    unsafe {
        assert!(std::slice::from_raw_parts(a, 4096).iter().all(|&x| x == 1));
        assert!(std::slice::from_raw_parts(b, 4096).iter().all(|&x| x == 2));
    }
    // Inside: the last byte, the whole allocation from an interior pointer
    // (size 0), exactly to the end.
    for (p, size) in [(a.wrapping_add(4095).cast_const(), 1), (inside, 0), (inside, 4088)] {
        let e = cmd::enqueue_svm_migrate_mem(&q, &[p], Some(&[size]), migration::HOST, &[]).unwrap();
        Event::wait(&[e]).unwrap();
    }
    assert!(svm::svm_free(&ctx, a) && svm::svm_free(&ctx, b));
}

/// `clSVMFree` before an enqueued migration ran, and the range reused by a
/// new SVM allocation: the migration leaves the new one alone.
#[test]
fn a_migration_of_memory_freed_before_it_runs_touches_nothing() {
    let (ctx, q) = setup();
    const SIZE: usize = 4 << 20;
    let old = svm(&ctx, SIZE);
    let gate = Event::user(&ctx);
    let e = cmd::enqueue_svm_migrate_mem(
        &q,
        &[old.cast_const()],
        None,
        migration::CONTENT_UNDEFINED,
        std::slice::from_ref(&gate),
    )
    .unwrap();
    assert!(svm::svm_free(&ctx, old));
    let new = svm(&ctx, SIZE);
    assert_eq!(new, old, "the heap reuses the freed range (the case under test)");
    // SAFETY: `new` is a live SVM allocation of SIZE bytes.
    unsafe { std::ptr::write_bytes(new, 0x77, SIZE) };
    gate.set_user_status(0).unwrap();
    Event::wait(&[e]).unwrap();
    // SAFETY: as above.
    assert!(unsafe { std::slice::from_raw_parts(new, SIZE) }.iter().all(|&x| x == 0x77));
    assert!(svm::svm_free(&ctx, new));
}

/// SVM memcpy and fill share USM's checks, wrap-around included; a map of
/// any size is only an ordering point (no range of it is touched).
#[test]
fn memcpy_fill_and_map_with_hostile_sizes() {
    let (ctx, q) = setup();
    let a = svm(&ctx, 256);
    let near_top = (usize::MAX - 127) as *mut u8;
    // SAFETY (this test): the hostile calls are refused before anything is
    // touched, as documented; the rest stay inside `a`.
    unsafe {
        assert_eq!(cmd::enqueue_svm_memcpy(&q, true, near_top, a, 256, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_svm_memcpy(&q, true, a, near_top, 256, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_svm_mem_fill(&q, near_top, &[1, 2], 256, &[]).unwrap_err().kind, InvalidValue);
        assert_eq!(cmd::enqueue_svm_mem_fill(&q, a, &[1, 2], usize::MAX - 1, &[]).unwrap_err().kind, InvalidValue);
        cmd::enqueue_svm_memcpy(&q, true, a, a.add(128), 0, &[]).unwrap();
    }
    let e = cmd::enqueue_svm_map(&q, true, map_flags::READ, a, usize::MAX, &[]).unwrap();
    assert_eq!(e.status(), EventStatus::Complete);
    Event::wait(&[cmd::enqueue_svm_unmap(&q, a, &[]).unwrap()]).unwrap();
    assert!(svm::svm_free(&ctx, a));
}
