//! Rig tests: host side. Each boots the QEMU guest through
//! `qemu/run-in-guest` and checks what crosses the host/guest boundary: exit
//! status, output, failure reports, and bytes a device wrote into the ivshmem
//! backing file. Run by `make test-rig` (they need the guest kernel fetched).

use std::path::PathBuf;
use std::process::{Command, Output};

use dmabridge_tests::{dmabridge_bin, repo_root};

mod doc_selection;

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

/// One edu whose `dma_mask` is raised to 64 bits, dmabridge told so.
const WIDE_MASK_RIG: &[&str] = &[
    "--no-ivshmem",
    "--edu",
    "1",
    "--edu-dma-mask",
    "0xffffffffffffffff",
    "--bind",
    "0000:00:10.0",
    "--env",
    "DMABRIDGE_EDU_DMA_MASK=0xffffffffffffffff",
];

/// With edu's `dma_mask` raised to 64 bits (and dmabridge told so), a device
/// allocation's bus address is its own pointer, and edu DMA through it
/// works: the guest test asserts it.
#[test]
fn edu_bus_addresses_equal_pointers_with_a_wide_dma_mask() {
    run_guest_test(WIDE_MASK_RIG, "edu_device::child_bus_address_equals_the_pointer_with_a_wide_mask");
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

/// The machine of seed 002's guest tests: edu 00:10.0 (the platform's
/// engine), edu 00:12.0 (the remote device) and ivshmem 00:08.0 bound to
/// vfio-pci, edu 00:11.0 left unbound.
const AMD_RIG: &[&str] = &["--edu", "3", "--bind", "0000:00:10.0", "--bind", "0000:00:12.0", "--bind", "0000:00:08.0"];

/// `cl_amd_bus_addressable_memory` in the guest: residency and remote DMA by
/// bus address, IOMMU confinement, wait-signal, external physical buffers
/// on ivshmem (the CPU's writes at every alignment, through the I/O path;
/// functions the platform drives refused) and write-signal
/// (tests/guest/amd_bus.rs), then the limits (RLIMIT_MEMLOCK, IOVA space)
/// and external buffers on the BAR device's queue (written through) in
/// processes of their own, in one boot.
#[test]
fn amd_bus_in_the_rig() {
    let bin = guest_tests_bin();
    let bin = bin.to_str().unwrap();
    let script = format!(
        "{bin} --exact amd_bus::limits_are_named amd_bus::bar_device_writes_external_buffers_through --ignored \
         --test-threads=1 --color never && \
         {bin} amd_bus::child_ --ignored --test-threads=1 --color never"
    );
    let mut args = AMD_RIG.to_vec();
    args.extend(["--", "sh", "-c", &script]);
    let out = rig(&args);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    println!("{all}");
    assert!(out.status.success(), "the guest tests of cl_amd_bus_addressable_memory failed:\n{all}");
    assert!(all.contains("test result: ok. 2 passed") && all.contains("test result: ok. 6 passed"), "{all}");
}

/// Seed 002: with edu's `dma_mask` raised to 64 bits (and dmabridge told
/// so), a resident buffer's bus addresses are its CPU addresses.
#[test]
fn amd_bus_identity_bus_addresses() {
    run_guest_test(WIDE_MASK_RIG, "amd_bus::identity_child_bus_addresses_are_cpu_addresses_with_a_wide_mask");
}

/// Seed 002 end to end, watched from the host: in the guest, `dmabridge
/// remote-dma` has a remote edu DMA each frame and its marker into a
/// bus-addressable buffer, converts it after `WaitSignal`, copies it
/// peer-to-peer into an external physical buffer on the ivshmem BAR and
/// writes its marker with `WriteSignal`. This host process reads the
/// ivshmem backing file while the guest runs: whenever it sees marker `m`,
/// frames 1..=m are all there (frame before marker), markers never go
/// back; at the end every frame's bytes are the ones the guest converted.
#[test]
fn amd_bus_frames_reach_the_host_before_their_markers() {
    const FRAMES: usize = 4;
    const SLOTS: usize = 0x10_0000; // --bar-offset (the default)
    const STRIDE: usize = 0x1000; // 32x8 RGBA (1024 bytes) rounded to a page
    const FRAME: usize = 1024;
    const MARKER: usize = SLOTS + FRAMES * STRIDE;
    let file = PathBuf::from(format!("/dev/shm/dmabridge-rig-amd-{}-{}", std::process::id(), rand_suffix()));
    let bin = dmabridge_bin();
    let mut args = AMD_RIG.to_vec();
    let (f, b) = (file.to_str().unwrap().to_owned(), bin.to_str().unwrap().to_owned());
    args.extend(["--ivshmem", &f, "--", &b, "remote-dma", "--frames", "4"]);
    let mut child = Command::new(repo_root().join("qemu/run-in-guest"))
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("qemu/run-in-guest runs");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let complete = |data: &[u8], k: usize| {
        let slot = &data[SLOTS + (k - 1) * STRIDE..][..FRAME];
        slot.chunks(4).all(|px| px[3] == 0xff)
    };
    let (mut seen, mut last, mut looks) = (Vec::new(), 0u32, 0usize);
    loop {
        let done = child.try_wait().unwrap().is_some();
        if let Ok(data) = std::fs::read(&file) {
            if data.len() >= MARKER + 4 {
                // The marker first: what it promises must already be there.
                let m = u32::from_le_bytes(data[MARKER..MARKER + 4].try_into().unwrap());
                let data = std::fs::read(&file).unwrap();
                looks += 1;
                assert!(m as usize <= FRAMES, "marker {m}");
                assert!(m >= last, "the marker went back from {last} to {m}");
                for k in 1..=m as usize {
                    assert!(complete(&data, k), "marker {m} seen before frame {k} was complete");
                }
                if m != last {
                    seen.push(m);
                }
                last = m;
            }
        }
        if done {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    let err = err_reader.join().unwrap();
    let data = std::fs::read(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    println!("{out}{err}\nmarkers seen from the host, in order: {seen:?} ({looks} looks)");
    assert!(status.success(), "remote-dma failed in the guest:\n{out}{err}");
    assert_eq!(last as usize, FRAMES, "the last marker");
    for k in 1..=FRAMES {
        let slot = &data[SLOTS + (k - 1) * STRIDE..][..FRAME];
        let sum = format!("frame {k}: adler32 {:#010x}", dmabridge::runtime::kernel::adler32(slot));
        assert!(out.contains(&sum), "the host file's frame {k} is not what the guest converted ({sum}):\n{out}");
    }
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

/// A directory under the repository (the guest sees the repository, not the
/// host's /tmp) with fake compiled doc examples: shell scripts named
/// `NAME/rust_out`, as rustdoc's --persist-doctests lays them out.
struct FakeExamples(PathBuf);

impl FakeExamples {
    fn new(tag: &str, examples: &[(&str, &str)]) -> FakeExamples {
        use std::os::unix::fs::PermissionsExt;
        let dir = repo_root().join(format!("target/rig-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, script) in examples {
            let file = dir.join(name).join("rust_out");
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, format!("#!/bin/sh\n{script}\n")).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        FakeExamples(dir)
    }
}

impl Drop for FakeExamples {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A test that hangs in a live guest is the test's failure, not the rig's:
/// tests/guest-runner names it, kills it after its per-test timeout, and the
/// examples after it still run. The guest is not reported as stalled and
/// the run is not retried.
#[test]
fn a_hanging_test_is_named_killed_and_the_others_still_run() {
    let examples = FakeExamples::new(
        "hang",
        &[
            ("a_passes", "echo fine"),
            ("b_hangs", "echo about to hang; sleep 100000"),
            ("c_passes_after_it", "echo fine too"),
        ],
    );
    let runner = repo_root().join("tests/guest-runner");
    let out = rig(&[
        "--no-ivshmem",
        "--timeout",
        "300",
        "--",
        runner.to_str().unwrap(),
        "--timeout",
        "5",
        "--doctests",
        examples.0.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "a test failure, not a rig failure (125):\n{stdout}\n{stderr}");
    assert!(stdout.contains("test a_passes ... ok"), "{stdout}");
    assert!(stdout.contains("test b_hangs ... FAILED (hung: no result within 5 s, killed)"), "{stdout}");
    assert!(stdout.contains("about to hang"), "the hung test's output is shown: {stdout}");
    assert!(stdout.contains("test c_passes_after_it ... ok"), "the tests after it run: {stdout}");
    assert!(stdout.contains("test result: FAILED. 2 passed; 1 failed; 0 ignored"), "{stdout}");
    assert!(!stderr.contains("STALLED") && !stderr.contains("RETRY"), "the guest was alive: {stderr}");
}

/// The pid of the QEMU whose command line contains `marker`.
fn pid_with_marker(marker: &str) -> Option<rustix::process::Pid> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = String::from_utf8_lossy(&std::fs::read(e.path().join("cmdline")).ok()?).into_owned();
        let qemu = cmdline.split('\0').next().is_some_and(|exe| exe.ends_with("qemu-system-x86_64"));
        (qemu && cmdline.contains(marker)).then(|| rustix::process::Pid::from_raw(pid)).flatten()
    })
}

/// Kills the QEMU it names when dropped (should the test fail while QEMU is
/// stopped).
struct KillOnDrop(Option<rustix::process::Pid>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Starts run-in-guest with `args`, the command writing a progress line for
/// `frozen_test` and then `ready` on stdout; returns the child and its
/// stdout reader once `ready` arrived.
fn start_until_ready(
    args: &[&str],
    then: &str,
) -> (std::process::Child, std::io::BufReader<std::process::ChildStdout>) {
    use std::io::BufRead;
    let script = format!("echo 'dmabridge-rig: test frozen_test' >$DMABRIDGE_RIG_PROGRESS; echo ready; {then}");
    let mut all = args.to_vec();
    all.extend(["--", "sh", "-c", &script]);
    let mut child = Command::new(repo_root().join("qemu/run-in-guest"))
        .args(&all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("qemu/run-in-guest runs");
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 && !line.contains("ready") {
        line.clear();
    }
    assert!(line.contains("ready"), "the guest command did not start");
    (child, reader)
}

fn finish(
    child: std::process::Child,
    mut reader: std::io::BufReader<std::process::ChildStdout>,
) -> (Option<i32>, String) {
    use std::io::Read;
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    let out = child.wait_with_output().unwrap();
    (out.status.code(), text(&out.stderr))
}

/// A guest that makes no progress at all (here: QEMU stopped from the host,
/// as a host that starves it would) is noticed within --stall-timeout, not
/// at --timeout: the report names the last test started and why.
#[test]
fn a_frozen_guest_is_reported_as_stalled() {
    let marker = format!("dmabridge.rigtest={}-{}", std::process::id(), rand_suffix());
    let (child, reader) = start_until_ready(
        &["--no-ivshmem", "--stall-timeout", "10", "--retries", "0", "--timeout", "300", "--append", &marker],
        "sleep 100000",
    );
    let qemu = KillOnDrop(pid_with_marker(&marker));
    let pid = qemu.0.expect("QEMU runs with the marker on its command line");
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    let (code, stderr) = finish(child, reader);
    assert_eq!(code, Some(125), "{stderr}");
    assert!(stderr.contains("STALLED: the guest made no progress for 1"), "{stderr}");
    assert!(stderr.contains("no heartbeat (--stall-timeout 10)"), "{stderr}");
    assert!(stderr.contains("last test started: frozen_test"), "{stderr}");
    assert!(stderr.contains("why: QEMU itself is stopped (state T"), "{stderr}");
    assert!(!stderr.contains("did not finish within"), "the watchdog, not --timeout, ended it: {stderr}");
    assert!(pid_with_marker(&marker).is_none(), "run-in-guest stopped QEMU");
}

/// A guest whose CPUs sleep and never run its heartbeat again while QEMU is
/// neither stopped nor starved (here: the guest stops its heartbeat process)
/// is reported as stalled, with where each guest CPU was.
#[test]
fn a_guest_that_stops_making_progress_is_reported_with_its_cpus() {
    let marker = format!("dmabridge.rigtest={}-{}", std::process::id(), rand_suffix());
    let (child, reader) = start_until_ready(
        &["--no-ivshmem", "--stall-timeout", "10", "--retries", "0", "--timeout", "300", "--append", &marker],
        "kill -STOP $DMABRIDGE_RIG_HEARTBEAT_PID; sleep 100000",
    );
    let _qemu = KillOnDrop(pid_with_marker(&marker));
    let (code, stderr) = finish(child, reader);
    assert_eq!(code, Some(125), "{stderr}");
    assert!(stderr.contains("STALLED: the guest made no progress"), "{stderr}");
    assert!(stderr.contains("last test started: frozen_test"), "{stderr}");
    assert!(stderr.contains("why: QEMU was neither starved nor busy"), "{stderr}");
    assert!(stderr.contains("guest CPUs when stopped:"), "{stderr}");
    assert!(stderr.contains("CPU#0: RIP ffffffff") && stderr.contains("CPU#1: RIP"), "{stderr}");
}

/// A guest that fails to boot is started again, and says so; the retry is
/// bounded (--retries) and each attempt is bounded (--boot-timeout). A
/// command that ran and failed is never retried.
#[test]
fn a_failed_boot_is_retried_loudly_and_a_failed_command_never() {
    let out = rig(&["--no-ivshmem", "--boot-timeout", "1", "--retries", "1", "--", "true"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(stderr.matches("run-in-guest: RETRY (attempt 2 of 2)").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("did not reach its set-up within 1 s (--boot-timeout)").count(), 2, "{stderr}");

    let out = rig(&["--no-ivshmem", "--retries", "3", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!text(&out.stderr).contains("RETRY"), "{}", text(&out.stderr));
}

/// What the guest kernel says about its own trouble (an RCU stall here,
/// written as the kernel would) reaches the caller even when the run goes
/// on and passes.
#[test]
fn the_guest_kernels_stall_reports_are_passed_on() {
    let line = "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks: (written by the rig test)";
    let out = rig(&["--no-ivshmem", "--", "sh", "-c", &format!("echo '{line}' >/dev/console; sleep 2")]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("warning: the guest kernel reports (host load average "), "{stderr}");
    assert!(stderr.contains(line), "{stderr}");
}

/// `make demo`'s capture: `dmabridge capture` in a guest with vivid writes
/// its PNGs into a host folder (`--rw`); decoded here, on the host, they are
/// 640x480 images of vivid's colour bars, converted by `yuyv_to_rgba` from
/// frames the driver wrote into dmabridge memory.
#[test]
fn capture_pngs_reach_the_host() {
    use dmabridge::runtime::kernel::yuv_to_rgb;
    let dir = repo_root().join(format!("target/rig-capture-{}", rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let cli = dmabridge_bin();
    let mut args = vec!["--module", "vivid", "--rw", d, "--", cli.to_str().unwrap(), "capture"];
    args.extend(["--frames", "4", "--fps", "30", "--png-count", "2", "--png-dir", d]);
    let out = rig(&args);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success() && all.contains("bytes copied by dmabridge: 0 "), "{all}");
    // The centres of vivid's eight 75% bars on line 240, as (Y, U, V).
    let bars = [
        [179, 128, 128],
        [160, 44, 141],
        [130, 156, 44],
        [111, 72, 58],
        [83, 183, 197],
        [64, 99, 211],
        [34, 211, 114],
        [16, 128, 128],
    ];
    for name in ["frame-000.png", "frame-003.png"] {
        let file = std::io::BufReader::new(std::fs::File::open(dir.join(name)).unwrap());
        let mut reader = png::Decoder::new(file).read_info().unwrap();
        let mut rgba = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgba).unwrap();
        assert_eq!((info.width, info.height, info.color_type), (640, 480, png::ColorType::Rgba), "{name}");
        for (i, [y, u, v]) in bars.into_iter().enumerate() {
            let o = (240 * 640 + 80 * i + 40) * 4;
            let [r, g, b] = yuv_to_rgb(y, u, v);
            assert_eq!(rgba[o..o + 4], [r, g, b, 255], "{name}: bar {i}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
