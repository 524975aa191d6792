//! Recovery toward the contract's bounds: a workload outside `[min_replicas, max_replicas]`
//! (scaled by hand, or its contract changed) may always move back toward the bound it is past,
//! up to that bound and no further, whatever the decision; a change away from the bounds is denied.
//!
//! - Below `min_replicas` no decision can be made (the evaluator answers `replicas_out_of_bounds`):
//!   `old < new <= min_replicas` is allowed with a warning; anything else is denied.
//! - Above `max_replicas` the evaluator decides (it steps down, SPEC §7 B); a change the decision
//!   denies is still allowed with a warning when `max_replicas <= new < old`.
//!
//! The bound is the furthest a recovery goes: past it, the workload is within bounds and the
//! decision decides again (the next change is judged as any other). The evaluator's SPEC is
//! unchanged: this rule lives in the webhook's allow/deny logic only.

/// The contract's bounds, `(min_replicas, max_replicas)`.
pub(crate) type Bounds = (u64, u64);

/// How a change of a workload outside its bounds is judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// The workload is within its bounds: the decision alone judges.
    Within,
    /// The change moves toward the bound without passing it (the warning).
    Toward(String),
    /// The change moves away from the bounds, or past the bound (why).
    Refused(String),
}

/// Judges `old -> new` of unit `key` against `bounds`.
pub(crate) fn judge(key: &str, old: u64, new: u64, (min, max): Bounds) -> Recovery {
    if old < min {
        if old < new && new <= min {
            return Recovery::Toward(format!(
                "scale-units: recovery: {key} is below its contract's min_replicas {min}; {old} -> {new} moves toward it (from {min} on, the decision decides)"
            ));
        }
        let why = if new < old {
            format!("{key} is below its contract's min_replicas {min} and {old} -> {new} moves away from it")
        } else {
            format!(
                "{key} is below its contract's min_replicas {min}: a recovery goes up to {min} and no further ({old} -> {new})"
            )
        };
        return Recovery::Refused(why);
    }
    if old > max {
        if max <= new && new < old {
            return Recovery::Toward(format!(
                "scale-units: recovery: {key} is above its contract's max_replicas {max}; {old} -> {new} moves toward it"
            ));
        }
        let why = if new > old {
            format!("{key} is above its contract's max_replicas {max} and {old} -> {new} moves away from it")
        } else {
            format!(
                "{key} is above its contract's max_replicas {max}: a recovery goes down to {max} and no further ({old} -> {new})"
            )
        };
        return Recovery::Refused(why);
    }
    Recovery::Within
}

#[cfg(test)]
mod tests {
    use super::{Recovery, judge};

    #[test]
    fn toward_the_bound_and_no_further() {
        let bounds = (2, 12);
        let toward = |old, new| matches!(judge("shop/gateway", old, new, bounds), Recovery::Toward(_));
        let refused = |old, new| matches!(judge("shop/gateway", old, new, bounds), Recovery::Refused(_));
        assert!(toward(0, 1) && toward(0, 2) && toward(1, 2));
        assert!(refused(1, 0) && refused(0, 3) && refused(1, 12));
        assert!(toward(15, 14) && toward(15, 12));
        assert!(refused(15, 16) && refused(15, 11) && refused(13, 2));
        assert_eq!(judge("shop/gateway", 2, 12, bounds), Recovery::Within);
        assert_eq!(judge("shop/gateway", 12, 20, bounds), Recovery::Within);
    }
}
