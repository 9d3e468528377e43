//! The lock that orders a context's frees against its range claims without
//! making frees take one shared lock.
//!
//! Frees are the common path (every `clMemFreeINTEL`); claims are rare
//! (`clEnqueueMigrateMemINTEL`, `clEnqueueSVMMigrateMem`). So the gate is a
//! big-reader lock: one reader-writer lock per shard, each on a cache line
//! of its own. A free takes one shard for reading — the shard of the pool
//! its allocation came from, which is the allocating thread's, so threads
//! that free what they allocated touch no lock another one touches — and
//! whoever must exclude every free (making a claim, running one) takes all
//! shards for writing, in order. (Which shard a free takes does not matter
//! for the exclusion; the allocation's rather than the calling thread's
//! saves the thread-local of the thread's shard, which in the ICD, a shared
//! library, costs a call into the dynamic linker.)

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::memory::heap::SHARDS;
use crate::sync;

/// One shard's lock, alone on its cache line(s).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded(RwLock<()>);

/// See the module doc.
#[derive(Debug, Default)]
pub(crate) struct FreeGate {
    shards: [Padded; SHARDS],
}

/// Held by a free: no claim is made or run meanwhile.
pub(crate) struct Freeing<'a>(#[allow(dead_code)] RwLockReadGuard<'a, ()>);

/// Held while no free may happen (all shards).
pub(crate) struct Closed<'a>(#[allow(dead_code)] Vec<RwLockWriteGuard<'a, ()>>);

impl FreeGate {
    /// Enters as a free, in shard `shard` (below [`SHARDS`], for reading):
    /// the heap's [`Heap::shard_of`](crate::memory::heap::Heap::shard_of)
    /// the allocation.
    pub(crate) fn free(&self, shard: usize) -> Freeing<'_> {
        Freeing(sync::read(&self.shards[shard % SHARDS].0))
    }

    /// Waits until no free runs and keeps every free out until the guard
    /// drops.
    pub(crate) fn close(&self) -> Closed<'_> {
        Closed(self.shards.iter().map(|s| sync::write(&s.0)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_gate_keeps_frees_out_and_frees_keep_it_from_closing() {
        let gate = FreeGate::default();
        let f = gate.free(0);
        // A free of another shard or the same enters beside it; closing
        // waits for them.
        std::thread::scope(|s| {
            s.spawn(|| drop(gate.free(1))).join().unwrap();
            s.spawn(|| drop(gate.free(0))).join().unwrap();
            let closer = s.spawn(|| drop(gate.close()));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!closer.is_finished(), "a free is running: the gate cannot close");
            drop(f);
            closer.join().unwrap();
        });
        let closed = gate.close();
        std::thread::scope(|s| {
            let free = s.spawn(|| drop(gate.free(SHARDS - 1)));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!free.is_finished(), "the gate is closed: no free enters");
            drop(closed);
            free.join().unwrap();
        });
    }
}
