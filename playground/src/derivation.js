// The derivation (bindings-js `derive`, WIT 0.2.0) as lines a person reads next to the decision:
// the target arithmetic, the bounds, the step cap and each gate with its numbers. Every number is
// the component's; this file only words them (as the core's `Derivation::to_text` does for the
// CLI). Integers past 2^53 arrive as BigInt and print exactly.

const seconds = (us) => {
  const micros = BigInt(us);
  const whole = micros / 1_000_000n;
  const fraction = micros % 1_000_000n;
  return fraction === 0n ? `${whole}` : `${whole}.${String(fraction).padStart(6, '0').replace(/0+$/, '')}`;
};
const passes = (fired, outcome) => (fired ? outcome : 'passes');

/** The derivation's steps: `[{step, text}]` in evaluation order, ending with the decision. */
export function derivationLines(d) {
  const lines = [];
  const add = (step, text) => lines.push({ step, text });
  for (const v of d.evidence) {
    if (v.status === 'accepted') continue;
    let text = `${v.kind} ${v.ref}: ${v.status} (${v.code})`;
    if (v.mismatch) text += `: found ${v.mismatch.found}, expected ${v.mismatch.expected}`;
    if (v.status === 'stale') text += `: now ${d.evaluated_at} outside [${v.observed_at}, ${v.expires_at})`;
    add('evidence', text);
  }
  for (const c of d.checks) {
    const words = {
      continuity_stale: () => `continuity observation not fresh: [${c.observed_at}, ${c.expires_at})`,
      overloaded: () => `safety reports overloaded (reason_ref ${c.reason_ref ?? 'none'})`,
      noisy_neighbor: () => `safety reports a noisy neighbor (reason_ref ${c.reason_ref ?? 'none'})`,
      last_action_in_future: () => `last_action_at ${c.last_action_at} is ${seconds(c.ahead_us)} s after now`,
    }[c.check];
    add('check', words ? words() : c.check);
  }
  const t = d.target;
  if (t) {
    add('target', `ceil(${t.value} / ${t.target}) = ${t.ceil}`);
    let bounds = `[${t.floor}, ${t.max_replicas}]`;
    if (t.floor !== t.min_replicas) bounds += ` (min_replicas ${t.min_replicas} raised to 1)`;
    if (t.clamp === 'max_replicas') bounds += `: ${t.ceil} lowered to max_replicas ${t.raw}`;
    if (t.clamp === 'floor') bounds += `: ${t.ceil} raised to the floor ${t.raw}`;
    add('bounds', bounds);
    if (!t.step) add('at target', `${t.raw} = current ${d.current_replicas}`);
    else {
      const sign = t.step.name === 'scale_up_step' ? '+' : '-';
      const sum = `${d.current_replicas} ${sign} ${t.step.name} ${t.step.size} = ${t.step.limit}`;
      add('step cap', t.step.capped ? `${sum} (from ${t.raw})` : `${sum}, not capped (${t.raw})`);
    }
  }
  for (const g of d.gates) {
    switch (g.gate) {
      case 'scale_from_zero':
        add('scale from zero', `allow_scale_from_zero ${g.allow_scale_from_zero}: ${passes(g.fired, 'blocked')}`);
        break;
      case 'scale_to_zero':
        add('scale to zero', `0 raised to max(1, min_replicas ${g.min_replicas}) = ${g.desired}: ${passes(g.fired, 'hold')}`);
        break;
      case 'active_sessions':
        add(
          'active sessions',
          g.active_sessions === null
            ? 'no continuity observation: passes'
            : `${g.active_sessions} sessions + ${g.active_streams} streams, block_scale_down_with_active ${g.block_scale_down_with_active}: ${passes(g.fired, 'blocked, drain required')}`,
        );
        break;
      case 'cooldown':
        add(
          'cooldown',
          `${g.cooldown} ${g.cooldown_s} s, last action ${g.last_action_at}, ${seconds(g.elapsed_us)} s elapsed` +
            (g.fired ? `, ${seconds(g.remaining_us)} s left: hold` : ': passes'),
        );
        break;
      case 'growth':
        add('growth', `${g.additional} more replicas: ${passes(g.fired, 'blocked')}`);
        for (const c of g.capacity) {
          const head = `${g.additional} × ${c.per_replica} = ${c.needed} needed`;
          if (c.status === 'missing') add(`capacity ${c.axis}`, `${head}, no observation (capacity_missing)`);
          else if (c.status === 'stale') add(`capacity ${c.axis}`, `${head}, observation not fresh (capacity_stale)`);
          else {
            const short = c.status === 'exhausted' ? `: short by ${c.shortfall} (capacity_exhausted)` : '';
            add(`capacity ${c.axis}`, `${head}, ${c.available} available (${c.allocatable} allocatable - ${c.reserved} reserved)${short}`);
          }
        }
        if (g.provider_quota_at_limit) add('quota at limit', 'a provider-global quota has used >= limit (provider_quota_exhausted)');
        if (g.local_quota_at_limit) add('quota at limit', 'a local quota has used >= limit (capacity_exhausted)');
        for (const q of g.quotas) {
          const over = q.over ? `: over (${q.scope === 'provider_global' ? 'provider_quota_exhausted' : 'capacity_exhausted'})` : '';
          add(`quota ${q.quota_ref}`, `${q.scope}: ${q.used} used + ${g.additional} × ${q.per_replica} = ${q.projected}, limit ${q.limit}${over}`);
        }
        for (const e of g.engine_authority) {
          add(`engine ${e.axis}`, `${e.available} available (${e.allocatable} - ${e.reserved})${e.saturated ? ': saturated (engine_authority_saturated)' : ''}`);
        }
        break;
      case 'drain_bound':
        add(
          'drain bound',
          !g.drain_required
            ? 'continuity.drain_required false, no drain'
            : `drain_seconds ${g.drain_seconds} ${g.fired ? '>' : '<='} max_drain_seconds ${g.max_drain_seconds}${g.fired ? ': blocked, drain required' : ', drain required'}`,
        );
        break;
      default:
        add(g.gate, g.fired ? 'fired' : 'passes');
    }
  }
  const moved = d.action === 'scale_up' || d.action === 'scale_down';
  add(
    'decision',
    `${d.action} ${moved ? `${d.current_replicas} → ${d.desired_replicas}` : `at ${d.current_replicas}`} (${d.reasons.join(', ')})${d.drain_required ? ', drain required' : ''}`,
  );
  return lines;
}
