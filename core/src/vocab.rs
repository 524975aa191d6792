//! The closed vocabularies of SPEC §2, with their wire spellings, and the surface profiles of §4.3.

macro_rules! wire_enum {
    (
        @expand $(#[$meta:meta])* $name:ident $first:ident
        { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $crate::vocab::Word for $name {
            const FIRST: Self = Self::$first;
            const WORDS: &'static [Self] = Self::ALL;
            const SPELLINGS: &'static [&'static str] = &[ $( $wire ),+ ];
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[ $( Self::$variant ),+ ];

            /// The wire spelling (lower `snake_case`).
            pub const fn as_str(self) -> &'static str {
                match self { $( Self::$variant => $wire ),+ }
            }

            /// Parses a wire spelling; `None` for anything outside the vocabulary.
            pub fn parse(text: &str) -> Option<Self> {
                match text { $( $wire => Some(Self::$variant), )+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": [ $( $wire ),+ ] })
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format_args!(
                        "unknown {} `{}`", stringify!($name), text
                    ))
                })
            }
        }
    };
    (
        $(#[$meta:meta])*
        $name:ident {
            $(#[$fmeta:meta])* $first:ident = $fwire:literal
            $(, $(#[$vmeta:meta])* $variant:ident = $wire:literal )* $(,)?
        }
    ) => {
        $crate::vocab::wire_enum! {
            @expand $(#[$meta])* $name $first { $(#[$fmeta])* $first = $fwire $(, $(#[$vmeta])* $variant = $wire )* }
        }
    };
}

pub(crate) use wire_enum;

/// A closed vocabulary, for the readers and hints that work on any of them.
pub(crate) trait Word: Copy + 'static {
    /// The first word: what stands in for an unreadable one while collecting.
    const FIRST: Self;
    /// Every word, in declaration order.
    const WORDS: &'static [Self];
    /// The wire spelling of each word, in the same order.
    const SPELLINGS: &'static [&'static str];
}

wire_enum! {
    /// The kind of service surface a contract scales (SPEC §2, §4.3).
    SurfaceKind {
        /// A worker that ingests into the engine (partitioned, leased).
        IngestWorker = "ingest_worker",
        /// A worker that dispatches work (partitioned, leased).
        DispatchWorker = "dispatch_worker",
        /// A gateway in front of the graph engine.
        GraphosGateway = "graphos_gateway",
        /// An MCP gateway bound by a provider-global quota.
        McpGateway = "mcp_gateway",
        /// A plain API gateway.
        ApiGateway = "api_gateway",
        /// A query reader bound by engine authority.
        QueryReader = "query_reader",
        /// A pool of connectors to an upstream provider.
        ConnectorPool = "connector_pool",
        /// A GPU media pool.
        MediaPool = "media_pool",
        /// A GPU pool serving recursive language models.
        RlmPool = "rlm_pool",
    }
}

wire_enum! {
    /// The demand signal a policy tracks (SPEC §2). Units live in the names.
    SignalKind {
        /// Messages waiting in a queue.
        QueueDepth = "queue_depth",
        /// Consumer lag, in messages.
        ConsumerLag = "consumer_lag",
        /// Age of the oldest backlog item, in milliseconds.
        BacklogAgeMs = "backlog_age_ms",
        /// Requests per second.
        RequestRate = "request_rate",
        /// Requests in flight.
        InFlight = "in_flight",
        /// 95th percentile latency, in milliseconds.
        P95LatencyMs = "p95_latency_ms",
        /// Error rate, in parts per million.
        ErrorRatePpm = "error_rate_ppm",
        /// Active sessions.
        ActiveSessions = "active_sessions",
        /// Continuity load.
        ContinuityLoad = "continuity_load",
        /// Requests in flight at the upstream provider.
        ProviderInFlight = "provider_in_flight",
        /// GPU utilisation, in parts per million.
        GpuUtilizationPpm = "gpu_utilization_ppm",
    }
}

wire_enum! {
    /// A hard capacity axis that each replica consumes (SPEC §2).
    CapacityAxis {
        /// CPU, in millicores.
        CpuMilli = "cpu_milli",
        /// Memory, in MiB.
        MemoryMib = "memory_mib",
        /// Whole GPUs.
        GpuCount = "gpu_count",
        /// GPU memory, in MiB.
        GpuMemoryMib = "gpu_memory_mib",
        /// Partition slots.
        PartitionSlots = "partition_slots",
        /// Lease slots.
        LeaseSlots = "lease_slots",
        /// Engine bytes.
        EngineBytes = "engine_bytes",
        /// Engine write bandwidth, in bytes per second.
        EngineWriteBytesPerS = "engine_write_bytes_per_s",
        /// fsync operations per second.
        FsyncIops = "fsync_iops",
        /// Read-admission slots.
        ReadAdmissionSlots = "read_admission_slots",
        /// Session slots.
        SessionSlots = "session_slots",
        /// Continuity slots.
        ContinuitySlots = "continuity_slots",
        /// Upstream request rate.
        UpstreamRate = "upstream_rate",
        /// A provider-global quota.
        ProviderGlobalQuota = "provider_global_quota",
    }
}

wire_enum! {
    /// Who shares a quota (SPEC §2).
    QuotaScope {
        /// This unit alone.
        Unit = "unit",
        /// Every unit of one tenant.
        Tenant = "tenant",
        /// Every user of one engine.
        EngineGlobal = "engine_global",
        /// Every user of one upstream provider: never multiplied by replicas.
        ProviderGlobal = "provider_global",
    }
}

wire_enum! {
    /// Where a surface keeps session state (SPEC §2).
    ContinuityMode {
        /// No session state.
        Stateless = "stateless",
        /// Sessions stick to a replica.
        SessionAffine = "session_affine",
        /// Sessions live in an external store.
        Externalized = "externalized",
    }
}

wire_enum! {
    /// What a decision tells the actuator to do (SPEC §2).
    ActionKind {
        /// Add replicas up to `desired_replicas`.
        ScaleUp = "scale_up",
        /// Remove replicas down to `desired_replicas`.
        ScaleDown = "scale_down",
        /// Keep the current count.
        Hold = "hold",
        /// Do not act: evidence is missing, stale or unsafe, or a gate refused.
        Blocked = "blocked",
    }
}

wire_enum! {
    /// The kind of an evidence entry (SPEC §2).
    EvidenceKind {
        /// The demand signal.
        Signal = "signal",
        /// A capacity axis.
        Capacity = "capacity",
        /// A quota binding.
        Quota = "quota",
        /// Continuity readiness.
        Continuity = "continuity",
        /// Load safety.
        Safety = "safety",
    }
}

wire_enum! {
    /// How the evaluator judged one piece of evidence (SPEC §2).
    EvidenceStatus {
        /// Fresh and usable.
        Accepted = "accepted",
        /// Not supplied.
        Missing = "missing",
        /// Outside its freshness window.
        Stale = "stale",
        /// Supplied but unusable (mismatched or not ready).
        Blocked = "blocked",
    }
}

wire_enum! {
    /// Why a decision came out as it did (SPEC §2 `DecisionReason`).
    Reason {
        /// The clamped target equals the current count.
        AtTarget = "at_target",
        /// A cooldown has not elapsed, or the last action lies in the future.
        Cooldown = "cooldown",
        /// No signal observation.
        SignalMissing = "signal_missing",
        /// The signal observation is not fresh.
        SignalStale = "signal_stale",
        /// The signal observed is not the policy's target signal.
        SignalMismatch = "signal_mismatch",
        /// A required capacity axis has no observation.
        CapacityMissing = "capacity_missing",
        /// A capacity observation is not fresh.
        CapacityStale = "capacity_stale",
        /// The added replicas do not fit the available capacity or a local quota.
        CapacityExhausted = "capacity_exhausted",
        /// An engine authority axis has nothing available.
        EngineAuthoritySaturated = "engine_authority_saturated",
        /// A provider-global quota has no observation.
        ProviderQuotaMissing = "provider_quota_missing",
        /// A provider-global quota observation is not fresh.
        ProviderQuotaStale = "provider_quota_stale",
        /// The provider-global quota cannot take the added replicas.
        ProviderQuotaExhausted = "provider_quota_exhausted",
        /// A provider-global binding claims to multiply with replicas.
        ProviderQuotaNotMultiplicative = "provider_quota_not_multiplicative",
        /// A local quota has no observation.
        QuotaMissing = "quota_missing",
        /// A local quota observation is not fresh.
        QuotaStale = "quota_stale",
        /// A quota observation's scope differs from its binding's.
        QuotaScopeMismatch = "quota_scope_mismatch",
        /// No continuity observation for a stateful surface.
        ContinuityMissing = "continuity_missing",
        /// The continuity observation is not fresh.
        ContinuityStale = "continuity_stale",
        /// The continuity store is not ready.
        ContinuityNotReady = "continuity_not_ready",
        /// Active sessions or streams block a scale-down.
        ActiveSessionsBlockDrain = "active_sessions_block_drain",
        /// The unit is at zero and may not start from zero.
        ScaleFromZeroDisabled = "scale_from_zero_disabled",
        /// The unit may not scale to zero.
        ScaleToZeroDisabled = "scale_to_zero_disabled",
        /// The drain would take longer than the continuity bound allows.
        DrainRequired = "drain_required",
        /// Safety evidence is missing, stale, or reports overload shedding.
        OverloadSheddingActive = "overload_shedding_active",
        /// Safety evidence reports a noisy neighbour.
        NoisyNeighbor = "noisy_neighbor",
        /// A partition lease is missing (reserved by schema 1; never produced).
        PartitionLeaseMissing = "partition_lease_missing",
        /// A blocked decision carried no reason (unreachable; a safety net).
        InvalidBounds = "invalid_bounds",
        /// The decision follows target tracking.
        TargetTracking = "target_tracking",
    }
}

/// The static profile of a surface (SPEC §4.3): what a contract for it may and must declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurfaceProfile {
    /// Signals a contract may allow (and track).
    pub allowed_signals: &'static [SignalKind],
    /// Capacity axes a contract must declare as hard axes.
    pub required_capacity_axes: &'static [CapacityAxis],
    /// Axes whose exhaustion means the engine, not the front end, is the bottleneck.
    pub engine_authority_axes: &'static [CapacityAxis],
    /// Continuity modes the surface supports.
    pub continuity_modes: &'static [ContinuityMode],
    /// Whether the surface needs partitions and a fenced lease.
    pub partition_and_fenced_lease: bool,
    /// Axes a provider-global quota binding may use; empty when none is required.
    pub provider_quota_axes: &'static [CapacityAxis],
}

impl SurfaceKind {
    /// The surface's static profile (SPEC §4.3).
    pub const fn profile(self) -> SurfaceProfile {
        use CapacityAxis as A;
        use ContinuityMode as M;
        use SignalKind as S;
        const STATELESS_OR_EXTERNAL: &[ContinuityMode] = &[M::Stateless, M::Externalized];
        const AFFINE_OR_EXTERNAL: &[ContinuityMode] = &[M::SessionAffine, M::Externalized];
        const ENGINE_READ: &[CapacityAxis] = &[A::ReadAdmissionSlots, A::EngineBytes, A::FsyncIops];
        const GPU: &[CapacityAxis] = &[A::CpuMilli, A::MemoryMib, A::GpuCount, A::GpuMemoryMib];
        match self {
            Self::IngestWorker => SurfaceProfile {
                allowed_signals: &[S::QueueDepth, S::ConsumerLag, S::BacklogAgeMs, S::P95LatencyMs],
                required_capacity_axes: &[
                    A::CpuMilli,
                    A::MemoryMib,
                    A::PartitionSlots,
                    A::LeaseSlots,
                    A::EngineWriteBytesPerS,
                    A::FsyncIops,
                ],
                engine_authority_axes: &[A::EngineWriteBytesPerS, A::FsyncIops],
                continuity_modes: STATELESS_OR_EXTERNAL,
                partition_and_fenced_lease: true,
                provider_quota_axes: &[],
            },
            Self::DispatchWorker => SurfaceProfile {
                allowed_signals: &[S::QueueDepth, S::ConsumerLag, S::ActiveSessions, S::P95LatencyMs],
                required_capacity_axes: &[A::CpuMilli, A::MemoryMib, A::PartitionSlots, A::LeaseSlots],
                engine_authority_axes: &[],
                continuity_modes: STATELESS_OR_EXTERNAL,
                partition_and_fenced_lease: true,
                provider_quota_axes: &[],
            },
            Self::GraphosGateway => SurfaceProfile {
                allowed_signals: &[S::RequestRate, S::InFlight, S::P95LatencyMs, S::ErrorRatePpm],
                required_capacity_axes: &[
                    A::CpuMilli,
                    A::MemoryMib,
                    A::SessionSlots,
                    A::ReadAdmissionSlots,
                    A::EngineBytes,
                    A::FsyncIops,
                ],
                engine_authority_axes: ENGINE_READ,
                continuity_modes: AFFINE_OR_EXTERNAL,
                partition_and_fenced_lease: false,
                provider_quota_axes: &[],
            },
            Self::McpGateway => SurfaceProfile {
                allowed_signals: &[
                    S::RequestRate,
                    S::InFlight,
                    S::P95LatencyMs,
                    S::ActiveSessions,
                    S::ContinuityLoad,
                    S::ProviderInFlight,
                    S::ErrorRatePpm,
                ],
                required_capacity_axes: &[A::CpuMilli, A::MemoryMib, A::SessionSlots, A::ContinuitySlots],
                engine_authority_axes: &[],
                continuity_modes: AFFINE_OR_EXTERNAL,
                partition_and_fenced_lease: false,
                provider_quota_axes: &[A::ProviderGlobalQuota],
            },
            Self::ApiGateway => SurfaceProfile {
                allowed_signals: &[S::RequestRate, S::InFlight, S::P95LatencyMs, S::ErrorRatePpm],
                required_capacity_axes: &[A::CpuMilli, A::MemoryMib, A::SessionSlots],
                engine_authority_axes: &[],
                continuity_modes: STATELESS_OR_EXTERNAL,
                partition_and_fenced_lease: false,
                provider_quota_axes: &[],
            },
            Self::QueryReader => SurfaceProfile {
                allowed_signals: &[S::RequestRate, S::InFlight, S::P95LatencyMs, S::ErrorRatePpm],
                required_capacity_axes: &[
                    A::CpuMilli,
                    A::MemoryMib,
                    A::ReadAdmissionSlots,
                    A::EngineBytes,
                    A::FsyncIops,
                ],
                engine_authority_axes: ENGINE_READ,
                continuity_modes: STATELESS_OR_EXTERNAL,
                partition_and_fenced_lease: false,
                provider_quota_axes: &[],
            },
            Self::ConnectorPool => SurfaceProfile {
                allowed_signals: &[
                    S::QueueDepth,
                    S::ConsumerLag,
                    S::RequestRate,
                    S::ProviderInFlight,
                    S::P95LatencyMs,
                    S::ErrorRatePpm,
                ],
                required_capacity_axes: &[A::CpuMilli, A::MemoryMib, A::UpstreamRate],
                engine_authority_axes: &[],
                continuity_modes: STATELESS_OR_EXTERNAL,
                partition_and_fenced_lease: false,
                provider_quota_axes: &[A::UpstreamRate, A::ProviderGlobalQuota],
            },
            Self::MediaPool => SurfaceProfile {
                allowed_signals: &[S::QueueDepth, S::RequestRate, S::GpuUtilizationPpm, S::P95LatencyMs],
                required_capacity_axes: GPU,
                engine_authority_axes: &[],
                continuity_modes: STATELESS_OR_EXTERNAL,
                partition_and_fenced_lease: false,
                provider_quota_axes: &[],
            },
            Self::RlmPool => SurfaceProfile {
                allowed_signals: &[S::QueueDepth, S::RequestRate, S::GpuUtilizationPpm, S::ActiveSessions],
                required_capacity_axes: GPU,
                engine_authority_axes: &[],
                continuity_modes: STATELESS_OR_EXTERNAL,
                partition_and_fenced_lease: false,
                provider_quota_axes: &[],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        ActionKind, CapacityAxis, ContinuityMode, EvidenceKind, EvidenceStatus, QuotaScope, Reason, SignalKind,
        SurfaceKind, Word,
    };

    /// The readers look a word up by its index in `SPELLINGS` and take `WORDS` at that index.
    fn spelled_in_order<T: Word + PartialEq + std::fmt::Debug>(
        as_str: fn(T) -> &'static str,
        parse: fn(&str) -> Option<T>,
    ) {
        assert_eq!(T::SPELLINGS.len(), T::WORDS.len());
        for (&word, &spelling) in T::WORDS.iter().zip(T::SPELLINGS) {
            assert_eq!(as_str(word), spelling);
            assert_eq!(parse(spelling), Some(word));
        }
        assert_eq!(T::WORDS.first(), Some(&T::FIRST));
    }

    #[test]
    fn every_vocabulary_spells_its_words_in_order() {
        spelled_in_order(SurfaceKind::as_str, SurfaceKind::parse);
        spelled_in_order(SignalKind::as_str, SignalKind::parse);
        spelled_in_order(CapacityAxis::as_str, CapacityAxis::parse);
        spelled_in_order(QuotaScope::as_str, QuotaScope::parse);
        spelled_in_order(ContinuityMode::as_str, ContinuityMode::parse);
        spelled_in_order(ActionKind::as_str, ActionKind::parse);
        spelled_in_order(EvidenceKind::as_str, EvidenceKind::parse);
        spelled_in_order(EvidenceStatus::as_str, EvidenceStatus::parse);
        spelled_in_order(Reason::as_str, Reason::parse);
    }
}
