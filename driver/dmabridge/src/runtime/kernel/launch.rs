//! Kernel launches: `clEnqueueTask`, `clEnqueueNDRangeKernel` (1 to 3
//! dimensions, [`NdRange`]) and `clEnqueueNativeKernel`.
//!
//! A built-in's launch (but the YUYV conversions', see `Builtin::split`) is
//! split across up to `CL_DEVICE_MAX_COMPUTE_UNITS`
//! threads with [`std::thread::scope`] inside the command, one contiguous
//! block of work-items each, but only when it moves at least 1 MiB per
//! thread: below that, spawning costs more than it saves, so small launches
//! run on the queue's worker alone. The threads end with the command, so the
//! queue's accounting (event status, blocking free) stays exact.

use crate::sys::addr::HostAddr;
use std::sync::Arc;

use crate::cl_err;
use crate::error::{code, ClResult};
use crate::memory::heap::{AllocInfo, AllocKind};
use crate::runtime::backend::{self, domain::DmaDomain};
use crate::runtime::buffer::commands::{check_readable, check_target, check_writable, Target, Undo};
use crate::runtime::buffer::store::{Location, Store};
use crate::runtime::buffer::Buffer;
use crate::runtime::context::Context;
use crate::runtime::event::Event;
use crate::runtime::queue::{CommandUse, Completion, Queue, UsedRange};
use crate::runtime::transfer;
use crate::sys::access::Access;

use super::builtin::Builtin;
use super::{builtin_kernel_names, kernel_command_type, Body, Kernel, KernelArgValue, NdRange};

/// Bytes a thread must have to move before a launch is split.
const BYTES_PER_THREAD: usize = 1 << 20;

/// `clEnqueueTask`: launches `kernel` as a single work-item (command type
/// `CL_COMMAND_TASK`), or runs a native kernel (`clEnqueueNativeKernel`,
/// `CL_COMMAND_NATIVE_KERNEL`). The arguments are captured now.
///
/// Errors as [`enqueue_nd_range`].
///
/// # Safety
/// Every pointer the kernel reaches (its pointer arguments, for the extent
/// the built-in documents, and anything a native kernel or indirect access
/// touches) must stay valid until the event completes, and nothing else may
/// write the bytes the kernel reads or access those it writes meanwhile.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::kernel::{self, ArgKind, Kernel};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let total = Arc::new(AtomicU32::new(0));
/// let t = total.clone();
/// let f = Arc::new(move |args: &[kernel::KernelArgValue]| {
///     t.fetch_add(args[0].as_u32().unwrap_or(0), Ordering::SeqCst);
///     Ok(())
/// });
/// let k = Kernel::native(&ctx, f, vec![ArgKind::Scalar(4)])?;
/// k.set_arg_scalar(0, &5u32.to_ne_bytes())?;
/// // SAFETY: the native kernel reaches no memory but its own captured counter.
/// let ev = unsafe { kernel::enqueue_task(&queue, &k, &[])? };
/// Event::wait(&[ev])?;
/// assert_eq!(total.load(Ordering::SeqCst), 5);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_task(queue: &Arc<Queue>, kernel: &Arc<Kernel>, wait_list: &[Event]) -> ClResult<Event> {
    let ty = if kernel.is_native() { kernel_command_type::NATIVE_KERNEL } else { kernel_command_type::TASK };
    launch(queue, kernel, 1, ty, wait_list)
}

