//! Tests of the inline path, of concurrent enqueues, of dropping a queue with
//! pending commands, and a timing of the inline round trip.

use super::*;
use crate::sync;

#[test]
fn blocking_commands_run_inline_when_nothing_is_pending() {
    let _g = shared_lock();
    let ctx = context();
    let me = thread::current().id();
    let ran_on = |tx: &mpsc::Sender<thread::ThreadId>| -> Work {
        let tx = tx.clone();
        Box::new(move || {
            tx.send(thread::current().id()).unwrap();
            Ok(())
        })
    };
    let (tx, rx) = mpsc::channel();
    for props in [IN_ORDER, OUT_OF_ORDER] {
        let q = queue(&ctx, props);
        q.enqueue(command_type::USER, &[], true, ran_on(&tx)).unwrap();
        assert_eq!(rx.recv().unwrap(), me, "a blocking command on an idle queue did not run inline");
        let e = q.enqueue(command_type::USER, &[], false, ran_on(&tx)).unwrap();
        wait(&e);
        assert_ne!(rx.recv().unwrap(), me, "a non-blocking command ran on the enqueuing thread");
        // With a command pending: in order, the blocking command goes to
        // the worker behind it (the gate opens once both are enqueued);
        // out of order, nothing holds it back.
        let gate = Event::user(&ctx);
        q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
        let setter = (!props.out_of_order).then(|| {
            let (gate, q) = (gate.clone(), q.clone());
            thread::spawn(move || {
                eventually("the blocking command is enqueued", || q.pending_commands() == 2);
                gate.set_user_status(0).unwrap();
            })
        });
        let e = q.enqueue(command_type::USER, &[], true, ran_on(&tx)).unwrap();
        assert_eq!(e.status(), EventStatus::Complete);
        let on = rx.recv().unwrap();
        if props.out_of_order {
            assert_eq!(on, me, "out of order, a blocking command did not run inline");
            assert_eq!(gate.status(), EventStatus::Submitted);
            gate.set_user_status(0).unwrap();
        } else {
            assert_ne!(on, me, "in order, a blocking command behind a pending one ran inline");
            assert_eq!(gate.status(), EventStatus::Complete, "ran ahead of a pending command");
        }
        if let Some(s) = setter {
            s.join().unwrap();
        }
        q.finish().unwrap();
    }
}

#[test]
fn commands_queued_behind_an_inline_command_run_after_it() {
    let _g = shared_lock();
    let ctx = context();
    for props in [IN_ORDER, OUT_OF_ORDER] {
        let q = queue(&ctx, props);
        let log: Log = Arc::default();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let inline = {
            let (q, log) = (q.clone(), log.clone());
            thread::spawn(move || {
                let work: Work = Box::new(move || {
                    started_tx.send(()).unwrap();
                    go_rx.recv_timeout(DEADLINE).map_err(|_| code::OUT_OF_RESOURCES)?;
                    sync::lock(&log).push(1);
                    Ok(())
                });
                q.enqueue(command_type::USER, &[], true, work)
            })
        };
        started_rx.recv_timeout(DEADLINE).unwrap();
        // In order it waits for the inline command; out of order, a
        // marker without a wait list does.
        let e = if props.out_of_order {
            q.enqueue_marker(&[]).unwrap()
        } else {
            q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap()
        };
        thread::sleep(SETTLE);
        assert_eq!(e.status(), if props.out_of_order { EventStatus::Queued } else { EventStatus::Submitted });
        go_tx.send(()).unwrap();
        inline.join().unwrap().unwrap();
        within("a command queued behind an inline one", move || wait(&e));
        assert_eq!(logged(&log), if props.out_of_order { vec![1] } else { vec![1, 2] });
    }
}

