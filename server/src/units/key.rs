//! [`UnitKey`]: a unit's `namespace/name`, as Kubernetes spells a workload.

use std::fmt;

use super::UnitError;

/// The key of a unit: the workload's namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnitKey {
    /// The namespace (a DNS label).
    pub namespace: String,
    /// The workload's name (a DNS subdomain).
    pub name: String,
}

impl UnitKey {
    /// A key from a namespace and a name.
    ///
    /// # Errors
    /// [`UnitError::InvalidKey`] unless the namespace is a DNS label (RFC 1123: 1 to 63 lower-case
    /// letters, digits and `-`, starting and ending with a letter or digit) and the name a DNS
    /// subdomain (1 to 253 characters, dot-separated labels).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Result<Self, UnitError> {
        let (namespace, name) = (namespace.into(), name.into());
        if !is_dns_label(&namespace) {
            return Err(UnitError::InvalidKey(format!("namespace {namespace:?} is not a DNS label")));
        }
        if name.is_empty() || name.len() > 253 || !name.split('.').all(is_dns_label) {
            return Err(UnitError::InvalidKey(format!("name {name:?} is not a DNS subdomain")));
        }
        Ok(Self { namespace, name })
    }

    /// The key of a contract file named `<namespace>.<name>.<json|yaml|yml>` (the namespace has no
    /// `.`, so the first `.` splits).
    ///
    /// # Errors
    /// [`UnitError::InvalidKey`] for another extension or an invalid namespace or name.
    pub fn from_file_name(file_name: &str) -> Result<Self, UnitError> {
        let stem = [".json", ".yaml", ".yml"]
            .iter()
            .find_map(|extension| file_name.strip_suffix(extension))
            .ok_or_else(|| UnitError::InvalidKey(format!("{file_name}: not a .json, .yaml or .yml file")))?;
        let (namespace, name) = stem
            .split_once('.')
            .ok_or_else(|| UnitError::InvalidKey(format!("{file_name}: not named <namespace>.<name>.<extension>")))?;
        Self::new(namespace, name)
    }

    /// The prefix of every store key of this unit; the braces make it a Redis Cluster hash tag,
    /// so that one unit's keys live on one shard.
    pub(crate) fn store_prefix(&self) -> String {
        format!("scale-units:{{{}/{}}}:", self.namespace, self.name)
    }
}

impl fmt::Display for UnitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

fn is_dns_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |byte: Option<&u8>| byte.is_some_and(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit());
    !bytes.is_empty()
        && bytes.len() <= 63
        && edge(bytes.first())
        && edge(bytes.last())
        && bytes.iter().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
}

#[cfg(test)]
mod tests {
    use super::UnitKey;

    #[test]
    fn file_names_split_at_the_first_dot() {
        let key = UnitKey::from_file_name("shop.api.v2.yaml").unwrap();
        assert_eq!((key.namespace.as_str(), key.name.as_str()), ("shop", "api.v2"));
        assert!(UnitKey::from_file_name("shop.json").is_err());
        assert!(UnitKey::from_file_name("Shop.api.json").is_err());
        assert!(UnitKey::from_file_name("shop.api.txt").is_err());
        assert!(UnitKey::new("-shop", "api").is_err());
        assert!(UnitKey::new("shop", "api..x").is_err());
    }
}
