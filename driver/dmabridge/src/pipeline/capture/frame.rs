//! A stream's frames: dmabridge memory (USM or a buffer object) and the
//! dma-buf of its pages, and where that memory comes from.

use std::sync::Arc;

use super::PipelineError;
use crate::ext::{dma_buf_export, usm};
use crate::runtime::buffer::{mem_flags, Buffer};
use crate::runtime::context::Context;
use crate::sys::dma_buf::DmaBuf;

/// Where a stream's frames live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameMemory {
    /// USM host allocations (`clHostMemAllocINTEL`), page-aligned.
    UsmHost,
    /// USM shared allocations (`clSharedMemAllocINTEL`), page-aligned.
    UsmShared,
    /// Buffer objects (`CL_MEM_ALLOC_HOST_PTR`): their host pages.
    Buffer,
    /// The driver's own buffers (`V4L2_MEMORY_MMAP`), exported with
    /// `VIDIOC_EXPBUF` and imported as buffer objects with
    /// `clImportMemoryARM(CL_IMPORT_TYPE_DMA_BUF_ARM)`.
    Driver,
    /// The driver's own buffers, imported the Khronos way
    /// (`clCreateBufferWithProperties` with
    /// `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`); each conversion is
    /// bracketed by `clEnqueueAcquireExternalMemObjectsKHR` / `Release`.
    DriverKhr,
}

impl std::str::FromStr for FrameMemory {
    type Err = String;

    fn from_str(s: &str) -> Result<FrameMemory, String> {
        match s {
            "usm-host" => Ok(FrameMemory::UsmHost),
            "usm-shared" => Ok(FrameMemory::UsmShared),
            "buffer" => Ok(FrameMemory::Buffer),
            "driver" => Ok(FrameMemory::Driver),
            "driver-khr" => Ok(FrameMemory::DriverKhr),
            _ => Err(format!("{s:?} is not a frame memory (usm-host, usm-shared, buffer, driver or driver-khr)")),
        }
    }
}

pub(super) enum Storage {
    /// A USM allocation's address.
    Usm(usize),
    Buffer(Arc<Buffer>),
}

/// One buffer of a stream: dmabridge memory and the dma-buf of its pages.
pub struct Frame {
    pub(super) dmabuf: DmaBuf,
    pub(super) storage: Storage,
    pub(super) len: usize,
}

impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frame").field("len", &self.len).finish_non_exhaustive()
    }
}

impl Frame {
    /// The dma-buf the driver reads or writes (its pages are the frame's).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// println!("{} bytes", stream.frames()[0].dmabuf().size().unwrap());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn dmabuf(&self) -> &DmaBuf {
        &self.dmabuf
    }

    /// The USM allocation holding the frame (`None` for a buffer object).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let cfg = StreamConfig { memory: FrameMemory::UsmHost, ..StreamConfig::default() };
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &cfg)?;
    /// assert!(stream.frames()[0].usm_ptr().is_some());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn usm_ptr(&self) -> Option<*mut u8> {
        match self.storage {
            Storage::Usm(p) => Some(p as *mut u8),
            Storage::Buffer(_) => None,
        }
    }

    /// The buffer object holding the frame (`None` for USM).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// assert!(stream.frames()[0].buffer().is_some());
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn buffer(&self) -> Option<&Arc<Buffer>> {
        match &self.storage {
            Storage::Usm(_) => None,
            Storage::Buffer(b) => Some(b),
        }
    }

    /// Bytes of the frame's memory handed to the driver (the format's
    /// image size, in whole pages).
    ///
    /// No system call.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let stream = Stream::capture(&ctx, find_capture_device(None)?, &StreamConfig::default())?;
    /// assert!(stream.frames()[0].len() >= stream.format().size_image as usize);
    /// # Ok::<(), PipelineError>(())
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }
}

/// A frame of `len` bytes (whole pages) in `memory`, exported.
pub(super) fn new_frame(ctx: &Arc<Context>, memory: FrameMemory, len: usize) -> Result<Frame, PipelineError> {
    let ptr = match memory {
        FrameMemory::UsmHost => usm::host_mem_alloc(ctx, &[], len, 0)?,
        FrameMemory::UsmShared => usm::shared_mem_alloc(ctx, None, &[], len, 0)?,
        FrameMemory::Driver | FrameMemory::DriverKhr => {
            return Err(PipelineError::Unsupported("driver buffers are imported, not allocated".into()))
        }
        FrameMemory::Buffer => {
            // SAFETY: no host pointer.
            let b = unsafe { Buffer::create(ctx, mem_flags::ALLOC_HOST_PTR, len, std::ptr::null_mut()) }?;
            let dmabuf = dma_buf_export::export_buffer(&b, &[])?.dmabuf;
            return Ok(Frame { dmabuf, storage: Storage::Buffer(b), len });
        }
    };
    match dma_buf_export::export_mem_alloc(ctx, ptr.as_ptr(), &[]) {
        // Page-aligned and a whole number of pages: the dma-buf is exactly it.
        Ok(e) if e.offset == 0 => Ok(Frame { dmabuf: e.dmabuf, storage: Storage::Usm(ptr.as_ptr() as usize), len }),
        r => {
            if let Err(e) = usm::mem_free(ctx, ptr.as_ptr()) {
                log::warn!("freeing a frame whose export failed: {e}");
            }
            match r {
                Err(e) => Err(e.into()),
                Ok(e) => Err(PipelineError::Unsupported(format!(
                    "the frame's dma-buf starts {} bytes before it (not page-aligned)",
                    e.offset
                ))),
            }
        }
    }
}
