//! Device loss: a PCI function that is unbound, removed, reset or broken.
//!
//! Users run for months; functions go away under them. vfio-pci tells the
//! owner of a function that the kernel wants it back by signalling its
//! *request* interrupt (`VFIO_PCI_REQ_IRQ_INDEX`) and then waits, in 10 s
//! slices and forever, until every fd and mapping of the device is closed;
//! AER errors arrive on its *error* interrupt (`VFIO_PCI_ERR_IRQ_INDEX`).
//! Both are registered with eventfds ([`Watch`]), watched by one small
//! thread per function (an idle device has nobody else waiting on it), and
//! turned into one state per device, [`Loss`]: live, then lost for good.
//! A register read of all ones (what a function that is gone answers) and
//! an engine that misses its completion do the same.
//!
//! Marking a device lost wakes the waits of its engine (their wait sets hold
//! [`Loss::wake_fd`], beside the completion interrupt), and every path that
//! would start work on it checks [`Loss::check`] first: the backend's copy,
//! each transfer of the engine, and every command of a queue on the device
//! (`Queue::submit` wraps them). Then the backend lets go of the function
//! (each backend's `shut_down`): Bus Master off, in-flight bus addresses
//! unmapped and retired (never handed out again while the space allows),
//! resident ranges in its BAR unmapped ([`DmaDomain::revoke_within`]), BAR
//! mappings made inert (replaced by anonymous memory, see
//! [`Mapping::make_inert`](crate::sys::mmap::Mapping::make_inert) for why
//! not unmapped), and the device fd pointed at `/dev/null`
//! ([`Device::revoke`](crate::sys::vfio::Device::revoke)), which lets the
//! kernel finish the removal. The device then reports
//! `CL_DEVICE_AVAILABLE` false; other devices go on. The device stays lost
//! in this process; a function back at its address (rescan, rebind) is a
//! new VFIO group, which the container opens anew rather than reuse the
//! dead one (`Group::for_device`), e.g. for an external physical buffer.
//!
//! [`DmaDomain::revoke_within`]: super::domain::DmaDomain::revoke_within

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use super::domain::DmaDomain;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::sys::addr::HostAddr;
use crate::sys::eventfd::EventFd;
use crate::sys::mmap::Mapping;
use crate::sys::uring::EventWaiter;
use crate::sys::vfio::{Device, IrqKind, VfioError};
use crate::sys::OsResult;

/// Whether a device is still there: live until [`Loss::mark`], then lost
/// for the life of the process (a function that comes back is a new device
/// for a new process).
#[derive(Debug)]
pub struct Loss {
    lost: AtomicBool,
    reason: OnceLock<String>,
    /// Signalled once when the device is lost: the engine's waits hold it.
    wake: EventFd,
}

impl Loss {
    /// A live device's state.
    ///
    /// No OpenCL function of its own: made with each backend.
    ///
    /// ```
    /// use dmabridge::runtime::backend::lost::Loss;
    /// let loss = Loss::new()?;
    /// assert!(!loss.is_lost() && loss.check("edu").is_ok());
    /// assert!(loss.mark("gone"));
    /// assert!(!loss.mark("again"), "lost once");
    /// let e = loss.check("edu").unwrap_err();
    /// assert_eq!(e.code(), dmabridge::error::code::DEVICE_NOT_AVAILABLE);
    /// assert!(e.to_string().contains("gone"));
    /// # Ok::<(), dmabridge::sys::OsError>(())
    /// ```
    pub fn new() -> OsResult<Loss> {
        Ok(Loss { lost: AtomicBool::new(false), reason: OnceLock::new(), wake: EventFd::new()? })
    }

    /// True once the device is lost.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Why it was lost, once it is.
    pub fn reason(&self) -> Option<&str> {
        self.is_lost().then(|| self.reason.get().map(String::as_str)).flatten()
    }

    /// `CL_DEVICE_NOT_AVAILABLE` naming `name` and the reason once the device
    /// is lost: what work that would start on it gets.
    pub fn check(&self, name: &str) -> ClResult<()> {
        match self.reason() {
            None => Ok(()),
            Some(why) => Err(ClError::new(
                ClErrorKind::DeviceNotAvailable,
                format!(
                    "{name} is no longer available: {why}; its queued and running commands failed. After the \
                     function is back (removed: rescan, bind to vfio-pci; in error: once the kernel recovered it), \
                     a new process can use it"
                ),
            )),
        }
    }

    /// Marks the device lost for `reason` and wakes its engine's waits;
    /// true for the first call (the caller then shuts the device down).
    pub fn mark(&self, reason: &str) -> bool {
        let first = self.reason.set(reason.to_owned()).is_ok();
        if first {
            self.lost.store(true, Ordering::Release);
            log::error!("device lost: {reason}");
            if let Err(e) = self.wake.signal(1) {
                log::error!("waking the waits of a lost device: {e}");
            }
        }
        first
    }

    /// The eventfd that becomes readable when the device is lost: waits of
    /// the engine hold it beside their completion interrupt.
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }
}

/// The request and error interrupts of a VFIO device, registered with
/// eventfds and watched by a thread that calls `on_lost` once with the
/// reason when either fires. Dropping the watch stops the thread (the
/// kernel's references to the eventfds go with the device's interrupts).
#[derive(Debug)]
pub struct Watch {
    stop: Arc<EventFd>,
    thread: Option<JoinHandle<()>>,
}

/// What a watch waits for, by index in its wait set.
const STOP: usize = 0;
const REQUEST: usize = 1;

