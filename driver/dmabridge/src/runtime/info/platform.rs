//! `clGetPlatformInfo`.

use crate::error::ClResult;

use super::extensions::{names, platform_extensions};
use super::params::platform_param;
use super::value::InfoValue;
use super::{unknown, OPENCL_VERSION};

/// `clGetPlatformInfo` of the dmabridge platform; `CL_INVALID_VALUE` for a
/// parameter not in [`platform_param`].
///
/// ```
/// use dmabridge::runtime::info::{self, platform_param, InfoValue, OPENCL_VERSION};
/// assert_eq!(info::platform_info(platform_param::NUMERIC_VERSION)?, InfoValue::U32(OPENCL_VERSION));
/// assert!(info::platform_info(0).is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn platform_info(param: u32) -> ClResult<InfoValue> {
    use platform_param::*;
    Ok(match param {
        PROFILE => InfoValue::Str(super::PROFILE.into()),
        VERSION => InfoValue::Str(format!("OpenCL 3.0 dmabridge {}", driver_version_short())),
        NAME | VENDOR => InfoValue::Str("dmabridge".into()),
        EXTENSIONS => InfoValue::Str(names(&platform_extensions(), " ")),
        EXTENSIONS_WITH_VERSION => InfoValue::NameVersions(platform_extensions()),
        HOST_TIMER_RESOLUTION => InfoValue::U64(0),
        NUMERIC_VERSION => InfoValue::U32(OPENCL_VERSION),
        ICD_SUFFIX_KHR => InfoValue::Str("DMABRIDGE".into()),
        _ => return Err(unknown("cl_platform_info", param)),
    })
}

/// "0.1" of the crate version "0.1.x".
pub(super) fn driver_version_short() -> &'static str {
    let v = env!("CARGO_PKG_VERSION");
    match v.match_indices('.').nth(1) {
        Some((i, _)) => &v[..i],
        None => v,
    }
}
