//! Waiting until a statement's time to the microsecond. tokio's timers tick in whole
//! milliseconds, which alone would put up to a millisecond of schedule lag on every statement;
//! a timerfd fires when asked and wakes the session through the runtime's own epoll.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Instant;

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// One session's alarm clock.
pub struct Alarm {
    timer: AsyncFd<Timer>,
}

impl Alarm {
    pub fn new() -> std::io::Result<Alarm> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // `new` is deprecated because an arbitrary `AsRawFd` may hand out another fd later;
        // `Timer` owns its timerfd for life and never hands it out, so the registration
        // stays valid. (The non-deprecated form is `unsafe`, which the crate denies.)
        #[allow(deprecated)]
        let timer = AsyncFd::new(Timer(timer))?;
        Ok(Alarm { timer })
    }

    /// Returns at `deadline` (at once when it has passed).
    pub async fn until(&self, deadline: Instant) -> std::io::Result<()> {
        let Some(wait) = deadline.checked_duration_since(Instant::now()) else {
            return Ok(());
        };
        if wait.is_zero() {
            return Ok(());
        }
        self.timer
            .get_ref()
            .0
            .set(
                Expiration::OneShot(TimeSpec::from_duration(wait)),
                TimerSetTimeFlags::empty(),
            )
            .map_err(std::io::Error::from)?;
        loop {
            let mut ready = self.timer.readable().await?;
            let fired = ready.try_io(|timer| {
                timer.get_ref().0.wait().map_err(|errno| {
                    if errno == nix::errno::Errno::EAGAIN {
                        std::io::ErrorKind::WouldBlock.into()
                    } else {
                        std::io::Error::from(errno)
                    }
                })
            });
            match fired {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_alarm_returns_at_its_deadline_not_before() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let alarm = Alarm::new().unwrap();
            for micros in [0, 300, 2_500] {
                let deadline = Instant::now() + Duration::from_micros(micros);
                alarm.until(deadline).await.unwrap();
                assert!(Instant::now() >= deadline);
            }
            alarm
                .until(Instant::now() - Duration::from_secs(1))
                .await
                .unwrap();
        });
    }
}
