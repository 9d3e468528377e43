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
use super::usm::properties as pairs;
use crate::entry::{object, Cl};
use crate::handles;

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
            // `cl_import_properties_arm` is `intptr_t`, 64 bits as the USM
            // lists' `cl_bitfield` on the 64-bit targets the ICD builds for.
            const _: () = assert!(size_of::<cl_import_properties_arm>() == size_of::<cl_mem_properties_intel>());
            // SAFETY: the C contract: `properties` is NULL or a zero-terminated
            // list of pairs (read as the same-sized USM property type).
            let props = pairs(properties.cast());
            // SAFETY: the C contract of clImportMemoryARM is
            // `import_memory`'s: host memory stays mapped while the buffer
            // lives; a dma-buf's `memory` points to its open fd.
            let buffer = arm_import::import_memory(&ctx.inner.ctx, flags, &props, memory, size).cl()?;
            Ok(buffer_handle(buffer, ctx, Vec::new()))
        })
    }
}
