//! Queue properties: the `CL_QUEUE_PROPERTIES` bits and [`QueueProps`],
//! their decoded form. Pure values with no tie to the scheduler, kept apart
//! so that the queue's API and its bit-level encoding read separately.

use crate::cl_err;
use crate::error::ClResult;

/// `cl_command_queue_properties` bits (`CL_QUEUE_PROPERTIES`).
pub mod properties {
    /// `CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE`.
    pub const OUT_OF_ORDER_EXEC_MODE_ENABLE: u64 = 1 << 0;
    /// `CL_QUEUE_PROFILING_ENABLE`.
    pub const PROFILING_ENABLE: u64 = 1 << 1;
    /// `CL_QUEUE_ON_DEVICE` (device-side enqueue: not supported).
    pub const ON_DEVICE: u64 = 1 << 2;
    /// `CL_QUEUE_ON_DEVICE_DEFAULT` (not supported).
    pub const ON_DEVICE_DEFAULT: u64 = 1 << 3;
}

/// The properties of a queue (`CL_QUEUE_PROPERTIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueProps {
    /// `CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE`.
    pub out_of_order: bool,
    /// `CL_QUEUE_PROFILING_ENABLE`.
    pub profiling: bool,
}

impl QueueProps {
    /// The properties of a `CL_QUEUE_PROPERTIES` bit field
    /// (`clCreateCommandQueueWithProperties`): `CL_INVALID_QUEUE_PROPERTIES`
    /// for on-device queues, `CL_INVALID_VALUE` for unknown bits.
    ///
    /// ```
    /// use dmabridge::runtime::queue::{properties, QueueProps};
    /// let props = QueueProps::from_bits(properties::OUT_OF_ORDER_EXEC_MODE_ENABLE)?;
    /// assert!(props.out_of_order && !props.profiling);
    /// assert!(QueueProps::from_bits(properties::ON_DEVICE).is_err());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn from_bits(bits: u64) -> ClResult<QueueProps> {
        use properties::*;
        let known = OUT_OF_ORDER_EXEC_MODE_ENABLE | PROFILING_ENABLE | ON_DEVICE | ON_DEVICE_DEFAULT;
        if bits & !known != 0 {
            return cl_err!(InvalidValue, "CL_QUEUE_PROPERTIES {bits:#x} has unknown bits {:#x}", bits & !known);
        }
        if bits & (ON_DEVICE | ON_DEVICE_DEFAULT) != 0 {
            return cl_err!(
                InvalidQueueProperties,
                "CL_QUEUE_PROPERTIES {bits:#x}: on-device queues are not supported"
            );
        }
        Ok(QueueProps {
            out_of_order: bits & OUT_OF_ORDER_EXEC_MODE_ENABLE != 0,
            profiling: bits & PROFILING_ENABLE != 0,
        })
    }

    /// The `CL_QUEUE_PROPERTIES` bit field (`clGetCommandQueueInfo`).
    ///
    /// ```
    /// use dmabridge::runtime::queue::{properties, QueueProps};
    /// let props = QueueProps { out_of_order: false, profiling: true };
    /// assert_eq!(props.bits(), properties::PROFILING_ENABLE);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn bits(self) -> u64 {
        (if self.out_of_order { properties::OUT_OF_ORDER_EXEC_MODE_ENABLE } else { 0 })
            | (if self.profiling { properties::PROFILING_ENABLE } else { 0 })
    }
}
