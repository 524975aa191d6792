//! Times on the wire (SPEC §3): RFC 3339 with a mandatory offset, microsecond resolution,
//! UTC years 2000..=2300. Internally a time is microseconds since the Unix epoch.

use crate::canonical::push_decimal;

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

// Dates are computed in `i32`: every day count an `i64` of microseconds can hold fits (about
// ±1.07e8 days), and so does every intermediate below. On wasm32 a checked `i64` multiply is a
// call to `__multi3` (a 128-bit multiply in software), so the hot path keeps `i64` products out.

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`), for
/// years 0..=9999.
fn days_from_civil(year: i32, month: i32, day: i32) -> i32 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (Hinnant's `civil_from_days`).
fn civil_from_days(days: i32) -> (i32, i32, i32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i32::from(month <= 2);
    (year, month, day)
}

fn is_leap(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i32, month: i32) -> i32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Reads exactly `N` (at most 4) ASCII digits from the front of `bytes`.
fn digits<const N: usize>(bytes: &[u8]) -> Option<(i32, &[u8])> {
    let (head, rest) = bytes.split_at_checked(N)?;
    let mut value = 0_i32;
    for &b in head {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i32::from(b - b'0');
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

    let mut micros = 0_i32;
    if let Some(after_dot) = expect(rest, b'.') {
        let count = after_dot.iter().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=6).contains(&count) {
            return Err(malformed);
        }
        let (fraction, tail) = after_dot.split_at_checked(count).ok_or(malformed)?;
        for &b in fraction {
            micros = micros * 10 + i32::from(b - b'0');
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
    // The UTC day and second of the day: the offset moves the time by less than a day.
    let mut utc_day = days_from_civil(year, month, day);
    let mut second_of_day = hour * 3600 + minute * 60 + second - offset_seconds;
    if second_of_day < 0 {
        utc_day -= 1;
        second_of_day += 86_400;
    } else if second_of_day >= 86_400 {
        utc_day += 1;
        second_of_day -= 86_400;
    }
    let (utc_year, _, _) = civil_from_days(utc_day);
    if !(2000..=2300).contains(&utc_year) {
        return Err(TimeError::OutOfRange);
    }
    let utc_seconds = i64::from(utc_day) * SECONDS_PER_DAY + i64::from(second_of_day);
    // INVARIANT: the UTC year is 2000..=2300, so `utc_seconds` < 1.1e10 and the product < 1.1e16:
    // it cannot overflow, and a checked 64-bit multiply would cost a `__multi3` call on wasm32.
    Ok(utc_seconds.wrapping_mul(MICROS_PER_SECOND) + i64::from(micros))
}

fn month_day_time_valid(year: i32, month: i32, day: i32, hour: i32, minute: i32, second: i32) -> bool {
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
    // INVARIANT: |i64::MAX| microseconds is about 1.07e8 days, well inside `i32`.
    let days = i32::try_from(seconds.div_euclid(SECONDS_PER_DAY)).unwrap_or_default();
    let in_day = seconds.rem_euclid(SECONDS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (in_day / 3600, in_day % 3600 / 60, in_day % 60);
    let Ok(year_digits) = u32::try_from(year) else {
        // Before year 0: never a parsed time; `format!` keeps the sign.
        return if fraction == 0 {
            format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}+00:00")
        } else {
            format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{fraction:06}+00:00")
        };
    };
    let mut out = String::with_capacity(32);
    let parts = [(year_digits, 4), (month.unsigned_abs(), 2), (day.unsigned_abs(), 2)];
    for (i, (value, width)) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push('-');
        }
        push_decimal(u64::from(value), width, &mut out);
    }
    for (i, value) in [hour, minute, second].into_iter().enumerate() {
        out.push(if i == 0 { 'T' } else { ':' });
        push_decimal(value.unsigned_abs(), 2, &mut out);
    }
    if fraction != 0 {
        out.push('.');
        push_decimal(fraction.unsigned_abs(), 6, &mut out);
    }
    out.push_str("+00:00");
    out
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use jiff::tz::TimeZone;
    use proptest::prelude::*;

    use super::*;

    /// 0000-01-01T00:00:00Z in microseconds since the epoch.
    const YEAR_0: i64 = -62_167_219_200_000_000;

    proptest! {
        /// Every well-formed wire time, valid or not, against jiff: the same instant, or the
        /// same refusal (jiff knows years 0..=9999; ours are 2000..=2300 in UTC).
        #[test]
        fn parse_agrees_with_jiff(
            year in prop_oneof![9 => 1999_i32..=2301, 1 => 1_i32..=9999], month in 1_i32..=12, day in 1_i32..=31,
            hour in 0_i32..=23, minute in 0_i32..=59, second in 0_i32..=59,
            fraction in proptest::option::of((1_usize..=6, 0_u32..1_000_000)),
            offset in proptest::option::of((any::<bool>(), 0_i32..=23, 0_i32..=59)),
        ) {
            let mut text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
            if let Some((digits, value)) = fraction {
                let all = format!("{value:06}");
                text.push('.');
                text.push_str(&all[..digits]);
            }
            match offset {
                None => text.push('Z'),
                Some((plus, h, m)) => text.push_str(&format!("{}{h:02}:{m:02}", if plus { '+' } else { '-' })),
            }
            let ours = parse(&text);
            match text.parse::<Timestamp>() {
                Ok(instant) => {
                    let year = instant.to_zoned(TimeZone::UTC).year();
                    if (2000..=2300).contains(&year) {
                        prop_assert_eq!(ours, Ok(instant.as_microsecond()), "{}", text);
                    } else {
                        prop_assert_eq!(ours, Err(TimeError::OutOfRange), "{}", text);
                    }
                }
                // jiff refuses impossible dates (30 February) and instants outside its range.
                Err(_) if day > days_in_month(year, month) => prop_assert_eq!(ours, Err(TimeError::Malformed), "{}", text),
                Err(_) => prop_assert!(ours.is_err(), "{}", text),
            }
        }

        /// Formatting any instant of years 0..=9999 gives jiff's civil fields, and parses back.
        #[test]
        fn format_agrees_with_jiff(micros in YEAR_0..=Timestamp::MAX.as_microsecond()) {
            let text = format_utc(micros);
            let civil = Timestamp::from_microsecond(micros).map_err(|e| TestCaseError::fail(e.to_string()))?
                .to_zoned(TimeZone::UTC);
            let fraction = civil.subsec_nanosecond() / 1000;
            let expected = if fraction == 0 {
                format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}+00:00",
                    civil.year(), civil.month(), civil.day(), civil.hour(), civil.minute(), civil.second())
            } else {
                format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{fraction:06}+00:00",
                    civil.year(), civil.month(), civil.day(), civil.hour(), civil.minute(), civil.second())
            };
            prop_assert_eq!(&text, &expected);
            if (2000..=2300).contains(&civil.year()) {
                prop_assert_eq!(parse(&text), Ok(micros));
            }
        }
    }

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
