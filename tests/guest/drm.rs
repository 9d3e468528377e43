//! DRM PRIME with vgem: dumb buffers exported as dma-bufs and mapped by the
//! CPU, dma-bufs (vgem's own and udmabuf's) imported as GEM handles.
//!
//! Needs vgem and udmabuf (`make test-guest` loads vgem; by hand:
//! `qemu/run-in-guest --module vgem -- GUEST_TEST --test-threads=1 drm`). The
//! leak checks count every fd and mapping of the process, so they need
//! `--test-threads=1`.

use std::os::fd::AsFd;

use dmabridge::sys::access::Access;
use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::drm::{self, DrmDevice, DrmError, PrimeFlags};
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::page_size;
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge_tests::{require_guest, Resources};
use rustix::io::Errno;

const RW: PrimeFlags = PrimeFlags::RDWR;

/// Runs `body` as a guest test and fails if it left fds or mappings behind.
fn no_leak(body: impl FnOnce()) {
    require_guest();
    let before = Resources::now();
    body();
    before.assert_unchanged();
}

/// A CPU pattern that differs on every 32-bit word.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[i % 4] ^ seed).collect()
}

fn write_under_guard(buf: &DmaBuf, data: &[u8]) {
    let map = buf.map(Access::ReadWrite).expect("mmap the dma-buf read-write");
    let guard = buf.cpu_access(Access::Write).expect("DMA_BUF_IOCTL_SYNC start");
    map.write_bytes(0, data);
    guard.end().expect("DMA_BUF_IOCTL_SYNC end");
}

fn read_under_guard(buf: &DmaBuf, len: usize) -> Vec<u8> {
    let map = buf.map(Access::Read).expect("mmap the dma-buf read-only");
    let guard = buf.cpu_access(Access::Read).expect("DMA_BUF_IOCTL_SYNC start");
    let mut out = vec![0u8; len];
    map.read_bytes(0, &mut out);
    guard.end().expect("DMA_BUF_IOCTL_SYNC end");
    out
}

#[test]
fn vgem_is_found_by_its_driver_name() {
    no_leak(|| {
        let dev = DrmDevice::open_vgem().expect("open vgem (boot the guest with --module vgem)");
        assert_eq!(dev.driver(), "vgem");
        assert_eq!(dev.version().desc, "Virtual GEM provider");
        // The primary node comes first: dumb buffers need it.
        assert!(!dev.is_render_node(), "{} is a render node", dev.path().display());
        assert!(dev.path().starts_with("/dev/dri"), "{}", dev.path().display());
        assert!(dev.path().file_name().unwrap().to_string_lossy().starts_with("card"));
    });
}

#[test]
fn dumb_buffer_export_map_and_self_import() {
    no_leak(|| {
        let dev = DrmDevice::open_vgem().expect("open vgem");
        let (width, height, bpp) = (256, 64, 32);
        let dumb = dev.create_dumb(width, height, bpp).expect("create a dumb buffer");
        assert_ne!(dumb.handle(), 0);
        assert!(dumb.pitch() >= width * 4, "pitch {}", dumb.pitch());
        assert!(dumb.size() >= dumb.pitch() as u64 * height as u64, "size {}", dumb.size());
        assert_eq!(dumb.size() % page_size() as u64, 0, "size {} is not page-aligned", dumb.size());

        let buf = dev.export(&dumb, PrimeFlags::CLOEXEC | RW).expect("PRIME export");
        assert_eq!(buf.size().unwrap(), dumb.size(), "the dma-buf's size is the dumb buffer's");

        let len = dumb.size() as usize;
        let data = pattern(len, 0x5a);
        write_under_guard(&buf, &data);

        // A second export is another fd for the same dma-buf, and sees the data.
        let again = dev.export(&dumb, PrimeFlags::CLOEXEC | RW).expect("second PRIME export");
        assert!(again.same_buffer(&buf).unwrap(), "a second export made a different dma-buf");
        assert!(read_under_guard(&again, len) == data, "the pattern did not survive the round trip");

        // Importing one's own export gives back the original handle, through
        // either fd.
        let imported = dev.import(&buf).expect("PRIME import of the own export");
        assert_eq!(imported.handle(), dumb.handle());
        let imported_again = dev.import(&again).expect("PRIME import through the second fd");
        assert_eq!(imported_again.handle(), dumb.handle());

        // Dropping the imports must not close the handle the dumb buffer
        // still holds (the kernel does not count handles; the device does):
        // exporting it must still work.
        drop(imported);
        drop(imported_again);
        let third = dev.export(&dumb, PrimeFlags::CLOEXEC).expect("export after the imports were dropped");
        assert!(third.same_buffer(&buf).unwrap());
        drop(dumb);

        // The dma-buf keeps the pages alive after the handle is closed.
        assert!(read_under_guard(&buf, len) == data, "the data went with the GEM handle");
    });
}

