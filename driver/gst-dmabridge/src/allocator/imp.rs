//! The allocator's GObject implementation: allocate (heap, export, wrap
//! the fd), free (unwrap, give the heap allocation back).

use std::collections::HashMap;
use std::os::fd::{BorrowedFd, IntoRawFd};
use std::sync::{Arc, Mutex};

use dmabridge::ext::{dma_buf_export, usm};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::platform::Platform;
use dmabridge::sync;
use gst::glib;
use gst::subclass::prelude::*;
use gst_allocators::prelude::*;
use gst_allocators::subclass::prelude::*;

/// What the allocator holds: its context and, per live export, the heap
/// address of its pages, keyed by the dma-buf's inode (what an fd of it,
/// whoever duplicated it, answers to `fstat`).
#[derive(Default)]
struct State {
    ctx: Option<Arc<Context>>,
    heap: HashMap<u64, usize>,
    allocated: u64,
}

#[derive(Default)]
pub struct DmabridgeAllocator {
    state: Mutex<State>,
}

#[glib::object_subclass]
impl ObjectSubclass for DmabridgeAllocator {
    const NAME: &'static str = "GstDmabridgeAllocator";
    type Type = super::DmabridgeAllocator;
    type ParentType = gst_allocators::DmaBufAllocator;
}

impl ObjectImpl for DmabridgeAllocator {}
impl GstObjectImpl for DmabridgeAllocator {}
impl FdAllocatorImpl for DmabridgeAllocator {}
impl DmaBufAllocatorImpl for DmabridgeAllocator {}

impl DmabridgeAllocator {
    pub(super) fn heap_base(&self, inode: u64) -> Option<*const u8> {
        sync::lock(&self.state).heap.get(&inode).map(|&p| p as *const u8)
    }

    pub(super) fn live(&self) -> usize {
        sync::lock(&self.state).heap.len()
    }

    pub(super) fn allocated(&self) -> u64 {
        sync::lock(&self.state).allocated
    }

    fn context(&self) -> Result<Arc<Context>, String> {
        let mut st = sync::lock(&self.state);
        if let Some(ctx) = &st.ctx {
            return Ok(ctx.clone());
        }
        let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))
            .map_err(|e| format!("making dmabridge's CPU context: {e}"))?;
        st.ctx = Some(ctx.clone());
        Ok(ctx)
    }

    /// `len` bytes (whole pages) of the heap, exported: the memory, and the
    /// dma-buf's inode and heap address to record.
    fn export(&self, len: usize) -> Result<gst::Memory, String> {
        super::exports_available()?;
        let ctx = self.context()?;
        // `len` is whole pages: the heap serves it from a size class of at
        // least a page, whose slots are aligned to the class, or from whole
        // granules, so it starts a page (checked below): the dma-buf is
        // exactly it, sharing no page with another allocation.
        let ptr = usm::host_mem_alloc(&ctx, &[], len, 0).map_err(|e| format!("allocating {len} bytes: {e}"))?;
        let free = |why: String| {
            if let Err(e) = usm::mem_free(&ctx, ptr.as_ptr()) {
                log::warn!("freeing an allocation whose export failed: {e}");
            }
            why
        };
        let export = dma_buf_export::export_mem_alloc(&ctx, ptr.as_ptr(), &[])
            .map_err(|e| free(format!("exporting {len} bytes as a dma-buf: {e}")))?;
        if export.offset != 0 {
            return Err(free(format!(
                "the heap gave {len} bytes not starting a page (at {:#x})",
                ptr.as_ptr() as usize
            )));
        }
        let inode = export.dmabuf.inode().map_err(|e| free(format!("fstat of the exported dma-buf: {e}")))?;
        // Kept mapped: GStreamer's fd memory otherwise mmaps the dma-buf at
        // every map and munmaps it at every unmap, so each frame an element
        // maps (dmabridgeconvert's input and output, every frame) faulted
        // in all its pages again through udmabuf's fault handler: in the
        // guest pipeline bench (benches/guest_pipeline.rs) that was about
        // half of dmabridgeconvert's CPU time. Mapped once read-write here,
        // so a first read-only map does not fix the mapping's protection.
        let fd = export.dmabuf.into_fd().into_raw_fd();
        // SAFETY: the fd is the export's own, handed over to the memory,
        // which closes it when freed; `len` is the dma-buf's size.
        let mem = unsafe { self.obj().alloc_dmabuf_with_flags(fd, len, gst_allocators::FdMemoryFlags::KEEP_MAPPED) }
            .map_err(|e| free(format!("wrapping the dma-buf: {e}")))?;
        if !map_read_write(&mem) {
            return Err(free(format!("mapping the {len}-byte dma-buf read-write failed")));
        }
        let mut st = sync::lock(&self.state);
        st.heap.insert(inode, ptr.as_ptr() as usize);
        st.allocated += 1;
        Ok(mem)
    }
}

