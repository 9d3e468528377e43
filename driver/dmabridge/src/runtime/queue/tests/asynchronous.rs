//! Tests of asynchronous commands ([`Queue::enqueue_async_with_use`]): where
//! they start, that the queue's order holds until their completion is
//! called, and how they fail.

use super::*;

/// An asynchronous command that reports the thread it started on and hands
/// its completion over.
fn handing_over(started: &mpsc::Sender<(thread::ThreadId, Completion)>) -> AsyncWork {
    let started = started.clone();
    Box::new(move |done| started.send((thread::current().id(), done)).unwrap())
}

fn enqueue_async(q: &Arc<Queue>, wait_list: &[Event], work: AsyncWork) -> Event {
    q.enqueue_async_with_use(command_type::NDRANGE_KERNEL, wait_list, CommandUse::Nothing, work).unwrap()
}

#[test]
fn an_idle_queue_starts_it_inline_and_the_executor_ends_it() {
    let _g = shared_lock();
    let ctx = context();
    let (tx, rx) = mpsc::channel();
    for props in [IN_ORDER, OUT_OF_ORDER] {
        let q = queue(&ctx, props);
        let log: Log = Arc::default();
        let e = enqueue_async(&q, &[], handing_over(&tx));
        let (on, done) = rx.try_recv().expect("an asynchronous command on an idle queue did not start inline");
        assert_eq!(on, thread::current().id());
        assert_eq!(e.status(), EventStatus::Running);
        let after = q.enqueue(command_type::USER, std::slice::from_ref(&e), false, push(&log, 1)).unwrap();
        thread::sleep(SETTLE);
        assert!(logged(&log).is_empty(), "a command waiting for it ran before its completion");
        thread::spawn(move || done.complete(Ok(()))).join().unwrap();
        wait(&after);
        assert_eq!((e.status(), logged(&log)), (EventStatus::Complete, vec![1]));
        q.finish().unwrap();
    }
}

#[test]
fn in_order_it_waits_for_earlier_commands_and_later_ones_wait_for_it() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, IN_ORDER);
    let log: Log = Arc::default();
    let gate = Event::user(&ctx);
    q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
    let (tx, rx) = mpsc::channel();
    let e = enqueue_async(&q, &[], handing_over(&tx));
    q.enqueue(command_type::USER, &[], false, push(&log, 3)).unwrap();
    thread::sleep(SETTLE);
    assert!(rx.try_recv().is_err(), "started before the command ahead of it");
    gate.set_user_status(0).unwrap();
    let (on, done) = rx.recv_timeout(DEADLINE).expect("never started");
    assert_ne!(on, thread::current().id(), "a queued asynchronous command started on the enqueuing thread");
    thread::sleep(SETTLE);
    assert_eq!(logged(&log), vec![1], "the command behind it ran before its completion");
    crate::sync::lock(&log).push(2);
    done.complete(Ok(()));
    q.finish().unwrap();
    assert_eq!((e.status(), logged(&log)), (EventStatus::Complete, vec![1, 2, 3]));
}

#[test]
fn a_failed_or_lost_completion_or_wait_list_ends_it_with_an_error() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, IN_ORDER);
    let failed = enqueue_async(&q, &[], Box::new(|done| done.complete(Err(code::INVALID_OPERATION))));
    let lost = enqueue_async(&q, &[], Box::new(drop));
    let panicked = enqueue_async(&q, &[], Box::new(|_| panic!("an executor's bug")));
    let bad = Event::user(&ctx);
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let skipped = enqueue_async(
        &q,
        std::slice::from_ref(&bad),
        Box::new(move |d| {
            r.store(true, Ordering::SeqCst);
            d.complete(Ok(()))
        }),
    );
    bad.set_user_status(-5).unwrap();
    let log: Log = Arc::default();
    let last = q.enqueue(command_type::USER, &[], false, push(&log, 1)).unwrap();
    wait(&last);
    assert_eq!(failed.status(), EventStatus::Error(code::INVALID_OPERATION));
    assert_eq!(lost.status(), EventStatus::Error(code::OUT_OF_RESOURCES));
    assert_eq!(panicked.status(), EventStatus::Error(code::OUT_OF_RESOURCES));
    assert_eq!(skipped.status(), EventStatus::Error(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
    assert!(!ran.load(Ordering::SeqCst), "started although its wait list failed");
    assert_eq!(logged(&log), vec![1]);
}
