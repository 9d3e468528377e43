//! Commands that finish later than their work returns: an *asynchronous*
//! command's work only starts it (hands it to another executor, e.g. PoCL's
//! queue for the ICD's OpenCL C kernels) and gets a [`Completion`], which the
//! executor calls when the command ended, from whatever thread it likes.
//!
//! Why: a command whose work blocks until another executor's thread has
//! run it costs two more thread hand-offs per command (to the queue's
//! worker, and back from the executor's thread to it) than that executor
//! used directly. An asynchronous command that can start at once is started
//! on the enqueuing thread, and the executor's thread completes its event:
//! one hand-off each way, as with the executor alone. The command counts as
//! running until the completion is called, so an in-order queue starts
//! nothing after it before then, and wait lists, markers, barriers,
//! `clFinish` and blocking frees see it as any other command.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::error::code;
use crate::runtime::event::Event;

use super::scheduler::Shared;

/// The work of an asynchronous command: starts the command, without
/// blocking, and arranges for the [`Completion`] to be called once it ends.
pub type AsyncWork = Box<dyn FnOnce(Completion) + Send>;

/// Ends an asynchronous command: [`Completion::complete`] with how it
/// ended. Dropped without being called (the executor lost it, or the work
/// panicked), it ends the command with `CL_OUT_OF_RESOURCES`, so no queue
/// waits for ever.
pub struct Completion {
    done: Option<Done>,
}

/// What a [`Completion`] calls with the command's result.
type Done = Box<dyn FnOnce(Result<(), i32>) + Send>;

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion").field("pending", &self.done.is_some()).finish()
    }
}

impl Completion {
    /// A completion that calls `done` (once) with the command's result.
    ///
    /// No OpenCL function of its own: how a face that waits for an
    /// asynchronous start itself (e.g. a launch that must hold its buffers'
    /// locks until the kernel ended) gets the result.
    ///
    /// ```
    /// use dmabridge::runtime::queue::Completion;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let c = Completion::new(move |r| tx.send(r).unwrap());
    /// c.complete(Err(-5));
    /// assert_eq!(rx.recv().unwrap(), Err(-5));
    /// ```
    pub fn new(done: impl FnOnce(Result<(), i32>) + Send + 'static) -> Completion {
        Completion { done: Some(Box::new(done)) }
    }

    /// The command ended: `Ok` for `CL_COMPLETE`, `Err` with its negative
    /// CL code otherwise (a non-negative code ends it with
    /// `CL_OUT_OF_RESOURCES`).
    ///
    /// ```
    /// use dmabridge::runtime::queue::Completion;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let c = Completion::new(move |r| tx.send(r).unwrap());
    /// drop(c); // never called: the command fails rather than hangs
    /// assert_eq!(rx.recv().unwrap(), Err(-5));
    /// ```
    pub fn complete(mut self, result: Result<(), i32>) {
        if let Some(done) = self.done.take() {
            done(result);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            log::warn!("an asynchronous command was dropped without completing: it ends with CL_OUT_OF_RESOURCES");
            done(Err(code::OUT_OF_RESOURCES));
        }
    }
}

/// Starts the asynchronous command `seq` of `shared` (already counted as
/// running), or ends it at once when its wait list failed. Its completion
/// finishes `event`, then retires the command and starts what was waiting
/// behind it.
pub(super) fn start(shared: &Arc<Shared>, seq: u64, event: &Event, work: AsyncWork, wait_list_failed: bool) {
    let (sh, ev) = (shared.clone(), event.clone());
    let completion = Completion::new(move |result| {
        ev.complete(result);
        sh.retire_and_kick(seq);
    });
    if wait_list_failed {
        drop(work);
        completion.complete(Err(code::EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST));
        return;
    }
    event.mark_submitted();
    event.mark_running();
    // A panic drops the completion while unwinding: the command fails.
    let _ = catch_unwind(AssertUnwindSafe(move || work(completion)));
}
