//! Kernel entry points (`runtime::kernel`): built-in kernels of a program,
//! their arguments (scalars, USM and SVM pointers) and execution info,
//! launches (`clEnqueueNDRangeKernel`, `clEnqueueTask`) and native kernels
//! (`clEnqueueNativeKernel`).
//!
//! A pointer argument takes a USM or SVM pointer
//! (`clSetKernelArgMemPointerINTEL`, `clSetKernelArgSVMPointer`) or a
//! buffer object (`clSetKernelArg` with a `cl_mem`, `Kernel::set_arg_buffer`):
//! a launch passes the buffer's bytes on the queue's device.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use dmabridge::runtime::buffer::map;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::info::{self, device_param, exec_capabilities, kernel_param, InfoValue};
use dmabridge::runtime::kernel::{self, exec_info, ArgKind, Kernel, KernelArgValue, NdRange};
use opencl_sys::*;

use super::event::return_event;
use super::memobj::{mem, mem_object};
use super::program::{program, ProgramObj};
use super::queue::queue;
use super::source_kernel::{self, MemArg, SourceKernel};
use crate::entry::{object, slice, status, wait_list, Cl, ClRes};
use crate::handles::{self, DeviceObj, Kind, Obj, Tag};
use crate::info::{get_info, Handles};
use dmabridge::sync;

/// A kernel of a built-in program, with its program's object (which
/// `CL_KERNEL_PROGRAM` names and which counts its attached kernels) and the
/// two pointer lists of `clSetKernelExecInfo`: the runtime keeps one list
/// of allocations a kernel reaches indirectly, which gets their union.
#[derive(Debug)]
pub struct KernelObj {
    /// The core kernel.
    pub kernel: Arc<Kernel>,
    /// Its program's object.
    pub program: Arc<Obj<ProgramObj>>,
    /// `CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL` and `CL_KERNEL_EXEC_INFO_SVM_PTRS`.
    indirect_ptrs: Mutex<[Vec<usize>; 2]>,
    /// A kernel from source (PoCL's): then `kernel` is a native kernel
    /// without arguments that holds the context and the execution info.
    pub(crate) source: Option<Arc<SourceKernel>>,
}

impl Kind for KernelObj {
    const TAG: Tag = Tag::Kernel;
    const INVALID: cl_int = CL_INVALID_KERNEL;

    fn notifier(&self) -> crate::notify::Notifier {
        self.program.inner.context.inner.notify
    }
}

