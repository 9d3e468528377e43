//! Contexts: a set of devices and the memory they share.

use std::sync::Arc;

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::Heap;

use super::device::Device;

/// A context (`cl_context`): its devices and its heap of USM and SVM
/// allocations. Held by `Arc`; clone to retain.
#[derive(Debug)]
pub struct Context {
    devices: Vec<Arc<Device>>,
    heap: Heap,
}

impl Context {
    /// A context over `devices` (`clCreateContext`). Fails with
    /// `CL_INVALID_VALUE` if the list is empty.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// assert!(ctx.has_device(Platform::get().cpu()));
    /// assert!(Context::new(&[]).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn new(devices: &[Arc<Device>]) -> ClResult<Arc<Context>> {
        if devices.is_empty() {
            return cl_err!(InvalidValue, "a context needs at least one device");
        }
        let mut list: Vec<Arc<Device>> = Vec::new();
        for d in devices {
            if !list.iter().any(|x| Arc::ptr_eq(x, d)) {
                list.push(d.clone());
            }
        }
        let heap = Heap::new()
            .map_err(|e| ClError::new(ClErrorKind::OutOfHostMemory, format!("reserving the context's heap: {e}")))?;
        Ok(Arc::new(Context { devices: list, heap }))
    }

    /// The context's devices.
    ///
    /// `CL_CONTEXT_DEVICES` (`clGetContextInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// // Duplicates are dropped.
    /// let ctx = Context::new(&[cpu.clone(), cpu.clone()])?;
    /// assert_eq!(ctx.devices().len(), 1);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn devices(&self) -> &[Arc<Device>] {
        &self.devices
    }

    /// True if `device` belongs to this context.
    ///
    /// The check behind the `CL_INVALID_DEVICE` of
    /// `clCreateCommandQueueWithProperties`, `clDeviceMemAllocINTEL` and
    /// `clCreateKernel`.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// assert!(ctx.has_device(cpu));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn has_device(&self, device: &Arc<Device>) -> bool {
        self.devices.iter().any(|d| Arc::ptr_eq(d, device))
    }

    /// The heap behind the context's host, shared and CPU-device allocations.
    ///
    /// It backs `clHostMemAllocINTEL`, `clDeviceMemAllocINTEL`,
    /// `clSharedMemAllocINTEL` and `clSVMAlloc`.
    ///
    /// ```
    /// use dmabridge::ext::usm;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let p = usm::host_mem_alloc(&ctx, &[], 100, 0)?;
    /// assert!(ctx.heap().lookup(p.as_ptr() as usize + 50).is_some());
    /// usm::mem_free(&ctx, p.as_ptr())?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn heap(&self) -> &Heap {
        &self.heap
    }
}
