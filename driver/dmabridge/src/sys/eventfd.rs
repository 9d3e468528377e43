//! eventfd: the kernel's counter fd, used as the target of device interrupts
//! (VFIO_DEVICE_SET_IRQS) and waited on through io_uring.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::event::EventfdFlags;
use rustix::io::Errno;

use super::{OsError, OsResult};

/// A non-blocking, close-on-exec eventfd.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// Creates an eventfd with a zero counter.
    ///
    /// Wraps `eventfd(2)` with `EFD_CLOEXEC | EFD_NONBLOCK`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::eventfd::EventFd;
    ///
    /// let e = EventFd::new()?;
    /// assert_eq!(e.try_take()?, None);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn new() -> OsResult<EventFd> {
        let fd = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(OsError::tag("eventfd"))?;
        Ok(EventFd { fd })
    }

    /// Adds `n` to the counter (what a device interrupt does).
    ///
    /// Wraps an 8-byte `write(2)` on the eventfd.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::eventfd::EventFd;
    ///
    /// let e = EventFd::new()?;
    /// e.signal(2)?;
    /// e.signal(3)?;
    /// // Signals add up until the counter is read.
    /// assert_eq!(e.try_take()?, Some(5));
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn signal(&self, n: u64) -> OsResult<()> {
        rustix::io::write(&self.fd, &n.to_ne_bytes()).map(drop).map_err(OsError::tag("write eventfd"))
    }

    /// Reads and clears the counter; `None` if it was zero.
    ///
    /// Wraps an 8-byte `read(2)` on the eventfd (`EAGAIN` becomes `None`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::eventfd::EventFd;
    ///
    /// let e = EventFd::new()?;
    /// assert_eq!(e.try_take()?, None);
    /// e.signal(1)?;
    /// assert_eq!(e.try_take()?, Some(1));
    /// assert_eq!(e.try_take()?, None);
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn try_take(&self) -> OsResult<Option<u64>> {
        let mut buf = [0u8; 8];
        match rustix::io::read(&self.fd, &mut buf) {
            Ok(_) => Ok(Some(u64::from_ne_bytes(buf))),
            Err(Errno::AGAIN) => Ok(None),
            Err(e) => Err(OsError::new("read eventfd", e)),
        }
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
