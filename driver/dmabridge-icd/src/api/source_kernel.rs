//! Kernels from source behind dmabridge's kernel handles: the C face of the
//! core's [`program::Kernel`] (PoCL's kernel, its arguments, a launch as a
//! dmabridge command). What is the ICD's here is the C shape of
//! `clSetKernelArg`: `arg_size` and `arg_value` checked and decoded by the
//! argument's class, handles resolved to the core's objects.

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::runtime::buffer::Buffer;
use dmabridge::runtime::image::sampler::Sampler;
use dmabridge::runtime::image::Image;
use dmabridge::runtime::program::{self, pocl::kernel::ArgClass};
use opencl_sys::*;

use crate::entry::{Cl, ClRes};
use crate::notify::note_error;

/// A kernel from source: the core's.
pub type SourceKernel = program::Kernel;

/// A `cl_mem` an argument was set to: a buffer or an image.
#[derive(Debug, Clone)]
pub(crate) enum MemArg {
    Buffer(Arc<Buffer>),
    Image(Arc<Image>),
}

fn fail<T>(code: cl_int, message: String) -> ClRes<T> {
    note_error(code, message);
    Err(code)
}

/// The handle `arg_value` points to, once `arg_size` is a handle's
/// (`CL_INVALID_ARG_SIZE` naming `what` otherwise); NULL for a NULL
/// `arg_value`.
///
/// # Safety
/// `arg_value` is NULL or readable for `arg_size` bytes.
unsafe fn handle_arg(index: cl_uint, arg_size: usize, arg_value: *const c_void, what: &str) -> ClRes<*mut c_void> {
    // cl_mem and cl_sampler are both `void *`.
    if arg_size != std::mem::size_of::<*mut c_void>() {
        return fail(
            CL_INVALID_ARG_SIZE,
            format!("argument {index} is {what}: arg_size must be {}, not {arg_size}", handle_size_name(what)),
        );
    }
    if arg_value.is_null() {
        return Ok(std::ptr::null_mut());
    }
    // SAFETY: clSetKernelArg's contract: a non-NULL `arg_value` points to
    // `arg_size` readable bytes, and `arg_size` was just checked to be a
    // handle's; `read_unaligned` makes no demand on the pointer's alignment.
    Ok(unsafe { arg_value.cast::<*mut c_void>().read_unaligned() })
}

/// The C type a handle argument's `arg_size` must be the size of.
fn handle_size_name(what: &str) -> &'static str {
    if what.contains("sampler") {
        "sizeof(cl_sampler)"
    } else {
        "sizeof(cl_mem)"
    }
}

/// `clSetKernelArg` of a kernel from source. `arg_value` is the C pointer:
/// a `cl_mem` (or NULL) for a `__global`/`__constant` pointer, an image
/// `cl_mem` for an image (of the declared type, in a format PoCL has: else
/// `CL_INVALID_MEM_OBJECT` / `CL_INVALID_ARG_VALUE`), a `cl_sampler` for a
/// `sampler_t`, NULL for `__local` (its size is `arg_size`), the value's
/// bytes otherwise.
///
/// # Safety
/// `arg_value` is NULL or readable for `arg_size` bytes.
pub(crate) unsafe fn set_arg(
    k: &SourceKernel,
    index: cl_uint,
    arg_size: usize,
    arg_value: *const c_void,
    mem: impl Fn(cl_mem) -> ClRes<MemArg>,
    sampler: impl Fn(cl_sampler) -> ClRes<Arc<Sampler>>,
) -> ClRes<()> {
    let set_mem = |h: cl_mem| match mem(h)? {
        MemArg::Buffer(b) => k.set_arg_buffer(index, &b).cl(),
        MemArg::Image(image) => k.set_arg_image(index, &image).cl(),
    };
    match k.arg_class(index).cl()? {
        ArgClass::Global => {
            // SAFETY: the caller's contract of `arg_value`.
            let h: cl_mem = unsafe { handle_arg(index, arg_size, arg_value, "a pointer") }?;
            if h.is_null() {
                return k.set_arg_pointer(index, std::ptr::null()).cl();
            }
            set_mem(h)
        }
        ArgClass::Image(_) => {
            // SAFETY: the caller's contract of `arg_value`.
            let h: cl_mem = unsafe { handle_arg(index, arg_size, arg_value, "an image") }?;
            if arg_value.is_null() {
                return fail(CL_INVALID_MEM_OBJECT, format!("argument {index} is an image: arg_value is NULL"));
            }
            set_mem(h)
        }
        ArgClass::Sampler => {
            // SAFETY: the caller's contract of `arg_value`.
            let h: cl_sampler = unsafe { handle_arg(index, arg_size, arg_value, "a sampler_t") }?;
            if arg_value.is_null() {
                return fail(CL_INVALID_SAMPLER, format!("argument {index} is a sampler_t: arg_value is NULL"));
            }
            k.set_arg_sampler(index, &sampler(h)?).cl()
        }
        ArgClass::Local => {
            if !arg_value.is_null() {
                return fail(CL_INVALID_ARG_VALUE, format!("argument {index} is __local: arg_value must be NULL"));
            }
            k.set_arg_local(index, arg_size).cl()
        }
        ArgClass::Value => {
            if arg_value.is_null() {
                return fail(CL_INVALID_ARG_VALUE, format!("argument {index} is passed by value: arg_value is NULL"));
            }
            if arg_size > isize::MAX as usize {
                return Err(CL_INVALID_ARG_SIZE);
            }
            // SAFETY: the caller's contract: `arg_value` holds `arg_size`
            // bytes (read now: the core copies them).
            k.set_arg_value(index, unsafe { std::slice::from_raw_parts(arg_value.cast::<u8>(), arg_size) }).cl()
        }
    }
}
