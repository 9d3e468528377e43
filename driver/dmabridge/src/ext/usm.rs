//! `cl_intel_unified_shared_memory` (seed 000): host, device and shared
//! allocations returned as plain pointers.
//!
//! Host and shared allocations, and device allocations of the CPU device,
//! come from the context's memfd-backed [`Heap`](crate::memory::heap::Heap):
//! any of them can be exported as a dma-buf and looked up from any interior
//! pointer without a lock. Functions map one-to-one to the extension's entry
//! points; properties are the `(name, value)` pairs of the zero-terminated C
//! list.

use std::ptr::NonNull;
use std::sync::Arc;

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::{AllocInfo, AllocKind, AllocMeta, FreeError};
use crate::runtime::backend::residency;
use crate::runtime::context::{Context, Freed};
use crate::runtime::device::Device;
use crate::runtime::info::{Extension, InfoValue, Requires, EXTENSIONS};
use crate::runtime::platform::Platform;
use crate::sys::addr::{BusAddr, HostAddr};

/// The extension's string.
pub const EXTENSION: &str = "cl_intel_unified_shared_memory";

/// Listed everywhere (host memory is all it needs), first in the lists.
#[linkme::distributed_slice(EXTENSIONS)]
static EXTENSION_ROW: Extension = Extension::new(EXTENSION, Requires::Always, 100);

/// `CL_MEM_ALLOC_FLAGS_INTEL`: the only allocation property.
pub const MEM_ALLOC_FLAGS: u64 = 0x4195;
/// Allocation flag bits.
pub mod alloc_flags {
    /// `CL_MEM_ALLOC_WRITE_COMBINED_INTEL`.
    pub const WRITE_COMBINED: u64 = 1 << 0;
    /// `CL_MEM_ALLOC_INITIAL_PLACEMENT_DEVICE_INTEL` (shared allocations only).
    pub const INITIAL_PLACEMENT_DEVICE: u64 = 1 << 1;
    /// `CL_MEM_ALLOC_INITIAL_PLACEMENT_HOST_INTEL` (shared allocations only).
    pub const INITIAL_PLACEMENT_HOST: u64 = 1 << 2;
    pub(crate) const ALL: u64 = WRITE_COMBINED | INITIAL_PLACEMENT_DEVICE | INITIAL_PLACEMENT_HOST;
}

/// `cl_mem_info_intel` values for [`get_mem_alloc_info`].
pub mod mem_info {
    /// `CL_MEM_ALLOC_TYPE_INTEL`.
    pub const ALLOC_TYPE: u32 = 0x419A;
    /// `CL_MEM_ALLOC_BASE_PTR_INTEL`.
    pub const ALLOC_BASE_PTR: u32 = 0x419B;
    /// `CL_MEM_ALLOC_SIZE_INTEL`.
    pub const ALLOC_SIZE: u32 = 0x419C;
    /// `CL_MEM_ALLOC_DEVICE_INTEL`.
    pub const ALLOC_DEVICE: u32 = 0x419D;
    /// `CL_MEM_ALLOC_FLAGS_INTEL`.
    pub const ALLOC_FLAGS: u32 = 0x4195;
}

/// `cl_unified_shared_memory_type_intel` values.
pub mod mem_type {
    /// `CL_MEM_TYPE_UNKNOWN_INTEL`.
    pub const UNKNOWN: u32 = 0x4196;
    /// `CL_MEM_TYPE_HOST_INTEL`.
    pub const HOST: u32 = 0x4197;
    /// `CL_MEM_TYPE_DEVICE_INTEL`.
    pub const DEVICE: u32 = 0x4198;
    /// `CL_MEM_TYPE_SHARED_INTEL`.
    pub const SHARED: u32 = 0x4199;
}

