//! The `dmabridge` command reports a failure as its chain: the subcommand,
//! each step that was being done, then the cause, joined by ": ", on one
//! stderr line, with exit status 1.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use dmabridge_tests::dmabridge_bin;

fn failing(cmd: &mut Command) -> String {
    let out: Output = cmd.stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{cmd:?} must fail with status 1: {out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line, the whole chain: {stderr}");
    stderr.trim_end().to_string()
}

#[test]
fn info_that_cannot_write_its_report_names_the_step_and_the_os_cause() {
    // /dev/full takes no byte: every write fails with ENOSPC.
    let full = File::options().write(true).open("/dev/full").unwrap();
    let stderr = failing(Command::new(dmabridge_bin()).arg("info").stdout(full));
    assert_eq!(stderr, "dmabridge: info: writing the report to stdout: No space left on device (os error 28)");
}

#[test]
fn proof_that_cannot_open_its_device_names_each_step_and_the_cause() {
    // No such function anywhere: the proof fails on every machine, at the
    // first step that this machine cannot take.
    let stderr = failing(Command::new(dmabridge_bin()).args(["proof", "--edu", "0000:ff:1f.7"]));
    if Path::new("/dev/vfio/vfio").exists() {
        assert!(stderr.starts_with("dmabridge: proof: opening edu 0000:ff:1f.7: "), "{stderr}");
    } else {
        assert!(
            stderr.starts_with("dmabridge: proof: opening the VFIO container: no /dev/vfio/vfio: load vfio-pci"),
            "{stderr}"
        );
    }
}

#[test]
fn remote_dma_without_two_edu_devices_says_what_it_needs() {
    let stderr = failing(Command::new(dmabridge_bin()).args(["remote-dma", "--engine", "0000:ff:1f.7"]));
    // Fewer than two edu devices (the host has none), or no edu at the
    // given engine address.
    assert!(
        stderr.starts_with("dmabridge: remote-dma: needs two edu devices bound to vfio-pci")
            || stderr.starts_with("dmabridge: remote-dma: no edu device at 0000:ff:1f.7"),
        "{stderr}"
    );
    let stderr = failing(Command::new(dmabridge_bin()).args(["remote-dma", "--width", "3"]));
    assert!(stderr.contains("--width even"), "{stderr}");
}

#[test]
fn capture_without_a_capture_device_says_how_to_get_one() {
    // Not a V4L2 node: fails on every machine, naming the node and the ioctl.
    let stderr = failing(Command::new(dmabridge_bin()).args(["capture", "--device", "/dev/null"]));
    assert_eq!(
        stderr,
        "dmabridge: capture: finding the capture device: /dev/null: VIDIOC_QUERYCAP failed: Inappropriate ioctl for \
         device (os error 25) (errno 25)"
    );
    // No capture device at all (the development host has none; the guest
    // tests run the command against vivid).
    let any = dmabridge::sys::v4l2::VideoDevice::list()
        .iter()
        .any(|p| dmabridge::sys::v4l2::VideoDevice::open(p).is_ok_and(|d| d.capability().captures()));
    if !any {
        let stderr = failing(Command::new(dmabridge_bin()).args(["capture", "--frames", "1"]));
        assert_eq!(
            stderr,
            "dmabridge: capture: finding the capture device: no V4L2 capture device: load vivid (`modprobe vivid`) \
             or run `make demo`, which uses the QEMU guest"
        );
    }
}

/// `--kernel-options` belongs to `--kernel`: alone it is a usage error
/// (clap's status 2) that names what it needs; a value that starts with a
/// dash is taken as the options, not as a flag.
#[test]
fn kernel_options_need_a_kernel() {
    let out = Command::new(dmabridge_bin()).args(["capture", "--kernel-options", "-D X=1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--kernel-options") && stderr.contains("--kernel <FILE.cl[:NAME]>"), "{stderr}");
    // With a kernel, the options parse and the command gets as far as the
    // capture device (/dev/null is none).
    let stderr = failing(Command::new(dmabridge_bin()).args([
        "capture",
        "--device",
        "/dev/null",
        "--kernel",
        "k.cl",
        "--kernel-options",
        "-D X=1 -cl-fast-relaxed-math",
    ]));
    assert!(stderr.starts_with("dmabridge: capture: finding the capture device: /dev/null"), "{stderr}");
}
