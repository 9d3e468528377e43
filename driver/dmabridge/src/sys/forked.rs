//! Test support for what a child of `fork` may do: run a test alone in a
//! child process of the test binary (so that no other test's threads hold a
//! lock when it forks), and wait for a forked child with a time limit.

use std::time::{Duration, Instant};

/// Runs test `path` (its full path, `module::tests::name`) alone in a child
/// process of this test binary: `true` in that child (run the test), `false`
/// in the parent, which has checked that the child passed.
pub(crate) fn alone_in_a_child(path: &str) -> bool {
    const CHILD: &str = "DMABRIDGE_TEST_ALONE";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([path, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{path} in a child process failed:\n{text}");
    false
}

/// Forks: the child runs `child` and leaves with `_exit` and what it
/// returned (101 if it panicked), never running the parent's atexit work or
/// returning into the test harness; the parent gets the child's pid.
///
/// # Safety
/// The child is a copy of this process with the calling thread alone:
/// `child` must need nothing another thread may hold at the fork (but what
/// the test holds there on purpose).
pub(crate) unsafe fn fork_child(child: impl FnOnce() -> i32) -> libc::pid_t {
    // SAFETY: the child only runs `child` (the caller's contract) and ends.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(101);
        // SAFETY: ends the child without running the parent's atexit work.
        unsafe { libc::_exit(code) };
    }
    pid
}

/// The exit code of child `pid` of `fork`; panics saying `what` still waits
/// if it has not ended within `limit` (the child is killed then).
pub(crate) fn exit_code(pid: libc::pid_t, limit: Duration, what: &str) -> i32 {
    let mut status = 0;
    let deadline = Instant::now() + limit;
    // SAFETY: waitpid on our own child, with a valid status pointer.
    while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
        if Instant::now() > deadline {
            // SAFETY: our own child, then reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("{what} still waits after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status), "the child ended by signal: status {status:#x}");
    libc::WEXITSTATUS(status)
}

/// How a test takes a lock: its guard, boxed.
pub(crate) type Take = fn() -> Box<dyn std::any::Any>;

/// For each of `registries` (a name, and how the library's own code takes
/// it): another thread holds it when the process forks and lets go 300 ms
/// later; the child takes it at once and exits. Panics if a child still
/// waits after 20 s (a lock or once-cell copied while held: forever).
/// Test `path` runs alone in a child process of the test binary (see
/// [`alone_in_a_child`]), so that no other test's thread holds one.
pub(crate) fn a_child_takes_what_another_thread_held(path: &str, registries: &[(&str, Take)]) {
    if !alone_in_a_child(path) {
        return;
    }
    for &(name, take) in registries {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let guard = take();
            held_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(guard);
        });
        held_rx.recv().unwrap();
        // SAFETY: the child only takes and drops one lock; the one other
        // thread of this process holds that lock on purpose and lets go by
        // itself.
        let pid = unsafe {
            fork_child(|| {
                drop(take());
                0
            })
        };
        let code = exit_code(pid, Duration::from_secs(20), &format!("the child, for the {name}"));
        holder.join().unwrap();
        assert_eq!(code, 0);
    }
}
