//! What this host lacks is reported precisely, with a fix.

use std::os::fd::AsFd;
use std::path::Path;

use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::dma_heap::{self, DmaHeap, HeapError};
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::udmabuf::{Udmabuf, UdmabufError};
use dmabridge::sys::vfio::{Container, VfioError};
use dmabridge::sys::OsError;
use rustix::io::Errno;

fn skip_if_present(path: &str) -> bool {
    if Path::new(path).exists() {
        eprintln!("{path} exists on this machine: the missing-device case cannot be shown here");
        return true;
    }
    false
}

#[test]
fn no_udmabuf_says_how_to_get_one() {
    if skip_if_present("/dev/udmabuf") {
        return;
    }
    let err = Udmabuf::open().unwrap_err();
    assert_eq!(err, UdmabufError::NoDevice);
    let msg = err.to_string();
    assert!(msg.contains("dmabridge-kmod load udmabuf") && msg.contains("make demo"), "{msg}");
}

#[test]
fn no_heaps_and_no_vfio_say_how_to_get_them() {
    if !skip_if_present("/dev/dma_heap") {
        assert!(dma_heap::list().is_empty());
        let err = DmaHeap::open("system").unwrap_err();
        assert_eq!(err, HeapError::NoHeap("system".into()));
        assert!(err.to_string().contains("CONFIG_DMABUF_HEAPS_SYSTEM"));
    }
    if !skip_if_present("/dev/vfio/vfio") {
        let err = Container::open().unwrap_err();
        assert_eq!(err, VfioError::NoVfio);
        assert!(err.to_string().contains("vfio-pci"));
    }
}

#[test]
fn a_memfd_is_not_a_dma_buf() {
    let m = Memfd::create(c"host", 4096).unwrap();
    m.add_seals(Seals::SHRINK | Seals::GROW).unwrap();
    assert_eq!(m.set_size(8192).unwrap_err(), OsError::new("ftruncate memfd", Errno::PERM));
    let fd = m.as_fd().try_clone_to_owned().unwrap();
    assert_eq!(DmaBuf::from_fd(fd).unwrap_err(), OsError::new("fstatfs dma-buf", Errno::BADF));
    // The refused import did not disturb the memfd.
    assert_eq!(m.size().unwrap(), 4096);
}
