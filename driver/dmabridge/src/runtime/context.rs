//! Contexts: a set of devices and the memory they share.

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::{AllocInfo, AllocKind, AllocMeta, Heap};
use crate::sync;
use crate::sys::addr::HostAddr;

use super::device::Device;
use super::free_gate::FreeGate;
use super::queue::Queue;

/// A context (`cl_context`): its devices and its heap of USM and SVM
/// allocations. Held by `Arc`; clone to retain.
#[derive(Debug)]
pub struct Context {
    devices: Vec<Arc<Device>>,
    heap: Heap,
    /// The host pages of buffer objects: memfd-backed like the USM heap (so
    /// they can be exported as dma-bufs) but apart from it, so that no USM
    /// function (`clMemFreeINTEL`, `clGetMemAllocInfoINTEL`) ever sees a
    /// buffer's storage. Reserved on the first buffer's first use.
    buffer_heap: OnceLock<Heap>,
    /// The local-memory allocations and the range claims. A free of local
    /// memory takes it for writing, a free in the heap for reading and only
    /// while claims exist (see "Frees and range claims" below).
    owned: RwLock<Owned>,
    /// What a free in the heap enters (its allocation's shard) and what making
    /// or running a claim closes (every shard).
    gate: FreeGate,
    /// Claims listed in `owned`: raised only with the gate closed, so a
    /// free that finds 0 through the gate has none to cancel.
    claims: AtomicUsize,
    /// The callbacks of `clSetContextDestructorCallback`, run in reverse
    /// order of registration when the context is dropped.
    destructors: Destructors,
    /// The live queues of the context, for `clMemBlockingFreeINTEL`
    /// ([`queue::queues_of`](super::queue::queues_of)): weak, as each queue
    /// holds its context. Added by `Queue::new`; a queue's drop removes the
    /// entries of dropped queues.
    queues: Mutex<Vec<Weak<Queue>>>,
}

/// A context's destructor callbacks.
#[derive(Default)]
struct Destructors(Mutex<Vec<Box<dyn FnOnce() + Send>>>);

impl std::fmt::Debug for Destructors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = sync::lock(&self.0).len();
        f.debug_struct("Destructors").field("count", &n).finish()
    }
}

/// What the context's frees work under.
#[derive(Debug, Default)]
struct Owned {
    /// USM device allocations that live in a device's local memory (a BAR
    /// device), by address: which device, size asked for, flags. Local
    /// memory is per device, shared by every context that has the device;
    /// this table says which of its allocations are this context's.
    local: BTreeMap<HostAddr, LocalAlloc>,
    /// The ranges enqueued commands hold ([`RangeClaim`]) until they run.
    claims: Vec<Claimed>,
    /// The id of the next claim.
    next_claim: u64,
}

/// One [`RangeClaim`] as the context lists it.
#[derive(Debug)]
struct Claimed {
    id: u64,
    /// The allocation's first byte.
    base: HostAddr,
    /// Set when the allocation is freed before the claim runs (by a free
    /// that holds the list only for reading).
    cancelled: AtomicBool,
}

/// A USM allocation in a device's local memory.
#[derive(Debug, Clone)]
struct LocalAlloc {
    device: Arc<Device>,
    size: usize,
    flags: u8,
}

