//! `%m`'s timestamps, "2026-12-02 02:14:29.716 UTC", as milliseconds. The zone is whatever
//! `log_timezone` names and the same on every line of one log, so it is left aside: a capture
//! needs offsets between its messages, not their absolute time.

/// Milliseconds since 1970-01-01 of the date and time at the start of `text`, or None when
/// it is not `YYYY-MM-DD HH:MM:SS[.fff]`.
pub fn parse_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 19 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b' ' {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let mut millis = 0;
    if bytes.get(19) == Some(&b'.') {
        let digits: String = text[20..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        // Milliseconds as %m writes them; microseconds, if a format ever gave them, rounded
        // down to the same unit.
        let padded = format!("{digits:0<3}");
        millis = padded[..3].parse().ok()?;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_timestamp_is_its_milliseconds_since_1970_whatever_the_zone() {
        assert_eq!(parse_ms("1970-01-01 00:00:00.000 UTC"), Some(0));
        assert_eq!(parse_ms("1970-01-02 00:00:01.5 CET"), Some(86_401_500));
        // 2026-12-02 02:14:29.716 UTC is 1 796 177 669.716 s after the epoch.
        assert_eq!(
            parse_ms("2026-12-02 02:14:29.716 UTC"),
            Some(1_796_177_669_716)
        );
        assert_eq!(parse_ms("2024-02-29 12:00:00"), Some(1_709_208_000_000));
    }

    #[test]
    fn anything_else_is_not_a_timestamp() {
        assert_eq!(parse_ms("2026-12-02T02:14:29"), None);
        assert_eq!(parse_ms("[unknown]"), None);
        assert_eq!(parse_ms("2026-13-02 02:14:29.716"), None);
        assert_eq!(parse_ms("2026-12-02 02:14"), None);
    }
}
