//! `cl_amd_bus_addressable_memory` (seed 002): buffers that other PCI
//! devices reach by bus address, and buffers over another device's memory.
//!
//! * **Bus-addressable buffers** ([`BUS_ADDRESSABLE`]) live in memfd pages
//!   of the context's buffer heap (so they can also be exported as
//!   dma-bufs), plus one *signal* (marker) page each.
//!   [`make_buffers_resident`] pins both and maps them into the IOMMU
//!   domain that the platform's VFIO devices share
//!   ([`Platform::dma_domain`]), returning their bus addresses (IOVAs:
//!   equal to the CPU address where the domain's DMA mask reaches it and
//!   that IOVA range is free, else allocated in the domain's window). They
//!   stay pinned and mapped, at the same addresses, until the buffer is
//!   released; releasing unmaps them, so a device using a stale bus address
//!   reaches nothing (the IOMMU faults its DMA). Their IOVAs are not handed
//!   to the next resident range (a new buffer, a device allocation, a
//!   command's mapping) but kept unmapped until 64 later evictions or until
//!   the domain's IOVA space has no other room
//!   ([`IovaAllocator::retire`](crate::memory::iova::IovaAllocator::retire)).
//! * **External physical buffers** ([`EXTERNAL_PHYSICAL`], see [`external`])
//!   are a remote device's memory: a PCI BAR of a function bound to
//!   vfio-pci, found through sysfs from the bus addresses the application
//!   gives, mapped through VFIO for the CPU and for peer-to-peer DMA.
//! * **Signals** ([`signal`]): [`enqueue_wait_signal`] holds a queue until a
//!   remote device has written a marker value into a bus-addressable
//!   buffer's signal page; [`enqueue_write_signal`] writes a marker into an
//!   external buffer's signal surface once the writes before it are
//!   visible.
//! * **Remote DMA** ([`remote`]): [`RemoteDma`] drives an edu function of
//!   the same IOMMU domain by bus address — the rig's stand-in for a capture
//!   card.
//!
//! Choices where the seed leaves room, all documented where they apply:
//! residency happens when `clEnqueueMakeBuffersResidentAMD` is called (so
//! its failures are the call's error and the addresses are valid when it
//! returns); a platform without a VFIO domain (the development host) can
//! create bus-addressable buffers but not make them resident
//! (`CL_OUT_OF_HOST_MEMORY`, naming the missing domain) and does not
//! advertise the extension; sub-buffers of either kind are
//! `CL_INVALID_MEM_OBJECT`.

pub mod external;
pub mod remote;
pub mod signal;

use std::sync::{Arc, Mutex};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::AllocMeta;
use crate::runtime::backend::domain::DmaDomain;
use crate::runtime::buffer::restrictions::Restrictions;
use crate::runtime::buffer::store::Store;
use crate::runtime::buffer::{check_exclusive, mem_flags, Buffer};
use crate::runtime::context::Context;
use crate::runtime::event::Event;
use crate::runtime::info::{Extension, Requires, EXTENSIONS};
use crate::runtime::platform::Platform;
use crate::runtime::queue::{check_wait_list, CommandUse, Queue};
use crate::sync;
use crate::sys::addr::{BusAddr, HostAddr};
use crate::sys::page_size;

pub use remote::RemoteDma;
pub use signal::{enqueue_wait_signal, enqueue_write_signal, signal_reached};

/// `CL_MEM_BUS_ADDRESSABLE_AMD`: a buffer remote devices may DMA into.
pub const BUS_ADDRESSABLE: u64 = 1 << 30;
/// `CL_MEM_EXTERNAL_PHYSICAL_AMD`: a buffer over a remote device's memory.
pub const EXTERNAL_PHYSICAL: u64 = 1 << 31;
/// Both flags of the extension.
pub const FLAGS: u64 = BUS_ADDRESSABLE | EXTERNAL_PHYSICAL;
/// The extension's name, as `CL_PLATFORM_EXTENSIONS` and
/// `CL_DEVICE_EXTENSIONS` list it where it works.
pub const EXTENSION: &str = "cl_amd_bus_addressable_memory";

/// Listed where buffers can be made resident: the platform has a VFIO
/// domain ([`available`]).
#[linkme::distributed_slice(EXTENSIONS)]
static EXTENSION_ROW: Extension = Extension::new(EXTENSION, Requires::DmaDomain, 400);

