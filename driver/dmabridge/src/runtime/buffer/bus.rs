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
    /// A buffer over imported memory (`clImportMemoryARM`, seed 004): its
    /// store was made by the import; `flags` are already checked.
    pub(crate) fn imported(ctx: &Arc<Context>, flags: u64, size: usize, store: Store) -> Arc<Buffer> {
        Buffer::around_store(ctx, flags, size, Arc::new(store), None)
    }

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

    /// The bytes of an imported dma-buf (either import path) the CPU has
    /// mapped so far, 0 for other memory: the CPU maps only the chunks a
    /// command touches ([`LazyMap`](crate::sys::dma_buf::LazyMap)).
    ///
    /// No OpenCL function of its own: shows what a first access cost
    /// (tests).
    ///
    /// ```
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
    /// assert_eq!(b.cpu_mapped_bytes(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn cpu_mapped_bytes(&self) -> usize {
        self.store.cpu_mapped_bytes()
    }
}