impl Drop for KernelObj {
    fn drop(&mut self) {
        self.program.inner.kernels.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The kernel object behind a handle.
pub(crate) fn kernel(handle: cl_kernel) -> ClRes<Arc<Obj<KernelObj>>> {
    handles::get::<KernelObj>(handle.cast())
}

/// A new kernel object for the built-in `name` of `p`, on the first of the
/// program's devices that offers it.
fn new_kernel(p: &Arc<Obj<ProgramObj>>, name: &str) -> ClRes<cl_kernel> {
    if !matches!(p.inner.contents, super::program::Contents::BuiltIn(_)) {
        let source = SourceKernel::with_program(&p.inner.context.inner.ctx, &*p.inner.executable()?, name).cl()?;
        return kernel_object(p, Some(Arc::new(source)));
    }
    let device = p
        .inner
        .devices
        .iter()
        .find(|d| kernel::builtin_kernel_names(d).contains(&name))
        .ok_or(CL_INVALID_KERNEL_NAME)?;
    let k = Kernel::builtin(&p.inner.context.inner.ctx, device, name).cl()?;
    p.inner.kernels.fetch_add(1, Ordering::AcqRel);
    let obj =
        KernelObj { kernel: k, program: p.clone(), indirect_ptrs: Mutex::new([Vec::new(), Vec::new()]), source: None };
    Ok(handles::into_handle(handles::new_object(obj)).cast())
}

/// A kernel object for a kernel from source of `p`.
fn kernel_object(p: &Arc<Obj<ProgramObj>>, source: Option<Arc<SourceKernel>>) -> ClRes<cl_kernel> {
    let holder =
        Kernel::native(&p.inner.context.inner.ctx, Arc::new(|_: &[KernelArgValue]| Ok(())), Vec::new()).cl()?;
    p.inner.kernels.fetch_add(1, Ordering::AcqRel);
    let obj =
        KernelObj { kernel: holder, program: p.clone(), indirect_ptrs: Mutex::new([Vec::new(), Vec::new()]), source };
    Ok(handles::into_handle(handles::new_object(obj)).cast())
}

/// `clCloneKernel`: a kernel object of the same program with a copy of the
/// source's arguments and execution info (`Kernel::clone_kernel`).
pub(crate) unsafe extern "C" fn clCloneKernel(source_kernel: cl_kernel, errcode_ret: *mut cl_int) -> cl_kernel {
    // SAFETY: the C contract of `errcode_ret` (NULL or writable).
    unsafe {
        object("clCloneKernel", errcode_ret, || {
            let k = handles::get::<KernelObj>(source_kernel.cast())?;
            let indirect_ptrs = Mutex::new(sync::lock(&k.inner.indirect_ptrs).clone());
            let source = match &k.inner.source {
                Some(s) => Some(Arc::new(s.clone_kernel(&*k.inner.program.inner.executable()?).cl()?)),
                None => None,
            };
            k.inner.program.inner.kernels.fetch_add(1, Ordering::AcqRel);
            let obj = KernelObj {
                kernel: k.inner.kernel.clone_kernel(),
                program: k.inner.program.clone(),
                indirect_ptrs,
                source,
            };
            Ok(handles::into_handle(handles::new_object(obj)).cast())
        })
    }
}

/// `clCreateKernel`.
pub(crate) unsafe extern "C" fn clCreateKernel(
    program: cl_program,
    kernel_name: *const c_char,
    errcode_ret: *mut cl_int,
) -> cl_kernel {
    // SAFETY: the C contract of `errcode_ret` and `kernel_name` (NULL or
    // NUL-terminated).
    unsafe {
        object("clCreateKernel", errcode_ret, || {
            let p = self::program(program)?;
            if kernel_name.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            let name = CStr::from_ptr(kernel_name).to_bytes();
            let names = p.inner.kernel_names()?;
            let known = names.iter().find(|n| n.as_bytes() == name).ok_or(CL_INVALID_KERNEL_NAME)?;
            new_kernel(&p, known)
        })
    }
}

/// `clCreateKernelsInProgram`: one kernel per built-in of the program.
pub(crate) unsafe extern "C" fn clCreateKernelsInProgram(
    program: cl_program,
    num_kernels: cl_uint,
    kernels: *mut cl_kernel,
    num_kernels_ret: *mut cl_uint,
) -> cl_int {
    status("clCreateKernelsInProgram", || {
        let p = self::program(program)?;
        let names = p.inner.kernel_names()?;
        if !kernels.is_null() {
            if (num_kernels as usize) < names.len() {
                return Err(CL_INVALID_VALUE);
            }
            let mut made = Vec::with_capacity(names.len());
            for name in &names {
                match new_kernel(&p, name) {
                    Ok(k) => made.push(k),
                    Err(code) => {
                        for k in made {
                            handles::release::<KernelObj>(k.cast())?;
                        }
                        return Err(code);
                    }
                }
            }
            for (i, k) in made.into_iter().enumerate() {
                // SAFETY: the C contract: `kernels` holds `num_kernels`
                // entries, at least `names.len()`.
                unsafe { kernels.add(i).write_unaligned(k) };
            }
        }
        // SAFETY: the C contract of `num_kernels_ret`.
        unsafe { crate::entry::write_opt(num_kernels_ret, names.len() as cl_uint) };
        Ok(())
    })
}

/// `clRetainKernel`.
pub(crate) unsafe extern "C" fn clRetainKernel(kernel: cl_kernel) -> cl_int {
    status("clRetainKernel", || handles::retain::<KernelObj>(kernel.cast()))
}

/// `clReleaseKernel`.
pub(crate) unsafe extern "C" fn clReleaseKernel(kernel: cl_kernel) -> cl_int {
    status("clReleaseKernel", || handles::release::<KernelObj>(kernel.cast()))
}

/// `clSetKernelArg`: a scalar argument takes its bytes; a pointer argument
/// takes a buffer object, or NULL (`arg_value` NULL or pointing to NULL);
/// anything else that is not a buffer of the kernel's context answers
/// `CL_INVALID_MEM_OBJECT`.
pub(crate) unsafe extern "C" fn clSetKernelArg(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_size: usize,
    arg_value: *const c_void,
) -> cl_int {
    status("clSetKernelArg", || {
        let k = self::kernel(kernel)?;
        if let Some(s) = &k.inner.source {
            // SAFETY: the C contract of `arg_value`.
            return unsafe {
                source_kernel::set_arg(
                    s,
                    arg_index,
                    arg_size,
                    arg_value,
                    |h| {
                        let m = mem_object(h)?;
                        Ok(match &m.inner.image {
                            Some(image) => MemArg::Image(image.clone()),
                            None => MemArg::Buffer(m.inner.buffer.clone()),
                        })
                    },
                    |h| Ok(super::sampler::sampler(h)?.inner.sampler.clone()),
                )
            };
        }
        let k = &k.inner.kernel;
        match k.arg_kinds().get(arg_index as usize) {
            None => Err(CL_INVALID_ARG_INDEX),
            Some(ArgKind::Pointer) => {
                if arg_size != std::mem::size_of::<cl_mem>() {
                    return Err(CL_INVALID_ARG_SIZE);
                }
                let handle = if arg_value.is_null() {
                    std::ptr::null_mut()
                } else {
                    // SAFETY: the C contract: `arg_value` holds `arg_size`
                    // bytes, the size of a `cl_mem`.
                    unsafe { arg_value.cast::<cl_mem>().read_unaligned() }
                };
                if handle.is_null() {
                    return k.set_arg_mem_pointer(arg_index, std::ptr::null()).cl();
                }
                k.set_arg_buffer(arg_index, &mem(handle)?.inner.buffer).cl()
            }
            Some(ArgKind::Image) => {
                if arg_size != std::mem::size_of::<cl_mem>() {
                    return Err(CL_INVALID_ARG_SIZE);
                }
                if arg_value.is_null() {
                    return Err(CL_INVALID_ARG_VALUE);
                }
                // SAFETY: the C contract: `arg_value` holds `arg_size` bytes,
                // the size of a `cl_mem` (checked above).
                let handle = unsafe { arg_value.cast::<cl_mem>().read_unaligned() };
                // A buffer, NULL or a released handle: not an image.
                let (_, image) = super::image::image(handle)?;
                k.set_arg_image(arg_index, &image).cl()
            }
            Some(&ArgKind::Scalar(n)) => {
                // The size first: `arg_size` is only the application's claim,
                // and no slice of it may be formed unless it is the scalar's.
                if arg_size != n {
                    return Err(CL_INVALID_ARG_SIZE);
                }
                if arg_value.is_null() {
                    return Err(CL_INVALID_ARG_VALUE);
                }
                // SAFETY: the C contract: `arg_value` holds `arg_size` bytes
                // (read now: the core copies them).
                k.set_arg_scalar(arg_index, unsafe { slice(arg_value.cast::<u8>(), arg_size) }).cl()
            }
        }
    })
}

/// `clSetKernelArgSVMPointer`.
pub(crate) unsafe extern "C" fn clSetKernelArgSVMPointer(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_value: *const c_void,
) -> cl_int {
    status("clSetKernelArgSVMPointer", || {
        let k = self::kernel(kernel)?;
        if let Some(s) = &k.inner.source {
            return s.set_arg_pointer(arg_index, arg_value.cast()).cl();
        }
        k.inner.kernel.set_arg_mem_pointer(arg_index, arg_value.cast()).cl()
    })
}

/// `clSetKernelArgMemPointerINTEL` (cl_intel_unified_shared_memory).
pub(crate) unsafe extern "C" fn clSetKernelArgMemPointerINTEL(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_value: *const c_void,
) -> cl_int {
    status("clSetKernelArgMemPointerINTEL", || {
        let k = self::kernel(kernel)?;
        if let Some(s) = &k.inner.source {
            return s.set_arg_pointer(arg_index, arg_value.cast()).cl();
        }
        k.inner.kernel.set_arg_mem_pointer(arg_index, arg_value.cast()).cl()
    })
}

/// `clSetKernelExecInfo`: `CL_KERNEL_EXEC_INFO_SVM_PTRS` and
/// `CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL` (arrays of pointers; the runtime
/// gets their union), `CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM` (a
/// `cl_bool`; `CL_INVALID_OPERATION` to enable it when no device of the
/// context has fine-grain system SVM), and the indirect-access flags of
/// USM (the core's [`Kernel::set_exec_info`]).
pub(crate) unsafe extern "C" fn clSetKernelExecInfo(
    kernel: cl_kernel,
    param_name: cl_kernel_exec_info,
    param_value_size: usize,
    param_value: *const c_void,
) -> cl_int {
    status("clSetKernelExecInfo", || {
        let k = self::kernel(kernel)?;
        // No value is larger than an address space: a size past `isize::MAX`
        // is the application's error, never a slice (which would abort).
        if param_value.is_null() || param_value_size > isize::MAX as usize {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `param_value` holds `param_value_size`
        // bytes (copied now).
        let value = unsafe { slice(param_value.cast::<u8>(), param_value_size) };
        const PTR: usize = std::mem::size_of::<usize>();
        let list = match param_name {
            exec_info::USM_PTRS => 0,
            CL_KERNEL_EXEC_INFO_SVM_PTRS => 1,
            CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM => {
                let b = <[u8; 4]>::try_from(value).map_err(|_| CL_INVALID_VALUE)?;
                let supported =
                    k.inner.kernel.context().devices().iter().any(|d| d.svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM != 0);
                if u32::from_ne_bytes(b) != 0 && !supported {
                    return Err(CL_INVALID_OPERATION);
                }
                return Ok(());
            }
            _ => return k.inner.kernel.set_exec_info(param_name, value).cl(),
        };
        if value.len() % PTR != 0 {
            return Err(CL_INVALID_VALUE);
        }
        let ptrs: Vec<usize> =
            value.chunks_exact(PTR).map(|c| usize::from_ne_bytes(c.try_into().unwrap_or([0; PTR]))).collect();
        let mut lists = sync::lock(&k.inner.indirect_ptrs);
        lists[list] = ptrs;
        let union: Vec<*const u8> = lists.iter().flatten().map(|&p| p as *const u8).collect();
        k.inner.kernel.set_exec_info_usm_ptrs(&union);
        Ok(())
    })
}

/// `clGetKernelInfo`.
pub(crate) unsafe extern "C" fn clGetKernelInfo(
    kernel: cl_kernel,
    param_name: cl_kernel_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetKernelInfo", param_value_size, param_value, param_value_size_ret, || {
            let k = self::kernel(kernel)?;
            let value = match param_name {
                kernel_param::REFERENCE_COUNT => crate::info::reference_count(&k),
                // The program is the ICD's object: its handle, pointer-sized.
                kernel_param::PROGRAM => InfoValue::Usize(handles::handle_of(&k.inner.program) as usize),
                CL_KERNEL_FUNCTION_NAME if k.inner.source.is_some() => {
                    InfoValue::Str(k.inner.source.as_ref().map(|s| s.name().to_owned()).unwrap_or_default())
                }
                CL_KERNEL_NUM_ARGS if k.inner.source.is_some() => {
                    InfoValue::U32(k.inner.source.as_ref().map_or(0, |s| s.num_args()))
                }
                _ => info::kernel_info(&k.inner.kernel, param_name).cl()?,
            };
            Ok((value, Handles::of_context(&k.inner.program.inner.context)))
        })
    }
}