/// The command types of the extension's commands' events
/// (`CL_EVENT_COMMAND_TYPE`): the runtime's, which names them in messages.
pub mod command_type {
    use crate::runtime::event::command_type as all;
    /// `CL_COMMAND_WAIT_SIGNAL_AMD`.
    pub const WAIT_SIGNAL: u32 = all::WAIT_SIGNAL_AMD;
    /// `CL_COMMAND_WRITE_SIGNAL_AMD`.
    pub const WRITE_SIGNAL: u32 = all::WRITE_SIGNAL_AMD;
    /// `CL_COMMAND_MAKE_BUFFERS_RESIDENT_AMD`.
    pub const MAKE_BUFFERS_RESIDENT: u32 = all::MAKE_BUFFERS_RESIDENT_AMD;
}

/// `cl_bus_address_amd` as AMD's header lays it out: the bus address of
/// the surface (the buffer's bytes) and of its signal (marker) surface
/// (`BusAddr` is a transparent `u64`: the C layout is `cl_ulong`'s).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BusAddress {
    /// `surface_bus_address`.
    pub surface_bus_address: BusAddr,
    /// `marker_bus_address`.
    pub marker_bus_address: BusAddr,
}

/// The state of a bus-addressable buffer.
#[derive(Debug)]
pub(crate) struct Addressable {
    /// CPU address of the surface (the store's host pages).
    pub surface: usize,
    /// Its size in bytes.
    pub size: usize,
    /// CPU address of the signal page (one page of the buffer heap).
    pub marker: usize,
    /// Set by [`make_buffers_resident`]: the domain and the bus addresses.
    pub resident: Mutex<Option<(Arc<DmaDomain>, BusAddress)>>,
}

/// What the extension knows of one of its buffers.
#[derive(Debug)]
pub(crate) enum Bus {
    /// `CL_MEM_BUS_ADDRESSABLE_AMD`.
    Addressable(Addressable),
    /// `CL_MEM_EXTERNAL_PHYSICAL_AMD`.
    External(external::External),
}

/// What the extension keeps of `buffer`, if it made it: a field of the
/// buffer ([`Buffer::extension`]), which goes with it.
pub(crate) fn lookup(buffer: &Buffer) -> Option<Arc<Bus>> {
    buffer.extension::<Bus>()
}

/// True if `buffer` was created with [`BUS_ADDRESSABLE`].
///
/// ```
/// use dmabridge::ext::amd_bus;
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 4096, std::ptr::null_mut()) }?;
/// assert!(amd_bus::is_bus_addressable(&b));
/// // SAFETY: as above.
/// let plain = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// assert!(!amd_bus::is_bus_addressable(&plain));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn is_bus_addressable(buffer: &Buffer) -> bool {
    matches!(lookup(buffer).as_deref(), Some(Bus::Addressable(_)))
}

/// The rules of the seed's table 5.4 for the extension's flags, before any
/// other check: `CL_INVALID_VALUE` for both flags at once,
/// `BUS_ADDRESSABLE` with `ALLOC_HOST_PTR` or `USE_HOST_PTR`, and
/// `EXTERNAL_PHYSICAL` with any `*_HOST_PTR` flag, with `READ_WRITE` or
/// `READ_ONLY`, or with `HOST_READ_ONLY` (never read: dmabridge's rule).
fn check_flags(flags: u64) -> ClResult<()> {
    use mem_flags::*;
    check_exclusive(flags & !FLAGS)?;
    if flags & FLAGS == FLAGS {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x}: CL_MEM_BUS_ADDRESSABLE_AMD and CL_MEM_EXTERNAL_PHYSICAL_AMD exclude each other"
        );
    }
    if flags & BUS_ADDRESSABLE != 0 && flags & (ALLOC_HOST_PTR | USE_HOST_PTR) != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x}: CL_MEM_BUS_ADDRESSABLE_AMD excludes CL_MEM_ALLOC_HOST_PTR and CL_MEM_USE_HOST_PTR \
             (the buffer's pages are dmabridge's; CL_MEM_COPY_HOST_PTR may initialise them)"
        );
    }
    if flags & EXTERNAL_PHYSICAL != 0 && flags & HOST_PTR != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x}: CL_MEM_EXTERNAL_PHYSICAL_AMD excludes CL_MEM_ALLOC_HOST_PTR, CL_MEM_COPY_HOST_PTR \
             and CL_MEM_USE_HOST_PTR (host_ptr holds the bus addresses)"
        );
    }
    if flags & EXTERNAL_PHYSICAL != 0 && flags & HOST_READ_ONLY != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x}: CL_MEM_EXTERNAL_PHYSICAL_AMD excludes CL_MEM_HOST_READ_ONLY: the remote memory is \
             never read"
        );
    }
    if flags & EXTERNAL_PHYSICAL != 0 && flags & (READ_WRITE | READ_ONLY) != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x}: CL_MEM_EXTERNAL_PHYSICAL_AMD excludes CL_MEM_READ_WRITE and CL_MEM_READ_ONLY: the \
             remote memory is write-only"
        );
    }
    Ok(())
}

