//! What the sections add up to: the zero-copy paths and a summary.

use super::text::bytes;
use super::{hint, HeapsReport, IommuReport, Overall, PathKind, UdmabufReport, Verdict, VfioReport, ZeroCopyPath};

fn overall_hint() -> String {
    format!(
        "fix what the sections above name{}",
        crate::sys::hints::checkout_only(", or run `make demo`, which uses a QEMU guest that has every path")
    )
}

impl Overall {
    pub(super) fn new(udmabuf: &UdmabufReport, heaps: &HeapsReport, iommu: &IommuReport, vfio: &VfioReport) -> Overall {
        let path = |kind, name, blockers: Vec<(&'static str, Verdict, &Option<String>)>, offers: String| {
            let blocking: Vec<_> = blockers.into_iter().filter(|(_, v, _)| *v != Verdict::Ok).collect();
            match blocking.iter().map(|(_, v, _)| *v).max() {
                None => ZeroCopyPath { kind, name, available: true, detail: offers, verdict: Verdict::Ok, hint: None },
                Some(worst) => ZeroCopyPath {
                    kind,
                    name,
                    available: false,
                    detail: format!(
                        "blocked by: {}",
                        blocking.iter().map(|(s, _, _)| *s).collect::<Vec<_>>().join(", ")
                    ),
                    verdict: worst,
                    hint: blocking[0].2.clone(),
                },
            }
        };
        let usable_heaps: Vec<&str> = heaps.heaps.iter().filter(|h| h.accessible).map(|h| h.name.as_str()).collect();
        let usable_fns: Vec<String> = vfio
            .usable_functions()
            .map(|f| match f.known {
                Some(k) => format!("{} ({k})", f.function.address),
                None => f.function.address.to_string(),
            })
            .collect();
        let iommu_blocks = if iommu.on { Verdict::Ok } else { iommu.verdict };
        let heaps_verdict = if usable_heaps.is_empty() { heaps.verdict } else { Verdict::Ok };
        let paths = vec![
            path(
                PathKind::Udmabuf,
                "memfd → udmabuf",
                vec![("udmabuf", udmabuf.verdict, &udmabuf.hint)],
                match udmabuf.limits {
                    Some(l) => format!("memfd pages exported as dma-bufs, up to {} each", bytes(l.size_limit)),
                    None => "memfd pages exported as dma-bufs".to_owned(),
                },
            ),
            path(
                PathKind::Heaps,
                "DMA-BUF heaps",
                vec![("heaps", heaps_verdict, &heaps.hint)],
                format!("dma-bufs allocated from {}", usable_heaps.join(", ")),
            ),
            path(
                PathKind::Vfio,
                "VFIO DMA mapping",
                // No-IOMMU mode (a warning) still maps; only a missing IOMMU blocks.
                vec![("iommu", iommu_blocks, &iommu.hint), ("vfio", vfio.verdict, &vfio.hint)],
                format!("buffers mapped for {}", usable_fns.join(", ")),
            ),
        ];
        let available: Vec<&str> = paths.iter().filter(|p| p.available).map(|p| p.name).collect();
        let (verdict, summary) = match available.len() {
            0 => (Verdict::Missing, "no zero-copy path to devices is available".to_owned()),
            n if n == paths.len() => (Verdict::Ok, format!("all {n} zero-copy paths are available")),
            n => (
                Verdict::Warning,
                format!("{n} of {} zero-copy paths available: {}", paths.len(), available.join(", ")),
            ),
        };
        Overall { paths, summary, verdict, hint: hint(verdict, overall_hint()) }
    }
}
