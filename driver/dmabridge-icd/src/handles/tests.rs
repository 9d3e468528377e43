//! The registry's and the handles' unit tests.

use dmabridge::runtime::platform::Platform;

use super::registry::SLAB;
use super::*;

#[derive(Debug)]
struct Thing(u32);
impl Kind for Thing {
    const TAG: Tag = Tag::Context;
    const INVALID: cl_int = CL_INVALID_CONTEXT;
}

#[test]
fn released_and_foreign_handles_are_refused_without_dereferencing() {
    let h = into_handle(new_object(Thing(7)));
    assert!(get::<Thing>(h).is_ok());
    assert_eq!(get::<DeviceObj>(h).unwrap_err(), CL_INVALID_DEVICE, "another kind");
    retain::<Thing>(h).unwrap();
    release::<Thing>(h).unwrap();
    release::<Thing>(h).unwrap();
    // Freed now: neither lookup nor release may touch it.
    assert_eq!(get::<Thing>(h).unwrap_err(), CL_INVALID_CONTEXT);
    assert_eq!(release::<Thing>(h).unwrap_err(), CL_INVALID_CONTEXT);
    assert_eq!(get::<Thing>(std::ptr::null()).unwrap_err(), CL_INVALID_CONTEXT);
    let stack = 0u64;
    assert_eq!(get::<Thing>(&stack as *const u64 as *const c_void).unwrap_err(), CL_INVALID_CONTEXT);
}