/// What [`Context::free_usm_with`] freed.
#[derive(Debug)]
pub(crate) enum Freed<R> {
    /// A local-memory allocation of the context: its size, or why not.
    Local(ClResult<usize>),
    /// Not in local memory: what the heap's free said.
    Heap(R),
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
        Ok(Arc::new(Context {
            devices: list,
            heap,
            buffer_heap: OnceLock::new(),
            owned: RwLock::default(),
            gate: FreeGate::default(),
            claims: AtomicUsize::new(0),
            destructors: Destructors::default(),
            queues: Mutex::new(Vec::new()),
        }))
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
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::ext::usm;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let p = usm::host_mem_alloc(&ctx, &[], 100, 0)?;
    /// assert!(ctx.heap().lookup(HostAddr(p.as_ptr() as usize + 50)).is_some());
    /// usm::mem_free(&ctx, p.as_ptr())?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn heap(&self) -> &Heap {
        &self.heap
    }

    /// The heap of buffer objects' host pages (reserved on first use).
    pub(crate) fn buffer_heap(&self) -> ClResult<&Heap> {
        if let Some(h) = self.buffer_heap.get() {
            return Ok(h);
        }
        let heap = Heap::new().map_err(|e| {
            ClError::new(ClErrorKind::OutOfHostMemory, format!("reserving the context's buffer heap: {e}"))
        })?;
        Ok(self.buffer_heap.get_or_init(|| heap))
    }

    /// `clSetContextDestructorCallback`: `f` runs when the context is
    /// destroyed, i.e. when the last `Arc` of it drops (the application's
    /// references and those its queues, buffers, programs and events hold),
    /// after everything the context owned is released. Callbacks run in the
    /// reverse order of their registration, on the thread that drops the
    /// last reference, with no lock of the context held.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use dmabridge::sync;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let order = Arc::new(Mutex::new(Vec::new()));
    /// for i in 0..3 {
    ///     let o = order.clone();
    ///     ctx.on_destroy(Box::new(move || sync::lock(&o).push(i)));
    /// }
    /// let retained = ctx.clone();
    /// drop(ctx);
    /// assert!(sync::lock(&order).is_empty(), "still referenced");
    /// drop(retained);
    /// assert_eq!(*sync::lock(&order), [2, 1, 0]);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn on_destroy(&self, f: Box<dyn FnOnce() + Send>) {
        sync::lock(&self.destructors.0).push(f);
    }

    /// `clGetSupportedImageFormats`: the formats of
    /// [`image::format::supported_formats`](super::image::format::supported_formats)
    /// when a device of the context supports images, else none. The same
    /// list for every access flag (`CL_MEM_KERNEL_READ_AND_WRITE` included):
    /// the storage is linear memory the CPU reads and writes.
    ///
    /// Errors: `CL_INVALID_VALUE` when `flags` has a bit no memory object
    /// takes (`CL_MEM_KERNEL_READ_AND_WRITE` is allowed here) or combines
    /// exclusive access flags, or `image_type` is not an image type.
    ///
    /// ```
    /// use dmabridge::runtime::{buffer::mem_flags, context::Context, image::mem_object, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// assert!(!ctx.supported_image_formats(mem_flags::READ_WRITE, mem_object::IMAGE2D)?.is_empty());
    /// assert!(ctx.supported_image_formats(mem_flags::READ_WRITE, 0x10F0).is_err(), "a buffer is no image");
    /// assert!(ctx.supported_image_formats(1 << 40, mem_object::IMAGE2D).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn supported_image_formats(&self, flags: u64, image_type: u32) -> ClResult<Vec<ImageFormat>> {
        use super::image::{format, image_limits, mem_object, KERNEL_READ_AND_WRITE};
        super::buffer::check_exclusive(flags & !KERNEL_READ_AND_WRITE)?;
        if !mem_object::ALL.contains(&image_type) {
            return cl_err!(InvalidValue, "image_type {image_type:#x} is not an image type (CL_MEM_OBJECT_IMAGE*)");
        }
        if !self.devices().iter().any(|d| image_limits(d).is_some()) {
            return Ok(Vec::new());
        }
        Ok(format::supported_formats(image_type))
    }
}

pub use super::image::format::ImageFormat;

