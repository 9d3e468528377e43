//! `clGetKernelInfo` and `clGetKernelWorkGroupInfo` of the built-in and
//! native kernels.

use std::sync::Arc;

use crate::error::ClResult;
use crate::runtime::kernel::Kernel;

use super::params::{kernel_param, kernel_work_group_param};
use super::value::InfoValue;
use super::{clamp_u32, unknown, MAX_WORK_GROUP_SIZE, MAX_WORK_ITEM_DIMENSIONS};

/// `clGetKernelInfo`. `CL_KERNEL_REFERENCE_COUNT` is the `Arc`'s strong
/// count; `CL_KERNEL_PROGRAM` is not answered here: programs are objects
/// of the C face, which answers it (`CL_INVALID_VALUE` here).
/// `CL_KERNEL_ATTRIBUTES` is empty: built-ins have no attributes.
///
/// ```
/// use dmabridge::runtime::info::{self, kernel_param, InfoValue};
/// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let k = Kernel::builtin(&ctx, Platform::get().cpu(), "copy_bytes")?;
/// assert_eq!(info::kernel_info(&k, kernel_param::FUNCTION_NAME)?, InfoValue::Str("copy_bytes".into()));
/// assert_eq!(info::kernel_info(&k, kernel_param::CONTEXT)?, InfoValue::Context(ctx.clone()));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn kernel_info(kernel: &Arc<Kernel>, param: u32) -> ClResult<InfoValue> {
    use kernel_param::*;
    Ok(match param {
        FUNCTION_NAME => InfoValue::Str(kernel.name().into()),
        NUM_ARGS => InfoValue::U32(kernel.num_args()),
        REFERENCE_COUNT => InfoValue::U32(clamp_u32(Arc::strong_count(kernel))),
        CONTEXT => InfoValue::Context(kernel.context().clone()),
        ATTRIBUTES => InfoValue::Str(String::new()),
        _ => return Err(unknown("cl_kernel_info", param)),
    })
}

/// `clGetKernelWorkGroupInfo` (the same for every kernel and device):
/// built-ins have no work-group shape of their own: any size up to
/// `CL_DEVICE_MAX_WORK_GROUP_SIZE`, no local or private memory;
/// `CL_KERNEL_GLOBAL_WORK_SIZE` is `SIZE_MAX` in each of the three
/// dimensions (the work-items, their product, must still fit a `size_t`).
///
/// ```
/// use dmabridge::runtime::info::{self, kernel_work_group_param, InfoValue, MAX_WORK_GROUP_SIZE};
/// let size = info::kernel_work_group_info(kernel_work_group_param::WORK_GROUP_SIZE)?;
/// assert_eq!(size, InfoValue::Usize(MAX_WORK_GROUP_SIZE));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn kernel_work_group_info(param: u32) -> ClResult<InfoValue> {
    use kernel_work_group_param::*;
    Ok(match param {
        WORK_GROUP_SIZE => InfoValue::Usize(MAX_WORK_GROUP_SIZE),
        COMPILE_WORK_GROUP_SIZE => InfoValue::Sizes(vec![0; 3]),
        LOCAL_MEM_SIZE | PRIVATE_MEM_SIZE => InfoValue::U64(0),
        PREFERRED_WORK_GROUP_SIZE_MULTIPLE => InfoValue::Usize(1),
        GLOBAL_WORK_SIZE => InfoValue::Sizes(vec![usize::MAX; MAX_WORK_ITEM_DIMENSIONS as usize]),
        _ => return Err(unknown("cl_kernel_work_group_info", param)),
    })
}
