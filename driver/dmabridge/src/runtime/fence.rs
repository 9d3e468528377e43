//! Waiting for kernel fences (sync_files) on the thread that runs a
//! command: a dma-buf's implicit fences before a CPU access, a Khronos
//! semaphore's fence before the commands behind its wait.
//!
//! The wait goes through one io_uring per thread (`IORING_OP_POLL_ADD` on
//! the sync_file, which reports `POLLIN` once signalled,
//! [`EventWaiter::wait_readable`]), the same mechanism as the device
//! completions: the thread sleeps in `io_uring_enter`, no extra thread is
//! made for a wait and no core spins. A queue's commands run one after the
//! other on its worker, so pending waits of one queue cost one sleeping
//! thread in all. The sleep is cut into slices so that a wait whose command
//! is abandoned (its queue released) ends.

use std::cell::RefCell;
use std::os::fd::AsFd;
use std::time::Duration;

use crate::error::code;
use crate::sys::dma_buf::SyncFile;
use crate::sys::uring::EventWaiter;

/// How long one sleep lasts before `give_up` is asked again.
const SLICE: Duration = Duration::from_millis(100);

thread_local! {
    /// The thread's ring, made at its first wait, and the process it was
    /// made in. A ring's queues are shared memory: after a `fork` the
    /// child's thread would submit into, and reap from, the very ring its
    /// parent's thread sleeps on (each taking the other's completions), so
    /// a child makes a ring of its own.
    static WAITER: RefCell<Option<(u32, EventWaiter)>> = const { RefCell::new(None) };
}

/// Sleeps until `fence` signals, or until `give_up` answers true (asked
/// every 100 ms; the status is then `CL_INVALID_COMMAND_QUEUE`). The error
/// is a command status (the reason is logged).
///
/// No OpenCL function of its own: what `clEnqueueWaitSemaphoresKHR` and
/// every CPU access to an imported dma-buf wait with.
///
/// ```
/// # use std::os::fd::AsFd;
/// # use dmabridge::sys::memfd::{Memfd, Seals};
/// # use dmabridge::sys::udmabuf::Udmabuf;
/// use dmabridge::runtime::fence::wait_sync_file;
/// use dmabridge::sys::access::Access;
/// # let memfd = Memfd::create(c"frame", 8192)?;
/// # memfd.add_seals(Seals::SHRINK)?;
/// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
/// # let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
/// // No other driver uses the buffer: its fences are signalled.
/// if let Ok(fence) = buf.export_sync_file(Access::Write) {
///     assert_eq!(wait_sync_file(&fence, || false), Ok(()));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn wait_sync_file(fence: &SyncFile, give_up: impl Fn() -> bool) -> Result<(), i32> {
    // Most fences are signalled already (nobody else uses the buffer): one
    // poll(2) says so, without a ring for the thread. An application thread
    // that runs a command inline then keeps no ring (an fd and two
    // mappings) for the rest of its life.
    if fence.is_signaled() == Ok(true) {
        return Ok(());
    }
    with_thread_ring(|waiter| loop {
        let ready = waiter.wait_readable(&[fence.as_fd()], Some(SLICE)).map_err(|e| {
            log::warn!("waiting for a fence through io_uring: {e}");
            code::OUT_OF_RESOURCES
        })?;
        if !ready.is_empty() {
            return Ok(());
        }
        if give_up() {
            log::warn!("a fence wait was abandoned: its command queue was released before the fence signalled");
            return Err(code::INVALID_COMMAND_QUEUE);
        }
    })
}

/// The most fds one wait on the thread's ring may take.
pub const RING_FDS: u32 = 8;

/// Runs `f` with the calling thread's ring (made at its first wait, room
/// for [`RING_FDS`] fds): the one wait mechanism of the commands a thread
/// runs, fence waits and `clEnqueueWaitSignalAMD`'s alike. The error is a
/// command status (`CL_OUT_OF_RESOURCES` without io_uring; the reason is
/// logged). Not reentrant: `f` must not wait through it again.
pub fn with_thread_ring<R>(f: impl FnOnce(&mut EventWaiter) -> Result<R, i32>) -> Result<R, i32> {
    WAITER.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            log::warn!("a wait inside a wait on the same thread: refused");
            return Err(code::OUT_OF_RESOURCES);
        };
        let pid = std::process::id();
        if slot.as_ref().is_none_or(|(made_in, _)| *made_in != pid) {
            let waiter = EventWaiter::new(RING_FDS).map_err(|e| {
                log::warn!("waiting on a command's thread: no io_uring: {e}");
                code::OUT_OF_RESOURCES
            })?;
            // A parent's ring is dropped here: the child's mappings and fd
            // go, the parent's ring lives on in the parent.
            *slot = Some((pid, waiter));
        }
        let Some((_, waiter)) = slot.as_mut() else { return Err(code::OUT_OF_RESOURCES) };
        f(waiter)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::eventfd::EventFd;
    use crate::sys::forked;
    use std::time::Instant;

    /// The forking thread had a ring; after the fork, parent and child each
    /// wait through their thread's ring at the same time. Sharing one ring,
    /// each reaped the other's completions: the child's ready eventfd ended
    /// the parent's wait early, or the child's wait ended empty.
    #[test]
    fn a_forked_child_waits_on_a_ring_of_its_own() {
        if !forked::alone_in_a_child("runtime::fence::tests::a_forked_child_waits_on_a_ring_of_its_own") {
            return;
        }
        let (never, ready) = (EventFd::new().unwrap(), EventFd::new().unwrap());
        ready.signal(1).unwrap();
        // The thread's ring, made before the fork.
        assert_eq!(with_thread_ring(|w| w.wait_readable(&[ready.as_fd()], None).map_err(|_| -1)), Ok(vec![0]));
        // SAFETY: the child waits on its own copies of the eventfds; this
        // process has no other thread.
        let pid = unsafe {
            forked::fork_child(|| {
                // Let the parent fall asleep on its ring first, then wait (a
                // ready fd: at once) over and over while it sleeps.
                std::thread::sleep(Duration::from_millis(200));
                let all = (0..50).all(|_| {
                    with_thread_ring(|w| {
                        w.wait_readable(&[ready.as_fd()], Some(Duration::from_secs(1))).map_err(|_| -1)
                    }) == Ok(vec![0])
                });
                i32::from(!all)
            })
        };
        let start = Instant::now();
        let parents =
            with_thread_ring(|w| w.wait_readable(&[never.as_fd()], Some(Duration::from_secs(1))).map_err(|_| -1));
        let slept = start.elapsed();
        let code = forked::exit_code(pid, Duration::from_secs(30), "the child's waits");
        assert_eq!(code, 0, "a wait of the child did not see its ready eventfd");
        assert_eq!(parents, Ok(vec![]), "the parent's wait on an eventfd nobody signals");
        assert!(slept >= Duration::from_millis(900), "the parent's 1 s wait ended after {slept:?}");
    }
}
