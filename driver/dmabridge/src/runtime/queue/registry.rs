//! Context-wide functions: [`queues_of`] (the live queues a context keeps,
//! weakly), [`wait_for_context_commands_using`] for
//! `clMemBlockingFreeINTEL`, and [`check_wait_list`], the context check every
//! enqueue makes on its wait list. Separate from a single queue's API.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::context::Context;
use crate::runtime::event::Event;

use super::{CommandUse, Queue};

/// The id of the next queue (its scheduler's, in logs and `Debug`).
pub(super) static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The live queues of `context` — it holds them weakly (each queue holds
/// its context), and `clMemBlockingFreeINTEL` must wait for commands on any
/// of them.
///
/// ```
/// use dmabridge::runtime::queue;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let found = queue::queues_of(&ctx);
/// assert!(found.len() == 1 && std::sync::Arc::ptr_eq(&found[0], &queue));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn queues_of(context: &Arc<Context>) -> Vec<Arc<Queue>> {
    context.live_queues()
}

/// Wait, on every live queue of `context`, for the commands whose
/// [`CommandUse`] satisfies `pred` (`clMemBlockingFreeINTEL`); see
/// [`Queue::wait_for_commands_using`].
///
/// ```
/// use dmabridge::runtime::{event::command_type, queue::{self, CommandUse}};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let buf = vec![0u8; 64];
/// let addr = buf.as_ptr() as usize;
/// queue.enqueue_with_use(command_type::NATIVE_KERNEL, &[], false, CommandUse::range(dmabridge::sys::addr::HostAddr(addr), 64), Box::new(|| Ok(())))?;
/// // Returns once no command of any queue of `ctx` may still use `buf`.
/// queue::wait_for_context_commands_using(&ctx, |u| u.touches(dmabridge::sys::addr::HostAddr(addr), buf.len()));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn wait_for_context_commands_using(context: &Arc<Context>, pred: impl Fn(&CommandUse) -> bool) {
    for q in queues_of(context) {
        q.wait_for_commands_using(&pred);
    }
}

/// Check a wait list against the context of the command
/// (`CL_INVALID_CONTEXT` for an event of another context). The C face checks
/// the list itself (NULL with a count, count without a list:
/// `CL_INVALID_EVENT_WAIT_LIST`).
///
/// ```
/// use dmabridge::runtime::{context::Context, event::Event, platform::Platform, queue};
/// let ctx = Context::new(Platform::get().devices())?;
/// let other = Context::new(Platform::get().devices())?;
/// queue::check_wait_list(&ctx, &[Event::user(&ctx)])?;
/// assert!(queue::check_wait_list(&ctx, &[Event::user(&other)]).is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn check_wait_list(context: &Arc<Context>, wait_list: &[Event]) -> ClResult<()> {
    match wait_list.iter().position(|e| !Arc::ptr_eq(e.context(), context)) {
        None => Ok(()),
        Some(i) => {
            cl_err!(InvalidContext, "event_wait_list[{i}] belongs to a different context than the command queue")
        }
    }
}
