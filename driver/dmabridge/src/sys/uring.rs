//! Waiting on eventfds through io_uring: the completion path of device
//! commands. A wait submits one 8-byte read per eventfd plus an optional
//! timeout, sleeps in `io_uring_enter` until the first completes, then cancels
//! and reaps the rest, so that no operation (and no buffer it writes into)
//! outlives the call.

use std::collections::HashSet;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use io_uring::{opcode, types, IoUring};
use rustix::io::Errno;

use super::{OsError, OsResult};

const TIMEOUT_TAG: u64 = u64::MAX;
const CANCEL_TAG: u64 = u64::MAX - 1;

/// An io_uring instance dedicated to waiting on eventfds.
pub struct EventWaiter {
    ring: IoUring,
}

impl std::fmt::Debug for EventWaiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventWaiter").finish_non_exhaustive()
    }
}

fn os(op: &'static str) -> impl Fn(std::io::Error) -> OsError {
    move |e| OsError::new(op, Errno::from_io_error(&e).unwrap_or(Errno::IO))
}

/// What one eventfd delivered during a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// Index of the eventfd in the slice given to [`EventWaiter::wait`].
    pub index: usize,
    /// The counter value read (how many signals were coalesced).
    pub count: u64,
}

impl EventWaiter {
    /// Creates a ring with room for `max_fds` eventfds per wait.
    ///
    /// Wraps `io_uring_setup(2)` with `2 * max_fds + 2` entries, rounded up to a power of two.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::uring::EventWaiter;
    ///
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::eventfd::EventFd;
    ///
    /// let mut waiter = EventWaiter::new(1)?;
    /// let e = EventFd::new()?;
    /// e.signal(1)?;
    /// // A signal given before the wait is seen at once, even with no timeout.
    /// assert_eq!(waiter.wait(&[e.as_fd()], None)?.len(), 1);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn new(max_fds: u32) -> OsResult<EventWaiter> {
        let entries = (2 * max_fds + 2).next_power_of_two();
        let ring = IoUring::new(entries).map_err(os("io_uring_setup"))?;
        Ok(EventWaiter { ring })
    }

    /// Waits until at least one of `fds` is signalled, or `timeout` passes.
    /// Returns the eventfds that fired, their counters consumed; an empty
    /// list means the timeout expired.
    ///
    /// Submits one `IORING_OP_READ` per eventfd plus an `IORING_OP_TIMEOUT` and
    /// sleeps in `io_uring_enter(2)`; the reads still pending are cancelled
    /// (`IORING_OP_ASYNC_CANCEL`) and reaped before it returns.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use std::time::Duration;
    /// use dmabridge::sys::eventfd::EventFd;
    /// use dmabridge::sys::uring::{EventWaiter, Fired};
    ///
    /// let mut waiter = EventWaiter::new(2)?;
    /// let (a, b) = (EventFd::new()?, EventFd::new()?);
    /// // Nothing signalled: the timeout expires.
    /// assert!(waiter.wait(&[a.as_fd(), b.as_fd()], Some(Duration::from_millis(10)))?.is_empty());
    /// b.signal(3)?;
    /// let fired = waiter.wait(&[a.as_fd(), b.as_fd()], Some(Duration::from_secs(5)))?;
    /// assert_eq!(fired, vec![Fired { index: 1, count: 3 }]);
    /// // The wait consumed the counter.
    /// assert_eq!(b.try_take()?, None);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn wait(&mut self, fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> OsResult<Vec<Fired>> {
        let mut bufs = vec![0u64; fds.len()];
        let ts = timeout.map(|t| types::Timespec::new().sec(t.as_secs()).nsec(t.subsec_nanos()));
        let mut pending: HashSet<u64> = HashSet::new();
        {
            let mut sq = self.ring.submission();
            for (i, fd) in fds.iter().enumerate() {
                let read = opcode::Read::new(types::Fd(fd.as_raw_fd()), bufs[i..].as_mut_ptr().cast(), 8)
                    .build()
                    .user_data(i as u64);
                // This function does not return before every submitted
                // operation completed (the rest are cancelled and reaped).
                // SAFETY: so `bufs[i]` (8 bytes) and the borrowed fd outlive
                // the read.
                unsafe { sq.push(&read) }.map_err(|_| OsError::new("io_uring push", Errno::BUSY))?;
                pending.insert(i as u64);
            }
            if let Some(ts) = ts.as_ref() {
                let t = opcode::Timeout::new(ts).build().user_data(TIMEOUT_TAG);
                // SAFETY: `ts` outlives the operation for the same reason as
                // the buffers above.
                unsafe { sq.push(&t) }.map_err(|_| OsError::new("io_uring push", Errno::BUSY))?;
                pending.insert(TIMEOUT_TAG);
            }
        }
        let mut fired = Vec::new();
        let mut cancelled = false;
        let mut cancels_in_flight = 0usize;
        while !pending.is_empty() || cancels_in_flight > 0 {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(Errno::INTR.raw_os_error()) => continue,
                Err(e) => return Err(os("io_uring_enter")(e)),
            }
            let done: Vec<(u64, i32)> = self.ring.completion().map(|c| (c.user_data(), c.result())).collect();
            for (tag, res) in done {
                if tag == CANCEL_TAG {
                    cancels_in_flight -= 1;
                    continue;
                }
                pending.remove(&tag);
                if tag != TIMEOUT_TAG && res == 8 {
                    fired.push(Fired { index: tag as usize, count: bufs[tag as usize] });
                } else if tag != TIMEOUT_TAG && res < 0 && res != -Errno::CANCELED.raw_os_error() {
                    // Cancel the rest before reporting, so that nothing stays in flight.
                    cancels_in_flight += self.cancel(&pending)?;
                    self.drain(&mut pending, &mut cancels_in_flight)?;
                    return Err(OsError::new("io_uring read eventfd", Errno::from_raw_os_error(-res)));
                }
            }
            let timed_out = ts.is_some() && !pending.contains(&TIMEOUT_TAG);
            if !cancelled && (!fired.is_empty() || timed_out) {
                cancelled = true;
                cancels_in_flight += self.cancel(&pending)?;
            }
        }
        fired.sort_by_key(|f| f.index);
        Ok(fired)
    }

    fn cancel(&mut self, pending: &HashSet<u64>) -> OsResult<usize> {
        let mut n = 0;
        let mut sq = self.ring.submission();
        for &tag in pending {
            let c = opcode::AsyncCancel::new(tag).build().user_data(CANCEL_TAG);
            // SAFETY: a cancel request carries no buffer.
            unsafe { sq.push(&c) }.map_err(|_| OsError::new("io_uring push", Errno::BUSY))?;
            n += 1;
        }
        Ok(n)
    }

    fn drain(&mut self, pending: &mut HashSet<u64>, cancels: &mut usize) -> OsResult<()> {
        while !pending.is_empty() || *cancels > 0 {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(Errno::INTR.raw_os_error()) => continue,
                Err(e) => return Err(os("io_uring_enter")(e)),
            }
            for c in self.ring.completion() {
                if c.user_data() == CANCEL_TAG {
                    *cancels -= 1;
                } else {
                    pending.remove(&c.user_data());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::eventfd::EventFd;
    use std::os::fd::AsFd;
    use std::time::Instant;

    #[test]
    fn times_out_then_sees_a_signal() {
        let mut w = EventWaiter::new(4).unwrap();
        let a = EventFd::new().unwrap();
        let b = EventFd::new().unwrap();
        let t0 = Instant::now();
        let got = w.wait(&[a.as_fd(), b.as_fd()], Some(Duration::from_millis(20))).unwrap();
        assert!(got.is_empty());
        assert!(t0.elapsed() >= Duration::from_millis(20));
        b.signal(3).unwrap();
        let got = w.wait(&[a.as_fd(), b.as_fd()], Some(Duration::from_secs(5))).unwrap();
        assert_eq!(got, vec![Fired { index: 1, count: 3 }]);
        // The counter was consumed by the wait, and the cancelled read on `a`
        // left it untouched.
        assert_eq!(b.try_take().unwrap(), None);
        a.signal(1).unwrap();
        assert_eq!(a.try_take().unwrap(), Some(1));
    }

    #[test]
    fn wakes_from_another_thread() {
        let mut w = EventWaiter::new(1).unwrap();
        let e = std::sync::Arc::new(EventFd::new().unwrap());
        let e2 = e.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            e2.signal(1).unwrap();
        });
        let got = w.wait(&[e.as_fd()], None).unwrap();
        assert_eq!(got, vec![Fired { index: 0, count: 1 }]);
        t.join().unwrap();
    }
}
