//! The wasmtime bindings of the WIT world, generated and kept private: users see the core's
//! documented types, converted in `convert.rs`.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "scale-units",
});

pub(crate) use exports::scale_units::evaluator::evaluator as wit;
