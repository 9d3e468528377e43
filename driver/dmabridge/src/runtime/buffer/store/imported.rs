//! Stores over memory dmabridge does not allocate: imported memory (a
//! dma-buf, host memory) with its CPU-access bracketing, and remote memory
//! (another device's BAR) kept alive by its keeper.

use super::*;
use crate::sys::addr::HostAddr;

/// Memory imported by `clImportMemoryARM` (seed 004): what keeps it
/// mapped (and pinned) for the store's life.
pub(crate) struct Imported {
    /// The imported dma-buf's mapping (with a dup of the application's fd),
    /// made on the CPU's first access ([`Store::cpu_sync`]) unless the
    /// import made it (for devices behind an IOMMU); its CPU accesses are
    /// bracketed with `DMA_BUF_IOCTL_SYNC`. `None` for host memory.
    pub dma_buf: Option<LazyMap>,
    /// The mappings, pins and bookkeeping the import holds (dropped after
    /// the devices' residency is evicted).
    pub(super) _keep: Box<dyn std::any::Any + Send + Sync>,
    /// The `DMA_BUF_IOCTL_SYNC` calls made.
    pub(super) syncs: Mutex<CpuSyncs>,
}

/// The `DMA_BUF_IOCTL_SYNC` calls the runtime made on an imported dma-buf
/// around its CPU accesses, by direction: (starts, ends).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSyncs {
    /// `DMA_BUF_SYNC_READ`.
    pub read: (u64, u64),
    /// `DMA_BUF_SYNC_WRITE`.
    pub write: (u64, u64),
    /// `DMA_BUF_SYNC_RW`.
    pub read_write: (u64, u64),
}

impl CpuSyncs {
    pub(super) fn of(&mut self, dir: Access) -> &mut (u64, u64) {
        match dir {
            Access::Read => &mut self.read,
            Access::Write => &mut self.write,
            Access::ReadWrite => &mut self.read_write,
        }
    }
}

impl Imported {
    /// Imported memory: a dma-buf's (lazy) mapping or none (host memory),
    /// whether nothing may write it, and what keeps it mapped and pinned.
    pub fn new(dma_buf: Option<LazyMap>, keep: Box<dyn std::any::Any + Send + Sync>) -> Imported {
        Imported { dma_buf, _keep: keep, syncs: Mutex::new(CpuSyncs::default()) }
    }

    pub(super) fn syncs(&self) -> std::sync::MutexGuard<'_, CpuSyncs> {
        sync::lock(&self.syncs)
    }

    /// Maps the part of the dma-buf the CPU is about to touch (`touch`,
    /// offset and length; `None`: nothing, the caller only brackets) if it
    /// has not yet, waits for the fences other drivers attached to it (a
    /// capture driver, a display, a GPU: the writers for a read, every user
    /// for a write) through the thread's io_uring, and begins a CPU access
    /// (`DMA_BUF_IOCTL_SYNC` start, which then finds them signalled instead
    /// of blocking in the ioctl).
    pub(super) fn begin(&self, lazy: &LazyMap, dir: Access, touch: Option<(usize, usize)>) -> Result<(), i32> {
        if let Some((offset, len)) = touch {
            lazy.ensure_range(offset, len).map_err(|e| {
                log::warn!("mapping an imported dma-buf for the CPU: {e}");
                crate::error::code::OUT_OF_RESOURCES
            })?;
        }
        // Kernels before 6.0 have no DMA_BUF_IOCTL_EXPORT_SYNC_FILE: the
        // sync start below then waits in the kernel.
        if let Ok(fence) = lazy.dma_buf().export_sync_file(dir) {
            crate::runtime::fence::wait_sync_file(&fence, || false)?;
        }
        lazy.dma_buf().begin_cpu_access(dir).map_err(|e| {
            log::warn!("beginning CPU access to an imported dma-buf: {e}");
            crate::error::code::OUT_OF_RESOURCES
        })?;
        self.syncs().of(dir).0 += 1;
        Ok(())
    }

    pub(super) fn end(&self, dir: Access) {
        let Some(lazy) = &self.dma_buf else { return };
        match lazy.dma_buf().end_cpu_access(dir) {
            Ok(()) => self.syncs().of(dir).1 += 1,
            Err(e) => log::warn!("ending CPU access to an imported dma-buf: {e}"),
        }
    }
}

impl std::fmt::Debug for Imported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Imported").field("dma_buf", &self.dma_buf).finish_non_exhaustive()
    }
}

/// What keeps a store's remote memory mapped, and says whether the
/// function it belongs to is still there.
pub(crate) trait RemoteKeep: std::fmt::Debug + Send + Sync {
    /// `CL_DEVICE_NOT_AVAILABLE` naming the function and why, once the
    /// function behind the remote memory is lost (its mapping is inert).
    fn lost(&self) -> Option<ClError>;
}

/// CPU access to an imported dma-buf in progress: `DMA_BUF_IOCTL_SYNC` end
/// is issued when dropped.
#[derive(Debug)]
pub(crate) struct CpuSync<'a> {
    pub(super) imported: &'a Imported,
    pub(super) dir: Access,
}

impl Drop for CpuSync<'_> {
    fn drop(&mut self) {
        self.imported.end(self.dir);
    }
}

