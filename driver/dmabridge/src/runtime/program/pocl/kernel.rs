//! A kernel from source as PoCL's kernel object: what its arguments are,
//! their info and work-group info, and one launch on PoCL's queue.
//!
//! OpenCL lets only one thread at a time set a kernel's arguments, and a
//! launch takes the values set when it is enqueued. dmabridge keeps each
//! launch's values itself (captured when the application enqueues it on a
//! dmabridge queue) and, when the command runs, sets all of them on PoCL's
//! kernel and enqueues it there under the kernel's lock, so launches of one
//! kernel from several queues never see each other's arguments. PoCL's
//! thread that ends the launch ends the dmabridge command (an event
//! callback): nobody waits on PoCL's queue.

use std::ffi::c_void;
use std::sync::Mutex;

use opencl_sys::*;

use super::image::{PoclImage, PoclSampler};
use super::program::PoclProgram;
use super::{call, check, create, Pocl};
use crate::runtime::kernel::ImageAt;
use crate::runtime::queue::Completion;
use crate::sync;

/// What an argument of a kernel from source is, by address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgClass {
    /// `__global` or `__constant`: a pointer (a buffer, USM or SVM pointer).
    Global,
    /// `__local`: a size, no value.
    Local,
    /// By value (a scalar, a vector or a struct): its bytes.
    Value,
    /// An image (`image1d_t` .. `image3d_t`, `image1d_buffer_t`, the
    /// arrays): PoCL reports these `__global`, but it takes a `cl_mem` of
    /// its own, never a pointer; which one is [`ImageArg`].
    Image(ImageArg),
    /// A `sampler_t`: PoCL takes a `cl_sampler` of its own.
    Sampler,
}

/// The declared type of an image argument (`CL_KERNEL_ARG_TYPE_NAME`), as
/// the `cl_mem_object_type` an image must have to be passed there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageArg {
    /// `CL_MEM_OBJECT_IMAGE2D` etc.
    pub object_type: cl_mem_object_type,
}

/// The image type an argument's type name declares (`None`: not an image).
pub fn image_type(type_name: &str) -> Option<cl_mem_object_type> {
    // PoCL answers the name as written, access qualifier apart.
    Some(match type_name.trim_end_matches('\0').trim() {
        "image1d_t" => CL_MEM_OBJECT_IMAGE1D,
        "image1d_buffer_t" => CL_MEM_OBJECT_IMAGE1D_BUFFER,
        "image1d_array_t" => CL_MEM_OBJECT_IMAGE1D_ARRAY,
        "image2d_t" => CL_MEM_OBJECT_IMAGE2D,
        "image2d_array_t" => CL_MEM_OBJECT_IMAGE2D_ARRAY,
        "image3d_t" => CL_MEM_OBJECT_IMAGE3D,
        _ => return None,
    })
}

/// One argument of a launch, as PoCL gets it.
#[derive(Debug, Clone)]
pub enum RunArg {
    /// An address in this process (0 for NULL), through `clSetKernelArgSVMPointer`.
    Pointer(usize),
    /// A value's bytes.
    Value(Vec<u8>),
    /// A `__local` allocation of this many bytes.
    Local(usize),
    /// An image where the launch placed it: PoCL gets an image of its own
    /// over those pixels ([`PoclImage`]).
    Image(ImageAt),
    /// A sampler: (normalized coordinates, addressing mode, filter mode);
    /// PoCL gets a sampler of its own.
    Sampler(bool, u32, u32),
}

/// PoCL's kernel, released when dropped.
#[derive(Debug)]
pub struct PoclKernel {
    handle: cl_kernel,
    /// Held while arguments are set and the launch enqueued.
    lock: Mutex<()>,
    /// Each argument's class.
    pub classes: Vec<ArgClass>,
    /// Whether the kernel may write through each argument: a `__global`
    /// pointer not qualified `const` (`__constant` ones are read-only).
    pub writes: Vec<bool>,
    /// `CL_KERNEL_FUNCTION_NAME`.
    pub name: String,
}

