//! Kernels from source (PoCL's, [`pocl::kernel`]):
//! their arguments as dmabridge keeps them, and a launch as a dmabridge
//! command.
//!
//! A launch is a native kernel of the core made for it
//! ([`Kernel::native_async_with_exec_info`](crate::runtime::kernel::Kernel::native_async_with_exec_info),
//! enqueued by [`enqueue_native_nd_range`](crate::runtime::kernel::enqueue_native_nd_range)):
//! the core captures the arguments, makes each buffer argument current on
//! the CPU device and passes its address (its pages themselves), brackets
//! imported dma-bufs with `DMA_BUF_IOCTL_SYNC`, declares the USM memory the
//! launch uses (blocking frees wait for it) and orders the command with its
//! events; the body then runs PoCL's kernel on those addresses.

use std::sync::{Arc, Mutex};

use crate::cl_err;
use crate::error::{ClErrorKind, ClResult};
use crate::runtime::buffer::Buffer;
use crate::runtime::context::Context;
use crate::runtime::event::Event;
use crate::runtime::image::sampler::Sampler;
use crate::runtime::image::{mem_object, Image};
use crate::runtime::kernel::{self as core, ArgKind, KernelArgValue, NdRange};
use crate::runtime::queue::{Completion, Queue};
use crate::sync;

use super::pocl::kernel::{ArgClass, PoclKernel, RunArg};
use super::pocl::{self, program::PoclProgram};
use super::{from_pocl, Program};

/// An argument as the application set it.
#[derive(Debug, Clone)]
enum SourceArg {
    Buffer(Arc<Buffer>),
    Image(Arc<Image>),
    Sampler(Arc<Sampler>),
    Pointer(usize),
    Value(Vec<u8>),
    Local(usize),
}

/// A kernel of a program from source (`clCreateKernel` on a built
/// [`Program`]): PoCL's kernel, the arguments set so far, and a core kernel
/// holding its execution info (`USM_PTRS`, indirect access:
/// [`Kernel::exec_info`]).
///
/// Arguments by what the kernel declares: `__global`/`__constant` pointers
/// take a buffer ([`set_arg_buffer`](Kernel::set_arg_buffer)) or a USM/SVM
/// pointer ([`set_arg_pointer`](Kernel::set_arg_pointer)), used in place;
/// values their bytes ([`set_arg_value`](Kernel::set_arg_value)); `__local`
/// a size; images and samplers their objects. A launch
/// ([`enqueue`](Kernel::enqueue)) takes the values set when it is enqueued.
#[derive(Debug)]
pub struct Kernel {
    pocl: Arc<PoclKernel>,
    args: Mutex<Vec<Option<SourceArg>>>,
    holder: Arc<core::Kernel>,
}

impl Kernel {
    /// `clCreateKernel`: kernel `name` of a built program.
    ///
    /// Errors: `CL_INVALID_PROGRAM_EXECUTABLE` if the program is not built;
    /// `CL_INVALID_KERNEL_NAME` if it has no kernel `name`.
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, Kernel, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(global int *a, int v) { a[0] = v; }")?;
    /// p.build("")?;
    /// let k = Kernel::new(&p, "k")?;
    /// assert_eq!((k.name(), k.num_args()), ("k", 2));
    /// assert_eq!(Kernel::new(&p, "nope").unwrap_err().code(), -46); // CL_INVALID_KERNEL_NAME
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn new(program: &Program, name: &str) -> ClResult<Kernel> {
        Kernel::with_program(program.context(), &*program.executable()?, name)
    }

