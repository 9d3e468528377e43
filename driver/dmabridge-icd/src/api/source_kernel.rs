//! Kernels from source (PoCL's, `crate::pocl::kernel`) behind dmabridge's
//! kernel handles: their arguments as dmabridge keeps them, and a launch as
//! a dmabridge command.
//!
//! A launch is a native kernel of the core made for it
//! (`Kernel::native_with_exec_info`, enqueued by
//! `kernel::enqueue_native_nd_range`): the core captures the arguments,
//! makes each buffer argument current on the CPU device and passes its
//! address (its pages themselves), brackets imported dma-bufs with
//! `DMA_BUF_IOCTL_SYNC`, declares the USM memory the launch uses (blocking
//! frees wait for it) and orders the command with its events; the body then
//! runs PoCL's kernel on those addresses.

use std::sync::{Arc, Mutex};

use dmabridge::ext::amd_bus::EXTERNAL_PHYSICAL;
use dmabridge::runtime::buffer::Buffer;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::image::sampler::Sampler;
use dmabridge::runtime::image::{mem_object, Image};
use dmabridge::runtime::kernel::{self, ArgKind, Kernel, KernelArgValue, NdRange};
use dmabridge::runtime::queue::{Completion, Queue};
use dmabridge::sync;
use opencl_sys::*;

use crate::entry::{Cl, ClRes};
use crate::notify::note_error;
use crate::pocl::kernel::{ArgClass, ImageArg, PoclKernel, RunArg};
use crate::pocl::{self, program::PoclProgram};

/// A `cl_mem` an argument was set to: a buffer or an image.
#[derive(Debug, Clone)]
pub(crate) enum MemArg {
    Buffer(Arc<Buffer>),
    Image(Arc<Image>),
}

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

/// A kernel from source: PoCL's kernel and the arguments set so far.
#[derive(Debug)]
pub struct SourceKernel {
    pub(crate) pocl: Arc<PoclKernel>,
    args: Mutex<Vec<Option<SourceArg>>>,
}

fn fail<T>(code: cl_int, message: String) -> ClRes<T> {
    note_error(code, message);
    Err(code)
}

impl SourceKernel {
    /// Kernel `name` of a built program (`CL_INVALID_KERNEL_NAME` if it has none).
    pub(crate) fn new(program: &PoclProgram, name: &str) -> ClRes<SourceKernel> {
        let p = pocl::get().ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
        let k = PoclKernel::new(p, program, name)?;
        let args = Mutex::new(vec![None; k.classes.len()]);
        Ok(SourceKernel { pocl: Arc::new(k), args })
    }

    /// `clCloneKernel`: a new PoCL kernel with a copy of the arguments.
    pub(crate) fn clone_kernel(&self, program: &PoclProgram) -> ClRes<SourceKernel> {
        let k = SourceKernel::new(program, &self.pocl.name)?;
        *sync::lock(&k.args) = sync::lock(&self.args).clone();
        Ok(k)
    }

    /// `CL_KERNEL_NUM_ARGS`.
    pub(crate) fn num_args(&self) -> cl_uint {
        self.pocl.classes.len() as cl_uint
    }

    fn class(&self, index: cl_uint) -> ClRes<ArgClass> {
        match self.pocl.classes.get(index as usize) {
            Some(c) => Ok(*c),
            None => fail(
                CL_INVALID_ARG_INDEX,
                format!("arg_index {index}: kernel {:?} has {} arguments", self.pocl.name, self.num_args()),
            ),
        }
    }

    fn set(&self, index: cl_uint, arg: SourceArg) {
        sync::lock(&self.args)[index as usize] = Some(arg);
    }