fn parse_properties(properties: &[(u64, u64)], kind: AllocKind) -> ClResult<u64> {
    let mut flags = None;
    for &(name, value) in properties {
        if name != MEM_ALLOC_FLAGS {
            return cl_err!(
                InvalidProperty,
                "property {name:#x} is not a USM allocation property (only CL_MEM_ALLOC_FLAGS_INTEL, 0x4195)"
            );
        }
        if flags.replace(value).is_some() {
            return cl_err!(InvalidProperty, "CL_MEM_ALLOC_FLAGS_INTEL is given more than once");
        }
        if value & !alloc_flags::ALL != 0 {
            return cl_err!(
                InvalidProperty,
                "CL_MEM_ALLOC_FLAGS_INTEL value {value:#x} has unknown bits {:#x}",
                value & !alloc_flags::ALL
            );
        }
        let placement = value & (alloc_flags::INITIAL_PLACEMENT_DEVICE | alloc_flags::INITIAL_PLACEMENT_HOST);
        match kind {
            AllocKind::Host | AllocKind::Device if placement != 0 => {
                return cl_err!(InvalidProperty, "initial placement flags are valid only for shared allocations");
            }
            AllocKind::Shared
                if placement == alloc_flags::INITIAL_PLACEMENT_DEVICE | alloc_flags::INITIAL_PLACEMENT_HOST =>
            {
                return cl_err!(
                    InvalidProperty,
                    "INITIAL_PLACEMENT_DEVICE and INITIAL_PLACEMENT_HOST are mutually exclusive"
                );
            }
            _ => {}
        }
    }
    Ok(flags.unwrap_or(0))
}

/// The checks every allocation function shares, over the devices that
/// support the allocation type: alignment and size against them.
fn check_shape<'a>(
    what: &str,
    devices: impl Iterator<Item = &'a Arc<Device>> + Clone,
    size: usize,
    alignment: u32,
) -> ClResult<usize> {
    if alignment != 0 && !alignment.is_power_of_two() {
        return cl_err!(InvalidValue, "alignment {alignment} is not zero or a power of two");
    }
    let max_align = devices.clone().map(|d| d.max_alignment).max().unwrap_or(0);
    if alignment as u64 > max_align {
        return cl_err!(InvalidValue, "alignment {alignment} is larger than the largest data type ({max_align} bytes) of the devices that support {what} allocations");
    }
    let max_size = devices.map(|d| d.max_mem_alloc_size).min().unwrap_or(0);
    if size == 0 {
        return cl_err!(InvalidBufferSize, "size is 0");
    }
    if size as u64 > max_size {
        return cl_err!(InvalidBufferSize, "size {size} is larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE ({max_size})");
    }
    Ok(if alignment == 0 { max_align as usize } else { alignment as usize })
}

fn allocate(ctx: &Context, size: usize, align: usize, meta: AllocMeta) -> ClResult<NonNull<u8>> {
    ctx.heap()
        .alloc(size, align, meta)
        .map_err(|e| ClError::new(ClErrorKind::OutOfHostMemory, format!("allocating {size} bytes: {e}")))
}

fn check_device(ctx: &Context, device: &Arc<Device>) -> ClResult<()> {
    if !ctx.has_device(device) {
        return cl_err!(InvalidDevice, "device {:?} is not in the context", device.name);
    }
    Ok(())
}

/// `clHostMemAllocINTEL`: a host allocation, accessible by every device of
/// the context that supports host USM.
///
/// ```
/// use dmabridge::ext::usm;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(Platform::get().devices())?;
/// let p = usm::host_mem_alloc(&ctx, &[], 4096, 0)?;
/// assert_eq!(p.as_ptr() as usize % 128, 0);
/// usm::mem_free(&ctx, p.as_ptr())?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn host_mem_alloc(
    ctx: &Arc<Context>,
    properties: &[(u64, u64)],
    size: usize,
    alignment: u32,
) -> ClResult<NonNull<u8>> {
    // No allocation on this path: it is measured against libc's malloc.
    let supporting = ctx.devices().iter().filter(|d| d.usm.host != 0);
    if supporting.clone().next().is_none() {
        return cl_err!(InvalidOperation, "no device of the context supports host USM allocations");
    }
    let flags = parse_properties(properties, AllocKind::Host)?;
    let align = check_shape("host", supporting, size, alignment)?;
    allocate(ctx, size, align, AllocMeta { kind: AllocKind::Host, device: None, flags: flags as u8 })
}