impl Watch {
    /// Registers `device`'s request interrupt (and its error interrupt, if
    /// the function has one: only PCIe functions with AER do) and starts the
    /// thread `dmabridge-lost` that calls `on_lost` when one fires. `name`
    /// names the device in the reason.
    ///
    /// Errors: the request interrupt cannot be registered (without it an
    /// unbind or removal blocks until the process exits), no eventfd, no
    /// io_uring, or no thread.
    pub fn start(
        device: &Device,
        name: &str,
        on_lost: impl FnOnce(String) + Send + 'static,
    ) -> Result<Watch, VfioError> {
        let request = EventFd::new()?;
        device.set_irq_eventfds(IrqKind::Req, &[request.as_fd()])?;
        let error = match device.irq_info(IrqKind::Err) {
            Ok(i) if i.count >= 1 => {
                let fd = EventFd::new()?;
                match device.set_irq_eventfds(IrqKind::Err, &[fd.as_fd()]) {
                    Ok(()) => Some(fd),
                    Err(e) => {
                        log::warn!("{name}: no error interrupt: {e}");
                        None
                    }
                }
            }
            _ => None,
        };
        let stop = Arc::new(EventFd::new()?);
        let mut waiter = EventWaiter::new(3)?;
        let (name, stop2) = (name.to_owned(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("dmabridge-lost".into())
            .spawn(move || {
                let fired = loop {
                    let mut fds = vec![stop2.as_fd(), request.as_fd()];
                    fds.extend(error.as_ref().map(|e| e.as_fd()));
                    match waiter.wait(&fds, None) {
                        Ok(f) if f.is_empty() => continue,
                        Ok(f) => break f.iter().map(|f| f.index).min().unwrap_or(STOP),
                        Err(e) => {
                            log::error!("{name}: watching for removal stopped: {e}");
                            return;
                        }
                    }
                };
                match fired {
                    STOP => {}
                    REQUEST => on_lost(format!("{name} was unbound or removed (the kernel asked for it back)")),
                    _ => on_lost(format!(
                        "{name} reported an uncorrectable error (PCIe AER: its function or the port above it; \
                         dmesg | grep AER says which)"
                    )),
                }
            })
            .map_err(|e| {
                let errno = e.raw_os_error().map_or(rustix::io::Errno::AGAIN, rustix::io::Errno::from_raw_os_error);
                crate::sys::OsError::new("spawn the thread that watches for removal", errno)
            })?;
        Ok(Watch { stop, thread: Some(thread) })
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.stop.signal(1);
        if let Some(t) = self.thread.take() {
            // The watch thread itself may drop the last owner of its backend
            // (from `on_lost`): it ends by itself then.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// Lets go of a function whose BAR is mapped at `mapping` once it is lost:
/// the bus addresses of the BAR in `domain` (peer-to-peer mappings,
/// external physical buffers) unmapped and retired, Bus Master off, the
/// mapping made inert, the device fd pointed at `/dev/null`. Errors of a
/// function that is already gone are logged.
pub(crate) fn release_bar(name: &str, device: &Device, mapping: &Mapping, domain: Option<&DmaDomain>) {
    if let Some(d) = domain {
        let n = d.revoke_within(HostAddr::of(mapping.as_ptr()), mapping.len());
        log::info!("{name}: {n} resident ranges in its BAR unmapped");
    }
    if let Err(e) = device.disable_bus_master() {
        log::warn!("{name}: turning bus mastering off: {e}");
    }
    if let Err(e) = mapping.make_inert() {
        log::error!("{name}: unmapping its BAR: {e}");
    }
    if let Err(e) = device.revoke() {
        log::error!("{name}: closing the VFIO device: {e}");
    }
}

/// A BAR of a VFIO function mapped for the CPU without a backend of the
/// platform (the remote memory of external physical buffers): watched like
/// a device, and let go of ([`release_bar`]) when the function goes. Its
/// buffers then write anonymous memory: their bytes reach nobody.
#[derive(Debug)]
pub(crate) struct LentBar {
    /// Shared with the watch's callback (which holds it weakly).
    inner: Arc<LentInner>,
    _watch: Option<Watch>,
}

#[derive(Debug)]
struct LentInner {
    name: String,
    device: Device,
    mapping: Mapping,
    domain: Arc<DmaDomain>,
    loss: Loss,
}

impl LentBar {
    /// Watches `device`, whose BAR `mapping` is (resident ranges in it live
    /// in `domain`).
    pub(crate) fn new(name: String, device: Device, mapping: Mapping, domain: Arc<DmaDomain>) -> OsResult<LentBar> {
        let inner = Arc::new(LentInner { loss: Loss::new()?, name, device, mapping, domain });
        let weak = Arc::downgrade(&inner);
        let watch = Watch::start(&inner.device, &inner.name, move |why| {
            if let Some(i) = weak.upgrade() {
                if i.loss.mark(&why) {
                    release_bar(&i.name, &i.device, &i.mapping, Some(&i.domain));
                }
            }
        });
        let watch = watch.map_err(|e| log::error!("{}: its removal cannot be noticed: {e}", inner.name)).ok();
        Ok(LentBar { inner, _watch: watch })
    }

    /// `CL_DEVICE_NOT_AVAILABLE` naming the function and why, once it is
    /// lost.
    pub(crate) fn lost(&self) -> Option<ClError> {
        self.inner.loss.check(&self.inner.name).err()
    }
}