    /// The image of an image argument: a `cl_mem` that is an image of the
    /// declared type (`CL_INVALID_MEM_OBJECT` otherwise) in a format PoCL
    /// can make (`CL_INVALID_ARG_VALUE`, with what PoCL lacks).
    ///
    /// # Safety
    /// `arg_value` is NULL or readable for `arg_size` bytes.
    unsafe fn image_arg(
        &self,
        index: cl_uint,
        arg_size: usize,
        arg_value: *const std::ffi::c_void,
        declared: ImageArg,
        mem: impl Fn(cl_mem) -> ClRes<MemArg>,
    ) -> ClRes<Arc<Image>> {
        if arg_size != std::mem::size_of::<cl_mem>() {
            return fail(
                CL_INVALID_ARG_SIZE,
                format!("argument {index} is an image: arg_size must be sizeof(cl_mem), not {arg_size}"),
            );
        }
        if arg_value.is_null() {
            return fail(CL_INVALID_MEM_OBJECT, format!("argument {index} is an image: arg_value is NULL"));
        }
        // SAFETY: the caller's contract, the size checked above.
        let h = unsafe { arg_value.cast::<cl_mem>().read_unaligned() };
        let image = match mem(h)? {
            MemArg::Image(image) if image.image_type() == declared.object_type => image,
            MemArg::Image(image) => {
                return fail(
                    CL_INVALID_MEM_OBJECT,
                    format!(
                        "argument {index} is declared {}, and the image is {}",
                        image_type_name(declared.object_type),
                        image_type_name(image.image_type())
                    ),
                )
            }
            MemArg::Buffer(_) => {
                return fail(CL_INVALID_MEM_OBJECT, format!("argument {index} is an image, and a buffer is not one"))
            }
        };
        let p = pocl::get().ok_or(CL_INVALID_KERNEL)?;
        if !pocl::image::supports(p, image.format(), image.image_type()) {
            let f = image.format();
            return fail(
                CL_INVALID_ARG_VALUE,
                format!(
                    "argument {index}: PoCL, which runs kernels from source, has no {} image of channel order {:#x} and                      type {:#x} (it has R, A, RGBA, BGRA and ARGB; YUYV and NV12 frames convert with the built-in                      kernels yuyv_to_rgba_image and yuyv_to_rgba_strided)",
                    image_type_name(image.image_type()),
                    f.order,
                    f.data_type
                ),
            );
        }
        Ok(image)
    }

