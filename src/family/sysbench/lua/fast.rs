//! The natives a script calls on every event — the event loop's (more events? start, stop) and
//! `sysbench.rand`'s draws — as plain C functions that the API's Lua reaches through LuaJIT's
//! FFI, as sysbench's own are (`ffi.C.sb_rand_uniform` and the like). An mlua function costs
//! some 45 ns a call and ends the JIT's trace there, so an event loop calling six of them ran
//! interpreted; an FFI call costs 3 ns and keeps the loop compiled.
//!
//! A C function has no interpreter to ask for its context, so what they need lives in a
//! thread-local (`Draws`): the thread's random numbers — one generator per thread, as
//! sysbench's (its state is C thread-local storage, shared by the thread's interpreters) — and
//! the event under way. The pointers go to Lua as light userdata; nothing here is unsafe.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

use super::context::{RandSettings, Shared};
use crate::family::sysbench::oltp_options::RandKind;
use stampede_lua::mlua::{self, LightUserData, Lua, Table};
use stampede_script::extensions::sysbench_random as random;
use stampede_script::prng::PgPrng;

/// A thread's random numbers and event under way.
struct Draws {
    rng: PgPrng,
    rand: RandSettings,
    shared: Arc<Shared>,
    /// The worker's number; None on the main thread, which runs no events.
    tid: Option<usize>,
    event_started: Option<Instant>,
}

thread_local! {
    static DRAWS: RefCell<Option<Draws>> = const { RefCell::new(None) };
}

/// Seeds the calling thread's random numbers for worker `tid` (None: the main thread); called
/// as each interpreter is made.
pub(super) fn start_thread(shared: &Arc<Shared>, tid: Option<usize>) {
    let seed = shared.seed ^ (tid.unwrap_or(usize::MAX) as u64).wrapping_mul(0x9E37_79B9);
    DRAWS.with(|draws| {
        *draws.borrow_mut() = Some(Draws {
            rng: PgPrng::seeded(seed),
            rand: shared.rand_options(),
            shared: shared.clone(),
            tid,
            event_started: None,
        })
    });
}

/// The thread's generator, for the natives that stay mlua functions (strings, bit pairs).
pub(super) fn with_rng<T>(draw: impl FnOnce(&mut PgPrng) -> T) -> T {
    with_draws(|draws| draw(&mut draws.rng))
}

fn with_draws<T>(use_them: impl FnOnce(&mut Draws) -> T) -> T {
    DRAWS.with(|draws| {
        use_them(
            draws
                .borrow_mut()
                .as_mut()
                .expect("an interpreter on this thread"),
        )
    })
}

/// The C functions, by the names the API's Lua casts them under.
pub(super) fn add_functions(lua: &Lua, native: &Table) -> mlua::Result<()> {
    let fast = lua.create_table()?;
    let pointers: [(&str, *const ()); 9] = [
        ("more_events", more_events as *const ()),
        ("event_start", event_start as *const ()),
        ("event_stop", event_stop as *const ()),
        ("rand_default", rand_default as *const ()),
        ("rand_uniform", rand_uniform as *const ()),
        ("rand_gaussian", rand_gaussian as *const ()),
        ("rand_special", rand_special as *const ()),
        ("rand_pareto", rand_pareto as *const ()),
        ("rand_zipfian", rand_zipfian as *const ()),
    ];
    for (name, pointer) in pointers {
        fast.set(name, LightUserData(pointer as *mut c_void))?;
    }
    fast.set(
        "rand_uniform_double",
        LightUserData(rand_uniform_double as *const () as *mut c_void),
    )?;
    native.set("fast", fast)
}

/// Whether the worker takes another event (its start noted: its arrival under `--rate`).
extern "C" fn more_events() -> bool {
    with_draws(|draws| {
        let Some(run) = draws.shared.run.get() else {
            return false;
        };
        draws.event_started = run.next_event();
        draws.event_started.is_some()
    })
}

/// A script's own event loop may start events without `more_events`.
extern "C" fn event_start() {
    with_draws(|draws| {
        draws.event_started.get_or_insert_with(Instant::now);
    })
}

extern "C" fn event_stop() {
    with_draws(|draws| {
        let (Some(started), Some(run), Some(tid)) = (
            draws.event_started.take(),
            draws.shared.run.get(),
            draws.tid,
        ) else {
            return;
        };
        run.stats.event(tid, started.elapsed().as_nanos() as u64);
    })
}

/// The largest magnitude a bound keeps: a Lua number is exact up to it, and the span of two
/// such bounds cannot overflow.
const BOUND: i64 = 1 << 53;

/// A draw between `a` and `b` (as sysbench, `a` when `b` is below it); Lua's numbers are
/// doubles, truncated to integers as sysbench's C functions take them.
fn draw(a: f64, b: f64, how: fn(&mut PgPrng, RandSettings, i64, i64) -> i64) -> f64 {
    let (a, b) = (
        (a as i64).clamp(-BOUND, BOUND),
        (b as i64).clamp(-BOUND, BOUND),
    );
    if b < a {
        return a as f64;
    }
    with_draws(|draws| how(&mut draws.rng, draws.rand, a, b) as f64)
}

extern "C" fn rand_default(a: f64, b: f64) -> f64 {
    draw(a, b, |rng, s, a, b| match s.kind {
        RandKind::Uniform => random::uniform(rng, a, b),
        RandKind::Gaussian => random::gaussian(rng, a, b, s.spec_iter),
        RandKind::Special => random::special(rng, a, b, s.spec_iter, s.spec_pct, s.spec_res),
        RandKind::Pareto => random::pareto(rng, a, b, s.pareto_h),
        RandKind::Zipfian => random::zipfian(rng, a, b, s.zipfian_exp),
    })
}

extern "C" fn rand_uniform(a: f64, b: f64) -> f64 {
    draw(a, b, |rng, _, a, b| random::uniform(rng, a, b))
}

extern "C" fn rand_gaussian(a: f64, b: f64) -> f64 {
    draw(a, b, |rng, s, a, b| {
        random::gaussian(rng, a, b, s.spec_iter)
    })
}

extern "C" fn rand_special(a: f64, b: f64) -> f64 {
    draw(a, b, |rng, s, a, b| {
        random::special(rng, a, b, s.spec_iter, s.spec_pct, s.spec_res)
    })
}

extern "C" fn rand_pareto(a: f64, b: f64) -> f64 {
    draw(a, b, |rng, s, a, b| random::pareto(rng, a, b, s.pareto_h))
}

extern "C" fn rand_zipfian(a: f64, b: f64) -> f64 {
    draw(a, b, |rng, s, a, b| {
        random::zipfian(rng, a, b, s.zipfian_exp)
    })
}

extern "C" fn rand_uniform_double() -> f64 {
    with_rng(PgPrng::next_f64)
}
