//! External physical buffers (`CL_MEM_EXTERNAL_PHYSICAL_AMD`): a buffer
//! over memory of another PCI device, named by its bus addresses.
//!
//! The surface and signal bus addresses are looked up in sysfs
//! (`/sys/bus/pci/devices/*/resource`: the bus ranges of every function's
//! BARs); both must lie in one memory BAR of one function, which must be
//! bound to vfio-pci and not driven by the platform: the BARs of its edu
//! engines hold their DMA registers, and of a BAR device's function only
//! its memory BAR is memory (a wrong bus address must not let a buffer
//! write or a marker reprogram a device dmabridge drives). The BAR is
//! mapped through VFIO in the platform's container — the mapping of a BAR
//! device of the platform that already has it
//! ([`BarBackend`](crate::runtime::backend::bar::BarBackend)), else a
//! mapping of its own shared by every buffer on that BAR and registered as
//! I/O memory ([`crate::runtime::transfer::io`]: the CPU's copies, fills
//! and built-in kernels reach it with aligned volatile accesses, as Device
//! memory on arm64 requires) — and the surface is made resident in the
//! platform's IOMMU domain, so that the domain's DMA engines (edu) write it
//! peer-to-peer and the CPU writes it through the mapping.
//!
//! The remote memory is the one storage of the buffer on every device of
//! the context (`Store::new_remote`): commands on the BAR device's queue
//! write it through the device's engine (peer-to-peer) or by the CPU, never
//! into a copy in the device's own memory.
//!
//! When the function behind the BAR is lost (removed, unbound:
//! [`lost`](crate::runtime::backend::lost)), its mapping becomes inert
//! anonymous memory; from then on every command on the buffer, on any
//! device, and every write-signal ends with `CL_DEVICE_NOT_AVAILABLE`
//! ([`remote_lost`] says why) rather than write bytes that reach nobody.
//!
//! The buffer is write-only: its `CL_MEM_FLAGS` gain `CL_MEM_WRITE_ONLY` and
//! `CL_MEM_HOST_WRITE_ONLY`, so reads are `CL_INVALID_OPERATION`; maps
//! (any kind) are refused as well, and so are a copy *from* it and a
//! built-in kernel launch that passes it as an argument the kernel reads
//! (e.g. `yuyv_to_rgba`'s source). Native kernels are the application's
//! code: like any `CL_MEM_WRITE_ONLY` buffer, reading it there is the
//! application's error (the read returns the remote memory's bytes).

use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use super::{Bus, BusAddress};
use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::runtime::backend::bar::BarMemory;
use crate::runtime::backend::domain::DmaDomain;
use crate::runtime::backend::lost::LentBar;
use crate::runtime::backend::LocalMemory;
use crate::runtime::buffer::restrictions::Restrictions;
use crate::runtime::buffer::store::{RemoteKeep, Store};
use crate::runtime::buffer::{mem_flags, Buffer};
use crate::runtime::context::Context;
use crate::runtime::platform::Platform;
use crate::runtime::transfer::io::IoRange;
use crate::sync;
use crate::sys::addr::{BusAddr, HostAddr};
use crate::sys::fork;
use crate::sys::page_size;
use crate::sys::pci::PciAddress;

/// A PCI BAR containing a bus address, as sysfs describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarSlot {
    /// The function.
    pub address: PciAddress,
    /// The BAR (0-5).
    pub bar: u32,
    /// The BAR's first bus address.
    pub start: BusAddr,
    /// Its length in bytes.
    pub len: u64,
}

const IORESOURCE_MEM: u64 = 0x200;

