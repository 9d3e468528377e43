//! Unit tests of the queue: helpers, properties, ordering, wait lists, errors,
//! callbacks and profiling. Markers, barriers and waits are in [`sync`];
//! the inline path, concurrency and dropping a queue in [`inline`];
//! asynchronous commands in [`asynchronous`].

mod asynchronous;
mod inline;
mod sync;

use super::*;
use crate::error::{code, ClErrorKind};
use crate::runtime::device::{DeviceType, UsmCaps};
use crate::runtime::event::tests::{context, exclusive_lock, shared_lock};
use crate::runtime::event::{exec_status, now_ns, profiling_info, EventStatus};
use crate::runtime::platform::Platform;
use crate::sys::addr::HostAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const IN_ORDER: QueueProps = QueueProps { out_of_order: false, profiling: false };
const OUT_OF_ORDER: QueueProps = QueueProps { out_of_order: true, profiling: false };
/// A deadline that turns a hang into a failure; never a performance bound.
const DEADLINE: Duration = Duration::from_secs(20);
/// How long a test lets a command that must not run have the chance to.
const SETTLE: Duration = Duration::from_millis(30);

type Log = Arc<Mutex<Vec<u32>>>;

fn queue(ctx: &Arc<Context>, props: QueueProps) -> Arc<Queue> {
    Queue::new(ctx, Platform::get().cpu(), props).unwrap()
}

fn ok() -> Work {
    Box::new(|| Ok(()))
}

fn push(log: &Log, v: u32) -> Work {
    let log = log.clone();
    Box::new(move || {
        crate::sync::lock(&log).push(v);
        Ok(())
    })
}

fn logged(log: &Log) -> Vec<u32> {
    crate::sync::lock(log).clone()
}

fn wait(e: &Event) {
    Event::wait(std::slice::from_ref(e)).unwrap();
}

/// Run `f` on a thread and fail (rather than hang) if it does not return.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new().name("dmabq-test".into()).spawn(move || tx.send(f()).unwrap()).unwrap();
    rx.recv_timeout(DEADLINE).unwrap_or_else(|_| panic!("{what} did not return"))
}

/// The threads of this process: (tid, name).
fn threads() -> Vec<(String, String)> {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap().flatten();
    tasks
        .filter_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            Some((t.file_name().to_string_lossy().into_owned(), comm.trim_end().to_owned()))
        })
        .collect()
}

fn threads_named(name: &str) -> usize {
    threads().iter().filter(|(_, n)| n == name).count()
}

/// Threads started since `before` that this module's tests own: queue
/// workers (`dmabq-<queue id>`) and [`within`]'s helpers (`dmabq-test`).
/// Threads of other tests (libtest's, waiting for the test lock or in
/// other modules) are not counted.
fn new_threads_of_ours(before: &[(String, String)]) -> Vec<(String, String)> {
    threads().into_iter().filter(|t| t.1.starts_with("dmabq-") && !before.contains(t)).collect()
}

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < DEADLINE, "{what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn new_checks_the_device_and_reports_its_info() {
    let _g = shared_lock();
    let ctx = context();
    let cpu = Platform::get().cpu();
    let other = Arc::new(Device {
        index: 9,
        name: "not in the context".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: 1 << 20,
        max_alignment: 128,
        host_unified_memory: false,
        usm: UsmCaps { host: 0, device: 0, single_device_shared: 0, cross_device_shared: 0, shared_system: 0 },
        svm: 0,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    });
    let err = Queue::new(&ctx, &other, IN_ORDER).unwrap_err();
    assert_eq!(err.kind, ClErrorKind::InvalidDevice);
    assert!(err.message.contains("not in the context"), "{err}");
    let props = QueueProps { out_of_order: true, profiling: true };
    let q = Queue::new(&ctx, cpu, props).unwrap();
    assert!(Arc::ptr_eq(q.context(), &ctx) && Arc::ptr_eq(q.device(), cpu));
    assert_eq!(q.props(), props);
    assert_eq!(q.reference_count(), 1);
    let q2 = q.clone();
    assert_eq!(q.reference_count(), 2);
    drop(q2);
    // Events point back at their queue without holding it.
    let events: Vec<Event> = (0..8).map(|_| q.enqueue(command_type::MARKER, &[], false, ok()).unwrap()).collect();
    q.finish().unwrap();
    assert_eq!(q.reference_count(), 1);
    assert!(Arc::ptr_eq(&events[0].queue().unwrap(), &q));
    drop(q);
    assert!(events[0].queue().is_none());
    assert!(!events[0].is_user());
}