    /// `clSetKernelArg`. `arg_value` is the C pointer: a `cl_mem` (or NULL)
    /// for a `__global`/`__constant` pointer, an image `cl_mem` for an image
    /// (of the declared type, in a format PoCL has: else
    /// `CL_INVALID_MEM_OBJECT` / `CL_INVALID_ARG_VALUE`), a `cl_sampler` for
    /// a `sampler_t`, NULL for `__local` (its size is `arg_size`), the
    /// value's bytes otherwise.
    ///
    /// # Safety
    /// `arg_value` is NULL or readable for `arg_size` bytes.
    pub(crate) unsafe fn set_arg(
        &self,
        index: cl_uint,
        arg_size: usize,
        arg_value: *const std::ffi::c_void,
        mem: impl Fn(cl_mem) -> ClRes<MemArg>,
        sampler: impl Fn(cl_sampler) -> ClRes<Arc<Sampler>>,
    ) -> ClRes<()> {
        match self.class(index)? {
            ArgClass::Global => {
                if arg_size != std::mem::size_of::<cl_mem>() {
                    return fail(
                        CL_INVALID_ARG_SIZE,
                        format!("argument {index} is a pointer: arg_size must be sizeof(cl_mem), not {arg_size}"),
                    );
                }
                let h = if arg_value.is_null() {
                    std::ptr::null_mut()
                } else {
                    // SAFETY: clSetKernelArg's contract: a non-NULL `arg_value` points to `arg_size`
                    // readable bytes, and `arg_size` was just checked to be `sizeof(cl_mem)`;
                    // `read_unaligned` makes no demand on the pointer's alignment.
                    unsafe { arg_value.cast::<cl_mem>().read_unaligned() }
                };
                let arg = match (h.is_null(), h) {
                    (true, _) => SourceArg::Pointer(0),
                    (false, h) => match mem(h)? {
                        MemArg::Buffer(b) => SourceArg::Buffer(b),
                        MemArg::Image(_) => {
                            return fail(
                                CL_INVALID_MEM_OBJECT,
                                format!("argument {index} is a pointer: an image is no buffer"),
                            )
                        }
                    },
                };
                self.set(index, arg);
            }
            ArgClass::Image(declared) => {
                // SAFETY: the caller's contract of `arg_value`.
                let image = unsafe { self.image_arg(index, arg_size, arg_value, declared, mem) }?;
                self.set(index, SourceArg::Image(image));
            }
            ArgClass::Sampler => {
                if arg_size != std::mem::size_of::<cl_sampler>() {
                    return fail(
                        CL_INVALID_ARG_SIZE,
                        format!("argument {index} is a sampler_t: arg_size must be sizeof(cl_sampler), not {arg_size}"),
                    );
                }
                if arg_value.is_null() {
                    return fail(CL_INVALID_SAMPLER, format!("argument {index} is a sampler_t: arg_value is NULL"));
                }
                // SAFETY: clSetKernelArg's contract, the size checked above.
                let h = unsafe { arg_value.cast::<cl_sampler>().read_unaligned() };
                self.set(index, SourceArg::Sampler(sampler(h)?));
            }
            ArgClass::Local => {
                if !arg_value.is_null() {
                    return fail(CL_INVALID_ARG_VALUE, format!("argument {index} is __local: arg_value must be NULL"));
                }
                if arg_size == 0 {
                    return fail(
                        CL_INVALID_ARG_SIZE,
                        format!("argument {index} is __local: arg_size must be its size, not 0"),
                    );
                }
                self.set(index, SourceArg::Local(arg_size));
            }
            ArgClass::Value => {
                if arg_value.is_null() {
                    return fail(
                        CL_INVALID_ARG_VALUE,
                        format!("argument {index} is passed by value: arg_value is NULL"),
                    );
                }
                if arg_size > isize::MAX as usize {
                    return Err(CL_INVALID_ARG_SIZE);
                }
                // SAFETY: the caller's contract.
                let bytes = unsafe { std::slice::from_raw_parts(arg_value.cast::<u8>(), arg_size) }.to_vec();
                let p = pocl::get().ok_or(CL_INVALID_KERNEL)?;
                if let Err(code) = self.pocl.check_value(p, index, &bytes) {
                    return fail(code, format!("argument {index}: PoCL refused a value of {arg_size} bytes ({code})"));
                }
                self.set(index, SourceArg::Value(bytes));
            }
        }
        Ok(())
    }

    /// `clSetKernelArgSVMPointer` and `clSetKernelArgMemPointerINTEL`.
    pub(crate) fn set_arg_pointer(&self, index: cl_uint, ptr: *const u8) -> ClRes<()> {
        if self.class(index)? != ArgClass::Global {
            return fail(CL_INVALID_ARG_VALUE, format!("argument {index} is not a __global or __constant pointer"));
        }
        self.set(index, SourceArg::Pointer(ptr as usize));
        Ok(())
    }

