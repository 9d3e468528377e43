//! The one path of every `clGet*Info` entry point: the query answers an
//! [`InfoValue`] (the core's answer, or for what only the ICD knows, such
//! as a handle's reference count or a properties array as the application
//! gave it, the ICD's own) together with the ICD objects whose handles the
//! answer may name ([`Handles`], the core's [`HandleEncoder`] hook);
//! [`get_info`] encodes it and applies the `param_value` rules once.

use std::ffi::c_void;
use std::sync::Arc;

use dmabridge::runtime::buffer::Buffer;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::info::{HandleEncoder, InfoValue};
use dmabridge::runtime::queue::Queue;
use opencl_sys::cl_int;

use crate::api::context::ContextObj;
use crate::api::memobj::MemObj;
use crate::api::queue::QueueObj;
use crate::entry::{info_bytes, status, Cl, ClRes};
use crate::handles::{self, device_handle, platform_handle, Obj};

/// The ICD objects an answer may name besides the platform and the devices
/// (which have one handle each for the process): the queried object's
/// context, queue, sub-buffer parent. The core's objects are matched to
/// them by identity; an object of the answer that none of them wraps has
/// no handle here (`CL_INVALID_VALUE`, never a wrong handle).
#[derive(Default)]
pub(crate) struct Handles {
    /// The context object of the queried object.
    pub context: Option<Arc<Obj<ContextObj>>>,
    /// The queue object of the queried object.
    pub queue: Option<Arc<Obj<QueueObj>>>,
    /// The memory object the queried object was made from.
    pub mem: Option<Arc<Obj<MemObj>>>,
}

impl Handles {
    /// The handles of an object of `context`.
    pub(crate) fn of_context(context: &Arc<Obj<ContextObj>>) -> Handles {
        Handles { context: Some(context.clone()), ..Handles::default() }
    }
}

/// A handle as the pointer-sized value the C answer holds.
fn value_of<T>(obj: &Arc<Obj<T>>) -> usize {
    handles::handle_of(obj) as usize
}

impl HandleEncoder for Handles {
    fn platform(&self) -> Option<usize> {
        Some(platform_handle() as usize)
    }

    fn device(&self, device: &Arc<Device>) -> Option<usize> {
        Some(device_handle(device) as usize).filter(|&h| h != 0)
    }

    fn context(&self, context: &Arc<Context>) -> Option<usize> {
        self.context.as_ref().filter(|c| Arc::ptr_eq(&c.inner.ctx, context)).map(value_of)
    }

    fn queue(&self, queue: &Arc<Queue>) -> Option<usize> {
        self.queue.as_ref().filter(|q| Arc::ptr_eq(&q.inner.queue, queue)).map(value_of)
    }

    fn mem(&self, mem: &Arc<Buffer>) -> Option<usize> {
        self.mem.as_ref().filter(|m| Arc::ptr_eq(&m.inner.buffer, mem)).map(value_of)
    }
}

/// A property of a properties array as the ICD keeps it: 8 bytes in C,
/// whatever its signedness (`cl_context_properties` is an `intptr_t`).
pub(crate) trait Property: Copy {
    /// The property's 64 bits.
    fn bits(self) -> u64;
}

impl Property for u64 {
    fn bits(self) -> u64 {
        self
    }
}

impl Property for isize {
    fn bits(self) -> u64 {
        self as u64
    }
}

/// A properties array as the ICD keeps it (as given, with its 0; empty for
/// NULL) in the answer's shape.
pub(crate) fn properties<P: Property>(props: &[P]) -> InfoValue {
    InfoValue::Properties(props.iter().map(|&p| p.bits()).collect())
}

/// A handle's reference count in the answer's shape.
pub(crate) fn reference_count<T>(obj: &Arc<Obj<T>>) -> InfoValue {
    InfoValue::U32(handles::reference_count(obj))
}

/// Runs a `clGet*Info` entry point named `entry`: `query` checks the
/// arguments and answers; the answer is written by the `param_value` rules
/// (`CL_INVALID_VALUE`, nothing written, if `param_value` is given and
/// shorter than the answer; `param_value_size_ret` gets the size).
///
/// # Safety
/// `param_value` is NULL or valid for writes of `param_value_size` bytes;
/// `param_value_size_ret` is NULL or valid for a write of a `size_t`.
pub(crate) unsafe fn get_info(
    entry: &'static str,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
    query: impl FnOnce() -> ClRes<(InfoValue, Handles)>,
) -> cl_int {
    status(entry, || {
        let (value, handles) = query()?;
        let bytes = value.encode(&handles).cl()?;
        // SAFETY: the caller's contract.
        unsafe { info_bytes(&bytes, param_value_size, param_value, param_value_size_ret) }
    })
}
