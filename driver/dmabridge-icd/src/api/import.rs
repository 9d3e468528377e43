//! `cl_arm_import_memory` (seed 004): `clImportMemoryARM`
//! ([`dmabridge::ext::arm_import`]), reached through
//! `clGetExtensionFunctionAddressForPlatform` with the signature of Khronos
//! `CL/cl_ext.h`. It checks the C-shaped rules (the context handle, the
//! zero-terminated property list) and calls
//! [`arm_import::import_memory`], which checks the rest.

use std::ffi::c_void;

use dmabridge::ext::arm_import;
use opencl_sys::*;

use super::context::ContextObj;
use super::memobj::buffer_handle;
use crate::entry::{object, Cl};
use crate::handles;

/// A zero-terminated `cl_import_properties_arm` list as (name, value)
/// pairs (empty for NULL or a lone 0: the defaults).
///
/// # Safety
/// `props` is NULL or a zero-terminated list of pairs.
unsafe fn properties(props: *const cl_import_properties_arm) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if props.is_null() {
        return out;
    }
    for i in (0..).step_by(2) {
        // SAFETY: the list is zero-terminated; reading stops at the 0 name,
        // and a non-zero name is followed by its value.
        let (name, value) = unsafe {
            let name = props.add(i).read_unaligned();
            if name == 0 {
                break;
            }
            (name, props.add(i + 1).read_unaligned())
        };
        out.push((name as u64, value as u64));
    }
    out
}

/// `clImportMemoryARM`: a buffer whose storage is `memory` (host memory,
/// or for `CL_IMPORT_TYPE_DMA_BUF_ARM` a pointer to the dma-buf's `int`
/// fd), zero copy. `CL_INVALID_CONTEXT` for an invalid context; the other
/// codes are [`arm_import`]'s.
pub(crate) unsafe extern "C" fn clImportMemoryARM(
    context: cl_context,
    flags: cl_mem_flags,
    properties: *const cl_import_properties_arm,
    memory: *mut c_void,
    size: usize,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the C contract of `errcode_ret`.
    unsafe {
        object("clImportMemoryARM", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            // SAFETY: the C contract: `properties` is NULL or zero-terminated.
            let props = self::properties(properties);
            // SAFETY: the C contract of clImportMemoryARM is
            // `import_memory`'s: host memory stays mapped while the buffer
            // lives; a dma-buf's `memory` points to its open fd.
            let buffer = arm_import::import_memory(&ctx.inner.ctx, flags, &props, memory, size).cl()?;
            Ok(buffer_handle(buffer, ctx, Vec::new()))
        })
    }
}
