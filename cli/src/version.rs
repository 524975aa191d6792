//! `scale-units --version`: this command's version, and what the component it would use says of
//! itself (evaluator, schema and WIT versions) with its digest and where it comes from.

use scale_units_host::{Policy, default_cache_dir};

use crate::{ComponentSource, load};

pub(crate) fn print() {
    out!("scale-units {}", env!("CARGO_PKG_VERSION"));
    let source = match ComponentSource::resolve(None) {
        Ok(source) => source,
        Err(error) => {
            out!("component  none: {error}");
            return;
        }
    };
    let origin = match &source {
        ComponentSource::File(path) => path.display().to_string(),
        ComponentSource::Bundled => "bundled into this binary".to_owned(),
    };
    let builder = default_cache_dir().map_or_else(Policy::builder, |dir| Policy::builder().cache_dir(dir));
    match load(builder, &source, None) {
        Ok(policy) => {
            let info = policy.info();
            out!(
                "evaluator  {}, schema {}, WIT scale-units:evaluator@{}",
                info.evaluator_version,
                info.schema_version,
                info.wit_version
            );
            out!("component  {} ({origin})", policy.digest());
        }
        Err(error) => out!("component  {origin}: refused: {error}"),
    }
}
