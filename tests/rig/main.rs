//! Rig tests: host side. Each boots the QEMU guest through
//! `qemu/run-in-guest` and checks what crosses the host/guest boundary: exit
//! status, output, failure reports, and bytes a device wrote into the ivshmem
//! backing file. Run by `make test-rig` (they need the guest kernel fetched).

use std::path::PathBuf;
use std::process::{Command, Output};

use dmabridge_tests::{dmabridge_bin, repo_root};

fn rig(args: &[&str]) -> Output {
    Command::new(repo_root().join("qemu/run-in-guest")).args(args).output().expect("qemu/run-in-guest runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn status_output_and_folder_pass_through() {
    let out = rig(&["--no-ivshmem", "--", "sh", "-c", "echo hello from $(uname -r) in $PWD; echo oops >&2; exit 7"]);
    assert_eq!(out.status.code(), Some(7), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("hello from 6.12."), "{stdout}");
    assert!(stdout.contains(&format!("in {}", std::env::current_dir().unwrap().display())), "{stdout}");
    assert!(stdout.contains("oops"), "the command's stderr is shown too: {stdout}");
}

#[test]
fn a_failed_setup_step_is_named() {
    let out = rig(&["--no-ivshmem", "--module", "no_such_module", "--", "true"]);
    assert_eq!(out.status.code(), Some(125));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("guest set-up failed: modprobe no_such_module"), "{stderr}");
    assert!(stderr.contains("last lines of the guest console"), "{stderr}");
}

#[test]
fn the_wall_clock_bound_holds() {
    let t = std::time::Instant::now();
    let out = rig(&["--no-ivshmem", "--timeout", "15", "--", "sleep", "600"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(text(&out.stderr).contains("did not finish within 15 s"), "{}", text(&out.stderr));
    assert!(t.elapsed().as_secs() < 40, "took {:?}", t.elapsed());
}

/// edu in the guest DMAs peer-to-peer into the ivshmem BAR; the bytes are in
/// the host file behind it, read here after the guest is gone.
#[test]
fn ivshmem_p2p_bytes_reach_the_host_file() {
    let file = PathBuf::from(format!("/dev/shm/dmabridge-rig-test-{}", std::process::id()));
    let marker = format!("p2p-marker-{}-{}", std::process::id(), rand_suffix());
    let bin = dmabridge_bin();
    let out = rig(&[
        "--ivshmem",
        file.to_str().unwrap(),
        "--bind",
        "0000:00:10.0",
        "--bind",
        "0000:00:08.0",
        "--",
        bin.to_str().unwrap(),
        "proof",
        "--marker",
        &marker,
        "--bar-offset",
        "0x3000",
    ]);
    let data = std::fs::read(&file);
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "proof failed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("proof: ok"), "{}", text(&out.stdout));
    let data = data.expect("the ivshmem backing file exists after the run");
    assert_eq!(data.len(), 4 << 20);
    assert_eq!(&data[0x3000..0x3000 + marker.len()], marker.as_bytes(), "marker not at BAR2 offset 0x3000");
    assert!(data[..0x3000].iter().all(|&b| b == 0), "bytes before the transfer were touched");
}

/// The newest guest test executable beside this one (`cargo test -p
/// dmabridge-tests --test guest --no-run` builds it).
fn guest_tests_bin() -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let newest = std::fs::read_dir(&deps)
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("guest-") && !name.contains('.')
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok());
    let bin = newest.map(|e| e.path());
    bin.unwrap_or_else(|| {
        panic!(
            "no guest test executable in {}: run `cargo test -p dmabridge-tests --test guest --no-run` first",
            deps.display()
        )
    })
}

/// With edu's `dma_mask` raised to 64 bits (and dmabridge told so), a device
/// allocation's bus address is its own pointer, and edu DMA through it
/// works: the guest test asserts it.
#[test]
fn edu_bus_addresses_equal_pointers_with_a_wide_dma_mask() {
    run_guest_test(
        &[
            "--no-ivshmem",
            "--edu",
            "1",
            "--edu-dma-mask",
            "0xffffffffffffffff",
            "--bind",
            "0000:00:10.0",
            "--env",
            "DMABRIDGE_EDU_DMA_MASK=0xffffffffffffffff",
        ],
        "edu_device::child_bus_address_equals_the_pointer_with_a_wide_mask",
    );
}

/// Two device memories (two ivshmems as BAR devices): a buffer moves from
/// one to the other through a host allocation, with no data lost.
#[test]
fn buffer_moves_between_two_device_memories_through_the_host() {
    run_guest_test(
        &[
            "--edu",
            "0",
            "--ivshmem2",
            "--bind",
            "0000:00:08.0",
            "--bind",
            "0000:00:09.0",
            "--env",
            "DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2;0000:00:09.0,bar=2",
        ],
        "buffer::child_unlinked_to_unlinked_goes_through_a_host_allocation",
    );
}

/// Boots a guest with `rig_args` and runs the ignored guest test `path`
/// alone in it; asserts that it passed.
fn run_guest_test(rig_args: &[&str], path: &str) {
    let bin = guest_tests_bin();
    let mut args = rig_args.to_vec();
    args.extend(["--", bin.to_str().unwrap(), "--exact", path, "--ignored", "--test-threads=1", "--nocapture"]);
    let out = rig(&args);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    println!("{all}");
    assert!(out.status.success() && all.contains("1 passed"), "the guest test {path} failed:\n{all}");
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

/// Modules asked for with --module load at boot, with their parameters; the
/// V4L2 test driver vivid (for capture pipelines) and vgem (DRM PRIME) are
/// there.
#[test]
fn modules_load_at_boot_with_parameters() {
    let out = rig(&[
        "--no-ivshmem",
        "--module",
        "vivid:n_devs=1,node_types=0x1",
        "--module",
        "vgem",
        "--",
        "sh",
        "-c",
        "cat /sys/module/vivid/parameters/n_devs; ls /dev | grep -c '^video'; ls /sys/module | grep -x vgem",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first().map(|l| l.trim()), Some("1"), "{stdout}");
    assert_eq!(lines.get(1).map(|l| l.trim()), Some("1"), "one vivid node, video capture only: {stdout}");
    assert_eq!(lines.get(2).map(|l| l.trim()), Some("vgem"), "{stdout}");
}

/// With stdout redirected to a file, what the caller writes after the guest
/// exits follows the guest's output instead of overwriting it.
#[test]
fn output_to_a_file_is_not_overwritten_by_the_caller() {
    let file = std::env::temp_dir().join(format!("dmabridge-rig-out-{}", std::process::id()));
    let script = format!(
        "({} --no-ivshmem -- echo from-the-guest; echo from-the-host) > {}",
        repo_root().join("qemu/run-in-guest").display(),
        file.display()
    );
    let status = Command::new("bash").arg("-c").arg(&script).status().unwrap();
    let content = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(status.success());
    assert_eq!(content, "from-the-guest\nfrom-the-host\n");
}