// SAFETY: OpenCL kernel objects may be used from any thread; argument
// setting is serialised by `lock`.
unsafe impl Send for PoclKernel {}
// SAFETY: as `Send`.
unsafe impl Sync for PoclKernel {}

impl Drop for PoclKernel {
    fn drop(&mut self) {
        if let Some(p) = super::get() {
            // SAFETY: our reference to PoCL's kernel.
            unsafe { call!(p, clReleaseKernel(self.handle)) };
        }
    }
}

impl PoclKernel {
    /// `clCreateKernel` of a built program (`CL_INVALID_KERNEL_NAME` for a
    /// name the program lacks, PoCL's answer).
    pub fn new(p: &Pocl, program: &PoclProgram, name: &str) -> Result<PoclKernel, cl_int> {
        let cname = std::ffi::CString::new(name).map_err(|_| CL_INVALID_KERNEL_NAME)?;
        // SAFETY: a built program and a C string.
        let handle = unsafe { create!(p, clCreateKernel(program.handle, cname.as_ptr())) }?;
        let mut k =
            PoclKernel { handle, lock: Mutex::new(()), classes: Vec::new(), writes: Vec::new(), name: name.to_owned() };
        let mut n: cl_uint = 0;
        // SAFETY: our kernel; a cl_uint answer.
        check(unsafe {
            call!(
                p,
                clGetKernelInfo(
                    handle,
                    CL_KERNEL_NUM_ARGS,
                    std::mem::size_of::<cl_uint>(),
                    (&mut n as *mut cl_uint).cast(),
                    std::ptr::null_mut()
                )
            )
        })?;
        for i in 0..n {
            let mut q: cl_kernel_arg_address_qualifier = 0;
            // SAFETY: our kernel, an index below its count; one qualifier.
            check(unsafe {
                call!(
                    p,
                    clGetKernelArgInfo(
                        handle,
                        i,
                        CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                        std::mem::size_of_val(&q),
                        (&mut q as *mut cl_kernel_arg_address_qualifier).cast(),
                        std::ptr::null_mut()
                    )
                )
            })?;
            // A cl_bitfield in the Khronos headers (opencl-sys says cl_uint):
            // read whatever size PoCL answers.
            let tq = k.arg_info(p, i, CL_KERNEL_ARG_TYPE_QUALIFIER)?;
            let tq = tq.iter().take(8).rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
            let type_name = String::from_utf8_lossy(&k.arg_info(p, i, CL_KERNEL_ARG_TYPE_NAME)?).into_owned();
            let class = match (q, image_type(&type_name)) {
                (_, Some(object_type)) => ArgClass::Image(ImageArg { object_type }),
                _ if type_name.trim_end_matches('\0') == "sampler_t" => ArgClass::Sampler,
                (CL_KERNEL_ARG_ADDRESS_GLOBAL | CL_KERNEL_ARG_ADDRESS_CONSTANT, _) => ArgClass::Global,
                (CL_KERNEL_ARG_ADDRESS_LOCAL, _) => ArgClass::Local,
                _ => ArgClass::Value,
            };
            // An image is written unless declared read_only (write_only and
            // read_write images are).
            let writes = match class {
                ArgClass::Image(_) => {
                    let a = k.arg_info(p, i, CL_KERNEL_ARG_ACCESS_QUALIFIER)?;
                    let a = a.get(..4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_ne_bytes);
                    a != CL_KERNEL_ARG_ACCESS_READ_ONLY
                }
                _ => q == CL_KERNEL_ARG_ADDRESS_GLOBAL && tq & u64::from(CL_KERNEL_ARG_TYPE_CONST) == 0,
            };
            k.writes.push(writes);
            k.classes.push(class);
        }
        Ok(k)
    }

    /// `clGetKernelArgInfo`'s answer as bytes (PoCL's).
    pub fn arg_info(&self, p: &Pocl, index: cl_uint, param: cl_kernel_arg_info) -> Result<Vec<u8>, cl_int> {
        Pocl::bytes(|s, v, r| {
            // SAFETY: our kernel; a buffer of `s` bytes or none.
            unsafe { call!(p, clGetKernelArgInfo(self.handle, index, param, s, v, r)) }
        })
    }

