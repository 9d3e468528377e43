//! `cl_dmabridge_dma_buf_export` entry points (`ext::dma_buf_export`),
//! reached through `clGetExtensionFunctionAddressForPlatform` with the
//! signatures of `include/CL/cl_dmabridge.h`.
//!
//! The returned fd is the caller's: it leaves Rust's ownership here (the C
//! ABI has no other way to hand it over) and nowhere else.

use std::ffi::{c_int, c_void};
use std::os::fd::IntoRawFd;

use dmabridge::ext::dma_buf_export::{self, Export};
use opencl_sys::*;

use super::context::ContextObj;
use super::memobj::mem_object;
use super::usm::properties;
use crate::entry::{status, write_opt, Cl, ClRes};
use crate::handles;
use crate::info::{get_info, Handles};

/// `cl_dma_buf_export_properties_dmabridge`.
#[allow(non_camel_case_types)]
pub type cl_dma_buf_export_properties_dmabridge = cl_properties;
/// `cl_dma_buf_info_dmabridge`.
#[allow(non_camel_case_types)]
pub type cl_dma_buf_info_dmabridge = cl_uint;

/// Signature of `clGetMemAllocDmaBufFdDMABRIDGE`.
#[allow(non_camel_case_types)]
pub type clGetMemAllocDmaBufFdDMABRIDGE_fn = Option<
    unsafe extern "C" fn(
        cl_context,
        *const c_void,
        *const cl_dma_buf_export_properties_dmabridge,
        *mut c_int,
    ) -> cl_int,
>;
/// Signature of `clGetMemObjectDmaBufFdDMABRIDGE`.
#[allow(non_camel_case_types)]
pub type clGetMemObjectDmaBufFdDMABRIDGE_fn =
    Option<unsafe extern "C" fn(cl_mem, *const cl_dma_buf_export_properties_dmabridge, *mut c_int) -> cl_int>;
/// Signature of `clGetMemAllocDmaBufInfoDMABRIDGE`.
#[allow(non_camel_case_types)]
pub type clGetMemAllocDmaBufInfoDMABRIDGE_fn = Option<
    unsafe extern "C" fn(
        cl_context,
        *const c_void,
        cl_dma_buf_info_dmabridge,
        usize,
        *mut c_void,
        *mut usize,
    ) -> cl_int,
>;
/// Signature of `clGetMemObjectDmaBufInfoDMABRIDGE`.
#[allow(non_camel_case_types)]
pub type clGetMemObjectDmaBufInfoDMABRIDGE_fn =
    Option<unsafe extern "C" fn(cl_mem, cl_dma_buf_info_dmabridge, usize, *mut c_void, *mut usize) -> cl_int>;

/// Hands the export's fd to the caller.
///
/// # Safety
/// `fd` is non-NULL and valid for a write of an `int`.
unsafe fn give_fd(export: Export, fd: *mut c_int) {
    let raw = export.dmabuf.into_fd().into_raw_fd();
    // SAFETY: the caller's contract.
    unsafe { write_opt(fd, raw) };
}

/// `fd` must be given: checked before anything is exported, so that no fd
/// is made only to be lost.
fn need_fd(fd: *mut c_int) -> ClRes<()> {
    if fd.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    Ok(())
}

/// `clGetMemAllocDmaBufFdDMABRIDGE`.
pub(crate) unsafe extern "C" fn clGetMemAllocDmaBufFdDMABRIDGE(
    context: cl_context,
    ptr: *const c_void,
    props: *const cl_dma_buf_export_properties_dmabridge,
    fd: *mut c_int,
) -> cl_int {
    status("clGetMemAllocDmaBufFdDMABRIDGE", || {
        let ctx = handles::get::<ContextObj>(context.cast())?;
        need_fd(fd)?;
        // SAFETY: the C contract: `props` is NULL or a zero-terminated list.
        let props = unsafe { properties(props) };
        let export = dma_buf_export::export_mem_alloc(&ctx.inner.ctx, ptr.cast(), &props).cl()?;
        // SAFETY: `fd` is non-NULL (checked) and writable by the C contract.
        unsafe { give_fd(export, fd) };
        Ok(())
    })
}

/// `clGetMemObjectDmaBufFdDMABRIDGE`.
pub(crate) unsafe extern "C" fn clGetMemObjectDmaBufFdDMABRIDGE(
    memobj: cl_mem,
    props: *const cl_dma_buf_export_properties_dmabridge,
    fd: *mut c_int,
) -> cl_int {
    status("clGetMemObjectDmaBufFdDMABRIDGE", || {
        // An image's dma-buf is its storage's: the pixels from offset 0.
        let m = mem_object(memobj)?;
        need_fd(fd)?;
        // SAFETY: the C contract: `props` is NULL or a zero-terminated list.
        let props = unsafe { properties(props) };
        let export = dma_buf_export::export_buffer(&m.inner.buffer, &props).cl()?;
        // SAFETY: `fd` is non-NULL (checked) and writable by the C contract.
        unsafe { give_fd(export, fd) };
        Ok(())
    })
}

/// `clGetMemAllocDmaBufInfoDMABRIDGE`.
pub(crate) unsafe extern "C" fn clGetMemAllocDmaBufInfoDMABRIDGE(
    context: cl_context,
    ptr: *const c_void,
    param_name: cl_dma_buf_info_dmabridge,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetMemAllocDmaBufInfoDMABRIDGE", param_value_size, param_value, param_value_size_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            let info = dma_buf_export::mem_alloc_info(&ctx.inner.ctx, ptr.cast(), param_name).cl()?;
            Ok((info.into(), Handles::default()))
        })
    }
}

/// `clGetMemObjectDmaBufInfoDMABRIDGE`.
pub(crate) unsafe extern "C" fn clGetMemObjectDmaBufInfoDMABRIDGE(
    memobj: cl_mem,
    param_name: cl_dma_buf_info_dmabridge,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetMemObjectDmaBufInfoDMABRIDGE", param_value_size, param_value, param_value_size_ret, || {
            let m = mem_object(memobj)?;
            let info = match &m.inner.image {
                Some(image) => dma_buf_export::image_info(image, param_name).cl()?,
                None => dma_buf_export::buffer_info(&m.inner.buffer, param_name).cl()?,
            };
            Ok((info.into(), Handles::default()))
        })
    }
}