/// `clDeviceMemAllocINTEL`: a device allocation owned by `device`. On the
/// CPU device it lives in the context's heap (host-unified memory). On an
/// edu device it lives there too, page-aligned so that it owns its pages,
/// and is resident in the edu's IOMMU domain (pinned and mapped) until it is
/// freed, at the IOVA [`device_address`] reports, equal to the pointer when
/// the DMA mask allows. Fails with `CL_OUT_OF_RESOURCES`, allocating
/// nothing, when it cannot be made resident (no bus addresses left, the
/// memlock limit). On a device with local memory (a BAR device, not
/// host-unified) it is sub-allocated in that memory: `CL_INVALID_BUFFER_SIZE`
/// beyond its size, `CL_OUT_OF_RESOURCES` when no free range is left.
///
/// ```
/// use dmabridge::ext::usm;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let p = usm::device_mem_alloc(&ctx, cpu, &[], 1 << 20, 64)?;
/// usm::mem_free(&ctx, p.as_ptr())?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn device_mem_alloc(
    ctx: &Arc<Context>,
    device: &Arc<Device>,
    properties: &[(u64, u64)],
    size: usize,
    alignment: u32,
) -> ClResult<NonNull<u8>> {
    check_device(ctx, device)?;
    if device.usm.device == 0 {
        return cl_err!(InvalidOperation, "device {:?} does not support device USM allocations", device.name);
    }
    let flags = parse_properties(properties, AllocKind::Device)?;
    let align = check_shape("device", std::iter::once(device), size, alignment)?;
    if device.local_memory().is_some() {
        // Not host-unified (a BAR device): the allocation lives in the
        // device's own memory.
        return ctx.local_alloc(device, size, align, flags as u8);
    }
    let meta = AllocMeta { kind: AllocKind::Device, device: Some(device.index), flags: flags as u8 };
    allocate_resident(ctx, device, size, align, meta)
}

/// A device allocation of `device`: on a device with a DMA domain (edu) it
/// owns whole pages (page-aligned, so no other allocation shares them) and
/// is made resident there until freed; anywhere else a plain heap
/// allocation. Fails with `CL_OUT_OF_RESOURCES`, allocating nothing, when it
/// cannot be made resident.
fn allocate_resident(
    ctx: &Arc<Context>,
    device: &Device,
    size: usize,
    align: usize,
    meta: AllocMeta,
) -> ClResult<NonNull<u8>> {
    let Some(domain) = device.dma_domain() else {
        return allocate(ctx, size, align, meta);
    };
    let p = allocate(ctx, size, align.max(crate::sys::page_size()), meta)?;
    // SAFETY: a fresh allocation, handed out only as a raw pointer; devices
    // write it only through enqueued commands (USM: the host keeps off
    // meanwhile), and it is evicted before its pages are freed (free, drop).
    match unsafe { domain.make_resident(HostAddr::of(p.as_ptr()), size) } {
        Ok(_) => {
            residency::evict_on_heap_drop(ctx, &domain);
            Ok(p)
        }
        Err(e) => {
            let _ = ctx.heap().free(HostAddr::of(p.as_ptr()));
            cl_err!(OutOfResources, "making the {size}-byte device allocation resident for {:?}: {e}", device.name)
        }
    }
}

