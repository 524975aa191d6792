// End-to-end: the built site (dist/) served below a sub-folder, as a static host would, driven in
// headless Chromium, at 1280 px and at 390 px (a phone), in a local time zone far from UTC.
// Screenshots go to $PLAYGROUND_SCREENSHOTS (default target/playground-screenshots/).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServer } from '../scripts/serve.mjs';
import { encodeState } from '../src/share.js';
import { parseText } from '../src/wire.js';
import { launch } from './browser.mjs';
// The Node entry of the same bindings-js the site bundles: the core's words to compare with.
import { derivationText } from '../../bindings-js/src/node.js';

const here = dirname(fileURLToPath(import.meta.url));
const DIST = resolve(here, '../dist');
const SHOTS = resolve(process.env.PLAYGROUND_SCREENSHOTS ?? join(here, '../../target/playground-screenshots'));
const TIMEOUT = 15_000;
const WIDTHS = [1280, 390];
// Local time 5 h 30 min ahead of UTC: a time axis drawn in local time would read 17:30, not 12:00.
const TIME_ZONE = 'Asia/Kolkata';
const REASONS = JSON.parse(readFileSync(resolve(here, '../../schema/decision.schema.json'), 'utf8')).$defs.Reason.enum;

let server;
let browser;
let page;
const pageErrors = [];

/** Opens `url` at `width`; the playground itself (`app`) is waited for until it is ready. */
async function open(url, width = 1280, { app = true } = {}) {
  const p = await browser.context.newPage();
  p.setDefaultTimeout(TIMEOUT);
  p.on('pageerror', (error) => pageErrors.push(`${width}px: ${error.message}`));
  p.on('console', (message) => message.type() === 'error' && pageErrors.push(`${width}px: ${message.text()}`));
  await p.setViewportSize({ width, height: 900 });
  await p.goto(url);
  if (app) await p.waitForSelector('body[data-ready="true"]');
  return p;
}
const openDoc = (url, width = 1280) => open(url, width, { app: false });

const shot = (p, name) => p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const verdict = (p, action) => p.waitForSelector(`[data-testid="verdict"][data-action="${action}"]`);
const reasons = (p) => p.$$eval('#reasons li', (items) => items.map((li) => li.dataset.reason));
const decisionId = (p) => p.textContent('[data-field="decision_id"]');

/** What a slider must come back to: the request as a value (either format) and the decision's id. */
async function requestState(p) {
  const text = await p.inputValue('#text-request');
  const format = await p.getAttribute('#editor-request button[aria-pressed="true"]', 'data-format');
  return { request: parseText(text, format).value, text, id: await p.textContent('[data-field="decision_id"]').catch(() => null) };
}

/** Waits until the request differs from `state` (`same` false) or equals it again, id included. */
async function waitForRequest(p, state, same, what) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    const now = await requestState(p);
    let equal = now.id === state.id;
    try {
      assert.deepEqual(now.request, state.request);
    } catch {
      equal = false;
    }
    if (equal === same) return now;
    if (Date.now() > deadline) assert.fail(`${what}: the request ${same ? 'did not come back' : 'did not change'}\n${now.text}`);
    await p.waitForTimeout(25);
  }
}

async function pick(p, example) {
  await p.click(`.card[data-example="${example}"] .card-pick`);
  await p.waitForSelector(`.card[data-example="${example}"] .card-pick[aria-pressed="true"]`);
}

/** Types into an editor as a person would (the editor debounces, then evaluates). */
async function replaceIn(p, editor, from, to) {
  const area = p.locator(`#text-${editor}`);
  const text = await area.inputValue();
  assert.ok(text.includes(from), `the ${editor} editor holds ${from}`);
  await area.fill(text.replace(from, to));
}

