//! `dmabridge info` in the QEMU guest, where every zero-copy path exists:
//! udmabuf with its default limits, the system heap, the IOMMU, VFIO with
//! edu 0000:00:10.0 and ivshmem bound to vfio-pci and edu 0000:00:11.0 not.
//! The arm64 guest (an SMMUv3) has no DMA-BUF heaps in its kernel, and there
//! the unbound edu is in no IOMMU group: a function joins its group when a
//! driver probes it.

use std::path::Path;
use std::process::Command;

use dmabridge::runtime::platform::Platform;
use dmabridge::sys::probe::{PathKind, Report, Verdict};
use dmabridge_tests::{addr, dmabridge_bin, require_guest, EDU0, EDU1, IVSHMEM};
use serde_json::Value;

fn info_json() -> Value {
    let o = Command::new(dmabridge_bin()).args(["info", "--json"]).output().unwrap();
    assert!(o.status.success(), "dmabridge info --json: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The report's entry for the function at `address`, and its group's entry.
fn function<'a>(r: &'a Value, address: &str) -> (&'a Value, &'a Value) {
    for g in r["vfio"]["groups"].as_array().unwrap() {
        if let Some(f) = g["functions"].as_array().unwrap().iter().find(|f| f["address"] == address) {
            return (g, f);
        }
    }
    // With an SMMU, a function no driver has probed is in no group yet.
    if let Some(f) = r["vfio"]["ungrouped"].as_array().unwrap().iter().find(|f| f["address"] == address) {
        return (&Value::Null, f);
    }
    panic!("{address} is in no IOMMU group of the report: {}", r["vfio"]);
}

/// Whether the kernel has DMA-BUF heaps (not Debian's arm64 kernels).
fn heaps_in_kernel() -> bool {
    Path::new("/sys/class/dma_heap").exists()
}

fn sysfs_group(address: &str) -> u32 {
    let link = std::fs::read_link(Path::new("/sys/bus/pci/devices").join(address).join("iommu_group")).unwrap();
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

#[test]
fn udmabuf_heaps_and_iommu_are_there() {
    require_guest();
    let r = info_json();
    let u = &r["udmabuf"];
    assert_eq!((&u["present"], &u["accessible"], &u["verdict"]), (&true.into(), &true.into(), &"ok".into()), "{u}");
    assert_eq!(u["limits"]["size_limit"], 64 << 20, "{u}");
    if heaps_in_kernel() {
        let system = r["heaps"]["heaps"].as_array().unwrap().iter().find(|h| h["name"] == "system");
        let system = system.unwrap_or_else(|| panic!("no system heap: {}", r["heaps"]));
        assert_eq!(system["accessible"], true, "{system}");
        assert_eq!(r["heaps"]["verdict"], "ok");
    } else {
        assert_eq!(r["heaps"]["verdict"], "missing", "{}", r["heaps"]);
    }
    let i = &r["iommu"];
    assert_eq!(i["on"], true, "{i}");
    assert_eq!(i["verdict"], "ok", "{i}");
    let unit = if cfg!(target_arch = "aarch64") { "smmu" } else { "dmar" };
    assert!(i["units"].as_array().unwrap().iter().any(|u| u.as_str().unwrap().starts_with(unit)), "{i}");
    assert_eq!(r["io_uring"]["works"], true);
}

#[test]
fn vfio_and_the_bound_edu_are_reported() {
    require_guest();
    let r = info_json();
    let v = &r["vfio"];
    let rig = format!("run the guest with --bind {EDU0} --bind {IVSHMEM}, as `make test-guest` does");
    assert_eq!(v["container"]["present"], true, "no /dev/vfio/vfio: {rig}");
    assert_eq!(v["container"]["type1v2"], true, "{v}");
    assert!(v["modules"].as_array().unwrap().iter().all(|m| m["loaded"] == true), "{v}");
    assert_eq!(v["verdict"], "ok", "{v}");

    let (g, edu) = function(&r, EDU0);
    assert_eq!(edu["driver"], "vfio-pci", "{edu}: {rig}");
    assert_eq!(edu["known"], "edu", "{edu}");
    assert_eq!(edu["id"], "1234:11e8", "{edu}");
    assert_eq!(edu["iommu_group"], sysfs_group(EDU0), "{edu}");
    assert_eq!(g["group"], sysfs_group(EDU0), "{g}");
    assert_eq!(g["node"], format!("/dev/vfio/{}", sysfs_group(EDU0)), "{g}");
    assert_eq!((&g["node_present"], &g["node_accessible"], &g["viable"]), (&true.into(), &true.into(), &true.into()));
    assert_eq!(edu["verdict"], "ok", "{edu}");

    let (_, ivshmem) = function(&r, IVSHMEM);
    assert_eq!(ivshmem["known"], "ivshmem", "{ivshmem}");
    assert_eq!(ivshmem["driver"], "vfio-pci", "{ivshmem}: {rig}");

    let path = r["overall"]["paths"].as_array().unwrap().iter().find(|p| p["kind"] == "vfio").unwrap();
    assert_eq!(path["available"], true, "{path}");
    assert!(path["detail"].as_str().unwrap().contains(EDU0), "{path}");
}

#[test]
fn the_unbound_edu_says_how_to_bind_it() {
    require_guest();
    let r = info_json();
    let (g, edu) = function(&r, EDU1);
    if edu["driver"] == "vfio-pci" {
        eprintln!("{EDU1} is bound to vfio-pci in this run: the unbound case cannot be shown");
        return;
    }
    assert_eq!(edu["verdict"], "missing", "{edu}");
    assert_eq!(edu["hint"], format!("kmod-helpers/dmabridge-kmod bind {EDU1}"), "{edu}");
    if !g.is_null() {
        assert_eq!(g["node_present"], false, "{g}");
        assert!(g["verdict"].is_null(), "{g}");
    }
}

#[test]
fn the_library_sees_every_path() {
    require_guest();
    let report = Report::gather();
    // Two paths of three without heaps in the kernel: a warning, not ok.
    let overall = if heaps_in_kernel() { Verdict::Ok } else { Verdict::Warning };
    assert_eq!(report.overall.verdict, overall, "{report}");
    let kinds: Vec<PathKind> = report.overall.paths.iter().filter(|p| p.available).map(|p| p.kind).collect();
    let want: &[PathKind] = if heaps_in_kernel() {
        &[PathKind::Udmabuf, PathKind::Heaps, PathKind::Vfio]
    } else {
        &[PathKind::Udmabuf, PathKind::Vfio]
    };
    assert_eq!(kinds, want, "{report}");
    assert!(report.vfio.usable_functions().any(|f| f.function.address.to_string() == EDU0), "{report}");
}

#[test]
fn the_text_report_is_all_ok_but_the_unbound_edu() {
    require_guest();
    let o = Command::new(dmabridge_bin()).arg("info").output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let heap = if heaps_in_kernel() { "/dev/dma_heap/system" } else { "/dev/udmabuf" };
    for item in ["/dev/udmabuf", heap, "/dev/vfio/vfio", "vfio_pci", "vfio_iommu_type1", EDU0] {
        let line = text.lines().find(|l| l.contains(item)).unwrap_or_else(|| panic!("no {item} in:\n{text}"));
        assert!(line.trim_start().starts_with("ok "), "{line}");
    }
    assert!(text.lines().any(|l| l.contains("64 MiB per dma-buf")), "{text}");
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| ["MISSING", "NO ACCESS", "WARNING"].iter().any(|w| l.trim_start().starts_with(w)))
        .collect();
    // Without heaps in the kernel, their MISSING line (and what it says to do).
    let heaps_line = |l: &&str| {
        !heaps_in_kernel()
            && (l.contains("/dev/dma_heap") || l.contains("heaps") || l.contains("2 of 3 zero-copy paths available"))
    };
    // A device whose VFIO group this test process holds (another guest test
    // opened the platform) is unavailable to the child: a warning.
    let held_here = |l: &&str| l.contains("EBUSY");
    assert!(
        bad.iter().all(|l| l.contains(EDU1) || heaps_line(l) || held_here(l)),
        "only the unbound edu (and heaps, if the kernel has none) may be missing:\n{text}"
    );
}

/// A device whose function is there but cannot be used: this process holds
/// edu 0000:00:10.0's VFIO group (the platform opened it), so `dmabridge
/// info` in another process reports it unavailable, with the reason (the
/// group is busy) and the fix; the edu no one can open is not reported as
/// available either.
#[test]
fn info_reports_a_device_held_by_another_process_unavailable() {
    require_guest();
    let held = Platform::get().devices().iter().any(|d| d.pci_address() == Some(addr(EDU0)));
    assert!(held, "this process opened {EDU0}: {:?}", Platform::get().skipped());
    let r = info_json();
    let devices = r["devices"]["devices"].as_array().unwrap_or_else(|| panic!("no devices section: {r}"));
    let cpu = &devices[0];
    assert_eq!((&cpu["state"], &cpu["verdict"]), (&"available".into(), &"ok".into()), "{cpu}");
    let edu = devices.iter().find(|d| d["address"] == EDU0).unwrap_or_else(|| panic!("no {EDU0}: {r}"));
    assert_eq!((&edu["state"], &edu["verdict"]), (&"unavailable".into(), &"warning".into()), "{edu}");
    assert!(edu["reason"].as_str().unwrap().contains("EBUSY"), "{edu}");
    assert!(edu["hint"].as_str().unwrap().contains("another process holds its VFIO group"), "{edu}");
    assert!(
        devices.iter().filter(|d| d["state"] == "available").all(|d| d["address"] != EDU0 && d["address"] != EDU1),
        "{r}"
    );
    let o = Command::new(dmabridge_bin()).arg("info").output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let line = text.lines().rfind(|l| l.contains(EDU0)).unwrap();
    assert!(line.starts_with("  WARNING    ") && line.contains("unavailable: "), "{line}\n{text}");
}

/// The guest's root is read-only, as on many boards: PoCL's default kernel
/// cache (`~/.cache/pocl/kcache`) can be neither made nor written there. The
/// report says the compiler is missing for that reason, names the folder
/// and the fix (`POCL_CACHE_DIR`); pointed at a writable folder, PoCL loads.
#[test]
fn a_read_only_root_names_pocls_cache_and_the_fix() {
    require_guest();
    if !dmabridge_tests::pocl_or_skip("a_read_only_root_names_pocls_cache_and_the_fix") {
        return;
    }
    let compiler = |cmd: &mut Command| {
        let o = cmd.args(["info", "--json"]).output().unwrap();
        assert!(o.status.success(), "dmabridge info --json: {}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["devices"]["compiler"].clone(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let mut cmd = Command::new(dmabridge_bin());
    cmd.env_remove("POCL_CACHE_DIR").env_remove("XDG_CACHE_HOME").env("HOME", "/root");
    let (c, stderr) = compiler(&mut cmd);
    let why = c["Err"]["why"].as_str().unwrap_or_else(|| panic!("no compiler expected: {c}"));
    assert!(why.contains("/root/.cache/pocl/kcache") && why.contains("(from HOME)"), "{why}");
    assert!(why.contains("Read-only file system"), "{why}");
    assert!(c["Err"]["fix"].as_str().unwrap().starts_with("set POCL_CACHE_DIR"), "{c}");
    assert!(!stderr.contains("libstdc++"), "PoCL did not start: {stderr}");
    let dir = std::env::temp_dir().join(format!("dmabridge-info-pocl-{}", std::process::id()));
    let (c, _) = compiler(Command::new(dmabridge_bin()).env("POCL_CACHE_DIR", &dir));
    assert!(c["Ok"].as_str().is_some_and(|v| v.contains("PoCL")), "{c}");
    let _ = std::fs::remove_dir_all(&dir);
}
