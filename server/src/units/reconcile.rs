//! What an authenticated review teaches of a unit's workload: the API server's `oldObject`
//! settles the unit's last admission (docs/DECISIONS.md, "Admitted, then refused").

use super::ledger::{Told, Word};
use super::{Admission, UnitError, UnitKey, Units};

/// What an authenticated review says of the unit's workload as the API server holds it: its
/// `oldObject`, for [`Units::reconcile_review`].
#[derive(Clone, Copy, Debug)]
pub struct ReviewedObject<'a> {
    /// The review's `request.uid` (a replayed review, or the admission's own, says nothing).
    pub review_uid: &'a str,
    /// The `oldObject`'s `metadata.resourceVersion`.
    pub resource_version: Option<&'a str>,
    /// The `oldObject`'s replica count.
    pub count: u64,
}

/// What [`Units::reconcile_review`] learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciled {
    /// Nothing: the unit's last admission is settled already, or the review cannot tell, and no
    /// admitted count contradicts it.
    Unchanged,
    /// The workload runs the last admission's count: the change happened (a retracted one is
    /// reinstated: its cooldown and its admitted count again).
    Confirmed(Admission),
    /// The object the last admission was admitted against is unchanged, at the old count: the
    /// change never happened. Its cooldown no longer counts, the review's count is the unit's.
    Retracted(Admission),
    /// The admitted count kept for the unit is not the workload's count: the review's count is
    /// the unit's; the admission, which the review cannot settle, keeps its cooldown.
    Corrected {
        /// The admitted count replaced.
        admitted: u64,
    },
}

impl Units {
    /// Learns from an authenticated review what the API server holds of the unit's workload (its
    /// `oldObject`), before the review is judged. The unit's last admission is settled by it:
    /// retracted when the object is at the version the change was admitted against and at the
    /// old count (the change never happened: the cooldowns count from the action before it, the
    /// review's count is the unit's and no admitted count overrules the collected ones),
    /// confirmed when it shows the admitted count (a retracted one reinstated). Otherwise an
    /// admitted count kept for the unit that the review contradicts gives way to the review's
    /// count. Works the same on every replica sharing the store. Nothing for a unit without a
    /// contract, a replayed review or the admission's own.
    ///
    /// # Errors
    /// [`UnitError::Store`] when the ledger or the evidence store cannot be read or written.
    pub async fn reconcile_review(&self, key: &UnitKey, object: ReviewedObject<'_>) -> Result<Reconciled, UnitError> {
        // A replayed review (the API server retried it) is an admission's own: its `oldObject` is
        // from before that change.
        if self.catalog.contract(key).is_none() || self.admitted_review(key, object.review_uid).await?.is_some() {
            return Ok(Reconciled::Unchanged);
        }
        let word = Word {
            review_uid: Some(object.review_uid.to_owned()),
            resource_version: object.resource_version.map(str::to_owned),
            count: object.count,
            by: format!("review:{}", object.review_uid),
            at_ms: self.now_ms(),
        };
        let told = self.ledger.settle(&key.to_string(), &word).await?;
        let admitted = self.evidence.admitted_count(key).await?;
        let max_age_s = self.replicas_max_age_s(key);
        Ok(match told {
            Told::Settled(admission) if admission.retracted() => {
                self.evidence.record_reviewed_count(key, object.count, max_age_s).await?;
                Reconciled::Retracted(*admission)
            }
            Told::Settled(admission) => {
                if admitted != Some(object.count) {
                    self.record_admitted_count(key, object.count).await?;
                }
                Reconciled::Confirmed(*admission)
            }
            // A review read from the version the last admission was judged against shows the
            // object before that change: nothing of now.
            Told::FromBefore => Reconciled::Unchanged,
            Told::Nothing => match admitted {
                Some(admitted) if admitted != object.count => {
                    self.evidence.record_reviewed_count(key, object.count, max_age_s).await?;
                    Reconciled::Corrected { admitted }
                }
                _ => Reconciled::Unchanged,
            },
        })
    }
}
