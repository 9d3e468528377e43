//! Buffer objects (`cl_mem` of type `CL_MEM_OBJECT_BUFFER`): creation,
//! sub-buffers and queries. Their allocations follow DPC++'s linked
//! allocation design (seed 003, see [`store`]); their commands are in
//! [`commands`] and [`map`].
//!
//! Creating a buffer allocates nothing (except with `CL_MEM_COPY_HOST_PTR`,
//! whose data must be kept somewhere: its host allocation is made at once).
//! The buffer is held by `Arc`: clone to retain (`clRetainMemObject`), drop
//! to release; a sub-buffer holds its parent.

pub(crate) mod bracket;
mod bus;
pub mod commands;
pub mod map;
pub mod rect;
pub(crate) mod restrictions;
pub mod store;

use crate::sys::addr::HostAddr;
use std::any::Any;
use std::sync::{Arc, Mutex};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::AllocKind;
use crate::sync;
use crate::sys::dma_buf::DmaBuf;
use crate::sys::udmabuf::Udmabuf;

use super::context::Context;
use super::device::Device;
use super::info::InfoValue;
use store::{Location, LocationStats, Store};

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

/// The flag rules `clCreateBuffer` and `clCreateSubBuffer` share: known
/// bits, at most one access flag, at most one host access flag.
pub(crate) fn check_exclusive(flags: u64) -> ClResult<()> {
    use mem_flags::*;
    if flags & !ALL != 0 {
        return cl_err!(InvalidValue, "flags {flags:#x} has bits no buffer takes: {:#x}", flags & !ALL);
    }
    if (flags & ACCESS).count_ones() > 1 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x} combine CL_MEM_READ_WRITE, CL_MEM_WRITE_ONLY and CL_MEM_READ_ONLY: choose one"
        );
    }
    if (flags & HOST_ACCESS).count_ones() > 1 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x} combine CL_MEM_HOST_WRITE_ONLY, CL_MEM_HOST_READ_ONLY and CL_MEM_HOST_NO_ACCESS: choose one"
        );
    }
    Ok(())
}

/// The rule `clCreateBuffer` applies to `CL_MEM_USE_HOST_PTR` over SVM: a
/// buffer of `size` bytes at `ptr` must fit in the SVM allocation, else
/// `CL_INVALID_BUFFER_SIZE`. Pointers that are not SVM are left to the
/// buffer's own rules (`Ok`). (`dmabridge::ext::svm::check_use_host_ptr`
/// is this rule under its extension's name.)
pub(crate) fn check_inside_svm(ctx: &Context, ptr: *const u8, size: usize) -> ClResult<()> {
    match ctx.heap().lookup(HostAddr::of(ptr)).filter(|i| i.meta.kind == AllocKind::Svm) {
        Some(i) if (ptr as usize - i.base.0).checked_add(size).is_none_or(|end| end > i.size) => cl_err!(
            InvalidBufferSize,
            "a {size}-byte buffer at {ptr:?} runs past the end of its {}-byte SVM allocation at {:#x}",
            i.size,
            i.base
        ),
        _ => Ok(()),
    }
}

