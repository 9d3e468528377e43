//! Signals between dmabridge's queues and remote devices:
//! `clEnqueueWaitSignalAMD` and `clEnqueueWriteSignalAMD`.
//!
//! **Waiting.** A wait-signal command holds its queue (an in-order queue
//! starts nothing after it; on an out-of-order queue, commands that list its
//! event wait for it) until `value` has been written to the buffer's signal
//! page (the seed: "wait until `<value>` is written"). Markers only increase
//! — `clEnqueueWriteSignalAMD` refuses a value not above the last one, and
//! never wraps — so "written" is *the marker is at least `value`*, compared
//! as plain unsigned 32-bit numbers: a remote device that counts frames may
//! write marker 7 before the queue waits for 5, and the wait for 5 is then
//! over; a signal page starts at 0, so a wait for 0 is over at once and a
//! wait for any other value holds until the device writes it (or more). A
//! marker that wrapped from `u32::MAX` to 0 is a marker going back, which
//! neither side allows: it has not reached anything.
//!
//! No thread spins while waiting. Without an interrupt source (a device
//! that dmabridge does not drive writes the marker) the only wake-up is a
//! timer: bounded back-off polling (plain sleeps), from 50 µs doubling to
//! 20 ms (about 50 wake-ups a second once backed off: under 1% of a core,
//! measured). With remote devices that dmabridge drives
//! ([`RemoteDma`](super::RemoteDma)), the command's thread sleeps on their
//! interrupts themselves, through the thread's ring that fence waits use
//! ([`with_thread_ring`]): each round *arms* a `POLLIN` poll on every
//! device's interrupt eventfd (and on a doorbell of its own), *then* reads
//! the marker, *then* sleeps. A device writes the marker before it raises
//! its interrupt, so an interrupt before the arm left a marker that the
//! read sees, and one after it completes the armed poll — even when the
//! device's own completion waiter reads the count first. The polls never
//! read the count, which is the device's. An interrupt without the marker
//! (a DMA's first half, or a count nobody has read yet: a poll of it
//! completes at once) is followed by one round on the doorbell alone, which
//! the device's waiter rings once it read the count, so that such a count
//! cannot make the wait spin; a timeout backing off to 100 ms only covers a
//! lost interrupt.
//!
//! **Writing.** A write-signal command writes its value at the external
//! buffer's signal surface + offset with a CPU store through the BAR's
//! mapping, after the commands before it have completed (in order; on an
//! out-of-order queue, after every command enqueued before it) and behind a
//! full fence, so a device or host watching the remote memory sees the
//! data first and then the marker.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::{lookup, Bus};
use crate::cl_err;
use crate::error::{code, ClResult};
use crate::runtime::buffer::store::Location;
use crate::runtime::buffer::Buffer;
use crate::runtime::event::Event;
use crate::runtime::fence::{with_thread_ring, RING_FDS};
use crate::runtime::queue::{check_wait_list, CommandUse, Queue};
use crate::sync;
use crate::sys::eventfd::EventFd;
use crate::sys::fork;

/// Live remote devices whose interrupts ring the doorbells.
static SOURCES: AtomicUsize = AtomicUsize::new(0);

/// The interrupt eventfds of the live sources (duplicates, only polled).
static IRQ_FDS: LazyLock<Mutex<Vec<Arc<OwnedFd>>>> = LazyLock::new(Mutex::default);

/// The doorbells of the waits under way.
static DOORBELLS: LazyLock<Mutex<Vec<Weak<EventFd>>>> = LazyLock::new(Mutex::default);

/// [`IRQ_FDS`], held in a process-wide section (see `sys::fork`).
fn irq_fds() -> fork::Guarded<MutexGuard<'static, Vec<Arc<OwnedFd>>>> {
    fork::guarded(|| sync::lock(&IRQ_FDS))
}

