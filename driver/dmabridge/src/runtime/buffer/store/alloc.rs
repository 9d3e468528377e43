//! Allocating a store's locations on first use: the host pages (linked
//! with host-unified devices) and each device's own allocation, and undoing
//! them when an enqueue fails.

use super::*;

impl Store {
    /// Allocates the host pages if there are none; returns their address.
    pub(super) fn pages(&self, st: &mut State, for_loc: Location) -> ClResult<usize> {
        if let Some((p, _)) = st.pages {
            return Ok(p);
        }
        if let Some(p) = self.user_ptr {
            st.pages = Some((p, PagesOwner::User));
            return Ok(p);
        }
        // Whole pages, page-aligned: the pages are exported as a dma-buf and
        // mapped into IOMMU domains whole, so they must hold nothing else
        // (the alignment also covers every device's
        // CL_DEVICE_MEM_BASE_ADDR_ALIGN).
        let heap = self.context.buffer_heap()?;
        let page = crate::sys::page_size();
        let Some(whole_pages) = self.size.checked_next_multiple_of(page) else {
            return cl_err!(
                MemObjectAllocationFailure,
                "a buffer of {} bytes does not fit in whole pages of the address space",
                self.size
            );
        };
        let p = heap.alloc(whole_pages, page, AllocMeta::HOST).map_err(|e| {
            ClError::new(
                ClErrorKind::MemObjectAllocationFailure,
                format!("allocating the {} bytes of a buffer's host pages: {e}", self.size),
            )
        })?;
        st.pages = Some((p.as_ptr() as usize, PagesOwner::Heap));
        let s = st.stats_mut(for_loc);
        s.bytes_allocated += self.size as u64;
        Ok(p.as_ptr() as usize)
    }

    /// The host allocation (created on the host's first use): the user's
    /// pointer, the pages of a linked device allocation (obtained by
    /// mapping), or fresh pages. Returns the host address of byte 0.
    ///
    /// Also says whether this call made it (`true`), for
    /// [`undo_host_alloc`](Self::undo_host_alloc).
    pub fn host_alloc(&self) -> ClResult<(usize, bool)> {
        let mut st = self.lock();
        let fresh = !st.host_alloc;
        Ok((self.host_alloc_locked(&mut st)?, fresh))
    }

    /// Undoes the host allocation `host_alloc` just made (`fresh`), for a
    /// map whose enqueue failed: pages that only it used are given back.
    pub fn undo_host_alloc(&self, fresh: bool) {
        if !fresh {
            return;
        }
        let mut st = self.lock();
        st.host_alloc = false;
        if !st.devices.iter().any(|d| d.local.is_none()) && !st.pages_current_matters() {
            self.release_pages(&mut st, Location::Host);
        }
        st.stats.retain(|(l, _)| *l != Location::Host);
    }

    pub(super) fn host_alloc_locked(&self, st: &mut State) -> ClResult<usize> {
        if st.host_alloc {
            return Ok(st.pages.expect("a host allocation has pages").0);
        }
        // Pages of dmabridge's that exist before the host allocation were
        // allocated by a linked device allocation: the host maps them.
        let mapped_from_device = matches!(st.pages, Some((_, PagesOwner::Heap)));
        let p = self.pages(st, Location::Host)?;
        st.host_alloc = true;
        let s = st.stats_mut(Location::Host);
        s.allocations += 1;
        if mapped_from_device {
            s.obtained_by_mapping += 1;
        }
        Ok(p)
    }

    /// The allocation of `device` (created on the device's first use):
    /// linked (the host pages) if it has host-unified memory, else unlinked
    /// in its local memory.
    ///
    /// Also says whether this call made it (`true`), for
    /// [`undo_device_alloc`](Self::undo_device_alloc).
    pub fn device_alloc(&self, device: &Arc<Device>) -> ClResult<(Placed, bool)> {
        let mut st = self.lock();
        let fresh = st.device(device.index).is_none();
        Ok((self.device_alloc_locked(&mut st, device)?, fresh))
    }

