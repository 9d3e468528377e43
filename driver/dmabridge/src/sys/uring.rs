//! Waiting on eventfds through io_uring: the completion path of device
//! commands. A wait submits one 8-byte read per eventfd (or, for fds that
//! are only pollable, such as sync_files: one `POLLIN` poll,
//! [`EventWaiter::wait_readable`]) plus an optional timeout, sleeps in `io_uring_enter` until the first completes, then cancels
//! and reaps the rest, so that no operation (and no buffer it writes into)
//! outlives the call.
//!
//! Every operation of a wait is queued at once (all or nothing, after
//! checking that they fit), so that a refused wait leaves nothing behind in
//! the submission queue for a later one to submit. If the kernel stops
//! answering in the middle of a wait (`io_uring_enter` itself fails), the
//! reads may still be in flight: their buffers are then leaked rather than
//! freed, and the waiter refuses further waits.

use std::collections::HashSet;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use io_uring::{opcode, types, IoUring};
use rustix::io::Errno;

use super::{OsError, OsResult};

const TIMEOUT_TAG: u64 = u64::MAX;
/// `POLLIN`, the readiness a sync_file reports once its fence signalled.
const POLLIN: u32 = 0x1;
const CANCEL_TAG: u64 = u64::MAX - 1;

/// An io_uring instance dedicated to waiting on eventfds.
pub struct EventWaiter {
    ring: IoUring,
    /// The most eventfds one wait may take.
    max_fds: usize,
    /// A wait failed with operations possibly still in flight: the ring is
    /// not used again.
    broken: bool,
    /// Polls armed by [`arm_readable`](Self::arm_readable) that nobody
    /// reaped (their [`Armed`] was forgotten): their completions would be
    /// taken for a later wait's, so the ring is not used again.
    armed: bool,
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
    /// Wraps `io_uring_setup(2)` with `2 * max_fds + 2` entries, rounded up to
    /// a power of two; `EINVAL` if that does not fit the kernel's limit.
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
    /// // An absurd size is an error, not an overflow.
    /// assert_eq!(EventWaiter::new(u32::MAX).unwrap_err().errno, rustix::io::Errno::INVAL);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn new(max_fds: u32) -> OsResult<EventWaiter> {
        let entries = max_fds
            .checked_mul(2)
            .and_then(|n| n.checked_add(2))
            .and_then(u32::checked_next_power_of_two)
            .ok_or(OsError::new("io_uring_setup", Errno::INVAL))?;
        let ring = IoUring::new(entries).map_err(os("io_uring_setup"))?;
        Ok(EventWaiter { ring, max_fds: max_fds as usize, broken: false, armed: false })
    }

    /// Waits until at least one of `fds` is signalled, or `timeout` passes.
    /// Returns the eventfds that fired, their counters consumed; an empty
    /// list means the timeout expired.
    ///
    /// Submits one `IORING_OP_READ` per eventfd plus an `IORING_OP_TIMEOUT` and
    /// sleeps in `io_uring_enter(2)`; the reads still pending are cancelled
    /// (`IORING_OP_ASYNC_CANCEL`) and reaped before it returns. More eventfds
    /// than the waiter was made for are refused with `EINVAL`, before
    /// anything is queued.
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
    /// // More eventfds than the waiter was made for.
    /// let c = EventFd::new()?;
    /// let err = waiter.wait(&[a.as_fd(), b.as_fd(), c.as_fd()], None).unwrap_err();
    /// assert_eq!(err.errno, rustix::io::Errno::INVAL);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn wait(&mut self, fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> OsResult<Vec<Fired>> {
        self.wait_as(fds, timeout, false)
    }

    /// Waits until at least one of `fds` is readable (`POLLIN`), or `timeout`
    /// passes; returns the indexes of the readable ones (empty: timed out).
    /// Nothing is read: for fds that only report readiness, such as a
    /// sync_file, readable once its fence signalled.
    ///
    /// Submits one `IORING_OP_POLL_ADD` per fd plus an `IORING_OP_TIMEOUT`,
    /// as [`wait`](Self::wait) does with reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use std::time::Duration;
    /// use dmabridge::sys::eventfd::EventFd;
    /// use dmabridge::sys::uring::EventWaiter;
    ///
    /// let mut waiter = EventWaiter::new(2)?;
    /// let (a, b) = (EventFd::new()?, EventFd::new()?);
    /// assert!(waiter.wait_readable(&[a.as_fd(), b.as_fd()], Some(Duration::from_millis(10)))?.is_empty());
    /// b.signal(1)?;
    /// assert_eq!(waiter.wait_readable(&[a.as_fd(), b.as_fd()], None)?, [1]);
    /// // Polling consumed nothing.
    /// assert_eq!(b.try_take()?, Some(1));
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn wait_readable(&mut self, fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> OsResult<Vec<usize>> {
        Ok(self.wait_as(fds, timeout, true)?.into_iter().map(|f| f.index).collect())
    }

    /// Arms one `POLLIN` poll per fd and returns without sleeping; the
    /// polls are in the kernel when it returns, so a signal from then on
    /// completes them even if someone else reads the fd first. Then check
    /// whatever the signal announces, and sleep with [`Armed::wait`]: a
    /// signal between the check and the sleep is not missed. Dropping the
    /// [`Armed`] unslept cancels and reaps the polls.
    ///
    /// Errors as [`wait_readable`](Self::wait_readable).
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use std::time::Duration;
    /// use dmabridge::sys::eventfd::EventFd;
    /// use dmabridge::sys::uring::EventWaiter;
    ///
    /// let mut waiter = EventWaiter::new(2)?;
    /// let (a, b) = (EventFd::new()?, EventFd::new()?);
    /// let armed = waiter.arm_readable(&[a.as_fd(), b.as_fd()])?;
    /// // Signalled after the arm, before the sleep: not missed.
    /// b.signal(1)?;
    /// assert_eq!(armed.wait(Some(Duration::from_secs(5)))?, [1]);
    /// let armed = waiter.arm_readable(&[a.as_fd()])?;
    /// assert!(armed.wait(Some(Duration::from_millis(10)))?.is_empty());
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn arm_readable<'w, 'fd>(&'w mut self, fds: &[BorrowedFd<'fd>]) -> OsResult<Armed<'w, 'fd>> {
        self.usable(fds.len())?;
        let entries: Vec<_> = fds
            .iter()
            .enumerate()
            .map(|(i, fd)| opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), POLLIN).build().user_data(i as u64))
            .collect();
        // The `Armed` borrows the fds and reaps every poll before it goes; if
        // it is forgotten, `armed` keeps the ring from being used again.
        // SAFETY: a poll carries no buffer; the borrowed fds outlive the
        // polls (above), and the kernel holds its own reference to each file.
        if unsafe { self.ring.submission().push_multiple(&entries) }.is_err() {
            return Err(OsError::new("io_uring push", Errno::BUSY));
        }
        self.armed = true;
        let pending: HashSet<u64> = entries.iter().map(|e| e.get_user_data()).collect();
        let mut armed = Armed { waiter: self, pending, count: fds.len(), _fds: PhantomData };
        // Submitted now: a poll is armed in the kernel by the submission.
        if let Err(e) = armed.waiter.ring.submit() {
            // The polls may or may not be in the kernel: nothing to free, but
            // the ring is not trusted again.
            armed.waiter.broken = true;
            armed.pending.clear();
            return Err(os("io_uring_enter")(e));
        }
        Ok(armed)
    }

    /// Refuses a wait of `n` fds on a ring that cannot take it.
    fn usable(&self, n: usize) -> OsResult<()> {
        if self.broken || self.armed {
            return Err(OsError::new("io_uring wait on a ring that failed earlier", Errno::BADFD));
        }
        if n > self.max_fds {
            return Err(OsError::new("io_uring wait: more eventfds than the ring was made for", Errno::INVAL));
        }
        Ok(())
    }

    fn wait_as(&mut self, fds: &[BorrowedFd<'_>], timeout: Option<Duration>, poll: bool) -> OsResult<Vec<Fired>> {
        self.usable(fds.len())?;
        // Heap buffers, so that they can be leaked if the kernel might still
        // write into them when this call returns.
        let mut bufs = vec![0u64; fds.len()].into_boxed_slice();
        let ts = Box::new(timeout.map(|t| types::Timespec::new().sec(t.as_secs()).nsec(t.subsec_nanos())));
        match self.run(fds, &mut bufs, (*ts).as_ref(), poll) {
            Ok(result) => result,
            Err(e) => {
                // Operations may still be in flight: their buffers must
                // outlive them, so they are never freed, and the ring is not
                // used again.
                self.broken = true;
                Box::leak(bufs);
                Box::leak(ts);
                Err(e)
            }
        }
    }

    /// Queues, submits and reaps one wait. The outer error means that
    /// operations may still be in flight; the inner result is the wait's,
    /// with nothing in flight.
    fn run(
        &mut self,
        fds: &[BorrowedFd<'_>],
        bufs: &mut [u64],
        ts: Option<&types::Timespec>,
        poll: bool,
    ) -> Result<OsResult<Vec<Fired>>, OsError> {
        let base = bufs.as_mut_ptr();
        let mut entries: Vec<_> = fds
            .iter()
            .enumerate()
            // `base.wrapping_add(i)` stays inside `bufs` (i < fds.len()).
            .map(|(i, fd)| match poll {
                true => opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), POLLIN).build().user_data(i as u64),
                false => opcode::Read::new(types::Fd(fd.as_raw_fd()), base.wrapping_add(i).cast(), 8)
                    .build()
                    .user_data(i as u64),
            })
            .collect();
        if let Some(ts) = ts {
            entries.push(opcode::Timeout::new(ts).build().user_data(TIMEOUT_TAG));
        }
        // `bufs` and `ts` live until every operation has completed (this
        // function reaps them all before returning `Ok`) or are leaked by
        // `wait` (when it returns `Err`). The entries are queued all or none.
        // SAFETY: each read writes 8 bytes into its own element of `bufs` (a
        // poll writes nothing), the timeout reads `ts`, and the borrowed fds
        // outlive the operations.
        if unsafe { self.ring.submission().push_multiple(&entries) }.is_err() {
            // Nothing was queued: nothing is in flight.
            return Ok(Err(OsError::new("io_uring push", Errno::BUSY)));
        }
        let pending: HashSet<u64> = entries.iter().map(|e| e.get_user_data()).collect();
        self.reap(pending, bufs, ts.is_some(), poll)
    }

    /// Sleeps until the first of `pending` completes (or the timeout, if
    /// `timed`), then cancels and reaps the rest. Errors as [`run`](Self::run).
    fn reap(
        &mut self,
        mut pending: HashSet<u64>,
        bufs: &[u64],
        timed: bool,
        poll: bool,
    ) -> Result<OsResult<Vec<Fired>>, OsError> {
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
                    cancels_in_flight = cancels_in_flight.saturating_sub(1);
                    continue;
                }
                pending.remove(&tag);
                if tag == TIMEOUT_TAG {
                    continue;
                }
                let Some(&count) = usize::try_from(tag).ok().and_then(|i| bufs.get(i)) else { continue };
                // A read delivers 8 bytes; a poll its (positive) revents.
                if (poll && res > 0) || (!poll && res == 8) {
                    fired.push(Fired { index: tag as usize, count: if poll { 0 } else { count } });
                } else if res < 0 && res != -Errno::CANCELED.raw_os_error() {
                    // Cancel the rest before reporting, so that nothing stays in flight.
                    cancels_in_flight += self.cancel(&pending)?;
                    self.drain(&mut pending, &mut cancels_in_flight)?;
                    return Ok(Err(OsError::new("io_uring read eventfd", Errno::from_raw_os_error(-res))));
                }
            }
            let timed_out = timed && !pending.contains(&TIMEOUT_TAG);
            if !cancelled && (!fired.is_empty() || timed_out) {
                cancelled = true;
                cancels_in_flight += self.cancel(&pending)?;
            }
        }
        fired.sort_by_key(|f| f.index);
        Ok(Ok(fired))
    }

    /// Queues a cancel of every pending operation; returns how many.
    fn cancel(&mut self, pending: &HashSet<u64>) -> OsResult<usize> {
        let cancels: Vec<_> =
            pending.iter().map(|&tag| opcode::AsyncCancel::new(tag).build().user_data(CANCEL_TAG)).collect();
        // SAFETY: a cancel request carries no buffer.
        unsafe { self.ring.submission().push_multiple(&cancels) }
            .map_err(|_| OsError::new("io_uring push", Errno::BUSY))?;
        Ok(cancels.len())
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
                    *cancels = cancels.saturating_sub(1);
                } else {
                    pending.remove(&c.user_data());
                }
            }
        }
        Ok(())
    }
}

