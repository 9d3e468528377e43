//! Tests of `clFinish`, markers, barriers and waiting for the commands that
//! use memory.

use super::*;
use crate::sys::addr::HostAddr;

#[test]
fn finish_waits_for_every_command() {
    let _g = shared_lock();
    let ctx = context();
    for props in [IN_ORDER, OUT_OF_ORDER] {
        let q = queue(&ctx, props);
        q.finish().unwrap();
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..20 {
            let done = done.clone();
            q.enqueue(
                command_type::USER,
                &[],
                false,
                Box::new(move || {
                    thread::sleep(Duration::from_millis(1));
                    done.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
            )
            .unwrap();
        }
        q.flush().unwrap();
        q.finish().unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 20, "{props:?}");
    }
}

#[test]
fn markers_and_barriers() {
    let _g = shared_lock();
    let ctx = context();
    // Out of order: a marker without a wait list waits for everything
    // before it, without holding back what comes after.
    let q = queue(&ctx, OUT_OF_ORDER);
    let log: Log = Arc::default();
    let gate = Event::user(&ctx);
    let a = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
    let m = q.enqueue_marker(&[]).unwrap();
    assert_eq!(m.command_type(), command_type::MARKER);
    let c = q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap();
    within("a command after a marker", move || wait(&c));
    thread::sleep(SETTLE);
    assert_ne!(m.status(), EventStatus::Complete);
    gate.set_user_status(0).unwrap();
    within("the marker", move || wait(&m));
    assert_eq!(a.status(), EventStatus::Complete);
    assert_eq!(logged(&log), [2, 1]);

    // A barrier holds back everything after it.
    let log: Log = Arc::default();
    let gate = Event::user(&ctx);
    q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
    let b = q.enqueue_barrier(&[]).unwrap();
    assert_eq!(b.command_type(), command_type::BARRIER);
    let c = q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap();
    // Not inline: a barrier is pending.
    let q2 = q.clone();
    let log2 = log.clone();
    let blocking = thread::spawn(move || q2.enqueue(command_type::USER, &[], true, push(&log2, 3)));
    thread::sleep(SETTLE);
    assert!(logged(&log).is_empty(), "ran ahead of a barrier");
    gate.set_user_status(0).unwrap();
    within("a command after a barrier", move || wait(&c));
    blocking.join().unwrap().unwrap();
    let got = logged(&log);
    assert_eq!(got[0], 1);
    assert_eq!(got.len(), 3);

    // A barrier with a wait list waits for that list only.
    let (g1, g2) = (Event::user(&ctx), Event::user(&ctx));
    let a = q.enqueue(command_type::USER, std::slice::from_ref(&g1), false, ok()).unwrap();
    let _b = q.enqueue_barrier(std::slice::from_ref(&g2)).unwrap();
    let c = q.enqueue(command_type::USER, &[], false, ok()).unwrap();
    thread::sleep(SETTLE);
    assert_eq!(c.status(), EventStatus::Queued);
    g2.set_user_status(0).unwrap();
    within("a command after a barrier with a wait list", move || wait(&c));
    assert_eq!(a.status(), EventStatus::Queued);
    g1.set_user_status(0).unwrap();
    q.finish().unwrap();

    // Errors: a marker takes them from its wait list, not from order.
    let bad = Event::user(&ctx);
    let failed = q.enqueue(command_type::USER, std::slice::from_ref(&bad), false, ok()).unwrap();
    let m_list = q.enqueue_marker(std::slice::from_ref(&failed)).unwrap();
    let m_all = q.enqueue_marker(&[]).unwrap();
    bad.set_user_status(-5).unwrap();
    q.finish().unwrap();
    assert_eq!(m_list.status(), EventStatus::Error(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
    assert_eq!(m_all.status(), EventStatus::Complete);

    // In order.
    let q = queue(&ctx, IN_ORDER);
    let gate = Event::user(&ctx);
    q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
    let m = q.enqueue_marker(&[]).unwrap();
    let b = q.enqueue_barrier(&[]).unwrap();
    thread::sleep(SETTLE);
    assert_eq!((m.status(), b.status()), (EventStatus::Submitted, EventStatus::Submitted));
    gate.set_user_status(0).unwrap();
    within("an in-order barrier", move || wait(&b));
    assert_eq!(m.status(), EventStatus::Complete);
}

#[test]
fn waiting_for_the_commands_that_use_memory() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, OUT_OF_ORDER);
    let q_in = queue(&ctx, IN_ORDER);
    let gate = Event::user(&ctx);
    let w = std::slice::from_ref(&gate);
    let a = q
        .enqueue_with_use(command_type::MEMFILL_INTEL, w, false, CommandUse::range(HostAddr(0x1000), 0x100), ok())
        .unwrap();
    let pair = CommandUse::Pair([UsedRange::new(HostAddr(0x5000), 0x10), UsedRange::new(HostAddr(0x6000), 0x10)]);
    let b = q_in.enqueue_with_use(command_type::MEMCPY_INTEL, w, false, pair, ok()).unwrap();
    let q2 = q.clone();
    within("waiting for commands that use nothing pending", move || {
        q2.wait_for_commands_using(|u| u.touches(HostAddr(0x9000), 16));
        q2.wait_for_commands_using(|u| u.touches(HostAddr(0x1100), 16));
    });
    assert_eq!(a.status(), EventStatus::Queued);
    let mut found = queues_of(&ctx);
    assert_eq!(found.len(), 2);
    found.retain(|x| Arc::ptr_eq(x, &q) || Arc::ptr_eq(x, &q_in));
    assert_eq!(found.len(), 2);
    drop(found);
    let setter = {
        let gate = gate.clone();
        thread::spawn(move || {
            thread::sleep(SETTLE);
            gate.set_user_status(0).unwrap();
        })
    };
    let ctx2 = ctx.clone();
    within("waiting for the commands that use a range", move || {
        wait_for_context_commands_using(&ctx2, |u| u.touches(HostAddr(0x6008), 1))
    });
    assert_eq!(b.status(), EventStatus::Complete);
    setter.join().unwrap();
    q.wait_for_commands_using(|u| u.touches(HostAddr(0x1000), 1));
    assert_eq!(a.status(), EventStatus::Complete);
    // Plain `enqueue` may use anything.
    let gate = Event::user(&ctx);
    let e = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
    let (tx, rx) = mpsc::channel();
    let q2 = q.clone();
    let waiter = thread::spawn(move || {
        q2.wait_for_commands_using(|u| u.touches(HostAddr(0xdead_0000), 1));
        tx.send(()).unwrap();
    });
    assert!(rx.recv_timeout(SETTLE).is_err(), "did not wait for a command that may use anything");
    gate.set_user_status(0).unwrap();
    rx.recv_timeout(DEADLINE).unwrap();
    waiter.join().unwrap();
    assert_eq!(e.status(), EventStatus::Complete);
    drop(q);
    assert_eq!(queues_of(&ctx).len(), 1);
    drop(q_in);
    assert!(queues_of(&ctx).is_empty());
}
