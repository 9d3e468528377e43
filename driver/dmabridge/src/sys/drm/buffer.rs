//! Dumb buffers, their PRIME export, dma-bufs imported as GEM handles.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use rustix::io::Errno;

use super::raw::*;
use super::{DrmDevice, DrmError, PrimeFlags};
use crate::sys::dma_buf::DmaBuf;
use crate::sys::ioctl::ioctl_ptr_again;
use crate::sys::{page_size, OsError};

impl DrmDevice {
    /// Creates a dumb buffer of `width` × `height` pixels of `bpp` bits
    /// (`DRM_IOCTL_MODE_CREATE_DUMB`), after checking the kernel's geometry
    /// rules. It is closed when dropped (and no import shares its handle).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmError;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// // Geometry the kernel would refuse is refused up front.
    /// let err = dev.create_dumb(0, 48, 32).unwrap_err();
    /// assert_eq!(err, DrmError::BadDumbGeometry { width: 0, height: 48, bpp: 32 });
    /// match dev.create_dumb(64, 48, 32) {
    ///     Ok(buf) => assert!(buf.size() >= 64 * 48 * 4),
    ///     Err(e) => println!("{e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_dumb(&self, width: u32, height: u32, bpp: u32) -> Result<DumbBuffer<'_>, DrmError> {
        if !dumb_geometry_ok(width, height, bpp) {
            return Err(DrmError::BadDumbGeometry { width, height, bpp });
        }
        self.create_dumb_unchecked(width, height, bpp)
    }

    /// `DRM_IOCTL_MODE_CREATE_DUMB` without the up-front checks: the kernel's
    /// own answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::DrmError;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// // The kernel's own answers: render nodes refuse dumb buffers, primary nodes
    /// // refuse a zero width.
    /// let err = dev.create_dumb_unchecked(0, 48, 32).unwrap_err();
    /// if dev.is_render_node() {
    ///     assert_eq!(err, DrmError::RenderNode(dev.path().to_owned()));
    /// } else {
    ///     assert_eq!(err, DrmError::BadDumbGeometry { width: 0, height: 48, bpp: 32 });
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_dumb_unchecked(&self, width: u32, height: u32, bpp: u32) -> Result<DumbBuffer<'_>, DrmError> {
        let mut arg = DrmModeCreateDumb { height, width, bpp, flags: 0, handle: 0, pitch: 0, size: 0 };
        // SAFETY: DRM_IOCTL_MODE_CREATE_DUMB reads and writes one
        // `struct drm_mode_create_dumb`, which `DrmModeCreateDumb` mirrors
        // (size checked at compile time); `self.fd` is a DRM node.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DRM_IOCTL_MODE_CREATE_DUMB, &mut arg) }.map_err(|e| match e {
            Errno::NOSYS => DrmError::NoDumbBuffers(self.version.name.clone()),
            Errno::ACCESS if self.render => DrmError::RenderNode(self.path.clone()),
            Errno::INVAL => DrmError::BadDumbGeometry { width, height, bpp },
            Errno::NOMEM => DrmError::OutOfMemory { width, height, bpp },
            e => OsError::new("DRM_IOCTL_MODE_CREATE_DUMB", e).into(),
        })?;
        self.hold(arg.handle);
        Ok(DumbBuffer { dev: self, handle: arg.handle, width, height, bpp, pitch: arg.pitch, size: arg.size })
    }

    /// Exports a dumb buffer as a dma-buf (`DRM_IOCTL_PRIME_HANDLE_TO_FD`).
    /// Use `PrimeFlags::CLOEXEC | PrimeFlags::RDWR` for a buffer the CPU will
    /// write through a mapping. Exporting the same buffer again gives another
    /// fd for the same dma-buf.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::access::Access;
    /// use dmabridge::sys::drm::PrimeFlags;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// let dma_buf = dev.export(&buf, PrimeFlags::CLOEXEC | PrimeFlags::RDWR)?;
    /// assert_eq!(dma_buf.size()?, buf.size());
    /// let map = dma_buf.map(Access::ReadWrite)?;
    /// let access = dma_buf.cpu_access(Access::Write)?;
    /// map.write_u32(0, 0xff00_00ff);
    /// access.end()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export(&self, buf: &DumbBuffer<'_>, flags: PrimeFlags) -> Result<DmaBuf, DrmError> {
        if !std::ptr::eq(buf.dev, self) {
            return Err(DrmError::ForeignBuffer);
        }
        let mut arg = DrmPrimeHandle { handle: buf.handle, flags: flags.bits(), fd: -1 };
        // SAFETY: DRM_IOCTL_PRIME_HANDLE_TO_FD reads `handle` and `flags` and
        // writes `fd` of one `struct drm_prime_handle`, which `DrmPrimeHandle`
        // mirrors; the handle is alive (held by `buf`) on this very file.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut arg) }
            .map_err(OsError::tag("DRM_IOCTL_PRIME_HANDLE_TO_FD"))?;
        // SAFETY: on success the kernel installed a new dma-buf fd in `arg.fd`
        // that nobody else owns; we take ownership exactly once.
        Ok(DmaBuf::from_kernel(unsafe { OwnedFd::from_raw_fd(arg.fd) }))
    }

    /// Imports a dma-buf (`DRM_IOCTL_PRIME_FD_TO_HANDLE`). If the buffer
    /// already has a handle on this device (it was exported from here, or
    /// imported before), that same handle is returned and shared: it is
    /// closed only when every [`DumbBuffer`] and [`GemHandle`] holding it is
    /// gone.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::PrimeFlags;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// let dma_buf = dev.export(&buf, PrimeFlags::CLOEXEC)?;
    /// // The buffer already has a handle on this device: the import shares it.
    /// let gem = dev.import(&dma_buf)?;
    /// assert_eq!(gem.handle(), buf.handle());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn import(&self, buf: &DmaBuf) -> Result<GemHandle<'_>, DrmError> {
        let mut arg = DrmPrimeHandle { handle: 0, flags: 0, fd: buf.as_fd().as_raw_fd() };
        // SAFETY: DRM_IOCTL_PRIME_FD_TO_HANDLE reads `fd` and writes `handle`
        // of one `struct drm_prime_handle`; the fd is borrowed from `buf`,
        // which outlives the call, and the kernel takes its own reference.
        unsafe { ioctl_ptr_again(self.fd.as_fd(), DRM_IOCTL_PRIME_FD_TO_HANDLE, &mut arg) }.map_err(|e| match e {
            Errno::BADF | Errno::FAULT => DrmError::Os(OsError::new("DRM_IOCTL_PRIME_FD_TO_HANDLE", e)),
            e => DrmError::ImportRefused { driver: self.version.name.clone(), errno: e },
        })?;
        self.hold(arg.handle);
        Ok(GemHandle { dev: self, handle: arg.handle })
    }
}