/// Polls armed by [`EventWaiter::arm_readable`], not slept on yet.
#[must_use = "the polls are armed to be slept on with `wait`"]
pub struct Armed<'w, 'fd> {
    waiter: &'w mut EventWaiter,
    /// Tags of the polls still in the kernel.
    pending: HashSet<u64>,
    count: usize,
    _fds: PhantomData<BorrowedFd<'fd>>,
}

impl std::fmt::Debug for Armed<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Armed").field("pending", &self.pending.len()).finish_non_exhaustive()
    }
}

impl Armed<'_, '_> {
    /// Sleeps until at least one armed fd is readable, or `timeout` passes;
    /// returns the indexes of the readable ones (empty: timed out), as
    /// [`EventWaiter::wait_readable`] does.
    pub fn wait(mut self, timeout: Option<Duration>) -> OsResult<Vec<usize>> {
        let pending = std::mem::take(&mut self.pending);
        let bufs = vec![0u64; self.count];
        let ts = Box::new(timeout.map(|t| types::Timespec::new().sec(t.as_secs()).nsec(t.subsec_nanos())));
        let waiter = &mut *self.waiter;
        let mut tags = pending;
        if let Some(ts) = (*ts).as_ref() {
            let entry = opcode::Timeout::new(ts).build().user_data(TIMEOUT_TAG);
            // SAFETY: the timeout reads `ts`, which lives until it is reaped
            // below, or is leaked if the reaping fails.
            if unsafe { waiter.ring.submission().push(&entry) }.is_err() {
                // Cannot happen (the ring has room for the polls and a
                // timeout); the polls are reaped by the drop.
                self.pending = tags;
                return Err(OsError::new("io_uring push", Errno::BUSY));
            }
            tags.insert(TIMEOUT_TAG);
        }
        match waiter.reap(tags, &bufs, timeout.is_some(), true) {
            Ok(result) => {
                waiter.armed = false;
                Ok(result?.into_iter().map(|f| f.index).collect())
            }
            Err(e) => {
                waiter.broken = true;
                Box::leak(ts);
                Err(e)
            }
        }
    }
}

