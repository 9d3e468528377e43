//! `clGetContextInfo`, `clGetCommandQueueInfo`, `clGetEventInfo` and
//! `clGetEventProfilingInfo`.

use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::context::Context;
use crate::runtime::event::Event;
use crate::runtime::queue::Queue;

use super::params::{context_param, event_param, queue_param};
use super::value::InfoValue;
use super::{clamp_u32, unknown};

/// `clGetContextInfo`. `CL_CONTEXT_REFERENCE_COUNT` is the `Arc`'s strong
/// count: the application's references plus those held by the context's
/// queues, events and allocations' owners (the spec calls the value stale
/// and fit only for leak hunting). `CL_CONTEXT_PROPERTIES` is empty: no
/// context property is supported.
///
/// ```
/// use dmabridge::runtime::info::{self, context_param, InfoValue};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// assert_eq!(info::context_info(&ctx, context_param::NUM_DEVICES)?, InfoValue::U32(1));
/// assert_eq!(info::context_info(&ctx, context_param::PROPERTIES)?, InfoValue::Properties(vec![]));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn context_info(ctx: &Arc<Context>, param: u32) -> ClResult<InfoValue> {
    use context_param::*;
    Ok(match param {
        REFERENCE_COUNT => InfoValue::U32(clamp_u32(Arc::strong_count(ctx))),
        DEVICES => InfoValue::DeviceIds(ctx.devices().to_vec()),
        PROPERTIES => InfoValue::Properties(Vec::new()),
        NUM_DEVICES => InfoValue::U32(clamp_u32(ctx.devices().len())),
        _ => return Err(unknown("cl_context_info", param)),
    })
}

/// `clGetCommandQueueInfo`. `CL_QUEUE_SIZE` fails with
/// `CL_INVALID_COMMAND_QUEUE` (every queue is a host queue);
/// `CL_QUEUE_DEVICE_DEFAULT` is NULL. `CL_QUEUE_PROPERTIES_ARRAY` is
/// `[CL_QUEUE_PROPERTIES, bits, 0]` when the queue has properties, else
/// empty: the queue does not keep the array it was created with, and that is
/// the array that creates the same queue.
///
/// ```
/// use dmabridge::runtime::info::{self, queue_param, InfoValue};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// assert_eq!(info::queue_info(&queue, queue_param::PROPERTIES)?, InfoValue::Bits(0));
/// assert_eq!(info::queue_info(&queue, queue_param::DEVICE)?, InfoValue::Device(Some(cpu.clone())));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn queue_info(queue: &Arc<Queue>, param: u32) -> ClResult<InfoValue> {
    use queue_param::*;
    Ok(match param {
        CONTEXT => InfoValue::Context(queue.context().clone()),
        DEVICE => InfoValue::Device(Some(queue.device().clone())),
        REFERENCE_COUNT => InfoValue::U32(clamp_u32(queue.reference_count())),
        PROPERTIES => InfoValue::Bits(queue.props().bits()),
        PROPERTIES_ARRAY => InfoValue::Properties(match queue.props().bits() {
            0 => Vec::new(),
            bits => vec![u64::from(PROPERTIES), bits, 0],
        }),
        SIZE => {
            return cl_err!(
                InvalidCommandQueue,
                "CL_QUEUE_SIZE is defined only for on-device queues, and this is a host queue"
            )
        }
        DEVICE_DEFAULT => InfoValue::Queue(None),
        _ => return Err(unknown("cl_command_queue_info", param)),
    })
}

/// `clGetEventInfo`. `CL_EVENT_COMMAND_QUEUE` is NULL for a user event (and
/// once the queue is gone); `CL_EVENT_REFERENCE_COUNT` counts the references
/// a queue holds while the command is pending too.
///
/// ```
/// use dmabridge::runtime::info::{self, event_param, InfoValue};
/// use dmabridge::runtime::event::{command_type, exec_status, Event};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let ev = Event::user(&ctx);
/// assert_eq!(info::event_info(&ev, event_param::COMMAND_TYPE)?, InfoValue::U32(command_type::USER));
/// assert_eq!(info::event_info(&ev, event_param::COMMAND_EXECUTION_STATUS)?, InfoValue::I32(exec_status::SUBMITTED));
/// assert_eq!(info::event_info(&ev, event_param::COMMAND_QUEUE)?, InfoValue::Queue(None));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn event_info(event: &Event, param: u32) -> ClResult<InfoValue> {
    use event_param::*;
    Ok(match param {
        COMMAND_QUEUE => InfoValue::Queue(event.queue()),
        COMMAND_TYPE => InfoValue::U32(event.command_type()),
        REFERENCE_COUNT => InfoValue::U32(clamp_u32(event.reference_count())),
        COMMAND_EXECUTION_STATUS => InfoValue::I32(event.status().as_cl()),
        CONTEXT => InfoValue::Context(event.context().clone()),
        _ => return Err(unknown("cl_event_info", param)),
    })
}

/// `clGetEventProfilingInfo`: [`Event::profiling_info`] as a `cl_ulong`.
///
/// ```
/// use dmabridge::runtime::info::{self, InfoValue};
/// use dmabridge::runtime::{context::Context, event::{profiling_info, Event}, platform::Platform};
/// use dmabridge::runtime::queue::{properties, Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::from_bits(properties::PROFILING_ENABLE)?)?;
/// let marker = queue.enqueue_marker(&[])?;
/// Event::wait(&[marker.clone()])?;
/// assert!(matches!(info::event_profiling_info(&marker, profiling_info::END)?, InfoValue::U64(_)));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn event_profiling_info(event: &Event, param: u32) -> ClResult<InfoValue> {
    event.profiling_info(param).map(InfoValue::U64)
}
