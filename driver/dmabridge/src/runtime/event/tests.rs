use super::*;
use crate::error::{code, ClErrorKind};
use crate::runtime::platform::Platform;
use crate::sync;
use std::sync::mpsc;
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

static TEST_LOCK: RwLock<()> = RwLock::new(());

/// Held by every event and queue test; the test that counts threads
/// takes it exclusively.
pub(crate) fn shared_lock() -> RwLockReadGuard<'static, ()> {
    sync::read(&TEST_LOCK)
}

/// Held by a test that must run alone among the event and queue tests.
pub(crate) fn exclusive_lock() -> RwLockWriteGuard<'static, ()> {
    sync::write(&TEST_LOCK)
}

pub(crate) fn context() -> Arc<Context> {
    Context::new(std::slice::from_ref(Platform::get().cpu())).unwrap()
}

/// A command event driven by hand (its queue is gone at once).
fn command_event(ctx: &Arc<Context>, profiling: bool) -> Event {
    Event::for_command(ctx, command_type::MARKER, Weak::new(), profiling)
}

type Log = Arc<Mutex<Vec<(i32, i32)>>>;

fn logger(log: &Log, tag: i32) -> EventCallback {
    let log = log.clone();
    Box::new(move |_, s| sync::lock(&log).push((tag, s)))
}

#[test]
fn status_values_are_the_cl_ones() {
    assert_eq!(EventStatus::Queued.as_cl(), 3);
    assert_eq!(EventStatus::Submitted.as_cl(), 2);
    assert_eq!(EventStatus::Running.as_cl(), 1);
    assert_eq!(EventStatus::Complete.as_cl(), 0);
    assert_eq!(EventStatus::Error(-5).as_cl(), -5);
    for s in [3, 2, 1, 0, -14] {
        assert_eq!(EventStatus::from_cl(s).unwrap().as_cl(), s);
    }
    assert_eq!(EventStatus::from_cl(4), None);
    assert!(EventStatus::Error(-1).is_terminal() && EventStatus::Complete.is_terminal());
    assert!(!EventStatus::Running.is_terminal());
}

#[test]
fn user_event_completes_once() {
    let _g = shared_lock();
    let ctx = context();
    let e = Event::user(&ctx);
    assert_eq!(e.status(), EventStatus::Submitted);
    assert_eq!(e.command_type(), command_type::USER);
    assert!(e.is_user() && e.queue().is_none());
    assert!(Arc::ptr_eq(e.context(), &ctx));
    assert_eq!(e.set_user_status(1).unwrap_err().kind, ClErrorKind::InvalidValue);
    assert_eq!(e.set_user_status(3).unwrap_err().kind, ClErrorKind::InvalidValue);
    e.set_user_status(exec_status::COMPLETE).unwrap();
    assert_eq!(e.status(), EventStatus::Complete);
    assert_eq!(e.set_user_status(0).unwrap_err().kind, ClErrorKind::InvalidOperation);
    assert_eq!(e.set_user_status(-5).unwrap_err().kind, ClErrorKind::InvalidOperation);
    assert_eq!(e.status(), EventStatus::Complete);
    Event::wait(&[e.clone(), e]).unwrap();
}

#[test]
fn user_event_error_is_terminal_and_fails_waits() {
    let _g = shared_lock();
    let ctx = context();
    let e = Event::user(&ctx);
    e.set_user_status(code::OUT_OF_RESOURCES).unwrap();
    assert_eq!(e.status(), EventStatus::Error(-5));
    assert_eq!(e.set_user_status(0).unwrap_err().kind, ClErrorKind::InvalidOperation);
    let ok = Event::user(&ctx);
    ok.set_user_status(0).unwrap();
    let err = Event::wait(&[ok, e.clone()]).unwrap_err();
    assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
    assert!(err.message.contains("event_list[1]"), "{err}");
    // Internal status moves do not resurrect it either.
    e.complete(Ok(()));
    assert_eq!(e.status(), EventStatus::Error(-5));
}

#[test]
fn only_user_events_take_a_user_status() {
    let _g = shared_lock();
    let ctx = context();
    let e = command_event(&ctx, false);
    assert_eq!(e.set_user_status(0).unwrap_err().kind, ClErrorKind::InvalidEvent);
    assert_eq!(e.status(), EventStatus::Queued);
}

