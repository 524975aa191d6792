// Written from wit/evaluator.wit's enums (snake_case is their JSON spelling).

package scaleunits

// SurfaceKind is a surface profile (SPEC §2): its JSON spelling, with String() and Known().
type SurfaceKind string

// The SurfaceKind values, in WIT order.
const (
	SurfaceIngestWorker   SurfaceKind = "ingest_worker"
	SurfaceDispatchWorker SurfaceKind = "dispatch_worker"
	SurfaceGraphosGateway SurfaceKind = "graphos_gateway"
	SurfaceMCPGateway     SurfaceKind = "mcp_gateway"
	SurfaceAPIGateway     SurfaceKind = "api_gateway"
	SurfaceQueryReader    SurfaceKind = "query_reader"
	SurfaceConnectorPool  SurfaceKind = "connector_pool"
	SurfaceMediaPool      SurfaceKind = "media_pool"
	SurfaceRLMPool        SurfaceKind = "rlm_pool"
)

// AllSurfaceKinds lists every SurfaceKind in WIT order.
var AllSurfaceKinds = []SurfaceKind{SurfaceIngestWorker, SurfaceDispatchWorker, SurfaceGraphosGateway, SurfaceMCPGateway, SurfaceAPIGateway, SurfaceQueryReader, SurfaceConnectorPool, SurfaceMediaPool, SurfaceRLMPool}

// String returns the JSON spelling.
func (v SurfaceKind) String() string { return string(v) }

// Known reports whether v is one of AllSurfaceKinds (a newer component may send others).
func (v SurfaceKind) Known() bool {
	switch v {
	case SurfaceIngestWorker, SurfaceDispatchWorker, SurfaceGraphosGateway, SurfaceMCPGateway, SurfaceAPIGateway, SurfaceQueryReader, SurfaceConnectorPool, SurfaceMediaPool, SurfaceRLMPool:
		return true
	}
	return false
}

// SignalKind is a scaling signal: its JSON spelling, with String() and Known().
type SignalKind string

// The SignalKind values, in WIT order.
const (
	SignalQueueDepth        SignalKind = "queue_depth"
	SignalConsumerLag       SignalKind = "consumer_lag"
	SignalBacklogAgeMS      SignalKind = "backlog_age_ms"
	SignalRequestRate       SignalKind = "request_rate"
	SignalInFlight          SignalKind = "in_flight"
	SignalP95LatencyMS      SignalKind = "p95_latency_ms"
	SignalErrorRatePPM      SignalKind = "error_rate_ppm"
	SignalActiveSessions    SignalKind = "active_sessions"
	SignalContinuityLoad    SignalKind = "continuity_load"
	SignalProviderInFlight  SignalKind = "provider_in_flight"
	SignalGPUUtilizationPPM SignalKind = "gpu_utilization_ppm"
)

// AllSignalKinds lists every SignalKind in WIT order.
var AllSignalKinds = []SignalKind{SignalQueueDepth, SignalConsumerLag, SignalBacklogAgeMS, SignalRequestRate, SignalInFlight, SignalP95LatencyMS, SignalErrorRatePPM, SignalActiveSessions, SignalContinuityLoad, SignalProviderInFlight, SignalGPUUtilizationPPM}

// String returns the JSON spelling.
func (v SignalKind) String() string { return string(v) }

// Known reports whether v is one of AllSignalKinds (a newer component may send others).
func (v SignalKind) Known() bool {
	switch v {
	case SignalQueueDepth, SignalConsumerLag, SignalBacklogAgeMS, SignalRequestRate, SignalInFlight, SignalP95LatencyMS, SignalErrorRatePPM, SignalActiveSessions, SignalContinuityLoad, SignalProviderInFlight, SignalGPUUtilizationPPM:
		return true
	}
	return false
}

// CapacityAxis is a capacity axis: its JSON spelling, with String() and Known().
type CapacityAxis string

