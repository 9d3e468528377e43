//! Foreign dma-bufs: input memory that is a dma-buf of another allocator
//! (`v4l2src io-mode=dmabuf` gives the driver's own buffers, exported).
//! The issue asks that the conversion reach them where they are, through
//! dmabridge's dma-buf import (`cl_arm_import_memory`,
//! `CL_IMPORT_TYPE_DMA_BUF_ARM`) into the element's context, so that the
//! device's kernel reads them without a copy; where the device cannot
//! reach one, the frame fails with an error naming the device and why,
//! never a silent copy.
//!
//! Imports are kept per dma-buf (by inode: the buffer holds its own fd, so
//! the inode cannot be reused while it is kept): a source recycles a few
//! buffers, and each is imported once.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use dmabridge::ext::arm_import::{import_dma_buf, IMPORT_MEMORY_WHOLE_ALLOCATION_ARM};
use dmabridge::runtime::buffer::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
use dmabridge::runtime::context::Context;
use dmabridge::sys::dma_buf::DmaBuf;
use gst::prelude::*;

use crate::allocator::DmabridgeAllocator;

/// Imports kept at most: more than any source's buffer count.
const KEPT: usize = 32;

/// The fd and byte offset of `buf`'s only memory if it is a dma-buf of
/// another allocator than dmabridge's (`None`: the element maps it).
pub fn foreign_dma_buf(buf: &gst::BufferRef) -> Option<(BorrowedFd<'_>, usize)> {
    if buf.n_memory() != 1 {
        return None;
    }
    let mem = buf.peek_memory(0);
    if mem.allocator().is_some_and(|a| a.is::<DmabridgeAllocator>()) {
        return None;
    }
    let dmabuf = mem.downcast_memory_ref::<gst_allocators::DmaBufMemory>()?;
    // SAFETY: the memory owns its fd and lives as long as `buf`, which the
    // returned borrow is tied to.
    let fd = unsafe { BorrowedFd::borrow_raw(dmabuf.fd()) };
    Some((fd, mem.offset()))
}

/// The element's imports of foreign dma-bufs into its context.
pub struct Imports {
    ctx: Arc<Context>,
    kept: Vec<(u64, Arc<Buffer>)>,
    made: u64,
}

impl Imports {
    pub fn new(ctx: Arc<Context>) -> Imports {
        Imports { ctx, kept: Vec::new(), made: 0 }
    }

    /// Dma-bufs imported so far (each once).
    pub fn made(&self) -> u64 {
        self.made
    }

    /// A buffer of the context over the bytes of the dma-buf `fd` from
    /// `offset` on (read only), or why the device cannot reach them.
    pub fn import(&mut self, fd: BorrowedFd<'_>, offset: usize, device: &str) -> Result<Arc<Buffer>, String> {
        let dmabuf = fd.try_clone_to_owned().map_err(|e| format!("duplicating the input's fd: {e}"))?;
        let dmabuf = DmaBuf::from_fd(dmabuf).map_err(|e| {
            format!(
                "device {device:?} cannot import the input: its memory claims to be a dma-buf but its fd is not one \
                 ({e}), and dmabridgeconvert does not copy it"
            )
        })?;
        let exporter = dmabuf.exporter().unwrap_or_else(|| "unknown".into());
        let inode = dmabuf.inode().map_err(|e| format!("fstat of the input's dma-buf: {e}"))?;
        let whole = match self.kept.iter().find(|(i, _)| *i == inode) {
            Some((_, b)) => b.clone(),
            None => {
                let b = import_dma_buf(&self.ctx, mem_flags::READ_ONLY, fd, IMPORT_MEMORY_WHOLE_ALLOCATION_ARM)
                    .map_err(|e| {
                        format!(
                            "device {device:?} cannot reach the input's dma-buf (exporter {exporter}) without a copy: \
                             {e}; dmabridgeconvert never copies it: use a device that can reach it (device=cpu), or \
                             let the source write into dmabridge's pool (v4l2src io-mode=dmabuf-import)"
                        )
                    })?;
                if self.kept.len() == KEPT {
                    self.kept.remove(0);
                }
                self.kept.push((inode, b.clone()));
                self.made += 1;
                b
            }
        };
        if offset == 0 {
            return Ok(whole);
        }
        let len = whole.size().checked_sub(offset).filter(|&n| n > 0).ok_or_else(|| {
            format!("the input starts at byte {offset} of a {}-byte dma-buf (exporter {exporter})", whole.size())
        })?;
        Buffer::create_sub_buffer(&whole, mem_flags::READ_ONLY, BUFFER_CREATE_TYPE_REGION, offset, len).map_err(|e| {
            format!("the input at byte {offset} of its dma-buf (exporter {exporter}) on device {device:?}: {e}")
        })
    }
}
