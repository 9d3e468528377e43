//! dma-buf identity, CPU-access bracketing and sync_file fences.

use std::os::fd::AsFd;
use std::time::Duration;

use dmabridge::sys::access::Access;
use dmabridge::sys::dma_buf::{DmaBuf, SyncFile};
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::mmap::MapError;
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge::sys::OsError;
use dmabridge_tests::{require_guest, Resources};
use rustix::io::Errno;

fn udmabuf(pages: u64) -> (Memfd, DmaBuf) {
    let m = Memfd::create(c"dmabuf-test", pages * 4096).unwrap();
    m.add_seals(Seals::SHRINK).unwrap();
    let buf = Udmabuf::open().unwrap().create(m.as_fd(), 0, pages * 4096).unwrap();
    (m, buf)
}

#[test]
fn from_fd_accepts_dma_bufs_only() {
    require_guest();
    let before = Resources::now();
    {
        let (m, buf) = udmabuf(1);
        let inode = buf.inode().unwrap();
        let again = DmaBuf::from_fd(buf.try_clone().unwrap().into_fd()).unwrap();
        assert_eq!(again.inode().unwrap(), inode);
        assert_eq!(again.size().unwrap(), 4096);
        let err = DmaBuf::from_fd(m.into_fd()).unwrap_err();
        assert_eq!(err, OsError::new("fstatfs dma-buf", Errno::BADF));
        let (_m2, other) = udmabuf(1);
        assert!(!other.same_buffer(&buf).unwrap());
    }
    before.assert_unchanged();
}

#[test]
fn sync_file_export_and_import() {
    require_guest();
    let before = Resources::now();
    {
        let (_m, buf) = udmabuf(2);
        // No device has touched the buffer: its fences are signalled.
        let read_fence = buf.export_sync_file(Access::Read).unwrap();
        let write_fence = buf.export_sync_file(Access::Write).unwrap();
        assert!(read_fence.is_signaled().unwrap());
        assert!(write_fence.wait(Duration::from_millis(100)).unwrap());
        // Importing a signalled fence as a write fence keeps the buffer usable.
        buf.import_sync_file(&write_fence, Access::Write).unwrap();
        assert!(buf.export_sync_file(Access::ReadWrite).unwrap().is_signaled().unwrap());
        // A fence fd that is not a sync_file is refused by the kernel.
        let (_m2, other) = udmabuf(1);
        let not_a_fence = SyncFile::from_fd(other.into_fd());
        assert_eq!(
            buf.import_sync_file(&not_a_fence, Access::Write),
            Err(OsError::new("DMA_BUF_IOCTL_IMPORT_SYNC_FILE", Errno::INVAL))
        );
    }
    before.assert_unchanged();
}

/// A dma-buf mapping covers only the buffer: ranges past its end are refused
/// before the kernel is asked, whatever the numbers, and a mapping stays
/// usable once the memfd and the dma-buf fd are closed (the buffer lives on
/// for it, at its fixed size).
#[test]
fn mappings_stay_inside_the_buffer() {
    require_guest();
    let before = Resources::now();
    {
        let (m, buf) = udmabuf(2);
        let size = 2 * 4096;
        let cases = [(4096, 8192), (8192, 4096), (u64::MAX, 4096), (4096, usize::MAX), (u64::MAX - 4095, 8192)];
        for (offset, len) in cases {
            assert_eq!(
                buf.map_range(offset, len, Access::Read).unwrap_err(),
                MapError::OutOfBounds { offset, len, size },
                "{offset:#x}+{len:#x}"
            );
        }
        let tail = buf.map_range(4096, 4096, Access::ReadWrite).unwrap();
        let whole = buf.map(Access::Read).unwrap();
        assert_eq!(whole.len(), 8192);
        drop((m, buf));
        tail.write_bytes(4090, b"alive!");
        let mut out = [0u8; 6];
        whole.read_bytes(8186, &mut out);
        assert_eq!(&out, b"alive!");
    }
    before.assert_unchanged();
}

#[test]
fn cpu_access_guard_brackets_with_sync() {
    require_guest();
    let (_m, buf) = udmabuf(1);
    let map = buf.map(Access::ReadWrite).unwrap();
    for dir in [Access::Read, Access::Write, Access::ReadWrite] {
        let g = buf.cpu_access(dir).unwrap();
        map.write_bytes(0, &[dir as u8]);
        g.end().unwrap();
    }
    // Dropping the guard also ends the access; a new start is accepted.
    drop(buf.cpu_access(Access::Read).unwrap());
    buf.cpu_access(Access::Read).unwrap().end().unwrap();
}
