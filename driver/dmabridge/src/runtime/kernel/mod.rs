//! Kernels without an OpenCL C compiler: the built-in kernels a device
//! offers (`clCreateProgramWithBuiltInKernels` + `clCreateKernel`) and native
//! kernels (a Rust closure, as `clEnqueueNativeKernel`), with the argument
//! and execution-info calls of `cl_intel_unified_shared_memory` (seed 000).
//!
//! Arguments are captured when a launch is enqueued ([`launch`]): setting
//! them again afterwards does not change launches already enqueued.

mod builtin;
mod builtin_image;
mod image_args;
pub mod launch;
mod range;
/// One YUYV line to 4-byte pixels, in 16-bit SIMD lanes.
mod yuyv;

use std::sync::{Arc, Mutex, MutexGuard};

use crate::cl_err;
use crate::error::ClResult;
use crate::sync;

use super::buffer::Buffer;
use super::context::Context;
use super::device::{Device, DeviceType};
use super::image::Image;
use super::queue::Completion;

use builtin::{Builtin, CPU_BUILTINS, DMA_BUILTINS};

pub use builtin::{adler32, yuv_to_rgb};
pub use image_args::ImageAt;
pub use launch::{enqueue_native_nd_range, enqueue_nd_range, enqueue_range, enqueue_task};
pub use range::NdRange;

/// `cl_kernel_exec_info` values of `cl_intel_unified_shared_memory`.
pub mod exec_info {
    /// `CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL` (`cl_bool`).
    pub const INDIRECT_HOST_ACCESS: u32 = 0x4200;
    /// `CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL` (`cl_bool`).
    pub const INDIRECT_DEVICE_ACCESS: u32 = 0x4201;
    /// `CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL` (`cl_bool`).
    pub const INDIRECT_SHARED_ACCESS: u32 = 0x4202;
    /// `CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL` (an array of pointers).
    pub const USM_PTRS: u32 = 0x4203;
}

/// The `cl_command_type` of kernel launches (`CL_EVENT_COMMAND_TYPE`).
pub mod kernel_command_type {
    pub use crate::runtime::event::command_type::{NATIVE_KERNEL, NDRANGE_KERNEL, TASK};
}

/// What an argument is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A USM or SVM pointer (`clSetKernelArgMemPointerINTEL`,
    /// `clSetKernelArgSVMPointer`) or a buffer object (`clSetKernelArg`).
    Pointer,
    /// A scalar of this many bytes (`clSetKernelArg`).
    Scalar(usize),
    /// An image object (`clSetKernelArg` with an image `cl_mem`,
    /// [`Kernel::set_arg_image`]).
    Image,
}

/// The value of an argument, as a launch captured it.
///
/// A kernel body never sees [`Buffer`](KernelArgValue::Buffer): a launch
/// passes a buffer argument as the [`Pointer`](KernelArgValue::Pointer) to
/// the buffer's bytes on the queue's device.
#[derive(Debug, Clone)]
pub enum KernelArgValue {
    /// A pointer (its address; 0 for NULL).
    Pointer(usize),
    /// The bytes of a scalar, in the C (native-endian) representation.
    Scalar(Vec<u8>),
    /// A buffer object (`clSetKernelArg` with a `cl_mem`), held until the
    /// argument is set again and by every launch that captured it.
    Buffer(Arc<Buffer>),
    /// An image object, held like a buffer; a kernel body sees it as
    /// [`ImageAt`](KernelArgValue::ImageAt).
    Image(Arc<Image>),
    /// An image where a launch placed it: its pixels' address on the
    /// queue's device, and the image (format, size, pitches).
    ImageAt(ImageAt),
}

impl PartialEq for KernelArgValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (KernelArgValue::Pointer(a), KernelArgValue::Pointer(b)) => a == b,
            (KernelArgValue::Scalar(a), KernelArgValue::Scalar(b)) => a == b,
            (KernelArgValue::Buffer(a), KernelArgValue::Buffer(b)) => Arc::ptr_eq(a, b),
            (KernelArgValue::Image(a), KernelArgValue::Image(b)) => Arc::ptr_eq(a, b),
            (KernelArgValue::ImageAt(a), KernelArgValue::ImageAt(b)) => {
                a.ptr == b.ptr && Arc::ptr_eq(&a.image, &b.image)
            }
            _ => false,
        }
    }
}