/// The bus address at which `device` reaches `ptr` (any interior pointer of
/// a resident range): the IOVA of a device allocation of an edu device, or
/// of a host or shared allocation migrated to it or reached by a kernel on
/// it. `None` if `ptr` is not resident for `device` (and always for the CPU
/// device, which uses process addresses). When the DMA mask allows, the
/// IOVA equals the pointer.
///
/// No OpenCL function of its own in seed 000; the bus address that
/// `clEnqueueMakeBuffersResidentAMD` (seed 002) reports.
///
/// ```
/// use dmabridge::ext::usm;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(Platform::get().devices())?;
/// for d in ctx.devices() {
///     let p = usm::device_mem_alloc(&ctx, d, &[], 4096, 0)?.as_ptr();
///     match usm::device_address(d, p) {
///         Some(bus) => println!("{}: {p:?} at bus address {bus}", d.name),
///         None => assert!(d.dma_domain().is_none()),
///     }
///     usm::mem_free(&ctx, p)?;
/// }
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn device_address(device: &Device, ptr: *const u8) -> Option<BusAddr> {
    if let Some(local) = device.local_memory().filter(|m| m.contains(ptr)) {
        // A BAR device's own memory: its bus address when an engine reaches it.
        return local.bus_address(ptr);
    }
    device.dma_domain()?.resident_iova(HostAddr::of(ptr), 1).map(BusAddr::from)
}

/// `clSharedMemAllocINTEL`: a shared allocation, associated with `device`
/// or with none.
///
/// ```
/// use dmabridge::ext::usm::{self, alloc_flags, MEM_ALLOC_FLAGS};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(Platform::get().devices())?;
/// let props = [(MEM_ALLOC_FLAGS, alloc_flags::INITIAL_PLACEMENT_HOST)];
/// let p = usm::shared_mem_alloc(&ctx, None, &props, 256, 0)?;
/// usm::mem_free(&ctx, p.as_ptr())?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn shared_mem_alloc(
    ctx: &Arc<Context>,
    device: Option<&Arc<Device>>,
    properties: &[(u64, u64)],
    size: usize,
    alignment: u32,
) -> ClResult<NonNull<u8>> {
    let shared = |d: &Device| d.usm.single_device_shared != 0 || d.usm.cross_device_shared != 0;
    let supporting: Vec<&Arc<Device>> = match device {
        Some(d) => {
            check_device(ctx, d)?;
            if !shared(d) {
                return cl_err!(InvalidOperation, "device {:?} does not support shared USM allocations", d.name);
            }
            vec![d]
        }
        None => {
            let v: Vec<&Arc<Device>> = ctx.devices().iter().filter(|d| shared(d)).collect();
            if v.is_empty() {
                return cl_err!(InvalidOperation, "no device of the context supports shared USM allocations");
            }
            v
        }
    };
    let flags = parse_properties(properties, AllocKind::Shared)?;
    let align = check_shape("shared", supporting.into_iter(), size, alignment)?;
    allocate(
        ctx,
        size,
        align,
        AllocMeta { kind: AllocKind::Shared, device: device.map(|d| d.index), flags: flags as u8 },
    )
}