/// `clEnqueueNDRangeKernel` with one dimension of `global_size` work-items
/// (`CL_COMMAND_NDRANGE_KERNEL`); a global size of 0 runs nothing (as
/// OpenCL 2.1). Built-ins give work-item `i` the `i`-th of `global_size`
/// equal slices of their work, so the result does not depend on the size.
///
/// A buffer argument ([`Kernel::set_arg_buffer`]) gets its allocation on
/// the queue's device at enqueue (its first use there); when the command
/// runs, the buffer's data is made current there, the kernel gets the
/// address of the buffer's bytes (a sub-buffer's origin), and afterwards
/// the device holds the current data. The command holds the buffer until
/// it ends.
///
/// The command declares the memory it uses ([`CommandUse`]): the whole
/// allocation each pointer argument and each `USM_PTRS` entry points into
/// (or, outside the context's heap, the bytes the built-in accesses), and,
/// for each indirect-access flag, every allocation of that type
/// ([`CommandUse::Kinds`]). On a device with an IOMMU domain (edu) those
/// USM allocations are made resident there before the kernel runs, and stay
/// resident until freed; if that fails the event ends with
/// `CL_OUT_OF_RESOURCES`.
///
/// Errors: `CL_INVALID_CONTEXT` if the queue or a wait-list event belongs to
/// another context than the kernel; `CL_INVALID_KERNEL` for a native kernel
/// (they run as tasks); `CL_INVALID_DEVICE` if the queue's device does not
/// offer the built-in; `CL_INVALID_KERNEL_ARGS` if an argument is unset, or
/// the built-in's arguments do not make sense (odd width, NULL or
/// overlapping buffers it accesses, a range past the end of its allocation
/// or buffer); `CL_MISALIGNED_SUB_BUFFER_OFFSET` for a sub-buffer argument
/// whose origin is not aligned to the device's
/// `CL_DEVICE_MEM_BASE_ADDR_ALIGN`; `CL_MEM_OBJECT_ALLOCATION_FAILURE` if a
/// buffer argument cannot be allocated on the device.
///
/// # Safety
/// As [`enqueue_task`].
///
/// ```
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::kernel::{self, Kernel};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let mut words = vec![0u32; 1024];
/// let k = Kernel::builtin(&ctx, cpu, "fill_pattern_u32")?;
/// k.set_arg_mem_pointer(0, words.as_mut_ptr().cast::<u8>())?;
/// k.set_arg_scalar(1, &(words.len() as u64).to_ne_bytes())?;
/// k.set_arg_scalar(2, &7u32.to_ne_bytes())?;
/// // SAFETY: `words` holds the 1024 words the kernel writes, and nothing else
/// // accesses it until the event completes.
/// let ev = unsafe { kernel::enqueue_nd_range(&queue, &k, 64, &[])? };
/// Event::wait(&[ev])?;
/// assert!(words.iter().all(|&w| w == 7));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_nd_range(
    queue: &Arc<Queue>,
    kernel: &Arc<Kernel>,
    global_size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    // SAFETY: forwarded to the caller.
    unsafe { enqueue_range(queue, kernel, &NdRange::linear(global_size), wait_list) }
}

/// `clEnqueueNDRangeKernel` with a checked 1-, 2- or 3-D `range`
/// (`CL_COMMAND_NDRANGE_KERNEL`): built-ins run `range.work_items()`
/// work-items (the product of the global sizes) as [`enqueue_nd_range`]
/// runs that many in one dimension, so their result does not depend on the
/// range's shape, offset or local size.
///
/// Errors as [`enqueue_nd_range`]; the range's own in [`NdRange::new`].
///
/// # Safety
/// As [`enqueue_task`].
///
/// ```
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::kernel::{self, Kernel, NdRange};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let mut words = vec![0u32; 1000];
/// let k = Kernel::builtin(&ctx, cpu, "fill_pattern_u32")?;
/// k.set_arg_mem_pointer(0, words.as_mut_ptr().cast::<u8>())?;
/// k.set_arg_scalar(1, &(words.len() as u64).to_ne_bytes())?;
/// k.set_arg_scalar(2, &7u32.to_ne_bytes())?;
/// let range = NdRange::new(&[8, 4, 2], None, Some(&[3, 4, 1]))?;
/// // SAFETY: `words` holds the words the kernel writes, and nothing else
/// // accesses it until the event completes.
/// let ev = unsafe { kernel::enqueue_range(&queue, &k, &range, &[])? };
/// Event::wait(&[ev])?;
/// assert!(words.iter().all(|&w| w == 7));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_range(
    queue: &Arc<Queue>,
    kernel: &Arc<Kernel>,
    range: &NdRange,
    wait_list: &[Event],
) -> ClResult<Event> {
    if kernel.is_native() {
        return cl_err!(InvalidKernel, "a native kernel has no NDRange: enqueue it as a task");
    }
    launch(queue, kernel, range.work_items(), kernel_command_type::NDRANGE_KERNEL, wait_list)
}

