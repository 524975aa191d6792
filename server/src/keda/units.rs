//! The unit registry ([`Units`]) as the scaler's source of decisions.

use super::{DecisionSource, SourceError, UnitReading};
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
}
