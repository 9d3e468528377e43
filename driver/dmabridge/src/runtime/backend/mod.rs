//! Device backends: the engines that execute DMA for a device.
//!
//! A [`Backend`] is what a non-CPU device of the platform runs its commands
//! on. Today that is [`edu_backend::EduBackend`] (QEMU's edu device over
//! VFIO, a DMA engine with a 4 KiB staging buffer); real DMA engines plug in
//! by implementing the same trait and being discovered by the platform.
//! [`bar::BarBackend`] is a device whose local memory is a PCI BAR (the
//! rig's ivshmem), reached peer-to-peer by an edu engine or by the CPU.

pub mod bar;
pub mod domain;
pub mod edu;
pub mod edu_backend;
pub mod lost;
pub mod residency;

use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::ClResult;
use crate::sys::addr::{BusAddr, HostAddr};
use crate::sys::pci::PciAddress;

use super::device::Device;
use super::transfer;

/// A DMA engine behind a device.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// What the device is called (`CL_DEVICE_NAME`), e.g. `edu 0000:00:10.0`.
    fn name(&self) -> &str;

    /// The PCIe function it drives, if any.
    fn pci_address(&self) -> Option<PciAddress>;

    /// The largest single transfer the engine does; larger copies are cut
    /// into chunks of at most this size.
    fn max_transfer(&self) -> usize;

    /// Copies `size` bytes from `src` to `dst` by DMA and returns once they
    /// have arrived. Errors carry the CL code (`CL_INVALID_VALUE` for memory
    /// the device cannot pin, `CL_OUT_OF_RESOURCES` when mapping or the
    /// transfer fails) and the reason. What the copy mapped for itself is
    /// unmapped afterwards, on success or failure; ranges that were resident
    /// before (see [`residency`]) stay resident and are used as they are.
    ///
    /// # Safety
    /// Both ranges must be valid for `size` bytes and must not overlap; they
    /// must be ordinary mapped memory of the process (a PFN mapping such as
    /// a dma-buf's mmap is refused by VFIO, which is an error, not UB). No
    /// Rust reference may point into the pages covering `dst` during the
    /// call: the device writes them.
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, size: usize) -> ClResult<()>;

    /// The device's own memory, if it has any (a PCI BAR); `None` for
    /// engines that work on host memory only (edu).
    fn local_memory(&self) -> Option<Arc<dyn LocalMemory>> {
        None
    }

    /// This backend as a [`bar::BarBackend`], if it is one.
    fn into_bar(self: Arc<Self>) -> Option<Arc<bar::BarBackend>> {
        None
    }

    /// This backend as an [`edu_backend::EduBackend`], if it is one.
    fn into_edu(self: Arc<Self>) -> Option<Arc<edu_backend::EduBackend>> {
        None
    }

    /// Whether its device is still there ([`lost`]); `None` for an engine
    /// that cannot go away.
    fn loss(&self) -> Option<&lost::Loss> {
        None
    }
}

/// Memory that belongs to a device (not host-unified), mapped into the
/// process so that its bytes have CPU addresses, and sub-allocated: USM
/// device allocations of the device live here (seed 000), and so will the
/// device side of unlinked buffer pairs (seed 003).
///
/// Every pointer is a CPU address inside the mapping. Reads and writes
/// through it reach the device memory (uncached MMIO on real hardware), so
/// Rust references into it must not be formed while a device may write it.
pub trait LocalMemory: Send + Sync + std::fmt::Debug {
    /// Its size in bytes (`CL_DEVICE_GLOBAL_MEM_SIZE` of the device).
    fn size(&self) -> usize;

    /// Bytes held by live allocations (each rounded up to the allocation
    /// granule).
    fn allocated(&self) -> usize;

    /// The CPU address of its first byte.
    fn base(&self) -> NonNull<u8>;

    /// Allocates `size` bytes aligned to `align` (0: the granule, 64 bytes;
    /// else a power of two). Errors: `CL_INVALID_BUFFER_SIZE` for 0 bytes or
    /// more than [`LocalMemory::size`]; `CL_INVALID_VALUE` for an alignment
    /// that is not a power of two; `CL_OUT_OF_RESOURCES` when the size would
    /// fit but no free range is large enough now (full or fragmented).
    fn alloc(&self, size: usize, align: usize) -> ClResult<NonNull<u8>>;

