//! The configuration of `scale-units serve` (`scale_units_server::config`): a file read with its
//! errors at their path, unknown fields refused, every refused combination a `ConfigError` before
//! anything runs, and `schema/serve-config.schema.json` generated from the type.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use scale_units_server::config::{LogFormat, ServeConfig, Spelling, schema};

#[test]
fn the_published_schema_is_the_one_the_type_generates() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/serve-config.schema.json");
    let generated = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
    if std::env::var_os("SCALE_UNITS_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(published == generated, "{} differs from the type (SCALE_UNITS_BLESS=1 rewrites it)", path.display());
    let schema: serde_json::Value = serde_json::from_str(&published).unwrap();
    assert_eq!(schema["additionalProperties"], false, "unknown fields are refused");
    assert!(schema["properties"]["keda_listen"].is_object());
}

#[test]
fn a_file_sets_fields_and_the_rest_keep_the_flags_defaults() {
    let config = ServeConfig::from_text(
        "listen: 127.0.0.1:0\nwebhook_dry_run: true\noverride_groups: [ops]\nlog_format: json\nmax_connections: 7\n",
        true,
    )
    .unwrap();
    assert_eq!(config.listen.port(), 0);
    assert!(config.webhook_dry_run);
    assert_eq!(config.override_groups, ["ops"]);
    assert_eq!(config.log_format, LogFormat::Json);
    assert_eq!(config.max_connections, 7);
    assert_eq!(config.drain_timeout_ms, ServeConfig::default().drain_timeout_ms);
    // JSON too, and an empty document is the defaults.
    let json = ServeConfig::from_text(r#"{"max_batch": 3}"#, false).unwrap();
    assert_eq!(json.max_batch, 3);
    assert_eq!(ServeConfig::from_text("", true).unwrap().listen, ServeConfig::default().listen);
}

#[test]
fn errors_name_their_path() {
    let error = ServeConfig::from_text("keda_listen: not-an-address\n", true).unwrap_err();
    assert_eq!(error.path, "keda_listen", "{error}");
    let error = ServeConfig::from_text("max_connections: -1\n", true).unwrap_err();
    assert_eq!(error.path, "max_connections", "{error}");
    let error = ServeConfig::from_text("override_groups: [ops, 3]\n", true).unwrap_err();
    assert_eq!(error.path, "override_groups[1]", "{error}");
    let error = ServeConfig::from_text("audit_mode: sometimes\n", true).unwrap_err();
    assert_eq!(error.path, "audit_mode", "{error}");
    // An unknown field is refused, by name (a typo never silently keeps a default).
    let error = ServeConfig::from_text("listn: 0.0.0.0:80\n", true).unwrap_err();
    assert!(error.message.contains("listn"), "{error}");
    // A duplicate key and YAML 1.1 booleans are refused, as every YAML the project reads.
    assert!(ServeConfig::from_text("webhook: true\nwebhook: false\n", true).is_err());
    assert!(ServeConfig::from_text("webhook: yes\n", true).is_err());
    assert!(ServeConfig::from_text("[1, 2]", true).is_err());
}

#[test]
fn refused_combinations_name_the_fields_as_given() {
    let from_file = |text: &str| ServeConfig::from_text(text, true).unwrap().check(Spelling::Fields).err().unwrap();
    let error = from_file("webhook: true\n");
    assert_eq!(error.message, "webhook needs tls_cert and tls_key");
    let error = from_file("keda_listen: 127.0.0.1:0\n");
    assert_eq!(error.message, "keda_listen needs units or kubernetes");
    let error = from_file("listen: 0.0.0.0:0\n");
    assert!(error.message.contains("is not loopback: give a token (token_file"), "{error}");
    // The same configuration from flags names the flags.
    let flags = ServeConfig { webhook: true, ..ServeConfig::default() }.check(Spelling::Flags).err().unwrap();
    assert_eq!(flags.message, "--webhook needs --tls-cert and --tls-key");
    // A file it names that cannot be read is refused at that field.
    let error = from_file("token_file: /nonexistent/scale-units/token\n");
    assert_eq!(error.path, "token_file", "{error}");
    // The defaults are servable.
    assert!(ServeConfig::default().check(Spelling::Flags).is_ok());
}