#[test]
fn queue_properties_from_and_to_bits() {
    assert_eq!(QueueProps::from_bits(0).unwrap(), IN_ORDER);
    let both = QueueProps::from_bits(3).unwrap();
    assert!(both.out_of_order && both.profiling);
    assert_eq!(both.bits(), 3);
    assert_eq!(QueueProps::from_bits(properties::ON_DEVICE).unwrap_err().kind, ClErrorKind::InvalidQueueProperties);
    assert_eq!(QueueProps::from_bits(1 << 7).unwrap_err().kind, ClErrorKind::InvalidValue);
}

#[test]
fn command_use_ranges_overlap() {
    let u = CommandUse::Pair([UsedRange::new(HostAddr(0x1000), 0x100), UsedRange::new(HostAddr(0x3000), 0x10)]);
    assert!(u.touches(HostAddr(0x10ff), 1) && u.touches(HostAddr(0xf00), 0x101) && u.touches(HostAddr(0x3008), 0));
    assert!(
        !u.touches(HostAddr(0x1100), 0x100) && !u.touches(HostAddr(0xf00), 0x100) && !u.touches(HostAddr(0x3010), 4)
    );
    assert!(CommandUse::range(HostAddr(0x10), 0).touches(HostAddr(0x10), 1));
    assert!(CommandUse::Ranges(vec![UsedRange::new(HostAddr(1), 1), UsedRange::new(HostAddr(50), 10)])
        .touches(HostAddr(59), 100));
    assert!(!CommandUse::Ranges(vec![]).touches(HostAddr(0), usize::MAX));
    assert!(CommandUse::All.touches(HostAddr(12345), 1) && !CommandUse::Nothing.touches(HostAddr(0), usize::MAX));
    assert!(CommandUse::range(HostAddr(usize::MAX - 1), 100).touches(HostAddr(usize::MAX - 1), 1));
}

/// What was `CommandUse::touches_alloc`'s doc example.
#[test]
fn command_use_kinds_cover_their_types() {
    use crate::memory::heap::AllocKind;
    let k = CommandUse::Kinds {
        host: true,
        device: false,
        shared: false,
        ranges: vec![UsedRange::new(HostAddr(0x9000), 8)],
    };
    assert!(k.touches_alloc(HostAddr(0x1000), 64, AllocKind::Host));
    assert!(!k.touches_alloc(HostAddr(0x1000), 64, AllocKind::Device));
    assert!(k.touches_alloc(HostAddr(0x9000), 64, AllocKind::Device), "an explicit range");
    assert!(CommandUse::range(HostAddr(0x1000), 1).touches_alloc(HostAddr(0x1000), 64, AllocKind::Svm));
}

#[test]
fn in_order_commands_run_one_at_a_time_in_enqueue_order() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, IN_ORDER);
    let gate = Event::user(&ctx);
    let log: Log = Arc::default();
    let busy = Arc::new(AtomicBool::new(false));
    let step = |v: u32| -> Work {
        let (log, busy) = (log.clone(), busy.clone());
        Box::new(move || {
            assert!(!busy.swap(true, Ordering::SeqCst), "two commands of an in-order queue overlap");
            thread::sleep(Duration::from_micros(100));
            crate::sync::lock(&log).push(v);
            busy.store(false, Ordering::SeqCst);
            Ok(())
        })
    };
    let first = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, step(0)).unwrap();
    let rest: Vec<Event> = (1..40).map(|v| q.enqueue(command_type::MARKER, &[], false, step(v)).unwrap()).collect();
    thread::sleep(SETTLE);
    assert!(logged(&log).is_empty(), "commands ran ahead of one still waiting for its wait list");
    assert_eq!(first.status(), EventStatus::Queued);
    assert_eq!(rest[0].status(), EventStatus::Submitted);
    assert_eq!(q.pending_commands(), 40);
    gate.set_user_status(0).unwrap();
    q.finish().unwrap();
    assert_eq!(logged(&log), (0..40).collect::<Vec<_>>());
    assert!(rest.iter().all(|e| e.status() == EventStatus::Complete));
    assert_eq!(q.pending_commands(), 0);
}

