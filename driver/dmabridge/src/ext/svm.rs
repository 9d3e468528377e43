//! `clSVMAlloc` / `clSVMFree` (seed 001): coarse- and fine-grain SVM on the
//! same memfd-backed heap as USM.
//!
//! `clSVMAlloc` reports failure only with a NULL pointer; the Rust API returns
//! the reason as a [`crate::error::ClError`] (the C face turns any
//! error into NULL).

use crate::sys::addr::HostAddr;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::{AllocKind, AllocMeta};
use crate::runtime::context::Context;
use crate::runtime::device::svm_caps;

/// `cl_svm_mem_flags` bits.
pub mod flags {
    /// `CL_MEM_READ_WRITE` (the default).
    pub const READ_WRITE: u64 = 1 << 0;
    /// `CL_MEM_WRITE_ONLY`.
    pub const WRITE_ONLY: u64 = 1 << 1;
    /// `CL_MEM_READ_ONLY`.
    pub const READ_ONLY: u64 = 1 << 2;
    /// `CL_MEM_SVM_FINE_GRAIN_BUFFER`.
    pub const FINE_GRAIN_BUFFER: u64 = 1 << 10;
    /// `CL_MEM_SVM_ATOMICS` (only with `FINE_GRAIN_BUFFER`).
    pub const ATOMICS: u64 = 1 << 11;
    pub(crate) const ACCESS: u64 = READ_WRITE | WRITE_ONLY | READ_ONLY;
    pub(crate) const ALL: u64 = ACCESS | FINE_GRAIN_BUFFER | ATOMICS;
}

/// The SVM flags in the heap's 8-bit flags field.
fn pack(f: u64) -> u8 {
    (f & flags::ACCESS) as u8 | (((f >> 10) & 0b11) as u8) << 3
}

/// The SVM flags of an allocation, back from the heap's flags field.
fn unpack(b: u8) -> u64 {
    (b & 0b111) as u64 | (((b >> 3) & 0b11) as u64) << 10
}

/// `clSVMAlloc`: `size` bytes of SVM with `flags`, aligned to `alignment`
/// (0: the largest data type, 128 bytes).
///
/// ```
/// use dmabridge::ext::svm::{self, flags};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// // Fine grain needs every device of the context to support it: the CPU
/// // device does (an edu or BAR device does not).
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let p = svm::svm_alloc(&ctx, flags::READ_WRITE | flags::FINE_GRAIN_BUFFER, 4096, 0)?;
/// assert_eq!(svm::svm_flags(&ctx, p.as_ptr()), Some(flags::READ_WRITE | flags::FINE_GRAIN_BUFFER));
/// svm::svm_free(&ctx, p.as_ptr());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn svm_alloc(ctx: &Arc<Context>, svm_flags: u64, size: usize, alignment: u32) -> ClResult<NonNull<u8>> {
    if svm_flags & !flags::ALL != 0 {
        return cl_err!(
            InvalidValue,
            "SVM flags {svm_flags:#x} have bits that are not SVM flags: {:#x}",
            svm_flags & !flags::ALL
        );
    }
    if (svm_flags & flags::ACCESS).count_ones() > 1 {
        return cl_err!(
            InvalidValue,
            "READ_WRITE, WRITE_ONLY and READ_ONLY are mutually exclusive (flags {svm_flags:#x})"
        );
    }
    if svm_flags & flags::ATOMICS != 0 && svm_flags & flags::FINE_GRAIN_BUFFER == 0 {
        return cl_err!(InvalidValue, "CL_MEM_SVM_ATOMICS needs CL_MEM_SVM_FINE_GRAIN_BUFFER");
    }
    for d in ctx.devices() {
        let need = [(flags::FINE_GRAIN_BUFFER, svm_caps::FINE_GRAIN_BUFFER), (flags::ATOMICS, svm_caps::ATOMICS)];
        for (flag, cap) in need {
            if svm_flags & flag != 0 && d.svm & cap == 0 {
                return cl_err!(InvalidOperation, "device {:?} does not support SVM flag {flag:#x}", d.name);
            }
        }
        if d.svm & svm_caps::COARSE_GRAIN_BUFFER == 0 {
            return cl_err!(InvalidOperation, "device {:?} does not support SVM", d.name);
        }
    }
    if alignment != 0 && !alignment.is_power_of_two() {
        return cl_err!(InvalidValue, "alignment {alignment} is not a power of two");
    }
    let max_align = ctx.devices().iter().map(|d| d.max_alignment).min().unwrap_or(0);
    if alignment as u64 > max_align {
        return cl_err!(InvalidValue, "alignment {alignment} is larger than the largest data type ({max_align} bytes)");
    }
    let max_size = ctx.devices().iter().map(|d| d.max_mem_alloc_size).min().unwrap_or(0);
    if size == 0 || size as u64 > max_size {
        return cl_err!(InvalidBufferSize, "size {size} is 0 or larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE ({max_size})");
    }
    let align = if alignment == 0 { max_align as usize } else { alignment as usize };
    let meta = AllocMeta { kind: AllocKind::Svm, device: None, flags: pack(svm_flags) };
    ctx.heap()
        .alloc(size, align, meta)
        .map_err(|e| ClError::new(ClErrorKind::OutOfHostMemory, format!("allocating {size} bytes of SVM: {e}")))
}