/// The memory BAR of a PCI function that contains the bus address `bus`,
/// from `/sys/bus/pci/devices/*/resource`.
///
/// No OpenCL function of its own: how `clCreateBuffer` with
/// `CL_MEM_EXTERNAL_PHYSICAL_AMD` finds the device behind a bus address.
///
/// ```
/// use dmabridge::ext::amd_bus::external::find_bar;
/// use dmabridge::sys::addr::BusAddr;
/// use dmabridge::sys::pci::PciFunction;
/// assert_eq!(find_bar(BusAddr(0)), None, "no BAR starts at 0");
/// // Every BAR found contains the address asked for.
/// for f in PciFunction::all() {
///     let text = std::fs::read_to_string(format!("/sys/bus/pci/devices/{}/resource", f.address)).unwrap_or_default();
///     if let Some(start) = text.lines().next().and_then(|l| l.split_whitespace().next()) {
///         let start = u64::from_str_radix(start.trim_start_matches("0x"), 16).unwrap();
///         if let Some(slot) = find_bar(BusAddr(start + 1)) {
///             assert!(slot.start.raw() <= start + 1 && start + 1 < slot.start.raw() + slot.len);
///         }
///     }
/// }
/// ```
pub fn find_bar(bus: BusAddr) -> Option<BarSlot> {
    find_bar_in(Path::new("/sys/bus/pci/devices"), bus)
}

fn find_bar_in(root: &Path, bus: BusAddr) -> Option<BarSlot> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let Ok(address) = entry.file_name().to_string_lossy().parse::<PciAddress>() else { continue };
        let Ok(text) = std::fs::read_to_string(entry.path().join("resource")) else { continue };
        for (bar, line) in text.lines().take(6).enumerate() {
            let f: Vec<u64> = line.split_whitespace().filter_map(hex).collect();
            let [start, end, flags] = f[..] else { continue };
            if start == 0 || end < start || flags & IORESOURCE_MEM == 0 {
                continue;
            }
            if (start..=end).contains(&bus.0) {
                return Some(BarSlot { address, bar: bar as u32, start: BusAddr(start), len: end - start + 1 });
            }
        }
    }
    None
}

/// A BAR mapped into the process through VFIO, shared by the buffers on it.
struct OpenBar {
    slot: BarSlot,
    base: usize,
    len: usize,
    /// The memory of the platform's BAR device on this BAR, if there is
    /// one: its allocations and external buffers must not overlap.
    device_memory: Option<Arc<BarMemory>>,
    /// Our own mapping registered as I/O memory, so that the CPU's copies,
    /// fills and built-in kernels reach it with aligned volatile accesses
    /// (Device memory on arm64); `None` over the BAR device's mapping, which
    /// its `BarMemory` registers. Declared before `keep`: unregistered
    /// before the mapping goes.
    _io: Option<IoRange>,
    /// What keeps the mapping.
    keep: BarKeep,
}

/// What keeps an [`OpenBar`]'s mapping, and tells when its function is lost.
enum BarKeep {
    /// The platform's BAR device, which has the BAR mapped.
    Device(Arc<crate::runtime::backend::bar::BarBackend>),
    /// Our own VFIO device and mapping, watched for removal.
    Lent(LentBar),
}

impl std::fmt::Debug for OpenBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenBar").field("slot", &self.slot).field("base", &format_args!("{:#x}", self.base)).finish()
    }
}

/// Why the function behind `bar` can no longer be used, once it was lost
/// (removed, unbound): its mapping is inert, its buffers' commands fail
/// with this error, and a function back at the same address is opened anew.
fn loss(bar: &OpenBar) -> Option<ClError> {
    use crate::runtime::backend::Backend;
    let lost = match &bar.keep {
        BarKeep::Lent(lent) => lent.lost(),
        BarKeep::Device(b) => b.loss()?.check(b.name()).err(),
    }?;
    Some(ClError::new(
        ClErrorKind::DeviceNotAvailable,
        format!(
            "the remote memory of this external physical buffer, BAR {} of {}, is gone with its function: {}",
            bar.slot.bar, bar.slot.address, lost.message
        ),
    ))
}

static OPEN: LazyLock<Mutex<Vec<Weak<OpenBar>>>> = LazyLock::new(Mutex::default);

/// The surface bus addresses of the live external physical buffers: one
/// buffer per surface. Kept for the process, as the bus is; what the
/// extension keeps of each buffer is a field of the buffer.
static SURFACES: Mutex<Vec<BusAddr>> = Mutex::new(Vec::new());

/// [`OPEN`], held in a process-wide section (see `sys::fork`).
fn open_bars() -> fork::Guarded<MutexGuard<'static, Vec<Weak<OpenBar>>>> {
    fork::guarded(|| sync::lock(&OPEN))
}