/// `clGetKernelWorkGroupInfo`: `device` may be NULL when the kernel's
/// program has one device; the answers are the core's
/// (`info::kernel_work_group_info`).
pub(crate) unsafe extern "C" fn clGetKernelWorkGroupInfo(
    kernel: cl_kernel,
    device: cl_device_id,
    param_name: cl_kernel_work_group_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    if let Ok(Some(s)) = self::kernel(kernel).map(|k| k.inner.source.clone()) {
        return status("clGetKernelWorkGroupInfo", || {
            let k = self::kernel(kernel)?;
            check_work_group_device(&k.inner, device)?;
            let p = crate::pocl::get().ok_or(CL_INVALID_KERNEL)?;
            let bytes = s.pocl().work_group_info(p, param_name)?;
            // SAFETY: the C contract of the `param_value` arguments.
            unsafe { crate::entry::info_bytes(&bytes, param_value_size, param_value, param_value_size_ret) }
        });
    }
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetKernelWorkGroupInfo", param_value_size, param_value, param_value_size_ret, || {
            let k = self::kernel(kernel)?;
            check_work_group_device(&k.inner, device)?;
            Ok((info::kernel_work_group_info(param_name).cl()?, Handles::default()))
        })
    }
}

/// The device rule of `clGetKernelWorkGroupInfo`: NULL only when the
/// kernel's program has one device, else one of its devices.
fn check_work_group_device(k: &KernelObj, device: cl_device_id) -> ClRes<()> {
    let devices = &k.program.inner.devices;
    if device.is_null() {
        if devices.len() != 1 {
            return Err(CL_INVALID_DEVICE);
        }
    } else {
        let d = handles::get::<DeviceObj>(device.cast())?;
        if !devices.iter().any(|pd| Arc::ptr_eq(pd, &d.inner.device)) {
            return Err(CL_INVALID_DEVICE);
        }
    }
    Ok(())
}

