//! Typed requests biased toward the decision boundaries of SPEC §6–§7: freshness edges
//! (`now == observed_at`, `now == expires_at`, observations from the future), an exact capacity
//! or quota fit (`additional × per_replica == available`, and ±1), cooldowns ±1 µs, and the
//! bounds of every integer (0, 10 000, 10^12, 10^15 and one past).
//!
//! One generator, two drivers: the host's differential test feeds it a seeded PRNG, and the
//! `core-typed-arbitrary` fuzz target (`fuzz/`, which includes this file by path) feeds it the
//! fuzzer's bytes through `arbitrary::Unstructured`. It depends on `scale_units_core` only.

use scale_units_core::{CapacityAxis, EvaluationRequest, SignalKind};

/// A source of choices.
pub trait Choose {
    /// A number in `0..n` (`0` when `n` is `0`).
    fn below(&mut self, n: usize) -> usize;

    /// True `percent` times in a hundred.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items` (which must not be empty).
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// `2026-08-19T12:00:00Z`, the `now` of the examples, in microseconds since the epoch.
pub const NOW_MICROS: i64 = 1_787_140_800_000_000;

const SECOND: i64 = 1_000_000;

/// The largest amount of a capacity or quota (SPEC §5).
const MAX_AMOUNT: u64 = 1_000_000_000_000_000;

/// A wire time for `micros` since the epoch, written with the UTC offset `offset_minutes`
/// (`Z` for `None`), with six fraction digits only when needed.
pub fn time_text(micros: i64, offset_minutes: Option<i64>) -> String {
    let local = micros + offset_minutes.unwrap_or(0) * 60 * SECOND;
    let seconds = local.div_euclid(SECOND);
    let fraction = local.rem_euclid(SECOND);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    let mut text =
        format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}", of_day / 3600, of_day / 60 % 60, of_day % 60);
    if fraction != 0 {
        text.push_str(&format!(".{fraction:06}"));
    }
    match offset_minutes {
        None => text.push('Z'),
        Some(offset) => {
            let sign = if offset < 0 { '-' } else { '+' };
            text.push_str(&format!("{sign}{:02}:{:02}", offset.abs() / 60, offset.abs() % 60));
        }
    }
    text
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

fn some_time(c: &mut impl Choose, micros: i64) -> String {
    let offset = match c.below(10) {
        0 => Some(0),
        1 => Some(60),
        2 => Some(-330),
        3 => Some(14 * 60),
        _ => None,
    };
    time_text(micros, offset)
}

/// `observed_at` and `expires_at` around `now`: mostly fresh, often exactly on an edge of the
/// half-open window `observed_at <= now < expires_at`, sometimes invalid.
fn window(c: &mut impl Choose, now: i64) -> (String, String) {
    let (observed, expires) = match c.below(60) {
        0 => (now, now + 60 * SECOND),
        1 => (now - 60 * SECOND, now),
        2 => (now - 60 * SECOND, now + 1),
        3 => (now - 60 * SECOND, now - 1),
        4 => (now + 1, now + 60 * SECOND),
        5 => (now - 1, now + 1),
        6 => (now, now + 1),
        // Invalid: expires_at must follow observed_at strictly.
        7 => (now - SECOND, now - SECOND),
        _ => (now - 30 * SECOND, now + 90 * SECOND),
    };
    (some_time(c, observed), some_time(c, expires))
}

/// Strings that validation must refuse (or accept) identically on both sides.
const ODD_REFS: &[&str] = &[
    "",
    "-leading-dash",
    "ctl\u{1}char",
    "tab\there",
    "del\u{7f}",
    "caf\u{e9}",
    "\u{1f600}",
    "token=abc123",
    "https://user:secret@example.com/x",
    "password:hunter2",
    "Bearer eyJhbGciOiJIUzI1NiJ9",
    "AKIAIOSFODNN7EXAMPLE",
    "ok/ref-1",
];

fn odd_ref(c: &mut impl Choose) -> String {
    match c.below(ODD_REFS.len() + 2) {
        n if n < ODD_REFS.len() => ODD_REFS[n].to_owned(),
        n if n == ODD_REFS.len() => "a".repeat(256),
        _ => "a".repeat(257),
    }
}

/// 0, 1, a few around 10 000 and the 10^12 and 10^15 bounds, and one past each.
fn edge_u64(c: &mut impl Choose) -> u64 {
    c.pick(&[
        0,
        1,
        2,
        9_999,
        10_000,
        10_001,
        86_400,
        86_401,
        1_000_000,
        1_000_001,
        1_000_000_000_000,
        1_000_000_000_001,
        1_000_000_000_000_000,
        1_000_000_000_000_001,
        u64::MAX,
    ])
}

fn ceil_div(value: i128, divisor: i128) -> i128 {
    if divisor <= 0 { 0 } else { (value + divisor - 1).div_euclid(divisor) }
}

/// A request derived from `base` (a valid request) with boundary values chosen by `c`.
pub fn boundary_request(base: &EvaluationRequest, c: &mut impl Choose) -> EvaluationRequest {
    let mut r = base.clone();
    let now = NOW_MICROS + c.pick(&[0, 0, 0, 0, 1, -1, 7 * SECOND]);
    r.now = some_time(c, now);

    // The policy: mostly the base's, sometimes every field at a bound.
    let contract_changed = c.chance(25);
    if contract_changed {
        let p = &mut r.contract.policy;
        match c.below(9) {
            0 => p.min_replicas = c.pick(&[0, 1, 2, 10_000, 10_001]),
            1 => p.max_replicas = c.pick(&[0, 1, 2, 12, 10_000, 10_001]),
            2 => p.target = c.pick(&[0, 1, 7, 100, 1_000_000_000_000, 1_000_000_000_001]),
            3 => p.scale_up_step = c.pick(&[0, 1, 2, 10_000, 10_001]),
            4 => p.scale_down_step = c.pick(&[0, 1, 2, 10_000, 10_001]),
            5 => p.scale_up_cooldown_s = c.pick(&[0, 1, 30, 86_400, 86_401]),
            6 => p.scale_down_cooldown_s = c.pick(&[0, 1, 300, 86_400, 86_401]),
            7 => {
                p.allow_scale_to_zero = c.chance(50);
                p.allow_scale_from_zero = c.chance(70);
                if c.chance(60) {
                    p.min_replicas = 0;
                }
            }
            _ => p.drain_seconds = c.pick(&[0, 1, 60, 86_400, 86_401]),
        }
        if c.chance(8) {
            r.contract.replica_demands.iter_mut().for_each(|d| d.per_replica = edge_u64(c));
        }
        if c.chance(4) {
            r.contract.unit_ref = odd_ref(c);
        }
        if c.chance(4) {
            r.contract.version = c.pick(&[0, 1, 2_147_483_647, 2_147_483_648]);
        }
    }
    // A claimed identity no longer matches a changed contract; keep it now and then on purpose.
    if (contract_changed && c.chance(90)) || c.chance(5) {
        r.contract.contract_id.clear();
        r.contract.contract_digest.clear();
    }

    let p = r.contract.policy.clone();
    let (min, max) = (i128::from(p.min_replicas), i128::from(p.max_replicas));
    let current: i128 = match c.below(24) {
        0 | 1 => min,
        2 | 3 => max,
        4 => min - 1,
        5 => max + 1,
        6 => 0,
        7 => 10_000,
        8 => 10_001,
        9 => -1,
        10..=15 => i128::from(base.current_replicas),
        _ => min + i128::try_from(c.below(usize::try_from(max - min + 1).unwrap_or(1).min(64))).unwrap_or(0),
    };
    r.current_replicas = i64::try_from(current).unwrap_or(i64::MAX);

    // The signal: a value that lands the raw desired count on, just under or just over a
    // multiple of the target around the current count, the step and the bounds.
    let target = i128::from(p.target.max(1));
    if let Some(signal) = r.signal.as_mut() {
        let step_up = i128::from(p.scale_up_step);
        let step_down = i128::from(p.scale_down_step);
        let k = match c.below(10) {
            0 => current,
            1 => current + 1,
            2 => current - 1,
            3 => current + step_up,
            4 => current + step_up + 1,
            5 => current - step_down,
            6 => current - step_down - 1,
            7 => min,
            8 => max + 1,
            _ => 0,
        };
        let value = (k * target + i128::from(c.pick(&[0_i8, 0, -1, 1]))).max(0);
        signal.value = match c.below(20) {
            0 => c.pick(&[-1, 1_000_000, 1_000_001, 1_000_000_000_000_000, 1_000_000_000_000_001, i64::MAX]),
            _ => i64::try_from(value).unwrap_or(i64::MAX),
        };
        if c.chance(5) {
            signal.signal = c.pick(SignalKind::ALL);
        }
        (signal.observed_at, signal.expires_at) = window(c, now);
        if c.chance(2) {
            signal.source_ref = odd_ref(c);
        }
    } else if c.chance(10) {
        r.signal = base.signal.clone();
    }
    if c.chance(3) {
        r.signal = None;
    }

    // What the decision would add, were nothing in the way: the exact-fit anchor.
    let raw = r.signal.as_ref().map_or(0, |s| ceil_div(i128::from(s.value), target));
    let additional = (raw.clamp(min, max.max(min)) - current).clamp(1, i128::from(p.scale_up_step.max(1)));
    let fit = |per_replica: u64, delta: i128| -> u64 {
        u64::try_from((additional * i128::from(per_replica) + delta).max(0)).unwrap_or(u64::MAX)
    };

    let demands = r.contract.replica_demands.clone();
    for capacity in &mut r.capacities {
        let per_replica = demands.iter().find(|d| d.axis == capacity.axis).map_or(1, |d| d.per_replica);
        if c.chance(70) {
            let available = fit(per_replica, i128::from(c.pick(&[0_i8, 0, -1, 1])));
            // The top choice puts `allocatable` exactly at 10^15.
            let reserved = c.pick(&[0, 1, capacity.reserved, MAX_AMOUNT.saturating_sub(available)]);
            capacity.reserved = reserved;
            capacity.allocatable = reserved.saturating_add(available);
            capacity.used = match c.below(200) {
                0 => reserved.saturating_add(1),
                1..=9 => 0,
                _ => reserved,
            };
        } else if c.chance(10) {
            capacity.allocatable = edge_u64(c);
        }
        (capacity.observed_at, capacity.expires_at) = window(c, now);
        if c.below(200) == 0 {
            capacity.source_ref = odd_ref(c);
        }
        if c.below(200) == 0 {
            capacity.source_digest = "sha256:ABC".to_owned();
        }
    }
    match c.below(40) {
        0 if !r.capacities.is_empty() => {
            let index = c.below(r.capacities.len());
            r.capacities.remove(index);
        }
        1 if !r.capacities.is_empty() => {
            let index = c.below(r.capacities.len());
            let copy = r.capacities[index].clone();
            r.capacities.push(copy);
        }
        2 if !r.capacities.is_empty() => {
            let index = c.below(r.capacities.len());
            r.capacities[index].axis = c.pick(CapacityAxis::ALL);
        }
        _ => {}
    }

    let bindings = r.contract.quotas.clone();
    for quota in &mut r.quotas {
        let per_replica = bindings.iter().find(|b| b.quota_ref == quota.quota_ref).map_or(1, |b| b.per_replica);
        if c.chance(70) {
            let headroom = fit(per_replica, i128::from(c.pick(&[0_i8, 0, -1, 1])));
            let used = c.pick(&[0, 1, quota.used, MAX_AMOUNT.saturating_sub(headroom)]);
            quota.used = used;
            quota.limit = used.saturating_add(headroom);
            if c.chance(2) {
                quota.used = quota.limit.saturating_add(1);
            }
        }
        (quota.observed_at, quota.expires_at) = window(c, now);
        if c.chance(3) {
            quota.quota_ref = odd_ref(c);
        }
    }
    if c.chance(3) {
        r.quotas.pop();
    }

    if let Some(continuity) = r.continuity.as_mut() {
        continuity.ready = c.chance(85);
        let counts = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 1_000_000_000_000, 1_000_000_000_001];
        continuity.active_sessions = c.pick(&counts);
        continuity.active_streams = c.pick(&counts);
        (continuity.observed_at, continuity.expires_at) = window(c, now);
    }
    if c.chance(3) {
        r.continuity = None;
    }

