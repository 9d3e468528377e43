//! VFIO against the guest kernel: containers, groups, devices, DMA mappings,
//! interrupts, and every refusal.

use std::time::Duration;

use dmabridge::memory::iova::{IovaAllocator, IovaError};
use dmabridge::runtime::backend::edu::{self, Direction, Edu, EduError};
use dmabridge::sys::addr::Iova;
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::mmap::Access;
use dmabridge::sys::vfio::{Container, IrqKind, VfioError};
use dmabridge_tests::{addr, require_guest, Resources, EDU0, EDU1, IVSHMEM};

const PAGE: u64 = 4096;

#[test]
fn container_group_device_and_regions() {
    require_guest();
    let before = Resources::now();
    {
        let c = Container::open().unwrap();
        let dev = c.device(addr(EDU0)).unwrap();
        let info = c.iommu_info().unwrap();
        assert_ne!(info.page_sizes & PAGE, 0, "4 KiB IOVA pages: {:#x}", info.page_sizes);
        assert!(!info.iova_ranges.is_empty());
        let bar0 = dev.region(0).unwrap();
        assert_eq!(bar0.size, 1 << 20);
        assert!(bar0.mappable());
        assert_eq!(dev.region(1).unwrap_err(), VfioError::NoRegion(1));
        assert_eq!(dev.region(99).unwrap_err(), VfioError::NoRegion(99));
        // Vendor and device id through config space.
        assert_eq!(dev.config_read_u32(0).unwrap(), 0x11e8_1234);
        assert!(matches!(
            dev.read_region(0, (1 << 20) - 2, &mut [0u8; 4]),
            Err(VfioError::OutsideRegion { index: 0, .. })
        ));
        // vfio-pci leaves bus mastering off; Edu::open turns it on.
        assert!(!dev.bus_master_enabled().unwrap());
        drop(dev);
        let e = Edu::open(&c, addr(EDU0)).unwrap();
        assert!(e.device().bus_master_enabled().unwrap());
        assert_eq!(e.liveness(0x1234_5678), !0x1234_5678);
        // A second device of another group joins the same container.
        let ivshmem = c.device(addr(IVSHMEM)).unwrap();
        assert_ne!(ivshmem.group().number(), e.device().group().number());
        assert_eq!(ivshmem.region(2).unwrap().size, 4 << 20);
    }
    before.assert_unchanged();
}

#[test]
fn unbound_missing_and_busy_devices_are_refused() {
    require_guest();
    let before = Resources::now();
    {
        let c = Container::open().unwrap();
        assert_eq!(
            c.device(addr(EDU1)).unwrap_err(),
            VfioError::NotBoundToVfio { address: addr(EDU1), driver: "no driver".into() }
        );
        assert_eq!(c.device(addr("0000:00:1e.0")).unwrap_err(), VfioError::NoDevice(addr("0000:00:1e.0")));
        let _dev = c.device(addr(EDU0)).unwrap();
        // The group is held by `c`: a second container cannot have it.
        let other = Container::open().unwrap();
        let group = _dev.group().number();
        assert_eq!(other.device(addr(EDU0)).unwrap_err(), VfioError::GroupBusy(group));
        // The refusal did not disturb the first container's device.
        assert_eq!(_dev.region(0).unwrap().size, 1 << 20);
    }
    before.assert_unchanged();
}