#[test]
fn read_only_export_cannot_be_mapped_writable() {
    no_leak(|| {
        let dev = DrmDevice::open_vgem().expect("open vgem");
        let dumb = dev.create_dumb(64, 64, 32).expect("create a dumb buffer");
        let ro = dev.export(&dumb, PrimeFlags::CLOEXEC).expect("read-only PRIME export");
        assert_eq!(ro.map(Access::ReadWrite).unwrap_err().errno, Errno::ACCESS);
        ro.map(Access::Read).expect("a read-only mapping of a read-only export");
    });
}

#[test]
fn udmabuf_dma_buf_imports_into_vgem() {
    no_leak(|| {
        let dev = DrmDevice::open_vgem().expect("open vgem");
        let size = 16 * page_size() as u64;
        let memfd = Memfd::create(c"drm-test-udmabuf", size).expect("memfd");
        memfd.add_seals(Seals::SHRINK).expect("F_SEAL_SHRINK");
        let data = pattern(size as usize, 0xa5);
        memfd.map(0, size as usize, Access::ReadWrite).unwrap().write_bytes(0, &data);
        let udmabuf = Udmabuf::open().expect("open /dev/udmabuf");
        let buf = udmabuf.create(memfd.as_fd(), 0, size).expect("UDMABUF_CREATE");

        let dumb = dev.create_dumb(64, 64, 32).expect("create a dumb buffer");
        let imported = dev.import(&buf).expect("vgem imports a udmabuf dma-buf");
        assert_ne!(imported.handle(), 0);
        assert_ne!(imported.handle(), dumb.handle(), "a foreign dma-buf got the dumb buffer's handle");
        // The same dma-buf imported again shares the handle; dropping one
        // import keeps it for the other.
        let twice = dev.import(&buf).expect("second import");
        assert_eq!(twice.handle(), imported.handle());
        drop(twice);
        let thrice = dev.import(&buf).expect("third import");
        assert_eq!(thrice.handle(), imported.handle());

        // The importer did not disturb the pages: the CPU still reads them
        // through the dma-buf.
        assert!(read_under_guard(&buf, size as usize) == data, "udmabuf pages changed under the import");
    });
}

#[test]
fn buffers_stay_on_their_device() {
    no_leak(|| {
        let a = DrmDevice::open_vgem().expect("open vgem");
        let b = DrmDevice::open_vgem().expect("open vgem a second time");
        let dumb = a.create_dumb(32, 32, 32).expect("create a dumb buffer");
        assert_eq!(b.export(&dumb, PrimeFlags::CLOEXEC).unwrap_err(), DrmError::ForeignBuffer);

        // Through a dma-buf the buffer does reach the other open file, with a
        // handle of its own there.
        let buf = a.export(&dumb, PrimeFlags::CLOEXEC | RW).expect("export");
        let on_b = b.import(&buf).expect("import on the second open file");
        assert_ne!(on_b.handle(), 0);
    });
}

#[test]
fn dumb_geometry_is_checked_like_the_kernel_does() {
    require_guest();
    let dev = DrmDevice::open_vgem().expect("open vgem");
    for (w, h, bpp) in [(0, 64, 32), (64, 0, 32), (64, 64, 0), (65536, 65536, 32)] {
        let expected = DrmError::BadDumbGeometry { width: w, height: h, bpp };
        assert_eq!(dev.create_dumb(w, h, bpp).unwrap_err(), expected, "checked {w}x{h}x{bpp}");
        assert_eq!(dev.create_dumb_unchecked(w, h, bpp).unwrap_err(), expected, "kernel {w}x{h}x{bpp}");
    }
}

#[test]
fn render_node_refuses_dumb_buffers() {
    require_guest();
    let render = drm::nodes()
        .into_iter()
        .filter_map(|p| DrmDevice::open(p).ok())
        .find(|d| d.driver() == "vgem" && d.is_render_node())
        .expect("vgem has a render node");
    let err = render.create_dumb(64, 64, 32).unwrap_err();
    assert_eq!(err, DrmError::RenderNode(render.path().to_owned()));
}

#[test]
fn non_drm_files_are_told_apart() {
    require_guest();
    assert_eq!(DrmDevice::open("/dev/null").unwrap_err(), DrmError::NotDrm("/dev/null".into()));
    assert_eq!(DrmDevice::open("/dev/dri/card99").unwrap_err(), DrmError::NoDevice("/dev/dri/card99".into()));
}