#[test]
fn out_of_order_commands_run_together_once_their_wait_list_resolves() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, OUT_OF_ORDER);
    let gate = Event::user(&ctx);
    let started = Arc::new(AtomicUsize::new(0));
    // Each of the two only completes if the other runs at the same time.
    let (a_tx, a_rx) = mpsc::channel::<()>();
    let (b_tx, b_rx) = mpsc::channel::<()>();
    let meet = |tx: mpsc::Sender<()>, rx: mpsc::Receiver<()>| -> Work {
        let started = started.clone();
        Box::new(move || {
            started.fetch_add(1, Ordering::SeqCst);
            tx.send(()).unwrap();
            rx.recv_timeout(DEADLINE).map_err(|_| code::OUT_OF_RESOURCES)
        })
    };
    let w = std::slice::from_ref(&gate);
    let a = q.enqueue(command_type::USER, w, false, meet(a_tx, b_rx)).unwrap();
    let b = q.enqueue(command_type::USER, w, false, meet(b_tx, a_rx)).unwrap();
    // Not ordered behind them.
    let c = q.enqueue(command_type::MARKER, &[], false, ok()).unwrap();
    within("a command without a wait list", move || wait(&c));
    thread::sleep(SETTLE);
    assert_eq!(started.load(Ordering::SeqCst), 0, "ran before its wait list completed");
    assert_eq!((a.status(), b.status()), (EventStatus::Queued, EventStatus::Queued));
    gate.set_user_status(0).unwrap();
    let q2 = q.clone();
    within("finish", move || q2.finish().unwrap());
    assert_eq!((a.status(), b.status()), (EventStatus::Complete, EventStatus::Complete));
}

#[test]
fn wait_lists_cross_queues() {
    let _g = shared_lock();
    let ctx = context();
    let q1 = queue(&ctx, IN_ORDER);
    let q2 = queue(&ctx, OUT_OF_ORDER);
    let q3 = queue(&ctx, IN_ORDER);
    let gate = Event::user(&ctx);
    let log: Log = Arc::default();
    let e1 = q1.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
    let e2 = q2.enqueue(command_type::USER, std::slice::from_ref(&e1), false, push(&log, 2)).unwrap();
    let e3 = q3.enqueue(command_type::USER, &[e2.clone(), gate.clone()], false, push(&log, 3)).unwrap();
    let e4 = q1.enqueue(command_type::USER, std::slice::from_ref(&e3), false, push(&log, 4)).unwrap();
    thread::sleep(SETTLE);
    assert!(logged(&log).is_empty());
    gate.set_user_status(0).unwrap();
    within("the last command of the chain", move || wait(&e4));
    assert_eq!(logged(&log), [1, 2, 3, 4]);
    // Events of another context are refused.
    let other = Event::user(&context());
    let err = q1.enqueue(command_type::USER, &[e1.clone(), other.clone()], false, ok()).unwrap_err();
    assert_eq!(err.kind, ClErrorKind::InvalidContext);
    assert!(err.message.contains("event_wait_list[1]"), "{err}");
    assert_eq!(check_wait_list(&ctx, &[e1, other]).unwrap_err().kind, ClErrorKind::InvalidContext);
    assert!(check_wait_list(&ctx, &[]).is_ok());
}

