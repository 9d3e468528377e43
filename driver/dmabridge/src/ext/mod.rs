//! Layer 4: the OpenCL extensions, one module per seed.

pub mod svm;
pub mod usm;