/// USM allocations in devices' local memory (BAR devices), and lookups over
/// every USM allocation of the context.
impl Context {
    /// A USM device allocation of `size` bytes aligned to `align` in
    /// `device`'s local memory, recorded as this context's with the
    /// allocation `flags`. `CL_INVALID_OPERATION` if the device has no local
    /// memory; else the errors of [`LocalMemory::alloc`](super::backend::LocalMemory::alloc)
    /// (`CL_INVALID_BUFFER_SIZE`, `CL_OUT_OF_RESOURCES`).
    ///
    /// `clDeviceMemAllocINTEL` on a device that is not host-unified (seed 000).
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// for d in ctx.devices() {
    ///     match d.local_memory() {
    ///         Some(_) => {
    ///             let p = ctx.local_alloc(d, 100, 0, 0)?;
    ///             assert_eq!(ctx.lookup(HostAddr(p.as_ptr() as usize + 99)).unwrap().base, HostAddr::of(p.as_ptr()));
    ///             dmabridge::ext::usm::mem_free(&ctx, p.as_ptr())?;
    ///             assert!(ctx.lookup(HostAddr::of(p.as_ptr())).is_none());
    ///         }
    ///         None => assert!(ctx.local_alloc(d, 100, 0, 0).is_err()),
    ///     }
    /// }
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn local_alloc(&self, device: &Arc<Device>, size: usize, align: usize, flags: u8) -> ClResult<NonNull<u8>> {
        let Some(memory) = device.local_memory() else {
            return cl_err!(InvalidOperation, "device {:?} has no local memory (it is host-unified)", device.name);
        };
        let p = memory.alloc(size, align)?;
        let entry = LocalAlloc { device: device.clone(), size, flags };
        self.owned_write().local.insert(HostAddr::of(p.as_ptr()), entry);
        Ok(p)
    }

    /// Frees the local-memory USM allocation that starts at `ptr`: `None`
    /// if `ptr` is in no device's local memory (then it is the heap's
    /// business); else its size, or `CL_INVALID_VALUE` (changing nothing)
    /// for an interior pointer, a freed one, or one that is not this
    /// context's USM allocation (another context's, or a buffer's storage).
    ///
    /// `clMemFreeINTEL` of a device allocation of a BAR device (seed 000),
    /// with the lock held (see [`Context::free_usm_with`]).
    fn local_free_in(&self, owned: &mut Owned, ptr: HostAddr) -> Option<ClResult<usize>> {
        let table = &mut owned.local;
        let found = table.range(..=ptr).next_back().map(|(&b, a)| (b, a.clone()));
        match found {
            Some((base, a)) if base == ptr => {
                let memory = a.device.local_memory().expect("recorded for a device with local memory");
                let r = memory.free(ptr.as_ptr());
                if r.is_ok() {
                    table.remove(&base);
                }
                Some(r)
            }
            Some((base, a)) if ptr - base < a.size => Some(cl_err!(
                InvalidValue,
                "{ptr:#x} points inside the device allocation at {base:#x} on {:?}; free takes the pointer the allocation function returned",
                a.device.name
            )),
            _ => {
                let owner = self.devices.iter().find(|d| d.local_memory().is_some_and(|m| m.contains(ptr.as_ptr())))?;
                Some(cl_err!(
                    InvalidValue,
                    "{ptr:#x} lies in the memory of {:?} but is not a USM allocation of this context (never allocated here, already freed, or a buffer's storage)",
                    owner.name
                ))
            }
        }
    }

    /// The USM or SVM allocation `ptr` points into (any interior byte): the
    /// heap's (host, shared, SVM, and device allocations of host-unified
    /// devices), then this context's allocations in its devices' local
    /// memory, reported as device allocations of their device.
    ///
    /// `clGetMemAllocInfoINTEL` and `clMemBlockingFreeINTEL` (seed 000).
    ///
    /// ```
    /// use dmabridge::sys::addr::HostAddr;
    /// use dmabridge::ext::usm;
    /// use dmabridge::memory::heap::AllocKind;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(Platform::get().devices())?;
    /// let p = usm::host_mem_alloc(&ctx, &[], 100, 0)?;
    /// let info = ctx.lookup(HostAddr(p.as_ptr() as usize + 50)).unwrap();
    /// assert_eq!((info.base, info.size, info.meta.kind), (HostAddr::of(p.as_ptr()), 100, AllocKind::Host));
    /// usm::mem_free(&ctx, p.as_ptr())?;
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn lookup(&self, ptr: HostAddr) -> Option<AllocInfo> {
        if let Some(info) = self.heap.lookup(ptr) {
            return Some(info);
        }
        lookup_local(&self.owned_read(), ptr)
    }