/// [`SURFACES`], held in a process-wide section (see `sys::fork`).
fn surfaces() -> fork::Guarded<MutexGuard<'static, Vec<BusAddr>>> {
    fork::guarded(|| sync::lock(&SURFACES))
}

fn open_bar(slot: BarSlot, domain: &Arc<DmaDomain>) -> ClResult<Arc<OpenBar>> {
    let fail = |why: String| {
        ClError::new(
            ClErrorKind::MemObjectAllocationFailure,
            format!("the remote memory at BAR {} of {} cannot be mapped: {why}", slot.bar, slot.address),
        )
    };
    let mut open = open_bars();
    open.retain(|w| w.strong_count() > 0);
    if let Some(b) = open
        .iter()
        .filter_map(Weak::upgrade)
        .find(|b| b.slot.address == slot.address && b.slot.bar == slot.bar && loss(b).is_none())
    {
        return Ok(b);
    }
    // A function the platform drives: only a BAR device's memory BAR is
    // memory to share (the BAR device already has it mapped); any other BAR
    // holds registers or state its driver relies on. A device that was lost
    // drives nothing any more (its mapping is inert; the function may be
    // back since, and is opened anew below).
    if let Some(d) = Platform::get().devices().iter().find(|d| d.pci_address() == Some(slot.address) && d.available()) {
        match d.bar_backend() {
            Some(b) if b.config().bar == slot.bar => {
                let mem = b.memory().clone();
                let (base, len) = (mem.base().as_ptr() as usize, mem.size());
                let bar = Arc::new(OpenBar {
                    slot,
                    base,
                    len,
                    device_memory: Some(mem),
                    _io: None,
                    keep: BarKeep::Device(b),
                });
                open.push(Arc::downgrade(&bar));
                return Ok(bar);
            }
            Some(b) => {
                return Err(fail(format!(
                    "dmabridge drives this function as the device {:?}, whose memory is BAR {}: BAR {} holds its \
                     registers or other state, which a buffer write or clEnqueueWriteSignalAMD must not change",
                    d.name,
                    b.config().bar,
                    slot.bar
                )))
            }
            None => {
                return Err(fail(format!(
                    "dmabridge drives this function as the device {:?} (a DMA engine): its BARs hold the engine's \
                     registers, and a buffer write or clEnqueueWriteSignalAMD there would reprogram its DMA",
                    d.name
                )))
            }
        }
    }
    match crate::sys::pci::PciFunction::read(slot.address) {
        Some(f) if f.is_vfio_bound() => {}
        Some(f) => {
            return Err(fail(format!(
                "it is bound to {}, not vfio-pci ({} bind {})",
                f.driver.as_deref().unwrap_or("no driver"),
                crate::sys::hints::kmod(),
                slot.address
            )))
        }
        None => return Err(fail("the function is gone".into())),
    }
    let device = domain.container().device(slot.address).map_err(|e| fail(format!("opening it through VFIO: {e}")))?;
    let mapping = device.map_region(slot.bar).map_err(|e| fail(format!("mapping the BAR: {e}")))?;
    if !mapping.access().writable() {
        return Err(fail("VFIO maps the BAR read-only".into()));
    }
    let (base, len) = (mapping.as_ptr() as usize, mapping.len().min(slot.len as usize));
    let io = Some(IoRange::register(mapping.span()));
    // Watched for removal: when the function goes, the mapping is made
    // inert and the device closed (runtime::backend::lost).
    let name = format!("remote memory BAR {} of {}", slot.bar, slot.address);
    let keep = LentBar::new(name, device, mapping, domain.clone()).map_err(|e| fail(format!("{e}")))?;
    let bar = Arc::new(OpenBar { slot, base, len, device_memory: None, _io: io, keep: BarKeep::Lent(keep) });
    open.push(Arc::downgrade(&bar));
    Ok(bar)
}

/// What the extension keeps for an external physical buffer. The remote
/// memory itself is kept by the buffer's store ([`RemoteMemory`]).
#[derive(Debug)]
pub(crate) struct External {
    /// CPU addresses of the surface and the signal surface in the BAR
    /// mapping (I/O memory).
    pub(crate) surface: usize,
    pub(crate) signal: usize,
    /// The last marker value enqueued.
    last: Mutex<Option<u32>>,
}

