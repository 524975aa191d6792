//! The evaluator's exports, found by name in a component of any WIT minor version this host
//! speaks (DECISIONS.md, "WIT 0.2.0 and the compatibility rule").
//!
//! wasmtime's generated `ScaleUnitsPre` requires every function of *this* WIT, under *this*
//! version's interface name; a 0.1.x component has another name and lacks the 0.2.0 functions.
//! So the host looks the interface up under each supported name, newest first, requires the
//! functions every supported version has, and keeps the newer ones optional: a call to one the
//! component lacks is a typed [`HostError::Unsupported`](crate::HostError::Unsupported), never a
//! trap or a refusal of the component. The generated record and enum types are reused: the
//! component model checks types by structure, and 0.2.0 only added to 0.1.0.

use wasmtime::AsContextMut;
use wasmtime::component::{Component, ComponentExportIndex, Instance, TypedFunc};

use crate::bindings::wit;

/// The interface names this host speaks, newest first, with the `major.minor.` prefix the
/// component's `info` must then report. wasmtime matches a later patch release of a name.
pub(crate) const INTERFACES: [(&str, &str); 3] = [
    ("scale-units:evaluator/evaluator@0.3.0", "0.3."),
    ("scale-units:evaluator/evaluator@0.2.0", "0.2."),
    ("scale-units:evaluator/evaluator@0.1.0", "0.1."),
];

/// A function's typed handle: one argument, one result.
type Func<P, R> = TypedFunc<(P,), (R,)>;
type Outcome<T> = core::result::Result<T, wit::EvaluationError>;

/// `diagnose-request-json` and `diagnose-contract-json`: text in, diagnosis out.
pub(crate) type DiagnoseFunc = Func<String, wit::Diagnosis>;

/// `scaler-reading-json`: text in, text out.
pub(crate) type TextFunc = Func<String, String>;

/// `gate`: a typed request and change in, the typed verdict out.
pub(crate) type GateFunc = TypedFunc<(wit::EvaluationRequest, wit::ProposedChange), (Outcome<wit::GateVerdict>,)>;

/// `gate-json`: two texts in, the verdict's text out.
pub(crate) type GateJsonFunc = TypedFunc<(String, String), (Outcome<String>,)>;

/// Where each export lives in one component: resolved once per component.
#[derive(Clone, Debug)]
pub(crate) struct ExportIndices {
    /// The interface name found, such as `scale-units:evaluator/evaluator@0.1.0`.
    pub(crate) interface: &'static str,
    /// The `major.minor.` prefix `info` must report for that interface.
    pub(crate) wit_prefix: &'static str,
    evaluate: ComponentExportIndex,
    evaluate_json: ComponentExportIndex,
    evaluate_batch: ComponentExportIndex,
    evaluate_batch_json: ComponentExportIndex,
    validate_contract: ComponentExportIndex,
    validate_contract_json: ComponentExportIndex,
    surface_profile: ComponentExportIndex,
    explain: ComponentExportIndex,
    simulate_json: ComponentExportIndex,
    info: ComponentExportIndex,
    derive: Option<ComponentExportIndex>,
    derive_json: Option<ComponentExportIndex>,
    diagnose_request_json: Option<ComponentExportIndex>,
    diagnose_contract_json: Option<ComponentExportIndex>,
    gate: Option<ComponentExportIndex>,
    gate_json: Option<ComponentExportIndex>,
    scaler_reading_json: Option<ComponentExportIndex>,
    validate_observations_json: Option<ComponentExportIndex>,
    derivation_text: Option<ComponentExportIndex>,
    limits_json: Option<ComponentExportIndex>,
}

impl ExportIndices {
    /// Finds the evaluator interface and its functions.
    ///
    /// # Errors
    /// What is missing, in words: no evaluator interface under any supported name, or a
    /// function every supported version has.
    pub(crate) fn new(component: &Component) -> core::result::Result<Self, String> {
        let Some((interface, wit_prefix, index)) = INTERFACES
            .iter()
            .find_map(|(name, prefix)| component.get_export_index(None, name).map(|index| (*name, *prefix, index)))
        else {
            let names: Vec<&str> = INTERFACES.iter().map(|(name, _)| *name).collect();
            return Err(format!("no export named {}", names.join(" or ")));
        };
        let optional = |name: &str| component.get_export_index(Some(&index), name);
        let required = |name: &str| optional(name).ok_or_else(|| format!("{interface} has no function `{name}`"));
        Ok(Self {
            interface,
            wit_prefix,
            evaluate: required("evaluate")?,
            evaluate_json: required("evaluate-json")?,
            evaluate_batch: required("evaluate-batch")?,
            evaluate_batch_json: required("evaluate-batch-json")?,
            validate_contract: required("validate-contract")?,
            validate_contract_json: required("validate-contract-json")?,
            surface_profile: required("surface-profile")?,
            explain: required("explain")?,
            simulate_json: required("simulate-json")?,
            info: required("info")?,
            derive: optional("derive"),
            derive_json: optional("derive-json"),
            diagnose_request_json: optional("diagnose-request-json"),
            diagnose_contract_json: optional("diagnose-contract-json"),
            gate: optional("gate"),
            gate_json: optional("gate-json"),
            scaler_reading_json: optional("scaler-reading-json"),
            validate_observations_json: optional("validate-observations-json"),
            derivation_text: optional("derivation-text"),
            limits_json: optional("limits-json"),
        })
    }