    /// As [`Kernel::new`], of PoCL's program of a face that keeps its
    /// programs itself (the ICD); `ctx` is the program's context.
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, Kernel, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(void) {}")?;
    /// p.build("")?;
    /// let exe = p.executable()?;
    /// let k = Kernel::with_program(&ctx, &exe, "k")?;
    /// assert_eq!(k.num_args(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn with_program(ctx: &Arc<Context>, program: &PoclProgram, name: &str) -> ClResult<Kernel> {
        let Some(p) = pocl::get() else {
            return cl_err!(InvalidProgramExecutable, "{}", pocl::no_compiler_log());
        };
        let k = PoclKernel::new(p, program, name)
            .map_err(|code| from_pocl(code, format!("PoCL made no kernel {name:?} ({code})")))?;
        let args = Mutex::new(vec![None; k.classes.len()]);
        let holder = core::Kernel::native(ctx, Arc::new(|_: &[KernelArgValue]| Ok(())), Vec::new())?;
        Ok(Kernel { pocl: Arc::new(k), args, holder })
    }

    /// `clCloneKernel`: a new PoCL kernel of `program` (the same program's
    /// executable) with a copy of the arguments and execution info.
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, Kernel, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(int v) {}")?;
    /// p.build("")?;
    /// let k = Kernel::new(&p, "k")?;
    /// k.set_arg_value(0, &7i32.to_ne_bytes())?;
    /// let exe = p.executable()?;
    /// assert_eq!(k.clone_kernel(&exe)?.name(), "k");
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn clone_kernel(&self, program: &PoclProgram) -> ClResult<Kernel> {
        let k = Kernel::with_program(self.holder.context(), program, &self.pocl.name)?;
        *sync::lock(&k.args) = sync::lock(&self.args).clone();
        let holder = self.holder.clone_kernel();
        Ok(Kernel { holder, ..k })
    }

    /// `CL_KERNEL_FUNCTION_NAME`.
    ///
    /// See [`Kernel::new`].
    pub fn name(&self) -> &str {
        &self.pocl.name
    }

    /// `CL_KERNEL_NUM_ARGS`.
    ///
    /// See [`Kernel::new`].
    pub fn num_args(&self) -> u32 {
        self.pocl.classes.len() as u32
    }

    /// What argument `index` is (`CL_INVALID_ARG_INDEX` past the last).
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, pocl::kernel::ArgClass, Kernel, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(global int *a, local int *l, int v) {}")?;
    /// p.build("")?;
    /// let k = Kernel::new(&p, "k")?;
    /// assert_eq!(k.arg_class(0)?, ArgClass::Global);
    /// assert_eq!(k.arg_class(1)?, ArgClass::Local);
    /// assert_eq!(k.arg_class(2)?, ArgClass::Value);
    /// assert!(k.arg_class(3).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn arg_class(&self, index: u32) -> ClResult<ArgClass> {
        match self.pocl.classes.get(index as usize) {
            Some(c) => Ok(*c),
            None => cl_err!(
                InvalidArgIndex,
                "arg_index {index}: kernel {:?} has {} arguments",
                self.pocl.name,
                self.num_args()
            ),
        }
    }

    /// PoCL's kernel (argument and work-group information).
    pub fn pocl(&self) -> &Arc<PoclKernel> {
        &self.pocl
    }

    /// The core kernel holding this kernel's execution info: set
    /// `USM_PTRS` and the indirect-access flags on it
    /// ([`core::Kernel::set_exec_info`]); [`enqueue`](Kernel::enqueue)
    /// takes them.
    ///
    /// ```
    /// use dmabridge::runtime::kernel::exec_info;
    /// use dmabridge::runtime::program::{pocl, Kernel, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(global int *t) { t[0] = 1; }")?;
    /// p.build("")?;
    /// let k = Kernel::new(&p, "k")?;
    /// k.exec_info().set_exec_info_indirect_access(exec_info::INDIRECT_HOST_ACCESS, true)?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn exec_info(&self) -> &Arc<core::Kernel> {
        &self.holder
    }

    fn set(&self, index: u32, arg: SourceArg) {
        sync::lock(&self.args)[index as usize] = Some(arg);
    }

    /// The class of `index`, which must be a `__global`/`__constant`
    /// pointer (`CL_INVALID_ARG_VALUE` otherwise, saying what it is).
    fn pointer_arg(&self, index: u32) -> ClResult<()> {
        match self.arg_class(index)? {
            ArgClass::Global => Ok(()),
            c => cl_err!(InvalidArgValue, "argument {index} is not a __global or __constant pointer ({c:?})"),
        }
    }

    /// `clSetKernelArg` with a buffer object for a `__global`/`__constant`
    /// pointer: a launch passes the address of the buffer's bytes on the
    /// CPU device, its pages themselves (zero copy).
    ///
    /// Errors: `CL_INVALID_ARG_INDEX`; `CL_INVALID_MEM_OBJECT` for an image
    /// argument (a buffer is no image) or a buffer of another context;
    /// `CL_INVALID_ARG_VALUE` for another kind of argument.
    ///
    /// ```
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::program::{pocl, Kernel, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(global int *a, int v) { a[0] = v; }")?;
    /// p.build("")?;
    /// let k = Kernel::new(&p, "k")?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
    /// k.set_arg_buffer(0, &b)?;
    /// assert_eq!(k.set_arg_buffer(1, &b).unwrap_err().code(), -50); // a value: CL_INVALID_ARG_VALUE
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_arg_buffer(&self, index: u32, buffer: &Arc<Buffer>) -> ClResult<()> {
        if let ArgClass::Image(_) = self.arg_class(index)? {
            return cl_err!(InvalidMemObject, "argument {index} is an image, and a buffer is not one");
        }
        self.pointer_arg(index)?;
        if !Arc::ptr_eq(buffer.context(), self.holder.context()) {
            return cl_err!(
                InvalidMemObject,
                "argument {index}: the buffer belongs to another context than the kernel"
            );
        }
        self.set(index, SourceArg::Buffer(buffer.clone()));
        Ok(())
    }

    /// `clSetKernelArgSVMPointer` and `clSetKernelArgMemPointerINTEL`: a USM
    /// or SVM pointer (or any address the kernel may reach; NULL allowed)
    /// for a `__global`/`__constant` pointer, used in place.
    ///
    /// Errors: `CL_INVALID_ARG_INDEX`; `CL_INVALID_ARG_VALUE` for another
    /// kind of argument.
    ///
    /// See [`Kernel::enqueue`] for a launch on a USM allocation.
    pub fn set_arg_pointer(&self, index: u32, ptr: *const u8) -> ClResult<()> {
        self.pointer_arg(index)?;
        self.set(index, SourceArg::Pointer(ptr as usize));
        Ok(())
    }

    /// `clSetKernelArg` with an image for an `image*_t` argument: an image
    /// of the declared type (`CL_INVALID_MEM_OBJECT` otherwise) in a format
    /// PoCL can make (`CL_INVALID_ARG_VALUE`, with what PoCL lacks).
    ///
    /// A launch hands PoCL an image of its own over the image's pages
    /// ([`pocl::image`]), in place.
    pub fn set_arg_image(&self, index: u32, image: &Arc<Image>) -> ClResult<()> {
        let declared = match self.arg_class(index)? {
            ArgClass::Image(declared) => declared,
            ArgClass::Global => {
                return cl_err!(InvalidMemObject, "argument {index} is a pointer: an image is no buffer");
            }
            c => return cl_err!(InvalidArgValue, "argument {index} is not an image ({c:?})"),
        };
        if image.image_type() != declared.object_type {
            return cl_err!(
                InvalidMemObject,
                "argument {index} is declared {}, and the image is {}",
                image_type_name(declared.object_type),
                image_type_name(image.image_type())
            );
        }
        let Some(p) = pocl::get() else { return cl_err!(InvalidKernel, "{}", pocl::no_compiler_log()) };
        if !pocl::image::supports(p, image.format(), image.image_type()) {
            let f = image.format();
            return cl_err!(
                InvalidArgValue,
                "argument {index}: PoCL, which runs kernels from source, has no {} image of channel order {:#x} and \
                 type {:#x} (it has R, A, RGBA, BGRA and ARGB; YUYV and NV12 frames convert with the built-in \
                 kernels yuyv_to_rgba_image and yuyv_to_rgba_strided)",
                image_type_name(image.image_type()),
                f.order,
                f.data_type
            );
        }
        self.set(index, SourceArg::Image(image.clone()));
        Ok(())
    }

    /// `clSetKernelArg` with a sampler for a `sampler_t` argument
    /// (`CL_INVALID_ARG_VALUE` for another kind of argument).
    pub fn set_arg_sampler(&self, index: u32, sampler: &Arc<Sampler>) -> ClResult<()> {
        match self.arg_class(index)? {
            ArgClass::Sampler => {
                self.set(index, SourceArg::Sampler(sampler.clone()));
                Ok(())
            }
            c => cl_err!(InvalidArgValue, "argument {index} is not a sampler_t ({c:?})"),
        }
    }

    /// `clSetKernelArg` with NULL for a `__local` argument: `size` bytes of
    /// local memory per work-group.
    ///
    /// Errors: `CL_INVALID_ARG_SIZE` for 0 bytes; `CL_INVALID_ARG_VALUE` for
    /// another kind of argument.
    pub fn set_arg_local(&self, index: u32, size: usize) -> ClResult<()> {
        match self.arg_class(index)? {
            ArgClass::Local if size == 0 => {
                cl_err!(InvalidArgSize, "argument {index} is __local: arg_size must be its size, not 0")
            }
            ArgClass::Local => {
                self.set(index, SourceArg::Local(size));
                Ok(())
            }
            c => cl_err!(InvalidArgValue, "argument {index} is not __local ({c:?})"),
        }
    }

    /// `clSetKernelArg` for an argument passed by value: its bytes in the
    /// C representation (`7u32.to_ne_bytes()` for a `uint`), checked by
    /// PoCL against the declared type.
    ///
    /// Errors: `CL_INVALID_ARG_SIZE` (PoCL's) for bytes of another size;
    /// `CL_INVALID_ARG_VALUE` for another kind of argument.
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, Kernel, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(uint v) {}")?;
    /// p.build("")?;
    /// let k = Kernel::new(&p, "k")?;
    /// k.set_arg_value(0, &7u32.to_ne_bytes())?;
    /// assert_eq!(k.set_arg_value(0, &7u64.to_ne_bytes()).unwrap_err().code(), -51); // CL_INVALID_ARG_SIZE
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn set_arg_value(&self, index: u32, bytes: &[u8]) -> ClResult<()> {
        match self.arg_class(index)? {
            ArgClass::Value => {}
            c => return cl_err!(InvalidArgValue, "argument {index} is not passed by value ({c:?})"),
        }
        let Some(p) = pocl::get() else { return cl_err!(InvalidKernel, "{}", pocl::no_compiler_log()) };
        if let Err(code) = self.pocl.check_value(p, index, bytes) {
            let n = bytes.len();
            return Err(from_pocl(code, format!("argument {index}: PoCL refused a value of {n} bytes ({code})")));
        }
        self.set(index, SourceArg::Value(bytes.to_vec()));
        Ok(())
    }

    /// `clEnqueueNDRangeKernel` on a queue of the CPU device, with this
    /// kernel's execution info ([`Kernel::exec_info`]).
    ///
    /// Errors: `CL_INVALID_KERNEL_ARGS` for an argument not set;
    /// `CL_INVALID_PROGRAM_EXECUTABLE` on another device's queue;
    /// `CL_INVALID_OPERATION` for a buffer the kernel may not access as
    /// declared (a read-only import written, I/O memory);
    /// `CL_INVALID_WORK_GROUP_SIZE` for a work-group larger than the
    /// kernel's.
    ///
    /// # Safety
    /// As [`core::enqueue_task`]: the pointers the arguments and execution
    /// info name stay valid until the command completes.
    ///
    /// ```
    /// use dmabridge::ext::usm;
    /// use dmabridge::runtime::event::Event;
    /// use dmabridge::runtime::kernel::NdRange;
    /// use dmabridge::runtime::program::{pocl, Kernel, Program};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// let p = Program::from_source(&ctx, "kernel void k(global int *a, int v) { a[get_global_id(0)] = v; }")?;
    /// p.build("")?;
    /// let k = Kernel::new(&p, "k")?;
    /// let a = usm::host_mem_alloc(&ctx, &[], 64, 0)?.as_ptr();
    /// k.set_arg_pointer(0, a)?;
    /// k.set_arg_value(1, &5i32.to_ne_bytes())?;
    /// // SAFETY: `a` holds 16 ints and is freed after the launch ended.
    /// Event::wait(&[unsafe { k.enqueue(&queue, &NdRange::new(&[16], None, None)?, &[]) }?])?;
    /// // SAFETY: the kernel finished; the allocation is 64 bytes.
    /// assert_eq!(unsafe { a.cast::<i32>().add(15).read() }, 5);
    /// usm::mem_free(&ctx, a)?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub unsafe fn enqueue(&self, queue: &Arc<Queue>, range: &NdRange, wait: &[Event]) -> ClResult<Event> {
        // SAFETY: forwarded to the caller.
        unsafe { self.enqueue_with_exec_info(queue, &self.holder, range, wait) }
    }

    /// As [`Kernel::enqueue`] with the execution info of `holder`, a core
    /// kernel of a face that keeps it itself (the ICD's kernel object).
    ///
    /// # Safety
    /// As [`Kernel::enqueue`].
    pub unsafe fn enqueue_with_exec_info(
        &self,
        queue: &Arc<Queue>,
        holder: &core::Kernel,
        range: &NdRange,
        wait: &[Event],
    ) -> ClResult<Event> {
        let Some(p) = pocl::get() else { return cl_err!(InvalidProgramExecutable, "{}", pocl::no_compiler_log()) };
        let name = &self.pocl.name;
        if queue.device().backend().is_some() {
            return cl_err!(
                InvalidProgramExecutable,
                "kernels from source run on the CPU device only, not on {:?}",
                queue.device().name
            );
        }
        let args: Vec<SourceArg> = {
            let args = sync::lock(&self.args);
            let unset: Vec<usize> = args.iter().enumerate().filter(|(_, a)| a.is_none()).map(|(i, _)| i).collect();
            if !unset.is_empty() {
                return cl_err!(InvalidKernelArgs, "kernel {name:?}: arguments {unset:?} are not set");
            }
            args.iter().flatten().cloned().collect()
        };
        self.check_access(&args)?;
        if let Some(local) = range.local() {
            let max = usize_answer(self.pocl.work_group_info(p, opencl_sys::CL_KERNEL_WORK_GROUP_SIZE));
            let n: usize = local.iter().product();
            if max.is_some_and(|m| n > m) {
                return cl_err!(
                    InvalidWorkGroupSize,
                    "a work-group of {n} work-items is more than the kernel's {max:?}"
                );
            }
        }
        let launch = holder.native_async_with_exec_info(self.body(&args, range), kinds(&args))?;
        for (i, a) in args.iter().enumerate() {
            let i = i as u32;
            match a {
                SourceArg::Buffer(b) => launch.set_arg_buffer(i, b),
                SourceArg::Image(img) => launch.set_arg_image(i, img),
                SourceArg::Sampler(_) => launch.set_arg_scalar(i, &[0]),
                SourceArg::Pointer(ptr) => launch.set_arg_mem_pointer(i, *ptr as *const u8),
                SourceArg::Value(b) if b.is_empty() => launch.set_arg_scalar(i, &[0]),
                SourceArg::Value(b) => launch.set_arg_scalar(i, b),
                SourceArg::Local(n) => launch.set_arg_scalar(i, &(*n as u64).to_ne_bytes()),
            }?;
        }
        // SAFETY: forwarded to the caller.
        unsafe { core::enqueue_native_nd_range(queue, &launch, wait) }
    }

    /// Whether the kernel may access each memory argument as declared: a
    /// read-only import's mapping is read-only (a non-const `__global`
    /// pointer may write it), I/O memory is out of a compiled kernel's reach.
    fn check_access(&self, args: &[SourceArg]) -> ClResult<()> {
        let name = &self.pocl.name;
        for (i, a) in args.iter().enumerate() {
            let write = self.pocl.writes.get(i).copied().unwrap_or(true);
            if let SourceArg::Image(img) = a {
                // An image's pixels are its storage's bytes: the same rules.
                img.storage().check_kernel_access(write, &format!("kernel {name:?}: argument {i} (an image)"))?;
            }
            if let SourceArg::Buffer(b) = a {
                if b.store().is_remote() {
                    return cl_err!(
                        InvalidOperation,
                        "argument {i}: a CL_MEM_EXTERNAL_PHYSICAL_AMD buffer is I/O memory, which kernels from source cannot access"
                    );
                }
                b.check_kernel_access(write, &format!("kernel {name:?}: argument {i}"))?;
            }
        }
        Ok(())
    }

    /// The body of a launch: PoCL's kernel over the values the core
    /// captured (buffers as their pages' addresses on the CPU device).
    fn body(&self, args: &[SourceArg], range: &NdRange) -> core::AsyncNativeFn {
        let classes = self.pocl.classes.clone();
        let samplers: Vec<Option<(bool, u32, u32)>> = args
            .iter()
            .map(|a| match a {
                SourceArg::Sampler(s) => Some((s.normalized_coords, s.addressing_mode, s.filter_mode)),
                _ => None,
            })
            .collect();
        let (global, offset, local) =
            (range.global().to_vec(), range.offset().to_vec(), range.local().map(<[usize]>::to_vec));
        let k = self.pocl.clone();
        Arc::new(move |values: &[KernelArgValue], done: Completion| {
            let run: Vec<RunArg> = values
                .iter()
                .zip(&classes)
                .zip(&samplers)
                .map(|((v, c), sampler)| match (v, c) {
                    (_, ArgClass::Sampler) => {
                        let (n, a, f) = sampler.unwrap_or((false, 0, 0));
                        RunArg::Sampler(n, a, f)
                    }
                    (KernelArgValue::ImageAt(at), _) => RunArg::Image(at.clone()),
                    (KernelArgValue::Scalar(b), ArgClass::Local) => {
                        RunArg::Local(b.get(..8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_ne_bytes) as usize)
                    }
                    (KernelArgValue::Scalar(b), _) => RunArg::Value(b.clone()),
                    (v, _) => RunArg::Pointer(v.as_ptr().map_or(0, |p| p as usize)),
                })
                .collect();
            let Some(p) = pocl::get() else {
                return done.complete(Err(ClErrorKind::InvalidProgramExecutable.code()));
            };
            let name = k.name.clone();
            let done = Completion::new(move |r: Result<(), i32>| {
                if let Err(code) = r {
                    log::warn!("kernel {name:?}: PoCL's launch failed ({code})");
                }
                done.complete(r)
            });
            k.start(p, &run, &global, &offset, local.as_deref(), done);
        })
    }
}

