//! Memory that commands may use only between an acquire and a release, and
//! only on the devices it was made for: a buffer imported from an external
//! memory handle (`cl_khr_external_memory`).
//!
//! The extension's text leaves use outside the bracket undefined ("Behavior
//! is undefined if a memory object created from an external memory handle
//! is used by an OpenCL command queued to a command-queue without being
//! acquired"). Undefined here would mean a command touching a dma-buf
//! while another driver may still be writing it, unfenced, so dmabridge
//! refuses such a command when it is enqueued, with `CL_INVALID_OPERATION`
//! (the code of the bracket's other misuses: acquiring twice, releasing
//! what is not acquired). A command on a queue of a device the memory was
//! not made for answers `CL_INVALID_COMMAND_QUEUE`, the code the extension
//! gives an acquire on such a queue.
//!
//! The state is the one the application sees at enqueue: a command
//! enqueued after the acquire (on any queue of the context) and before the
//! release is inside the bracket. The store holds it, so that the runtime's
//! commands ask it without naming the extension (as with
//! [`Restrictions`](super::restrictions::Restrictions)).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::device::Device;
use crate::sync;

/// The devices that may use a store's memory and whether it is acquired.
#[derive(Debug)]
pub(crate) struct Bracket {
    devices: Vec<Arc<Device>>,
    acquired: Mutex<bool>,
}

impl Bracket {
    /// Memory usable on `devices`, not acquired yet.
    pub fn new(devices: Vec<Arc<Device>>) -> Bracket {
        Bracket { devices, acquired: Mutex::new(false) }
    }

    /// The devices that may use the memory.
    pub fn devices(&self) -> &[Arc<Device>] {
        &self.devices
    }

    /// True if `device` may use the memory.
    pub fn allows(&self, device: &Device) -> bool {
        self.devices.iter().any(|d| std::ptr::eq(&**d, device))
    }

    /// The acquired state, held while an acquire or release checks and
    /// changes it.
    pub fn state(&self) -> MutexGuard<'_, bool> {
        sync::lock(&self.acquired)
    }

    /// The check of a command of a queue of `device` that uses the memory
    /// (`what` names the memory object in the command): see the module.
    pub fn check_use(&self, device: &Device, what: &str) -> ClResult<()> {
        if !self.allows(device) {
            return cl_err!(
                InvalidCommandQueue,
                "{what} was imported from an external memory handle for devices {:?} only \
                 (CL_MEM_DEVICE_HANDLE_LIST_KHR), not for the queue's device {:?}: enqueue on a queue of a listed \
                 device, or list this one at creation",
                self.devices.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
                device.name
            );
        }
        if !*self.state() {
            return cl_err!(
                InvalidOperation,
                "{what} was imported from an external memory handle and is not acquired: enqueue \
                 clEnqueueAcquireExternalMemObjectsKHR before the commands that use it, and \
                 clEnqueueReleaseExternalMemObjectsKHR after them"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Bracket;
    use crate::error::code;
    use crate::runtime::buffer::map::{self, map_flags};
    use crate::runtime::buffer::store::Store;
    use crate::runtime::buffer::{commands, Buffer};
    use crate::runtime::context::Context;
    use crate::runtime::event::Event;
    use crate::runtime::platform::Platform;
    use crate::runtime::queue::{Queue, QueueProps};

    /// A buffer over a store with a bracket for `devices`, as
    /// `cl_khr_external_memory` makes over a dma-buf (ordinary pages here:
    /// the rule is the runtime's, whatever the memory).
    fn bracketed(devices: Vec<Arc<crate::runtime::device::Device>>) -> (Arc<Queue>, Arc<Buffer>) {
        let cpu = Platform::get().cpu();
        let ctx = Context::new(std::slice::from_ref(cpu)).unwrap();
        let queue = Queue::new(&ctx, cpu, QueueProps::default()).unwrap();
        let store = Store::new(&ctx, 256, None).with_bracket(Bracket::new(devices));
        let buffer = Buffer::around_store(&ctx, 0, 256, Arc::new(store), None);
        (queue, buffer)
    }

    #[test]
    fn commands_outside_the_bracket_are_refused() {
        let (queue, b) = bracketed(vec![Platform::get().cpu().clone()]);
        let fill = |b: &Arc<Buffer>| commands::enqueue_fill_buffer(&queue, b, &[7], 0, 256, &[]);
        let mut out = [0u8; 4];
        // SAFETY: `out` outlives the blocking read.
        let read = |b: &Arc<Buffer>, out: &mut [u8; 4]| unsafe {
            commands::enqueue_read_buffer(&queue, b, true, 0, 4, out.as_mut_ptr(), &[])
        };
        assert_eq!(fill(&b).unwrap_err().code(), code::INVALID_OPERATION);
        assert_eq!(read(&b, &mut out).unwrap_err().code(), code::INVALID_OPERATION);
        let map = map::enqueue_map_buffer(&queue, &b, true, map_flags::READ, 0, 4);
        assert_eq!(map.unwrap_err().code(), code::INVALID_OPERATION);
        // Inside: as any buffer.
        *b.store().bracket().unwrap().state() = true;
        Event::wait(&[fill(&b).unwrap()]).unwrap();
        read(&b, &mut out).unwrap();
        assert_eq!(out, [7; 4]);
        // Released: refused again.
        *b.store().bracket().unwrap().state() = false;
        assert_eq!(read(&b, &mut out).unwrap_err().code(), code::INVALID_OPERATION);
    }

    #[test]
    fn a_device_not_listed_refuses_with_invalid_command_queue() {
        let (queue, b) = bracketed(Vec::new());
        *b.store().bracket().unwrap().state() = true;
        let e = commands::enqueue_fill_buffer(&queue, &b, &[7], 0, 256, &[]).unwrap_err();
        assert_eq!(e.code(), code::INVALID_COMMAND_QUEUE);
        assert!(e.to_string().contains("CL_MEM_DEVICE_HANDLE_LIST_KHR"), "{e}");
    }
}
