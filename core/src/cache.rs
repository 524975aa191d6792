//! [`ContractCache`]: validated contracts and their identities, remembered between evaluations.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher};

use crate::derive::{Derivation, Recorder};
use crate::diagnose::First;
use crate::error::EvaluationError;
use crate::json::Path;
use crate::model::{ContractIdentity, Decision, EvaluationRequest, ScaleUnitContract};
use crate::{decision_to_json, evaluate, json, parse, validate};

/// Contracts that passed validation (SPEC §4) with their identity (SPEC §8), so that evaluating
/// the same contract again skips its checks, its canonical text and its two sha256 hashes.
///
/// Every result is exactly the one of the free functions ([`crate::evaluate`],
/// [`crate::evaluate_json`], [`crate::validate_contract`]): validation and identity are pure
/// functions of the contract, and an entry is found only for a contract equal to it in every
/// field, `contract_id` and `contract_digest` claims included. Only contracts that validated are
/// kept; an invalid one is checked again, and reported, every time. The cache holds at most
/// [`Self::capacity`] contracts and is emptied when a new one would pass that. Its hasher has
/// fixed keys: no randomness, the same behaviour on every run and platform.
#[derive(Clone, Debug)]
pub struct ContractCache {
    entries: HashMap<ScaleUnitContract, ContractIdentity, BuildHasherDefault<DefaultHasher>>,
    capacity: usize,
}

impl Default for ContractCache {
    fn default() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }
}

impl ContractCache {
    /// The capacity of [`ContractCache::default`]: 1 024 contracts (about 1–2 MB of typical
    /// contracts, at most about 10 MB of the largest valid ones).
    pub const DEFAULT_CAPACITY: usize = 1024;

    /// An empty cache of [`Self::DEFAULT_CAPACITY`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cache that keeps at most `capacity` contracts (0 keeps none).
    pub fn with_capacity(capacity: usize) -> Self {
        Self { entries: HashMap::default(), capacity }
    }

    /// The most contracts kept at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many contracts are kept now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no contract is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every contract.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// [`crate::evaluate`], with the contract's validation and identity taken from the cache.
    ///
    /// # Errors
    /// Exactly the errors of [`crate::evaluate`].
    pub fn evaluate(&mut self, request: &EvaluationRequest) -> Result<Decision, EvaluationError> {
        Ok(evaluate::decide(&validate::request_with(request, Some(self))?, &mut Recorder::silent()))
    }

    /// [`crate::evaluate_json`], with the contract's validation and identity taken from the cache.
    ///
    /// # Errors
    /// Exactly the errors of [`crate::evaluate_json`].
    pub fn evaluate_json(&mut self, request: &str) -> Result<String, EvaluationError> {
        let request = parse::request(&json::parse(request, "request")?, &mut First)?;
        Ok(decision_to_json(&self.evaluate(&request)?))
    }

    /// [`crate::derive`], with the contract's validation and identity taken from the cache: the
    /// same decision path as [`ContractCache::evaluate`], recording its steps.
    ///
    /// # Errors
    /// Exactly the errors of [`crate::derive`].
    pub fn derive(&mut self, request: &EvaluationRequest) -> Result<Derivation, EvaluationError> {
        let mut recorder = Recorder::recording();
        let decision = evaluate::decide(&validate::request_with(request, Some(self))?, &mut recorder);
        Ok(recorder.into_derivation(&decision))
    }

    /// [`crate::derive_json`], with the contract's validation and identity taken from the cache.
    ///
    /// # Errors
    /// Exactly the errors of [`crate::derive_json`].
    pub fn derive_json(&mut self, request: &str) -> Result<String, EvaluationError> {
        let request = parse::request(&json::parse(request, "request")?, &mut First)?;
        Ok(self.derive(&request)?.to_json())
    }

    /// [`crate::derivation_text`], with the contract's validation and identity taken from the
    /// cache.
    ///
    /// # Errors
    /// Exactly the errors of [`crate::derivation_text`].
    pub fn derivation_text(&mut self, request: &str) -> Result<String, EvaluationError> {
        let request = parse::request(&json::parse(request, "request")?, &mut First)?;
        Ok(self.derive(&request)?.to_text())
    }

    /// [`crate::validate_contract`], through the cache.
    ///
    /// # Errors
    /// Exactly the errors of [`crate::validate_contract`].
    pub fn validate_contract(&mut self, contract: &ScaleUnitContract) -> Result<ContractIdentity, EvaluationError> {
        self.identity(contract, &Path::Root)
    }