#[test]
fn wait_list_errors_fail_dependants_without_running_them() {
    let _g = shared_lock();
    let ctx = context();
    for props in [IN_ORDER, OUT_OF_ORDER] {
        let q = queue(&ctx, props);
        let other = queue(&ctx, props);
        let gate = Event::user(&ctx);
        let log: Log = Arc::default();
        let e1 = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
        let e2 = other.enqueue(command_type::USER, std::slice::from_ref(&e1), false, push(&log, 2)).unwrap();
        let e3 = q.enqueue(command_type::USER, std::slice::from_ref(&e2), false, push(&log, 3)).unwrap();
        gate.set_user_status(code::OUT_OF_RESOURCES).unwrap();
        within("a failed chain", {
            let e3 = e3.clone();
            move || e3.wait_done()
        });
        for e in [&e1, &e2, &e3] {
            assert_eq!(e.status(), EventStatus::Error(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
        }
        assert!(logged(&log).is_empty(), "a command ran although its wait list failed");
        // Blocking, on the inline path (everything finished).
        let err = q.enqueue(command_type::MEMCPY_INTEL, std::slice::from_ref(&e3), true, push(&log, 4)).unwrap_err();
        assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
        // Blocking, through a worker: the event fails while the enqueue waits.
        let late = Event::user(&ctx);
        let pending = q.enqueue(command_type::USER, std::slice::from_ref(&late), false, push(&log, 5)).unwrap();
        let setter = {
            let late = late.clone();
            thread::spawn(move || {
                thread::sleep(SETTLE);
                late.set_user_status(-9999).unwrap();
            })
        };
        let q2 = q.clone();
        let err = within("a blocking enqueue after a failing event", move || {
            q2.enqueue(command_type::MEMCPY_INTEL, &[pending], true, Box::new(|| Ok(())))
        })
        .unwrap_err();
        setter.join().unwrap();
        assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
        assert!(logged(&log).is_empty());
        // Events of the wait list whose errors do not concern a command: none
        // (order alone does not propagate errors on an in-order queue).
        let failing = q.enqueue(command_type::USER, &[], false, Box::new(|| Err(code::MAP_FAILURE))).unwrap();
        let after = q.enqueue(command_type::USER, &[], false, push(&log, 6)).unwrap();
        q.finish().unwrap();
        assert_eq!(failing.status(), EventStatus::Error(code::MAP_FAILURE));
        assert_eq!(after.status(), EventStatus::Complete);
        assert_eq!(logged(&log), [6]);
    }
}

#[test]
fn releasing_an_unset_user_event_fails_its_dependants() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, IN_ORDER);
    let shared = Arc::downgrade(&q.shared);
    let log: Log = Arc::default();
    let gate = Event::user(&ctx);
    let e = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, push(&log, 1)).unwrap();
    let after = q.enqueue(command_type::USER, &[], false, push(&log, 2)).unwrap();
    drop(gate);
    within("the dependant of a released user event", move || wait(&after));
    assert_eq!(e.status(), EventStatus::Error(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
    assert_eq!(logged(&log), [2]);
    drop(q);
    assert_eq!(shared.strong_count(), 0, "the queue's scheduler leaked");
}

#[test]
fn failing_work_sets_its_code_and_fails_a_blocking_enqueue() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, IN_ORDER);
    let err = q.enqueue(command_type::MEMCPY_INTEL, &[], true, Box::new(|| Err(code::MEM_COPY_OVERLAP))).unwrap_err();
    assert_eq!(err.kind, ClErrorKind::MemCopyOverlap);
    assert!(err.message.contains("COMMAND_MEMCPY_INTEL"), "{err}");
    let e = q.enqueue(command_type::MEMCPY_INTEL, &[], false, Box::new(|| Err(code::MEM_COPY_OVERLAP))).unwrap();
    let err = Event::wait(std::slice::from_ref(&e)).unwrap_err();
    assert_eq!(err.kind, ClErrorKind::ExecStatusErrorForEventsInWaitList);
    assert_eq!(e.status(), EventStatus::Error(code::MEM_COPY_OVERLAP));
    // A code without a kind, and a panic, both fail the command alone.
    let err = q.enqueue(command_type::USER, &[], true, Box::new(|| Err(-1234))).unwrap_err();
    assert_eq!(err.kind, ClErrorKind::OutOfResources);
    let e =
        q.enqueue(command_type::USER, &[], false, Box::new(|| panic!("work panics (expected by the test)"))).unwrap();
    assert_eq!(e.wait_done(), code::OUT_OF_RESOURCES);
    q.enqueue(command_type::USER, &[], true, ok()).unwrap();
}

#[test]
fn callbacks_of_queue_events() {
    let _g = shared_lock();
    let ctx = context();
    let q = queue(&ctx, OUT_OF_ORDER);
    let (tx, rx) = mpsc::channel();
    let cb = |tag: i32| -> crate::runtime::event::EventCallback {
        let tx = tx.clone();
        Box::new(move |_, s| tx.send((tag, s)).unwrap())
    };
    let gate = Event::user(&ctx);
    let e = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, ok()).unwrap();
    e.set_callback(exec_status::COMPLETE, cb(0)).unwrap();
    e.set_callback(exec_status::RUNNING, cb(1)).unwrap();
    e.set_callback(exec_status::SUBMITTED, cb(2)).unwrap();
    thread::sleep(SETTLE);
    assert!(rx.try_recv().is_err());
    gate.set_user_status(0).unwrap();
    let got: Vec<_> = (0..3).map(|_| rx.recv_timeout(DEADLINE).unwrap()).collect();
    assert_eq!(got, [(2, 2), (1, 1), (0, 0)]);
    e.set_callback(exec_status::RUNNING, cb(3)).unwrap();
    assert_eq!(rx.try_recv().unwrap(), (3, 1), "not called at once for a status already passed");
    // On error every callback gets the error code.
    let bad = Event::user(&ctx);
    let e = q.enqueue(command_type::USER, std::slice::from_ref(&bad), false, ok()).unwrap();
    e.set_callback(exec_status::SUBMITTED, cb(4)).unwrap();
    e.set_callback(exec_status::COMPLETE, cb(5)).unwrap();
    bad.set_user_status(-5).unwrap();
    let got: Vec<_> = (0..2).map(|_| rx.recv_timeout(DEADLINE).unwrap()).collect();
    assert_eq!(got, [(4, -14), (5, -14)]);
    // Inline: run on the enqueuing thread before the enqueue returns.
    let e = Event::user(&ctx);
    e.set_callback(exec_status::COMPLETE, cb(6)).unwrap();
    e.set_user_status(0).unwrap();
    assert_eq!(rx.try_recv().unwrap(), (6, 0));
}

