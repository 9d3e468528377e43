//! Layer 4: the OpenCL extensions, one module per extension text.

pub mod amd_bus;
pub mod arm_import;
pub mod dma_buf_export;
pub mod svm;
pub mod svm_commands;
pub mod usm;
pub mod usm_commands;

#[cfg(test)]
mod tests {
    use crate::runtime::info::{Requires, DMA_BUF_EXPORT_EXTENSION, EXTENSIONS};

    /// The runtime lists each extension string from its table; every string
    /// an extension module names is there, with the capability it needs.
    #[test]
    fn extension_strings_are_in_the_runtime_table() {
        let requires = |name: &str| EXTENSIONS.iter().find(|e| e.name == name).map(|e| e.requires);
        assert_eq!(requires(super::amd_bus::EXTENSION), Some(Requires::DmaDomain));
        assert_eq!(requires(DMA_BUF_EXPORT_EXTENSION), Some(Requires::Udmabuf));
        for name in
            [super::arm_import::EXTENSION, super::arm_import::HOST_EXTENSION, super::arm_import::DMA_BUF_EXTENSION]
        {
            assert_eq!(requires(name), Some(Requires::HostUnifiedMemory), "{name}");
        }
    }
}
