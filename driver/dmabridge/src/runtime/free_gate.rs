//! The lock that orders a context's frees against its range claims without
//! making frees take one shared lock.
//!
//! Frees are the common path (every `clMemFreeINTEL`); claims are rare
//! (`clEnqueueMigrateMemINTEL`, `clEnqueueSVMMigrateMem`). So the gate is a
//! big-reader lock: one reader-writer lock per shard, each on a cache line
//! of its own. A free takes its thread's shard for reading — a lock no other
//! thread of another shard touches — and whoever must exclude every free
//! (making a claim, running one) takes all shards for writing, in order.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::memory::heap::{shard, SHARDS};
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
    /// Enters as a free (the calling thread's shard, for reading).
    pub(crate) fn free(&self) -> Freeing<'_> {
        Freeing(sync::read(&self.shards[shard()].0))
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
        let f = gate.free();
        // A free of another thread enters beside it; closing waits for both.
        std::thread::scope(|s| {
            s.spawn(|| drop(gate.free())).join().unwrap();
            let closer = s.spawn(|| drop(gate.close()));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!closer.is_finished(), "a free is running: the gate cannot close");
            drop(f);
            closer.join().unwrap();
        });
        let closed = gate.close();
        std::thread::scope(|s| {
            let free = s.spawn(|| drop(gate.free()));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!free.is_finished(), "the gate is closed: no free enters");
            drop(closed);
            free.join().unwrap();
        });
    }
}