#[test]
fn profiling_times_are_monotonic_and_only_with_profiling() {
    let _g = shared_lock();
    let ctx = context();
    for out_of_order in [false, true] {
        let q = queue(&ctx, QueueProps { out_of_order, profiling: true });
        // Inline.
        let e = q.enqueue(command_type::USER, &[], true, ok()).unwrap();
        let t = e.profiling_times().unwrap();
        assert!(t.queued > 0 && t.queued <= t.submit && t.submit <= t.start && t.start <= t.end, "{t:?}");
        assert!(t.end <= t.complete);
        // Through a worker, after a wait list.
        let gate = Event::user(&ctx);
        let e = q
            .enqueue(
                command_type::USER,
                std::slice::from_ref(&gate),
                false,
                Box::new(|| {
                    thread::sleep(Duration::from_millis(2));
                    Ok(())
                }),
            )
            .unwrap();
        assert_eq!(e.profiling_info(profiling_info::QUEUED).unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
        thread::sleep(Duration::from_millis(2));
        let released = now_ns();
        gate.set_user_status(0).unwrap();
        wait(&e);
        let t = e.profiling_times().unwrap();
        assert!(t.queued <= t.submit && t.submit <= t.start && t.start <= t.end && t.end <= t.complete, "{t:?}");
        assert!(t.queued < released && t.submit >= released, "submit is when the wait list resolved: {t:?}");
        assert!(t.end - t.start >= 2_000_000, "end - start covers the work: {t:?}");
        assert_eq!(e.profiling_info(profiling_info::END).unwrap(), t.end);
    }
    let q = queue(&ctx, IN_ORDER);
    let e = q.enqueue(command_type::USER, &[], true, ok()).unwrap();
    assert_eq!(e.profiling_times().unwrap_err().kind, ClErrorKind::ProfilingInfoNotAvailable);
}

/// What a command's work holds (its buffers, and so an import's locked
/// pages) is released before its event finishes, whether the work ran or
/// its wait list failed: an application that waited for the event may then
/// unmap the memory behind it.
#[test]
fn a_commands_work_is_released_before_its_event_finishes() {
    let _g = shared_lock();
    let ctx = context();
    struct Held(Arc<AtomicBool>);
    impl Drop for Held {
        fn drop(&mut self) {
            // Slow on purpose: a release that starts after the event
            // finished is still under way when the waiter looks.
            thread::sleep(SETTLE);
            self.0.store(true, std::sync::atomic::Ordering::Release);
        }
    }
    let holding = |released: &Arc<AtomicBool>| -> Work {
        let held = Held(released.clone());
        Box::new(move || {
            let _held = &held;
            Ok(())
        })
    };
    for props in [IN_ORDER, OUT_OF_ORDER] {
        let q = queue(&ctx, props);
        for (gate_status, what) in
            [(exec_status::COMPLETE, "ran"), (code::OUT_OF_RESOURCES, "was skipped (its wait list failed)")]
        {
            let released = Arc::new(AtomicBool::new(false));
            let gate = Event::user(&ctx);
            let e = q.enqueue(command_type::USER, std::slice::from_ref(&gate), false, holding(&released)).unwrap();
            gate.set_user_status(gate_status).unwrap();
            within("the command", {
                let e = e.clone();
                move || e.wait_done()
            });
            assert!(
                released.load(std::sync::atomic::Ordering::Acquire),
                "the work of a command that {what} was still held when its event finished ({props:?})"
            );
        }
    }
}
