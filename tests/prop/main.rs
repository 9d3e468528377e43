//! Property-based tests of the USM, SVM and buffer commands on the CPU
//! device, against reference models written from the specification texts
//! (cl_intel_unified_shared_memory, clSVMAlloc and the OpenCL buffer
//! commands), not from the implementation.
//!
//! Each model keeps every live allocation (and buffer) as a `Vec<u8>`,
//! applies the operation to it, and predicts the outcome: the CL errors the
//! specification allows for those arguments, or success. After every
//! operation the real memory is compared byte for byte with the model, for
//! every live allocation and the test's own host memory: a change outside
//! the target range, or any change by a failed call, is caught. Panics are
//! failures too (overflow checks are on in the debug builds the tests run
//! in).
//!
//! Where the specification leaves an outcome open (a size of 0, a pointer
//! of another kind), the model accepts each outcome the text allows, and
//! checks the contents for whichever one the implementation chose.
//!
//! Case counts: [`config`] gives each property a few hundred cases, so the
//! suite stays fast in `cargo test` (seconds); `PROPTEST_CASES` overrides
//! every count (`make fuzz` runs many more). Failing inputs are saved next
//! to the property's source (`tests/prop/usm.regressions`,
//! `tests/prop/buffer.regressions`) and replayed first on every run; those
//! files are committed, so a failure found once stays a test.

mod buffer;
mod usm;

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use dmabridge::error::{ClError, ClErrorKind};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

/// The configuration of a property: `default_cases` cases unless
/// `PROPTEST_CASES` says otherwise; failures persisted next to the sources.
pub fn config(default_cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default_cases);
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        // Shrinking a sequence re-runs it: keep a failing run's report quick.
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

/// How often each kind of call succeeded, failed, or was not made (its
/// arguments broke the caller's side of an `unsafe` contract): printed
/// after every case with `PROP_STATS=1` (run one property with
/// `--nocapture`; the last table is the total), to see what the
/// generators reach.
static TALLY: Mutex<BTreeMap<String, [u64; 3]>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// The kind of call being made (the first [`Expect::check`] counts it).
    static CURRENT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn tally(outcome: usize) {
    if let Some(kind) = CURRENT.with(|c| c.borrow_mut().take()) {
        TALLY.lock().unwrap().entry(kind).or_default()[outcome] += 1;
    }
}

/// Runs one operation of a model, counting its outcome under the name of
/// its variant (with `PROP_STATS=1`).
pub fn counted<T: std::fmt::Debug>(op: &T, f: impl FnOnce() -> Result<(), TestCaseError>) -> Result<(), TestCaseError> {
    if std::env::var_os("PROP_STATS").is_some() {
        let name = format!("{op:?}");
        let name = name.split([' ', '{', '(']).next().unwrap_or_default().to_owned();
        CURRENT.with(|c| *c.borrow_mut() = Some(name));
    }
    let r = f();
    tally(2);
    r
}

/// Prints the tally (with `PROP_STATS=1`).
pub fn print_tally(property: &str) {
    if std::env::var_os("PROP_STATS").is_some() {
        let t = TALLY.lock().unwrap();
        println!("{property}: calls that succeeded / failed / were not made");
        for (k, [ok, err, skip]) in t.iter() {
            println!("  {k:<24} {ok:>7} {err:>7} {skip:>7}");
        }
    }
}

/// What the specification allows as the outcome of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expect {
    /// The CL errors the call may fail with (any one of them: OpenCL does
    /// not order its error checks).
    pub errors: Vec<ClErrorKind>,
    /// Whether the call may succeed.
    pub ok: bool,
}

impl Expect {
    /// Must succeed.
    pub fn ok() -> Expect {
        Expect { errors: vec![], ok: true }
    }

    /// Nothing said yet: the call must succeed unless an error is added.
    pub fn new() -> Expect {
        Expect::ok()
    }