    pub(super) fn device_alloc_locked(&self, st: &mut State, device: &Arc<Device>) -> ClResult<Placed> {
        if let Some(d) = st.device(device.index) {
            return Ok(match d.local {
                Some(p) => Placed { base: HostAddr(p), local_device: Some(device.index) },
                None => {
                    Placed { base: HostAddr(st.pages.expect("linked allocations have pages").0), local_device: None }
                }
            });
        }
        let loc = Location::Device(device.index);
        if self.imported.is_some() {
            // Import made every device's allocation; a device added later
            // cannot exist (a context's devices are fixed), but never copy.
            return cl_err!(
                InvalidOperation,
                "device {:?} was not part of the import of this buffer's memory: imported memory is never copied",
                device.name
            );
        }
        // Remote memory is every device's storage (see the module): a device
        // with local memory reaches it through its engine or the CPU.
        let placed = if device.host_unified_memory || self.remote.is_some() {
            let fresh = st.pages.is_none();
            let base = self.pages(st, loc)?;
            if let Some(domain) = device.dma_domain() {
                // A device behind an IOMMU reaches the linked pages through
                // its domain: they are made resident (pinned and mapped) for
                // the life of the allocation.
                // SAFETY: the pages are only reached through raw pointers
                // (commands, maps) while resident; no Rust reference into
                // them is held by dmabridge.
                if let Err(e) = unsafe { domain.make_resident(HostAddr(base), self.size) } {
                    if fresh {
                        self.release_pages(st, loc);
                    }
                    return cl_err!(
                        MemObjectAllocationFailure,
                        "mapping a buffer's {} host bytes into {:?}'s IOMMU domain: {e}",
                        self.size,
                        device.name
                    );
                }
            }
            Placed { base: HostAddr(base), local_device: None }
        } else {
            let Some(local) = device.local_memory() else {
                return cl_err!(
                    MemObjectAllocationFailure,
                    "device {:?} has neither host-unified nor local memory for a buffer",
                    device.name
                );
            };
            let p = local.alloc(self.size, device.max_alignment as usize).map_err(|e| {
                ClError::new(
                    ClErrorKind::MemObjectAllocationFailure,
                    format!("allocating {} bytes of {:?}'s memory for a buffer: {e}", self.size, device.name),
                )
            })?;
            st.stats_mut(loc).bytes_allocated += self.size as u64;
            Placed { base: HostAddr::of(p.as_ptr()), local_device: Some(device.index) }
        };
        st.devices.push(DeviceAlloc { device: device.clone(), local: placed.local_device.map(|_| placed.base.0) });
        st.stats_mut(loc).allocations += 1;
        Ok(placed)
    }

    /// Undoes the allocation `device_alloc` just made for `device` (a call
    /// that fails after it must leave the buffer as it was): frees its local
    /// memory, evicts linked pages from the device's IOMMU domain, gives back
    /// host pages that only it used, and forgets its counters. Does nothing
    /// if the allocation existed before (`fresh` false).
    pub fn undo_device_alloc(&self, device: &Arc<Device>, fresh: bool) {
        if !fresh {
            return;
        }
        let mut st = self.lock();
        let Some(i) = st.devices.iter().position(|d| Arc::ptr_eq(&d.device, device)) else {
            return;
        };
        // A command that ran (and failed) may have made this allocation the
        // holder of current data: then it stays.
        if st.devices[i].local.is_some() && st.local_current.contains(&device.index) {
            return;
        }
        let d = st.devices.remove(i);
        match (d.local, d.device.local_memory()) {
            (Some(p), Some(local)) => {
                if let Err(e) = local.free(p as *const u8) {
                    log::error!("undoing a buffer's allocation on {:?}: {e}", device.name);
                }
            }
            _ => {
                if let (Some(domain), Some((p, _))) = (device.dma_domain(), st.pages) {
                    if let Err(e) = domain.evict(HostAddr(p)) {
                        log::error!("undoing a buffer's residency on {:?}: {e}", device.name);
                    }
                }
                let others_linked = st.devices.iter().any(|d| d.local.is_none());
                if !st.host_alloc && !others_linked && !st.pages_current_matters() {
                    self.release_pages(&mut st, Location::Device(device.index));
                }
            }
        }
        st.stats.retain(|(l, _)| *l != Location::Device(device.index));
    }
}
