//! Host tests: run by `cargo test` on any Linux machine, including this
//! development host, which has memfd and io_uring but no udmabuf, no heaps and
//! no VFIO. They check what works here and that what is missing is reported
//! with a way to fix it.

mod amd_bus;
mod arm_import;
mod buffer;
mod buffer_commands;
mod cl_headers;
mod cli;
mod cross_objects;
mod images;
mod images_ext;
mod info_command;
mod info_queries;
mod kernels;
mod khr_external;
mod kmod;
mod logging;
mod memory;
mod missing;
mod programs;
mod svm;
mod svm_commands;
mod sys_safety;
mod usm;
mod usm_commands;