#[test]
fn status_only_moves_forward() {
    let _g = shared_lock();
    let ctx = context();
    let e = command_event(&ctx, false);
    e.mark_running();
    assert_eq!(e.status(), EventStatus::Running);
    e.mark_submitted();
    assert_eq!(e.status(), EventStatus::Running);
    e.complete(Err(code::MEM_COPY_OVERLAP));
    assert_eq!(e.status(), EventStatus::Error(code::MEM_COPY_OVERLAP));
    e.complete(Ok(()));
    e.mark_running();
    assert_eq!(e.status(), EventStatus::Error(code::MEM_COPY_OVERLAP));
    let e = command_event(&ctx, false);
    e.complete(Err(7));
    assert_eq!(e.status(), EventStatus::Error(code::OUT_OF_RESOURCES));
}

#[test]
fn wait_for_events_errors() {
    let _g = shared_lock();
    let a = context();
    let b = context();
    assert_eq!(Event::wait(&[]).unwrap_err().kind, ClErrorKind::InvalidValue);
    let ea = Event::user(&a);
    let eb = Event::user(&b);
    // Rejected before waiting (neither is complete: this would hang).
    let err = Event::wait(&[ea.clone(), eb]).unwrap_err();
    assert_eq!(err.kind, ClErrorKind::InvalidContext);
    assert!(err.message.contains("event_list[1]"), "{err}");
    ea.set_user_status(0).unwrap();
}

#[test]
fn wait_blocks_until_another_thread_completes() {
    let _g = shared_lock();
    let ctx = context();
    let e = Event::user(&ctx);
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let e = e.clone();
        std::thread::spawn(move || {
            let r = Event::wait(std::slice::from_ref(&e));
            tx.send(()).unwrap();
            r
        })
    };
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "wait returned before completion");
    e.set_user_status(0).unwrap();
    rx.recv_timeout(Duration::from_secs(10)).expect("wait did not return after completion");
    waiter.join().unwrap().unwrap();
}

#[test]
fn callbacks_run_in_status_order_and_at_once_when_past() {
    let _g = shared_lock();
    let ctx = context();
    let e = command_event(&ctx, false);
    let log: Log = Arc::default();
    assert_eq!(e.set_callback(exec_status::QUEUED, logger(&log, 0)).unwrap_err().kind, ClErrorKind::InvalidValue);
    assert_eq!(e.set_callback(-1, logger(&log, 0)).unwrap_err().kind, ClErrorKind::InvalidValue);
    e.set_callback(exec_status::COMPLETE, logger(&log, 1)).unwrap();
    e.set_callback(exec_status::RUNNING, logger(&log, 2)).unwrap();
    e.set_callback(exec_status::SUBMITTED, logger(&log, 3)).unwrap();
    e.set_callback(exec_status::COMPLETE, logger(&log, 4)).unwrap();
    assert!(sync::lock(&log).is_empty());
    // Skipping statuses still calls each callback, earliest status first.
    e.mark_running();
    assert_eq!(*sync::lock(&log), [(3, 2), (2, 1)]);
    e.complete(Ok(()));
    assert_eq!(*sync::lock(&log), [(3, 2), (2, 1), (1, 0), (4, 0)]);
    // Already past: called at once, with the status asked for.
    e.set_callback(exec_status::SUBMITTED, logger(&log, 5)).unwrap();
    assert_eq!(sync::lock(&log).last(), Some(&(5, 2)));
    e.complete(Ok(()));
    assert_eq!(sync::lock(&log).len(), 5, "a callback ran twice");
}

#[test]
fn callbacks_receive_the_error_status() {
    let _g = shared_lock();
    let ctx = context();
    let e = Event::user(&ctx);
    let log: Log = Arc::default();
    // A user event starts at CL_SUBMITTED: that callback runs at once.
    e.set_callback(exec_status::SUBMITTED, logger(&log, 1)).unwrap();
    e.set_callback(exec_status::RUNNING, logger(&log, 2)).unwrap();
    e.set_callback(exec_status::COMPLETE, logger(&log, 3)).unwrap();
    assert_eq!(*sync::lock(&log), [(1, 2)]);
    e.set_user_status(-9999).unwrap();
    assert_eq!(*sync::lock(&log), [(1, 2), (2, -9999), (3, -9999)]);
    e.set_callback(exec_status::COMPLETE, logger(&log, 4)).unwrap();
    assert_eq!(sync::lock(&log).last(), Some(&(4, -9999)));
}

