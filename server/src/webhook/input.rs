//! The fields of an `AdmissionReview` the webhook judges by; everything else is skipped unread.

use std::collections::BTreeMap;

use kube_core::admission::Operation;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::breakglass;

/// What the webhook reads of an `AdmissionReview` (`admission.k8s.io/v1`): every other field, of
/// the review and of its objects, is skipped as it is read (serde's `IgnoredAny`), never built
/// into a tree, so a review costs its body and a few small strings whatever it carries.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReviewIn {
    pub(super) api_version: String,
    pub(super) kind: String,
    #[serde(default)]
    pub(super) request: Option<RequestIn>,
}

/// The fields of a review's `request` the webhook judges by.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RequestIn {
    pub(super) uid: String,
    #[serde(rename = "kind")]
    pub(super) _kind: IgnoredAny,
    pub(super) resource: ResourceIn,
    #[serde(default)]
    pub(super) sub_resource: Option<String>,
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    pub(super) operation: Operation,
    pub(super) user_info: UserIn,
    #[serde(default)]
    pub(super) object: Option<ObjectIn>,
    #[serde(default)]
    pub(super) old_object: Option<ObjectIn>,
    #[serde(default)]
    pub(super) dry_run: bool,
}

/// `request.resource`.
#[derive(Deserialize)]
pub(super) struct ResourceIn {
    #[serde(default)]
    pub(super) group: String,
    pub(super) resource: String,
}

/// `request.userInfo`: what the API server says of the requester.
#[derive(Deserialize)]
pub(super) struct UserIn {
    #[serde(default)]
    pub(super) username: Option<String>,
    #[serde(default)]
    pub(super) groups: Option<Vec<String>>,
}

/// An object of a review (a `Scale`, a Deployment, a StatefulSet): its replica count, its
/// version and the override annotations, nothing else.
#[derive(Deserialize)]
pub(super) struct ObjectIn {
    #[serde(default)]
    pub(super) metadata: MetadataIn,
    #[serde(default)]
    pub(super) spec: Option<SpecIn>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MetadataIn {
    #[serde(default, deserialize_with = "override_annotations")]
    pub(super) annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
pub(super) struct SpecIn {
    #[serde(default)]
    pub(super) replicas: Option<i32>,
}

/// The object's annotations, keeping the break-glass ones only ([`breakglass::REASON_ANNOTATION`],
/// [`breakglass::EXPIRES_ANNOTATION`]); the others' values are skipped unread.
pub(super) fn override_annotations<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct Annotations;
    impl<'de> serde::de::Visitor<'de> for Annotations {
        type Value = Option<BTreeMap<String, String>>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a map of annotations")
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_map(self)
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut kept = BTreeMap::new();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == breakglass::REASON_ANNOTATION || key == breakglass::EXPIRES_ANNOTATION {
                    let value = map.next_value::<String>()?;
                    if kept.insert(key.clone().into_owned(), value).is_some() {
                        return Err(serde::de::Error::custom(format!("duplicate annotation `{key}`")));
                    }
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Some(kept))
        }
    }
    deserializer.deserialize_option(Annotations)
}