// The CapacityAxis values, in WIT order.
const (
	AxisCPUMilli             CapacityAxis = "cpu_milli"
	AxisMemoryMiB            CapacityAxis = "memory_mib"
	AxisGPUCount             CapacityAxis = "gpu_count"
	AxisGPUMemoryMiB         CapacityAxis = "gpu_memory_mib"
	AxisPartitionSlots       CapacityAxis = "partition_slots"
	AxisLeaseSlots           CapacityAxis = "lease_slots"
	AxisEngineBytes          CapacityAxis = "engine_bytes"
	AxisEngineWriteBytesPerS CapacityAxis = "engine_write_bytes_per_s"
	AxisFsyncIOPS            CapacityAxis = "fsync_iops"
	AxisReadAdmissionSlots   CapacityAxis = "read_admission_slots"
	AxisSessionSlots         CapacityAxis = "session_slots"
	AxisContinuitySlots      CapacityAxis = "continuity_slots"
	AxisUpstreamRate         CapacityAxis = "upstream_rate"
	AxisProviderGlobalQuota  CapacityAxis = "provider_global_quota"
)

// AllCapacityAxiss lists every CapacityAxis in WIT order.
var AllCapacityAxiss = []CapacityAxis{AxisCPUMilli, AxisMemoryMiB, AxisGPUCount, AxisGPUMemoryMiB, AxisPartitionSlots, AxisLeaseSlots, AxisEngineBytes, AxisEngineWriteBytesPerS, AxisFsyncIOPS, AxisReadAdmissionSlots, AxisSessionSlots, AxisContinuitySlots, AxisUpstreamRate, AxisProviderGlobalQuota}

// String returns the JSON spelling.
func (v CapacityAxis) String() string { return string(v) }

// Known reports whether v is one of AllCapacityAxiss (a newer component may send others).
func (v CapacityAxis) Known() bool {
	switch v {
	case AxisCPUMilli, AxisMemoryMiB, AxisGPUCount, AxisGPUMemoryMiB, AxisPartitionSlots, AxisLeaseSlots, AxisEngineBytes, AxisEngineWriteBytesPerS, AxisFsyncIOPS, AxisReadAdmissionSlots, AxisSessionSlots, AxisContinuitySlots, AxisUpstreamRate, AxisProviderGlobalQuota:
		return true
	}
	return false
}

// QuotaScope is a quota's scope: its JSON spelling, with String() and Known().
type QuotaScope string

// The QuotaScope values, in WIT order.
const (
	ScopeUnit           QuotaScope = "unit"
	ScopeTenant         QuotaScope = "tenant"
	ScopeEngineGlobal   QuotaScope = "engine_global"
	ScopeProviderGlobal QuotaScope = "provider_global"
)

// AllQuotaScopes lists every QuotaScope in WIT order.
var AllQuotaScopes = []QuotaScope{ScopeUnit, ScopeTenant, ScopeEngineGlobal, ScopeProviderGlobal}

// String returns the JSON spelling.
func (v QuotaScope) String() string { return string(v) }

// Known reports whether v is one of AllQuotaScopes (a newer component may send others).
func (v QuotaScope) Known() bool {
	switch v {
	case ScopeUnit, ScopeTenant, ScopeEngineGlobal, ScopeProviderGlobal:
		return true
	}
	return false
}

// ContinuityMode is a continuity mode: its JSON spelling, with String() and Known().
type ContinuityMode string

// The ContinuityMode values, in WIT order.
const (
	ContinuityStateless     ContinuityMode = "stateless"
	ContinuitySessionAffine ContinuityMode = "session_affine"
	ContinuityExternalized  ContinuityMode = "externalized"
)

// AllContinuityModes lists every ContinuityMode in WIT order.
var AllContinuityModes = []ContinuityMode{ContinuityStateless, ContinuitySessionAffine, ContinuityExternalized}

// String returns the JSON spelling.
func (v ContinuityMode) String() string { return string(v) }

// Known reports whether v is one of AllContinuityModes (a newer component may send others).
func (v ContinuityMode) Known() bool {
	switch v {
	case ContinuityStateless, ContinuitySessionAffine, ContinuityExternalized:
		return true
	}
	return false
}

// Action is a decision's action: its JSON spelling, with String() and Known().
type Action string

// The Action values, in WIT order.
const (
	ActionScaleUp   Action = "scale_up"
	ActionScaleDown Action = "scale_down"
	ActionHold      Action = "hold"
	ActionBlocked   Action = "blocked"
)

// AllActions lists every Action in WIT order.
var AllActions = []Action{ActionScaleUp, ActionScaleDown, ActionHold, ActionBlocked}

// String returns the JSON spelling.
func (v Action) String() string { return string(v) }