fn check_size(ctx: &Context, size: usize) -> ClResult<()> {
    let max = ctx.devices().iter().map(|d| d.max_mem_alloc_size).max().unwrap_or(0);
    if size == 0 || size as u64 > max {
        return cl_err!(
            InvalidBufferSize,
            "size {size} is not in 1..={max} (the largest CL_DEVICE_MAX_MEM_ALLOC_SIZE of the context)"
        );
    }
    Ok(())
}

/// `clCreateBuffer` with [`BUS_ADDRESSABLE`] or [`EXTERNAL_PHYSICAL`] in
/// `flags` ([`crate::ext::create_buffer`] comes here for them).
///
/// * Bus-addressable: the surface is `size` bytes of memfd pages of the
///   context's buffer heap (whole pages), initialised from `host_ptr` with
///   `CL_MEM_COPY_HOST_PTR` (else undefined), and a signal page, zeroed.
///   `CL_INVALID_HOST_PTR` for `host_ptr` without `COPY_HOST_PTR` or
///   `COPY_HOST_PTR` without it; `CL_OUT_OF_HOST_MEMORY` when the pages
///   cannot be allocated.
/// * External physical: `host_ptr` points to a [`BusAddress`]; see
///   the [`external`] module for its errors.
///
/// `CL_INVALID_VALUE` for the flag combinations the seed excludes (see the
/// module's documentation); `CL_INVALID_BUFFER_SIZE` for 0 or more than
/// every device's `CL_DEVICE_MAX_MEM_ALLOC_SIZE`. The buffer's
/// `CL_MEM_FLAGS` are `flags` plus `CL_MEM_READ_WRITE` for a bus-addressable
/// buffer that named no access, and plus `CL_MEM_WRITE_ONLY` and (unless
/// `CL_MEM_HOST_NO_ACCESS` was given) `CL_MEM_HOST_WRITE_ONLY` for an
/// external one (what it allows).
///
/// # Safety
/// With `COPY_HOST_PTR`, `host_ptr` must be valid for reading `size` bytes;
/// with `EXTERNAL_PHYSICAL`, for reading a [`BusAddress`] (any alignment).
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::amd_bus;
/// use dmabridge::runtime::buffer::{mem_flags, Buffer};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let data = vec![7u8; 5000];
/// // SAFETY: `data` holds 5000 bytes.
/// let b = unsafe {
///     amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE | mem_flags::COPY_HOST_PTR, 5000, data.as_ptr() as *mut u8)
/// }?;
/// assert_eq!(b.size(), 5000);
/// // SAFETY: no host pointer is read.
/// let bad = unsafe {
///     amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE | mem_flags::USE_HOST_PTR, 64, data.as_ptr() as *mut u8)
/// };
/// assert_eq!(bad.unwrap_err().kind, ClErrorKind::InvalidValue);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn create_buffer(ctx: &Arc<Context>, flags: u64, size: usize, host_ptr: *mut u8) -> ClResult<Arc<Buffer>> {
    check_flags(flags)?;
    check_size(ctx, size)?;
    if flags & EXTERNAL_PHYSICAL != 0 {
        if host_ptr.is_null() {
            return cl_err!(
                InvalidHostPtr,
                "host_ptr is NULL: CL_MEM_EXTERNAL_PHYSICAL_AMD takes a cl_bus_address_amd there"
            );
        }
        // SAFETY: the caller guarantees a readable `BusAddress`.
        let at = unsafe { std::ptr::read_unaligned(host_ptr as *const BusAddress) };
        return external::create(ctx, flags, size, at);
    }
    let copy = flags & mem_flags::COPY_HOST_PTR != 0;
    if copy && host_ptr.is_null() {
        return cl_err!(InvalidHostPtr, "host_ptr is NULL but flags {flags:#x} ask to copy it");
    }
    if !copy && !host_ptr.is_null() {
        return cl_err!(InvalidHostPtr, "host_ptr {host_ptr:?} given without CL_MEM_COPY_HOST_PTR");
    }
    if copy && (host_ptr as usize).checked_add(size).is_none() {
        return cl_err!(InvalidHostPtr, "host_ptr {host_ptr:?} + {size} bytes runs past the end of the address space");
    }
    let oom = |what: &str, e: &dyn std::fmt::Display| {
        ClError::new(ClErrorKind::OutOfHostMemory, format!("no memory with a bus address for {what}: {e}"))
    };
    let restrictions = Restrictions { no_sub_buffers: Some(NO_SUB_BUFFERS), ..Restrictions::default() };
    let store = Arc::new(Store::new(ctx, size, None).with_restrictions(restrictions));
    if copy {
        // SAFETY: the caller guarantees `host_ptr` for `size` bytes.
        unsafe { store.init_from(host_ptr) }.map_err(|e| oom("the surface", &e))?;
    }
    // The store's host pages (made above with COPY_HOST_PTR, else now).
    let surface = store.host_alloc().map_err(|e| oom("the surface", &e))?.0;
    let page = page_size();
    let heap = ctx.buffer_heap()?;
    let marker = heap.alloc(page, page, AllocMeta::HOST).map_err(|e| oom("the signal page", &e))?.as_ptr() as usize;
    // SAFETY: `marker` is a fresh page of the heap, ours alone.
    unsafe { std::ptr::write_bytes(marker as *mut u8, 0, page) };
    let flags = if flags & mem_flags::ACCESS == 0 { flags | mem_flags::READ_WRITE } else { flags };
    let bus = Arc::new(Bus::Addressable(Addressable { surface, size, marker, resident: Mutex::new(None) }));
    let buffer = Buffer::around_store(ctx, flags, size, store, Some(bus.clone()));
    let (ctx2, bus2) = (ctx.clone(), bus);
    buffer.set_destructor_callback(Box::new(move || {
        let Bus::Addressable(a) = &*bus2 else { return };
        if let Some((domain, _)) = sync::lock(&a.resident).take() {
            for addr in [a.surface, a.marker] {
                if let Err(e) = domain.evict(HostAddr(addr)) {
                    log::error!("releasing a bus-addressable buffer's bus address: {e}");
                }
            }
        }
        // The surface is the store's: it goes with the store, after
        // any device's residency of it.
        if let Ok(heap) = ctx2.buffer_heap() {
            if let Err(e) = heap.free(HostAddr(a.marker)) {
                log::error!("freeing a bus-addressable buffer's signal page: {e}");
            }
        }
    }));
    Ok(buffer)
}