/// A native kernel as the command of an NDRange launch
/// (`CL_COMMAND_NDRANGE_KERNEL`): for a face whose native kernel runs an
/// NDRange on another executor (the ICD's OpenCL C kernels, which PoCL
/// runs), so that `CL_EVENT_COMMAND_TYPE` is the application's command.
/// Otherwise as [`enqueue_task`]: the body runs once, with the arguments
/// captured now, buffers made current on the CPU and imported dma-bufs
/// synchronised for the CPU while it runs.
///
/// Errors as [`enqueue_task`]; `CL_INVALID_KERNEL` for a kernel that is not native.
///
/// # Safety
/// As [`enqueue_task`].
///
/// ```
/// use std::sync::Arc;
/// use dmabridge::runtime::event::{command_type, Event};
/// use dmabridge::runtime::kernel::{self, Kernel};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let k = Kernel::native(&ctx, Arc::new(|_: &[_]| Ok(())), Vec::new())?;
/// // SAFETY: the kernel reaches no memory.
/// let ev = unsafe { kernel::enqueue_native_nd_range(&queue, &k, &[])? };
/// Event::wait(std::slice::from_ref(&ev))?;
/// assert_eq!(ev.command_type(), command_type::NDRANGE_KERNEL);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_native_nd_range(
    queue: &Arc<Queue>,
    kernel: &Arc<Kernel>,
    wait_list: &[Event],
) -> ClResult<Event> {
    if !kernel.is_native() {
        return cl_err!(InvalidKernel, "kernel {:?} is not a native kernel", kernel.name());
    }
    launch(queue, kernel, 1, kernel_command_type::NDRANGE_KERNEL, wait_list)
}

fn launch(queue: &Arc<Queue>, kernel: &Arc<Kernel>, global: usize, ty: u32, wait_list: &[Event]) -> ClResult<Event> {
    let ctx = queue.context();
    if !Arc::ptr_eq(ctx, kernel.context()) {
        return cl_err!(InvalidContext, "the kernel and the command queue belong to different contexts");
    }
    let state = kernel.snapshot();
    let unset: Vec<usize> = state.args.iter().enumerate().filter(|(_, a)| a.is_none()).map(|(i, _)| i).collect();
    if !unset.is_empty() {
        return cl_err!(InvalidKernelArgs, "kernel {:?}: arguments {unset:?} are not set", kernel.name());
    }
    let mut args: Vec<KernelArgValue> = state.args.into_iter().flatten().collect();
    if let Body::Builtin(b) = &kernel.body {
        if !builtin_kernel_names(queue.device()).contains(&b.name) {
            return cl_err!(InvalidDevice, "device {:?} does not offer built-in {:?}", queue.device().name, b.name);
        }
    }
    // Buffer arguments: their allocation on the queue's device (made now,
    // undone if the launch fails), passed as the address of their bytes.
    let mut targets: Vec<(usize, Target)> = Vec::new();
    // An image argument likewise: its storage, passed as the address of its
    // pixels with the image (`ImageAt`).
    for i in 0..args.len() {
        let (buffer, image) = match &args[i] {
            KernelArgValue::Buffer(b) => (b.clone(), None),
            KernelArgValue::Image(img) => (img.storage().clone(), Some(img.clone())),
            _ => continue,
        };
        let what = if image.is_some() { "the image" } else { "the buffer" };
        match check_target(queue, &buffer, &format!("{what} of argument {i}"))
            .and_then(|()| check_read_only_arg(&kernel.body, i, &buffer))
            .and_then(|()| Target::new(queue, &buffer))
        {
            Ok(t) => {
                let ptr = t.addr(0).0;
                args[i] = match image {
                    Some(image) => KernelArgValue::ImageAt(super::ImageAt { ptr: HostAddr(ptr), image }),
                    None => KernelArgValue::Pointer(ptr),
                };
                targets.push((i, t));
            }
            Err(e) => {
                targets.iter().for_each(|(_, t)| t.undo().run());
                return Err(e);
            }
        }
    }
    let undo: Vec<Undo> = targets.iter().map(|(_, t)| t.undo()).collect();
    launch_args(queue, kernel, global, ty, wait_list, state.usm_ptrs, state.indirect, args, targets)
        .inspect_err(|_| undo.iter().for_each(Undo::run))
}