/// [`DOORBELLS`], held in a process-wide section (see `sys::fork`).
fn doorbells() -> fork::Guarded<MutexGuard<'static, Vec<Weak<EventFd>>>> {
    fork::guarded(|| sync::lock(&DOORBELLS))
}

/// The first and the longest poll interval without an interrupt source.
const POLL_FIRST: Duration = Duration::from_micros(50);
const POLL_MAX: Duration = Duration::from_millis(20);
/// The longest sleep when an interrupt source rings the doorbells.
const IRQ_BACKSTOP: Duration = Duration::from_millis(100);

/// Counts an interrupt source, and offers its interrupt eventfd to the
/// waits, for as long as it lives.
#[derive(Debug)]
pub(crate) struct Source(Option<Arc<OwnedFd>>);

impl Source {
    /// `irq`: a duplicate of the device's interrupt eventfd (`None`: the
    /// waits learn of its signals by the doorbell only).
    pub(crate) fn new(irq: Option<OwnedFd>) -> Source {
        let irq = irq.map(Arc::new);
        if let Some(fd) = &irq {
            irq_fds().push(fd.clone());
        }
        SOURCES.fetch_add(1, Ordering::AcqRel);
        Source(irq)
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        if let Some(fd) = &self.0 {
            irq_fds().retain(|f| !Arc::ptr_eq(f, fd));
        }
        SOURCES.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Wakes every wait-signal command under way so that it reads its marker
/// again: what an interrupt source does when its device signalled.
pub(crate) fn ring_doorbells() {
    let mut bells = doorbells();
    bells.retain(|w| match w.upgrade() {
        Some(fd) => {
            if let Err(e) = fd.signal(1) {
                log::warn!("ringing a wait-signal doorbell: {e}");
            }
            true
        }
        None => false,
    });
}

/// A wait's doorbell in [`DOORBELLS`] for as long as the wait lasts: it
/// takes itself (and any other finished wait's) out when it drops, so the
/// list holds the waits under way, whether or not anything rings.
struct Doorbell(*const EventFd);

impl Doorbell {
    fn register(bell: &Arc<EventFd>) -> Doorbell {
        doorbells().push(Arc::downgrade(bell));
        Doorbell(Arc::as_ptr(bell))
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        let mut bells = doorbells();
        bells.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), self.0));
    }
}

/// The seed's comparison, as documented in the module: true once `value`
/// has been written, i.e. the marker is at least `value` (unsigned, no
/// wrap-around: markers only increase, as [`enqueue_write_signal`] enforces).
///
/// No OpenCL function of its own: what ends `clEnqueueWaitSignalAMD`.
///
/// ```
/// use dmabridge::ext::amd_bus::signal_reached;
/// assert!(signal_reached(5, 5));
/// assert!(signal_reached(7, 5), "past the value");
/// assert!(!signal_reached(4, 5));
/// assert!(signal_reached(0, 0), "a fresh signal page holds 0");
/// assert!(!signal_reached(0, 0x8000_0001), "a fresh page reaches no value above 0");
/// assert!(!signal_reached(0, u32::MAX), "markers never wrap");
/// assert!(signal_reached(u32::MAX, 0x8000_0000));
/// ```
pub fn signal_reached(marker: u32, value: u32) -> bool {
    marker >= value
}

