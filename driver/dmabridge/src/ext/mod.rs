//! Layer 4: the OpenCL extensions, one module per extension text.

pub mod amd_bus;
pub mod arm_import;
pub mod dma_buf_export;
pub mod svm;
pub mod svm_commands;
pub mod usm;
pub mod usm_commands;