/// The rest of [`launch`], with the buffer arguments placed on the queue's
/// device (`targets`: argument index and allocation) and `args` holding
/// their addresses.
#[allow(clippy::too_many_arguments)]
fn launch_args(
    queue: &Arc<Queue>,
    kernel: &Arc<Kernel>,
    global: usize,
    ty: u32,
    wait_list: &[Event],
    usm_ptrs: Vec<usize>,
    indirect: [bool; 3],
    args: Vec<KernelArgValue>,
    targets: Vec<(usize, Target)>,
) -> ClResult<Event> {
    let ctx = queue.context();
    let extents = match &kernel.body {
        Body::Builtin(b) => check_builtin(ctx, b, &args)?,
        Body::Native(_) | Body::NativeAsync(_) => Vec::new(),
    };
    for (i, t) in &targets {
        let len = extents.iter().find(|e| e.0 as usize == *i).map_or(0, |e| e.1);
        if len > t.buffer.size() {
            return cl_err!(
                InvalidKernelArgs,
                "{}: argument {i} needs {len} bytes, past the end of its {}-byte buffer",
                kernel.name(),
                t.buffer.size()
            );
        }
    }
    let whole = |p: HostAddr, len: usize| {
        ctx.heap().lookup(p).map_or(UsedRange::new(p, len), |i| UsedRange::new(i.base, i.size))
    };
    let mut ranges: Vec<UsedRange> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if let Some(p) = a.as_ptr().filter(|p| !p.is_null()) {
            let len = extents.iter().find(|e| e.0 as usize == i).map_or(0, |e| e.1);
            ranges.push(whole(HostAddr::of(p), len));
        }
    }
    ranges.extend(usm_ptrs.iter().filter(|&&p| p != 0).map(|&p| whole(HostAddr(p), 0)));
    // The memory of a lost device is inert (see `transfer::io`): a launch
    // that reaches it fails when it runs rather than read zeros or write
    // nowhere, on whichever device.
    let touched = ranges.clone();
    let [host, device, shared] = indirect;
    // On a device with an IOMMU domain (edu), everything the launch may
    // reach is made resident first, when the command runs.
    let reach = queue.device().dma_domain().map(|domain| Reach {
        ctx: ctx.clone(),
        domain,
        device: queue.device().index,
        ranges: ranges.clone(),
        indirect,
    });
    let usage = if host || device || shared {
        CommandUse::Kinds { host, device, shared, ranges }
    } else {
        CommandUse::Ranges(ranges)
    };
    let work: Work = match &kernel.body {
        // Nothing to hold while it runs: started here or by a worker, and
        // ended by its executor (no thread waits for it).
        Body::NativeAsync(f) if targets.is_empty() && reach.is_none() => {
            let f = f.clone();
            return queue.enqueue_async_with_use(ty, wait_list, usage, Box::new(move |done| f(&args, done)));
        }
        // Buffer locks and residency are held by the worker until it ended.
        Body::NativeAsync(f) => {
            let f = f.clone();
            Box::new(move || {
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                f(
                    &args,
                    Completion::new(move |r| {
                        let _ = tx.send(r);
                    }),
                );
                rx.recv().unwrap_or(Err(code::OUT_OF_RESOURCES))
            })
        }
        Body::Native(f) => {
            let f = f.clone();
            Box::new(move || f(&args))
        }
        Body::Builtin(b) if b.engine => {
            let device = queue.device().clone();
            let (dst, src) = (args[0].as_ptr().map_or(0, |p| p as usize), args[1].as_ptr().map_or(0, |p| p as usize));
            let size = extents.iter().find(|e| e.0 == 0).map_or(0, |e| e.1);
            Box::new(move || {
                if global == 0 || size == 0 {
                    return Ok(());
                }
                // SAFETY: the caller of the enqueue keeps both extents valid
                // until the event completes, and nothing else accesses them;
                // check_builtin refused NULL and overlapping extents.
                unsafe { backend::device_copy(&device, dst as *mut u8, src as *const u8, size) }
            })
        }
        Body::Builtin(b) => {
            let b: &'static Builtin = b;
            let bytes: usize = extents.iter().map(|e| e.1).fold(0, usize::saturating_add);
            let cores = if b.split { queue.device().compute_units as usize } else { 1 };
            let threads = cores.min(global).min(bytes / BYTES_PER_THREAD).max(1);
            Box::new(move || {
                // SAFETY: the caller of the enqueue keeps every pointer valid
                // for its extent until the event completes; check_builtin
                // refused NULL, overlapping and out-of-allocation extents.
                unsafe { run_builtin(b, &args, global, threads) };
                Ok(())
            })
        }
    };
    let work: Work = Box::new(move || {
        for r in &touched {
            transfer::io::check_reachable(r.start, r.len.max(1)).map_err(|e| e.code())?;
        }
        work()
    });
    // A native kernel is the CPU's code whatever the queue's device.
    let cpu_runs = kernel.is_native() || queue.device().backend().is_none();
    let work = with_buffers(targets, cpu_runs, work);
    let work = match reach {
        None => work,
        Some(reach) => Box::new(move || {
            reach.make_resident()?;
            work()
        }),
    };
    queue.enqueue_with_use(ty, wait_list, false, usage, work)
}