/// `clMemFreeINTEL`: frees an allocation without waiting for commands that
/// may use it. A null pointer is accepted and does nothing; any other
/// pointer must be one that `clHostMemAllocINTEL`, `clDeviceMemAllocINTEL`
/// or `clSharedMemAllocINTEL` returned for this context, else
/// `CL_INVALID_VALUE`, changing nothing: an interior pointer, a freed one,
/// another context's allocation, and a `clSVMAlloc` pointer (free that with
/// [`svm_free`](crate::ext::svm::svm_free); it stays intact and usable).
/// Whatever of it is resident in an IOMMU domain is evicted first, and
/// enqueued migrations of it that have not run yet will not touch it.
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::{svm, usm};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(Platform::get().devices())?;
/// let p = usm::host_mem_alloc(&ctx, &[], 64, 0)?;
/// usm::mem_free(&ctx, std::ptr::null_mut())?;
/// usm::mem_free(&ctx, p.as_ptr())?;
/// assert!(usm::mem_free(&ctx, p.as_ptr()).is_err(), "double free");
/// // SVM needs every device of the context to support it: the CPU does.
/// let cpu_ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let s = svm::svm_alloc(&cpu_ctx, svm::flags::READ_WRITE, 64, 0)?.as_ptr();
/// assert_eq!(usm::mem_free(&cpu_ctx, s).unwrap_err().kind, ClErrorKind::InvalidValue, "not a USM allocation");
/// assert!(svm::svm_free(&cpu_ctx, s), "still there");
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn mem_free(ctx: &Arc<Context>, ptr: *mut u8) -> ClResult<()> {
    if ptr.is_null() {
        return Ok(());
    }
    let p = ptr as usize;
    let freed = ctx.free_usm_with(HostAddr(p), || {
        let info = ctx.heap().lookup(HostAddr(p)).filter(|i| i.base == HostAddr(p));
        if info.is_some_and(|i| i.meta.kind == AllocKind::Svm) {
            return Err(None);
        }
        if let Some(info) = info {
            evict(&info);
        }
        ctx.heap().free(HostAddr(p)).map_err(Some)
    });
    let err = match freed {
        // In a device's local memory (a BAR device's device allocation).
        Freed::Local(r) => return r.map(drop),
        Freed::Heap(Ok(_)) => return Ok(()),
        Freed::Heap(Err(e)) => e,
    };
    match err {
        None => cl_err!(
            InvalidValue,
            "{p:#x} is an SVM allocation (clSVMAlloc), not a value returned by clHostMemAllocINTEL, clDeviceMemAllocINTEL or clSharedMemAllocINTEL: free it with clSVMFree"
        ),
        Some(FreeError::Unknown(p)) => {
            cl_err!(
                InvalidValue,
                "{p:#x} is not a USM allocation of this context (never allocated here, or already freed)"
            )
        }
        Some(FreeError::Interior { ptr, base }) => {
            cl_err!(InvalidValue, "{ptr:#x} points inside the allocation at {base:#x}; free takes the pointer the allocation function returned")
        }
    }
}

/// Unpins the allocation `info` from the platform's DMA
/// domain if any part of it is resident (device allocations of an edu
/// device; host and shared ones migrated to it or reached by its kernels),
/// before its pages are freed.
fn evict(info: &AllocInfo) {
    if let Some(domain) = Platform::get().dma_domain() {
        domain.evict_within(info.base, info.size);
    }
}

/// What [`get_mem_alloc_info`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemAllocInfo {
    /// `CL_MEM_ALLOC_TYPE_INTEL`: one of [`mem_type`].
    Type(u32),
    /// `CL_MEM_ALLOC_BASE_PTR_INTEL` (0 for unknown pointers).
    BasePtr(usize),
    /// `CL_MEM_ALLOC_SIZE_INTEL` (0 for unknown pointers).
    Size(usize),
    /// `CL_MEM_ALLOC_DEVICE_INTEL` (`None`: host, device-less shared, unknown).
    Device(Option<Arc<Device>>),
    /// `CL_MEM_ALLOC_FLAGS_INTEL`.
    Flags(u64),
}

impl MemAllocInfo {
    /// Size of the C return type (what `param_value_size_ret` reports).
    ///
    /// Serves `clGetMemAllocInfoINTEL`: the size of the answer it writes.
    ///
    /// ```
    /// use dmabridge::ext::usm::{mem_type, MemAllocInfo};
    /// assert_eq!(MemAllocInfo::Type(mem_type::HOST).size(), 4, "cl_unified_shared_memory_type_intel");
    /// assert_eq!(MemAllocInfo::BasePtr(0).size(), std::mem::size_of::<*const u8>());
    /// assert_eq!(MemAllocInfo::Device(None).size(), std::mem::size_of::<usize>(), "cl_device_id");
    /// assert_eq!(MemAllocInfo::Flags(0).size(), 8, "cl_mem_alloc_flags_intel");
    /// ```
    pub fn size(&self) -> usize {
        match self {
            MemAllocInfo::Type(_) => 4,
            MemAllocInfo::BasePtr(_) | MemAllocInfo::Size(_) | MemAllocInfo::Device(_) => std::mem::size_of::<usize>(),
            MemAllocInfo::Flags(_) => 8,
        }
    }
}

