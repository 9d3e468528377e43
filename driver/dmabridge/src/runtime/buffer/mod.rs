//! Buffer objects (`cl_mem` of type `CL_MEM_OBJECT_BUFFER`): the object
//! and its queries; creating buffers and sub-buffers is in `create`. Their
//! allocations follow DPC++'s linked allocation design (seed 003, see
//! [`store`]); their commands are in [`commands`] and [`map`].
//!
//! Creating a buffer allocates nothing (except with `CL_MEM_COPY_HOST_PTR`,
//! whose data must be kept somewhere: its host allocation is made at once).
//! The buffer is held by `Arc`: clone to retain (`clRetainMemObject`), drop
//! to release; a sub-buffer holds its parent.

pub(crate) mod bracket;
mod bus;
pub mod commands;
mod create;
pub mod map;
pub mod rect;
pub(crate) mod restrictions;
pub mod store;

use crate::sys::addr::HostAddr;
use std::any::Any;
use std::sync::{Arc, Mutex};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::sync;
use crate::sys::dma_buf::DmaBuf;
use crate::sys::udmabuf::Udmabuf;

use super::context::Context;
use super::device::Device;
use super::info::InfoValue;
use store::{Location, LocationStats, Store};

pub(crate) use create::{check_exclusive, check_inside_svm};

/// `cl_mem_flags` bits.
pub mod mem_flags {
    /// `CL_MEM_READ_WRITE` (the default): kernels read and write it.
    pub const READ_WRITE: u64 = 1 << 0;
    /// `CL_MEM_WRITE_ONLY`: kernels only write it.
    pub const WRITE_ONLY: u64 = 1 << 1;
    /// `CL_MEM_READ_ONLY`: kernels only read it.
    pub const READ_ONLY: u64 = 1 << 2;
    /// `CL_MEM_USE_HOST_PTR`: the application's memory is the host storage.
    pub const USE_HOST_PTR: u64 = 1 << 3;
    /// `CL_MEM_ALLOC_HOST_PTR`: host-accessible storage (here: memfd pages
    /// that can be exported as a dma-buf).
    pub const ALLOC_HOST_PTR: u64 = 1 << 4;
    /// `CL_MEM_COPY_HOST_PTR`: initialised from the application's memory.
    pub const COPY_HOST_PTR: u64 = 1 << 5;
    /// `CL_MEM_HOST_WRITE_ONLY`: the host only writes it.
    pub const HOST_WRITE_ONLY: u64 = 1 << 7;
    /// `CL_MEM_HOST_READ_ONLY`: the host only reads it.
    pub const HOST_READ_ONLY: u64 = 1 << 8;
    /// `CL_MEM_HOST_NO_ACCESS`: the host neither reads nor writes it.
    pub const HOST_NO_ACCESS: u64 = 1 << 9;

    /// The device access flags (at most one).
    pub const ACCESS: u64 = READ_WRITE | WRITE_ONLY | READ_ONLY;
    /// The host access flags (at most one).
    pub const HOST_ACCESS: u64 = HOST_WRITE_ONLY | HOST_READ_ONLY | HOST_NO_ACCESS;
    /// The host pointer flags.
    pub const HOST_PTR: u64 = USE_HOST_PTR | ALLOC_HOST_PTR | COPY_HOST_PTR;
    /// Every flag a buffer takes.
    pub const ALL: u64 = ACCESS | HOST_ACCESS | HOST_PTR;
}

/// `cl_mem_info` values (`clGetMemObjectInfo`).
pub mod mem_info {
    /// `CL_MEM_TYPE`.
    pub const TYPE: u32 = 0x1100;
    /// `CL_MEM_FLAGS`.
    pub const FLAGS: u32 = 0x1101;
    /// `CL_MEM_SIZE`.
    pub const SIZE: u32 = 0x1102;
    /// `CL_MEM_HOST_PTR`.
    pub const HOST_PTR: u32 = 0x1103;
    /// `CL_MEM_MAP_COUNT`.
    pub const MAP_COUNT: u32 = 0x1104;
    /// `CL_MEM_REFERENCE_COUNT`.
    pub const REFERENCE_COUNT: u32 = 0x1105;
    /// `CL_MEM_CONTEXT`.
    pub const CONTEXT: u32 = 0x1106;
    /// `CL_MEM_ASSOCIATED_MEMOBJECT`.
    pub const ASSOCIATED_MEMOBJECT: u32 = 0x1107;
    /// `CL_MEM_OFFSET`.
    pub const OFFSET: u32 = 0x1108;
    /// `CL_MEM_USES_SVM_POINTER`.
    pub const USES_SVM_POINTER: u32 = 0x1109;
    /// `CL_MEM_PROPERTIES` (OpenCL 3.0): the properties given at creation;
    /// none for `clCreateBuffer`.
    pub const PROPERTIES: u32 = 0x110A;
}

