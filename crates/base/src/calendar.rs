//! Unix seconds as a UTC calendar time (Howard Hinnant's days-to-civil algorithm): what a
//! report's dates and a workload's row stamps need, without a calendar crate.

/// A UTC calendar time to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl UtcTime {
    /// The time `unix_seconds` after 1970-01-01 00:00:00 UTC (before it for a negative count).
    pub fn from_unix(unix_seconds: i64) -> UtcTime {
        let (days, of_day) = (
            unix_seconds.div_euclid(86_400),
            unix_seconds.rem_euclid(86_400),
        );
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let day_of_era = z - era * 146_097;
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let month_index = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * month_index + 2) / 5 + 1;
        let month = if month_index < 10 {
            month_index + 3
        } else {
            month_index - 9
        };
        UtcTime {
            year: year_of_era + era * 400 + i64::from(month <= 2),
            month: month as u32,
            day: day as u32,
            hour: (of_day / 3600) as u32,
            minute: (of_day % 3600 / 60) as u32,
            second: (of_day % 60) as u32,
        }
    }

    /// "YYYY-MM-DD HH:MM".
    pub fn minute_text(&self) -> String {
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute
        )
    }

    /// "YYYY-MM-DD HH:MM:SS", as SQL's timestamp literals take it.
    pub fn second_text(&self) -> String {
        format!("{}:{:02}", self.minute_text(), self.second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_are_utc_calendar_times() {
        assert_eq!(UtcTime::from_unix(0).second_text(), "1970-01-01 00:00:00");
        assert_eq!(
            UtcTime::from_unix(951_782_400).minute_text(),
            "2000-02-29 00:00"
        );
        assert_eq!(
            UtcTime::from_unix(1_795_710_365).minute_text(),
            "2026-11-26 16:26"
        );
        assert_eq!(
            UtcTime::from_unix(1_795_919_600).second_text(),
            "2026-11-29 02:33:20"
        );
        assert_eq!(UtcTime::from_unix(-1).second_text(), "1969-12-31 23:59:59");
    }
}
