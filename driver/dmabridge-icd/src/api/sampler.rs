//! Sampler entry points (`runtime::image::sampler`).

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::runtime::image::sampler::{sampler_info, Sampler};
use opencl_sys::*;

use super::context::ContextObj;
use crate::entry::{object, status, Cl, ClRes};
use crate::handles::{self, Kind, Obj, Tag};
use crate::info::{get_info, Handles};

/// The longest property list read (a guard against a list without its 0).
const MAX_PROPERTIES: usize = 64;

/// A sampler, with its context's object (`CL_SAMPLER_CONTEXT`'s handle).
#[derive(Debug)]
pub struct SamplerObj {
    /// The core sampler.
    pub sampler: Arc<Sampler>,
    /// Its context's object.
    pub context: Arc<Obj<ContextObj>>,
}

impl Kind for SamplerObj {
    const TAG: Tag = Tag::Sampler;
    const INVALID: cl_int = CL_INVALID_SAMPLER;

    fn notifier(&self) -> crate::notify::Notifier {
        self.context.inner.notify
    }
}

/// The sampler behind a handle (kernel arguments take it from here).
pub(crate) fn sampler(handle: cl_sampler) -> ClRes<Arc<Obj<SamplerObj>>> {
    handles::get::<SamplerObj>(handle.cast())
}

fn sampler_handle(sampler: Arc<Sampler>, context: Arc<Obj<ContextObj>>) -> cl_sampler {
    handles::into_handle(handles::new_object(SamplerObj { sampler, context })).cast()
}

/// `clCreateSampler`.
pub(crate) unsafe extern "C" fn clCreateSampler(
    context: cl_context,
    normalized_coords: cl_bool,
    addressing_mode: cl_addressing_mode,
    filter_mode: cl_filter_mode,
    errcode_ret: *mut cl_int,
) -> cl_sampler {
    // SAFETY: the C contract of `errcode_ret`.
    unsafe {
        object("clCreateSampler", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            if normalized_coords > 1 {
                return Err(CL_INVALID_VALUE);
            }
            let s = Sampler::create(&ctx.inner.ctx, normalized_coords == CL_TRUE, addressing_mode, filter_mode).cl()?;
            Ok(sampler_handle(s, ctx))
        })
    }
}

/// `clCreateSamplerWithProperties`: `(name, value)` pairs up to a 0.
pub(crate) unsafe extern "C" fn clCreateSamplerWithProperties(
    context: cl_context,
    sampler_properties: *const cl_sampler_properties,
    errcode_ret: *mut cl_int,
) -> cl_sampler {
    // SAFETY: the C contract of `errcode_ret` and the zero-terminated list.
    unsafe {
        object("clCreateSamplerWithProperties", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            let mut pairs = Vec::new();
            if !sampler_properties.is_null() {
                let mut i = 0;
                loop {
                    if i >= MAX_PROPERTIES {
                        return Err(CL_INVALID_VALUE);
                    }
                    let name = sampler_properties.add(i).read_unaligned();
                    if name == 0 {
                        break;
                    }
                    pairs.push((name, sampler_properties.add(i + 1).read_unaligned()));
                    i += 2;
                }
            }
            let s = Sampler::with_properties(&ctx.inner.ctx, &pairs).cl()?;
            Ok(sampler_handle(s, ctx))
        })
    }
}

/// `clRetainSampler`.
pub(crate) unsafe extern "C" fn clRetainSampler(sampler: cl_sampler) -> cl_int {
    status("clRetainSampler", || handles::retain::<SamplerObj>(sampler.cast()))
}

/// `clReleaseSampler`.
pub(crate) unsafe extern "C" fn clReleaseSampler(sampler: cl_sampler) -> cl_int {
    status("clReleaseSampler", || handles::release::<SamplerObj>(sampler.cast()))
}

/// `clGetSamplerInfo`: the core's answers; the reference count is the
/// handle's.
pub(crate) unsafe extern "C" fn clGetSamplerInfo(
    sampler_: cl_sampler,
    param_name: cl_sampler_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetSamplerInfo", param_value_size, param_value, param_value_size_ret, || {
            let s = sampler(sampler_)?;
            let value = match param_name {
                sampler_info::REFERENCE_COUNT => crate::info::reference_count(&s),
                _ => s.inner.sampler.info(param_name).cl()?,
            };
            Ok((value, Handles::of_context(&s.inner.context)))
        })
    }
}