/// `clGetKernelArgInfo`: a kernel from source answers PoCL's information;
/// built-ins keep none (`CL_KERNEL_ARG_INFO_NOT_AVAILABLE` for a valid index).
pub(crate) unsafe extern "C" fn clGetKernelArgInfo(
    kernel: cl_kernel,
    arg_index: cl_uint,
    param_name: cl_kernel_arg_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    status("clGetKernelArgInfo", || {
        let k = self::kernel(kernel)?;
        if let (Some(s), Some(p)) = (&k.inner.source, crate::pocl::get()) {
            if arg_index >= s.num_args() {
                return Err(CL_INVALID_ARG_INDEX);
            }
            let bytes = s.pocl().arg_info(p, arg_index, param_name)?;
            // SAFETY: the C contract of the `param_value` arguments.
            return unsafe { crate::entry::info_bytes(&bytes, param_value_size, param_value, param_value_size_ret) };
        }
        if arg_index >= k.inner.kernel.num_args() {
            return Err(CL_INVALID_ARG_INDEX);
        }
        Err(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    })
}

/// `clEnqueueNDRangeKernel`: 1 to 3 dimensions
/// (`CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS` is 3), checked by
/// [`NdRange::new`] (its errors: `CL_INVALID_WORK_DIMENSION`,
/// `CL_INVALID_GLOBAL_WORK_SIZE`, `CL_INVALID_GLOBAL_OFFSET`,
/// `CL_INVALID_WORK_ITEM_SIZE`, `CL_INVALID_WORK_GROUP_SIZE`). Built-ins
/// divide their work by the number of work-items, whatever the range's
/// shape and offset; a local size need not divide the global size
/// (`CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT`). A native kernel is
/// `CL_INVALID_KERNEL` here: it runs through `clEnqueueNativeKernel`.
pub(crate) unsafe extern "C" fn clEnqueueNDRangeKernel(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const usize,
    global_work_size: *const usize,
    local_work_size: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueNDRangeKernel", || {
        let q = queue(command_queue)?;
        let k = self::kernel(kernel)?;
        if work_dim == 0 || work_dim > info::MAX_WORK_ITEM_DIMENSIONS {
            return Err(CL_INVALID_WORK_DIMENSION);
        }
        if global_work_size.is_null() {
            return Err(CL_INVALID_GLOBAL_WORK_SIZE);
        }
        let n = work_dim as usize;
        // SAFETY: the C contract: each non-NULL array holds `work_dim`
        // entries (read unaligned: nothing promises `size_t` alignment).
        let read = |p: *const usize| (0..n).map(|i| unsafe { p.add(i).read_unaligned() }).collect::<Vec<_>>();
        let global = read(global_work_size);
        let offset = (!global_work_offset.is_null()).then(|| read(global_work_offset));
        let local = (!local_work_size.is_null()).then(|| read(local_work_size));
        let range = NdRange::new(&global, offset.as_deref(), local.as_deref()).cl()?;
        // SAFETY: the C contract of the wait list and `event`; the pointers
        // the kernel's arguments and execution info name stay valid until
        // the command completes (the OpenCL rule for USM and SVM memory).
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = match &k.inner.source {
                Some(s) => s.enqueue_with_exec_info(&q.inner.queue, &k.inner.kernel, &range, &wait).cl()?,
                None => kernel::enqueue_range(&q.inner.queue, &k.inner.kernel, &range, &wait).cl()?,
            };
            return_event(&q, ev, event)
        }
    })
}

