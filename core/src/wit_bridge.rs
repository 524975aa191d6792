//! The enums that cross the WIT boundary, listed once: the evaluator component (over
//! wit-bindgen's types) and the Rust host (over wasmtime's) both generate their conversions from
//! this list, so a new reason, axis or code is added here and in `wit/` and nowhere else.

/// Generates, for each enum that crosses the WIT boundary, `fn x(wit::X) -> core::X` and
/// `fn x_to_wit(core::X) -> wit::X`, where `$wit` names the module of generated WIT types in
/// scope at the call. Both matches are exhaustive, so a case added on one side only fails to
/// compile. For the faces' conversion modules; not part of the evaluator's API.
#[doc(hidden)]
#[macro_export]
macro_rules! wit_enum_bridges {
    ($wit:ident) => {
        $crate::__wit_enum_bridge!(
            $wit,
            surface,
            surface_to_wit,
            SurfaceKind {
                IngestWorker,
                DispatchWorker,
                GraphosGateway,
                McpGateway,
                ApiGateway,
                QueryReader,
                ConnectorPool,
                MediaPool,
                RlmPool
            }
        );
        $crate::__wit_enum_bridge!(
            $wit,
            signal,
            signal_to_wit,
            SignalKind {
                QueueDepth,
                ConsumerLag,
                BacklogAgeMs,
                RequestRate,
                InFlight,
                P95LatencyMs,
                ErrorRatePpm,
                ActiveSessions,
                ContinuityLoad,
                ProviderInFlight,
                GpuUtilizationPpm
            }
        );
        $crate::__wit_enum_bridge!(
            $wit,
            axis,
            axis_to_wit,
            CapacityAxis {
                CpuMilli,
                MemoryMib,
                GpuCount,
                GpuMemoryMib,
                PartitionSlots,
                LeaseSlots,
                EngineBytes,
                EngineWriteBytesPerS,
                FsyncIops,
                ReadAdmissionSlots,
                SessionSlots,
                ContinuitySlots,
                UpstreamRate,
                ProviderGlobalQuota
            }
        );
        $crate::__wit_enum_bridge!(
            $wit,
            scope,
            scope_to_wit,
            QuotaScope { Unit, Tenant, EngineGlobal, ProviderGlobal }
        );
        $crate::__wit_enum_bridge!($wit, mode, mode_to_wit, ContinuityMode { Stateless, SessionAffine, Externalized });
        $crate::__wit_enum_bridge!($wit, action, action_to_wit, ActionKind { ScaleUp, ScaleDown, Hold, Blocked });
        $crate::__wit_enum_bridge!(
            $wit,
            evidence_kind,
            evidence_kind_to_wit,
            EvidenceKind { Signal, Capacity, Quota, Continuity, Safety }
        );
        $crate::__wit_enum_bridge!(
            $wit,
            evidence_status,
            evidence_status_to_wit,
            EvidenceStatus { Accepted, Missing, Stale, Blocked }
        );
        $crate::__wit_enum_bridge!(
            $wit,
            reason,
            reason_to_wit,
            Reason {
                AtTarget,
                Cooldown,
                SignalMissing,
                SignalStale,
                SignalMismatch,
                CapacityMissing,
                CapacityStale,
                CapacityExhausted,
                EngineAuthoritySaturated,
                ProviderQuotaMissing,
                ProviderQuotaStale,
                ProviderQuotaExhausted,
                ProviderQuotaNotMultiplicative,
                QuotaMissing,
                QuotaStale,
                QuotaScopeMismatch,
                ContinuityMissing,
                ContinuityStale,
                ContinuityNotReady,
                ActiveSessionsBlockDrain,
                ScaleFromZeroDisabled,
                ScaleToZeroDisabled,
                DrainRequired,
                OverloadSheddingActive,
                NoisyNeighbor,
                PartitionLeaseMissing,
                InvalidBounds,
                TargetTracking
            }
        );
        $crate::__wit_enum_bridge!(
            $wit,
            error_code,
            error_code_to_wit,
            ErrorCode {
                InvalidJson,
                InvalidField,
                InvalidRef,
                CredentialInRef,
                InvalidDigest,
                InvalidTime,
                InvalidPolicy,
                InvalidContract,
                InvalidObservation,
                IdentityMismatch,
                DuplicateObservation,
                ReplicasOutOfBounds
            }
        );
        $crate::__wit_enum_bridge!($wit, change_kind, change_kind_to_wit, ChangeKind { Scale, BreakGlass });
        $crate::__wit_enum_bridge!(
            $wit,
            gate_reason,
            gate_reason_to_wit,
            GateReason {
                NoChange,
                WithinDecision,
                RecoveryTowardMin,
                RecoveryTowardMax,
                BreakGlass,
                DecisionBlocked,
                DecisionHold,
                WrongDirection,
                PastDesired,
                AwayFromBounds,
                PastBound,
                RequestInvalid
            }
        );
    };
}

/// One enum of [`wit_enum_bridges!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __wit_enum_bridge {
    ($wit:ident, $to_core:ident, $to_wit:ident, $name:ident { $($case:ident),+ $(,)? }) => {
        #[allow(dead_code, reason = "not every enum crosses in both directions")]
        pub(crate) fn $to_core(value: $wit::$name) -> $crate::$name {
            match value { $( $wit::$name::$case => $crate::$name::$case ),+ }
        }

        #[allow(dead_code, reason = "not every enum crosses in both directions")]
        pub(crate) fn $to_wit(value: $crate::$name) -> $wit::$name {
            match value { $( $crate::$name::$case => $wit::$name::$case ),+ }
        }
    };
}
