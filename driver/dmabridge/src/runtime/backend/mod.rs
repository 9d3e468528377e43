//! Device backends: the engines that execute DMA for a device.
//!
//! A [`Backend`] is what a non-CPU device of the platform runs its commands
//! on. Today that is [`edu_backend::EduBackend`] (QEMU's edu device over
//! VFIO, a DMA engine with a 4 KiB staging buffer); real DMA engines plug in
//! by implementing the same trait and being discovered by the platform.

pub mod domain;
pub mod edu;
pub mod edu_backend;
pub mod residency;

use crate::error::ClResult;
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
    /// transfer fails) and the reason. Nothing stays mapped afterwards, on
    /// success or failure.
    ///
    /// # Safety
    /// Both ranges must be valid for `size` bytes and must not overlap; they
    /// must be ordinary mapped memory of the process (a PFN mapping such as
    /// a dma-buf's mmap is refused by VFIO, which is an error, not UB). No
    /// Rust reference may point into the pages covering `dst` during the
    /// call: the device writes them.
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, size: usize) -> ClResult<()>;
}

/// Copies `size` bytes from `src` to `dst` on `device`: by its backend's DMA
/// if it has one, else on the CPU ([`transfer::copy`]). The result is a
/// command's execution status: on failure, the CL error code (the reason is
/// written to stderr, prefixed `dmabridge:`).
///
/// # Safety
/// As [`Backend::copy`].
pub unsafe fn device_copy(device: &Device, dst: *mut u8, src: *const u8, size: usize) -> Result<(), i32> {
    match device.backend() {
        None => {
            // SAFETY: forwarded to the caller.
            unsafe { transfer::copy(dst, src, size) };
            Ok(())
        }
        // SAFETY: forwarded to the caller.
        Some(b) => unsafe { b.copy(dst, src, size) }.map_err(|e| {
            eprintln!("dmabridge: copy of {size} bytes on {:?}: {e}", device.name);
            e.code()
        }),
    }
}