impl Eq for KernelArgValue {}

impl KernelArgValue {
    /// The pointer, if this is a pointer argument.
    ///
    /// As set by `clSetKernelArgMemPointerINTEL`.
    ///
    /// ```
    /// use dmabridge::runtime::kernel::KernelArgValue;
    /// assert_eq!(KernelArgValue::Pointer(0x1000).as_ptr(), Some(0x1000 as *const u8));
    /// assert_eq!(KernelArgValue::Scalar(vec![0; 4]).as_ptr(), None);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn as_ptr(&self) -> Option<*const u8> {
        match self {
            KernelArgValue::Pointer(p) => Some(*p as *const u8),
            KernelArgValue::ImageAt(at) => Some(at.ptr.as_ptr() as *const u8),
            KernelArgValue::Scalar(_) | KernelArgValue::Buffer(_) | KernelArgValue::Image(_) => None,
        }
    }

    /// The bytes, if this is a scalar argument.
    ///
    /// As set by `clSetKernelArg`.
    ///
    /// ```
    /// use dmabridge::runtime::kernel::KernelArgValue;
    /// assert_eq!(KernelArgValue::Scalar(vec![1, 2]).as_bytes(), Some(&[1u8, 2][..]));
    /// assert_eq!(KernelArgValue::Pointer(0).as_bytes(), None);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            KernelArgValue::Scalar(b) => Some(b),
            _ => None,
        }
    }

    /// A 4-byte scalar as a `uint`.
    ///
    /// As set by `clSetKernelArg` with a `cl_uint`.
    ///
    /// ```
    /// use dmabridge::runtime::kernel::KernelArgValue;
    /// assert_eq!(KernelArgValue::Scalar(7u32.to_ne_bytes().to_vec()).as_u32(), Some(7));
    /// assert_eq!(KernelArgValue::Scalar(7u64.to_ne_bytes().to_vec()).as_u32(), None);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn as_u32(&self) -> Option<u32> {
        self.as_bytes()?.try_into().ok().map(u32::from_ne_bytes)
    }

    /// An 8-byte scalar as a `ulong`.
    ///
    /// As set by `clSetKernelArg` with a `cl_ulong`.
    ///
    /// ```
    /// use dmabridge::runtime::kernel::KernelArgValue;
    /// assert_eq!(KernelArgValue::Scalar(7u64.to_ne_bytes().to_vec()).as_u64(), Some(7));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn as_u64(&self) -> Option<u64> {
        self.as_bytes()?.try_into().ok().map(u64::from_ne_bytes)
    }
}

/// The body of a native kernel: called once per launch with the captured
/// arguments; `Err` carries the negative CL code its event ends with.
pub type NativeFn = Arc<dyn Fn(&[KernelArgValue]) -> Result<(), i32> + Send + Sync>;

/// The body of an asynchronous native kernel: starts the launch with the
/// captured arguments, without blocking, and calls the [`Completion`] once it
/// ended (see [`Queue::enqueue_async_with_use`](crate::runtime::queue::Queue::enqueue_async_with_use)).
pub type AsyncNativeFn = Arc<dyn Fn(&[KernelArgValue], Completion) + Send + Sync>;

#[derive(Clone)]
enum Body {
    Builtin(&'static Builtin),
    Native(NativeFn),
    NativeAsync(AsyncNativeFn),
}

/// The arguments and execution info of a kernel (what a launch captures).
#[derive(Debug, Clone, Default)]
pub(crate) struct ArgState {
    pub args: Vec<Option<KernelArgValue>>,
    pub usm_ptrs: Vec<usize>,
    /// Indirect host, device and shared access.
    pub indirect: [bool; 3],
}

/// A kernel (`cl_kernel`), held as `Arc<Kernel>`: clone to retain.
pub struct Kernel {
    context: Arc<Context>,
    name: &'static str,
    body: Body,
    kinds: Vec<ArgKind>,
    state: Mutex<ArgState>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel").field("name", &self.name).field("args", &self.kinds).finish_non_exhaustive()
    }
}

