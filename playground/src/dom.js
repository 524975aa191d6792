// The one DOM helper: h('div', {className: 'x'}, child, 'text').
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key in el && !key.includes('-')) el[key] = value;
    else el.setAttribute(key, value);
  }
  el.append(...children.flat().filter((c) => c !== undefined && c !== null && c !== false));
  return el;
}

/** Text with a break opportunity after each separator (`/ : . - _ @ = & ?`): refs and paths wrap there. */
export function breakable(text) {
  return String(text)
    .split(/(?<=[/:.\-_@=&?])/)
    .flatMap((part, i) => (i ? [h('wbr'), part] : [part]));
}

/** `sha256:abcd…wxyz` for a table cell; the full value stays in the title. */
export function shortDigest(digest) {
  return digest && digest.length > 24 ? `${digest.slice(0, 15)}…${digest.slice(-6)}` : digest;
}
