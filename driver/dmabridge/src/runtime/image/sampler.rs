//! Sampler objects (`cl_sampler`): how a kernel reads an image
//! (normalised coordinates, addressing mode, filter). The runtime keeps
//! and reports them; kernels that sample images read them.

use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::context::Context;
use crate::runtime::info::InfoValue;

use super::image_limits;

/// `cl_sampler_info` values and property names.
pub mod sampler_info {
    /// `CL_SAMPLER_REFERENCE_COUNT`.
    pub const REFERENCE_COUNT: u32 = 0x1150;
    /// `CL_SAMPLER_CONTEXT`.
    pub const CONTEXT: u32 = 0x1151;
    /// `CL_SAMPLER_NORMALIZED_COORDS` (also a property).
    pub const NORMALIZED_COORDS: u32 = 0x1152;
    /// `CL_SAMPLER_ADDRESSING_MODE` (also a property).
    pub const ADDRESSING_MODE: u32 = 0x1153;
    /// `CL_SAMPLER_FILTER_MODE` (also a property).
    pub const FILTER_MODE: u32 = 0x1154;
    /// `CL_SAMPLER_PROPERTIES`.
    pub const PROPERTIES: u32 = 0x1158;
}

/// `cl_addressing_mode` values.
pub mod addressing {
    /// `CL_ADDRESS_NONE`.
    pub const NONE: u32 = 0x1130;
    /// `CL_ADDRESS_CLAMP_TO_EDGE`.
    pub const CLAMP_TO_EDGE: u32 = 0x1131;
    /// `CL_ADDRESS_CLAMP`.
    pub const CLAMP: u32 = 0x1132;
    /// `CL_ADDRESS_REPEAT`.
    pub const REPEAT: u32 = 0x1133;
    /// `CL_ADDRESS_MIRRORED_REPEAT`.
    pub const MIRRORED_REPEAT: u32 = 0x1134;
}

/// `cl_filter_mode` values.
pub mod filter {
    /// `CL_FILTER_NEAREST`.
    pub const NEAREST: u32 = 0x1140;
    /// `CL_FILTER_LINEAR`.
    pub const LINEAR: u32 = 0x1141;
}

/// A sampler. Held as `Arc<Sampler>`: clone to retain, drop to release.
#[derive(Debug)]
pub struct Sampler {
    context: Arc<Context>,
    /// `CL_SAMPLER_NORMALIZED_COORDS`.
    pub normalized_coords: bool,
    /// `CL_SAMPLER_ADDRESSING_MODE`.
    pub addressing_mode: u32,
    /// `CL_SAMPLER_FILTER_MODE`.
    pub filter_mode: u32,
    /// `CL_SAMPLER_PROPERTIES`: as given (empty for `clCreateSampler`).
    properties: Vec<u64>,
}

