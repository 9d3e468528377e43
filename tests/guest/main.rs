//! Guest tests: they need udmabuf, DMA-BUF heaps, VFIO behind an IOMMU, edu
//! and ivshmem, so they are built on the host and run inside the QEMU rig by
//! `make test-guest` (with edu 0000:00:10.0 and ivshmem 0000:00:08.0 bound to
//! vfio-pci, edu 0000:00:11.0 left unbound, and vgem and vivid loaded).

mod amd_bus;
mod arm_import;
mod bar_device;
mod buffer;
mod capture;
mod capture_kernel;
mod dma_buf;
mod dma_heaps;
mod drm;
mod edu_device;
mod engine_loss;
mod images;
mod images_ext;
mod info_command;
mod khr_external;
mod kmod;
mod memory_heap;
mod proof;
mod removal;
mod signals;
mod udev;
mod udmabuf;
mod vfio;
mod vivid;
