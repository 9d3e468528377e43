//! The mapping's unit tests: range checks, accessor bounds, the volatile
//! copies.

use super::*;
use crate::sys::memfd::{Memfd, Seals};

fn sealed(size: u64) -> Memfd {
    let m = Memfd::create(c"mmap-test", size).unwrap();
    m.add_seals(Seals::SHRINK).unwrap();
    m
}

#[test]
fn ranges_are_checked_without_overflow() {
    assert_eq!(check_range(0, 4096, 4096), Ok(()));
    assert_eq!(check_range(4096, 0, 4096), Ok(()));
    for (offset, len) in [(1, 4096), (4097, 0), (u64::MAX, 1), (1, usize::MAX), (u64::MAX, usize::MAX)] {
        assert_eq!(check_range(offset, len, 4096), Err(MapError::OutOfBounds { offset, len, size: 4096 }));
    }
}

#[test]
fn accessor_bounds_panic_instead_of_overflowing() {
    let m = sealed(4096);
    let map = m.map(0, 4096, Access::ReadWrite).unwrap();
    for offset in [4096, 4100, usize::MAX - 7, usize::MAX - 3] {
        let msg = std::panic::catch_unwind(|| map.read_u32(offset)).unwrap_err();
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(msg.contains("beyond mapping"), "{msg}");
    }
    assert!(std::panic::catch_unwind(|| map.write_bytes(usize::MAX, &[1, 2])).is_err());
    assert!(std::panic::catch_unwind(|| map.read_bytes(1, &mut [0u8; 4096])).is_err());
    assert!(std::panic::catch_unwind(|| map.write_u64(usize::MAX & !7, 0)).is_err());
}

/// Every head/word/tail split of the volatile copies, at every alignment.
#[test]
fn volatile_copies_move_exactly_the_bytes_asked() {
    let m = sealed(4096);
    let map = m.map(0, 4096, Access::ReadWrite).unwrap();
    let pattern: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37).wrapping_add(1)).collect();
    for offset in 0..16 {
        for len in 0..40 {
            map.write_bytes(0, &[0u8; 128]);
            map.write_bytes(offset, &pattern[..len]);
            let mut all = [0xffu8; 128];
            map.read_bytes(0, &mut all);
            assert!(all[..offset].iter().all(|&b| b == 0), "before {offset}+{len}");
            assert_eq!(&all[offset..offset + len], &pattern[..len], "{offset}+{len}");
            assert!(all[offset + len..].iter().all(|&b| b == 0), "after {offset}+{len}");
            let mut part = vec![0u8; len];
            map.read_bytes(offset, &mut part);
            assert_eq!(part, &pattern[..len]);
        }
    }
}

/// `Mapping` stays `Send + Sync`: its accesses are volatile, so sharing
/// it between threads is sound (see the `Sync` impl).
#[test]
fn concurrent_writers_store_whole_aligned_words() {
    fn shareable<T: Send + Sync>(_: &T) {}
    let m = sealed(4096);
    let map = m.map(0, 4096, Access::ReadWrite).unwrap();
    shareable(&map);
    std::thread::scope(|s| {
        for byte in [0x11u8, 0x22, 0x33] {
            let map = &map;
            s.spawn(move || {
                for _ in 0..200 {
                    map.write_bytes(0, &[byte; 4096]);
                }
            });
        }
        let map = &map;
        s.spawn(move || {
            for _ in 0..200 {
                let mut page = [0u8; 4096];
                map.read_bytes(0, &mut page);
                for word in page.chunks(8) {
                    assert!(word.iter().all(|&b| b == word[0]), "a torn word: {word:?}");
                }
            }
        });
    });
}