/// What keeps an external buffer's remote memory usable, owned by the
/// buffer's store (`Store::new_remote`), which drops it after every
/// device's residency of the surface is evicted. Dropping it evicts the
/// surface's own residency, gives back its claims on the BAR device's
/// memory, and then lets the BAR go (unmapped, and the VFIO device closed,
/// with the last buffer on it): in that order, so that no IOMMU mapping of
/// the surface outlives the BAR's mapping.
#[derive(Debug)]
struct RemoteMemory {
    surface: usize,
    /// The domain in which the surface is resident.
    domain: Arc<DmaDomain>,
    /// The ranges claimed in the BAR device's memory (see [`claim`]).
    claims: Vec<usize>,
    /// Keeps the BAR mapped; dropped last.
    bar: Arc<OpenBar>,
}

impl Drop for RemoteMemory {
    fn drop(&mut self) {
        if let Err(e) = self.domain.evict(HostAddr(self.surface)) {
            log::error!("releasing an external physical buffer's bus mapping: {e}");
        }
        if let Some(mem) = &self.bar.device_memory {
            release_claims(mem, &self.claims);
        }
    }
}

/// Commands on the buffer check it before they touch the remote memory
/// (`Store::make_current`).
impl RemoteKeep for RemoteMemory {
    fn lost(&self) -> Option<ClError> {
        loss(&self.bar)
    }
}

impl External {
    /// The CPU address of the signal surface's byte `offset` (checked by
    /// the caller to lie inside it).
    pub(crate) fn signal_slot(&self, offset: usize) -> usize {
        self.signal + offset
    }

    /// Enqueues the write of `value` as the buffer's next marker with
    /// `enqueue`: `CL_INVALID_VALUE` unless it is above the last one. The
    /// value is taken only if `enqueue` succeeds, and no other marker of the
    /// buffer is enqueued meanwhile, so markers are enqueued (and, in one
    /// queue, written) in increasing order.
    pub(crate) fn enqueue_value<T>(&self, value: u32, enqueue: impl FnOnce() -> ClResult<T>) -> ClResult<T> {
        let mut last = sync::lock(&self.last);
        if let Some(l) = *last {
            if value <= l {
                return cl_err!(
                    InvalidValue,
                    "marker value {value} does not increase on the last one written to this buffer ({l}): \
                     consecutive markers must keep increasing"
                );
            }
        }
        let r = enqueue()?;
        *last = Some(value);
        Ok(r)
    }
}

/// Claims the surface's and the signal surface's `size` bytes at the CPU
/// addresses `surface` and `signal` in the memory of the platform's BAR
/// device on that BAR, if there is one, so that its device allocations and
/// the external buffer never share bytes; returns the claims, to free at
/// release. `CL_OUT_OF_RESOURCES` (nothing claimed) if a device allocation
/// (a buffer or USM allocation of any context) already has some of them.
fn claim(bar: &OpenBar, surface: usize, signal: usize, size: usize) -> ClResult<Vec<usize>> {
    let Some(mem) = &bar.device_memory else { return Ok(Vec::new()) };
    // The two ranges, merged when they overlap.
    let (lo, hi) = (surface.min(signal), surface.max(signal));
    let ranges = if hi < lo + size { vec![(lo, hi + size - lo)] } else { vec![(surface, size), (signal, size)] };
    let mut claims = Vec::new();
    for (p, n) in ranges {
        match mem.claim(p as *const u8, n) {
            Ok(c) => claims.push(c as usize),
            Err(e) => {
                release_claims(mem, &claims);
                return cl_err!(
                    OutOfResources,
                    "the remote memory at {p:#x}+{n:#x} is already used by a device allocation of BAR {} of {} \
                     (another buffer or USM allocation): {e}",
                    bar.slot.bar,
                    bar.slot.address
                );
            }
        }
    }
    Ok(claims)
}

fn release_claims(mem: &BarMemory, claims: &[usize]) {
    for &c in claims {
        if let Err(e) = mem.free(c as *const u8) {
            log::error!("releasing an external physical buffer's claim on device memory: {e}");
        }
    }
}