    /// The identity of a valid contract found at `path`, validating it on a miss.
    pub(crate) fn identity(
        &mut self,
        contract: &ScaleUnitContract,
        path: &Path<'_>,
    ) -> Result<ContractIdentity, EvaluationError> {
        if let Some(identity) = self.entries.get(contract) {
            return Ok(identity.clone());
        }
        let identity = validate::contract(contract, path)?;
        if self.capacity > 0 {
            if self.entries.len() >= self.capacity {
                self.entries.clear();
            }
            self.entries.insert(contract.clone(), identity.clone());
        }
        Ok(identity)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

    use super::ContractCache;

    const T01: &str = include_str!("../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json");

    fn request() -> crate::EvaluationRequest {
        let text = crate::conformance::Vector::parse(T01).unwrap().request_text;
        crate::parse_request(&text).unwrap()
    }

    #[test]
    fn hits_give_the_uncached_decision() {
        let request = request();
        let mut cache = ContractCache::with_capacity(2);
        let expected = crate::evaluate(&request).unwrap();
        assert_eq!(cache.evaluate(&request).unwrap(), expected);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.evaluate(&request).unwrap(), expected);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_changed_claim_or_field_is_a_miss_and_is_checked() {
        let request = request();
        let mut cache = ContractCache::new();
        cache.evaluate(&request).unwrap();
        let mut claimed = request.clone();
        claimed.contract.contract_id = "scale-unit:00000000000000000000000000000000".into();
        assert_eq!(cache.evaluate(&claimed).unwrap_err(), crate::evaluate(&claimed).unwrap_err());
        let mut changed = request.clone();
        changed.contract.version += 1;
        assert_eq!(cache.evaluate(&changed).unwrap(), crate::evaluate(&changed).unwrap());
        assert_eq!(cache.len(), 2, "the valid contracts only");
    }

    #[test]
    fn cached_derivations_are_the_uncached_ones() {
        let request = request();
        let text = crate::conformance::Vector::parse(T01).unwrap().request_text;
        let mut cache = ContractCache::new();
        for _ in 0..2 {
            assert_eq!(cache.derive(&request).unwrap(), crate::derive(&request).unwrap());
            assert_eq!(cache.derive_json(&text).unwrap(), crate::derive_json(&text).unwrap());
            assert_eq!(cache.derivation_text(&text).unwrap(), crate::derivation_text(&text).unwrap());
        }
        assert_eq!(cache.len(), 1);
        let mut claimed = request.clone();
        claimed.contract.contract_id = "scale-unit:00000000000000000000000000000000".into();
        assert_eq!(cache.derive(&claimed).unwrap_err(), crate::derive(&claimed).unwrap_err());
        let broken = text.replacen('{', "[", 1);
        assert_eq!(cache.derive_json(&broken).unwrap_err(), crate::derive_json(&broken).unwrap_err());
    }

    #[test]
    fn full_cache_starts_over() {
        let request = request();
        let mut cache = ContractCache::with_capacity(1);
        cache.evaluate(&request).unwrap();
        let mut other = request.clone();
        other.contract.version += 1;
        assert_eq!(cache.evaluate(&other).unwrap(), crate::evaluate(&other).unwrap());
        assert_eq!(cache.len(), 1);
        let mut none = ContractCache::with_capacity(0);
        assert_eq!(none.evaluate(&request).unwrap(), crate::evaluate(&request).unwrap());
        assert!(none.is_empty());
    }

    #[test]
    fn identity_texts_hash_to_the_identities() {
        use sha2::{Digest, Sha256};
        let request = request();
        let decision = crate::evaluate(&request).unwrap();
        let hex =
            |text: String| -> String { Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect() };
        let contract = hex(crate::contract_identity_text(&request.contract));
        assert_eq!(decision.contract_id, format!("scale-unit:{}", &contract[..32]));
        let text = crate::decision_identity_text(&decision);
        assert_eq!(decision.decision_id, format!("scale-decision:{}", &hex(text.clone())[..32]));
        let wrapped = format!("{{\"identity\":{text},\"kind\":\"scale_decision\"}}");
        assert_eq!(decision.decision_digest, format!("sha256:{}", hex(wrapped)));
    }
}