/// The built-in kernels of `device` (`CL_DEVICE_BUILT_IN_KERNELS`, as a list).
/// The CPU device offers `checksum_adler32`, `fill_pattern_u32`,
/// `yuyv_to_rgba`, `yuyv_to_rgba_strided`, `yuyv_to_bgrx_strided` (`src`,
/// `dst`, then `width`, `height`, `src_stride`, `dst_stride` as uints: padded
/// lines, odd widths and heights), `yuyv_to_rgba_image` (a `CL_YUYV_INTEL`
/// image in, a `CL_RGBA` image out, each at its own row pitch) and
/// `copy_bytes`; a device with a DMA engine (edu)
/// offers `dma_copy(dst pointer, src pointer, size ulong)`, which copies by
/// DMA; other devices none.
///
/// ```
/// use dmabridge::runtime::{kernel, platform::Platform};
/// assert!(kernel::builtin_kernel_names(Platform::get().cpu()).contains(&"copy_bytes"));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn builtin_kernel_names(device: &Device) -> Vec<&'static str> {
    builtins_of(device).iter().map(|b| b.name).collect()
}

/// `CL_DEVICE_BUILT_IN_KERNELS` as `clGetDeviceInfo` answers it: the names
/// separated by `;` (empty when there are none).
///
/// ```
/// use dmabridge::runtime::{kernel, platform::Platform};
/// let names = kernel::builtin_kernels_string(Platform::get().cpu());
/// assert!(names.split(';').any(|n| n == "fill_pattern_u32"));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn builtin_kernels_string(device: &Device) -> String {
    builtin_kernel_names(device).join(";")
}

/// `CL_INVALID_ARG_SIZE` for a native kernel's zero-sized scalar kind.
fn check_native_kinds(kinds: &[ArgKind]) -> ClResult<()> {
    match kinds.iter().position(|k| *k == ArgKind::Scalar(0)) {
        Some(i) => cl_err!(InvalidArgSize, "argument {i} is a scalar of 0 bytes"),
        None => Ok(()),
    }
}

fn builtins_of(device: &Device) -> &'static [Builtin] {
    match device.device_type {
        DeviceType::Cpu => CPU_BUILTINS,
        DeviceType::Accelerator if device.backend().is_some() => DMA_BUILTINS,
        DeviceType::Accelerator => &[],
    }
}