    /// Number of this context's USM allocations in devices' local memory.
    ///
    /// No OpenCL function of its own: for tests and leak checks.
    ///
    /// ```
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// assert_eq!(Context::new(Platform::get().devices())?.local_allocations(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn local_allocations(&self) -> usize {
        self.owned_read().local.len()
    }
}

/// The allocation of local memory that `ptr` points into, if this
/// context's.
fn lookup_local(owned: &Owned, ptr: HostAddr) -> Option<AllocInfo> {
    let (&base, a) = owned.local.range(..=ptr).next_back()?;
    (ptr - base < a.size).then(|| AllocInfo {
        base,
        size: a.size,
        meta: AllocMeta { kind: AllocKind::Device, device: Some(a.device.index), flags: a.flags },
    })
}

/// Frees and range claims: what keeps an enqueued command that acts on an
/// allocation's pages (a migration drops or commits them) from acting on
/// memory that changed hands before it ran.
///
/// A safe command such as `clEnqueueMigrateMemINTEL` checks its range at
/// enqueue, but runs later; meanwhile the application may free the
/// allocation (`clMemFreeINTEL` does not wait) and the heap may hand its
/// pages to a new allocation. The command therefore claims its range at
/// enqueue ([`Context::claim_range`]); a free of the allocation cancels the
/// claim ([`Context::free_usm_with`], [`Context::free_heap_with`]), and the
/// command acts only through [`RangeClaim::run`], which skips a cancelled
/// claim. Claiming and running a claim close the context's free gate (every
/// shard) and hold `owned`; a free in the heap enters the gate (only the
/// shard of its allocation's pool, the allocating thread's) and cancels
/// under `owned` read, which it takes only when claims exist; a free of
/// local memory holds `owned` for writing. So no free happens between a
/// check and the action it guards, and the common free (heap, no claims,
/// of the freeing thread's own allocation) takes no lock another thread's
/// free takes.
impl Context {
    fn owned_read(&self) -> RwLockReadGuard<'_, Owned> {
        sync::read(&self.owned)
    }

    fn owned_write(&self) -> RwLockWriteGuard<'_, Owned> {
        sync::write(&self.owned)
    }

    /// Claims `[start, start + len)` if it lies inside one USM or SVM
    /// allocation of the context (see [`Context::lookup`]); an empty range
    /// must start inside one. `None` otherwise, including for ranges that
    /// would run past the end of the address space.
    pub(crate) fn claim_range(self: &Arc<Self>, start: HostAddr, len: usize) -> Option<RangeClaim> {
        let _closed = self.gate.close();
        let mut owned = self.owned_write();
        let in_heap = self.heap.lookup(start);
        let info = in_heap.or_else(|| lookup_local(&owned, start)).filter(|i| range_inside(i, start, len))?;
        let id = owned.next_claim;
        owned.next_claim += 1;
        owned.claims.push(Claimed { id, base: info.base, cancelled: AtomicBool::new(false) });
        self.claims.fetch_add(1, Ordering::Relaxed);
        Some(RangeClaim { ctx: self.clone(), id, info, in_heap: in_heap.is_some() })
    }

    /// Frees the USM allocation that starts at `ptr`: a local-memory one of
    /// this context as `local_free_in` does, else (the heap's) by
    /// `heap_free`; if that succeeds, every claim on the allocation is
    /// cancelled before the lock is let go, so that no command enqueued
    /// before the free acts on the pages afterwards. A refused free cancels
    /// nothing. Every free of a USM allocation goes through here.
    pub(crate) fn free_usm_with<T, E>(
        &self,
        ptr: HostAddr,
        heap_free: impl FnOnce() -> Result<T, E>,
    ) -> Freed<Result<T, E>> {
        // Local memory is the devices' own address ranges: no lock needed
        // to tell it from the heap's.
        let local = self.devices.iter().any(|d| d.local_memory().is_some_and(|m| m.contains(ptr.as_ptr())));
        if !local {
            return Freed::Heap(self.free_heap_with(ptr, heap_free));
        }
        let mut owned = self.owned_write();
        if let Some(r) = self.local_free_in(&mut owned, ptr) {
            return Freed::Local(r);
        }
        let freed = heap_free();
        if freed.is_ok() {
            cancel_claims(&owned, ptr);
        }
        Freed::Heap(freed)
    }

    /// [`Context::free_usm_with`] for an allocation of the heap only (SVM).
    /// Runs `heap_free` and, if it freed the allocation at `ptr`, cancels
    /// the claims on it, inside the free gate: no claim is made or run
    /// between the free and its cancellation.
    pub(crate) fn free_heap_with<T, E>(&self, ptr: HostAddr, heap_free: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let _freeing = self.gate.free(self.heap.shard_of(ptr));
        let freed = heap_free();
        // Claims are only added with the gate closed: 0 seen here stays 0
        // until `_freeing` drops.
        if freed.is_ok() && self.claims.load(Ordering::Relaxed) != 0 {
            cancel_claims(&self.owned_read(), ptr);
        }
        freed
    }
}