/** The page does not scroll sideways: the document is no wider than the viewport. */
async function fits(p, view) {
  const { scroll, client, wide } = await p.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
    wide: [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
      .slice(0, 5)
      .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`),
  }));
  assert.ok(scroll <= client, `${view}: the document is ${scroll} px wide in a ${client} px viewport (${wide.join(', ')})`);
}

/**
 * Waits for `selector` and until the page stops redrawing it: an edit reaches the simulator and the
 * comparison through the editor's, the simulator's and the comparison's debounce (120 + 200 + 150
 * ms), and each run draws a new chart, so one that lives 700 ms is the settled one.
 */
async function settled(p, selector) {
  for (;;) {
    const element = await p.waitForSelector(selector);
    await p.waitForTimeout(700);
    if (await element.evaluate((e) => e.isConnected)) return element;
  }
}

/** The rows of a grid of boxes, by their top edge: `[count per row]`. */
const rowsOf = (p, selector) =>
  p.$$eval(selector, (boxes) => {
    const rows = new Map();
    for (const b of boxes) {
      const top = Math.round(b.getBoundingClientRect().top);
      rows.set(top, (rows.get(top) ?? 0) + 1);
    }
    return [...rows.values()];
  });

before(async () => {
  assert.ok(existsSync(join(DIST, 'index.html')), 'playground/dist is built (make playground-build)');
  await mkdir(SHOTS, { recursive: true });
  // A sub-folder proves the site uses relative paths only.
  server = await startServer(DIST, { prefix: '/some/sub/folder/' });
  browser = await launch({ timezoneId: TIME_ZONE });
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(server.url).origin });
  page = await open(server.url);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

describe('the page at 1280 px', () => {
  test('the page opens and the component decides the default example', async () => {
    await verdict(page, 'scale_up');
    assert.equal((await page.textContent('#replicas')).trim(), '3 → 5 replicas');
    assert.deepEqual(await reasons(page), ['target_tracking']);
    assert.match(await page.textContent('#reasons'), /follows the signal/);
    assert.equal(await page.locator('#evidence tbody tr').count(), 5);
    const { MANIFEST } = await import('../../bindings-js/generated/manifest.js');
    assert.equal(await page.textContent('#component-digest'), MANIFEST.componentDigest);
    // The site ships bindings-js's core module byte for byte: one .wasm, the manifest's sha256.
    const wasm = (await readdir(join(DIST, 'assets'))).filter((f) => f.endsWith('.wasm'));
    assert.equal(wasm.length, 1);
    const digest = createHash('sha256').update(await readFile(join(DIST, 'assets', wasm[0]))).digest('hex');
    assert.equal(`sha256:${digest}`, MANIFEST.core['evaluator.core.wasm']);
    assert.equal(await page.getAttribute('#component-versions', 'data-schema_version'), '1');
    assert.equal((await page.locator('.gallery .card').count()) >= 9, true);
    await shot(page, '01-opened');
  });

  test('picking an example shows its decision', async () => {
    await pick(page, 'rlm-pool');
    await verdict(page, 'blocked');
    assert.deepEqual(await reasons(page), ['active_sessions_block_drain']);
    assert.match(await page.textContent('#decision'), /drain required/);
    await pick(page, 'query-reader');
    await verdict(page, 'scale_down');
    assert.equal((await page.textContent('#replicas')).trim(), '6 → 5 replicas');
    await pick(page, 'dispatch-worker/request.yaml');
    await verdict(page, 'scale_up');
    assert.match(await page.inputValue('#text-request'), /^# The queue worker/m, 'the YAML example keeps its comments');
  });

  test('changing a value changes the decision', async () => {
    await pick(page, 'api-gateway');
    await verdict(page, 'scale_up');
    const before = await decisionId(page);

    await page.fill('#ctl-signal-value', '200');
    await page.dispatchEvent('#ctl-signal-value', 'change');
    await verdict(page, 'scale_down');
    assert.equal((await page.textContent('#replicas')).trim(), '3 → 2 replicas');
    assert.match(await page.inputValue('#text-request'), /"value": 200/, 'the control edits the request text');
    assert.notEqual(await decisionId(page), before);

    await page.fill('#ctl-replicas', '2');
    await verdict(page, 'hold');
    assert.deepEqual(await reasons(page), ['at_target']);

    await replaceIn(page, 'contract', '"target": 100', '"target": 40');
    await verdict(page, 'scale_up');
    assert.equal((await page.textContent('#replicas')).trim(), '2 → 4 replicas');
    await shot(page, '02-changed');
  });

  test('breaking an observation blocks, with the right reason', async () => {
    await pick(page, 'api-gateway');
    await verdict(page, 'scale_up');

    // The metric read failed: no signal, never a zero.
    await page.uncheck('#ctl-signal-present');
    await verdict(page, 'blocked');
    assert.deepEqual(await reasons(page), ['signal_missing']);
    assert.equal(await page.getAttribute('#evidence tr[data-kind="signal"]', 'data-status'), 'missing');
    await page.check('#ctl-signal-present');
    await verdict(page, 'scale_up');

    // `now` past every window: all evidence is stale.
    const max = await page.getAttribute('#ctl-now', 'max');
    await page.fill('#ctl-now', max);
    await verdict(page, 'blocked');
    const stale = await reasons(page);
    assert.ok(stale.includes('signal_stale') && stale.includes('capacity_stale'), `stale reasons: ${stale}`);
    assert.equal(await page.getAttribute('.tl-row[data-path="signal"]', 'data-status'), 'stale');
    await shot(page, '03-stale');
    await page.fill('#ctl-now', '0');
    await verdict(page, 'blocked'); // before every observation: from the future is stale too
    await pick(page, 'api-gateway');

    // The load shedder reports overload.
    await page.check('#ctl-overloaded');
    await verdict(page, 'blocked');
    assert.deepEqual(await reasons(page), ['overload_shedding_active']);
    assert.match(await page.inputValue('#text-request'), /"reason_ref": "incident:playground"/);
  });

  test('schema and component errors are shown under their editor, at their path and line', async () => {
    await pick(page, 'api-gateway');
    await verdict(page, 'scale_up');
    await replaceIn(page, 'request', '"reserved": 3000', '"reserved": 99000');
    await verdict(page, 'error');
    const component = page.locator('#problems-request li[data-source="component"]');
    assert.equal(await component.getAttribute('data-code'), 'invalid_observation');
    assert.equal(await component.getAttribute('data-path'), 'capacities[0]');
    const line = Number(await component.getAttribute('data-line'));
    const text = await page.inputValue('#text-request');
    assert.match(text.split('\n')[line - 1], /\{/, `line ${line} opens capacities[0]`);
    assert.match(await component.textContent(), new RegExp(`refused by the component\\s*request, line ${line}`));
    assert.equal(await page.locator('#editor-request .gutter .bad').count(), 1);
    assert.equal(await page.locator('#problems-contract li').count(), 0, 'nothing is listed under the contract');
    assert.match(await page.textContent('#decision'), /The component refused the request: invalid_observation at capacities\[0\]/);

    await pick(page, 'api-gateway');
    await replaceIn(page, 'contract', '"target": 100', '"target": "lots"');
    await verdict(page, 'error');
    const schema = page.locator('#problems-contract li[data-source="schema"]').first();
    assert.equal(await schema.getAttribute('data-path'), 'contract.policy.target');
    const fromComponent = page.locator('#problems-contract li[data-source="component"]');
    assert.equal(await fromComponent.getAttribute('data-code'), 'invalid_field');
    assert.equal(await fromComponent.getAttribute('data-path'), 'contract.policy.target');
    const contractLine = Number(await fromComponent.getAttribute('data-line'));
    assert.match((await page.inputValue('#text-contract')).split('\n')[contractLine - 1], /"target": "lots"/);
    assert.equal(await page.locator('#problems-request li').count(), 0, 'nothing is listed under the request');
    await shot(page, '04-errors');

    // A duplicate key, as the component's parser reads it (JSON.parse would keep the last).
    await replaceIn(page, 'contract', '"target": "lots"', '"target": 100, "target": 200');
    await page.waitForSelector('#problems-contract li[data-source="syntax"]:has-text("duplicate key")');

    // A rule the schema states (a part's rule, a surface profile) is worded as the rule, at its field.
    await pick(page, 'api-gateway');
    await replaceIn(page, 'contract', '"block_scale_down_with_active": false', '"block_scale_down_with_active": true');
    await verdict(page, 'error');
    const rule = page.locator('#problems-contract li[data-source="schema"][data-path="contract.continuity.block_scale_down_with_active"]');
    assert.match(await rule.textContent(), /stateless continuity cannot block scale-down on active sessions/);
    await pick(page, 'api-gateway');
    await replaceIn(page, 'contract', '"memory_mib",\n    "session_slots"\n', '"memory_mib"\n');
    await verdict(page, 'error');
    const profile = page.locator('#problems-contract li[data-source="schema"][data-path="contract.required_capacity_axes"]');
    assert.match(await profile.textContent(), /api_gateway requires the hard capacity axis session_slots/);
  });

  test('JSON and YAML are the same request', async () => {
    await pick(page, 'mcp-gateway');
    await verdict(page, 'scale_up');
    const id = await decisionId(page);
    await page.click('#editor-request button[data-format="yaml"]');
    await page.click('#editor-contract button[data-format="yaml"]');
    await page.waitForFunction(() => document.getElementById('text-contract').value.startsWith('unit_ref:'));
    await verdict(page, 'scale_up');
    assert.equal(await decisionId(page), id);
  });

  test('a simulation runs and draws its chart', async () => {
    await pick(page, 'api-gateway');
    await page.selectOption('#sim-trace', 'outage');
    await page.waitForSelector('#sim-chart[data-trace="outage"][data-steps="40"] canvas');
    assert.ok(Number(await page.getAttribute('#sim-chart', 'data-blocked')) > 0);
    const blocked = await page.$$eval('#sim-blocked-reasons li', (items) => items.map((li) => li.dataset.reason));
    assert.deepEqual(blocked, ['signal_missing']);
    const box = await page.locator('#sim-chart canvas').boundingBox();
    assert.ok(box.width > 300 && box.height > 200, `the chart is drawn (${box.width}x${box.height})`);
    assert.equal(await page.locator('#sim-steps tbody tr[data-action="blocked"]').count(), 7);
    await page.locator('#simulator').screenshot({ path: join(SHOTS, '05-simulation.png') });

    // A CSV of one's own, uploaded.
    await page.setInputFiles('#sim-file', {
      name: 'trace.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('time,signal\n2026-08-19T12:00:00Z,900\n2026-08-19T12:01:00Z,\n2026-08-19T12:02:00Z,900\n'),
    });
    await page.waitForSelector('#sim-chart[data-trace="custom"][data-steps="3"] canvas');
    assert.equal(await page.inputValue('#sim-trace'), 'custom');
    assert.equal(await page.textContent('#sum-blocked .stat-value'), '1');

    // A bad cell, typed into the trace: the component's error at its row and column.
    await page.click('details.csv summary');
    await page.fill('#sim-csv', 'time,signal\n2026-08-19T12:00:00Z,lots\n');
    await page.waitForSelector('#sim-error[data-path="trace[0].signal"]');

    // Decisions apart from what ran: with an actuation delay longer than the trace, the scale is
    // still pending at the end, named under the tiles; the table shows current → desired.
    await page.fill('#sim-initial', '2');
    await page.locator('#sim-initial').dispatchEvent('change');
    await page.fill('#sim-delay', '600');
    await page.locator('#sim-delay').dispatchEvent('change');
    await page.fill('#sim-csv', 'time,signal\n2026-08-19T12:00:00Z,900\n2026-08-19T12:00:10Z,900\n');
    await page.waitForSelector('#sim-pending[data-pending="scale_up"][data-from="2"]');
    assert.equal(await page.textContent('#sum-ups-done .stat-value'), '0');
    assert.equal(await page.textContent('#sum-running .stat-value'), '2');
    const finalCount = Number(await page.textContent('#sum-final .stat-value'));
    assert.ok(finalCount > 2, `final ${finalCount} counts the pending scale`);
    assert.equal(await page.getAttribute('#sim-pending', 'data-to'), String(finalCount));
    const first = page.locator('#sim-steps tbody tr').first();
    assert.equal(await first.getAttribute('data-action'), 'scale_up');
    assert.equal(await first.getAttribute('data-pending'), String(finalCount));
    assert.match(await first.locator('.col-decision').textContent(), new RegExp(`^2 → ${finalCount} scale_up$`));
    await page.fill('#sim-delay', '0');
    await page.locator('#sim-delay').dispatchEvent('change');
    await page.waitForSelector('#sim-pending[data-pending="none"]');

    await page.selectOption('#sim-trace', 'drain');
    await pick(page, 'rlm-pool');
    await page.waitForSelector('#sim-chart[data-trace="drain"]');
    await page.waitForSelector('#sim-blocked-reasons li[data-reason="active_sessions_block_drain"]');

    // A trace file of examples/traces/, with the example it was made for.
    await page.selectOption('#sim-trace', 'examples/traces/provider-quota-runs-dry.csv');
    await page.click('#sim-load-example');
    await page.waitForSelector('.card[data-example="mcp-gateway"] .card-pick[aria-pressed="true"]');
    await page.waitForSelector('#sim-chart[data-trace="examples/traces/provider-quota-runs-dry.csv"][data-initial="2"]');
    await page.waitForSelector('#sim-blocked-reasons li[data-reason="provider_quota_exhausted"]');
  });

  test('a share link reloads the same state', async () => {
    await pick(page, 'mcp-gateway');
    await page.fill('#ctl-replicas', '4');
    await verdict(page, 'blocked');
    await page.click('#editor-request button[data-format="yaml"]');
    await page.selectOption('#sim-trace', 'quota');
    await page.fill('#sim-initial', '3');
    await page.dispatchEvent('#sim-initial', 'change');
    await page.waitForSelector('#sim-chart[data-trace="quota"][data-initial="3"][data-steps="40"]');
    await page.click('#share');
    await page.waitForSelector('#share-status:not(:empty)');
    const url = page.url();
    assert.match(url, /#s1\./);
    const want = {
      contract: await page.inputValue('#text-contract'),
      request: await page.inputValue('#text-request'),
      id: await decisionId(page),
      reasons: await reasons(page),
      blocked: await page.getAttribute('#sim-chart', 'data-blocked'),
    };

    const again = await open(url);
    await verdict(again, 'blocked');
    assert.equal(await again.inputValue('#text-contract'), want.contract);
    assert.equal(await again.inputValue('#text-request'), want.request);
    assert.equal(await again.getAttribute('#editor-request button[data-format="yaml"]', 'aria-pressed'), 'true');
    assert.equal(await decisionId(again), want.id);
    assert.deepEqual(await reasons(again), want.reasons);
    assert.equal(await again.inputValue('#sim-trace'), 'quota');
    assert.equal(await again.inputValue('#sim-initial'), '3');
    await again.waitForSelector(`#sim-chart[data-trace="quota"][data-initial="3"][data-steps="40"][data-blocked="${want.blocked}"]`);
    assert.ok(Number(want.blocked) > 0, 'the quota runs dry on the MCP gateway');
    assert.equal(await again.getAttribute('.card[data-example="mcp-gateway"] .card-pick', 'aria-pressed'), 'true');
    await shot(again, '06-shared');
    await again.close();
  });

  test('a share link written before the comparison existed still opens', async () => {
    const example = JSON.parse(await readFile(resolve(here, '../../examples/api-gateway/request.json'), 'utf8'));
    const { contract, ...request } = example;
    // The state as the page wrote it before `compare` was a field.
    const fragment = await encodeState({
      example: 'api-gateway',
      contract: { text: `${JSON.stringify(contract, null, 2)}\n`, format: 'json' },
      request: { text: `${JSON.stringify({ ...request, current_replicas: 4 }, null, 2)}\n`, format: 'json' },
      sim: { trace: 'outage', initial: '3', delay: '0' },
    });
    const old = await open(`${server.url}#${fragment}`);
    await verdict(old, 'scale_up');
    assert.equal((await old.textContent('#replicas')).trim(), '4 → 6 replicas');
    await old.waitForSelector('#sim-chart[data-trace="outage"][data-initial="3"]');
    assert.equal(await old.inputValue('#cmp-a'), 'origin');
    assert.equal(await old.inputValue('#cmp-b'), 'editor');
    await old.waitForSelector('#cmp-diff[data-changes="0"]');
    await old.close();
  });

  test('every link of the page and of its documents leads to a page and an anchor in the site', async () => {
    const checked = new Set();
    const pages = new Map(); // URL without fragment -> its ids
    const idsOf = async (url) => {
      if (!pages.has(url)) {
        const response = await page.request.get(url);
        assert.equal(response.status(), 200, `${url} is served`);
        const html = await response.text();
        pages.set(url, new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1])));
      }
      return pages.get(url);
    };
    const linksOf = (p) => p.$$eval('a[href]', (as) => as.map((a) => a.href));
    const queue = [...(await linksOf(page))];
    const docs = [];
    while (queue.length) {
      const href = queue.shift();
      if (checked.has(href)) continue;
      checked.add(href);
      const url = new URL(href);
      assert.equal(url.origin, new URL(server.url).origin, `${href} stays inside the site`);
      if (url.pathname === new URL(server.url).pathname && url.hash.startsWith('#s1.')) continue; // the share link
      const bare = `${url.origin}${url.pathname}`;
      const ids = await idsOf(bare);
      if (url.hash) assert.ok(ids.has(decodeURIComponent(url.hash.slice(1))), `${href}: the anchor exists`);
      if (url.pathname.includes('/docs/') && !docs.includes(bare)) {
        docs.push(bare);
        const doc = await openDoc(bare);
        queue.push(...(await linksOf(doc)));
        await doc.close();
      }
    }
    assert.equal(docs.length, 5, `every document is reached: ${docs.join(', ')}`);
    const spec = pages.get(docs.find((d) => d.endsWith('/docs/spec.html')));
    for (const reason of REASONS) assert.ok(spec.has(`reason-${reason}`), `the SPEC has an anchor for ${reason}`);
    assert.ok(spec.has('algorithm'));
  });

  test('a reason links to the step of the SPEC that gives it', async () => {
    await pick(page, 'api-gateway');
    await verdict(page, 'scale_up');
    const href = await page.getAttribute('#reasons li[data-reason="target_tracking"] a', 'href');
    assert.equal(href, 'docs/spec.html#reason-target_tracking');
    const doc = await openDoc(new URL(href, server.url).href);
    const target = await doc.$eval(':target', (e) => ({ text: e.textContent, top: e.getBoundingClientRect().top }));
    assert.equal(target.text, 'target_tracking');
    assert.ok(target.top >= 8 && target.top < 450, `the browser scrolled to it, with a margin above (${target.top})`);
    assert.match(await doc.textContent('h1'), /specification/);
    await doc.close();
  });
});

