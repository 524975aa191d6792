//! Kubernetes as the source of truth (issues 37 and 38): the service watches the API server with
//! its own ServiceAccount and answers from what it saw.
//!
//! - [`resource`]: the `ScaleUnit` resource (`scale-units.dev/v1alpha1`): a unit's contract,
//!   sources, scale target and mode as a Kubernetes object, the decision in its status.
//! - [`crd`]: its `CustomResourceDefinition`, the OpenAPI schema generated from the same types
//!   as `schema/`.

pub mod resource;