/// Creates the external physical buffer over the remote memory at `at`
/// (for [`super::create_buffer`], whose flag and size checks come first).
///
/// Errors: `CL_INVALID_HOST_PTR` if either address is 0 or not page
/// aligned, or if the two lie in different BARs; `CL_MEM_OBJECT_ALLOCATION_FAILURE`
/// if the remote memory cannot be mapped (no PCI BAR contains the surface
/// or holds `size` bytes from it, or the signal surface's `size` bytes; the
/// function is not bound to vfio-pci; the platform drives it — an edu
/// engine, or a BAR device's function outside its memory BAR; no VFIO
/// domain); `CL_OUT_OF_RESOURCES`
/// if a live buffer already uses the same surface address, or if a device
/// allocation of the platform's BAR device on that BAR has some of its bytes
/// (the device's allocations never get them while the buffer lives).
pub(crate) fn create(ctx: &Arc<Context>, flags: u64, size: usize, at: BusAddress) -> ClResult<Arc<Buffer>> {
    let page = page_size() as u64;
    for (name, a) in [("surface", at.surface_bus_address), ("marker", at.marker_bus_address)] {
        if a.0 == 0 || !a.is_aligned(page) {
            return cl_err!(
                InvalidHostPtr,
                "the {name} bus address {a:#x} is {}: CL_MEM_EXTERNAL_PHYSICAL_AMD takes page-aligned addresses",
                if a.0 == 0 { "0" } else { "not page aligned" }
            );
        }
    }
    let unmappable = |why: String| ClError::new(ClErrorKind::MemObjectAllocationFailure, why);
    let slot = find_bar(at.surface_bus_address).ok_or_else(|| {
        unmappable(format!("no PCI function has a memory BAR at bus address {:#x}", at.surface_bus_address))
    })?;
    let within =
        |a: BusAddr| a >= slot.start && a.checked_add(size as u64).is_some_and(|e| e.0 <= slot.start.0 + slot.len);
    if find_bar(at.marker_bus_address) != Some(slot) {
        return cl_err!(
            InvalidHostPtr,
            "the marker bus address {:#x} is not in BAR {} of {} with the surface: both must come from the same \
             device and memory pool",
            at.marker_bus_address,
            slot.bar,
            slot.address
        );
    }
    for (name, a) in [("surface", at.surface_bus_address), ("signal surface", at.marker_bus_address)] {
        if !within(a) {
            return Err(unmappable(format!(
                "the {name} {a:#x} + {size} bytes runs past the end of BAR {} of {} ({:#x} + {:#x})",
                slot.bar, slot.address, slot.start, slot.len
            )));
        }
    }
    let Some(domain) = Platform::get().dma_domain() else {
        return Err(unmappable(format!(
            "BAR {} of {} cannot be mapped: this platform has no VFIO domain (no device bound to vfio-pci)",
            slot.bar, slot.address
        )));
    };
    // One buffer per surface address; the lock is held until the buffer has it.
    let mut taken = surfaces();
    if taken.contains(&at.surface_bus_address) {
        return cl_err!(
            OutOfResources,
            "the remote memory at bus address {:#x} is already used by another external physical buffer",
            at.surface_bus_address
        );
    }
    let bar = open_bar(slot, domain)?;
    let off = |a: BusAddr| (a - slot.start) as usize;
    if off(at.surface_bus_address) + size > bar.len || off(at.marker_bus_address) + size > bar.len {
        return Err(unmappable(format!("VFIO maps only {:#x} bytes of BAR {} of {}", bar.len, slot.bar, slot.address)));
    }
    let surface = bar.base + off(at.surface_bus_address);
    let signal = bar.base + off(at.marker_bus_address);
    let claims = claim(&bar, surface, signal, size)?;
    // SAFETY: the BAR mapping is reached only through raw pointers; it outlives the residency: `RemoteMemory` evicts
    // before it lets `bar` go, and the store drops it only after evicting every device's residency of the surface.
    if let Err(e) = unsafe { domain.make_resident(HostAddr(surface), size) } {
        if let Some(mem) = &bar.device_memory {
            release_claims(mem, &claims);
        }
        return Err(unmappable(format!("mapping the remote memory for peer-to-peer DMA: {e}")));
    }
    let remote = RemoteMemory { surface, domain: domain.clone(), claims, bar };
    let restrictions = Restrictions {
        no_read: Some(REMOTE_IS_WRITE_ONLY),
        no_sub_buffers: Some(super::NO_SUB_BUFFERS),
        no_write: None,
    };
    let store =
        Arc::new(Store::new_remote(ctx, size, HostAddr(surface), Box::new(remote)).with_restrictions(restrictions));
    let host = if flags & mem_flags::HOST_ACCESS == 0 { mem_flags::HOST_WRITE_ONLY } else { 0 };
    let flags = flags | mem_flags::WRITE_ONLY | host;
    let bus = Arc::new(Bus::External(External { surface, signal, last: Mutex::new(None) }));
    let buffer = Buffer::around_store(ctx, flags, size, store, Some(bus));
    taken.push(at.surface_bus_address);
    drop(taken);
    // The surface is free for another buffer once this one is released;
    // its remote memory goes with the store, after that.
    let surface_bus_address = at.surface_bus_address;
    buffer.set_destructor_callback(Box::new(move || {
        surfaces().retain(|&a| a != surface_bus_address);
    }));
    Ok(buffer)
}