#[test]
fn dma_map_refusals_leave_mappings_intact() {
    require_guest();
    let before = Resources::now();
    {
        let c = Container::open().unwrap();
        let _dev = c.device(addr(EDU0)).unwrap();
        let m = Memfd::create(c"vfio-map", 8 * PAGE).unwrap();
        m.add_seals(Seals::SHRINK).unwrap();
        let map = m.map(0, (8 * PAGE) as usize, Access::ReadWrite).unwrap();
        let mut iovas = IovaAllocator::new(edu::DEFAULT_DMA_MASK, PAGE).unwrap();
        let iova = iovas.alloc(4 * PAGE, PAGE).unwrap();
        let first = c.map_dma(&map, 0, 4 * PAGE, iova, Access::ReadWrite).unwrap();
        assert_eq!(c.mappings(), vec![first]);

        // Overlap with a live mapping.
        assert_eq!(
            c.map_dma(&map, 4 * PAGE as usize, 2 * PAGE, iova + 2 * PAGE, Access::ReadWrite).unwrap_err(),
            VfioError::IovaInUse { iova: iova + 2 * PAGE, size: 2 * PAGE }
        );
        // Not page aligned.
        assert!(matches!(
            c.map_dma(&map, 0, 100, iova + (1 << 20), Access::ReadWrite),
            Err(VfioError::Unaligned { .. })
        ));
        // Beyond edu's mask: the allocator refuses, and so does the engine.
        assert_eq!(
            iovas.reserve(Iova(1 << 28), PAGE),
            Err(IovaError::BeyondMask { iova: Iova(1 << 28), size: PAGE, mask: edu::DEFAULT_DMA_MASK })
        );
        // Never mapped: our table refuses, and the kernel unmaps nothing.
        assert_eq!(
            c.unmap_dma(iova + (1 << 20), PAGE).unwrap_err(),
            VfioError::NotMapped { iova: iova + (1 << 20), size: PAGE }
        );
        assert_eq!(c.unmap_dma_unchecked(iova + (1 << 20), PAGE).unwrap(), 0);
        // Partial unmap of a mapping is refused too.
        assert_eq!(c.unmap_dma(iova, PAGE).unwrap_err(), VfioError::NotMapped { iova, size: PAGE });
        assert_eq!(c.mappings(), vec![first]);

        c.unmap_dma(iova, 4 * PAGE).unwrap();
        assert!(c.mappings().is_empty());
        iovas.free(iova).unwrap();
        // The same range can be mapped again after the unmap.
        c.map_dma(&map, 0, 4 * PAGE, iova, Access::Read).unwrap();
    }
    before.assert_unchanged();
}

/// `map_dma` given a range that is not inside the mapping: a typed error,
/// whatever the numbers (an offset near `usize::MAX` used to overflow while
/// building the error).
#[test]
fn dma_ranges_outside_the_mapping_are_refused_without_overflow() {
    require_guest();
    let before = Resources::now();
    {
        let c = Container::open().unwrap();
        let _dev = c.device(addr(EDU0)).unwrap();
        let m = Memfd::create(c"vfio-range", 2 * PAGE).unwrap();
        m.add_seals(Seals::SHRINK).unwrap();
        let map = m.map(0, (2 * PAGE) as usize, Access::ReadWrite).unwrap();
        let len = map.len();
        let cases = [
            (usize::MAX, PAGE),
            (usize::MAX - (PAGE as usize - 1), 2 * PAGE),
            (PAGE as usize, 2 * PAGE),
            (2 * PAGE as usize, PAGE),
            (0, u64::MAX),
            (PAGE as usize, u64::MAX - PAGE + 1),
        ];
        for (offset, size) in cases {
            assert_eq!(
                c.map_dma(&map, offset, size, Iova(0x10_0000), Access::ReadWrite).unwrap_err(),
                VfioError::OutsideMapping { offset, size, len },
                "{offset:#x}+{size:#x}"
            );
        }
        assert!(c.mappings().is_empty());
        // The whole mapping is fine.
        c.map_dma(&map, 0, 2 * PAGE, Iova(0x10_0000), Access::ReadWrite).unwrap();
        c.unmap_dma(Iova(0x10_0000), 2 * PAGE).unwrap();
    }
    before.assert_unchanged();
}

/// A config write that stops the function decoding memory would make the
/// next access to a BAR mapping die with SIGBUS: the safe API refuses it, and
/// refuses to map BARs while decoding is off.
#[test]
fn config_writes_cannot_switch_off_a_mapped_bar() {
    require_guest();
    let before = Resources::now();
    {
        let c = Container::open().unwrap();
        let dev = c.device(addr(EDU0)).unwrap();
        let bar0 = dev.map_region(0).unwrap();
        let ident = bar0.read_u32(0);
        assert_eq!(ident & 0xff, 0xed, "edu's ident register");
        let command = dev.config_read_u16(4).unwrap();
        assert_ne!(command & 2, 0, "vfio-pci turns memory decoding on");
        let result = dev.config_write_u16(4, command & !2);
        if result.is_ok() {
            // Turn it back on before anything touches the BAR.
            dev.config_write_u16(4, command).unwrap();
            panic!("a safe config write switched memory decoding off under a live BAR mapping");
        }
        let refused = |offset, len| VfioError::WouldDisableMemory { address: addr(EDU0), offset, len };
        assert_eq!(result.unwrap_err(), refused(4, 2));
        // One byte of PCI_COMMAND, or the whole first dword pair: the same.
        assert_eq!(dev.write_region(7, 4, &[command as u8 & !2]).unwrap_err(), refused(4, 1));
        let mut header = [0u8; 8];
        dev.read_region(7, 0, &mut header).unwrap();
        header[4] &= !2;
        assert_eq!(dev.write_region(7, 0, &header).unwrap_err(), refused(0, 8));
        // Writes that keep decoding on go through: bus mastering on and off.
        dev.config_write_u16(4, command | 4).unwrap();
        dev.config_write_u16(4, command).unwrap();
        assert_eq!(dev.config_read_u16(4).unwrap(), command);
        assert_eq!(bar0.read_u32(0), ident, "the BAR still answers");

        drop(bar0);
        // SAFETY: no mapping of edu's BARs exists now (`bar0` was dropped),
        // and none is made or touched before decoding is back on.
        unsafe { dev.write_region_unchecked(7, 4, &(command & !2).to_le_bytes()) }.unwrap();
        assert_eq!(dev.map_region(0).unwrap_err(), VfioError::MemoryDisabled(addr(EDU0)));
        // While it is off nothing is mapped, so writes that leave it off are fine.
        dev.config_write_u16(4, command & !2 | 4).unwrap();
        dev.config_write_u16(4, command).unwrap();
        let bar0 = dev.map_region(0).unwrap();
        assert_eq!(bar0.read_u32(0), ident);
    }
    before.assert_unchanged();
}