impl Drop for Armed<'_, '_> {
    /// Cancels and reaps the polls not slept on, so that the ring is clean
    /// for the next wait.
    fn drop(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        let reaped = self.waiter.cancel(&pending).and_then(|mut n| self.waiter.drain(&mut pending, &mut n));
        match reaped {
            Ok(()) => self.waiter.armed = false,
            Err(e) => {
                log::warn!("io_uring: reaping armed polls: {e}; the ring is not used again");
                self.waiter.broken = true;
            }
        }
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

    /// A wait with more eventfds than the ring holds is refused before
    /// anything is queued: no read is left behind for a later wait to submit
    /// (into a buffer that no longer exists, under a tag it reuses).
    #[test]
    fn a_refused_wait_leaves_nothing_queued() {
        let mut w = EventWaiter::new(1).unwrap();
        let fds: Vec<EventFd> = (0..6).map(|_| EventFd::new().unwrap()).collect();
        let borrowed: Vec<_> = fds.iter().map(|e| e.as_fd()).collect();
        assert_eq!(w.wait(&borrowed, None).unwrap_err().errno, Errno::INVAL);
        assert_eq!(w.wait(&borrowed[..2], Some(Duration::ZERO)).unwrap_err().errno, Errno::INVAL);
        // Every refused eventfd signalled: a read left queued would take a counter.
        for e in &fds {
            e.signal(1).unwrap();
        }
        let other = EventFd::new().unwrap();
        other.signal(5).unwrap();
        assert_eq!(w.wait(&[other.as_fd()], None).unwrap(), vec![Fired { index: 0, count: 5 }]);
        assert_eq!(w.wait(&[fds[5].as_fd()], None).unwrap(), vec![Fired { index: 0, count: 1 }]);
        for (i, e) in fds[..5].iter().enumerate() {
            assert_eq!(e.try_take().unwrap(), Some(1), "eventfd {i}: a stale read took its counter");
        }
    }

    #[test]
    fn absurd_sizes_are_refused() {
        for max in [u32::MAX, u32::MAX / 2, 1 << 31] {
            assert_eq!(EventWaiter::new(max).unwrap_err().errno, Errno::INVAL, "{max}");
        }
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

    /// A signal between the arm and the sleep ends the sleep: the poll was
    /// in the kernel before the signal, even though someone else read the
    /// count first (as a device's own completion waiter does).
    #[test]
    fn an_armed_poll_sees_a_signal_read_by_someone_else() {
        let mut w = EventWaiter::new(2).unwrap();
        let (a, b) = (EventFd::new().unwrap(), EventFd::new().unwrap());
        let armed = w.arm_readable(&[a.as_fd(), b.as_fd()]).unwrap();
        b.signal(1).unwrap();
        assert_eq!(b.try_take().unwrap(), Some(1), "the count is the other reader's");
        let got = armed.wait(None);
        assert_eq!(got.unwrap(), [1]);
        // Nothing left in flight: an unsignalled wait times out.
        let armed = w.arm_readable(&[a.as_fd(), b.as_fd()]).unwrap();
        assert!(armed.wait(Some(Duration::from_millis(10))).unwrap().is_empty());
    }

    /// Polls armed and never slept on are cancelled and reaped by the drop:
    /// the next wait is not ended by one of them.
    #[test]
    fn dropping_an_armed_wait_reaps_its_polls() {
        let mut w = EventWaiter::new(1).unwrap();
        let a = EventFd::new().unwrap();
        let b = EventFd::new().unwrap();
        drop(w.arm_readable(&[a.as_fd()]).unwrap());
        a.signal(1).unwrap();
        assert!(w.wait_readable(&[b.as_fd()], Some(Duration::from_millis(10))).unwrap().is_empty());
        assert_eq!(a.try_take().unwrap(), Some(1));
    }

    /// A forgotten `Armed` leaves its polls in the ring: the ring refuses
    /// every later wait instead of taking their completions for its own.
    #[test]
    fn a_forgotten_armed_wait_retires_the_ring() {
        let mut w = EventWaiter::new(1).unwrap();
        let a = EventFd::new().unwrap();
        std::mem::forget(w.arm_readable(&[a.as_fd()]).unwrap());
        assert_eq!(w.wait(&[a.as_fd()], Some(Duration::ZERO)).unwrap_err().errno, Errno::BADFD);
        assert_eq!(w.arm_readable(&[a.as_fd()]).unwrap_err().errno, Errno::BADFD);
    }
}
