//! kmod-helpers/dmabridge-kmod against the guest kernel: binding is
//! idempotent, a function can be given back and bound again.

use std::process::{Command, Output};

use dmabridge::sys::pci::PciFunction;
use dmabridge_tests::{addr, repo_root, require_guest, EDU0, EDU1};

fn kmod(args: &[&str]) -> Output {
    Command::new(repo_root().join("kmod-helpers/dmabridge-kmod")).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn bind_is_idempotent_and_unbind_gives_the_function_back() {
    require_guest();
    let o = kmod(&["bind", EDU0]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("already bound to vfio-pci"), "{}", stdout(&o));

    assert_eq!(PciFunction::read(addr(EDU1)).unwrap().driver, None);
    let o = kmod(&["bind", EDU1]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = PciFunction::read(addr(EDU1)).unwrap();
    assert!(f.is_vfio_bound());
    assert!(std::path::Path::new(&format!("/dev/vfio/{}", f.iommu_group.unwrap())).exists());
    let o = kmod(&["unbind", EDU1]);
    assert!(o.status.success());
    assert_eq!(PciFunction::read(addr(EDU1)).unwrap().driver, None);
    let status = stdout(&kmod(&["status"]));
    assert!(status.contains(&format!("pci {EDU0} 1234:11e8 driver=vfio-pci")), "{status}");
    assert!(status.contains(&format!("pci {EDU1} 1234:11e8 driver=none")), "{status}");
    assert!(status.contains("module udmabuf: loaded"), "{status}");
}

#[test]
fn bad_specs_fail_with_a_message() {
    require_guest();
    let o = kmod(&["bind", "0000:00:1e.0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no PCI function 0000:00:1e.0"));
    let o = kmod(&["bind", "dead:beef"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no PCI function matches dead:beef"));
}

#[test]
fn load_knows_built_in_and_loaded_modules() {
    require_guest();
    // udmabuf is built into the rig's kernel, vfio-pci was loaded at boot.
    let o = kmod(&["load", "udmabuf", "vfio-pci", "vfio_iommu_type1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    for m in ["udmabuf", "vfio-pci", "vfio_iommu_type1"] {
        assert!(out.contains(&format!("{m}: already loaded")), "{m}: {out}");
    }
}
