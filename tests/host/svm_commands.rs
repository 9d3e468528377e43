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
    assert_eq!(cmd::enqueue_svm_free(&q, &[], None, &[]).unwrap_err().kind, InvalidValue);
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