/// Why `clCreateSubBuffer` answers `CL_INVALID_MEM_OBJECT` for one of the
/// extension's buffers (the seed supports no sub-buffers of them): set on
/// the buffer's store at creation ([`Restrictions`]).
const NO_SUB_BUFFERS: &str = "the buffer was created with CL_MEM_BUS_ADDRESSABLE_AMD or \
                              CL_MEM_EXTERNAL_PHYSICAL_AMD: such buffers have no sub-buffers \
                              (cl_amd_bus_addressable_memory)";

/// Why pinning or mapping failed, as the seed's `CL_OUT_OF_HOST_MEMORY`
/// with the limit named: the domain's IOVA space, or `RLIMIT_MEMLOCK`.
fn residency_error(what: &str, domain: &DmaDomain, e: ClError) -> ClError {
    let memlock = rustix::process::getrlimit(rustix::process::Resource::Memlock).current;
    let limit = match memlock {
        Some(n) => format!("{n} bytes"),
        None => "unlimited".to_owned(),
    };
    let why = if e.message.contains("no bus address") {
        format!(
            "the IOVA space is exhausted: the domain's devices reach bus addresses up to {:#x} and {} bytes of it \
             are in use",
            domain.dma_mask(),
            domain.iova_allocated_bytes()
        )
    } else if e.message.contains("memlock") {
        format!("RLIMIT_MEMLOCK ({limit}) forbids pinning more pages; {}", crate::sys::vm::memlock_fix())
    } else {
        "the pages cannot be pinned and mapped".to_owned()
    };
    ClError::new(ClErrorKind::OutOfHostMemory, format!("{what} cannot be made resident: {why} ({e})"))
}