/// Wraps a launch's `work` for its buffer arguments: when it runs, each
/// buffer's data is made current on the queue's device (under its store's
/// lock, held while the kernel runs; stores locked in address order, as
/// buffer copies lock theirs), and afterwards recorded as written there.
/// `cpu_runs`: the CPU runs the kernel (the CPU device's, or any native
/// kernel), so imported dma-bufs are synchronised for it. The command holds
/// the buffers until it ends.
fn with_buffers(targets: Vec<(usize, Target)>, cpu_runs: bool, work: Work) -> Work {
    if targets.is_empty() {
        return work;
    }
    let mut stores: Vec<(Arc<Store>, Location)> = targets.iter().map(|(_, t)| (t.store().clone(), t.loc)).collect();
    stores.sort_by_key(|(s, _)| Arc::as_ptr(s));
    stores.dedup_by(|a, b| Arc::ptr_eq(&a.0, &b.0));
    Box::new(move || {
        let mut guards: Vec<_> = stores.iter().map(|(s, _)| s.lock()).collect();
        for ((s, loc), g) in stores.iter().zip(guards.iter_mut()) {
            s.make_current(g, *loc, false)?;
        }
        // Imported dma-bufs the CPU runs the kernel on: synchronised for
        // reading and writing (read-only ones for reading) while it runs.
        let mut syncs = Vec::new();
        for (s, _) in stores.iter().filter(|_| cpu_runs) {
            syncs.extend(s.cpu_sync(Access::ReadWrite, Some((0, s.size())))?);
        }
        // Even a failed kernel may have written: its device alone is current.
        let r = work();
        drop(syncs);
        for ((s, loc), g) in stores.iter().zip(guards.iter_mut()) {
            s.wrote(g, *loc);
        }
        drop(targets);
        r
    })
}