#[test]
fn a_borrow_answers_as_a_lookup_does() {
    let h = into_handle(new_object(Thing(5)));
    assert_eq!(with::<Thing, _>(h, |t| Ok(t.0)).unwrap(), 5, "from the registry");
    assert_eq!(with::<Thing, _>(h, |t| Ok(t.0)).unwrap(), 5, "from the cache");
    assert_eq!(with::<DeviceObj, _>(h, |_| Ok(())).unwrap_err(), CL_INVALID_DEVICE, "another kind");
    assert_eq!(with::<Thing, _>(std::ptr::null(), |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
    let stack = 0u64;
    assert_eq!(with::<Thing, _>(&stack as *const u64 as *const c_void, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
    // A nested borrow (one slot per thread) takes a counted reference.
    let nested = with::<Thing, _>(h, |outer| with::<Thing, _>(h, |inner| Ok(outer.0 + inner.0)));
    assert_eq!(nested.unwrap(), 10);
    release::<Thing>(h).unwrap();
    assert_eq!(with::<Thing, _>(h, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT, "cached, then freed");
}

#[test]
fn destruction_waits_for_a_borrow_on_another_thread() {
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;

    static DROPPED: AtomicBool = AtomicBool::new(false);
    #[derive(Debug)]
    struct Noisy;
    impl Drop for Noisy {
        fn drop(&mut self) {
            DROPPED.store(true, Ordering::SeqCst);
        }
    }
    impl Kind for Noisy {
        const TAG: Tag = Tag::Context;
        const INVALID: cl_int = CL_INVALID_CONTEXT;
    }

    let h = into_handle(new_object(Noisy)) as usize;
    let (borrowed_tx, borrowed_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let borrower = s.spawn(move || {
            with::<Noisy, _>(h as *const c_void, |_| {
                borrowed_tx.send(()).unwrap();
                go_rx.recv().unwrap(); // the release has started
                std::thread::sleep(std::time::Duration::from_millis(50));
                // Still ours: its fields were not dropped under us.
                Ok(DROPPED.load(Ordering::SeqCst))
            })
        });
        borrowed_rx.recv().unwrap();
        let releaser = s.spawn(move || release::<Noisy>(h as *const c_void));
        go_tx.send(()).unwrap();
        assert_eq!(borrower.join().unwrap(), Ok(false), "destroyed while borrowed");
        assert_eq!(releaser.join().unwrap(), Ok(()));
    });
    assert!(DROPPED.load(Ordering::SeqCst), "destroyed once the borrow ended");
    assert_eq!(with::<Noisy, _>(h as *const c_void, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
}

#[test]
fn an_extra_release_cannot_take_an_implicit_reference() {
    let obj = new_object(Thing(1));
    let h = into_handle(obj.clone()); // `obj` plays an implicit reference
    release::<Thing>(h).unwrap();
    assert_eq!(release::<Thing>(h).unwrap_err(), CL_INVALID_CONTEXT);
    assert!(get::<Thing>(h).is_ok(), "still alive through the implicit reference");
    assert_eq!(reference_count(&get::<Thing>(h).unwrap()), 1);
    drop(obj);
    assert!(get::<Thing>(h).is_err());
}

#[test]
fn the_per_thread_cache_answers_as_the_registry_does() {
    let a = into_handle(new_object(Thing(1)));
    assert_eq!(get::<Thing>(a).unwrap().inner.0, 1, "now cached");
    assert_eq!(get::<DeviceObj>(a).unwrap_err(), CL_INVALID_DEVICE, "cached, but another kind");
    release::<Thing>(a).unwrap();
    assert_eq!(get::<Thing>(a).unwrap_err(), CL_INVALID_CONTEXT, "cached, then freed");
    // A released object's header is quarantined: a new object gets
    // another handle.
    let b = into_handle(new_object(Thing(2)));
    assert_ne!(a, b);
    assert_eq!(get::<Thing>(b).unwrap().inner.0, 2);
    assert_eq!(get::<Thing>(a).unwrap_err(), CL_INVALID_CONTEXT, "not cached, freed");
    // Another thread has its own cache and the same answers.
    let (ua, ub) = (a as usize, b as usize);
    std::thread::scope(|s| {
        s.spawn(move || {
            assert_eq!(get::<Thing>(ub as *const c_void).unwrap().inner.0, 2);
            assert_eq!(get::<Thing>(ua as *const c_void).unwrap_err(), CL_INVALID_CONTEXT);
        });
    });
    release::<Thing>(b).unwrap();
    assert_eq!(get::<Thing>(b).unwrap_err(), CL_INVALID_CONTEXT);
}

/// Runs test `name` of this module alone in a child process of this test
/// binary, so that no other test's threads hold a lock when it forks;
/// `true` in that child (run the test), `false` in the parent (done).
fn alone_in_a_child(name: &str) -> bool {
    const CHILD: &str = "DMABRIDGE_ICD_TEST_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let full = format!("handles::tests::{name}");
    let out = std::process::Command::new(exe)
        .args([full.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{full} in a child process failed:\n{text}");
    false
}

#[test]
fn a_forked_child_does_not_wait_for_its_parents_threads() {
    use std::sync::mpsc;
    if !alone_in_a_child("a_forked_child_does_not_wait_for_its_parents_threads") {
        return;
    }
    let h = into_handle(new_object(Thing(3))) as usize;
    let (borrowing_tx, borrowing_rx) = mpsc::channel();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    // A thread of the parent is inside a borrow of the object when the
    // process forks: the child has no such thread.
    let borrower = std::thread::spawn(move || {
        with::<Thing, _>(h as *const c_void, |_| {
            borrowing_tx.send(()).unwrap();
            let _ = end_rx.recv();
            Ok(())
        })
    });
    borrowing_rx.recv().unwrap();
    // SAFETY: the child calls only `release` (no other thread of this
    // process holds a lock of the ICD: the borrower waits inside its
    // borrow, after its lookup) and `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let ok = release::<Thing>(h as *const c_void).is_ok();
        // SAFETY: ends the child without running the parent's atexit work.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // SAFETY: waitpid on our own child, with a valid status pointer.
    while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
        if std::time::Instant::now() > deadline {
            // SAFETY: our own child, then reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the child's release still waits after 30 s for a thread of the parent");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child's release failed: {status:#x}");
    end_tx.send(()).unwrap();
    assert_eq!(borrower.join().unwrap(), Ok(()));
    release::<Thing>(h as *const c_void).unwrap();
}

#[test]
fn contexts_and_devices_stay_cached_side_by_side() {
    let Some(device) = devices().first() else { return };
    let (ctx, dev) = (into_handle(new_object(Thing(4))) as usize, handle_of(device) as usize);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        // Both looked up once (the registry answers, the cache learns).
        with::<Thing, _>(ctx as *const c_void, |_| Ok(())).unwrap();
        get::<DeviceObj>(dev as *const c_void).unwrap();
        ready_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        // As clDeviceMemAllocINTEL does: the context, then the device.
        for _ in 0..3 {
            with::<Thing, _>(ctx as *const c_void, |_| get::<DeviceObj>(dev as *const c_void).map(drop)).unwrap();
        }
        done_tx.send(()).unwrap();
    });
    ready_rx.recv().unwrap();
    // With the registry locked, only the per-thread cache can answer.
    let registry = sync::lock(registry());
    go_tx.send(()).unwrap();
    let answered = done_rx.recv_timeout(std::time::Duration::from_secs(30));
    drop(registry);
    worker.join().unwrap();
    assert!(answered.is_ok(), "alternating a context and a device went to the registry's lock");
    release::<Thing>(ctx as *const c_void).unwrap();
}

#[test]
fn a_released_handle_stays_readable_by_the_loader_after_churn() {
    // Alone: another test's live object could take the stale header.
    if !alone_in_a_child("a_released_handle_stays_readable_by_the_loader_after_churn") {
        return;
    }
    let dispatch_word = |h: *mut c_void| {
        // SAFETY: what the loaders do with every handle; headers are
        // never freed, so this reads our memory whatever `h`'s state.
        unsafe { h.cast::<*const cl_icd_dispatch>().read() }
    };
    let stale = into_handle(new_object(Thing(8)));
    release::<Thing>(stale).unwrap();
    // Enough churn that the stale header is reused (the quarantine is
    // FIFO) and released again, among allocations of every size.
    let mut junk = Vec::new();
    for i in 0..2 * QUARANTINE + SLAB {
        let h = into_handle(new_object(Thing(i as u32)));
        junk.push(vec![0u8; 16 + i % 200]);
        release::<Thing>(h).unwrap();
        if junk.len() > 64 {
            junk.clear();
        }
    }
    assert!(std::ptr::eq(dispatch_word(stale), &DISPATCH), "the stale handle's dispatch word changed");
    assert_eq!(get::<Thing>(stale).unwrap_err(), CL_INVALID_CONTEXT);
    assert_eq!(release::<Thing>(stale).unwrap_err(), CL_INVALID_CONTEXT);
    assert_eq!(with::<Thing, _>(stale, |_| Ok(())).unwrap_err(), CL_INVALID_CONTEXT);
}

#[test]
fn a_reused_header_answers_for_its_new_object() {
    // Alone: another test's new object could take the header first.
    if !alone_in_a_child("a_reused_header_answers_for_its_new_object") {
        return;
    }
    let first = into_handle(new_object(Thing(1)));
    assert_eq!(with::<Thing, _>(first, |t| Ok(t.0)).unwrap(), 1, "cached");
    let generation = |h: *mut c_void| {
        // SAFETY: a header (never freed).
        unsafe { &*h.cast::<Header>() }.generation.load(Ordering::Relaxed)
    };
    let before = generation(first);
    release::<Thing>(first).unwrap();
    // Churn until the header comes back for a new object.
    let mut again = None;
    for _ in 0..2 * QUARANTINE + SLAB {
        let h = into_handle(new_object(Thing(100)));
        if h == first {
            again = Some(h);
            break;
        }
        release::<Thing>(h).unwrap();
    }
    let again = again.expect("the quarantined header is reused");
    assert_ne!(generation(again), before, "a new generation");
    // This thread's cache still names the old object: the new one answers.
    assert_eq!(with::<Thing, _>(again, |t| Ok(t.0)).unwrap(), 100);
    assert_eq!(get::<Thing>(again).unwrap().inner.0, 100);
    release::<Thing>(again).unwrap();
}

#[test]
fn devices_have_handles() {
    for d in Platform::get().devices() {
        let h = device_handle(d);
        assert!(Arc::ptr_eq(&get::<DeviceObj>(h.cast()).unwrap().inner.device, d));
    }
    assert_eq!(check_platform(platform_handle(), false), Ok(()));
    assert_eq!(check_platform(std::ptr::null_mut(), false), Err(CL_INVALID_PLATFORM));
}
