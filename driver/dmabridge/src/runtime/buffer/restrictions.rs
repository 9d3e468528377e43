//! What the creator of a buffer's memory forbids on it.
//!
//! Whoever makes a store (an import of read-only memory, an extension's
//! buffer over remote memory) sets its restrictions once, with the reason
//! in the creator's own words; the runtime's commands ask the store
//! ([`Store::restrictions`](super::store::Store::restrictions)) and never
//! the extension that made it. A new kind of memory with new restrictions
//! adds a field here, not a call from the runtime up into its extension.

use crate::cl_err;
use crate::error::ClResult;

/// The operations a store's memory refuses, each with why (`None`: allowed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Restrictions {
    /// Nothing may write the memory (writes, copies and fills into it, maps
    /// for writing, kernels writing it).
    pub no_write: Option<&'static str>,
    /// Nothing may read or map the memory (reads, copies from it, maps and
    /// unmaps, built-in kernels reading it).
    pub no_read: Option<&'static str>,
    /// The buffer takes no sub-buffers.
    pub no_sub_buffers: Option<&'static str>,
}

impl Restrictions {
    /// `CL_INVALID_OPERATION` for `what` (a command writing the memory) if
    /// nothing may write it.
    pub fn check_write(&self, what: &str) -> ClResult<()> {
        match self.no_write {
            Some(why) => cl_err!(InvalidOperation, "{what}: {why}"),
            None => Ok(()),
        }
    }

    /// `CL_INVALID_OPERATION` for `what` (a command reading or mapping the
    /// memory) if nothing may read it.
    pub fn check_read(&self, what: &str) -> ClResult<()> {
        match self.no_read {
            Some(why) => cl_err!(InvalidOperation, "{what}: {why}"),
            None => Ok(()),
        }
    }

    /// `CL_INVALID_MEM_OBJECT` if the buffer takes no sub-buffers.
    pub fn check_sub_buffer(&self) -> ClResult<()> {
        match self.no_sub_buffers {
            Some(why) => cl_err!(InvalidMemObject, "{why}"),
            None => Ok(()),
        }
    }
}