type Work = Box<dyn FnOnce() -> Result<(), i32> + Send>;

/// `CL_INVALID_OPERATION` if a built-in kernel writes argument `i` and the
/// buffer there is an imported read-only dma-buf (its mapping is read-only:
/// a write would fault), or reads it and the buffer is an external physical
/// buffer (`CL_MEM_EXTERNAL_PHYSICAL_AMD`, seed 002: kernels may only write
/// it). Native kernels are the application's code, bound by the buffer's
/// `CL_MEM_READ_ONLY` / `CL_MEM_WRITE_ONLY` flags like any other.
fn check_read_only_arg(body: &Body, i: usize, buffer: &Buffer) -> ClResult<()> {
    let Body::Builtin(b) = body else {
        return Ok(());
    };
    // The arguments each built-in writes; any pointer of one not listed.
    let written: &[usize] = match b.name {
        "checksum_adler32" => &[2],
        "fill_pattern_u32" | "copy_bytes" | "dma_copy" => &[0],
        "yuyv_to_rgba" | "yuyv_to_rgba_strided" | "yuyv_to_bgrx_strided" | "yuyv_to_rgba_image" => &[1],
        _ => &[i],
    };
    if written.contains(&i) {
        check_writable(buffer, &format!("{}: argument {i} (written by the kernel)", b.name))?;
    } else {
        check_readable(buffer, &format!("{}: argument {i} (read by the kernel)", b.name))?;
    }
    Ok(())
}

/// What a launch on a device with an IOMMU domain may reach, to be made
/// resident before it runs.
struct Reach {
    ctx: Arc<Context>,
    domain: Arc<DmaDomain>,
    device: u16,
    /// The pointer arguments' and `USM_PTRS` entries' allocations.
    ranges: Vec<UsedRange>,
    /// Indirect host, device and shared access.
    indirect: [bool; 3],
}

impl Reach {
    /// Makes resident the USM allocations of the context that the pointer
    /// arguments and `USM_PTRS` point into and, for each indirect-access
    /// flag, every live allocation of that type (device allocations: this
    /// device's own, the only ones it may access). They stay resident until
    /// freed. `Err` is the command's status (`CL_OUT_OF_RESOURCES`, the
    /// reason logged as a `log::warn!` record).
    fn make_resident(&self) -> Result<(), i32> {
        let heap = self.ctx.heap();
        let mut infos: Vec<AllocInfo> = self.ranges.iter().filter_map(|r| heap.lookup(r.start)).collect();
        let [host, device, shared] = self.indirect;
        if host || device || shared {
            heap.for_each_allocation(|i| {
                let wanted = match i.meta.kind {
                    AllocKind::Host => host,
                    AllocKind::Device => device && i.meta.device == Some(self.device),
                    AllocKind::Shared => shared,
                    AllocKind::Svm => false,
                };
                if wanted {
                    infos.push(*i);
                }
            });
        }
        for info in &infos {
            if let Err(e) = backend::residency::keep_resident(&self.ctx, &self.domain, info) {
                log::warn!("kernel launch: making the allocation at {:#x} resident: {e}", info.base);
                return Err(code::OUT_OF_RESOURCES);
            }
        }
        Ok(())
    }
}