    /// The call must fail, and `kind` is one of the errors it may report.
    pub fn fail(&mut self, kind: ClErrorKind) {
        self.ok = false;
        if !self.errors.contains(&kind) {
            self.errors.push(kind);
        }
    }

    /// The specification leaves this case open: failing with `kind` is
    /// allowed too (success stays allowed unless an error is certain).
    pub fn may_fail(&mut self, kind: ClErrorKind) {
        if !self.errors.contains(&kind) {
            self.errors.push(kind);
        }
    }

    /// The call must fail.
    pub fn must_fail(&self) -> bool {
        !self.ok
    }

    /// Checks a result against the expectation; `Ok(true)` if it succeeded.
    pub fn check<T>(&self, what: &str, r: &Result<T, ClError>) -> Result<bool, TestCaseError> {
        if let (Err(e), true) = (r, std::env::var_os("PROP_STATS").is_some()) {
            CURRENT.with(|c| {
                if let Some(k) = c.borrow_mut().as_mut() {
                    k.push_str(&format!(" {}", e.kind.name()));
                }
            });
        }
        tally(if r.is_ok() { 0 } else { 1 });
        match r {
            Ok(_) if self.ok => Ok(true),
            Ok(_) => {
                Err(TestCaseError::fail(format!("{what}: succeeded, but it must fail with one of {:?}", self.errors)))
            }
            Err(e) if self.errors.contains(&e.kind) => Ok(false),
            Err(e) => Err(TestCaseError::fail(format!(
                "{what}: failed with {} ({}), but the specification allows {}{:?}",
                e.kind.name(),
                e.message,
                if self.ok { "success or " } else { "" },
                self.errors
            ))),
        }
    }
}

/// A number chosen relative to a bound the interpreter knows (an
/// allocation's size, a buffer's size): mostly inside, often at the edge,
/// sometimes far outside or near `usize::MAX`. Shrinks towards small
/// in-range values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Num {
    /// `x % (bound + 1)`: from 0 to the bound.
    In(u16),
    /// `bound - x` (saturating).
    Below(u8),
    /// `bound + x`.
    Above(u8),
    /// `2^x`.
    Pow2(u8),
    /// `usize::MAX - x`.
    NearMax(u8),
}

impl Num {
    /// The value against `bound`.
    pub fn at(self, bound: usize) -> usize {
        match self {
            Num::In(x) => x as usize % bound.saturating_add(1).max(1),
            Num::Below(x) => bound.saturating_sub(x as usize),
            Num::Above(x) => bound.saturating_add(x as usize),
            Num::Pow2(x) => 1usize << (x % 64),
            Num::NearMax(x) => usize::MAX - x as usize,
        }
    }
}

/// Numbers for offsets and sizes: in range most of the time.
pub fn num() -> BoxedStrategy<Num> {
    prop_oneof![
        30 => any::<u16>().prop_map(Num::In),
        3 => (0u8..8).prop_map(Num::Below),
        2 => (0u8..8).prop_map(Num::Above),
        1 => (0u8..64).prop_map(Num::Pow2),
        1 => (0u8..16).prop_map(Num::NearMax),
    ]
    .boxed()
}

/// Bytes that differ from one call to the next, so that a copy or fill
/// that lands in the wrong place shows.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The first index where `got` and `want` differ, for the failure report.
pub fn diff(what: &str, got: &[u8], want: &[u8]) -> Result<(), TestCaseError> {
    if got.len() != want.len() {
        return Err(TestCaseError::fail(format!("{what}: {} bytes, the model has {}", got.len(), want.len())));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => {
            let end = (i + 16).min(got.len());
            Err(TestCaseError::fail(format!(
                "{what}: byte {i} is {:#04x}, the model says {:#04x} (bytes {i}..{end}: {:02x?} vs {:02x?})",
                got[i],
                want[i],
                &got[i..end],
                &want[i..end]
            )))
        }
    }
}

/// The wait list of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    None,
    /// A user event of the context, already complete.
    Complete,
    /// A user event of the context that failed.
    Failed,
    /// A user event of another context.
    Foreign,
}