/// Maps `mem` for reading and writing once, and unmaps it: a memory kept
/// mapped keeps that first mapping's protection (gst-rs maps read or
/// write only, never both).
fn map_read_write(mem: &gst::Memory) -> bool {
    let mut info = std::mem::MaybeUninit::<gst::ffi::GstMapInfo>::uninit();
    let flags = gst::ffi::GST_MAP_READ | gst::ffi::GST_MAP_WRITE;
    // SAFETY: `mem` is a live memory of this allocator, not yet shared (so
    // writable); `info` is filled by a successful map and handed back to
    // unmap as it is.
    unsafe {
        if gst::ffi::gst_memory_map(mem.as_mut_ptr(), info.as_mut_ptr(), flags) == glib::ffi::GFALSE {
            return false;
        }
        gst::ffi::gst_memory_unmap(mem.as_mut_ptr(), info.as_mut_ptr());
    }
    true
}

unsafe impl AllocatorImpl for DmabridgeAllocator {
    unsafe fn alloc(&self, size: usize, params: &gst::AllocationParams) -> *mut gst::ffi::GstMemory {
        let page = dmabridge::sys::page_size();
        let (prefix, padding) = (params.prefix(), params.padding());
        let Some(len) =
            prefix.checked_add(size).and_then(|n| n.checked_add(padding)).map(|n| n.max(1).next_multiple_of(page))
        else {
            gst::error!(super::CAT, imp = self, "{size} bytes with prefix {prefix} and padding {padding} overflow");
            return std::ptr::null_mut();
        };
        // Whole pages, page-aligned: every alignment a pool asks for holds.
        match self.export(len) {
            Ok(mut mem) => {
                if let Some(m) = mem.get_mut() {
                    m.resize(prefix..prefix + size);
                }
                glib::translate::IntoGlibPtr::into_glib_ptr(mem)
            }
            Err(why) => {
                log::error!("dmabridge allocator: {why}");
                gst::error!(super::CAT, imp = self, "{why}");
                std::ptr::null_mut()
            }
        }
    }

    unsafe fn free(&self, memory: *mut gst::ffi::GstMemory) {
        // SAFETY: GStreamer hands back a memory of this allocator, alive
        // until parent_free; its fd stays open until then.
        let fd = unsafe { gst_allocators::ffi::gst_dmabuf_memory_get_fd(memory) };
        let freed = (fd >= 0)
            .then(|| {
                // SAFETY: as above, the fd is open for this call.
                super::dmabuf_inode(unsafe { BorrowedFd::borrow_raw(fd) })
            })
            .flatten()
            .and_then(|ino| {
                let mut st = sync::lock(&self.state);
                Some((st.heap.remove(&ino)?, st.ctx.clone()?))
            });
        if let Some((ptr, ctx)) = freed {
            // The dma-buf may outlive this (another process, a driver): its
            // pages stay with it and are never handed to a later allocation.
            if let Err(e) = usm::mem_free(&ctx, ptr as *mut u8) {
                log::warn!("dmabridge allocator: freeing {ptr:#x}: {e}");
            }
        }
        // SAFETY: the memory is this allocator's; the parent closes its fd.
        unsafe { self.parent_free(memory) }
    }
}
