//! Several clients on one thread, served the way pgbench serves them: their sockets stay out of
//! the runtime's reactor, a client whose reply has not come registers its socket here, and when
//! no client can run the thread waits in one poll(2) over the registered sockets, then wakes
//! those that have input, in registration order.
//!
//! Why not the reactor: a socket registered with epoll keeps epoll's callback on its wait
//! queue, so every reply that arrives runs it, even while the thread is busy with another
//! client; and the thread sleeps in epoll_wait whenever the tasks it has run leave none ready.
//! poll(2) registers the sockets only while the thread waits in it, and a thread that finds
//! input on any socket does not sleep at all. Measured in bench/results/pgbench.md ("several clients
//! per thread").
//!
//! The wait runs in the runtime's park hook (`before_park`): tokio calls it when no task can
//! run, and a task woken there is run at once (the runtime then checks its own driver without
//! blocking). The hook waits in poll(2) only while every client of the thread waits here; a
//! client waiting on anything else (a `\sleep`, a reconnection) leaves the reactor in charge,
//! and the hook then only looks (`MIXED_WAIT`), so the reactor's timers and sockets and these
//! sockets each answer within a millisecond.
//!
//! A client whose reply is already there when it reads goes on without waiting; the driver
//! keeps one from running far ahead of the others with `yield_turn` (driver/thread.rs,
//! `AHEAD_MARGIN`).

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

/// The longest wait in poll(2). The thread's interval ticker and the watchdog's abandon come
/// from other threads through the reactor; this bounds how late they are heard (as
/// `SOLO_WAKE` does for a thread's only client).
const LONGEST_WAIT: Duration = Duration::from_millis(50);

/// The wait while some client waits on the reactor: tokio's timer has 1 ms granularity, so a
/// wait this long delays neither side.
const MIXED_WAIT: Duration = Duration::from_millis(1);

/// A sweep socket's descriptor, shared with this registry while its client waits.
pub(crate) type SweepFd = Arc<dyn AsFd>;

thread_local! {
    /// Sockets whose client waits for input, in the order the clients began to wait.
    static WAITING: RefCell<Vec<(SweepFd, Waker)>> = const { RefCell::new(Vec::new()) };
    /// The thread's clients that have not ended: when every one waits here, the thread may
    /// sleep in poll(2).
    static CLIENTS: Cell<usize> = const { Cell::new(0) };
    /// Clients that gave up their turn (`yield_turn`), woken after those with input.
    static YIELDED: RefCell<Vec<Waker>> = const { RefCell::new(Vec::new()) };
}

/// Lets the thread's other clients whose replies have come go first: the client runs again
/// once the thread has looked at its sockets (without waiting) and run those with input.
pub async fn yield_turn() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            return std::task::Poll::Ready(());
        }
        YIELDED.with(|waiting| waiting.borrow_mut().push(cx.waker().clone()));
        std::task::Poll::Pending
    })
    .await
}

/// Sets how many clients this thread serves from sweep sockets; the driver lowers it as each
/// one ends.
pub fn set_clients(count: usize) {
    CLIENTS.with(|clients| clients.set(count));
}

/// From now on the thread's other work comes first (the watchdog's cancel requests, on the
/// reactor, while the clients' tasks are no longer run): waits are brief.
pub fn leave_to_reactor() {
    CLIENTS.with(|clients| clients.set(usize::MAX));
}

/// Registers `fd`'s client to be woken when the socket has input.
pub(crate) fn wait_for_input(fd: &SweepFd, waker: &Waker) {
    WAITING.with(|waiting| {
        let mut waiting = waiting.borrow_mut();
        match waiting
            .iter_mut()
            .find(|(registered, _)| Arc::ptr_eq(registered, fd))
        {
            Some((_, registered)) => registered.clone_from(waker),
            None => waiting.push((fd.clone(), waker.clone())),
        }
    });
}

/// Forgets `fd` (its connection is closing).
pub(crate) fn forget(fd: &SweepFd) {
    // A thread that is ending may have dropped its registry already.
    let _ = WAITING.try_with(|waiting| {
        if let Ok(mut waiting) = waiting.try_borrow_mut() {
            waiting.retain(|(registered, _)| !Arc::ptr_eq(registered, fd));
        }
    });
}

/// The runtime's park hook: wakes the clients whose sockets have input, waiting for some when
/// every client waits here. Does nothing on a thread without sweep sockets.
pub fn before_park() {
    let yielded = YIELDED.with(|yielded| std::mem::take(&mut *yielded.borrow_mut()));
    WAITING.with(|waiting| {
        let mut waiting = waiting.borrow_mut();
        if waiting.is_empty() {
            return;
        }
        let everyone_waits = waiting.len() >= CLIENTS.with(Cell::get);
        let timeout = if !yielded.is_empty() {
            Duration::ZERO
        } else if everyone_waits {
            LONGEST_WAIT
        } else {
            MIXED_WAIT
        };
        match poll_inputs(&waiting, timeout) {
            Ok(ready) if ready.iter().any(|&has_input| has_input) => {
                let mut ready = ready.into_iter();
                waiting.retain(|(_, waker)| {
                    let has_input = ready.next().unwrap_or(false);
                    if has_input {
                        waker.wake_by_ref();
                    }
                    !has_input
                });
            }
            // Nothing came: wake every waiting client to look again (their reads fail with
            // EAGAIN and register again), so that the runtime checks its own driver: the
            // interval ticker and the watchdog still run while replies are slow, and a client
            // waiting on a timer is not held up.
            Ok(_) | Err(_) if yielded.is_empty() => {
                waiting.drain(..).for_each(|(_, waker)| waker.wake())
            }
            Ok(_) | Err(_) => {}
        }
    });
    yielded.into_iter().for_each(Waker::wake);
}

/// poll(2) for input on each socket; per socket, whether it has input (or an error or hang-up,
/// which its read reports).
fn poll_inputs(waiting: &[(SweepFd, Waker)], timeout: Duration) -> io::Result<Vec<bool>> {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    let fds: Vec<BorrowedFd<'_>> = waiting.iter().map(|(fd, _)| fd.as_fd()).collect();
    let mut wanted: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    let timeout = PollTimeout::try_from(timeout).expect("a few ms fit");
    nix::poll::poll(&mut wanted, timeout).map_err(io::Error::from)?;
    Ok(wanted
        .iter()
        .map(|fd| fd.revents().is_some_and(|events| !events.is_empty()))
        .collect())
}