impl Kernel {
    /// A built-in kernel of `device` (`clCreateProgramWithBuiltInKernels`
    /// then `clCreateKernel`).
    ///
    /// Errors: `CL_INVALID_DEVICE` if `device` is not in `ctx`;
    /// `CL_INVALID_VALUE` if the device has no built-in of that name (as
    /// `clCreateProgramWithBuiltInKernels` answers a name no device of its
    /// list supports), e.g. a CPU built-in on edu or `dma_copy` on the CPU.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let k = Kernel::builtin(&ctx, cpu, "copy_bytes")?;
    /// assert_eq!(k.num_args(), 3);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn builtin(ctx: &Arc<Context>, device: &Arc<Device>, name: &str) -> ClResult<Arc<Kernel>> {
        if !ctx.has_device(device) {
            return cl_err!(InvalidDevice, "device {:?} is not in the context", device.name);
        }
        let Some(b) = builtins_of(device).iter().find(|b| b.name == name) else {
            return cl_err!(
                InvalidValue,
                "device {:?} has no built-in kernel {name:?} (it offers {:?})",
                device.name,
                builtin_kernels_string(device)
            );
        };
        Ok(Kernel::with(ctx, b.name, Body::Builtin(b), b.args.to_vec()))
    }

    /// A native kernel: `f` runs once per launch ([`enqueue_task`]) with
    /// the arguments captured at enqueue, whose kinds `arg_kinds` fixes.
    /// Fails with `CL_INVALID_ARG_SIZE` for a zero-sized scalar kind.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::kernel::{ArgKind, Kernel, KernelArgValue};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let f = Arc::new(|args: &[KernelArgValue]| if args[0].as_u32() == Some(42) { Ok(()) } else { Err(-5) });
    /// let k = Kernel::native(&ctx, f, vec![ArgKind::Scalar(4)])?;
    /// assert!(k.is_native());
    /// k.set_arg_scalar(0, &42u32.to_ne_bytes())?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn native(ctx: &Arc<Context>, f: NativeFn, arg_kinds: Vec<ArgKind>) -> ClResult<Arc<Kernel>> {
        check_native_kinds(&arg_kinds)?;
        Ok(Kernel::with(ctx, "", Body::Native(f), arg_kinds))
    }

    /// A native kernel as [`Kernel::native`] that starts with this
    /// kernel's execution info (`USM_PTRS` and the indirect-access flags):
    /// a face that runs kernels of another executor (the ICD's OpenCL C
    /// kernels) keeps their execution info on one kernel and makes a
    /// native kernel for each launch. Errors as [`Kernel::native`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::kernel::{exec_info, ArgKind, Kernel};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let holder = Kernel::native(&ctx, Arc::new(|_: &[_]| Ok(())), Vec::new())?;
    /// holder.set_exec_info_indirect_access(exec_info::INDIRECT_HOST_ACCESS, true)?;
    /// let launch = holder.native_with_exec_info(Arc::new(|_: &[_]| Ok(())), vec![ArgKind::Pointer])?;
    /// assert_eq!(launch.num_args(), 1);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn native_with_exec_info(&self, f: NativeFn, arg_kinds: Vec<ArgKind>) -> ClResult<Arc<Kernel>> {
        self.with_exec_info(Kernel::native(&self.context, f, arg_kinds)?)
    }

    /// As [`Kernel::native_with_exec_info`] with an asynchronous body: a
    /// launch starts the kernel on its executor and the executor ends the
    /// command (no thread waits for it), unless the launch holds buffer
    /// arguments, whose locks a queue worker holds until it ended.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::event::Event;
    /// use dmabridge::runtime::kernel::{self, Kernel};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let holder = Kernel::native(&ctx, Arc::new(|_: &[_]| Ok(())), Vec::new())?;
    /// let launch = holder.native_async_with_exec_info(Arc::new(|_: &[_], done| done.complete(Ok(()))), Vec::new())?;
    /// // SAFETY: the kernel reaches no memory.
    /// let ev = unsafe { kernel::enqueue_native_nd_range(&queue, &launch, &[])? };
    /// Event::wait(&[ev])?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn native_async_with_exec_info(&self, f: AsyncNativeFn, arg_kinds: Vec<ArgKind>) -> ClResult<Arc<Kernel>> {
        check_native_kinds(&arg_kinds)?;
        self.with_exec_info(Kernel::with(&self.context, "", Body::NativeAsync(f), arg_kinds))
    }

    /// `k` with this kernel's execution info.
    fn with_exec_info(&self, k: Arc<Kernel>) -> ClResult<Arc<Kernel>> {
        let from = self.snapshot();
        let mut to = k.state();
        to.usm_ptrs = from.usm_ptrs;
        to.indirect = from.indirect;
        drop(to);
        Ok(k)
    }

    fn with(ctx: &Arc<Context>, name: &'static str, body: Body, kinds: Vec<ArgKind>) -> Arc<Kernel> {
        let state = Mutex::new(ArgState { args: vec![None; kinds.len()], ..ArgState::default() });
        Arc::new(Kernel { context: ctx.clone(), name, body, kinds, state })
    }

    /// `clCloneKernel`: a new kernel of the same code, context and argument
    /// kinds, with a copy of the arguments and execution info set so far;
    /// setting either on one kernel afterwards does not change the other.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let k = Kernel::builtin(&ctx, cpu, "fill_pattern_u32")?;
    /// k.set_arg_scalar(1, &16u64.to_ne_bytes())?;
    /// let copy = k.clone_kernel();
    /// assert_eq!((copy.name(), copy.num_args()), ("fill_pattern_u32", 3));
    /// k.set_arg_scalar(1, &32u64.to_ne_bytes())?; // the copy keeps 16
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn clone_kernel(&self) -> Arc<Kernel> {
        Arc::new(Kernel {
            context: self.context.clone(),
            name: self.name,
            body: self.body.clone(),
            kinds: self.kinds.clone(),
            state: Mutex::new(self.snapshot()),
        })
    }

    /// `CL_KERNEL_FUNCTION_NAME` (empty for a native kernel).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// assert_eq!(Kernel::builtin(&ctx, cpu, "copy_bytes")?.name(), "copy_bytes");
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `CL_KERNEL_NUM_ARGS`.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// assert_eq!(Kernel::builtin(&ctx, cpu, "fill_pattern_u32")?.num_args(), 3);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn num_args(&self) -> u32 {
        self.kinds.len() as u32
    }

    /// The kind of every argument, in order.
    ///
    /// What `clSetKernelArg` (scalars) and `clSetKernelArgMemPointerINTEL` (pointers) accept at each index.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// use dmabridge::runtime::kernel::ArgKind;
    /// let k = Kernel::builtin(&ctx, cpu, "copy_bytes")?;
    /// assert_eq!(k.arg_kinds(), &[ArgKind::Pointer, ArgKind::Pointer, ArgKind::Scalar(8)]);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn arg_kinds(&self) -> &[ArgKind] {
        &self.kinds
    }

    /// `CL_KERNEL_CONTEXT`.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// assert!(std::sync::Arc::ptr_eq(Kernel::builtin(&ctx, cpu, "copy_bytes")?.context(), &ctx));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// True for a native kernel.
    ///
    /// Native kernels launch as `clEnqueueNativeKernel` (see [`enqueue_task`]).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// assert!(!Kernel::builtin(&ctx, cpu, "copy_bytes")?.is_native());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn is_native(&self) -> bool {
        matches!(self.body, Body::Native(_) | Body::NativeAsync(_))
    }

    fn state(&self) -> MutexGuard<'_, ArgState> {
        sync::lock(&self.state)
    }

    fn kind(&self, index: u32) -> ClResult<ArgKind> {
        match self.kinds.get(index as usize) {
            Some(k) => Ok(*k),
            None => {
                cl_err!(InvalidArgIndex, "arg_index {index}: kernel {:?} has {} arguments", self.name, self.kinds.len())
            }
        }
    }

    /// `clSetKernelArgMemPointerINTEL` (and `clSetKernelArgSVMPointer`):
    /// argument `index` is `ptr`. NULL is allowed, as in OpenCL; a built-in
    /// refuses it at launch if it would access memory through it.
    ///
    /// Errors: `CL_INVALID_ARG_INDEX` for an index past the last argument;
    /// `CL_INVALID_ARG_VALUE` if the argument is not a pointer.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// use dmabridge::ext::usm;
    /// let k = Kernel::builtin(&ctx, cpu, "copy_bytes")?;
    /// let (dst, src) = (usm::host_mem_alloc(&ctx, &[], 64, 0)?, usm::host_mem_alloc(&ctx, &[], 64, 0)?);
    /// k.set_arg_mem_pointer(0, dst.as_ptr())?;
    /// k.set_arg_mem_pointer(1, src.as_ptr())?;
    /// assert!(k.set_arg_mem_pointer(2, dst.as_ptr()).is_err()); // a scalar
    /// usm::mem_free(&ctx, dst.as_ptr())?;
    /// usm::mem_free(&ctx, src.as_ptr())?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_arg_mem_pointer(&self, index: u32, ptr: *const u8) -> ClResult<()> {
        match self.kind(index)? {
            ArgKind::Pointer => {
                self.state().args[index as usize] = Some(KernelArgValue::Pointer(ptr as usize));
                Ok(())
            }
            ArgKind::Scalar(n) => cl_err!(InvalidArgValue, "argument {index} is a {n}-byte scalar, not a pointer"),
            ArgKind::Image => cl_err!(InvalidArgValue, "argument {index} is an image: set it with an image object"),
        }
    }

    /// `clSetKernelArg` with a buffer object for a pointer argument: a
    /// launch passes the address of the buffer's bytes on the queue's device
    /// (a sub-buffer's, at its origin), made current there before the kernel
    /// runs; afterwards that device holds the buffer's current data (the
    /// kernel may have written it). The kernel holds `buffer` until the
    /// argument is set again. A NULL buffer is
    /// [`set_arg_mem_pointer`](Self::set_arg_mem_pointer) with NULL.
    ///
    /// Errors: `CL_INVALID_ARG_INDEX` for an index past the last argument;
    /// `CL_INVALID_ARG_VALUE` if the argument is a scalar;
    /// `CL_INVALID_MEM_OBJECT` for a buffer of another context.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let k = Kernel::builtin(&ctx, cpu, "fill_pattern_u32")?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 256, std::ptr::null_mut()) }?;
    /// k.set_arg_buffer(0, &b)?;
    /// assert!(k.set_arg_buffer(1, &b).is_err()); // a scalar
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_arg_buffer(&self, index: u32, buffer: &Arc<Buffer>) -> ClResult<()> {
        match self.kind(index)? {
            ArgKind::Pointer if !Arc::ptr_eq(buffer.context(), &self.context) => {
                cl_err!(InvalidMemObject, "argument {index}: the buffer belongs to another context than the kernel")
            }
            ArgKind::Pointer => {
                self.state().args[index as usize] = Some(KernelArgValue::Buffer(buffer.clone()));
                Ok(())
            }
            ArgKind::Scalar(n) => cl_err!(InvalidArgValue, "argument {index} is a {n}-byte scalar, not a buffer"),
            ArgKind::Image => cl_err!(
                InvalidMemObject,
                "argument {index} is an image, and a buffer is not one: make an image over the buffer (clCreateImage with image_desc.buffer) and pass that"
            ),
        }
    }

    /// `clSetKernelArg` for a scalar argument: its bytes, in the C
    /// representation (copied).
    ///
    /// Errors: `CL_INVALID_ARG_INDEX` for an index past the last argument;
    /// `CL_INVALID_ARG_VALUE` if the argument is a pointer;
    /// `CL_INVALID_ARG_SIZE` if `bytes` is not the scalar's size.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let k = Kernel::builtin(&ctx, cpu, "fill_pattern_u32")?;
    /// k.set_arg_scalar(1, &64u64.to_ne_bytes())?; // count: a ulong
    /// k.set_arg_scalar(2, &0xdead_beefu32.to_ne_bytes())?; // pattern: a uint
    /// assert!(k.set_arg_scalar(2, &1u64.to_ne_bytes()).is_err()); // wrong size
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_arg_scalar(&self, index: u32, bytes: &[u8]) -> ClResult<()> {
        match self.kind(index)? {
            ArgKind::Pointer => {
                cl_err!(InvalidArgValue, "argument {index} is a pointer: set it with clSetKernelArgMemPointerINTEL")
            }
            ArgKind::Image => cl_err!(InvalidArgValue, "argument {index} is an image: set it with an image object"),
            ArgKind::Scalar(n) if n != bytes.len() => {
                cl_err!(InvalidArgSize, "argument {index} is a {n}-byte scalar, not {} bytes", bytes.len())
            }
            ArgKind::Scalar(_) => {
                self.state().args[index as usize] = Some(KernelArgValue::Scalar(bytes.to_vec()));
                Ok(())
            }
        }
    }

    /// `clSetKernelExecInfo(CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL)`: the
    /// allocations the kernel reaches other than through its arguments;
    /// replaces the previous list. A launch counts each as used in whole
    /// (a pointer outside every allocation counts as its own byte).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// use dmabridge::ext::usm;
    /// let k = Kernel::builtin(&ctx, cpu, "copy_bytes")?;
    /// let table = usm::shared_mem_alloc(&ctx, None, &[], 256, 0)?;
    /// k.set_exec_info_usm_ptrs(&[table.as_ptr().cast_const()]);
    /// usm::mem_free(&ctx, table.as_ptr())?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_exec_info_usm_ptrs(&self, ptrs: &[*const u8]) {
        self.state().usm_ptrs = ptrs.iter().map(|&p| p as usize).collect();
    }

    /// `clSetKernelExecInfo` with one of the indirect-access flags
    /// ([`exec_info::INDIRECT_HOST_ACCESS`], `..._DEVICE_...`,
    /// `..._SHARED_...`). A launch with any of them set counts as using every
    /// allocation (`clMemBlockingFreeINTEL` waits for it).
    ///
    /// Errors: `CL_INVALID_VALUE` for any other `param`.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// use dmabridge::runtime::kernel::exec_info;
    /// let k = Kernel::builtin(&ctx, cpu, "copy_bytes")?;
    /// k.set_exec_info_indirect_access(exec_info::INDIRECT_HOST_ACCESS, true)?;
    /// assert!(k.set_exec_info_indirect_access(exec_info::USM_PTRS, true).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_exec_info_indirect_access(&self, param: u32, enable: bool) -> ClResult<()> {
        let i = match param {
            exec_info::INDIRECT_HOST_ACCESS => 0,
            exec_info::INDIRECT_DEVICE_ACCESS => 1,
            exec_info::INDIRECT_SHARED_ACCESS => 2,
            _ => return cl_err!(InvalidValue, "{param:#x} is not an indirect-access flag (0x4200, 0x4201, 0x4202)"),
        };
        self.state().indirect[i] = enable;
        Ok(())
    }

    /// `clSetKernelExecInfo`, decoding the C representation of the value: a
    /// `cl_bool` (4 bytes, non-zero is true) for the three indirect-access
    /// flags, an array of pointers for `CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL`.
    ///
    /// Errors: `CL_INVALID_VALUE` for an unknown `param`, or a value whose
    /// size is not 4 (flags) or a multiple of the pointer size (USM_PTRS).
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, kernel::Kernel, platform::Platform};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// use dmabridge::runtime::kernel::exec_info;
    /// let k = Kernel::builtin(&ctx, cpu, "copy_bytes")?;
    /// // A cl_bool, as the C face passes it.
    /// k.set_exec_info(exec_info::INDIRECT_SHARED_ACCESS, &1u32.to_ne_bytes())?;
    /// // An array of pointers.
    /// let buf = [0u8; 16];
    /// k.set_exec_info(exec_info::USM_PTRS, &(buf.as_ptr() as usize).to_ne_bytes())?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_exec_info(&self, param: u32, value: &[u8]) -> ClResult<()> {
        const PTR: usize = std::mem::size_of::<usize>();
        match param {
            exec_info::INDIRECT_HOST_ACCESS | exec_info::INDIRECT_DEVICE_ACCESS | exec_info::INDIRECT_SHARED_ACCESS => {
                let Ok(b) = <[u8; 4]>::try_from(value) else {
                    return cl_err!(
                        InvalidValue,
                        "param {param:#x} takes a cl_bool (4 bytes), not {} bytes",
                        value.len()
                    );
                };
                self.set_exec_info_indirect_access(param, u32::from_ne_bytes(b) != 0)
            }
            exec_info::USM_PTRS => {
                if value.len() % PTR != 0 {
                    return cl_err!(
                        InvalidValue,
                        "CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL takes an array of pointers: {} bytes is not a multiple of {PTR}",
                        value.len()
                    );
                }
                let ptrs: Vec<*const u8> = value
                    .chunks_exact(PTR)
                    .map(|c| usize::from_ne_bytes(c.try_into().expect("chunk of pointer size")) as *const u8)
                    .collect();
                self.set_exec_info_usm_ptrs(&ptrs);
                Ok(())
            }
            _ => cl_err!(InvalidValue, "{param:#x} is not a kernel execution info of this platform (0x4200..=0x4203)"),
        }
    }

    /// The arguments and execution info now (what a launch captures).
    pub(crate) fn snapshot(&self) -> ArgState {
        self.state().clone()
    }
}