/// The kernel's dumb-buffer geometry rules (drm_mode_create_dumb in
/// drivers/gpu/drm/drm_dumb_buffers.c): non-zero sizes, and the 32-bit size
/// computation must neither overflow nor wrap when page-aligned.
pub(super) fn dumb_geometry_ok(width: u32, height: u32, bpp: u32) -> bool {
    if width == 0 || height == 0 || bpp == 0 || bpp > u32::MAX - 8 {
        return false;
    }
    let cpp = bpp.div_ceil(8);
    let Some(size) = cpp.checked_mul(width).and_then(|stride| stride.checked_mul(height)) else { return false };
    (size as u64).next_multiple_of(page_size() as u64) <= u32::MAX as u64
}

/// A dumb buffer: a GEM object on a [`DrmDevice`], closed on drop.
#[derive(Debug)]
pub struct DumbBuffer<'dev> {
    dev: &'dev DrmDevice,
    handle: u32,
    width: u32,
    height: u32,
    bpp: u32,
    pitch: u32,
    size: u64,
}

impl DumbBuffer<'_> {
    /// The GEM handle (valid on its device's open file only).
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// // GEM handles start at 1.
    /// assert_ne!(buf.handle(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// Width in pixels.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// assert_eq!(buf.width(), 64);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// assert_eq!(buf.height(), 48);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Bits per pixel.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// assert_eq!(buf.bpp(), 32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bpp(&self) -> u32 {
        self.bpp
    }

    /// Bytes per row, as the driver chose it.
    ///
    /// No system call: the pitch `DRM_IOCTL_MODE_CREATE_DUMB` returned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// assert!(buf.pitch() >= buf.width() * 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pitch(&self) -> u32 {
        self.pitch
    }

    /// Size in bytes, as the driver allocated it (at least `pitch × height`,
    /// rounded up to a page).
    ///
    /// No system call: the size `DRM_IOCTL_MODE_CREATE_DUMB` returned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// assert!(buf.size() >= u64::from(buf.pitch()) * u64::from(buf.height()));
    /// assert_eq!(buf.size() % dmabridge::sys::page_size() as u64, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The device it lives on.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::drm::DrmDevice;
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// assert!(std::ptr::eq(buf.device(), &dev));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(&self) -> &DrmDevice {
        self.dev
    }
}

impl Drop for DumbBuffer<'_> {
    fn drop(&mut self) {
        // Nothing to report to from drop; a failed close leaves the object
        // to be freed when the device's file is closed.
        let _ = self.dev.release(self.handle);
    }
}

/// A GEM handle from an import, closed on drop once no other [`GemHandle`]
/// or [`DumbBuffer`] of the same device shares it.
#[derive(Debug)]
pub struct GemHandle<'dev> {
    dev: &'dev DrmDevice,
    handle: u32,
}

impl GemHandle<'_> {
    /// The handle number (valid on its device's open file only).
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::PrimeFlags;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// let gem = dev.import(&dev.export(&buf, PrimeFlags::CLOEXEC)?)?;
    /// assert_eq!(gem.handle(), buf.handle());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The device it lives on.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::drm::PrimeFlags;
    /// # use dmabridge::sys::drm::DrmDevice;
    ///
    /// # let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };
    /// # let Some(buf) = dmabridge::sys::doc_support::or_skip(dev.create_dumb(64, 48, 32)) else { return Ok(()) };
    /// let gem = dev.import(&dev.export(&buf, PrimeFlags::CLOEXEC)?)?;
    /// assert!(std::ptr::eq(gem.device(), &dev));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(&self) -> &DrmDevice {
        self.dev
    }
}

impl Drop for GemHandle<'_> {
    fn drop(&mut self) {
        // See `DumbBuffer`'s drop.
        let _ = self.dev.release(self.handle);
    }
}
