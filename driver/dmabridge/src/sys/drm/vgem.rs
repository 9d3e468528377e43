//! vgem's fences (`DRM_IOCTL_VGEM_FENCE_ATTACH` / `_SIGNAL`): a fence
//! attached to a vgem buffer's reservation, signalled when userspace says so
//! (or by vgem itself after about 10 s). The one fence source a stock kernel
//! offers userspace without a GPU: it shows that a dma-buf's users wait for
//! another driver (tests, benchmarks).

use std::os::fd::AsFd;

use super::{DrmDevice, DrmError, DumbBuffer, GemHandle, VGEM_DRIVER};
use crate::sys::ioctl::{ioctl_ptr_again, opcode, Opcode};
use crate::sys::OsError;

// uapi/drm/vgem_drm.h.
#[repr(C)]
struct VgemFenceAttach {
    handle: u32,
    flags: u32,
    out_fence: u32,
    pad: u32,
}

#[repr(C)]
struct VgemFenceSignal {
    fence: u32,
    flags: u32,
}

/// `VGEM_FENCE_WRITE`: an exclusive (write) fence.
const VGEM_FENCE_WRITE: u32 = 0x1;
/// `DRM_COMMAND_BASE` + 1 and + 2.
const DRM_IOCTL_VGEM_FENCE_ATTACH: Opcode = opcode::read_write::<VgemFenceAttach>(b'd', 0x41);
const DRM_IOCTL_VGEM_FENCE_SIGNAL: Opcode = opcode::write::<VgemFenceSignal>(b'd', 0x42);

/// A vgem fence not yet signalled by this process: signal it with
/// [`DrmDevice::vgem_signal`] (dropping it leaves it to vgem's timeout).
#[derive(Debug, PartialEq, Eq)]
pub struct VgemFence(u32);

impl DrmDevice {
    /// Attaches a new unsignalled fence to `buf`
    /// (`DRM_IOCTL_VGEM_FENCE_ATTACH`): a write fence (`write`) makes every
    /// later user of the buffer wait, a read fence only its writers. vgem
    /// signals it itself after about 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::drm::PrimeFlags;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// let buf = dev.create_dumb(64, 48, 32)?;
    /// let dma_buf = dev.export(&buf, PrimeFlags::CLOEXEC | PrimeFlags::RDWR)?;
    /// let fence = dev.vgem_attach_fence(&buf, true)?;
    /// let pending = dma_buf.export_sync_file(Access::Read)?;
    /// assert!(!pending.is_signaled()?);
    /// dev.vgem_signal(fence)?;
    /// assert!(pending.is_signaled()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn vgem_attach_fence(&self, buf: &DumbBuffer<'_>, write: bool) -> Result<VgemFence, DrmError> {
        if !std::ptr::eq(buf.device(), self) {
            return Err(DrmError::ForeignBuffer);
        }
        self.attach_fence(buf.handle(), write)
    }

    /// [`vgem_attach_fence`](Self::vgem_attach_fence) on a dma-buf vgem
    /// imported ([`import`](Self::import)): the fence lands on the
    /// exporter's reservation object, as a GPU's would on a buffer it
    /// imported — another driver's work on, for example, a dma-buf that
    /// dmabridge exported.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::drm::PrimeFlags;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// let buf = dev.create_dumb(64, 48, 32)?;
    /// let dma_buf = dev.export(&buf, PrimeFlags::CLOEXEC | PrimeFlags::RDWR)?;
    /// let gem = dev.import(&dma_buf)?;
    /// let fence = dev.vgem_attach_fence_to_import(&gem, false)?;
    /// assert!(!dma_buf.export_sync_file(Access::Write)?.is_signaled()?);
    /// dev.vgem_signal(fence)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn vgem_attach_fence_to_import(&self, gem: &GemHandle<'_>, write: bool) -> Result<VgemFence, DrmError> {
        if !std::ptr::eq(gem.device(), self) {
            return Err(DrmError::ForeignBuffer);
        }
        self.attach_fence(gem.handle(), write)
    }

    fn attach_fence(&self, handle: u32, write: bool) -> Result<VgemFence, DrmError> {
        if self.driver() != VGEM_DRIVER {
            return Err(DrmError::NoVgem);
        }
        let flags = if write { VGEM_FENCE_WRITE } else { 0 };
        let mut arg = VgemFenceAttach { handle, flags, out_fence: 0, pad: 0 };
        // The device is vgem (checked above) and the handle alive (held by
        // the caller's buffer or import, of this device).
        // SAFETY: the ioctl reads `handle` and `flags` and writes `out_fence`
        // of one `struct drm_vgem_fence_attach`, which the struct mirrors.
        unsafe { ioctl_ptr_again(self.as_fd(), DRM_IOCTL_VGEM_FENCE_ATTACH, &mut arg) }
            .map_err(OsError::tag("DRM_IOCTL_VGEM_FENCE_ATTACH"))?;
        Ok(VgemFence(arg.out_fence))
    }

    /// Signals `fence` (`DRM_IOCTL_VGEM_FENCE_SIGNAL`); `ETIMEDOUT` if vgem
    /// had already signalled it on its own timeout.
    ///
    /// # Examples
    ///
    /// See [`vgem_attach_fence`](Self::vgem_attach_fence).
    pub fn vgem_signal(&self, fence: VgemFence) -> Result<(), DrmError> {
        let mut arg = VgemFenceSignal { fence: fence.0, flags: 0 };
        // SAFETY: the ioctl reads one `struct drm_vgem_fence_signal`, which
        // the struct mirrors; an unknown fence id answers ENOENT.
        unsafe { ioctl_ptr_again(self.as_fd(), DRM_IOCTL_VGEM_FENCE_SIGNAL, &mut arg) }
            .map_err(OsError::tag("DRM_IOCTL_VGEM_FENCE_SIGNAL"))?;
        Ok(())
    }
}