    /// `clGetKernelWorkGroupInfo`'s answer for PoCL's device as bytes;
    /// `CL_KERNEL_WORK_GROUP_SIZE` at most dmabridge's device limit
    /// (`CL_DEVICE_MAX_WORK_GROUP_SIZE`, which PoCL's 4096 exceeds).
    pub fn work_group_info(&self, p: &Pocl, param: cl_kernel_work_group_info) -> Result<Vec<u8>, cl_int> {
        let bytes = Pocl::bytes(|s, v, r| {
            // SAFETY: our kernel and PoCL's device; a buffer of `s` bytes or none.
            unsafe { call!(p, clGetKernelWorkGroupInfo(self.handle, p.device, param, s, v, r)) }
        })?;
        if param != CL_KERNEL_WORK_GROUP_SIZE {
            return Ok(bytes);
        }
        let n =
            bytes.get(..std::mem::size_of::<usize>()).and_then(|b| b.try_into().ok()).map_or(0, usize::from_ne_bytes);
        Ok(n.min(crate::runtime::info::MAX_WORK_GROUP_SIZE).to_ne_bytes().to_vec())
    }

    /// Checks a value argument as PoCL would set it (its size against the
    /// argument's type: `CL_INVALID_ARG_SIZE`), without keeping it: every
    /// launch sets its own values.
    pub fn check_value(&self, p: &Pocl, index: cl_uint, bytes: &[u8]) -> Result<(), cl_int> {
        let _g = sync::lock(&self.lock);
        // SAFETY: our kernel; `bytes` is readable for its length.
        check(unsafe { call!(p, clSetKernelArg(self.handle, index, bytes.len(), bytes.as_ptr().cast())) })
    }

    /// Starts the kernel once on PoCL's queue over the range (`dims`
    /// entries each; `local` may be absent) with `args`, without waiting:
    /// PoCL's thread that ends it calls `done` (through `on_complete`) with
    /// its status. No `clFinish` on PoCL's queue and no thread of ours
    /// waiting for PoCL: the launch costs the thread hand-offs of PoCL's own.
    pub fn start(
        &self,
        p: &Pocl,
        args: &[RunArg],
        global: &[usize],
        offset: &[usize],
        local: Option<&[usize]>,
        done: Completion,
    ) {
        // PoCL's images and samplers for this launch, released once it ended.
        let objects = match LaunchObjects::make(p, args) {
            Ok(o) => o,
            Err(code) => return done.complete(Err(code)),
        };
        let event = match self.enqueue(p, args, &objects, global, offset, local) {
            Ok(e) => e,
            Err(code) => return done.complete(Err(code)),
        };
        let data = Box::into_raw(Box::new(Launch { done, objects }));
        // SAFETY: PoCL's event, of which `on_complete` releases our
        // reference; `data` is a leaked Box<Launch> it takes back.
        let set = check(unsafe {
            call!(p, clSetEventCallback(event, CL_COMPLETE as cl_int, Some(on_complete), data.cast()))
        });
        if let Err(code) = set {
            // SAFETY: the callback was not registered: the Box is ours again.
            let launch = unsafe { Box::from_raw(data) };
            // A launch whose end cannot be seen: wait for it here before its
            // images go (PoCL's queue is in order).
            // SAFETY: PoCL's queue.
            unsafe { call!(p, clFinish(p.queue)) };
            // SAFETY: our reference to the event, not used after.
            unsafe { call!(p, clReleaseEvent(event)) };
            launch.done.complete(Err(code));
        }
    }