/// Why the commands on `buffer` fail, if it is an external physical buffer
/// whose remote function was lost (removed, unbound): the
/// `CL_DEVICE_NOT_AVAILABLE` error naming the function, whose code those
/// commands end with (the reason is also logged, as a status carries no
/// text). `None` for a usable buffer, and for every other buffer.
///
/// No OpenCL function of its own: the text behind such a command's status.
///
/// ```
/// use dmabridge::ext::amd_bus::external::remote_lost;
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 4096, std::ptr::null_mut()) }?;
/// assert!(remote_lost(&b).is_none());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn remote_lost(buffer: &Buffer) -> Option<ClError> {
    buffer.store().remote_lost()
}

/// Why a map, unmap or read, a copy from the buffer, or a built-in kernel
/// reading it, answers `CL_INVALID_OPERATION` on an external physical
/// buffer: such buffers are write-only, and maps are not supported (seed
/// 002). Set on the buffer's store at creation (its
/// [`Restrictions`]), which the runtime's commands ask.
const REMOTE_IS_WRITE_ONLY: &str = "the buffer was created with CL_MEM_EXTERNAL_PHYSICAL_AMD: remote memory is \
                                    write-only, and it is never mapped or read (cl_amd_bus_addressable_memory)";

#[cfg(test)]
mod tests {
    use super::*;

    /// A child forked while another thread held the registry takes it at
    /// once (see `sys::fork`): without the fork handler it waited forever.
    #[test]
    fn a_forked_child_takes_the_registry_another_thread_held() {
        crate::sys::forked::a_child_takes_what_another_thread_held(
            "ext::amd_bus::external::tests::a_forked_child_takes_the_registry_another_thread_held",
            &[("open BARs", || Box::new(open_bars())), ("surfaces", || Box::new(surfaces()))],
        );
    }

    #[test]
    fn bars_are_found_from_a_sysfs_tree() {
        let dir = std::env::temp_dir().join(format!("amd-bus-sysfs-{}", std::process::id()));
        let f = dir.join("0000:00:08.0");
        std::fs::create_dir_all(&f).unwrap();
        let lines = [
            "0x00000000fea00000 0x00000000fea000ff 0x0000000000040200",
            "0x0000000000000000 0x0000000000000000 0x0000000000000000",
            "0x0000000fe0000000 0x0000000fe03fffff 0x000000000014220c",
            "0x000000000000c000 0x000000000000c0ff 0x0000000000040101",
        ];
        std::fs::write(f.join("resource"), lines.join("\n")).unwrap();
        let slot = find_bar_in(&dir, BusAddr(0xf_e000_1000)).unwrap();
        assert_eq!(slot.address, "0000:00:08.0".parse().unwrap());
        assert_eq!((slot.bar, slot.start, slot.len), (2, BusAddr(0xf_e000_0000), 0x40_0000));
        assert_eq!(find_bar_in(&dir, BusAddr(0xf_e040_0000)), None, "just past the BAR");
        assert_eq!(find_bar_in(&dir, BusAddr(0xc010)), None, "I/O BARs are not memory");
        assert_eq!(find_bar_in(&dir, BusAddr(0)), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
