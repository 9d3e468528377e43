//! memfd → udmabuf against the guest kernel, including every refusal.

use std::os::fd::AsFd;

use dmabridge::sys::access::Access;
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::mmap::MapError;
use dmabridge::sys::udmabuf::{Range, Udmabuf, UdmabufError};
use dmabridge::sys::OsError;
use dmabridge_tests::{require_guest, Resources};
use rustix::io::Errno;

const PAGE: u64 = 4096;

fn sealed(size: u64) -> Memfd {
    let m = Memfd::create(c"test", size).unwrap();
    m.add_seals(Seals::SHRINK).unwrap();
    m
}

#[test]
fn memfd_and_dma_buf_share_pages() {
    require_guest();
    let before = Resources::now();
    {
        let dev = Udmabuf::open().unwrap();
        let m = sealed(16 * PAGE);
        let buf = dev.create(m.as_fd(), 4 * PAGE, 8 * PAGE).unwrap();
        assert_eq!(buf.size().unwrap(), 8 * PAGE);
        assert!(rustix::io::fcntl_getfd(&buf).unwrap().contains(rustix::io::FdFlags::CLOEXEC));
        let clone = buf.try_clone().unwrap();
        assert!(buf.same_buffer(&clone).unwrap());

        let host = m.map(0, (16 * PAGE) as usize, Access::ReadWrite).unwrap();
        let view = buf.map(Access::ReadWrite).unwrap();
        host.write_bytes((4 * PAGE) as usize + 10, b"through memfd");
        {
            let _cpu = buf.cpu_access(Access::Read).unwrap();
            let mut out = [0u8; 13];
            view.read_bytes(10, &mut out);
            assert_eq!(&out, b"through memfd");
        }
        let cpu = buf.cpu_access(Access::Write).unwrap();
        view.write_bytes((8 * PAGE) as usize - 6, b"dmabuf");
        cpu.end().unwrap();
        let mut out = [0u8; 6];
        host.read_bytes((12 * PAGE) as usize - 6, &mut out);
        assert_eq!(&out, b"dmabuf");
    }
    before.assert_unchanged();
}

#[test]
fn create_list_joins_ranges_in_order() {
    require_guest();
    let dev = Udmabuf::open().unwrap();
    let a = sealed(2 * PAGE);
    let b = sealed(4 * PAGE);
    a.map(0, PAGE as usize, Access::ReadWrite).unwrap().write_bytes(0, b"A0");
    b.map(0, (4 * PAGE) as usize, Access::ReadWrite).unwrap().write_bytes((3 * PAGE) as usize, b"B3");
    let buf = dev
        .create_list(&[
            Range { memfd: a.as_fd(), offset: 0, size: PAGE },
            Range { memfd: b.as_fd(), offset: 3 * PAGE, size: PAGE },
        ])
        .unwrap();
    assert_eq!(buf.size().unwrap(), 2 * PAGE);
    assert!(rustix::io::fcntl_getfd(&buf).unwrap().contains(rustix::io::FdFlags::CLOEXEC));
    let view = buf.map(Access::Read).unwrap();
    let _cpu = buf.cpu_access(Access::Read).unwrap();
    let mut out = [0u8; 2];
    view.read_bytes(0, &mut out);
    assert_eq!(&out, b"A0");
    view.read_bytes(PAGE as usize, &mut out);
    assert_eq!(&out, b"B3");
}