impl Buffer {
    /// `clCreateBuffer`: a buffer of `size` bytes. Nothing is allocated yet
    /// (see [`store`]), except the host allocation that
    /// `CL_MEM_COPY_HOST_PTR` needs to keep the data.
    ///
    /// Errors:
    /// - `CL_INVALID_VALUE`: unknown flags (an extension's flags too: a buffer
    ///   with `CL_MEM_BUS_ADDRESSABLE_AMD` or `CL_MEM_EXTERNAL_PHYSICAL_AMD`
    ///   is made by `dmabridge::ext::create_buffer`, which comes here for
    ///   the others), two access flags, two host access
    ///   flags, or `USE_HOST_PTR` with `ALLOC_HOST_PTR` or `COPY_HOST_PTR`;
    /// - `CL_INVALID_BUFFER_SIZE`: `size` is 0 or above every device's
    ///   `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, or a `USE_HOST_PTR` buffer runs past
    ///   the end of the SVM allocation its pointer lies in;
    /// - `CL_INVALID_HOST_PTR`: `host_ptr` is NULL with `USE_HOST_PTR` or
    ///   `COPY_HOST_PTR`, or not NULL without them, or its `size` bytes
    ///   would wrap around the address space; `USE_HOST_PTR` over a
    ///   USM allocation of this context (seed 000, issue 20), or
    ///   `COPY_HOST_PTR` from a device or shared USM allocation of this
    ///   context (issue 21);
    /// - `CL_MEM_OBJECT_ALLOCATION_FAILURE`: the `COPY_HOST_PTR` allocation.
    ///
    /// # Safety
    /// With `USE_HOST_PTR`, `host_ptr` must stay valid for reads and writes
    /// of `size` bytes for the buffer's life, and the application may touch
    /// it only while the buffer is mapped for that (OpenCL's rule); on a
    /// device behind an IOMMU the pages it spans are mapped for the device
    /// while the buffer lives there, so they must hold no Rust reference that
    /// a device write could invalidate. With `COPY_HOST_PTR` it must be valid
    /// for reads of `size` bytes now.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let data = [7u8; 64];
    /// // SAFETY: COPY_HOST_PTR reads `data` (64 bytes) now.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::COPY_HOST_PTR, 64, data.as_ptr().cast_mut()) }?;
    /// assert_eq!(b.size(), 64);
    /// // SAFETY: a NULL host pointer with COPY_HOST_PTR is refused before any use.
    /// assert!(unsafe { Buffer::create(&ctx, mem_flags::COPY_HOST_PTR, 64, std::ptr::null_mut()) }.is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn create(ctx: &Arc<Context>, flags: u64, size: usize, host_ptr: *mut u8) -> ClResult<Arc<Buffer>> {
        use mem_flags::*;
        check_exclusive(flags)?;
        if flags & USE_HOST_PTR != 0 && flags & (ALLOC_HOST_PTR | COPY_HOST_PTR) != 0 {
            return cl_err!(
                InvalidValue,
                "flags {flags:#x}: CL_MEM_USE_HOST_PTR excludes CL_MEM_ALLOC_HOST_PTR and CL_MEM_COPY_HOST_PTR"
            );
        }
        let max = ctx.devices().iter().map(|d| d.max_mem_alloc_size).max().unwrap_or(0);
        if size == 0 || size as u64 > max {
            return cl_err!(
                InvalidBufferSize,
                "size {size} is not in 1..={max} (the largest CL_DEVICE_MAX_MEM_ALLOC_SIZE of the context)"
            );
        }
        let wants_ptr = flags & (USE_HOST_PTR | COPY_HOST_PTR) != 0;
        if host_ptr.is_null() && wants_ptr {
            return cl_err!(InvalidHostPtr, "host_ptr is NULL but flags {flags:#x} ask to use or copy it");
        }
        if !host_ptr.is_null() && !wants_ptr {
            return cl_err!(
                InvalidHostPtr,
                "host_ptr {host_ptr:?} given without CL_MEM_USE_HOST_PTR or CL_MEM_COPY_HOST_PTR"
            );
        }
        if !host_ptr.is_null() && (host_ptr as usize).checked_add(size).is_none() {
            return cl_err!(
                InvalidHostPtr,
                "host_ptr {host_ptr:?} + {size} bytes runs past the end of the address space: no memory is like that"
            );
        }
        let mut uses_svm = false;
        if !host_ptr.is_null() {
            if let Some(a) = ctx.lookup(HostAddr::of(host_ptr)) {
                match a.meta.kind {
                    AllocKind::Svm => {
                        check_inside_svm(ctx, host_ptr, size)?;
                        uses_svm = flags & USE_HOST_PTR != 0;
                    }
                    k if flags & USE_HOST_PTR != 0 => {
                        return cl_err!(
                            InvalidHostPtr,
                            "host_ptr {host_ptr:?} is a {k:?} USM allocation of this context: CL_MEM_USE_HOST_PTR \
                             cannot use USM memory (cl_intel_unified_shared_memory, issue 20); use \
                             CL_MEM_COPY_HOST_PTR from a host allocation, or the USM pointer itself"
                        );
                    }
                    k @ (AllocKind::Device | AllocKind::Shared) => {
                        return cl_err!(
                            InvalidHostPtr,
                            "host_ptr {host_ptr:?} is a {k:?} USM allocation of this context: CL_MEM_COPY_HOST_PTR \
                             copies only from host memory (cl_intel_unified_shared_memory, issue 21)"
                        );
                    }
                    AllocKind::Host => {}
                }
            }
        }
        let user_ptr = (flags & USE_HOST_PTR != 0).then_some(host_ptr as usize);
        let store = Arc::new(Store::new(ctx, size, user_ptr));
        if flags & COPY_HOST_PTR != 0 {
            // SAFETY: the caller guarantees `host_ptr` for `size` bytes.
            unsafe { store.init_from(host_ptr) }?;
        }
        let flags = if flags & ACCESS == 0 { flags | READ_WRITE } else { flags };
        Ok(Arc::new(Buffer {
            context: ctx.clone(),
            flags,
            size,
            parent: None,
            origin: 0,
            host_ptr: user_ptr,
            uses_svm,
            store,
            maps: Mutex::new(Vec::new()),
            destructors: Mutex::new(Vec::new()),
            extension: None,
        }))
    }

    /// `clCreateSubBuffer` with `CL_BUFFER_CREATE_TYPE_REGION`: the `size`
    /// bytes of `parent` at `origin`, sharing its allocations. Flags left out
    /// are inherited.
    ///
    /// Errors:
    /// - `CL_INVALID_MEM_OBJECT`: `parent` is itself a sub-buffer;
    /// - `CL_INVALID_VALUE`: unknown or exclusive flags, a host pointer flag,
    ///   an access the parent excludes (a `WRITE_ONLY` parent and a
    ///   `READ_WRITE`/`READ_ONLY` sub-buffer, and the like, for the device and
    ///   for the host), a create type other than the region, or a region
    ///   outside the parent;
    /// - `CL_INVALID_BUFFER_SIZE`: `size` is 0;
    /// - `CL_MISALIGNED_SUB_BUFFER_OFFSET`: `origin` is aligned to no
    ///   device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN`.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, mem_flags::READ_WRITE, 4096, std::ptr::null_mut()) }?;
    /// let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 1024, 512)?;
    /// assert_eq!((sub.origin(), sub.size()), (1024, 512));
    /// assert!(Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 4000, 512).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn create_sub_buffer(
        parent: &Arc<Buffer>,
        flags: u64,
        create_type: u32,
        origin: usize,
        size: usize,
    ) -> ClResult<Arc<Buffer>> {
        use mem_flags::*;
        if parent.parent.is_some() {
            return cl_err!(InvalidMemObject, "buffer is a sub-buffer: sub-buffers of sub-buffers are not allowed");
        }
        parent.store.restrictions().check_sub_buffer()?;
        check_exclusive(flags)?;
        if flags & HOST_PTR != 0 {
            return cl_err!(
                InvalidValue,
                "flags {flags:#x}: a sub-buffer takes no CL_MEM_USE/ALLOC/COPY_HOST_PTR (it inherits its parent's)"
            );
        }
        let p = parent.flags;
        let device_conflict = (p & WRITE_ONLY != 0 && flags & (READ_WRITE | READ_ONLY) != 0)
            || (p & READ_ONLY != 0 && flags & (READ_WRITE | WRITE_ONLY) != 0);
        let host_conflict = (p & HOST_WRITE_ONLY != 0 && flags & HOST_READ_ONLY != 0)
            || (p & HOST_READ_ONLY != 0 && flags & HOST_WRITE_ONLY != 0)
            || (p & HOST_NO_ACCESS != 0 && flags & (HOST_READ_ONLY | HOST_WRITE_ONLY) != 0);
        if device_conflict || host_conflict {
            return cl_err!(InvalidValue, "flags {flags:#x} ask for an access the parent's flags {p:#x} exclude");
        }
        if create_type != BUFFER_CREATE_TYPE_REGION {
            return cl_err!(
                InvalidValue,
                "buffer_create_type {create_type:#x} is not CL_BUFFER_CREATE_TYPE_REGION (0x1220)"
            );
        }
        if size == 0 {
            return cl_err!(InvalidBufferSize, "the region's size is 0");
        }
        if origin.checked_add(size).is_none_or(|end| end > parent.size) {
            return cl_err!(
                InvalidValue,
                "region {origin}+{size} runs past the end of the {}-byte parent buffer",
                parent.size
            );
        }
        if !parent.context.devices().iter().any(|d| origin as u64 % d.max_alignment == 0) {
            return cl_err!(
                MisalignedSubBufferOffset,
                "origin {origin} is not a multiple of any device's CL_DEVICE_MEM_BASE_ADDR_ALIGN ({} bytes)",
                parent.context.devices().iter().map(|d| d.max_alignment).min().unwrap_or(0)
            );
        }
        let mut inherited = flags;
        if flags & ACCESS == 0 {
            inherited |= p & ACCESS;
        }
        if flags & HOST_ACCESS == 0 {
            inherited |= p & HOST_ACCESS;
        }
        inherited |= p & HOST_PTR;
        Ok(Arc::new(Buffer {
            context: parent.context.clone(),
            flags: inherited,
            size,
            parent: Some(parent.clone()),
            origin,
            host_ptr: parent.host_ptr.map(|h| h + origin),
            uses_svm: parent.uses_svm,
            store: parent.store.clone(),
            maps: Mutex::new(Vec::new()),
            destructors: Mutex::new(Vec::new()),
            extension: None,
        }))
    }

    /// A buffer over imported memory (`clImportMemoryARM`, seed 004): its
    /// store was made by the import; `flags` are already checked.
    pub(crate) fn imported(ctx: &Arc<Context>, flags: u64, size: usize, store: Store) -> Arc<Buffer> {
        Buffer::around_store(ctx, flags, size, Arc::new(store), None)
    }

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