    /// Sets `args` and enqueues the kernel on PoCL's queue under the
    /// kernel's lock; PoCL's event of the launch.
    fn enqueue(
        &self,
        p: &Pocl,
        args: &[RunArg],
        objects: &LaunchObjects,
        global: &[usize],
        offset: &[usize],
        local: Option<&[usize]>,
    ) -> Result<cl_event, cl_int> {
        let mut event: cl_event = std::ptr::null_mut();
        let _g = sync::lock(&self.lock);
        let (mut next_image, mut next_sampler) = (objects.images.iter(), objects.samplers.iter());
        for (i, a) in args.iter().enumerate() {
            let i = i as cl_uint;
            // Images and samplers: the address of PoCL's handle, alive in
            // `objects` until the launch ends.
            let object: *const c_void = match a {
                RunArg::Image(_) => next_image.next().map_or(std::ptr::null(), |m| (&m.mem as *const cl_mem).cast()),
                RunArg::Sampler(..) => {
                    next_sampler.next().map_or(std::ptr::null(), |s| (&s.0 as *const cl_sampler).cast())
                }
                _ => std::ptr::null(),
            };
            // SAFETY: our kernel; values readable for their lengths; a pointer
            // is valid until the launch ends (the enqueue's contract), used in place.
            check(unsafe {
                match a {
                    RunArg::Pointer(ptr) => call!(p, clSetKernelArgSVMPointer(self.handle, i, *ptr as *const _)),
                    RunArg::Value(b) => call!(p, clSetKernelArg(self.handle, i, b.len(), b.as_ptr().cast())),
                    RunArg::Local(n) => call!(p, clSetKernelArg(self.handle, i, *n, std::ptr::null())),
                    RunArg::Image(_) => call!(p, clSetKernelArg(self.handle, i, std::mem::size_of::<cl_mem>(), object)),
                    RunArg::Sampler(..) => {
                        call!(p, clSetKernelArg(self.handle, i, std::mem::size_of::<cl_sampler>(), object))
                    }
                }
            })?;
        }
        let lp = local.map_or(std::ptr::null(), <[usize]>::as_ptr);
        // SAFETY: PoCL's queue and our kernel; the arrays hold `dims` entries.
        check(unsafe {
            call!(
                p,
                clEnqueueNDRangeKernel(
                    p.queue,
                    self.handle,
                    global.len() as cl_uint,
                    offset.as_ptr(),
                    global.as_ptr(),
                    lp,
                    0,
                    std::ptr::null(),
                    &mut event
                )
            )
        })?;
        Ok(event)
    }
}

/// PoCL's images and samplers made for one launch (see `pocl::image`).
struct LaunchObjects {
    images: Vec<PoclImage>,
    samplers: Vec<PoclSampler>,
}

impl LaunchObjects {
    fn make(p: &Pocl, args: &[RunArg]) -> Result<LaunchObjects, cl_int> {
        let mut o = LaunchObjects { images: Vec::new(), samplers: Vec::new() };
        for a in args {
            match a {
                // SAFETY: the launch keeps the image's pixels where it placed
                // them until it completes (the enqueue's contract).
                RunArg::Image(at) => o.images.push(unsafe { PoclImage::over(p, at) }?),
                RunArg::Sampler(n, am, fm) => o.samplers.push(PoclSampler::new(p, *n, *am, *fm)?),
                _ => {}
            }
        }
        Ok(o)
    }
}

/// What `on_complete` gets: the command to end and the launch's objects.
struct Launch {
    done: Completion,
    objects: LaunchObjects,
}

/// PoCL's `CL_COMPLETE` callback of a launch: ends the dmabridge command
/// with the launch's status (negative when it failed) and releases the
/// event and the launch's images and samplers (PoCL is done with them).
/// Runs on PoCL's thread; no panic leaves it.
extern "C" fn on_complete(event: cl_event, status: cl_int, data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `data` is the Box<Launch> `start` leaked for this
        // callback, which PoCL calls once.
        let launch = unsafe { Box::from_raw(data.cast::<Launch>()) };
        if let Some(p) = super::get() {
            // SAFETY: the reference `start` left for this callback.
            unsafe { call!(p, clReleaseEvent(event)) };
        }
        let Launch { done, objects } = *launch;
        drop(objects);
        done.complete(if status < 0 { Err(status) } else { Ok(()) });
    });
}
