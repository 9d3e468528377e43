//! edu