// Known reports whether v is one of AllActions (a newer component may send others).
func (v Action) Known() bool {
	switch v {
	case ActionScaleUp, ActionScaleDown, ActionHold, ActionBlocked:
		return true
	}
	return false
}

// EvidenceKind is what an evidence entry is about: its JSON spelling, with String() and Known().
type EvidenceKind string

// The EvidenceKind values, in WIT order.
const (
	EvidenceSignal     EvidenceKind = "signal"
	EvidenceCapacity   EvidenceKind = "capacity"
	EvidenceQuota      EvidenceKind = "quota"
	EvidenceContinuity EvidenceKind = "continuity"
	EvidenceSafety     EvidenceKind = "safety"
)

// AllEvidenceKinds lists every EvidenceKind in WIT order.
var AllEvidenceKinds = []EvidenceKind{EvidenceSignal, EvidenceCapacity, EvidenceQuota, EvidenceContinuity, EvidenceSafety}

// String returns the JSON spelling.
func (v EvidenceKind) String() string { return string(v) }

// Known reports whether v is one of AllEvidenceKinds (a newer component may send others).
func (v EvidenceKind) Known() bool {
	switch v {
	case EvidenceSignal, EvidenceCapacity, EvidenceQuota, EvidenceContinuity, EvidenceSafety:
		return true
	}
	return false
}

// EvidenceStatus is an evidence entry's verdict: its JSON spelling, with String() and Known().
type EvidenceStatus string

// The EvidenceStatus values, in WIT order.
const (
	StatusAccepted EvidenceStatus = "accepted"
	StatusMissing  EvidenceStatus = "missing"
	StatusStale    EvidenceStatus = "stale"
	StatusBlocked  EvidenceStatus = "blocked"
)

// AllEvidenceStatuss lists every EvidenceStatus in WIT order.
var AllEvidenceStatuss = []EvidenceStatus{StatusAccepted, StatusMissing, StatusStale, StatusBlocked}

// String returns the JSON spelling.
func (v EvidenceStatus) String() string { return string(v) }

// Known reports whether v is one of AllEvidenceStatuss (a newer component may send others).
func (v EvidenceStatus) Known() bool {
	switch v {
	case StatusAccepted, StatusMissing, StatusStale, StatusBlocked:
		return true
	}
	return false
}

// Reason is why a decision is what it is (SPEC §2): its JSON spelling, with String() and Known().
type Reason string

// The Reason values, in WIT order.
const (
	ReasonAtTarget                       Reason = "at_target"
	ReasonCooldown                       Reason = "cooldown"
	ReasonSignalMissing                  Reason = "signal_missing"
	ReasonSignalStale                    Reason = "signal_stale"
	ReasonSignalMismatch                 Reason = "signal_mismatch"
	ReasonCapacityMissing                Reason = "capacity_missing"
	ReasonCapacityStale                  Reason = "capacity_stale"
	ReasonCapacityExhausted              Reason = "capacity_exhausted"
	ReasonEngineAuthoritySaturated       Reason = "engine_authority_saturated"
	ReasonProviderQuotaMissing           Reason = "provider_quota_missing"
	ReasonProviderQuotaStale             Reason = "provider_quota_stale"
	ReasonProviderQuotaExhausted         Reason = "provider_quota_exhausted"
	ReasonProviderQuotaNotMultiplicative Reason = "provider_quota_not_multiplicative"
	ReasonQuotaMissing                   Reason = "quota_missing"
	ReasonQuotaStale                     Reason = "quota_stale"
	ReasonQuotaScopeMismatch             Reason = "quota_scope_mismatch"
	ReasonContinuityMissing              Reason = "continuity_missing"
	ReasonContinuityStale                Reason = "continuity_stale"
	ReasonContinuityNotReady             Reason = "continuity_not_ready"
	ReasonActiveSessionsBlockDrain       Reason = "active_sessions_block_drain"
	ReasonScaleFromZeroDisabled          Reason = "scale_from_zero_disabled"
	ReasonScaleToZeroDisabled            Reason = "scale_to_zero_disabled"
	ReasonDrainRequired                  Reason = "drain_required"
	ReasonOverloadSheddingActive         Reason = "overload_shedding_active"
	ReasonNoisyNeighbor                  Reason = "noisy_neighbor"
	ReasonPartitionLeaseMissing          Reason = "partition_lease_missing"
	ReasonInvalidBounds                  Reason = "invalid_bounds"
	ReasonTargetTracking                 Reason = "target_tracking"
)