/// Sleeps until the u32 at `marker` reaches `value` (see the module), or
/// until `queue` is released (`CL_INVALID_COMMAND_QUEUE`).
///
/// # Safety
/// `marker` must stay valid for reads, and 4-aligned, during the call.
unsafe fn wait_for(marker: *const u32, value: u32, queue: &Weak<Queue>) -> Result<(), i32> {
    let bell = Arc::new(EventFd::new().map_err(|e| {
        log::warn!("wait-signal: no eventfd: {e}");
        code::OUT_OF_RESOURCES
    })?);
    let _registered = Doorbell::register(&bell);
    let failed = |e: crate::sys::OsError| {
        log::warn!("wait-signal: waiting on the interrupts and the doorbell: {e}");
        code::OUT_OF_RESOURCES
    };
    let mut sleep = POLL_FIRST;
    // The last wake was an interrupt without the marker: sleep on the doorbell alone.
    let mut bell_only = false;
    with_thread_ring(|waiter| loop {
        let irqs: Vec<Arc<OwnedFd>> = match bell_only {
            true => Vec::new(),
            false => irq_fds().iter().take(RING_FDS as usize - 1).cloned().collect(),
        };
        let sources = SOURCES.load(Ordering::Acquire) > 0;
        // Arm before reading the marker (see the module). A ring already
        // heard is read first, so that it does not end the next sleep.
        let armed = match sources {
            true => {
                let _ = bell.try_take();
                let fds: Vec<BorrowedFd<'_>> =
                    std::iter::once(bell.as_fd()).chain(irqs.iter().map(|f| f.as_fd())).collect();
                Some(waiter.arm_readable(&fds).map_err(failed)?)
            }
            false => None,
        };
        // SAFETY: the caller guarantees the page; a device may write it at
        // any time, so it is read volatile, never through a reference.
        let now = unsafe { std::ptr::read_volatile(marker) };
        if signal_reached(now, value) {
            // What the device wrote before the marker is visible after it.
            fence(Ordering::Acquire);
            return Ok(());
        }
        if queue.strong_count() == 0 {
            // Released while waiting: its drop joins this thread.
            log::warn!("wait-signal: the queue was released before the marker reached {value} (it holds {now})");
            return Err(code::INVALID_COMMAND_QUEUE);
        }
        let Some(armed) = armed else {
            // Nothing will ring: a plain sleep is the cheapest poll.
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(POLL_MAX);
            continue;
        };
        let fired = armed.wait(Some(sleep.min(IRQ_BACKSTOP))).map_err(failed)?;
        #[cfg(test)]
        tests::WAKES.with_borrow_mut(|w| w.push(fired.clone()));
        // A doorbell starts the back-off again (the device is active); an
        // interrupt alone does not, so a count nobody reads costs a wake-up
        // per back-off interval, not a spin.
        let rang = fired.contains(&0);
        bell_only = !fired.is_empty() && !rang;
        sleep = if rang { POLL_FIRST } else { (sleep * 2).min(IRQ_BACKSTOP) };
    })
}

/// The checks both signal commands make: the buffer is of the right kind
/// (`external`: `CL_MEM_EXTERNAL_PHYSICAL_AMD`, else
/// `CL_MEM_BUS_ADDRESSABLE_AMD`; `CL_INVALID_MEM_OBJECT`), of the queue's
/// context, as is the wait list (`CL_INVALID_CONTEXT`).
fn checked(queue: &Queue, buffer: &Buffer, wait_list: &[Event], external: bool) -> ClResult<Arc<Bus>> {
    let (name, flag) = match external {
        true => ("clEnqueueWriteSignalAMD", "CL_MEM_EXTERNAL_PHYSICAL_AMD"),
        false => ("clEnqueueWaitSignalAMD", "CL_MEM_BUS_ADDRESSABLE_AMD"),
    };
    let bus = match lookup(buffer) {
        Some(bus) if matches!(*bus, Bus::External(_)) == external => bus,
        _ => return cl_err!(InvalidMemObject, "{name}: the buffer was not created with {flag}"),
    };
    if !Arc::ptr_eq(buffer.context(), queue.context()) {
        return cl_err!(InvalidContext, "the buffer and the command queue belong to different contexts");
    }
    check_wait_list(queue.context(), wait_list)?;
    Ok(bus)
}