/// The extent of every pointer argument, after checking the built-in's
/// rules: `CL_INVALID_KERNEL_ARGS` for nonsense scalars, a NULL pointer it
/// would access through, overlapping source and destination, or a range
/// running past the end of the context allocation it starts in.
fn check_builtin(ctx: &Context, b: &Builtin, args: &[KernelArgValue]) -> ClResult<Vec<(u32, usize)>> {
    let extents = match (b.extents)(args) {
        Ok(e) => e,
        Err(why) => return cl_err!(InvalidKernelArgs, "{}: {why}", b.name),
    };
    let addr = |i: u32| args[i as usize].as_ptr().map_or(0, |p| p as usize);
    for &(i, len) in &extents {
        let p = addr(i);
        if len == 0 {
            continue;
        }
        if p == 0 {
            return cl_err!(
                InvalidKernelArgs,
                "{}: argument {i} is NULL but the kernel accesses {len} bytes through it",
                b.name
            );
        }
        if p.checked_add(len).is_none() {
            return cl_err!(InvalidKernelArgs, "{}: argument {i} ({p:#x}) + {len} bytes overflows", b.name);
        }
        if let Some(info) = ctx.heap().lookup(HostAddr(p)) {
            if p + len > (info.base + info.size).0 {
                return cl_err!(
                    InvalidKernelArgs,
                    "{}: argument {i} needs {len} bytes from {p:#x}, past the end of its {}-byte allocation at {:#x}",
                    b.name,
                    info.size,
                    info.base
                );
            }
        }
    }
    let len_of = |i: u32| extents.iter().find(|e| e.0 == i).map_or(0, |e| e.1);
    for &(x, y) in b.disjoint {
        if ranges_overlap(addr(x), len_of(x), addr(y), len_of(y)) {
            return cl_err!(InvalidKernelArgs, "{}: arguments {x} and {y} overlap", b.name);
        }
    }
    Ok(extents)
}

fn ranges_overlap(a: usize, alen: usize, b: usize, blen: usize) -> bool {
    alen > 0 && blen > 0 && a < b.saturating_add(blen) && b < a.saturating_add(alen)
}

/// Runs `global` work-items of `b` on `threads` threads: thread `t` runs the
/// contiguous work-items `[t*G/T, (t+1)*G/T)`, whose units are contiguous.
///
/// # Safety
/// As [`Builtin::run`] for all units.
unsafe fn run_builtin(b: &'static Builtin, args: &[KernelArgValue], global: usize, threads: usize) {
    let units = (b.units)(args);
    if global == 0 || units == 0 {
        return;
    }
    let unit_of = |item: usize| (item as u128 * units as u128 / global as u128) as usize;
    let block = |t: usize| {
        let item = |t: usize| (t as u128 * global as u128 / threads as u128) as usize;
        let (first, end) = (item(t), item(t + 1));
        unit_of(first)..unit_of(end)
    };
    if threads <= 1 {
        // SAFETY: forwarded to the caller.
        unsafe { (b.run)(args, 0..units) };
        return;
    }
    std::thread::scope(|s| {
        for t in 0..threads {
            let r = block(t);
            // SAFETY: forwarded; the blocks are disjoint, so no two threads
            // write the same bytes.
            s.spawn(move || unsafe { (b.run)(args, r) });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::builtin::CPU_BUILTINS;
    use super::*;

    /// Every split of work-items over threads covers every unit once, even
    /// with more threads than the machine has and sizes that do not divide.
    #[test]
    fn splits_cover_every_unit_once() {
        let fill = CPU_BUILTINS.iter().find(|b| b.name == "fill_pattern_u32").unwrap();
        for (count, global, threads) in [(1000usize, 13usize, 7usize), (5, 13, 13), (13, 5, 5), (64, 1, 1), (7, 64, 3)]
        {
            let mut words = vec![0u32; count + 1];
            let args = [
                KernelArgValue::Pointer(words.as_mut_ptr() as usize),
                KernelArgValue::Scalar((count as u64).to_ne_bytes().to_vec()),
                KernelArgValue::Scalar(9u32.to_ne_bytes().to_vec()),
            ];
            // SAFETY: `words` holds count + 1 words and outlives the call.
            unsafe { run_builtin(fill, &args, global, threads) };
            assert!(words[..count].iter().all(|&w| w == 9), "{count} {global} {threads}");
            assert_eq!(words[count], 0);
        }
    }
}
