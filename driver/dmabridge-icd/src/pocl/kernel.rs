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

use super::program::PoclProgram;
use super::{call, check, create, Pocl};
use dmabridge::runtime::queue::Completion;
use dmabridge::sync;

/// What an argument of a kernel from source is, by address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgClass {
    /// `__global` or `__constant`: a pointer (a buffer, USM or SVM pointer).
    Global,
    /// `__local`: a size, no value.
    Local,
    /// By value (a scalar, a vector or a struct): its bytes.
    Value,
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
            k.writes.push(q == CL_KERNEL_ARG_ADDRESS_GLOBAL && tq & u64::from(CL_KERNEL_ARG_TYPE_CONST) == 0);
            k.classes.push(match q {
                CL_KERNEL_ARG_ADDRESS_GLOBAL | CL_KERNEL_ARG_ADDRESS_CONSTANT => ArgClass::Global,
                CL_KERNEL_ARG_ADDRESS_LOCAL => ArgClass::Local,
                _ => ArgClass::Value,
            });
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
        Ok(n.min(dmabridge::runtime::info::MAX_WORK_GROUP_SIZE).to_ne_bytes().to_vec())
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
        let event = match self.enqueue(p, args, global, offset, local) {
            Ok(e) => e,
            Err(code) => return done.complete(Err(code)),
        };
        let data = Box::into_raw(Box::new(done));
        // SAFETY: PoCL's event, of which `on_complete` releases our
        // reference; `data` is a leaked Box<Completion> it takes back.
        let set = check(unsafe {
            call!(p, clSetEventCallback(event, CL_COMPLETE as cl_int, Some(on_complete), data.cast()))
        });
        if let Err(code) = set {
            // SAFETY: the callback was not registered: the Box is ours again.
            let done = unsafe { Box::from_raw(data) };
            // SAFETY: our reference to the event, not used after.
            unsafe { call!(p, clReleaseEvent(event)) };
            done.complete(Err(code));
        }
    }

    /// Sets `args` and enqueues the kernel on PoCL's queue under the
    /// kernel's lock; PoCL's event of the launch.
    fn enqueue(
        &self,
        p: &Pocl,
        args: &[RunArg],
        global: &[usize],
        offset: &[usize],
        local: Option<&[usize]>,
    ) -> Result<cl_event, cl_int> {
        let mut event: cl_event = std::ptr::null_mut();
        let _g = sync::lock(&self.lock);
        for (i, a) in args.iter().enumerate() {
            let i = i as cl_uint;
            // SAFETY: our kernel; each value is readable for its length,
            // a pointer argument is an address the launch keeps valid
            // (the enqueue's contract) and PoCL uses in place.
            check(unsafe {
                match a {
                    RunArg::Pointer(ptr) => call!(p, clSetKernelArgSVMPointer(self.handle, i, *ptr as *const _)),
                    RunArg::Value(b) => call!(p, clSetKernelArg(self.handle, i, b.len(), b.as_ptr().cast())),
                    RunArg::Local(n) => call!(p, clSetKernelArg(self.handle, i, *n, std::ptr::null())),
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

/// PoCL's `CL_COMPLETE` callback of a launch: ends the dmabridge command
/// with the launch's status (negative when it failed) and releases the
/// event. Runs on PoCL's thread; no panic leaves it.
extern "C" fn on_complete(event: cl_event, status: cl_int, data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `data` is the Box<Completion> `start` leaked for this
        // callback, which PoCL calls once.
        let done = unsafe { Box::from_raw(data.cast::<Completion>()) };
        if let Some(p) = super::get() {
            // SAFETY: the reference `start` left for this callback.
            unsafe { call!(p, clReleaseEvent(event)) };
        }
        done.complete(if status < 0 { Err(status) } else { Ok(()) });
    });
}