/// `clEnqueueWaitSignalAMD`: the queue does not start the commands after
/// this one until `value` has been written to `buffer`'s signal page (the
/// marker is at least `value`, unsigned, no wrap-around: see the module).
/// The event completes when the value is there; commands that list it wait
/// for it, and so does `clMemBlockingFreeINTEL` of memory used by commands
/// behind it.
///
/// Errors: `CL_INVALID_MEM_OBJECT` if `buffer` was not created with
/// `CL_MEM_BUS_ADDRESSABLE_AMD`; `CL_INVALID_VALUE` if its signal address is
/// not valid yet (0: the buffer was never made resident, so no device can
/// write it); `CL_INVALID_CONTEXT` for a buffer or event of another context.
/// (`CL_INVALID_COMMAND_QUEUE` is the C face's, for an invalid handle.)
///
/// A value that never arrives holds the queue for good (`clFinish` does not
/// return), as the hardware does — until the application releases the
/// queue: the wait then ends with the status `CL_INVALID_COMMAND_QUEUE`
/// within one poll or backstop interval, so the release returns.
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::amd_bus;
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::platform::Platform;
/// use dmabridge::runtime::{context::Context, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let q = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 4096, std::ptr::null_mut()) }?;
/// if Platform::get().dma_domain().is_some() {
///     amd_bus::make_buffers_resident(&q, &[b.clone()], true, &[])?;
///     let (_, signal) = amd_bus::cpu_pages(&b)?;
///     let ev = amd_bus::enqueue_wait_signal(&q, &b, 1, &[])?;
///     // A remote device would DMA the marker; the CPU plays it here.
///     // SAFETY: the signal page is the buffer's, alive while it is.
///     unsafe { std::ptr::write_volatile(signal, 1) };
///     dmabridge::runtime::event::Event::wait(&[ev])?;
/// } else {
///     let e = amd_bus::enqueue_wait_signal(&q, &b, 1, &[]).unwrap_err();
///     assert_eq!(e.kind, ClErrorKind::InvalidValue, "never resident: no signal address");
/// }
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_wait_signal(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    value: u32,
    wait_list: &[Event],
) -> ClResult<Event> {
    let bus = checked(queue, buffer, wait_list, false)?;
    let Bus::Addressable(a) = &*bus else { unreachable!("matched above") };
    if super::bus_address(buffer).is_none() {
        return cl_err!(
            InvalidValue,
            "the buffer's signal address is 0: make it resident (clEnqueueMakeBuffersResidentAMD) so that a device \
             can write it"
        );
    }
    let marker = a.marker;
    let held = buffer.clone();
    let released = Arc::downgrade(queue);
    let work = Box::new(move || {
        // SAFETY: `held` keeps the buffer, so its signal page, alive; the
        // page is page-aligned.
        unsafe { wait_for(marker as *const u32, value, &released) }?;
        // The remote device wrote the surface: the host pages (and every
        // device linked to them) hold the buffer's data now.
        let store = held.store();
        let mut st = store.lock();
        store.wrote(&mut st, Location::Host);
        Ok(())
    });
    queue.enqueue_with_use(super::command_type::WAIT_SIGNAL, wait_list, false, CommandUse::All, work)
}