    /// Whether the component exports `function` (a WIT name such as `derive-json`).
    pub(crate) fn has(&self, function: &str) -> bool {
        match function {
            "derive" => self.derive.is_some(),
            "derive-json" => self.derive_json.is_some(),
            "diagnose-request-json" => self.diagnose_request_json.is_some(),
            "diagnose-contract-json" => self.diagnose_contract_json.is_some(),
            "gate" => self.gate.is_some(),
            "gate-json" => self.gate_json.is_some(),
            "scaler-reading-json" => self.scaler_reading_json.is_some(),
            "validate-observations-json" => self.validate_observations_json.is_some(),
            "derivation-text" => self.derivation_text.is_some(),
            "limits-json" => self.limits_json.is_some(),
            _ => true,
        }
    }
}

/// The typed functions of one instance, type-checked once when it is instantiated (the check is
/// the component model's: field names and types, not the Rust type names).
pub(crate) struct Funcs {
    pub(crate) evaluate: Func<wit::EvaluationRequest, Outcome<wit::Decision>>,
    pub(crate) evaluate_json: Func<String, Outcome<wit::DecisionJson>>,
    pub(crate) evaluate_batch: Func<Vec<wit::EvaluationRequest>, Vec<Outcome<wit::Decision>>>,
    pub(crate) evaluate_batch_json: Func<Vec<String>, Vec<Outcome<wit::DecisionJson>>>,
    pub(crate) validate_contract: Func<wit::ScaleUnitContract, Outcome<wit::ContractIdentity>>,
    pub(crate) validate_contract_json: Func<String, Outcome<wit::ContractIdentity>>,
    pub(crate) surface_profile: Func<wit::SurfaceKind, wit::Profile>,
    pub(crate) explain: Func<wit::Decision, wit::Explanation>,
    pub(crate) simulate_json: Func<String, Outcome<wit::SimulationJson>>,
    pub(crate) info: TypedFunc<(), (wit::EvaluatorInfo,)>,
    pub(crate) derive: Option<Func<wit::EvaluationRequest, Outcome<wit::DerivationJson>>>,
    pub(crate) derive_json: Option<Func<String, Outcome<wit::DerivationJson>>>,
    pub(crate) diagnose_request_json: Option<DiagnoseFunc>,
    pub(crate) diagnose_contract_json: Option<DiagnoseFunc>,
    pub(crate) gate: Option<GateFunc>,
    pub(crate) gate_json: Option<GateJsonFunc>,
    pub(crate) scaler_reading_json: Option<TextFunc>,
    pub(crate) validate_observations_json: Option<Func<String, Outcome<()>>>,
    pub(crate) derivation_text: Option<Func<String, Outcome<String>>>,
    pub(crate) limits_json: Option<TypedFunc<(), (String,)>>,
}

impl Funcs {
    /// Looks up and type-checks every export of `instance`.
    ///
    /// # Errors
    /// A function whose type differs from this host's WIT (the component is of another world),
    /// in words.
    pub(crate) fn new(
        mut store: impl AsContextMut,
        instance: &Instance,
        exports: &ExportIndices,
    ) -> core::result::Result<Self, String> {
        let mut store = store.as_context_mut();
        macro_rules! typed {
            ($index:expr, $name:literal) => {
                instance
                    .get_typed_func(&mut store, &$index)
                    .map_err(|error| format!("{}#{}: {error:#}", exports.interface, $name))?
            };
        }
        macro_rules! optional {
            ($index:expr, $name:literal) => {
                match &$index {
                    Some(index) => Some(typed!(index, $name)),
                    None => None,
                }
            };
        }
        Ok(Self {
            evaluate: typed!(exports.evaluate, "evaluate"),
            evaluate_json: typed!(exports.evaluate_json, "evaluate-json"),
            evaluate_batch: typed!(exports.evaluate_batch, "evaluate-batch"),
            evaluate_batch_json: typed!(exports.evaluate_batch_json, "evaluate-batch-json"),
            validate_contract: typed!(exports.validate_contract, "validate-contract"),
            validate_contract_json: typed!(exports.validate_contract_json, "validate-contract-json"),
            surface_profile: typed!(exports.surface_profile, "surface-profile"),
            explain: typed!(exports.explain, "explain"),
            simulate_json: typed!(exports.simulate_json, "simulate-json"),
            info: typed!(exports.info, "info"),
            derive: optional!(exports.derive, "derive"),
            derive_json: optional!(exports.derive_json, "derive-json"),
            diagnose_request_json: optional!(exports.diagnose_request_json, "diagnose-request-json"),
            diagnose_contract_json: optional!(exports.diagnose_contract_json, "diagnose-contract-json"),
            gate: optional!(exports.gate, "gate"),
            gate_json: optional!(exports.gate_json, "gate-json"),
            scaler_reading_json: optional!(exports.scaler_reading_json, "scaler-reading-json"),
            validate_observations_json: optional!(exports.validate_observations_json, "validate-observations-json"),
            derivation_text: optional!(exports.derivation_text, "derivation-text"),
            limits_json: optional!(exports.limits_json, "limits-json"),
        })
    }
}

/// Calls a one-argument function and unwraps its one-result tuple.
pub(crate) fn call<P, R>(func: &Func<P, R>, store: impl AsContextMut, arg: P) -> wasmtime::Result<R>
where
    (P,): wasmtime::component::ComponentNamedList + wasmtime::component::Lower,
    (R,): wasmtime::component::ComponentNamedList + wasmtime::component::Lift,
{
    func.call(store, (arg,)).map(|(result,)| result)
}