#[test]
fn edu_refuses_transfers_it_cannot_do() {
    require_guest();
    let c = Container::open().unwrap();
    let e = Edu::open(&c, addr(EDU0)).unwrap();
    let t = Duration::from_secs(5);
    assert_eq!(
        e.dma(Direction::ToDevice, Iova(1 << 28), 0, 16, t),
        Err(EduError::BeyondDmaMask { iova: Iova(1 << 28), len: 16, mask: edu::DEFAULT_DMA_MASK })
    );
    assert_eq!(
        e.dma(Direction::FromDevice, Iova(PAGE), 4000, 200, t),
        Err(EduError::OutsideBuffer { offset: 4000, len: 200 })
    );
    assert_eq!(e.dma(Direction::FromDevice, Iova(PAGE), 0, 0, t), Err(EduError::OutsideBuffer { offset: 0, len: 0 }));
}

#[test]
fn msi_interrupt_arrives_through_io_uring() {
    require_guest();
    let c = Container::open().unwrap();
    let e = Edu::open(&c, addr(EDU0)).unwrap();
    assert_eq!(e.irq_kind(), IrqKind::Msi);
    assert!(e.raise_and_wait_irq(0x1, Duration::from_secs(5)).unwrap());
    assert!(e.raise_and_wait_irq(0x2, Duration::from_secs(5)).unwrap());
}

#[test]
fn intx_completions_are_acknowledged_and_unmasked() {
    require_guest();
    let c = Container::open().unwrap();
    let e = Edu::open_with(&c, addr(EDU0), edu::DEFAULT_DMA_MASK, Some(IrqKind::Intx)).unwrap();
    assert_eq!(e.irq_kind(), IrqKind::Intx);
    // Level-triggered: each interrupt is masked on delivery and must be
    // acknowledged and unmasked before the next one can arrive.
    for value in [0x1, 0x4, 0x8] {
        assert!(e.raise_and_wait_irq(value, Duration::from_secs(5)).unwrap(), "INTx {value:#x}");
    }
    let m = Memfd::create(c"intx", PAGE).unwrap();
    m.add_seals(Seals::SHRINK).unwrap();
    let map = m.map(0, PAGE as usize, Access::ReadWrite).unwrap();
    map.write_bytes(0, b"intx dma");
    c.map_dma(&map, 0, PAGE, Iova(0x10_0000), Access::ReadWrite).unwrap();
    e.dma(Direction::ToDevice, Iova(0x10_0000), 0, 8, Duration::from_secs(10)).unwrap();
    e.dma(Direction::FromDevice, Iova(0x10_0000 + 16), 0, 8, Duration::from_secs(10)).unwrap();
    let mut out = [0u8; 8];
    map.read_bytes(16, &mut out);
    assert_eq!(&out, b"intx dma");
}

/// edu has no FLR or PM reset and sits on the root bus with other functions,
/// so vfio-pci cannot reset it: the refusal is typed and harmless.
#[test]
fn reset_of_a_device_without_a_reset_method_is_refused() {
    require_guest();
    let c = Container::open().unwrap();
    let dev = c.device(addr(EDU0)).unwrap();
    assert!(!dev.supports_reset());
    assert_eq!(dev.reset().unwrap_err(), VfioError::ResetUnsupported(addr(EDU0)));
    assert_eq!(dev.config_read_u32(0).unwrap(), 0x11e8_1234);
}