fn cancel_claims(owned: &Owned, base: HostAddr) {
    for c in owned.claims.iter().filter(|c| c.base == base) {
        c.cancelled.store(true, Ordering::Relaxed);
    }
}

/// True if `[start, start + len)` lies inside `info` (an empty range: if
/// `start` does), without overflowing whatever the values.
pub(crate) fn range_inside(info: &AllocInfo, start: HostAddr, len: usize) -> bool {
    match start.offset_from(info.base) {
        Some(off) if off < info.size => off.checked_add(len).is_some_and(|end| end <= info.size),
        _ => false,
    }
}

/// An enqueued command's claim on a range inside one allocation of its
/// context ([`Context::claim_range`]): dropped when the command has run or
/// will never run.
#[derive(Debug)]
pub(crate) struct RangeClaim {
    ctx: Arc<Context>,
    id: u64,
    /// The allocation the range lies in, as it was when claimed.
    pub info: AllocInfo,
    /// True if the allocation is in the context's heap (false: in a
    /// device's local memory).
    pub in_heap: bool,
}

impl RangeClaim {
    /// Runs `f` on the claimed allocation unless it was freed since the
    /// claim was made (then `None`); no free of the context happens while
    /// `f` runs.
    pub(crate) fn run<R>(self, f: impl FnOnce(&AllocInfo) -> R) -> Option<R> {
        // Closed gate: no free in the heap; `owned` read: none of local
        // memory (and the cancel flags were set before either let go).
        let closed = self.ctx.gate.close();
        let owned = self.ctx.owned_read();
        let live = owned.claims.iter().any(|c| c.id == self.id && !c.cancelled.load(Ordering::Relaxed));
        let r = live.then(|| f(&self.info));
        drop(owned);
        drop(closed);
        r
    }
}

impl Drop for RangeClaim {
    fn drop(&mut self) {
        let mut owned = self.ctx.owned_write();
        let before = owned.claims.len();
        owned.claims.retain(|c| c.id != self.id);
        self.ctx.claims.fetch_sub(before - owned.claims.len(), Ordering::Relaxed);
    }
}

/// The context's live queues.
impl Context {
    /// Adds `queue`, made on this context, to its live queues.
    pub(crate) fn add_queue(&self, queue: &Arc<Queue>) {
        let mut queues = sync::lock(&self.queues);
        queues.retain(|w| w.strong_count() > 0);
        queues.push(Arc::downgrade(queue));
    }

    /// The live queues. Upgraded under the lock, and let go of after it:
    /// dropping the last reference to a queue takes this lock again.
    pub(crate) fn live_queues(&self) -> Vec<Arc<Queue>> {
        sync::lock(&self.queues).iter().filter_map(Weak::upgrade).collect()
    }