/// `clEnqueueTask`: the kernel as one work-item.
pub(crate) unsafe extern "C" fn clEnqueueTask(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueTask", || {
        let q = queue(command_queue)?;
        let k = self::kernel(kernel)?;
        // SAFETY: as in `clEnqueueNDRangeKernel`.
        unsafe {
            let wait = wait_list(num_events_in_wait_list, event_wait_list)?;
            let ev = match &k.inner.source {
                Some(s) => {
                    let one = NdRange::new(&[1], None, Some(&[1])).cl()?;
                    s.enqueue_with_exec_info(&q.inner.queue, &k.inner.kernel, &one, &wait).cl()?
                }
                None => kernel::enqueue_task(&q.inner.queue, &k.inner.kernel, &wait).cl()?,
            };
            return_event(&q, ev, event)
        }
    })
}

/// The C function of `clEnqueueNativeKernel`.
type NativeFunc = Option<unsafe extern "C" fn(*mut c_void)>;

/// `clEnqueueNativeKernel`: `user_func` runs on the queue's worker with a
/// copy of `args` (16-byte aligned) in which each `args_mem_loc` entry (a
/// location inside `args`) holds the host address of the matching buffer
/// of `mem_list`. The buffers are mapped for the run (enqueued before it,
/// so their data is current in host memory) and unmapped after it (so the
/// host pages become their current copy); while it runs, their
/// `CL_MEM_MAP_COUNT` counts that map.
pub(crate) unsafe extern "C" fn clEnqueueNativeKernel(
    command_queue: cl_command_queue,
    user_func: NativeFunc,
    args: *mut c_void,
    cb_args: usize,
    num_mem_objects: cl_uint,
    mem_list: *const cl_mem,
    args_mem_loc: *mut *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    status("clEnqueueNativeKernel", || {
        let q = queue(command_queue)?;
        let f = user_func.ok_or(CL_INVALID_VALUE)?;
        if args.is_null() != (cb_args == 0) {
            return Err(CL_INVALID_VALUE);
        }
        let n = num_mem_objects as usize;
        let lists_given = [mem_list.is_null(), args_mem_loc.is_null()].map(|null| !null);
        if lists_given != [n > 0; 2] {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the C contract: `mem_list` and `args_mem_loc` hold
        // `num_mem_objects` entries each.
        let (handles_, locs) = unsafe { (slice(mem_list, n), slice(args_mem_loc.cast_const(), n)) };
        let buffers = handles_.iter().map(|&h| mem(h)).collect::<ClRes<Vec<_>>>()?;
        // Each location must hold a whole pointer inside `args`.
        const PTR: usize = std::mem::size_of::<*mut c_void>();
        let offsets = locs
            .iter()
            .map(|&l| {
                let off = (l as usize)
                    .checked_sub(args as usize)
                    .filter(|o| o.checked_add(PTR).is_some_and(|e| e <= cb_args));
                off.ok_or(CL_INVALID_VALUE)
            })
            .collect::<ClRes<Vec<usize>>>()?;
        let caps = info::device_info(q.inner.queue.device(), device_param::EXECUTION_CAPABILITIES).cl()?;
        if !matches!(caps, InfoValue::Bits(b) if b & exec_capabilities::NATIVE_KERNEL != 0) {
            return Err(CL_INVALID_OPERATION);
        }
        // SAFETY: the C contract of the wait list.
        let mut wait = unsafe { wait_list(num_events_in_wait_list, event_wait_list) }?;
        // The copy of `args`, aligned for any C type. `cb_args` is the
        // caller's: a size no allocation can hold is CL_OUT_OF_HOST_MEMORY,
        // never a panic (`vec!` would panic on capacity overflow, and abort
        // the process when the allocator refuses).
        let mut copy: Vec<u128> = Vec::new();
        copy.try_reserve_exact(cb_args.div_ceil(16)).map_err(|_| CL_OUT_OF_HOST_MEMORY)?;
        copy.resize(cb_args.div_ceil(16), 0);
        if cb_args > 0 {
            // SAFETY: `args` is readable for `cb_args` bytes (the C
            // contract) and `copy` holds at least as many.
            unsafe { std::ptr::copy_nonoverlapping(args.cast::<u8>(), copy.as_mut_ptr().cast::<u8>(), cb_args) };
        }
        let qq = &q.inner.queue;
        let mut mapped: Vec<(usize, *mut u8)> = Vec::new();
        let unmap_all = |mapped: &[(usize, *mut u8)], after: &[Event]| {
            for &(i, p) in mapped {
                if let Err(e) = map::enqueue_unmap_mem_object(qq, &buffers[i].inner.buffer, p, after) {
                    log::warn!("clEnqueueNativeKernel: unmapping buffer {i} of mem_list: {e}");
                }
            }
        };
        for (i, b) in buffers.iter().enumerate() {
            let b = &b.inner.buffer;
            // Flags 0: a read and write with no host-access rule (the
            // native kernel is the device's access, not the host's).
            match map::enqueue_map_buffer_after(qq, b, false, 0, 0, b.size(), &wait[..num_events_in_wait_list as usize])
            {
                Ok((p, ev)) => {
                    mapped.push((i, p.as_ptr()));
                    wait.push(ev);
                    // SAFETY: `offsets[i] + PTR <= cb_args <= copy`'s size.
                    unsafe {
                        copy.as_mut_ptr().cast::<u8>().add(offsets[i]).cast::<*mut u8>().write_unaligned(p.as_ptr())
                    };
                }
                Err(e) => {
                    unmap_all(&mapped, &[]);
                    return Err(e).cl();
                }
            }
        }
        let copy = Mutex::new(copy);
        let body = Arc::new(move |_: &[KernelArgValue]| {
            let mut copy = sync::lock(&copy);
            let p = if copy.is_empty() { std::ptr::null_mut() } else { copy.as_mut_ptr().cast::<c_void>() };
            // SAFETY: the application's function with its argument block
            // (the C contract of clEnqueueNativeKernel); the buffers it
            // reaches stay mapped until this command completes.
            unsafe { f(p) };
            Ok(())
        });
        let launched = Kernel::native(q.inner.queue.context(), body, Vec::new()).cl().and_then(|k| {
            // SAFETY: the buffers' host pages stay mapped (valid) until the
            // unmaps, which wait for this command; what else the function
            // reaches is the application's (the C contract).
            unsafe { kernel::enqueue_task(qq, &k, &wait) }.cl()
        });
        match launched {
            Ok(ev) => {
                unmap_all(&mapped, std::slice::from_ref(&ev));
                // SAFETY: the C contract of `event`.
                unsafe { return_event(&q, ev, event) }
            }
            Err(code) => {
                unmap_all(&mapped, &[]);
                Err(code)
            }
        }
    })
}
