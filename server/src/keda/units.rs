//! The unit registry ([`Units`]) as the scaler's source of decisions.

use super::{DecisionSource, SourceError, UnitReading};
use crate::audit::DecisionFacts;
use crate::units::{UnitKey, UnitVerdict, Units};

impl DecisionSource for Units {
    /// [`Units::evaluate`] at the replica count the collector last pushed.
    async fn reading(&self, namespace: &str, name: &str) -> Result<UnitReading, SourceError> {
        let failed =
            |error: crate::units::UnitError| SourceError { code: error.code().to_owned(), message: error.to_string() };
        let key = UnitKey::new(namespace, name).map_err(failed)?;
        match self.evaluate(&key, None).await.map_err(failed)? {
            UnitVerdict::NoContract => Ok(UnitReading::NoContract),
            UnitVerdict::Decided { decision, current_replicas } => Ok(UnitReading::Decided {
                action: decision.action,
                desired_replicas: decision.desired_replicas,
                current_replicas,
            }),
        }
    }

    /// [`Units::decide`]: the reading, the decision's facts and the component's digest.
    async fn audited_reading(
        &self,
        namespace: &str,
        name: &str,
    ) -> (Result<UnitReading, SourceError>, Option<(DecisionFacts, String)>) {
        let failed =
            |error: crate::units::UnitError| SourceError { code: error.code().to_owned(), message: error.to_string() };
        let key = match UnitKey::new(namespace, name) {
            Ok(key) => key,
            Err(error) => return (Err(failed(error)), None),
        };
        match self.decide(&key, None).await {
            Err(error) => (Err(failed(error)), None),
            Ok(decided) => match decided.verdict {
                UnitVerdict::NoContract => (Ok(UnitReading::NoContract), None),
                UnitVerdict::Decided { decision, current_replicas } => {
                    let facts = decided
                        .provenance
                        .map(|provenance| (DecisionFacts::of(&decision), provenance.component_digest.clone()));
                    let reading = UnitReading::Decided {
                        action: decision.action,
                        desired_replicas: decision.desired_replicas,
                        current_replicas,
                    };
                    (Ok(reading), facts)
                }
            },
        }
    }
}
