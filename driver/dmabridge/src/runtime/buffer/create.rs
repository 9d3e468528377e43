//! Creating buffers and sub-buffers (`clCreateBuffer`, `clCreateSubBuffer`):
//! the flag, size and host pointer rules, kept apart from the object's
//! accessors in `mod.rs` because the extensions that create buffers
//! their own way (`ext::amd_bus`, `ext::arm_import`, images) share the
//! flag rule ([`check_exclusive`]).

use std::sync::{Arc, Mutex};

use super::store::Store;
use super::{mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
use crate::cl_err;
use crate::error::ClResult;
use crate::memory::heap::AllocKind;
use crate::runtime::context::Context;
use crate::sys::addr::HostAddr;

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
    /// (see [`store`](super::store)), except the host allocation that
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
}