/// Each refusal: our up-front check names the rule, the kernel (asked
/// without the check) says EINVAL, and the memfd is left as it was.
#[test]
fn every_refusal_is_typed_and_matches_the_kernel() {
    require_guest();
    let dev = Udmabuf::open().unwrap();
    let limit = dev.limits().size_limit;
    assert_eq!(limit, 64 << 20, "the rig boots with the default size_limit_mb");
    let kernel_einval = Err(UdmabufError::Os(OsError::new("UDMABUF_CREATE", Errno::INVAL)));
    let before = Resources::now();

    let unsealed = Memfd::create(c"unsealed", 4 * PAGE).unwrap();
    // An unsealed memfd has no safe mapping either: written through the fd.
    assert_eq!(rustix::io::pwrite(&unsealed, b"keep", 0), Ok(4));
    assert_eq!(unsealed.map(0, PAGE as usize, Access::Read).unwrap_err(), MapError::MissingShrinkSeal);
    assert_eq!(dev.create(unsealed.as_fd(), 0, PAGE).map(drop), Err(UdmabufError::MissingShrinkSeal));
    assert_eq!(dev.create_unchecked(unsealed.as_fd(), 0, PAGE).map(drop), kernel_einval);

    let write_sealed = Memfd::create(c"write-sealed", 4 * PAGE).unwrap();
    write_sealed.add_seals(Seals::SHRINK | Seals::WRITE).unwrap();
    assert_eq!(dev.create(write_sealed.as_fd(), 0, PAGE).map(drop), Err(UdmabufError::WriteSealed));
    assert_eq!(dev.create_unchecked(write_sealed.as_fd(), 0, PAGE).map(drop), kernel_einval);

    let m = sealed(4 * PAGE);
    let unaligned = [(0, 100), (100, PAGE), (0, 0)];
    for (offset, size) in unaligned {
        assert_eq!(
            dev.create(m.as_fd(), offset, size).map(drop),
            Err(UdmabufError::Unaligned { offset, size, page: PAGE }),
            "{offset}+{size}"
        );
        assert_eq!(dev.create_unchecked(m.as_fd(), offset, size).map(drop), kernel_einval, "{offset}+{size}");
    }
    assert_eq!(
        dev.create(m.as_fd(), 2 * PAGE, 4 * PAGE).map(drop),
        Err(UdmabufError::BeyondFile { offset: 2 * PAGE, size: 4 * PAGE, file_size: 4 * PAGE })
    );
    assert_eq!(dev.create_unchecked(m.as_fd(), 2 * PAGE, 4 * PAGE).map(drop), kernel_einval);

    // The limit itself is fine; one page more is not.
    let big = sealed(limit + PAGE);
    dev.create(big.as_fd(), 0, limit).unwrap();
    assert_eq!(
        dev.create(big.as_fd(), 0, limit + PAGE).map(drop),
        Err(UdmabufError::OverSizeLimit { size: limit + PAGE, limit })
    );
    assert_eq!(dev.create_unchecked(big.as_fd(), 0, limit + PAGE).map(drop), kernel_einval);

    // Lists: empty and over list_limit.
    let list_limit = dev.limits().list_limit;
    assert_eq!(dev.create_list(&[]).map(drop), Err(UdmabufError::BadRangeCount { count: 0, limit: list_limit }));
    let many: Vec<Range> = (0..=list_limit).map(|_| Range { memfd: m.as_fd(), offset: 0, size: PAGE }).collect();
    assert_eq!(
        dev.create_list(&many).map(drop),
        Err(UdmabufError::BadRangeCount { count: many.len(), limit: list_limit })
    );
    assert_eq!(
        dev.create_list_unchecked(&many).map(drop),
        Err(UdmabufError::Os(OsError::new("UDMABUF_CREATE_LIST", Errno::INVAL)))
    );
    dev.create_list(&many[..list_limit as usize]).unwrap();

    // Nothing was changed by the refusals.
    assert_eq!(unsealed.seals().unwrap(), Seals::empty());
    assert_eq!(unsealed.size().unwrap(), 4 * PAGE);
    let mut out = [0u8; 4];
    assert_eq!(rustix::io::pread(&unsealed, &mut out, 0), Ok(4));
    assert_eq!(&out, b"keep");
    drop(many);
    drop((unsealed, write_sealed, m, big));
    before.assert_unchanged();
}