    /// `clEnqueueNDRangeKernel` (and `clEnqueueTask`, a range of one):
    /// `holder` is the kernel object's core kernel (its context and
    /// execution info).
    ///
    /// # Safety
    /// As `kernel::enqueue_task`: the pointers the arguments and execution
    /// info name stay valid until the command completes.
    pub(crate) unsafe fn enqueue(
        self: &Arc<Self>,
        queue: &Arc<Queue>,
        holder: &Kernel,
        range: &NdRange,
        wait: &[Event],
    ) -> ClRes<Event> {
        let p = pocl::get().ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
        if queue.device().backend().is_some() {
            return fail(
                CL_INVALID_PROGRAM_EXECUTABLE,
                format!("kernels from source run on the CPU device only, not on {:?}", queue.device().name),
            );
        }
        let args: Vec<SourceArg> = {
            let args = sync::lock(&self.args);
            let unset: Vec<usize> = args.iter().enumerate().filter(|(_, a)| a.is_none()).map(|(i, _)| i).collect();
            if !unset.is_empty() {
                return fail(
                    CL_INVALID_KERNEL_ARGS,
                    format!("kernel {:?}: arguments {unset:?} are not set", self.pocl.name),
                );
            }
            args.iter().flatten().cloned().collect()
        };
        for (i, a) in args.iter().enumerate() {
            if let SourceArg::Image(img) = a {
                // An image's pixels are its storage's bytes: the same rules.
                let write = self.pocl.writes.get(i).copied().unwrap_or(true);
                let what = format!("kernel {:?}: argument {i} (an image)", self.pocl.name);
                img.storage().check_kernel_access(write, &what).cl()?;
            }
            if let SourceArg::Buffer(b) = a {
                if b.flags() & EXTERNAL_PHYSICAL != 0 {
                    return fail(
                        CL_INVALID_OPERATION,
                        format!("argument {i}: a CL_MEM_EXTERNAL_PHYSICAL_AMD buffer is I/O memory, which kernels from source cannot access"),
                    );
                }
                // A read-only import's mapping is read-only: a kernel that
                // may write it (a non-const __global pointer) is refused.
                let write = self.pocl.writes.get(i).copied().unwrap_or(true);
                let what = format!("kernel {:?}: argument {i}", self.pocl.name);
                b.check_kernel_access(write, &what).cl()?;
            }
        }
        if let Some(local) = range.local() {
            let max = self.pocl.work_group_info(p, CL_KERNEL_WORK_GROUP_SIZE).cl_usize();
            let n: usize = local.iter().product();
            if max.is_some_and(|m| n > m) {
                return fail(
                    CL_INVALID_WORK_GROUP_SIZE,
                    format!("a work-group of {n} work-items is more than the kernel's {max:?}"),
                );
            }
        }
        let kinds: Vec<ArgKind> = args
            .iter()
            .map(|a| match a {
                SourceArg::Buffer(_) | SourceArg::Pointer(_) => ArgKind::Pointer,
                SourceArg::Image(_) => ArgKind::Image,
                SourceArg::Value(b) => ArgKind::Scalar(b.len().max(1)),
                SourceArg::Local(_) => ArgKind::Scalar(8),
                // The body takes the sampler's modes from `samplers` below.
                SourceArg::Sampler(_) => ArgKind::Scalar(1),
            })
            .collect();
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
        let body = Arc::new(move |values: &[KernelArgValue], done: Completion| {
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
            let Some(p) = pocl::get() else { return done.complete(Err(CL_INVALID_PROGRAM_EXECUTABLE)) };
            let name = k.name.clone();
            let done = Completion::new(move |r: Result<(), i32>| {
                if let Err(code) = r {
                    log::warn!("kernel {name:?}: PoCL's launch failed ({code})");
                }
                done.complete(r)
            });
            k.start(p, &run, &global, &offset, local.as_deref(), done);
        });
        let launch = holder.native_async_with_exec_info(body, kinds).cl()?;
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
            }
            .cl()?;
        }
        // SAFETY: forwarded to the caller.
        unsafe { kernel::enqueue_native_nd_range(queue, &launch, wait) }.cl()
    }
}

/// The OpenCL C name of an image type, for messages.
fn image_type_name(t: cl_mem_object_type) -> &'static str {
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
trait UsizeAnswer {
    fn cl_usize(self) -> Option<usize>;
}

impl UsizeAnswer for Result<Vec<u8>, cl_int> {
    fn cl_usize(self) -> Option<usize> {
        self.ok()?.get(..std::mem::size_of::<usize>())?.try_into().ok().map(usize::from_ne_bytes)
    }
}
