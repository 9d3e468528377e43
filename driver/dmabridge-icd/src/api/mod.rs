//! The entry points, one file per area (mirroring `runtime/` and `ext/` of
//! the core): each checks the C-shaped rules (NULL, counts, handles,
//! zero-terminated lists) and calls the one core function that does the work.
#![allow(non_snake_case)]

pub mod amd;
pub mod binary;
pub mod context;
pub mod device;
pub mod event;
pub mod export;
pub mod image;
pub mod import;
pub mod kernel;
pub mod khr_memory;
pub mod memobj;
pub mod platform;
pub mod program;
pub mod queue;
pub mod sampler;
pub mod semaphore;
pub mod source;
pub mod source_kernel;
pub mod svm;
pub mod usm;