impl Store {
    /// A store over `size` bytes of remote memory at `base` (an external
    /// physical buffer's surface in a BAR mapping): every device's
    /// allocation is linked to it (see the module). `keep` keeps the memory
    /// mapped (and what else must outlive the devices' use of it); it is
    /// dropped after every device's residency of `base` is evicted.
    pub fn new_remote(context: &Arc<Context>, size: usize, base: HostAddr, keep: Box<dyn RemoteKeep>) -> Store {
        let mut store = Store::new(context, size, Some(base.0));
        store.remote = Some(keep);
        store
    }

    /// A store over `size` imported bytes at `base`, linked on `devices`
    /// (every device of the context, each with host-unified memory; those
    /// behind an IOMMU already hold the pages resident, evicted when the
    /// store drops).
    pub fn new_imported(
        context: &Arc<Context>,
        size: usize,
        base: HostAddr,
        imported: Imported,
        devices: &[Arc<Device>],
    ) -> Store {
        let base = base.0;
        let mut state = State { defined: true, pages_current: true, ..State::default() };
        state.pages = Some((base, PagesOwner::User));
        for d in devices {
            state.devices.push(DeviceAlloc { device: d.clone(), local: None });
            state.stats_mut(Location::Device(d.index)).allocations += 1;
        }
        Store {
            context: context.clone(),
            size,
            user_ptr: Some(base),
            state: Mutex::new(state),
            imported: Some(imported),
            remote: None,
            restrictions: Restrictions::default(),
            bracket: None,
            exports: Mutex::default(),
        }
    }

    /// The store with `restrictions`, set by whoever made it (see
    /// [`Restrictions`]).
    pub fn with_restrictions(mut self, restrictions: Restrictions) -> Store {
        self.restrictions = restrictions;
        self
    }

    /// What its creator forbids on the store's memory.
    pub fn restrictions(&self) -> &Restrictions {
        &self.restrictions
    }

    /// The store with `bracket`: its memory is used only between an acquire
    /// and a release, on the bracket's devices (see [`Bracket`]).
    pub(crate) fn with_bracket(mut self, bracket: Bracket) -> Store {
        self.bracket = Some(bracket);
        self
    }

    /// The acquire/release bracket of memory imported from an external
    /// handle, `None` for other memory.
    pub fn bracket(&self) -> Option<&Bracket> {
        self.bracket.as_ref()
    }

    /// True if the store is imported memory (`clImportMemoryARM`).
    pub fn is_imported(&self) -> bool {
        self.imported.is_some()
    }

    /// Why the remote memory of the store can no longer be used, if it is
    /// remote memory whose function was lost ([`RemoteKeep::lost`]).
    pub fn remote_lost(&self) -> Option<ClError> {
        self.remote.as_ref()?.lost()
    }

    /// The command status for a store whose remote memory was lost
    /// ([`remote_lost`](Self::remote_lost)), the reason logged (a status
    /// carries no text); `Ok` for every other store.
    pub fn check_remote(&self) -> Result<(), i32> {
        match self.remote_lost() {
            None => Ok(()),
            Some(e) => {
                log::warn!("{e}");
                Err(e.code())
            }
        }
    }

    /// True if nothing may write the store's memory (an imported dma-buf
    /// opened read-only).
    pub fn read_only(&self) -> bool {
        self.restrictions.no_write.is_some()
    }

    /// The direction a sync of `dir` uses (memory nothing may write, such as
    /// a read-only dma-buf, is only read).
    fn sync_dir(&self, dir: Access) -> Access {
        if self.read_only() {
            Access::Read
        } else {
            dir
        }
    }

    /// Begins a CPU access of `dir` to an imported dma-buf that touches
    /// `touch` (offset and length in the store; `None`: nothing, a bracket
    /// only): maps what it touches if the CPU has not yet, then
    /// `DMA_BUF_IOCTL_SYNC` start (nothing for other memory), ended when the
    /// guard drops. The error is a command status.
    pub fn cpu_sync(&self, dir: Access, touch: Option<(usize, usize)>) -> Result<Option<CpuSync<'_>>, i32> {
        self.wait_export_fences(dir)?;
        let Some((imported, lazy)) = self.imported.as_ref().and_then(|i| Some((i, i.dma_buf.as_ref()?))) else {
            return Ok(None);
        };
        let dir = self.sync_dir(dir);
        imported.begin(lazy, dir, touch)?;
        Ok(Some(CpuSync { imported, dir }))
    }

    /// [`cpu_sync`](Self::cpu_sync) without a guard, for a map and an
    /// acquire: the unmap or release calls [`end_cpu`](Self::end_cpu) with
    /// the same direction.
    pub fn begin_cpu(&self, dir: Access, touch: Option<(usize, usize)>) -> Result<(), i32> {
        self.cpu_sync(dir, touch).map(std::mem::forget)
    }

    /// The bytes of an imported dma-buf the CPU has mapped so far (0 for
    /// other memory): what first accesses cost.
    pub fn cpu_mapped_bytes(&self) -> usize {
        self.imported.as_ref().and_then(|i| i.dma_buf.as_ref()).map_or(0, |l| l.mapped_bytes())
    }

    /// Ends the CPU access a map began ([`begin_cpu`](Self::begin_cpu)).
    pub fn end_cpu(&self, dir: Access) {
        if let Some(imported) = &self.imported {
            imported.end(self.sync_dir(dir));
        }
    }

    /// The `DMA_BUF_IOCTL_SYNC` calls made on an imported dma-buf (none for
    /// other memory).
    pub fn cpu_syncs(&self) -> CpuSyncs {
        self.imported.as_ref().map_or_else(CpuSyncs::default, |i| *i.syncs())
    }
}