// AllReasons lists every Reason in WIT order.
var AllReasons = []Reason{ReasonAtTarget, ReasonCooldown, ReasonSignalMissing, ReasonSignalStale, ReasonSignalMismatch, ReasonCapacityMissing, ReasonCapacityStale, ReasonCapacityExhausted, ReasonEngineAuthoritySaturated, ReasonProviderQuotaMissing, ReasonProviderQuotaStale, ReasonProviderQuotaExhausted, ReasonProviderQuotaNotMultiplicative, ReasonQuotaMissing, ReasonQuotaStale, ReasonQuotaScopeMismatch, ReasonContinuityMissing, ReasonContinuityStale, ReasonContinuityNotReady, ReasonActiveSessionsBlockDrain, ReasonScaleFromZeroDisabled, ReasonScaleToZeroDisabled, ReasonDrainRequired, ReasonOverloadSheddingActive, ReasonNoisyNeighbor, ReasonPartitionLeaseMissing, ReasonInvalidBounds, ReasonTargetTracking}

// String returns the JSON spelling.
func (v Reason) String() string { return string(v) }

// Known reports whether v is one of AllReasons (a newer component may send others).
func (v Reason) Known() bool {
	switch v {
	case ReasonAtTarget, ReasonCooldown, ReasonSignalMissing, ReasonSignalStale, ReasonSignalMismatch, ReasonCapacityMissing, ReasonCapacityStale, ReasonCapacityExhausted, ReasonEngineAuthoritySaturated, ReasonProviderQuotaMissing, ReasonProviderQuotaStale, ReasonProviderQuotaExhausted, ReasonProviderQuotaNotMultiplicative, ReasonQuotaMissing, ReasonQuotaStale, ReasonQuotaScopeMismatch, ReasonContinuityMissing, ReasonContinuityStale, ReasonContinuityNotReady, ReasonActiveSessionsBlockDrain, ReasonScaleFromZeroDisabled, ReasonScaleToZeroDisabled, ReasonDrainRequired, ReasonOverloadSheddingActive, ReasonNoisyNeighbor, ReasonPartitionLeaseMissing, ReasonInvalidBounds, ReasonTargetTracking:
		return true
	}
	return false
}

// ErrorCode is the code of an evaluation error (SPEC §9): its JSON spelling, with String() and Known().
type ErrorCode string

// The ErrorCode values, in WIT order.
const (
	CodeInvalidJSON          ErrorCode = "invalid_json"
	CodeInvalidField         ErrorCode = "invalid_field"
	CodeInvalidRef           ErrorCode = "invalid_ref"
	CodeCredentialInRef      ErrorCode = "credential_in_ref"
	CodeInvalidDigest        ErrorCode = "invalid_digest"
	CodeInvalidTime          ErrorCode = "invalid_time"
	CodeInvalidPolicy        ErrorCode = "invalid_policy"
	CodeInvalidContract      ErrorCode = "invalid_contract"
	CodeInvalidObservation   ErrorCode = "invalid_observation"
	CodeIdentityMismatch     ErrorCode = "identity_mismatch"
	CodeDuplicateObservation ErrorCode = "duplicate_observation"
	CodeReplicasOutOfBounds  ErrorCode = "replicas_out_of_bounds"
)

// AllErrorCodes lists every ErrorCode in WIT order.
var AllErrorCodes = []ErrorCode{CodeInvalidJSON, CodeInvalidField, CodeInvalidRef, CodeCredentialInRef, CodeInvalidDigest, CodeInvalidTime, CodeInvalidPolicy, CodeInvalidContract, CodeInvalidObservation, CodeIdentityMismatch, CodeDuplicateObservation, CodeReplicasOutOfBounds}

// String returns the JSON spelling.
func (v ErrorCode) String() string { return string(v) }

// Known reports whether v is one of AllErrorCodes (a newer component may send others).
func (v ErrorCode) Known() bool {
	switch v {
	case CodeInvalidJSON, CodeInvalidField, CodeInvalidRef, CodeCredentialInRef, CodeInvalidDigest, CodeInvalidTime, CodeInvalidPolicy, CodeInvalidContract, CodeInvalidObservation, CodeIdentityMismatch, CodeDuplicateObservation, CodeReplicasOutOfBounds:
		return true
	}
	return false
}
