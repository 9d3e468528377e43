//! Buffers made around a store that their creator prepared, whose pages
//! are already chosen: imported memory (`clImportMemoryARM`, seed 004),
//! memfd pages with a bus address or a remote device's BAR
//! (`cl_amd_bus_addressable_memory`, seed 002, `ext::amd_bus`), each
//! with the restrictions its creator set on the store.

use std::any::Any;
use std::sync::{Arc, Mutex};

use super::store::Store;
use super::Buffer;
use crate::runtime::context::Context;

impl Buffer {
    /// A buffer over `store`, with `flags` as they are (checked by the
    /// caller), no host pointer and no parent; `extension` is what the
    /// creating extension keeps of it ([`Buffer::extension`]).
    pub(crate) fn around_store(
        ctx: &Arc<Context>,
        flags: u64,
        size: usize,
        store: Arc<Store>,
        extension: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Arc<Buffer> {
        Arc::new(Buffer {
            context: ctx.clone(),
            flags,
            size,
            parent: None,
            origin: 0,
            host_ptr: None,
            uses_svm: false,
            store,
            maps: Mutex::new(Vec::new()),
            destructors: Mutex::new(Vec::new()),
            extension,
        })
    }

    /// What the extension that created the buffer keeps of it, if that is
    /// a `T`: a field of the buffer, so it lives and goes with it.
    pub(crate) fn extension<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.extension.clone()?.downcast().ok()
    }
}