/// Pins and maps one buffer's surface and signal page (or returns the
/// addresses it already has).
fn make_resident(a: &Addressable, domain: &Arc<DmaDomain>, index: usize) -> ClResult<(BusAddress, bool)> {
    let mut r = sync::lock(&a.resident);
    if let Some((_, at)) = &*r {
        return Ok((*at, false));
    }
    let what = format!("mem_objects[{index}] ({} bytes)", a.size);
    // SAFETY: dmabridge reaches the pages only through raw pointers while resident (no references); they stay
    // allocated until evicted (the buffer's destructor evicts before the pages go).
    let surface = unsafe { domain.make_resident(HostAddr(a.surface), a.size) };
    let surface = surface.map_err(|e| residency_error(&what, domain, e))?;
    // SAFETY: as above, for the signal page.
    let marker = match unsafe { domain.make_resident(HostAddr(a.marker), page_size()) } {
        Ok(m) => m,
        Err(e) => {
            if let Err(e) = domain.evict(HostAddr(a.surface)) {
                log::error!("undoing a surface's residency: {e}");
            }
            return Err(residency_error(&format!("the signal page of {what}"), domain, e));
        }
    };
    let at = BusAddress { surface_bus_address: surface.into(), marker_bus_address: marker.into() };
    *r = Some((domain.clone(), at));
    Ok((at, true))
}

fn undo_resident(a: &Addressable) {
    if let Some((domain, _)) = sync::lock(&a.resident).take() {
        for addr in [a.surface, a.marker] {
            if let Err(e) = domain.evict(HostAddr(addr)) {
                log::error!("undoing a buffer's residency: {e}");
            }
        }
    }
}

/// `clEnqueueMakeBuffersResidentAMD`: pins the surface and signal page of
/// each buffer and maps them into the platform's IOMMU domain, returning
/// their bus addresses in the order of `buffers`, and the command's event.
///
/// The residency is made by this call, not when the command runs: its
/// failures are this call's error, and the addresses are valid on return
/// whether or not it blocks. The command, ordered in the queue after
/// `wait_list` like any other, does nothing more; `blocking` waits for it.
/// A buffer that is already resident keeps (and returns) its addresses.
///
/// Errors: `CL_INVALID_OPERATION` for a buffer not created with
/// [`BUS_ADDRESSABLE`] (the seed's rule for wrong `mem_objects`; NULL
/// pointers with a count above 0 are the C face's); `CL_INVALID_CONTEXT` for
/// a buffer or event of another context; `CL_INVALID_VALUE` for an empty
/// list; `CL_OUT_OF_HOST_MEMORY` when a buffer cannot be made resident, the
/// message naming the limit (no VFIO domain on this platform, the domain's
/// IOVA space exhausted, or `RLIMIT_MEMLOCK`). A failure leaves resident
/// only what was resident before the call.
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
/// let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 8192, std::ptr::null_mut()) }?;
/// match Platform::get().dma_domain() {
///     Some(domain) => {
///         let (at, _ev) = amd_bus::make_buffers_resident(&q, &[b.clone()], true, &[])?;
///         assert!(at[0].surface_bus_address.raw() + 8191 <= domain.dma_mask());
///         assert_ne!(at[0].marker_bus_address.raw(), 0);
///     }
///     // The development host has no IOMMU domain.
///     None => {
///         let e = amd_bus::make_buffers_resident(&q, &[b.clone()], true, &[]).unwrap_err();
///         assert_eq!(e.kind, ClErrorKind::OutOfHostMemory);
///     }
/// }
/// // SAFETY: no host pointer.
/// let plain = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// let e = amd_bus::make_buffers_resident(&q, &[plain], true, &[]).unwrap_err();
/// assert_eq!(e.kind, ClErrorKind::InvalidOperation);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn make_buffers_resident(
    queue: &Arc<Queue>,
    buffers: &[Arc<Buffer>],
    blocking: bool,
    wait_list: &[Event],
) -> ClResult<(Vec<BusAddress>, Event)> {
    if buffers.is_empty() {
        return cl_err!(InvalidValue, "num_mem_objects is 0: there is nothing to make resident");
    }
    let mut found = Vec::with_capacity(buffers.len());
    for (i, b) in buffers.iter().enumerate() {
        match lookup(b) {
            Some(bus) if matches!(*bus, Bus::Addressable(_)) => found.push(bus),
            _ => {
                return cl_err!(
                    InvalidOperation,
                    "mem_objects[{i}] was not created with CL_MEM_BUS_ADDRESSABLE_AMD: only such buffers are made \
                     resident"
                )
            }
        }
        if !Arc::ptr_eq(b.context(), queue.context()) {
            return cl_err!(InvalidContext, "mem_objects[{i}] and the command queue belong to different contexts");
        }
    }
    check_wait_list(queue.context(), wait_list)?;
    let Some(domain) = Platform::get().dma_domain() else {
        return cl_err!(
            OutOfHostMemory,
            "no memory with a bus address: this platform has no IOMMU domain (no device bound to vfio-pci), so no \
             device could reach it"
        );
    };
    let mut out = Vec::with_capacity(found.len());
    let mut made: Vec<&Addressable> = Vec::new();
    for (i, bus) in found.iter().enumerate() {
        let Bus::Addressable(a) = &**bus else { unreachable!("checked above") };
        match make_resident(a, domain, i) {
            Ok((at, fresh)) => {
                out.push(at);
                if fresh {
                    made.push(a);
                }
            }
            Err(e) => {
                made.into_iter().for_each(undo_resident);
                return Err(e);
            }
        }
    }
    let holds = buffers.to_vec();
    let work = Box::new(move || {
        drop(holds);
        Ok(())
    });
    match queue.enqueue_with_use(command_type::MAKE_BUFFERS_RESIDENT, wait_list, blocking, CommandUse::Nothing, work) {
        Ok(ev) => Ok((out, ev)),
        Err(e) => {
            made.into_iter().for_each(undo_resident);
            Err(e)
        }
    }
}