/// `clEnqueueWriteSignalAMD`: writes `value` (a u32) at `buffer`'s signal
/// surface + `offset`, after the commands before it have completed (see
/// the module).
///
/// Errors: `CL_INVALID_MEM_OBJECT` if `buffer` was not created with
/// `CL_MEM_EXTERNAL_PHYSICAL_AMD`; `CL_INVALID_BUFFER_SIZE` if the 4 bytes at
/// `offset` go past the buffer's size (the signal surface is as large as
/// the buffer); `CL_INVALID_VALUE` if `value` is not above the last value
/// enqueued for the buffer (the seed: consecutive markers keep increasing;
/// compared as plain u32, so a wrapped marker is refused, the rule
/// [`enqueue_wait_signal`]'s comparison relies on; the check and the
/// enqueue are one step, so markers that threads enqueue at once are
/// enqueued in increasing order) or if `offset` is
/// not a multiple of 4; `CL_INVALID_CONTEXT` for a buffer or event of
/// another context. The command ends with `CL_DEVICE_NOT_AVAILABLE` if the
/// function behind the buffer's BAR is lost by the time it runs
/// ([`remote_lost`](super::external::remote_lost)).
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::amd_bus;
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::platform::Platform;
/// use dmabridge::runtime::{context::Context, queue::{Queue, QueueProps}};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let q = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 4096, std::ptr::null_mut()) }?;
/// let e = amd_bus::enqueue_write_signal(&q, &b, 1, 0, &[]).unwrap_err();
/// assert_eq!(e.kind, ClErrorKind::InvalidMemObject, "only external physical buffers take write-signals");
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_write_signal(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    value: u32,
    offset: u64,
    wait_list: &[Event],
) -> ClResult<Event> {
    let bus = checked(queue, buffer, wait_list, true)?;
    let Bus::External(x) = &*bus else { unreachable!("matched above") };
    if offset.checked_add(4).is_none_or(|end| end > buffer.size() as u64) {
        return cl_err!(
            InvalidBufferSize,
            "offset {offset} + 4 bytes of the marker go past the {}-byte buffer (and its signal surface)",
            buffer.size()
        );
    }
    if offset % 4 != 0 {
        return cl_err!(InvalidValue, "offset {offset} is not a multiple of 4 (the marker is a 32-bit value)");
    }
    let slot = x.signal_slot(offset as usize);
    x.enqueue_value(value, || {
        // After every earlier command, on an out-of-order queue as well.
        let mut after = wait_list.to_vec();
        if queue.props().out_of_order {
            after.push(queue.enqueue_marker(&[])?);
        }
        let held = buffer.clone();
        let work = Box::new(move || {
            // A lost function's mapping is inert: the marker would reach nobody.
            held.store().check_remote()?;
            let _held = held;
            // The data the earlier commands wrote is visible before the marker.
            fence(Ordering::SeqCst);
            // SAFETY: `slot` lies in the BAR mapping that the buffer keeps
            // (`_held`: its store owns the remote memory), 4-aligned, inside the signal surface (checked above);
            // it is written through a raw pointer, never a reference.
            unsafe { std::ptr::write_volatile(slot as *mut u32, value) };
            fence(Ordering::SeqCst);
            Ok(())
        });
        queue.enqueue_with_use(super::command_type::WRITE_SIGNAL, &after, false, CommandUse::Nothing, work)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::context::Context;
    use crate::runtime::platform::Platform;
    use crate::runtime::queue::QueueProps;
    use std::sync::atomic::AtomicU32;

    /// A child forked while another thread held the registry takes it at
    /// once (see `sys::fork`): without the fork handler it waited forever.
    #[test]
    fn a_forked_child_takes_the_registry_another_thread_held() {
        crate::sys::forked::a_child_takes_what_another_thread_held(
            "ext::amd_bus::signal::tests::a_forked_child_takes_the_registry_another_thread_held",
            &[("interrupt fds", || Box::new(irq_fds())), ("doorbells", || Box::new(doorbells()))],
        );
    }

    thread_local! {
        /// What ended each sleep of the thread's waits (indexes: 0 the doorbell, then the interrupts).
        pub(super) static WAKES: std::cell::RefCell<Vec<Vec<usize>>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// The tests that count sources and doorbells, one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn live_queue() -> Arc<Queue> {
        let cpu = Platform::get().cpu();
        let ctx = Context::new(std::slice::from_ref(cpu)).unwrap();
        Queue::new(&ctx, cpu, QueueProps::default()).unwrap()
    }

    /// A source's interrupt alone (no doorbell) ends the wait: the thread
    /// sleeps on the interrupt eventfd itself. Another thread reads the
    /// count first, as the device's completion waiter does.
    #[test]
    fn the_interrupt_alone_ends_the_wait() {
        let _one = sync::lock(&SERIAL);
        let irq = Arc::new(EventFd::new().unwrap());
        let _source = Source::new(Some(irq.as_fd().try_clone_to_owned().unwrap()));
        let marker = Arc::new(AtomicU32::new(0));
        let q = live_queue();
        let device = std::thread::spawn({
            let (irq, marker) = (irq.clone(), marker.clone());
            move || {
                // Long enough for the back-off to reach the backstop.
                std::thread::sleep(Duration::from_millis(400));
                marker.store(3, Ordering::SeqCst);
                irq.signal(1).unwrap();
                irq.try_take().unwrap();
            }
        });
        WAKES.with_borrow_mut(Vec::clear);
        // SAFETY: `marker` is a live, aligned u32 (written atomically).
        assert_eq!(unsafe { wait_for(marker.as_ptr(), 3, &Arc::downgrade(&q)) }, Ok(()));
        device.join().unwrap();
        let last = WAKES.with_borrow(|w| w.last().cloned());
        assert_eq!(last, Some(vec![1]), "the last sleep did not end by the interrupt");
    }

    /// An interrupt count nobody reads (its poll completes at once) does not
    /// make the wait spin: rounds on the doorbell alone, backing off, until
    /// the queue is released.
    #[test]
    fn an_unread_interrupt_count_does_not_spin() {
        let _one = sync::lock(&SERIAL);
        let irq = EventFd::new().unwrap();
        irq.signal(1).unwrap();
        let _source = Source::new(Some(irq.as_fd().try_clone_to_owned().unwrap()));
        let marker = 0u32;
        let q = live_queue();
        let weak = Arc::downgrade(&q);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            drop(q);
        });
        WAKES.with_borrow_mut(Vec::clear);
        // SAFETY: `marker` is a live, aligned u32, never written.
        assert_eq!(unsafe { wait_for(&marker, 1, &weak) }, Err(code::INVALID_COMMAND_QUEUE));
        release.join().unwrap();
        let wakes = WAKES.with_borrow(Vec::len);
        assert!(wakes < 200, "{wakes} wake-ups in 0.5 s: the unread count made the wait spin");
        assert_eq!(irq.try_take().unwrap(), Some(1), "the wait read the device's count");
    }

    #[test]
    fn finished_waits_leave_no_doorbell_behind() {
        let _one = sync::lock(&SERIAL);
        let marker = 5u32;
        for _ in 0..100 {
            // SAFETY: `marker` is a live, aligned u32, never written.
            unsafe { wait_for(&marker, 5, &Weak::new()) }.unwrap();
        }
        // Without an interrupt source nothing rings (and so prunes) them.
        assert_eq!(SOURCES.load(Ordering::Acquire), 0);
        assert!(doorbells().is_empty(), "{} doorbells left", doorbells().len());
    }

    /// A fresh signal page (0) has not reached any value above 0: the wait
    /// for 0x8000_0001 and above went on only until the (released) queue
    /// ended it, where the wrap-around compare once ended it at once.
    #[test]
    fn a_fresh_signal_page_reaches_no_value_above_zero() {
        let _one = sync::lock(&SERIAL);
        let marker = 0u32;
        // SAFETY: `marker` is a live, aligned u32, never written.
        assert_eq!(unsafe { wait_for(&marker, 0, &Weak::new()) }, Ok(()), "0 is there at once");
        for value in [1, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, 0xc000_0000, u32::MAX] {
            // SAFETY: as above. The queue is gone: a wait that does not end
            // at once ends with CL_INVALID_COMMAND_QUEUE.
            let r = unsafe { wait_for(&marker, value, &Weak::new()) };
            assert_eq!(r, Err(code::INVALID_COMMAND_QUEUE), "marker 0 ended the wait for {value:#x}");
        }
        // SAFETY: as above.
        assert_eq!(unsafe { wait_for(&u32::MAX, 0x8000_0000, &Weak::new()) }, Ok(()));
    }
}
