//! The audited break-glass override (`serve --override-group G`): a replica change the decision
//! would deny is allowed when the review's user is a member of a configured group — with a warning
//! that names who and why, counted in `/metrics` (`scale_units_admission_overrides_total`) and
//! written to the audit log. Nothing is overridden unless a group is configured.
//!
//! **The authority is the group, never an annotation.** The API server fills `userInfo` from the
//! authenticated request; a requester cannot choose it (impersonation needs its own RBAC verb).
//! An annotation on the workload can be written by anyone who can update the Deployment — the very
//! people and controllers the webhook constrains — so an annotation alone would defeat it. The
//! workload's annotations only *describe* a member's override: [`REASON_ANNOTATION`] (why, e.g. an
//! incident number) and [`EXPIRES_ANNOTATION`] (until when, RFC 3339, at most
//! [`MAX_WINDOW`] ahead). An override whose expiry has passed, cannot be read or is too far ahead
//! is refused, so a forgotten annotation (say, in a Git repository) never keeps justifying changes.
//! A non-member's annotations grant nothing, and the denial says so. The `scale` subresource (what
//! `kubectl scale` and the HPA write) carries no annotations: a member's override through it is
//! allowed with "no reason given".
//!
//! Never permanent: each overridden change is one review, allowed once and audited once; the next
//! change is judged again.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::audit::OverrideFacts;

/// The workload annotation naming why an override is made.
pub const REASON_ANNOTATION: &str = "scale-units/override-reason";

/// The workload annotation naming until when an override may be made (RFC 3339).
pub const EXPIRES_ANNOTATION: &str = "scale-units/override-expires";

/// The furthest ahead an override's expiry may be: an override is for an incident, not a policy.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// What [`check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// The user is in none of the groups; `annotated`: the workload carries override annotations
    /// anyway.
    NotAMember { annotated: bool },
    /// The override applies.
    Granted(OverrideFacts),
    /// The user is a member, but the override's annotations refuse it (why).
    Refused(String),
}

/// Whether `username` (in `user_groups`) may override a denial of a change to a workload with
/// `annotations` (`None`: a `Scale`, which carries none), at `now`.
pub(crate) fn check(
    override_groups: &[String],
    username: &str,
    user_groups: &[String],
    annotations: Option<&BTreeMap<String, String>>,
    now: jiff::Timestamp,
) -> Check {
    let reason = annotations.and_then(|annotations| annotations.get(REASON_ANNOTATION)).cloned();
    let expires = annotations.and_then(|annotations| annotations.get(EXPIRES_ANNOTATION)).cloned();
    let Some(group) = override_groups.iter().find(|group| user_groups.contains(group)) else {
        return Check::NotAMember { annotated: reason.is_some() || expires.is_some() };
    };
    if let Some(text) = &expires {
        let Ok(until) = text.parse::<jiff::Timestamp>() else {
            return Check::Refused(format!("{EXPIRES_ANNOTATION} {text:?} is not an RFC 3339 time"));
        };
        if until <= now {
            return Check::Refused(format!(
                "the override expired at {text} ({EXPIRES_ANNOTATION}); renew or remove it"
            ));
        }
        let window = jiff::SignedDuration::try_from(MAX_WINDOW).unwrap_or(jiff::SignedDuration::ZERO);
        if until.duration_since(now) > window {
            return Check::Refused(format!(
                "{EXPIRES_ANNOTATION} {text} is more than {} h ahead",
                MAX_WINDOW.as_secs() / 3600
            ));
        }
    }
    Check::Granted(OverrideFacts { by: username.to_owned(), group: group.clone(), reason, expires })
}

/// The warning of an overridden change (kept short: the API server may cut long warnings; the
/// audit log keeps the whole denial).
pub(crate) fn warning(facts: &OverrideFacts, change: &str, against: &str) -> String {
    let reason = facts.reason.as_deref().unwrap_or("no reason given");
    let until = facts.expires.as_deref().map(|expires| format!(", until {expires}")).unwrap_or_default();
    format!(
        "scale-units: OVERRIDE by {} (group {}; reason: {reason}{until}): {change} allowed against {against}",
        facts.by, facts.group
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noon() -> jiff::Timestamp {
        "2026-08-19T12:00:00Z".parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    fn annotated(expires: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (REASON_ANNOTATION.to_owned(), "INC-1".to_owned()),
            (EXPIRES_ANNOTATION.to_owned(), expires.to_owned()),
        ])
    }

    #[test]
    fn only_members_override_and_the_annotations_only_describe_it() {
        let groups = ["sre".to_owned()];
        let member = ["system:authenticated".to_owned(), "sre".to_owned()];
        let other = ["system:authenticated".to_owned()];
        let fresh = annotated("2026-08-19T13:00:00Z");
        assert_eq!(check(&groups, "bob", &other, Some(&fresh), noon()), Check::NotAMember { annotated: true });
        assert_eq!(check(&groups, "bob", &other, None, noon()), Check::NotAMember { annotated: false });
        assert_eq!(check(&[], "alice", &member, Some(&fresh), noon()), Check::NotAMember { annotated: true });
        let Check::Granted(facts) = check(&groups, "alice", &member, Some(&fresh), noon()) else {
            unreachable!("granted")
        };
        assert_eq!((facts.group.as_str(), facts.reason.as_deref()), ("sre", Some("INC-1")));
        assert!(matches!(check(&groups, "alice", &member, None, noon()), Check::Granted(_)));
        for refused in ["2026-08-19T12:00:00Z", "2026-08-20T12:00:01Z", "tomorrow"] {
            assert!(
                matches!(check(&groups, "alice", &member, Some(&annotated(refused)), noon()), Check::Refused(_)),
                "{refused}"
            );
        }
    }
}