    if let Some(safety) = r.safety.as_mut() {
        safety.overloaded = c.chance(10);
        safety.noisy_neighbor = c.chance(10);
        safety.reason_ref = match c.below(20) {
            0..=4 => None,
            5 => Some(odd_ref(c)),
            _ => Some("incident:inc-42".to_owned()),
        };
        (safety.observed_at, safety.expires_at) = window(c, now);
    }
    if c.chance(3) {
        r.safety = None;
    }

    // The last action: a cooldown ends exactly at `now`, or a microsecond either side.
    r.last_action_at = match c.below(8) {
        0 => None,
        1 => Some(some_time(c, now + 1)),
        2 => Some(some_time(c, now - 365 * 86_400 * SECOND)),
        n => {
            let cooldown = if n % 2 == 0 { p.scale_up_cooldown_s } else { p.scale_down_cooldown_s };
            let at = now - i64::try_from(cooldown).unwrap_or(0) * SECOND + c.pick(&[0, 0, -1, 1]);
            Some(some_time(c, at))
        }
    };
    r
}

/// The wire JSON of a typed request: the model's field names, absent options left out (the
/// reader refuses `null` where a field may only be omitted).
pub fn request_json(request: &EvaluationRequest) -> String {
    fn strip_nulls(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.retain(|_, v| !v.is_null());
                map.values_mut().for_each(strip_nulls);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip_nulls),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(request).unwrap_or_default();
    strip_nulls(&mut value);
    value.to_string()
}