#[test]
fn callbacks_run_outside_the_event_lock() {
    let _g = shared_lock();
    let ctx = context();
    let e = Event::user(&ctx);
    let (tx, rx) = mpsc::channel();
    e.set_callback(
        exec_status::COMPLETE,
        Box::new(move |ev, s| {
            // These lock the event: they would deadlock under it.
            let again = tx.clone();
            ev.set_callback(exec_status::COMPLETE, Box::new(move |_, s2| again.send(s2).unwrap())).unwrap();
            assert_eq!(ev.status(), EventStatus::Complete);
            tx.send(s).unwrap();
        }),
    )
    .unwrap();
    e.set_user_status(0).unwrap();
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [0, 0]);
}

#[test]
fn hooks_run_once_finished_and_when_an_unset_user_event_is_released() {
    let _g = shared_lock();
    let ctx = context();
    let log: Log = Arc::default();
    let hook = |tag| -> Hook {
        let log = log.clone();
        Box::new(move |s| sync::lock(&log).push((tag, s)))
    };
    let e = command_event(&ctx, false);
    e.on_finish(hook(1));
    e.mark_running();
    assert!(sync::lock(&log).is_empty());
    e.complete(Err(-5));
    e.on_finish(hook(2));
    assert_eq!(*sync::lock(&log), [(1, -5), (2, -5)]);
    let u = Event::user(&ctx);
    u.on_finish(hook(3));
    drop(u);
    assert_eq!(sync::lock(&log).last(), Some(&(3, code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)));
}

#[test]
fn profiling_is_not_available_for_user_events_or_without_profiling() {
    let _g = shared_lock();
    let ctx = context();
    let u = Event::user(&ctx);
    u.set_user_status(0).unwrap();
    assert_eq!(u.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
    let e = command_event(&ctx, false);
    e.complete(Ok(()));
    assert_eq!(e.profiling_info(profiling_info::END).unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
    let p = command_event(&ctx, true);
    assert_eq!(p.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
    p.mark_submitted();
    p.complete(Ok(()));
    let t = p.profiling_times().unwrap();
    assert!(t.queued > 0 && t.queued <= t.submit && t.submit <= t.start && t.start <= t.end);
    assert_eq!(t.end, t.complete);
    assert_eq!(p.profiling_info(profiling_info::START).unwrap(), t.start);
    assert_eq!(p.profiling_info(0x1285).unwrap_err().kind, ClErrorKind::InvalidValue);
    let f = command_event(&ctx, true);
    f.complete(Err(-5));
    assert_eq!(f.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
}

#[test]
fn error_kinds_round_trip_through_codes() {
    for c in [-1, -5, -8, -14, -30, -34, -58, -59, -64] {
        assert_eq!(error_kind_from_code(c).unwrap().code(), c);
    }
    assert_eq!(error_kind_from_code(0), None);
    assert_eq!(error_kind_from_code(-2), Some(ClErrorKind::DeviceNotAvailable));
    assert_eq!(status_error(command_type::MEMCPY_INTEL, -8).kind, ClErrorKind::MemCopyOverlap);
    assert_eq!(status_error(command_type::MEMCPY_INTEL, -14).kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
    assert_eq!(status_error(command_type::MEMCPY_INTEL, -9999).kind, ClErrorKind::OutOfResources);
}

#[test]
fn reference_count_follows_clones() {
    let _g = shared_lock();
    let ctx = context();
    let e = Event::user(&ctx);
    assert_eq!(e.reference_count(), 1);
    let f = e.clone();
    assert_eq!(e.reference_count(), 2);
    assert!(f.ptr_eq(&e) && f == e && f.as_ptr() == e.as_ptr());
    drop(f);
    assert_eq!(e.reference_count(), 1);
    assert_ne!(e, Event::user(&ctx));
}
