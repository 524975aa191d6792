//! Times on the wire (SPEC §3): RFC 3339 with a mandatory offset, microsecond resolution,
//! UTC years 2000..=2300. Internally a time is microseconds since the Unix epoch.

/// Why a time string was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeError {
    /// A well-formed date and time without an offset.
    Naive,
    /// Valid, but its UTC year is outside 2000..=2300.
    OutOfRange,
    /// Anything else.
    Malformed,
}

const MICROS_PER_SECOND: i64 = 1_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Reads exactly `N` ASCII digits from the front of `bytes`.
fn digits<const N: usize>(bytes: &[u8]) -> Option<(i64, &[u8])> {
    let (head, rest) = bytes.split_at_checked(N)?;
    let mut value = 0_i64;
    for &b in head {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(b - b'0');
    }
    Some((value, rest))
}

fn expect(bytes: &[u8], byte: u8) -> Option<&[u8]> {
    match bytes.split_first() {
        Some((&first, rest)) if first == byte => Some(rest),
        _ => None,
    }
}

/// Parses a wire time into microseconds since the epoch, UTC.
pub(crate) fn parse(text: &str) -> Result<i64, TimeError> {
    let bytes = text.as_bytes();
    let malformed = TimeError::Malformed;
    let (year, rest) = digits::<4>(bytes).ok_or(malformed)?;
    let rest = expect(rest, b'-').ok_or(malformed)?;
    let (month, rest) = digits::<2>(rest).ok_or(malformed)?;
    let rest = expect(rest, b'-').ok_or(malformed)?;
    let (day, rest) = digits::<2>(rest).ok_or(malformed)?;
    let rest = expect(rest, b'T').ok_or(malformed)?;
    let (hour, rest) = digits::<2>(rest).ok_or(malformed)?;
    let rest = expect(rest, b':').ok_or(malformed)?;
    let (minute, rest) = digits::<2>(rest).ok_or(malformed)?;
    let rest = expect(rest, b':').ok_or(malformed)?;
    let (second, mut rest) = digits::<2>(rest).ok_or(malformed)?;

    let mut micros = 0_i64;
    if let Some(after_dot) = expect(rest, b'.') {
        let count = after_dot.iter().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=6).contains(&count) {
            return Err(malformed);
        }
        let (fraction, tail) = after_dot.split_at_checked(count).ok_or(malformed)?;
        for &b in fraction {
            micros = micros * 10 + i64::from(b - b'0');
        }
        for _ in count..6 {
            micros *= 10;
        }
        rest = tail;
    }

    let offset_seconds = match rest.split_first() {
        None => {
            // A complete date and time with no offset: only the offset is wrong.
            return if month_day_time_valid(year, month, day, hour, minute, second) {
                Err(TimeError::Naive)
            } else {
                Err(malformed)
            };
        }
        Some((b'Z', [])) => 0,
        Some((&sign @ (b'+' | b'-'), tail)) => {
            let (oh, tail) = digits::<2>(tail).ok_or(malformed)?;
            let tail = expect(tail, b':').ok_or(malformed)?;
            let (om, tail) = digits::<2>(tail).ok_or(malformed)?;
            if !tail.is_empty() || oh > 23 || om > 59 {
                return Err(malformed);
            }
            let magnitude = oh * 3600 + om * 60;
            if sign == b'+' { magnitude } else { -magnitude }
        }
        Some(_) => return Err(malformed),
    };

    if !month_day_time_valid(year, month, day, hour, minute, second) {
        return Err(malformed);
    }
    let local_seconds = days_from_civil(year, month, day) * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second;
    let utc_seconds = local_seconds - offset_seconds;
    let (utc_year, _, _) = civil_from_days(utc_seconds.div_euclid(SECONDS_PER_DAY));
    if !(2000..=2300).contains(&utc_year) {
        return Err(TimeError::OutOfRange);
    }
    Ok(utc_seconds * MICROS_PER_SECOND + micros)
}

fn month_day_time_valid(year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) -> bool {
    year >= 1
        && (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && hour <= 23
        && minute <= 59
        && second <= 59
}

/// Formats microseconds since the epoch as `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00` (SPEC §8).
pub(crate) fn format_utc(micros: i64) -> String {
    let seconds = micros.div_euclid(MICROS_PER_SECOND);
    let fraction = micros.rem_euclid(MICROS_PER_SECOND);
    let days = seconds.div_euclid(SECONDS_PER_DAY);
    let in_day = seconds.rem_euclid(SECONDS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (in_day / 3600, in_day % 3600 / 60, in_day % 60);
    if fraction == 0 {
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}+00:00")
    } else {
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{fraction:06}+00:00")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_converts_offsets() {
        let t = parse("2026-08-19T14:30:00.5+02:30");
        assert_eq!(t.map(format_utc), Ok("2026-08-19T12:00:00.500000+00:00".to_owned()));
        assert_eq!(parse("2026-08-19T12:00:00-00:00").map(format_utc), Ok("2026-08-19T12:00:00+00:00".to_owned()));
        assert_eq!(parse("2024-02-29T00:00:00Z").map(format_utc), Ok("2024-02-29T00:00:00+00:00".to_owned()));
    }

    #[test]
    fn refuses_what_the_spec_refuses() {
        assert_eq!(parse("2026-08-19T12:00:00"), Err(TimeError::Naive));
        assert_eq!(parse("2000-01-01T00:30:00+01:00"), Err(TimeError::OutOfRange));
        assert_eq!(parse("2300-12-31T23:30:00-01:00"), Err(TimeError::OutOfRange));
        assert!(parse("2300-12-31T23:30:00+00:00").is_ok());
        for bad in [
            "2023-02-29T00:00:00Z",
            "2026-08-19t12:00:00Z",
            "2026-08-19T12:00:00z",
            "2026-08-19T24:00:00Z",
            "2026-08-19T12:00:60Z",
            "2026-08-19T12:00:00.1234567Z",
            "2026-08-19T12:00:00.Z",
            "2026-08-19T12:00:00+24:00",
            "2026-08-19T12:00:00+0100",
            "2026-08-19 12:00:00Z",
            "",
            "2026-08-19T12:00:00Z ",
        ] {
            assert_eq!(parse(bad), Err(TimeError::Malformed), "{bad}");
        }
    }
}