impl Sampler {
    /// `clCreateSampler`.
    ///
    /// Errors: `CL_INVALID_VALUE` for an unknown addressing or filter mode;
    /// `CL_INVALID_OPERATION` if no device of the context supports images.
    ///
    /// ```
    /// use dmabridge::runtime::image::sampler::{addressing, filter, Sampler};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let s = Sampler::create(&ctx, false, addressing::CLAMP_TO_EDGE, filter::LINEAR)?;
    /// assert!(!s.normalized_coords);
    /// assert!(Sampler::create(&ctx, false, 0, filter::LINEAR).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn create(
        ctx: &Arc<Context>,
        normalized: bool,
        addressing_mode: u32,
        filter_mode: u32,
    ) -> ClResult<Arc<Sampler>> {
        Sampler::make(ctx, normalized, addressing_mode, filter_mode, Vec::new())
    }

    /// `clCreateSamplerWithProperties`: `properties` are (name, value)
    /// pairs without the terminating 0 (`CL_SAMPLER_NORMALIZED_COORDS`,
    /// `_ADDRESSING_MODE`, `_FILTER_MODE`; defaults true, `CL_ADDRESS_CLAMP`,
    /// `CL_FILTER_NEAREST`), kept as given for `CL_SAMPLER_PROPERTIES`.
    ///
    /// Errors: `CL_INVALID_VALUE` for an unknown or repeated name or a bad
    /// value; `CL_INVALID_OPERATION` as [`Sampler::create`].
    ///
    /// ```
    /// use dmabridge::runtime::image::sampler::{filter, sampler_info, Sampler};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let s = Sampler::with_properties(&ctx, &[(sampler_info::FILTER_MODE as u64, filter::LINEAR as u64)])?;
    /// assert_eq!((s.normalized_coords, s.filter_mode), (true, filter::LINEAR));
    /// assert!(Sampler::with_properties(&ctx, &[(0x1234, 1)]).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn with_properties(ctx: &Arc<Context>, properties: &[(u64, u64)]) -> ClResult<Arc<Sampler>> {
        let (mut normalized, mut addr, mut filt) = (true, addressing::CLAMP, filter::NEAREST);
        let mut seen = Vec::new();
        for &(name, value) in properties {
            if seen.contains(&name) {
                return cl_err!(InvalidValue, "sampler property {name:#x} is given twice");
            }
            seen.push(name);
            match u32::try_from(name).unwrap_or(0) {
                sampler_info::NORMALIZED_COORDS => match value {
                    0 | 1 => normalized = value == 1,
                    _ => {
                        return cl_err!(InvalidValue, "CL_SAMPLER_NORMALIZED_COORDS {value} is not CL_TRUE or CL_FALSE")
                    }
                },
                sampler_info::ADDRESSING_MODE => addr = u32::try_from(value).unwrap_or(0),
                sampler_info::FILTER_MODE => filt = u32::try_from(value).unwrap_or(0),
                _ => {
                    return cl_err!(
                        InvalidValue,
                        "sampler property {name:#x} is unknown (CL_SAMPLER_NORMALIZED_COORDS, _ADDRESSING_MODE, \
                         _FILTER_MODE)"
                    )
                }
            }
        }
        let flat = properties.iter().flat_map(|&(n, v)| [n, v]).chain(std::iter::once(0)).collect();
        Sampler::make(ctx, normalized, addr, filt, flat)
    }

    fn make(
        ctx: &Arc<Context>,
        normalized: bool,
        addr: u32,
        filt: u32,
        properties: Vec<u64>,
    ) -> ClResult<Arc<Sampler>> {
        if !(addressing::NONE..=addressing::MIRRORED_REPEAT).contains(&addr) {
            return cl_err!(InvalidValue, "addressing mode {addr:#x} is not a cl_addressing_mode (0x1130..=0x1134)");
        }
        if filt != filter::NEAREST && filt != filter::LINEAR {
            return cl_err!(InvalidValue, "filter mode {filt:#x} is not CL_FILTER_NEAREST or CL_FILTER_LINEAR");
        }
        if !ctx.devices().iter().any(|d| image_limits(d).is_some()) {
            return cl_err!(InvalidOperation, "no device of the context supports images, so none takes samplers");
        }
        Ok(Arc::new(Sampler {
            context: ctx.clone(),
            normalized_coords: normalized,
            addressing_mode: addr,
            filter_mode: filt,
            properties,
        }))
    }

    /// Its context.
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// `clGetSamplerInfo`.
    ///
    /// Errors: `CL_INVALID_VALUE` for an unknown `param`.
    ///
    /// ```
    /// use dmabridge::runtime::image::sampler::{addressing, filter, sampler_info, Sampler};
    /// use dmabridge::runtime::info::InfoValue;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let s = Sampler::create(&ctx, true, addressing::REPEAT, filter::NEAREST)?;
    /// assert_eq!(s.info(sampler_info::ADDRESSING_MODE)?, InfoValue::U32(addressing::REPEAT));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn info(self: &Arc<Self>, param: u32) -> ClResult<InfoValue> {
        use sampler_info::*;
        Ok(match param {
            REFERENCE_COUNT => InfoValue::U32(Arc::strong_count(self) as u32),
            CONTEXT => InfoValue::Context(self.context.clone()),
            NORMALIZED_COORDS => InfoValue::Bool(self.normalized_coords),
            ADDRESSING_MODE => InfoValue::U32(self.addressing_mode),
            FILTER_MODE => InfoValue::U32(self.filter_mode),
            PROPERTIES => InfoValue::Properties(self.properties.clone()),
            _ => return cl_err!(InvalidValue, "{param:#x} is not a cl_sampler_info"),
        })
    }
}