pub fn gate() -> BoxedStrategy<Gate> {
    prop_oneof![20 => Just(Gate::None), 1 => Just(Gate::Complete), 1 => Just(Gate::Failed), 1 => Just(Gate::Foreign)]
        .boxed()
}

/// Page-aligned host memory the test owns: the "shared system allocation"
/// that pointers outside every USM/SVM allocation may name.
pub struct Arena {
    ptr: *mut u8,
    layout: Layout,
}

impl Arena {
    /// `len` zeroed bytes.
    pub fn new(len: usize) -> Arena {
        let layout = Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Arena { ptr, layout }
    }

    /// The first byte's address.
    pub fn base(&self) -> usize {
        self.ptr as usize
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; its owner waits for
        // every command that may use it before dropping it.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Another context, for wait-list events that are not of the queue's.
pub fn other_context() -> &'static Arc<Context> {
    static OTHER: OnceLock<Arc<Context>> = OnceLock::new();
    OTHER.get_or_init(dmabridge_tests::cpu_context)
}

impl Gate {
    /// The wait list, made in `ctx`.
    pub fn wait_list(self, ctx: &Arc<Context>) -> Vec<Event> {
        match self {
            Gate::None => vec![],
            Gate::Complete => {
                let e = Event::user(ctx);
                e.set_user_status(0).unwrap();
                vec![e]
            }
            Gate::Failed => {
                let e = Event::user(ctx);
                e.set_user_status(-5).unwrap();
                vec![e]
            }
            Gate::Foreign => vec![Event::user(other_context())],
        }
    }

    /// The expectation every enqueue starts from: a wait-list event of
    /// another context is `CL_INVALID_CONTEXT`; a blocking call after a
    /// failed event is `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
    pub fn expect(self, blocking: bool) -> Expect {
        let mut e = Expect::new();
        if self == Gate::Foreign {
            e.fail(ClErrorKind::InvalidContext);
        }
        if blocking && self == Gate::Failed {
            e.fail(ClErrorKind::ExecStatusErrorForEventsInWaitList);
        }
        e
    }

    /// Waits for a command enqueued after this gate and says whether it
    /// ran: after a failed event it must not, and its event reports that.
    /// `lazy`: unless the gate failed, returns at once (the command runs
    /// later, in queue order; the model applies it now).
    pub fn finish(self, what: &str, ev: &Event, lazy: bool) -> Result<bool, TestCaseError> {
        if lazy && self != Gate::Failed {
            return Ok(true);
        }
        let r = Event::wait(std::slice::from_ref(ev));
        match (self, r) {
            (Gate::Failed, Err(e)) if e.kind == ClErrorKind::ExecStatusErrorForEventsInWaitList => Ok(false),
            (Gate::Failed, r) => Err(TestCaseError::fail(format!("{what} after a failed event: waiting gave {r:?}"))),
            (_, Ok(())) => Ok(true),
            (_, Err(e)) => Err(TestCaseError::fail(format!("{what}: the command failed when it ran: {e}"))),
        }
    }
}

#[test]
fn num_maps_into_its_bound() {
    assert_eq!(Num::In(7).at(3), 3);
    assert_eq!(Num::In(7).at(0), 0);
    assert_eq!(Num::Below(9).at(4), 0);
    assert_eq!(Num::Above(2).at(usize::MAX), usize::MAX);
    assert_eq!(Num::NearMax(1).at(0), usize::MAX - 1);
    let mut e = Expect::new();
    assert!(e.check("x", &Ok::<(), ClError>(())).unwrap());
    e.fail(ClErrorKind::InvalidValue);
    assert!(e.check("x", &Ok::<(), ClError>(())).is_err(), "a success where an error is certain fails");
    let wrong = Err::<(), _>(ClError::new(ClErrorKind::InvalidContext, "x"));
    assert!(e.check("x", &wrong).is_err(), "another error fails");
}