for (const width of WIDTHS) {
  describe(`at ${width} px`, () => {
    let p;
    before(async () => {
      p = await open(server.url, width);
      assert.equal(await p.evaluate(() => innerWidth), width);
      assert.equal(await p.evaluate(() => new Date('2026-08-19T12:00:00Z').getHours()), 17, `the browser's local time is ${TIME_ZONE}`);
    });
    after(async () => {
      await p?.close();
    });

    test('every slider comes back exactly to the request’s own value', async () => {
      const examples = await p.$$eval('.card', (cards) => cards.map((c) => c.dataset.example));
      let moved = 0;
      for (const example of examples) {
        await pick(p, example);
        await p.waitForSelector('[data-field="decision_id"]');
        const original = await requestState(p);
        const now = original.text;
        // The `now` slider's position stands for the request's own `now`, not a second beside it.
        assert.ok(now.includes(await p.getAttribute('#ctl-now-label', 'data-now')), `${example}: the now slider shows the request's now`);
        assert.doesNotMatch(await p.textContent('#ctl-now-label'), / s\)$/, `${example}: no offset from the request's now`);
        for (const slider of ['#ctl-replicas', '#ctl-signal', '#ctl-now']) {
          if (!(await p.isEnabled(slider))) continue;
          await p.focus(slider);
          for (let i = 0; i < 3; i++) await p.keyboard.press('ArrowRight');
          await waitForRequest(p, original, false, `${example} ${slider} moved`);
          for (let i = 0; i < 3; i++) await p.keyboard.press('ArrowLeft');
          await waitForRequest(p, original, true, `${example} ${slider} put back`);
          moved++;
        }
      }
      assert.ok(moved >= 2 * examples.length, `${moved} slider moves over ${examples.length} examples`);

      // With the pointer, as a person drags: away and back to where the thumb was.
      await pick(p, 'api-gateway');
      const original = await requestState(p);
      for (const slider of ['#ctl-replicas', '#ctl-signal', '#ctl-now']) {
        await p.locator(slider).scrollIntoViewIfNeeded();
        const box = await p.locator(slider).boundingBox();
        const { value, min, max } = await p.$eval(slider, (e) => ({ value: Number(e.value), min: Number(e.min), max: Number(e.max) }));
        const thumb = 16; // Chromium's range thumb: pressing on it grabs it where it is
        const x = box.x + thumb / 2 + ((value - min) / (max - min)) * (box.width - thumb);
        const y = box.y + box.height / 2;
        await p.mouse.move(x, y);
        await p.mouse.down();
        await p.mouse.move(x + Math.min(60, box.width / 4), y, { steps: 5 });
        await waitForRequest(p, original, false, `${slider} dragged`);
        await p.mouse.move(x, y, { steps: 5 });
        await p.mouse.up();
        await waitForRequest(p, original, true, `${slider} dragged back`);
        assert.equal(await p.$eval(slider, (e) => Number(e.value)), value, `${slider} is back where it was`);
      }
      await fits(p, 'the controls');
      await p.locator('.live').screenshot({ path: join(SHOTS, `10-controls-${width}.png`) });
    });

    test('the simulator chart: replicas on the signal’s scale, UTC, a legend without placeholders, tiles in full rows', async () => {
      await pick(p, 'api-gateway');
      await p.selectOption('#sim-trace', 'spike');
      await settled(p, '#sim-chart[data-trace="spike"] canvas');
      const chart = p.locator('#sim-chart');

      // One scale: a replica on the right axis stands at the target (100) on the left axis.
      const signalTop = Number(await chart.getAttribute('data-signal-top'));
      const replicasTop = Number(await chart.getAttribute('data-replicas-top'));
      assert.ok(Math.abs(signalTop / replicasTop - 100) < 1e-9, `${signalTop} / ${replicasTop} is the target`);
      assert.match(await p.textContent('#sim-chart .chart-legend'), /target × replicas \(100 a replica\)/);

      // The time axis in UTC: the trace runs 12:00-12:39Z; local time here is 17:30-18:09.
      const ticks = (await chart.getAttribute('data-xticks')).split(' ');
      assert.ok(ticks.length >= 3, `ticks: ${ticks}`);
      for (const t of ticks) assert.ok(/^12:[0-4]\d$/.test(t), `tick ${t} is a UTC time of the trace (${ticks})`);

      // No placeholders while nothing is pointed at; a step's values while something is.
      const readout = p.locator('#sim-chart .chart-readout');
      assert.doesNotMatch(await p.textContent('#sim-chart'), /--/);
      assert.equal(await readout.textContent(), 'Point at the chart to read a step.');
      await p.locator('#sim-chart .u-over').scrollIntoViewIfNeeded();
      const over = await p.locator('#sim-chart .u-over').boundingBox();
      await p.mouse.move(over.x + over.width * 0.05, over.y + over.height / 2);
      await p.waitForFunction(() => document.querySelector('#sim-chart .chart-readout').dataset.step !== undefined);
      assert.match(await readout.textContent(), /^12:0\d:00 UTC · signal \d+ against target × replicas \d+ · /);
      await p.mouse.move(1, 1);
      await p.waitForFunction(() => document.querySelector('#sim-chart .chart-readout').dataset.step === undefined);
      assert.equal(await readout.textContent(), 'Point at the chart to read a step.');

      // Twelve tiles: full rows only.
      const rows = await rowsOf(p, '#sim-summary .stat');
      assert.equal(rows.reduce((a, b) => a + b, 0), 12);
      assert.ok(rows.every((n) => n === rows[0]) && rows[0] > 1, `tiles per row: ${rows}`);
      assert.deepEqual(rows, width >= 1100 ? [6, 6] : [3, 3, 3, 3]);

      const plot = await p.locator('#sim-chart .uplot').boundingBox();
      const box = await chart.boundingBox();
      assert.ok(plot.width <= box.width + 1 && plot.width >= box.width - 2, `the chart fills its box (${plot.width} of ${box.width})`);
      await p.click('#simulator details.steps summary');
      await p.click('#simulator details.csv summary');
      await fits(p, 'the simulator, steps and CSV open');
      const steps = await p.$eval('#sim-steps', (t) => [t.scrollWidth, t.parentElement.clientWidth]);
      assert.ok(steps[0] <= steps[1], `the steps table fits its box (${steps})`);
      await p.locator('#simulator').screenshot({ path: join(SHOTS, `11-simulator-${width}.png`) });
      await p.click('#simulator details.steps summary');
      await p.click('#simulator details.csv summary');
    });

    test('the charts follow their container when the window changes width', async () => {
      await settled(p, '#sim-chart canvas');
      await settled(p, '#cmp-chart canvas');
      const other = width === 1280 ? 390 : 1280;
      for (const w of [other, width]) {
        await p.setViewportSize({ width: w, height: 900 });
        for (const id of ['#sim-chart', '#cmp-chart']) {
          await p.waitForFunction((sel) => {
            const box = document.querySelector(sel);
            return Number(box.dataset.width) === Math.max(200, Math.floor(box.clientWidth));
          }, id);
          const plot = await p.locator(`${id} .uplot`).boundingBox();
          const box = await p.locator(id).boundingBox();
          assert.ok(Math.abs(plot.width - box.width) <= 2, `${id} at ${w} px: ${plot.width} in ${box.width}`);
        }
        await fits(p, `the charts after resizing to ${w} px`);
      }
    });

    test('the derivation is shown next to the decision, and every fault with its hint under a refusal', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      const steps = await p.$$eval('#derivation li', (items) => items.map((li) => [li.dataset.step, li.textContent]));
      const step = (name) => steps.find(([s]) => s === name)?.[1] ?? '';
      // The core's words (`derivation-text` through the component), each line exactly as it wrote it.
      const { request } = await requestState(p);
      const contractFormat = await p.getAttribute('#editor-contract button[aria-pressed="true"]', 'data-format');
      const contract = parseText(await p.inputValue('#text-contract'), contractFormat).value;
      const expected = derivationText({ ...request, contract }).trimEnd().split('\n');
      assert.deepEqual(steps.map(([, text]) => text), expected);
      assert.match(step('target'), /^target: ceil\(\d+ \/ \d+\) = \d+$/, `steps: ${JSON.stringify(steps)}`);
      assert.match(step('bounds'), /^bounds: \[\d+, \d+\]/);
      assert.match(step('step cap'), /scale_up_step/);
      assert.ok(steps.some(([s]) => s === 'growth'), 'the growth gate of a scale-up is listed');
      assert.equal(steps.at(-1)[0], 'decision');
      const replicas = (await p.textContent('#replicas')).match(/(\d+) → (\d+)/);
      assert.match(steps.at(-1)[1], new RegExp(`^decision: scale_up ${replicas[1]} -> ${replicas[2]} \\(target_tracking`));
      // Between the reasons and the evidence, inside the decision.
      const order = await p.$$eval('#decision #reasons, #decision #derivation, #decision #evidence', (els) => els.map((e) => e.id));
      assert.deepEqual(order, ['reasons', 'derivation', 'evidence']);
      await fits(p, 'the derivation');
      await p.locator('#derivation').screenshot({ path: join(SHOTS, `14-derivation-${width}.png`) });

      // What it permits: a proposed count judged by the component's gate, in the core's words.
      const gateState = () => p.$eval('#gate-verdict', (el) => [el.dataset.allowed, el.dataset.reason, el.textContent]);
      const [allowed, why, words] = await gateState();
      assert.deepEqual([allowed, why], ['true', 'within_decision']);
      assert.match(words, new RegExp(`${replicas[1]} -> ${replicas[2]} replicas allowed`));
      assert.equal(await p.getAttribute('#scaler-reading', 'data-metric'), replicas[2]);
      await p.fill('#gate-to', String(Number(replicas[2]) + 1));
      await p.waitForSelector('#gate-verdict[data-reason="past_desired"]');
      assert.match((await gateState())[2], /denied/);
      await p.fill('#gate-to', '10001');
      await p.waitForSelector('#gate-verdict[data-reason="invalid_field"]');
      await p.fill('#gate-to', String(replicas[1]));
      await p.waitForSelector('#gate-verdict[data-reason="no_change"]');
      await fits(p, 'the gate');

      // Two faults at once: the stateless block flag and a missing required axis.
      await replaceIn(p, 'contract', '"block_scale_down_with_active": false', '"block_scale_down_with_active": true');
      await verdict(p, 'error');
      await replaceIn(p, 'contract', '"memory_mib",\n    "session_slots"\n', '"memory_mib"\n');
      await p.waitForSelector('#diagnosis li.fault >> nth=1');
      const faults = await p.$$eval('#diagnosis li.fault', (items) =>
        items.map((li) => ({ code: li.dataset.code, path: li.dataset.path, hint: li.querySelector('.hint').textContent })),
      );
      assert.ok(faults.length >= 2, JSON.stringify(faults));
      const refusal = await p.getAttribute('[data-testid="verdict"]', 'data-code');
      assert.equal(faults[0].code, refusal, 'the first fault is the refusal');
      assert.ok(faults.every((f) => f.hint.length > 'Hint: '.length), JSON.stringify(faults));
      assert.ok(faults.some((f) => /session_slots/.test(f.hint)), `a hint names the missing axis: ${JSON.stringify(faults)}`);
      assert.equal(await p.locator('#derivation').count(), 0, 'no derivation without a decision');
      await fits(p, 'the diagnosis');
      await p.locator('#decision').screenshot({ path: join(SHOTS, `15-diagnosis-${width}.png`) });
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      assert.equal(await p.locator('#diagnosis').count(), 0, 'no diagnosis beside a decision');
    });

    test('a syntax error is named in words, in the editor that has it', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      const contract = await p.inputValue('#text-contract');
      const line = contract.split('\n').findIndex((l) => l.includes('"drain_seconds": 30')) + 2; // the `}` after it
      await replaceIn(p, 'contract', '"drain_seconds": 30', '"drain_seconds": 30,');
      const problem = p.locator('#problems-contract li[data-source="syntax"]');
      await problem.waitFor();
      assert.match(await problem.textContent(), new RegExp(`^syntax error\\s*contract, line ${line}, column 3: trailing comma$`));
      assert.equal(await p.locator('#problems-request li').count(), 0);
      const why = await p.textContent('[data-testid="verdict"][data-code="syntax"]');
      assert.match(why, new RegExp(`contract, line ${line}, column 3: trailing comma`));
      assert.doesNotMatch(why, /refused|unparsed/);
      assert.equal(await p.locator(`#editor-contract .gutter .bad`).textContent(), String(line));

      // Listed right under the contract editor, above the request editor.
      const editor = await p.locator('#editor-contract').boundingBox();
      const list = await p.locator('#problems-contract').boundingBox();
      const next = await p.locator('#editor-request').boundingBox();
      assert.ok(list.y >= editor.y + editor.height - 8 && list.y <= editor.y + editor.height + 24, 'just below the contract editor');
      assert.ok(list.y + list.height <= next.y, 'above the request editor');
      await fits(p, 'a syntax error');
      await p.locator('.editors').screenshot({ path: join(SHOTS, `12-syntax-${width}.png`) });

      // One in the request too: each under its own editor, the decision names both.
      await replaceIn(p, 'request', '"current_replicas": 3,', '"current_replicas": 3,,');
      const requestProblem = p.locator('#problems-request li[data-source="syntax"]');
      await requestProblem.waitFor();
      assert.match(await requestProblem.textContent(), /^syntax error\s*request, line 2, column 25: a key must be a string in double quotes$/);
      assert.match(await p.textContent('#decision'), /The contract and the request cannot be read/);
      await replaceIn(p, 'contract', '"drain_seconds": 30,', '"drain_seconds": 30');
      await p.waitForSelector('#problems-contract .ok');
      assert.equal(await p.locator('#problems-request li[data-source="syntax"]').count(), 1);
      await p.fill('#text-request', '');
      await p.waitForSelector('#problems-request li:has-text("the request editor is empty")');
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
    });

    test('evidence refs wrap at their separators, never a letter a line', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      const cells = await p.$$eval('#evidence .ref-text', (tds) =>
        tds.map((td) => {
          const range = document.createRange();
          range.selectNodeContents(td);
          const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
          return { text: td.textContent, width: td.getBoundingClientRect().width, lines };
        }),
      );
      assert.equal(cells.length, 5);
      for (const c of cells) {
        assert.ok(c.lines <= 2, `${c.text} takes ${c.lines} lines (${c.width} px wide)`);
        assert.ok(c.width >= 120, `${c.text}: its cell is ${c.width} px wide`);
      }
      assert.equal(cells[0].text, 'metrics:zentinelle-gateway/requests-in-flight', 'the ref reads as written');
      await fits(p, 'the evidence');
      await p.locator('#decision').screenshot({ path: join(SHOTS, `13-decision-${width}.png`) });
    });

    test('the decision is copied and downloaded as JSON', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      const id = await decisionId(p);
      await p.click('#decision-copy');
      await p.waitForSelector('#decision-status:has-text("Copied")');
      const copied = JSON.parse(await p.evaluate(() => navigator.clipboard.readText()));
      assert.equal(copied.decision_id, id);
      assert.equal(copied.evidence.length, 5);
      assert.equal(copied.schema_version, '1');

      const [download] = await Promise.all([p.waitForEvent('download'), p.click('#decision-download')]);
      assert.match(download.suggestedFilename(), /^scale-decision-[0-9a-f]{32}\.json$/);
      const saved = JSON.parse(await readFile(await download.path(), 'utf8'));
      assert.deepEqual(saved, copied);
    });

    test('the contract is copied as a ScaleUnit for kubectl', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      await p.click('#copy-scale-unit');
      await p.waitForSelector('#scale-unit-status:has-text("Copied")');
      const text = await p.evaluate(() => navigator.clipboard.readText());
      assert.match(text, /^# A ScaleUnit /);
      const resource = parseText(text, 'yaml').value;
      const format = await p.getAttribute('#editor-contract button[aria-pressed="true"]', 'data-format');
      const contract = parseText(await p.inputValue('#text-contract'), format).value;
      assert.equal(resource.apiVersion, 'scale-units.dev/v1alpha1');
      assert.equal(resource.kind, 'ScaleUnit');
      assert.match(resource.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      assert.deepEqual(resource.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: resource.metadata.name });
      assert.equal(resource.spec.mode, 'Enforce');
      assert.deepEqual(resource.spec.contract, contract, 'the contract as the editor shows it');
      assert.doesNotMatch(await p.textContent('#scale-unit-status'), /refuses/);
      await fits(p, 'the ScaleUnit button');

      // A contract the component refuses is still copied, with the refusal said.
      await replaceIn(p, 'contract', '"target": 100', '"target": 0');
      await verdict(p, 'error').catch(() => {});
      await p.click('#copy-scale-unit');
      await p.waitForSelector('#scale-unit-status:has-text("refuses this contract")');
      assert.equal(parseText(await p.evaluate(() => navigator.clipboard.readText()), 'yaml').value.spec.contract.policy.target, 0);
      // Text that does not parse is not copied.
      await p.evaluate(() => navigator.clipboard.writeText('before'));
      await replaceIn(p, 'contract', '"target": 0', '"target": 0,,');
      await p.click('#copy-scale-unit');
      await p.waitForSelector('#scale-unit-status:has-text("Fix the contract first")');
      assert.equal(await p.evaluate(() => navigator.clipboard.readText()), 'before');
      await replaceIn(p, 'contract', '"target": 0,,', '"target": 100');
      await verdict(p, 'scale_up');
    });

    test('example cards show their whole description on request', async () => {
      const card = p.locator('.card:has(.more:not([hidden]))').first();
      await card.waitFor();
      const example = await card.getAttribute('data-example');
      const pressed = await card.locator('.card-pick').getAttribute('aria-pressed');
      const what = card.locator('.what');
      const cut = await what.evaluate((e) => ({ scroll: e.scrollHeight, client: e.clientHeight }));
      assert.ok(cut.scroll > cut.client + 1, `${example}: the description is cut at first`);
      await card.locator('.more').click();
      assert.equal(await card.locator('.more').getAttribute('aria-expanded'), 'true');
      assert.equal(await card.locator('.more').textContent(), 'less');
      const whole = await what.evaluate((e) => ({ scroll: e.scrollHeight, client: e.clientHeight }));
      assert.ok(whole.scroll <= whole.client + 1, `${example}: the whole description shows`);
      assert.equal(await card.locator('.card-pick').getAttribute('aria-pressed'), pressed, 'reading more does not load the example');
      await fits(p, 'an expanded card');
      await card.screenshot({ path: join(SHOTS, `14-card-${width}.png`) });
      await card.locator('.more').click();
      assert.equal(await card.locator('.more').getAttribute('aria-expanded'), 'false');
      const again = await what.evaluate((e) => ({ scroll: e.scrollHeight, client: e.clientHeight }));
      assert.ok(again.scroll > again.client + 1, 'collapsed again');
    });

    test('the component digest fits and copies', async () => {
      const { MANIFEST } = await import('../../bindings-js/generated/manifest.js');
      const digest = await p.locator('#component-digest').boundingBox();
      const button = await p.locator('#component-digest-copy').boundingBox();
      const viewport = await p.evaluate(() => document.documentElement.clientWidth);
      assert.ok(digest.x + digest.width <= viewport && button.x + button.width <= viewport, 'the digest and its button are on screen');
      assert.equal(await p.getAttribute('#component-digest', 'title').then((t) => t.split(':').slice(0, 2).join(':')), MANIFEST.componentDigest);
      await p.click('#component-digest-copy');
      await p.waitForSelector('#component-digest-status:has-text("Copied")');
      assert.equal(await p.evaluate(() => navigator.clipboard.readText()), MANIFEST.componentDigest);
      await fits(p, 'the footer');
    });

    test('compare: the edited contract against its example over the same trace, then a snapshot, then a share link', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      await p.selectOption('#sim-trace', 'spike');
      await p.waitForSelector('#cmp-diff[data-changes="0"]');
      assert.equal(await p.inputValue('#cmp-a'), 'origin');
      assert.equal(await p.inputValue('#cmp-b'), 'editor');
      assert.match(await p.textContent('#cmp-a option[value="origin"]'), /\(api-gateway\)/);

      await replaceIn(p, 'contract', '"target": 100', '"target": 50');
      await replaceIn(p, 'contract', '"scale_up_step": 2', '"scale_up_step": 4');
      await p.waitForSelector('#cmp-diff[data-changes="2"]');
      const diff = await p.$$eval('#cmp-diff tbody tr', (rows) => rows.map((r) => [r.dataset.path, r.dataset.kind, r.querySelector('.a').textContent, r.querySelector('.b').textContent]));
      assert.deepEqual(diff, [
        ['policy.target', 'changed', '100', '50'],
        ['policy.scale_up_step', 'changed', '2', '4'],
      ]);
      const ids = await p.$$eval('#cmp-diff [data-side]', (codes) => codes.map((c) => c.textContent));
      assert.equal(ids.length, 2);
      assert.notEqual(ids[0], ids[1], 'two contracts, two contract_ids');

      // Both paths on one chart, both summaries side by side: half the target needs more replicas.
      await settled(p, '#cmp-chart canvas');
      assert.match(await p.textContent('#cmp-chart .chart-legend'), /A: replicas running.*B: replicas running/s);
      const peak = await p.$$eval('#cmp-summary tr[data-key="peak_replicas"] td', (tds) => tds.map((td) => td.textContent));
      assert.ok(Number(peak[1]) > Number(peak[0]), `peak replicas A ${peak[0]}, B ${peak[1]}`);
      assert.equal(await p.getAttribute('#cmp-summary tr[data-key="steps"]', 'data-same'), 'true');
      assert.match(await p.textContent('#cmp-trace'), /Over the trace “A spike” \(shaped to the contract in the editor\), from 2 replicas/);
      await p.locator('#cmp-chart .u-over').scrollIntoViewIfNeeded();
      const over = await p.locator('#cmp-chart .u-over').boundingBox();
      await p.mouse.move(over.x + over.width * 0.3, over.y + over.height / 2);
      await p.waitForFunction(() => /UTC · signal .* · A \d+ .* · B \d+/.test(document.querySelector('#cmp-chart .chart-readout').textContent));
      await p.mouse.move(1, 1);
      await fits(p, 'the comparison');
      await p.locator('#compare').screenshot({ path: join(SHOTS, `15-compare-${width}.png`) });

      // A snapshot of this version; edit on; compare the snapshot with the editor.
      await p.click('#cmp-snapshot');
      await p.waitForSelector('#cmp-snapshots li[data-snapshot="1"]');
      assert.equal(await p.inputValue('#cmp-a'), 'snapshot:1');
      await p.waitForSelector('#cmp-diff[data-changes="0"]');
      await replaceIn(p, 'contract', '"max_replicas": 12', '"max_replicas": 20');
      await p.waitForSelector('#cmp-diff[data-changes="1"] tr[data-path="policy.max_replicas"]');
      await p.click('#cmp-swap');
      await p.waitForFunction(() => document.getElementById('cmp-a').value === 'editor' && document.getElementById('cmp-b').value === 'snapshot:1');
      await p.waitForSelector('#cmp-diff tr[data-path="policy.max_replicas"] td.a:has-text("20")');
      // Any two versions: another example's contract on one side.
      await p.selectOption('#cmp-b', 'example:query-reader');
      await p.waitForFunction(() => Number(document.getElementById('cmp-diff').dataset.changes) > 3);
      assert.ok(await p.locator('#cmp-diff tr[data-path="surface"]').count(), 'the surfaces differ');
      await fits(p, 'the comparison of two examples');
      await p.selectOption('#cmp-b', 'snapshot:1');
      await p.waitForSelector('#cmp-diff[data-changes="1"]');

      // The share link carries the snapshot and the choice.
      await p.click('#share');
      await p.waitForSelector('#share-status:not(:empty)');
      const again = await open(p.url(), width);
      await again.waitForSelector('#cmp-diff[data-changes="1"] tr[data-path="policy.max_replicas"]');
      assert.equal(await again.inputValue('#cmp-a'), 'editor');
      assert.equal(await again.inputValue('#cmp-b'), 'snapshot:1');
      assert.equal(await again.locator('#cmp-snapshots li').count(), 1);
      await again.click('#cmp-snapshots li[data-snapshot="1"] button:has-text("load into the editor")');
      await again.waitForSelector('#cmp-diff[data-changes="0"]');
      assert.match(await again.inputValue('#text-contract'), /"max_replicas": 12/);
      await again.click('#cmp-snapshots li[data-snapshot="1"] button:has-text("remove")');
      await again.waitForFunction(() => document.querySelectorAll('#cmp-snapshots li').length === 0);
      assert.equal(await again.inputValue('#cmp-b'), 'editor', 'a removed snapshot leaves the choice');
      assert.equal(await again.locator('#cmp-b option[value^="snapshot:"]').count(), 0);
      await again.close();
    });

    test('compare: a refused contract B shows its error and nothing else where the chart would be', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      await p.selectOption('#cmp-a', 'origin');
      await p.selectOption('#cmp-b', 'editor');
      await p.waitForSelector('#cmp-diff[data-changes="0"]');
      await replaceIn(p, 'contract', '"min_replicas": 2', '"min_replicas": -1');
      const problem = await p.waitForSelector('#cmp-output .problem[data-side="b"]');
      assert.match(await problem.textContent(), /^B \(.+\): [a-z_]+/);
      assert.equal(await p.locator('#cmp-output .problem[data-side="a"]').count(), 0);
      // Neither the chart nor the summary ran: no stray text stands in for them.
      assert.equal(await p.locator('#cmp-chart').count(), 0);
      assert.equal(await p.locator('#cmp-summary').count(), 0);
      const text = await p.textContent('#cmp-output');
      assert.doesNotMatch(text, /null|undefined/, text);
      const strays = await p.$$eval('#cmp-output', ([out]) => [...out.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent));
      assert.deepEqual(strays, [], 'every part of the comparison is an element');
      await replaceIn(p, 'contract', '"min_replicas": -1', '"min_replicas": 2');
      await p.waitForSelector('#cmp-diff[data-changes="0"]');
      await p.waitForSelector('#cmp-chart');
      assert.equal(await p.locator('#cmp-output .problem').count(), 0);
    });

    test('compare: follows the editor when an edit is undone before the evaluation ran', async () => {
      await pick(p, 'api-gateway');
      await verdict(p, 'scale_up');
      await p.selectOption('#cmp-a', 'origin');
      await p.selectOption('#cmp-b', 'editor');
      await p.waitForSelector('#cmp-chart');
      // In the page, on its own timers: a choice that schedules the comparison (150 ms), an edit
      // that breaks B, and the edit undone 110 ms later, before the evaluation's 120 ms debounce
      // ran. The comparison may run on the broken text in between (it did, when only the
      // simulator's runs scheduled it); the evaluation never sees a change, as the text is the
      // one it evaluated last. A comparison must still run after the undo and show it.
      const runs = await p.evaluate(
        () =>
          new Promise((resolve) => {
            const area = document.querySelector('#text-contract');
            const original = area.value;
            const type = (text) => {
              area.value = text;
              area.dispatchEvent(new Event('input', { bubbles: true }));
            };
            document.querySelector('#cmp-b').dispatchEvent(new Event('change', { bubbles: true }));
            setTimeout(() => type(original.replace('"min_replicas": 2', '"min_replicas": -1')), 60);
            setTimeout(() => {
              type(original);
              resolve(Number(document.querySelector('#cmp-output').dataset.runs ?? 0));
            }, 170);
          }),
      );
      await p.waitForFunction((before) => Number(document.querySelector('#cmp-output').dataset.runs) > before, runs);
      await p.waitForSelector('#cmp-chart');
      assert.equal(await p.locator('#cmp-diff[data-changes="0"]').count(), 1);
      assert.equal(await p.locator('#cmp-output .problem').count(), 0);
    });

    test('the documents open from the page and lead back to it', async () => {
      for (const [doc, heading] of [
        ['spec', /specification/],
        ['readme', /Scale Units/],
      ]) {
        await p.click(`#doc-links a[data-doc="${doc}"]`);
        await p.waitForURL(new RegExp(`/docs/${doc}\\.html$`));
        assert.match(await p.textContent('h1'), heading);
        await fits(p, `docs/${doc}.html`);
        await p.click('nav a:has-text("← Playground")');
        await p.waitForSelector('body[data-ready="true"]');
      }
      await p.click('#reasons li a.reason-link');
      await p.waitForURL(/\/docs\/spec\.html#reason-/);
      // The browser scrolls the reason into view.
      await p.waitForFunction(() => {
        const top = document.querySelector(':target')?.getBoundingClientRect().top;
        return top >= 8 && top < innerHeight / 2;
      });
      await p.goBack();
      await p.waitForSelector('body[data-ready="true"]');
    });

    test(`no horizontal scroll on any view at ${width} px`, async () => {
      const examples = await p.$$eval('.card', (cards) => cards.map((c) => c.dataset.example));
      for (const example of examples) {
        await pick(p, example);
        await p.waitForSelector('[data-testid="verdict"]');
        await fits(p, `the ${example} example`);
      }
      for (const trace of await p.$$eval('#sim-trace option', (os) => os.map((o) => o.value).filter((v) => v !== 'custom'))) {
        await p.selectOption('#sim-trace', trace);
        await settled(p, `#sim-chart[data-trace="${trace}"], #sim-error[data-trace="${trace}"]`);
        await fits(p, `the ${trace} trace`);
      }
      await pick(p, 'api-gateway');
      await p.selectOption('#sim-trace', 'spike');
      await settled(p, '#sim-chart[data-trace="spike"] canvas');
      await p.click('#simulator details.steps summary');
      await fits(p, 'every step listed');
      for (const more of await p.locator('.card .more:not([hidden])').all()) await more.click();
      await fits(p, 'every card expanded');
      await pick(p, 'api-gateway');
      await replaceIn(p, 'request', '"reserved": 3000', '"reserved": 99000');
      await verdict(p, 'error');
      await fits(p, 'a refusal');
      await pick(p, 'api-gateway');
      await p.click('#editor-contract button[data-format="yaml"]');
      await p.click('#editor-request button[data-format="yaml"]');
      await fits(p, 'YAML');
      await shot(p, `16-page-${width}`);
      for (const doc of ['spec', 'readme', 'playground', 'decisions', 'examples']) {
        const d = await openDoc(new URL(`docs/${doc}.html`, server.url).href, width);
        await fits(d, `docs/${doc}.html`);
        if (doc === 'spec') await d.screenshot({ path: join(SHOTS, `17-spec-${width}.png`) });
        await d.close();
      }
    });
  });
}

test('no page errors', () => {
  assert.deepEqual(pageErrors, []);
});