/// `CL_MEM_OBJECT_BUFFER` (the `CL_MEM_TYPE` of a buffer).
pub const MEM_OBJECT_BUFFER: u32 = 0x10F0;
/// `CL_BUFFER_CREATE_TYPE_REGION` (`clCreateSubBuffer`).
pub const BUFFER_CREATE_TYPE_REGION: u32 = 0x1220;

/// A buffer object. Created by [`Buffer::create`] or
/// [`Buffer::create_sub_buffer`]; held as `Arc<Buffer>`.
pub struct Buffer {
    context: Arc<Context>,
    flags: u64,
    size: usize,
    /// The parent of a sub-buffer, and the sub-buffer's origin in it.
    parent: Option<Arc<Buffer>>,
    origin: usize,
    /// `CL_MEM_HOST_PTR`: the `USE_HOST_PTR` pointer (plus the origin for a
    /// sub-buffer).
    host_ptr: Option<usize>,
    uses_svm: bool,
    store: Arc<Store>,
    /// Outstanding maps of this buffer object: (host pointer, offset, size,
    /// writes back).
    maps: Mutex<Vec<map::MapRecord>>,
    destructors: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    /// What the extension that created the buffer keeps of it
    /// (`cl_amd_bus_addressable_memory`'s bus addresses and signal pages),
    /// given with the store ([`Buffer::around_store`]), read back with
    /// [`Buffer::extension`]; `None` for other buffers and sub-buffers.
    extension: Option<Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("flags", &format_args!("{:#x}", self.flags))
            .field("size", &self.size)
            .field("origin", &self.origin)
            .field("sub_buffer", &self.parent.is_some())
            .finish_non_exhaustive()
    }
}