/// `clSVMFree`: frees an SVM allocation. NULL is ignored. `clSVMFree`
/// returns nothing, so a pointer that is not an SVM allocation of the
/// context is ignored too (nothing is freed or changed) and reported here
/// as `false`: an interior pointer, a freed one, another context's SVM
/// allocation, and a USM allocation (free that with
/// [`mem_free`](crate::ext::usm::mem_free); it stays intact and usable).
/// Enqueued migrations of the allocation that have not run yet will not
/// touch it.
///
/// ```
/// use dmabridge::ext::{svm::{self, flags}, usm};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let p = svm::svm_alloc(&ctx, flags::READ_WRITE, 256, 0)?.as_ptr();
/// assert!(!svm::svm_free(&ctx, p.wrapping_add(8)), "an interior pointer is ignored");
/// assert!(svm::svm_free(&ctx, p));
/// assert!(!svm::svm_free(&ctx, p), "a second free is ignored");
/// assert!(!svm::svm_free(&ctx, std::ptr::null_mut()));
/// let u = usm::host_mem_alloc(&ctx, &[], 256, 0)?.as_ptr();
/// assert!(!svm::svm_free(&ctx, u), "a USM allocation is ignored");
/// usm::mem_free(&ctx, u)?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn svm_free(ctx: &Arc<Context>, ptr: *mut u8) -> bool {
    if ptr.is_null() {
        return false;
    }
    let p = ptr as usize;
    match ctx.heap().lookup(HostAddr(p)) {
        Some(i) if i.base == HostAddr(p) && i.meta.kind == AllocKind::Svm => {
            ctx.free_heap_with(HostAddr(p), || ctx.heap().free(HostAddr(p))).is_ok()
        }
        _ => false,
    }
}

/// The SVM flags of the SVM allocation `ptr` points into, if it is one.
///
/// No OpenCL function of its own: the `flags` given to `clSVMAlloc`, which
/// decide whether the memory is SVM at all (e.g. for `clSVMFree` and
/// `CL_MEM_USE_HOST_PTR` buffers over SVM).
///
/// ```
/// use dmabridge::ext::{svm::{self, flags}, usm};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let p = svm::svm_alloc(&ctx, flags::READ_ONLY, 1000, 0)?.as_ptr();
/// assert_eq!(svm::svm_flags(&ctx, p.wrapping_add(999)), Some(flags::READ_ONLY), "any interior pointer");
/// let h = usm::host_mem_alloc(&ctx, &[], 1000, 0)?.as_ptr();
/// assert_eq!(svm::svm_flags(&ctx, h), None, "USM is not SVM");
/// # svm::svm_free(&ctx, p);
/// # usm::mem_free(&ctx, h)?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn svm_flags(ctx: &Arc<Context>, ptr: *const u8) -> Option<u64> {
    ctx.heap().lookup(HostAddr::of(ptr)).filter(|i| i.meta.kind == AllocKind::Svm).map(|i| unpack(i.meta.flags))
}

/// The rule `clCreateBuffer` applies to `CL_MEM_USE_HOST_PTR` over SVM: a
/// buffer of `size` bytes at `ptr` must fit in the SVM allocation, else
/// `CL_INVALID_BUFFER_SIZE`. Pointers that are not SVM are left to the
/// buffer's own rules (`Ok`).
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::svm::{self, flags};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let p = svm::svm_alloc(&ctx, flags::READ_WRITE, 1000, 0)?.as_ptr();
/// svm::check_use_host_ptr(&ctx, p.wrapping_add(500), 500)?;
/// let e = svm::check_use_host_ptr(&ctx, p.wrapping_add(500), 501).unwrap_err();
/// assert_eq!(e.kind, ClErrorKind::InvalidBufferSize);
/// let mine = [0u8; 64];
/// svm::check_use_host_ptr(&ctx, mine.as_ptr(), 1 << 20)?; // not SVM: not this rule's business
/// # svm::svm_free(&ctx, p);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn check_use_host_ptr(ctx: &Arc<Context>, ptr: *const u8, size: usize) -> ClResult<()> {
    // The rule is clCreateBuffer's, so the buffer layer holds it.
    crate::runtime::buffer::check_inside_svm(ctx, ptr, size)
}
