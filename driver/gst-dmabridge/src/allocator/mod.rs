//! `DmabridgeAllocator`: a `GstDmaBufAllocator` whose memory is dmabridge
//! memory. Each `GstMemory` is a USM host allocation of dmabridge's heap
//! (memfd pages), exported as a dma-buf through udmabuf
//! (`cl_dmabridge_dma_buf_export`); the memory's fd is that dma-buf, so any
//! element downstream maps it (GStreamer's fd memory) or passes the fd on
//! (`v4l2sink io-mode=dmabuf-import`, `kmssink`, encoders), and dmabridge
//! kernels reach the same pages. The heap allocation lives as long as the
//! memory: `free` gives it back.
//!
//! GStreamer 1.22 has no udmabuf allocator of its own (1.28 adds one).

mod imp;

use std::os::fd::{BorrowedFd, OwnedFd};

use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::udmabuf::Udmabuf;
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::ObjectSubclassIsExt;

/// The allocator's debug category (`GST_DEBUG=dmabridgeallocator:5`).
static CAT: std::sync::LazyLock<gst::DebugCategory> = std::sync::LazyLock::new(|| {
    gst::DebugCategory::new("dmabridgeallocator", gst::DebugColorFlags::empty(), Some("dmabridge dma-buf allocator"))
});

glib::wrapper! {
    /// The allocator (GType `GstDmabridgeAllocator`).
    pub struct DmabridgeAllocator(ObjectSubclass<imp::DmabridgeAllocator>)
        @extends gst_allocators::DmaBufAllocator, gst_allocators::FdAllocator, gst::Allocator, gst::Object;
}

impl Default for DmabridgeAllocator {
    fn default() -> Self {
        glib::Object::new()
    }
}

/// Whether dmabridge can export memory as dma-bufs here, and if not why (no
/// `/dev/udmabuf`: the kernel lacks `CONFIG_UDMABUF`, or its permissions).
pub fn exports_available() -> Result<(), String> {
    Udmabuf::shared().map(|_| ()).map_err(|e| {
        format!(
            "dmabridge cannot export dma-bufs here ({e}): load udmabuf (modprobe udmabuf) or give this user access to /dev/udmabuf"
        )
    })
}

/// The inode of the dma-buf behind `fd` (`None` if it is not a dma-buf).
fn dmabuf_inode(fd: BorrowedFd<'_>) -> Option<u64> {
    let owned: OwnedFd = fd.try_clone_to_owned().ok()?;
    DmaBuf::from_fd(owned).ok()?.inode().ok()
}

impl DmabridgeAllocator {
    /// A new allocator; the dmabridge context behind it (the CPU device) is
    /// made at the first allocation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The heap address of the first byte of `memory` (its offset
    /// included), if `memory` is a live export of this allocator: the same
    /// pages as its fd's, through dmabridge's own mapping of its memfd.
    pub fn heap_address(&self, memory: &gst::MemoryRef) -> Option<*const u8> {
        let dmabuf = memory.downcast_memory_ref::<gst_allocators::DmaBufMemory>()?;
        // SAFETY: the memory is alive for this borrow and owns its fd, so the
        // fd stays open while it is borrowed here.
        let fd = unsafe { BorrowedFd::borrow_raw(dmabuf.fd()) };
        self.imp().heap_base(dmabuf_inode(fd)?).map(|base| base.wrapping_add(memory.offset()))
    }

    /// True if `fd` is a dma-buf this allocator exported and has not freed.
    pub fn is_export(&self, fd: BorrowedFd<'_>) -> bool {
        dmabuf_inode(fd).is_some_and(|ino| self.imp().heap_base(ino).is_some())
    }

    /// Memories allocated and not yet freed.
    pub fn live(&self) -> usize {
        self.imp().live()
    }

    /// Memories allocated since the allocator was made (a pool that
    /// recycles its buffers keeps this at its size).
    pub fn allocated(&self) -> u64 {
        self.imp().allocated()
    }
}

/// Registers the allocator's type (and names it for `gst_allocator_find`).
pub fn register() {
    gst::Allocator::register("dmabridge", DmabridgeAllocator::new());
}

/// The allocator as a plain `gst::Allocator`, for queries and pools.
pub fn as_allocator(a: &DmabridgeAllocator) -> &gst::Allocator {
    a.upcast_ref()
}
