//! The error a terminal status stands for: [`error_kind_from_code`] and the
//! error a blocking enqueue returns for a failed command. Separate because
//! it maps codes to errors and touches no event state.

use crate::error::{ClError, ClErrorKind};

use super::command_type;

/// The kind of a CL error code; see [`ClErrorKind::from_code`].
///
/// What a blocking `clEnqueue*` returns for a command whose event ended with `code`.
///
/// ```
/// use dmabridge::error::{code, ClErrorKind};
/// use dmabridge::runtime::event::error_kind_from_code;
/// assert_eq!(error_kind_from_code(code::INVALID_VALUE), Some(ClErrorKind::InvalidValue));
/// assert_eq!(error_kind_from_code(1), None);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn error_kind_from_code(code: i32) -> Option<ClErrorKind> {
    ClErrorKind::from_code(code)
}

/// The error a blocking enqueue returns for a command of `command_type` that
/// ended with the negative `status`: the kind of that code
/// (`CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST` when its wait list
/// failed), or `CL_OUT_OF_RESOURCES` for a code without a kind.
pub(crate) fn status_error(command_type: u32, status: i32) -> ClError {
    let name = command_type::name(command_type);
    match error_kind_from_code(status) {
        Some(ClErrorKind::ExecStatusErrorForEventsInWaitList) => ClError::new(
            ClErrorKind::ExecStatusErrorForEventsInWaitList,
            format!("an event in the wait list of this {name} ended with a negative status; the command did not run"),
        ),
        Some(kind) => ClError::new(kind, format!("the {name} failed with status {status}")),
        None => ClError::new(
            ClErrorKind::OutOfResources,
            format!("the {name} failed with status {status}, which has no ClErrorKind"),
        ),
    }
}
