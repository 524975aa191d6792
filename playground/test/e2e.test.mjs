// End-to-end: the built site (dist/) served below a sub-folder, as a static host would, driven in
// headless Chromium. Screenshots go to $PLAYGROUND_SCREENSHOTS (default target/playground-screenshots/).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServer } from '../scripts/serve.mjs';
import { launch } from './browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const DIST = resolve(here, '../dist');
const SHOTS = resolve(process.env.PLAYGROUND_SCREENSHOTS ?? join(here, '../../target/playground-screenshots'));
const TIMEOUT = 15_000;

let server;
let browser;
let page;
const pageErrors = [];

async function open(url) {
  const p = await browser.context.newPage();
  p.setDefaultTimeout(TIMEOUT);
  p.on('pageerror', (error) => pageErrors.push(error.message));
  p.on('console', (message) => message.type() === 'error' && pageErrors.push(message.text()));
  await p.goto(url);
  await p.waitForSelector('body[data-ready="true"]');
  return p;
}

const shot = (p, name) => p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const verdict = (p, action) => p.waitForSelector(`[data-testid="verdict"][data-action="${action}"]`);
const reasons = (p) => p.$$eval('#reasons li', (items) => items.map((li) => li.dataset.reason));
const decisionId = (p) => p.textContent('[data-field="decision_id"]');

async function pick(p, example) {
  await p.click(`.card[data-example="${example}"]`);
  await p.waitForSelector(`.card[data-example="${example}"][aria-pressed="true"]`);
}

/** Types into an editor as a person would (the editor debounces, then evaluates). */
async function replaceIn(p, editor, from, to) {
  const area = p.locator(`#text-${editor}`);
  const text = await area.inputValue();
  assert.ok(text.includes(from), `the ${editor} editor holds ${from}`);
  await area.fill(text.replace(from, to));
}

before(async () => {
  assert.ok(existsSync(join(DIST, 'index.html')), 'playground/dist is built (make playground-build)');
  await mkdir(SHOTS, { recursive: true });
  // A sub-folder proves the site uses relative paths only.
  server = await startServer(DIST, { prefix: '/some/sub/folder/' });
  browser = await launch();
  page = await open(server.url);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

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
  assert.equal(await page.locator('.gallery .card').count() >= 9, true);
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

test('errors are shown at their path and line', async () => {
  await pick(page, 'api-gateway');
  await verdict(page, 'scale_up');
  await replaceIn(page, 'request', '"reserved": 3000', '"reserved": 99000');
  await verdict(page, 'error');
  const component = page.locator('#problem-list li[data-source="component"]');
  assert.equal(await component.getAttribute('data-code'), 'invalid_observation');
  assert.equal(await component.getAttribute('data-path'), 'capacities[0]');
  assert.equal(await component.getAttribute('data-editor'), 'request');
  const line = Number(await component.getAttribute('data-line'));
  const text = await page.inputValue('#text-request');
  assert.match(text.split('\n')[line - 1], /\{/, `line ${line} opens capacities[0]`);
  assert.equal(await page.locator('#editor-request .gutter .bad').count(), 1);

  await pick(page, 'api-gateway');
  await replaceIn(page, 'contract', '"target": 100', '"target": "lots"');
  await verdict(page, 'error');
  const schema = page.locator('#problem-list li[data-source="schema"]').first();
  assert.equal(await schema.getAttribute('data-path'), 'contract.policy.target');
  assert.equal(await schema.getAttribute('data-editor'), 'contract');
  const fromComponent = page.locator('#problem-list li[data-source="component"]');
  assert.equal(await fromComponent.getAttribute('data-code'), 'invalid_field');
  assert.equal(await fromComponent.getAttribute('data-path'), 'contract.policy.target');
  const contractLine = Number(await fromComponent.getAttribute('data-line'));
  assert.match((await page.inputValue('#text-contract')).split('\n')[contractLine - 1], /"target": "lots"/);
  await shot(page, '04-errors');

  // Syntax, as the component's parser reads it: the line, and a duplicate key is an error.
  await replaceIn(page, 'contract', '"target": "lots"', '"target": 100,,');
  const syntax = page.locator('#problem-list li[data-source="syntax"][data-editor="contract"]');
  assert.equal(await syntax.getAttribute('data-line'), String(contractLine));
  await replaceIn(page, 'contract', '"target": 100,,', '"target": 100, "target": 200,');
  await page.waitForSelector('#problem-list li[data-source="syntax"][data-editor="contract"]:has-text("duplicate key")');
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

  await page.selectOption('#sim-trace', 'drain');
  await pick(page, 'rlm-pool');
  await page.waitForSelector('#sim-chart[data-trace="drain"]');
  await page.waitForSelector('#sim-blocked-reasons li[data-reason="active_sessions_block_drain"]');

  // A trace file of examples/traces/, with the example it was made for.
  await page.selectOption('#sim-trace', 'examples/traces/provider-quota-runs-dry.csv');
  await page.click('#sim-load-example');
  await page.waitForSelector('.card[data-example="mcp-gateway"][aria-pressed="true"]');
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
  assert.equal(await again.getAttribute('.card[data-example="mcp-gateway"]', 'aria-pressed'), 'true');
  await shot(again, '06-shared');
  await again.close();
});

test('no page errors', () => {
  assert.deepEqual(pageErrors, []);
});