impl Buffer {
    /// True if the buffer (or its parent) is imported memory
    /// (`clImportMemoryARM`, seed 004).
    ///
    /// No OpenCL function of its own.
    ///
    /// ```
    /// use dmabridge::ext::arm_import;
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let mut data = vec![0u8; 4096];
    /// // SAFETY: `data` stays mapped, and is only used through the buffer, while it lives.
    /// let b = unsafe { arm_import::import_host(&ctx, mem_flags::READ_WRITE, data.as_mut_ptr(), data.len()) }?;
    /// assert!(b.is_imported());
    /// // SAFETY: no host pointer.
    /// assert!(!unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?.is_imported());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn is_imported(&self) -> bool {
        self.store.is_imported()
    }

    /// Its context (`CL_MEM_CONTEXT`).
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::HOST_READ_ONLY, 4096, std::ptr::null_mut()) }?;
    /// let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 256, 128)?;
    /// assert!(std::sync::Arc::ptr_eq(sub.context(), &ctx));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// Its flags (`CL_MEM_FLAGS`), with `CL_MEM_READ_WRITE` when no access
    /// flag was given, and a sub-buffer's inherited flags.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::HOST_READ_ONLY, 4096, std::ptr::null_mut()) }?;
    /// let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 256, 128)?;
    /// assert_eq!(sub.flags(), mem_flags::READ_WRITE | mem_flags::HOST_READ_ONLY);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn flags(&self) -> u64 {
        self.flags
    }

    /// Whether a kernel the runtime does not know (the ICD's kernels from
    /// source) may access the buffer: with `write`, as the creator's
    /// restrictions allow writing (an imported read-only dma-buf's mapping is
    /// read-only: a write would fault), else reading (an external physical
    /// buffer is write-only). `CL_INVALID_OPERATION` with the creator's
    /// reason otherwise; `what` names the argument.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 4096, std::ptr::null_mut()) }?;
    /// b.check_kernel_access(true, "argument 0")?;
    /// b.check_kernel_access(false, "argument 1")?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn check_kernel_access(&self, write: bool, what: &str) -> ClResult<()> {
        if write {
            commands::check_writable(self, what)
        } else {
            commands::check_readable(self, what)
        }
    }

    /// Its size in bytes (`CL_MEM_SIZE`).
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::HOST_READ_ONLY, 4096, std::ptr::null_mut()) }?;
    /// let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 256, 128)?;
    /// assert_eq!((b.size(), sub.size()), (4096, 128));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn size(&self) -> usize {
        self.size
    }

    /// A sub-buffer's origin in its parent (`CL_MEM_OFFSET`; 0 for a buffer).
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::HOST_READ_ONLY, 4096, std::ptr::null_mut()) }?;
    /// let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 256, 128)?;
    /// assert_eq!((b.origin(), sub.origin()), (0, 256));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn origin(&self) -> usize {
        self.origin
    }

    /// A sub-buffer's parent (`CL_MEM_ASSOCIATED_MEMOBJECT`).
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::HOST_READ_ONLY, 4096, std::ptr::null_mut()) }?;
    /// let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 256, 128)?;
    /// assert!(b.parent().is_none() && std::sync::Arc::ptr_eq(sub.parent().unwrap(), &b));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn parent(&self) -> Option<&Arc<Buffer>> {
        self.parent.as_ref()
    }

    /// The allocations behind the buffer (shared with its sub-buffers).
    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// What the buffer (with its parent and sibling sub-buffers) did at
    /// `location`: allocations made, fresh bytes, bytes transferred in and
    /// out. The counters behind the tests of seed 003's table.
    ///
    /// No OpenCL function of its own.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, store::Location, Buffer};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 4096, std::ptr::null_mut()) }?;
    /// // Creating a buffer allocates nothing.
    /// assert_eq!(b.stats(Location::Host).allocations, 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn stats(&self, location: Location) -> LocationStats {
        self.store.stats(location)
    }

    /// The `DMA_BUF_IOCTL_SYNC` calls the runtime made around its CPU
    /// accesses to the buffer's memory, by direction — for a buffer
    /// imported from a dma-buf (`clImportMemoryARM`, seed 004); all 0 for
    /// any other.
    ///
    /// No OpenCL function of its own: shows that every CPU access was
    /// bracketed (tests).
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{store::CpuSyncs, Buffer};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
    /// assert_eq!(b.cpu_syncs(), CpuSyncs::default());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn cpu_syncs(&self) -> store::CpuSyncs {
        self.store.cpu_syncs()
    }

    /// `Some(true)` if `device`'s allocation of the buffer is linked with the
    /// host allocation (the same pages), `Some(false)` if it is an unlinked
    /// allocation in the device's memory, `None` before the device used it.
    ///
    /// No OpenCL function of its own: seed 003's "linked" property.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 4096, std::ptr::null_mut()) }?;
    /// assert_eq!(b.linked(cpu), None);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn linked(&self, device: &Device) -> Option<bool> {
        self.store.linked(device)
    }

    /// Exports the buffer's host pages as a dma-buf (udmabuf over the memfd
    /// pages they span), creating the host allocation if there is none.
    /// Works for buffers whose host pages come from dmabridge
    /// (`CL_MEM_ALLOC_HOST_PTR`, or no host pointer flag); a
    /// `CL_MEM_USE_HOST_PTR` buffer's pages are the application's.
    ///
    /// The host pages are whole, page-aligned pages of their own, so the
    /// dma-buf holds this buffer's bytes from offset 0 and nothing else. The
    /// data is made current in them first (a transfer from a device's memory
    /// if needed). The dma-buf shows the host pages: after writing through
    /// it, map and unmap the buffer for writing so that devices without
    /// host-unified memory get the new bytes.
    ///
    /// The dma-buf may outlive the buffer: once the buffer is released its
    /// pages stay with the dma-buf (with their last contents) and never go
    /// to another buffer — the heap takes fresh pages for later buffers (see
    /// [`Heap::export_dmabuf`](crate::memory::heap::Heap::export_dmabuf)).
    ///
    /// No OpenCL function of its own: the reason `ALLOC_HOST_PTR` is
    /// memfd-backed.
    ///
    /// Errors: `CL_INVALID_MEM_OBJECT` for a `USE_HOST_PTR` buffer, an
    /// imported one (`clImportMemoryARM`), and for a sub-buffer (it shares its parent's pages: export the parent);
    /// `CL_OUT_OF_RESOURCES` when udmabuf refuses (the message says why). A
    /// failed export leaves no host allocation behind that it made.
    ///
    /// ```no_run
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, 1 << 20, std::ptr::null_mut()) }?;
    /// let udmabuf = Udmabuf::open().expect("/dev/udmabuf");
    /// let dmabuf = b.export_dmabuf(&udmabuf)?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn export_dmabuf(&self, udmabuf: &Udmabuf) -> ClResult<DmaBuf> {
        if self.store.is_imported() {
            return cl_err!(
                InvalidMemObject,
                "an imported buffer's pages are the memory it was imported from (clImportMemoryARM): share that \
                 memory (or its dma-buf) itself"
            );
        }
        if self.host_ptr.is_some() {
            return cl_err!(
                InvalidMemObject,
                "a CL_MEM_USE_HOST_PTR buffer's pages are the application's: export them yourself, or create the \
                 buffer with CL_MEM_ALLOC_HOST_PTR"
            );
        }
        if self.parent.is_some() {
            return cl_err!(
                InvalidMemObject,
                "a sub-buffer shares its parent's pages (its bytes start at offset {} of them): export the parent",
                self.origin
            );
        }
        let (base, fresh) = self.store.host_alloc()?;
        let exported = self.store.make_host_current().and_then(|()| {
            self.context.buffer_heap()?.export_dmabuf(udmabuf, HostAddr(base)).map_err(|e| {
                ClError::new(ClErrorKind::OutOfResources, format!("exporting a buffer's host pages as a dma-buf: {e}"))
            })
        });
        if exported.is_err() {
            self.store.undo_host_alloc(fresh);
        }
        // Other drivers' fences on it are waited for before CPU accesses.
        exported.and_then(|d| self.store.note_export(&d).map(|()| d))
    }

    /// `clSetMemObjectDestructorCallback`: `f` runs when the buffer object is
    /// released for the last time (its queued commands hold it until they
    /// finish); callbacks run in the reverse order of registration. The
    /// storage is freed right after, unless a sub-buffer still shares it.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
    /// let called = Arc::new(AtomicBool::new(false));
    /// let c = called.clone();
    /// b.set_destructor_callback(Box::new(move || c.store(true, Ordering::SeqCst)));
    /// drop(b);
    /// assert!(called.load(Ordering::SeqCst));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_destructor_callback(&self, f: Box<dyn FnOnce() + Send>) {
        sync::lock(&self.destructors).push(f);
    }

    /// `clGetMemObjectInfo`.
    ///
    /// Errors: `CL_INVALID_VALUE` for an unknown `param`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::buffer::{mem_info, Buffer, MEM_OBJECT_BUFFER};
    /// use dmabridge::runtime::info::InfoValue;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
    /// assert_eq!(b.info(mem_info::TYPE)?, InfoValue::U32(MEM_OBJECT_BUFFER));
    /// assert_eq!(b.info(mem_info::SIZE)?, InfoValue::Usize(64));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn info(self: &Arc<Self>, param: u32) -> ClResult<InfoValue> {
        use mem_info::*;
        Ok(match param {
            TYPE => InfoValue::U32(MEM_OBJECT_BUFFER),
            FLAGS => InfoValue::Bits(self.flags),
            SIZE => InfoValue::Usize(self.size),
            HOST_PTR => InfoValue::Usize(self.host_ptr.unwrap_or(0)),
            MAP_COUNT => InfoValue::U32(self.map_count() as u32),
            REFERENCE_COUNT => InfoValue::U32(Arc::strong_count(self) as u32),
            CONTEXT => InfoValue::Context(self.context.clone()),
            ASSOCIATED_MEMOBJECT => InfoValue::Mem(self.parent.clone()),
            OFFSET => InfoValue::Usize(self.origin),
            USES_SVM_POINTER => InfoValue::Bool(self.uses_svm),
            PROPERTIES => InfoValue::Properties(Vec::new()),
            _ => return cl_err!(InvalidValue, "{param:#x} is not a cl_mem_info of a buffer (0x1100..=0x110A)"),
        })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let callbacks = std::mem::take(sync::get_mut(&mut self.destructors));
        for f in callbacks.into_iter().rev() {
            f();
        }
    }
}