    /// Frees the allocation that starts at `ptr`; returns its size.
    /// `CL_INVALID_VALUE`, changing nothing, for an interior pointer, a
    /// pointer outside every live allocation (double free) or outside this
    /// memory.
    fn free(&self, ptr: *const u8) -> ClResult<usize>;

    /// The live allocation `ptr` points into (any byte of it), as
    /// `(base address, size)`.
    fn lookup(&self, ptr: *const u8) -> Option<(usize, usize)>;

    /// True if `ptr` lies in this memory (allocated or not).
    fn contains(&self, ptr: *const u8) -> bool {
        (ptr as usize).wrapping_sub(self.base().as_ptr() as usize) < self.size()
    }

    /// The bus address (IOVA in the platform's DMA domain) of `ptr`, if the
    /// memory is mapped for peer-to-peer DMA and `ptr` lies in it.
    fn bus_address(&self, ptr: *const u8) -> Option<BusAddr>;
}

/// Copies `size` bytes from `src` to `dst` on `device`: by its backend's DMA
/// if it has one, else on the CPU ([`transfer::copy`]). The result is a
/// command's execution status: on failure, the CL error code (the reason is
/// logged as a `log::warn!` record).
///
/// No OpenCL function of its own: the copy behind the copy commands of a
/// device's queue (`clEnqueueMemcpyINTEL`, `clEnqueueSVMMemcpy`,
/// `clEnqueueCopyBuffer`, the `dma_copy` built-in kernel).
///
/// # Safety
/// As [`Backend::copy`].
///
/// ```
/// use dmabridge::runtime::{backend, platform::Platform};
/// let src = vec![5u8; 10_000];
/// let mut dst = vec![0u8; 10_000];
/// for d in Platform::get().devices() {
///     dst.fill(0);
///     // SAFETY: both vectors hold 10 000 bytes, are distinct, and no
///     // reference into `dst` is used during the copy.
///     unsafe { backend::device_copy(d, dst.as_mut_ptr(), src.as_ptr(), dst.len()) }.unwrap();
///     assert_eq!(dst, src, "on {}", d.name);
/// }
///
/// // A device whose engine fails: the command's status is the error's code.
/// # use std::sync::Arc;
/// # use dmabridge::error::{code, ClError, ClErrorKind, ClResult};
/// # use dmabridge::runtime::backend::Backend;
/// # use dmabridge::runtime::device::{Device, DeviceType};
/// # #[derive(Debug)]
/// # struct Broken;
/// # impl Backend for Broken {
/// #     fn name(&self) -> &str { "broken" }
/// #     fn pci_address(&self) -> Option<dmabridge::sys::pci::PciAddress> { None }
/// #     fn max_transfer(&self) -> usize { 4096 }
/// #     unsafe fn copy(&self, _: *mut u8, _: *const u8, _: usize) -> ClResult<()> {
/// #         Err(ClError::new(ClErrorKind::OutOfResources, "the engine is broken"))
/// #     }
/// # }
/// let broken = Arc::new(Device {
///     index: 9, name: "broken".into(), device_type: DeviceType::Accelerator,
///     max_mem_alloc_size: 1 << 20, max_alignment: 128, host_unified_memory: true,
///     usm: Platform::get().cpu().usm, svm: 0, compute_units: 1,
///     backend: Some(Arc::new(Broken)), dma_domain: None,
/// });
/// // SAFETY: as above.
/// let status = unsafe { backend::device_copy(&broken, dst.as_mut_ptr(), src.as_ptr(), dst.len()) };
/// assert_eq!(status, Err(code::OUT_OF_RESOURCES));
/// ```
pub unsafe fn device_copy(device: &Device, dst: *mut u8, src: *const u8, size: usize) -> Result<(), i32> {
    // Whichever device copies: the memory of a lost device is inert.
    for (p, side) in [(dst as *const u8, "destination"), (src, "source")] {
        if let Err(e) = transfer::io::check_reachable(HostAddr::of(p), size) {
            log::warn!("copy of {size} bytes on {:?}: its {side}: {e}", device.name);
            return Err(e.code());
        }
    }
    match device.backend() {
        None => {
            // SAFETY: forwarded to the caller.
            unsafe { transfer::copy(dst, src, size) };
            Ok(())
        }
        // SAFETY: forwarded to the caller.
        Some(b) => unsafe { b.copy(dst, src, size) }.map_err(|e| {
            log::warn!("copy of {size} bytes on {:?}: {e}", device.name);
            e.code()
        }),
    }
}