    /// Forgets the queues that were dropped (a queue's drop).
    pub(crate) fn forget_dropped_queues(&self) {
        sync::lock(&self.queues).retain(|w| w.strong_count() > 0);
    }
}

/// Releasing a context frees what it still holds in devices' local memory:
/// that memory outlives the context (it is the device's).
impl Drop for Context {
    fn drop(&mut self) {
        let table = std::mem::take(&mut sync::get_mut_rw(&mut self.owned).local);
        for (base, a) in table {
            if let Some(m) = a.device.local_memory() {
                let _ = m.free(base.as_ptr());
            }
        }
        let callbacks = std::mem::take(sync::get_mut(&mut self.destructors.0));
        for f in callbacks.into_iter().rev() {
            f();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::heap::tests::finishes_on_another_shard;
    use crate::memory::heap::{AllocKind, AllocMeta};
    use crate::runtime::platform::Platform;

    // What clHostMemAllocINTEL / clDeviceMemAllocINTEL and clMemFreeINTEL do
    // with a context of the CPU device, at this layer (no ext::usm here: the
    // runtime is below the extensions).
    fn alloc(ctx: &Context, meta: AllocMeta) -> usize {
        ctx.heap().alloc(4096, 0, meta).unwrap().as_ptr() as usize
    }

    fn free(ctx: &Context, p: usize) {
        match ctx.free_usm_with(HostAddr(p), || ctx.heap().free(HostAddr(p))) {
            Freed::Heap(r) => drop(r.unwrap()),
            Freed::Local(_) => panic!("{p:#x} is not in the heap"),
        }
    }

    #[test]
    fn host_memory_is_no_local_free() {
        // Was the doc example of the public `Context::local_free` (removed:
        // no caller but its examples; `local_free_in` is the one in use).
        let ctx = Context::new(Platform::get().devices()).unwrap();
        let v = [0u8; 16];
        assert_eq!(ctx.local_free_in(&mut ctx.owned_write(), HostAddr(v.as_ptr() as usize)), None, "host memory");
    }

    #[test]
    fn a_usm_free_in_the_heap_takes_no_lock_a_claim_or_another_free_holds() {
        let cpu = Platform::get().cpu();
        let ctx = Context::new(std::slice::from_ref(cpu)).unwrap();
        // What a local-memory free, a claim being made and one being run
        // hold: `owned` for writing. Without claims, a free in the heap
        // does not wait for it (nor for the gate shard of another thread).
        let held = (ctx.owned_write(), ctx.gate.free(crate::memory::heap::shard()));
        let done = finishes_on_another_shard(held, || {
            let device = AllocMeta { kind: AllocKind::Device, device: Some(cpu.index), flags: 0 };
            for _ in 0..1000 {
                let p = alloc(&ctx, device);
                free(&ctx, p);
            }
        });
        assert!(done, "a free waited for the context's lock");
        assert_eq!(ctx.heap().stats().live, 0);
    }

    #[test]
    fn a_free_cancels_the_claims_on_its_allocation_and_no_other() {
        let cpu = Platform::get().cpu();
        let ctx = Context::new(std::slice::from_ref(cpu)).unwrap();
        let a = alloc(&ctx, AllocMeta::HOST);
        let b = alloc(&ctx, AllocMeta::HOST);
        let (ca, cb) = (ctx.claim_range(HostAddr(a), 4096).unwrap(), ctx.claim_range(HostAddr(b + 8), 8).unwrap());
        assert_eq!(ctx.claims.load(Ordering::Relaxed), 2);
        // From another thread (another shard of the gate): still cancelled.
        assert!(finishes_on_another_shard((), || free(&ctx, a)));
        assert_eq!(ca.run(|_| ()), None, "freed before it ran");
        assert_eq!(cb.run(|i| i.base.0), Some(b));
        assert_eq!(ctx.claims.load(Ordering::Relaxed), 0, "run claims are dropped");
        free(&ctx, b);
    }
}