/// The bus addresses of a resident bus-addressable buffer, `None` before
/// [`make_buffers_resident`] (or for another buffer).
///
/// No OpenCL function of its own: what `clEnqueueMakeBuffersResidentAMD`
/// returned, for code that did not keep it.
///
/// ```
/// use dmabridge::ext::amd_bus;
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 64, std::ptr::null_mut()) }?;
/// assert_eq!(amd_bus::bus_address(&b), None, "not resident yet");
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn bus_address(buffer: &Buffer) -> Option<BusAddress> {
    match lookup(buffer).as_deref() {
        Some(Bus::Addressable(a)) => sync::lock(&a.resident).as_ref().map(|(_, at)| *at),
        _ => None,
    }
}

/// The CPU addresses of a bus-addressable buffer's surface and signal page,
/// as `(surface, signal)`: what a remote device's writes to the bus
/// addresses change. For an external physical buffer, where its surface and
/// signal surface lie in the BAR's mapping: I/O memory, registered as such
/// ([`crate::runtime::transfer::io::is_io`]), to be reached only with
/// aligned volatile accesses. `CL_INVALID_MEM_OBJECT` for another buffer.
///
/// No OpenCL function of its own: for tests and for software that plays
/// the remote device on the CPU. The pages may be written by devices at any
/// time once resident: read them through raw pointers (volatile), never
/// through references.
///
/// ```
/// use dmabridge::ext::amd_bus;
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { amd_bus::create_buffer(&ctx, amd_bus::BUS_ADDRESSABLE, 64, std::ptr::null_mut()) }?;
/// let (surface, signal) = amd_bus::cpu_pages(&b)?;
/// assert_eq!(surface as usize % 4096, 0);
/// // SAFETY: the signal page is the buffer's, and no device has it yet.
/// assert_eq!(unsafe { std::ptr::read_volatile(signal) }, 0, "signals start at 0");
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn cpu_pages(buffer: &Buffer) -> ClResult<(*mut u8, *mut u32)> {
    match lookup(buffer).as_deref() {
        Some(Bus::Addressable(a)) => Ok((a.surface as *mut u8, a.marker as *mut u32)),
        Some(Bus::External(x)) => Ok((x.surface as *mut u8, x.signal as *mut u32)),
        None => cl_err!(
            InvalidMemObject,
            "the buffer was not created with CL_MEM_BUS_ADDRESSABLE_AMD or CL_MEM_EXTERNAL_PHYSICAL_AMD"
        ),
    }
}

/// True if the extension works on this platform: it has a VFIO domain in
/// which buffers can be made resident, the capability for which the
/// extension's row of `runtime::info::EXTENSIONS` lists
/// `cl_amd_bus_addressable_memory`.
///
/// ```
/// use dmabridge::ext::amd_bus;
/// use dmabridge::runtime::platform::Platform;
/// assert_eq!(amd_bus::available(), Platform::get().dma_domain().is_some());
/// ```
pub fn available() -> bool {
    Platform::get().dma_domain().is_some()
}