/// The answer in the shape of every `clGet*Info` answer (`cl_device_id`
/// as the device object, which the C face writes as its handle).
///
/// ```
/// use dmabridge::ext::usm::{mem_type, MemAllocInfo};
/// use dmabridge::runtime::info::InfoValue;
/// assert_eq!(InfoValue::from(MemAllocInfo::Type(mem_type::HOST)).size(), MemAllocInfo::Type(0).size());
/// assert_eq!(InfoValue::from(MemAllocInfo::Flags(3)), InfoValue::Bits(3));
/// ```
impl From<MemAllocInfo> for InfoValue {
    fn from(info: MemAllocInfo) -> InfoValue {
        match info {
            MemAllocInfo::Type(t) => InfoValue::U32(t),
            MemAllocInfo::BasePtr(n) | MemAllocInfo::Size(n) => InfoValue::Usize(n),
            MemAllocInfo::Device(d) => InfoValue::Device(d),
            MemAllocInfo::Flags(f) => InfoValue::Bits(f),
        }
    }
}

/// `clGetMemAllocInfoINTEL`: what the allocation that `ptr` points into
/// (any interior pointer) is. Pointers outside every allocation of the
/// context answer UNKNOWN / NULL / 0 as the extension says.
///
/// ```
/// use dmabridge::ext::usm::{self, mem_info, mem_type, MemAllocInfo};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(Platform::get().devices())?;
/// let p = usm::host_mem_alloc(&ctx, &[], 1000, 0)?.as_ptr();
/// let inside = p.wrapping_add(999);
/// assert_eq!(usm::get_mem_alloc_info(&ctx, inside, mem_info::ALLOC_TYPE)?, MemAllocInfo::Type(mem_type::HOST));
/// assert_eq!(usm::get_mem_alloc_info(&ctx, inside, mem_info::ALLOC_BASE_PTR)?, MemAllocInfo::BasePtr(p as usize));
/// assert_eq!(usm::get_mem_alloc_info(&ctx, inside, mem_info::ALLOC_SIZE)?, MemAllocInfo::Size(1000));
/// # usm::mem_free(&ctx, p)?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn get_mem_alloc_info(ctx: &Arc<Context>, ptr: *const u8, param: u32) -> ClResult<MemAllocInfo> {
    let info = ctx.lookup(HostAddr::of(ptr));
    let device = |i: u16| Platform::get().devices().get(i as usize).cloned();
    Ok(match param {
        mem_info::ALLOC_TYPE => MemAllocInfo::Type(match info.map(|i| i.meta.kind) {
            None => mem_type::UNKNOWN,
            Some(AllocKind::Host) => mem_type::HOST,
            Some(AllocKind::Device) => mem_type::DEVICE,
            // SVM allocations are shared allocations of the same heap.
            Some(AllocKind::Shared | AllocKind::Svm) => mem_type::SHARED,
        }),
        mem_info::ALLOC_BASE_PTR => MemAllocInfo::BasePtr(info.map_or(0, |i| i.base.0)),
        mem_info::ALLOC_SIZE => MemAllocInfo::Size(info.map_or(0, |i| i.size)),
        mem_info::ALLOC_DEVICE => MemAllocInfo::Device(info.and_then(|i| i.meta.device).and_then(device)),
        mem_info::ALLOC_FLAGS => {
            MemAllocInfo::Flags(info.filter(|i| i.meta.kind != AllocKind::Svm).map_or(0, |i| i.meta.flags as u64))
        }
        _ => {
            return cl_err!(
                InvalidValue,
                "{param:#x} is not a USM allocation query (CL_MEM_ALLOC_TYPE/BASE_PTR/SIZE/DEVICE/FLAGS_INTEL)"
            )
        }
    })
}