#[test]
fn concurrent_enqueues_keep_in_order_semantics() {
    let _g = shared_lock();
    let ctx = context();
    for props in [IN_ORDER, OUT_OF_ORDER] {
        let q = queue(&ctx, props);
        let busy = Arc::new(AtomicBool::new(false));
        let overlaps = Arc::new(AtomicUsize::new(0));
        let order: Arc<Mutex<Vec<(u32, u32)>>> = Arc::default();
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let (q, busy, overlaps, order) = (q.clone(), busy.clone(), overlaps.clone(), order.clone());
                thread::spawn(move || {
                    let mut last = None;
                    for i in 0..300u32 {
                        let (busy, overlaps, order) = (busy.clone(), overlaps.clone(), order.clone());
                        let work: Work = Box::new(move || {
                            if busy.swap(true, Ordering::SeqCst) {
                                overlaps.fetch_add(1, Ordering::SeqCst);
                            }
                            sync::lock(&order).push((t, i));
                            thread::yield_now();
                            busy.store(false, Ordering::SeqCst);
                            Ok(())
                        });
                        let wl: Vec<Event> = last.iter().cloned().collect();
                        let e = q.enqueue(command_type::USER, &wl, (i + t) % 3 == 0, work).unwrap();
                        if i % 7 == 0 {
                            last = Some(e);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        q.finish().unwrap();
        assert_eq!(q.pending_commands(), 0);
        let order = sync::lock(&order);
        assert_eq!(order.len(), 1200);
        if !props.out_of_order {
            assert_eq!(overlaps.load(Ordering::SeqCst), 0, "commands of an in-order queue overlapped");
            for t in 0..4 {
                let mine: Vec<u32> = order.iter().filter(|x| x.0 == t).map(|x| x.1).collect();
                assert!(mine.windows(2).all(|w| w[0] < w[1]), "thread {t}'s commands ran out of enqueue order");
            }
        }
    }
}

#[test]
fn dropping_a_queue_with_pending_commands_neither_hangs_nor_leaks_threads() {
    let _g = exclusive_lock();
    let before = threads();
    let ctx = context();
    let q = queue(&ctx, OUT_OF_ORDER);
    let name = format!("dmabq-{}", q.shared.id);
    let shared = Arc::downgrade(&q.shared);
    let gate = Event::user(&ctx);
    let ran = Arc::new(AtomicUsize::new(0));
    let count = |ran: &Arc<AtomicUsize>| -> Work {
        let ran = ran.clone();
        Box::new(move || {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    };
    let runnable: Vec<Event> =
        (0..4).map(|_| q.enqueue(command_type::USER, &[], false, count(&ran)).unwrap()).collect();
    let pending = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, count(&ran)).unwrap();
    // A command holding the last reference to its own queue.
    let q_in = queue(&ctx, IN_ORDER);
    let name_in = format!("dmabq-{}", q_in.shared.id);
    let shared_in = Arc::downgrade(&q_in.shared);
    let holder = q_in.clone();
    let self_drop = q_in
        .enqueue(
            command_type::USER,
            std::slice::from_ref(&gate),
            false,
            Box::new(move || {
                drop(holder);
                Ok(())
            }),
        )
        .unwrap();
    drop(q_in);
    let _warm = q.enqueue(command_type::USER, &[], false, ok()).unwrap();
    eventually("workers start", || threads_named(&name) > 0);
    within("dropping a queue with pending commands", move || drop(q));
    assert_eq!(threads_named(&name), 0, "workers outlive their queue");
    assert!(runnable.iter().all(|e| e.status() == EventStatus::Complete), "runnable commands were dropped");
    assert_eq!(pending.status(), EventStatus::Queued);
    assert_eq!(ran.load(Ordering::SeqCst), 4);
    assert!(pending.queue().is_none());
    // Its wait list resolves: it still runs, on a worker that then exits.
    gate.set_user_status(0).unwrap();
    within("a command of a dropped queue", {
        let pending = pending.clone();
        move || wait(&pending)
    });
    within("a command dropping its own queue", move || wait(&self_drop));
    assert_eq!(ran.load(Ordering::SeqCst), 5);
    eventually("late workers exit", || threads_named(&name) == 0 && threads_named(&name_in) == 0);
    eventually("the queues' schedulers are freed", || shared.strong_count() == 0 && shared_in.strong_count() == 0);
    let t0 = Instant::now();
    loop {
        let left = new_threads_of_ours(&before);
        if left.is_empty() {
            break;
        }
        assert!(t0.elapsed() < DEADLINE, "threads of the test left running: {left:?}");
        thread::sleep(Duration::from_millis(1));
    }
    println!("threads: {} before, {} after (other tests may run meanwhile)", before.len(), threads().len());
}

#[test]
fn inline_round_trip_time() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, IN_ORDER);
    let dst = Arc::new(Mutex::new([0u8; 64]));
    let src = [7u8; 64];
    let memcpy = || -> Work {
        let dst = dst.clone();
        Box::new(move || {
            sync::lock(&dst).copy_from_slice(&src);
            Ok(())
        })
    };
    let rounds = 20_000;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t0 = Instant::now();
        let e = q.enqueue_with_use(command_type::MEMCPY_INTEL, &[], true, CommandUse::Nothing, memcpy()).unwrap();
        samples.push(t0.elapsed());
        debug_assert_eq!(e.status(), EventStatus::Complete);
    }
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / rounds as u32;
    let mut worker = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let t0 = Instant::now();
        let e = q.enqueue(command_type::MEMCPY_INTEL, &[], false, memcpy()).unwrap();
        e.wait_done();
        worker.push(t0.elapsed());
    }
    worker.sort();
    println!(
        "blocking 64-byte memcpy, inline: mean {:?}, median {:?}, p99 {:?}; non-blocking + wait through the worker: median {:?} ({} build)",
        mean,
        samples[rounds / 2],
        samples[rounds * 99 / 100],
        worker[worker.len() / 2],
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    assert_eq!(*sync::lock(&dst), src);
}