/// What the core captures of each argument.
fn kinds(args: &[SourceArg]) -> Vec<ArgKind> {
    args.iter()
        .map(|a| match a {
            SourceArg::Buffer(_) | SourceArg::Pointer(_) => ArgKind::Pointer,
            SourceArg::Image(_) => ArgKind::Image,
            SourceArg::Value(b) => ArgKind::Scalar(b.len().max(1)),
            SourceArg::Local(_) => ArgKind::Scalar(8),
            // The body takes the sampler's modes from its own list.
            SourceArg::Sampler(_) => ArgKind::Scalar(1),
        })
        .collect()
}

/// The OpenCL C name of an image type, for messages.
fn image_type_name(t: u32) -> &'static str {
    match t {
        mem_object::IMAGE1D => "image1d_t",
        mem_object::IMAGE1D_BUFFER => "image1d_buffer_t",
        mem_object::IMAGE1D_ARRAY => "image1d_array_t",
        mem_object::IMAGE2D => "image2d_t",
        mem_object::IMAGE2D_ARRAY => "image2d_array_t",
        mem_object::IMAGE3D => "image3d_t",
        _ => "an unknown image type",
    }
}

/// A `size_t` answer of PoCL's.
fn usize_answer(r: Result<Vec<u8>, i32>) -> Option<usize> {
    r.ok()?.get(..std::mem::size_of::<usize>())?.try_into().ok().map(usize::from_ne_bytes)
}
