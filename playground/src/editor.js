// A plain text editor (a textarea with a line gutter) for one document, JSON or YAML. Problems are
// marked on their line in the gutter; `reveal(line)` selects a line.
import { h } from './dom.js';
import { parseText, printText } from './wire.js';

export class Editor {
  /** `root`: the container; `name`: `contract` or `request`; `onChange(text, format)`. */
  constructor(root, name, title, onChange) {
    this.name = name;
    this.onChange = onChange;
    this.format = 'json';
    this.marks = new Map(); // line -> message
    this.formatButtons = {};
    const formats = h('div', { className: 'formats', role: 'group', 'aria-label': `${title} format` });
    for (const format of ['json', 'yaml']) {
      const button = h('button', { type: 'button', textContent: format.toUpperCase() });
      button.dataset.format = format;
      button.addEventListener('click', () => this.convert(format));
      this.formatButtons[format] = button;
      formats.append(button);
    }
    this.gutter = h('pre', { className: 'gutter', 'aria-hidden': 'true' });
    this.area = h('textarea', {
      spellcheck: false,
      wrap: 'off',
      id: `text-${name}`,
      'aria-label': `${title} (${name === 'contract' ? 'the scale-unit contract' : 'the observations, replicas and time'})`,
    });
    this.area.setAttribute('autocapitalize', 'off');
    this.area.setAttribute('autocomplete', 'off');
    this.area.addEventListener('input', () => {
      this.renderGutter();
      this.onChange(this.area.value, this.format);
    });
    this.area.addEventListener('scroll', () => {
      this.gutter.scrollTop = this.area.scrollTop;
    });
    root.append(
      h('div', { className: 'editor-head' }, h('h3', { textContent: title }), formats),
      h('div', { className: 'editor-body' }, this.gutter, this.area),
    );
  }

  get text() {
    return this.area.value;
  }

  /** Replaces the text (and format); `keepScroll` for an edit of the same document. */
  set(text, format = this.format, { keepScroll = true } = {}) {
    const top = keepScroll ? this.area.scrollTop : 0;
    this.area.value = text;
    this.format = format;
    for (const [f, button] of Object.entries(this.formatButtons)) button.setAttribute('aria-pressed', String(f === format));
    this.area.scrollTop = top;
    this.renderGutter();
  }

  /** Rewrites the document in the other format when it parses; otherwise leaves it be. */
  convert(format) {
    if (format === this.format) return;
    const parsed = parseText(this.area.value, this.format);
    if (parsed.error) {
      this.flash(`fix the ${this.format.toUpperCase()} first: ${parsed.error.message}`);
      return;
    }
    this.set(printText(parsed.value, format), format);
    this.onChange(this.area.value, this.format);
  }

  flash(message) {
    this.area.setCustomValidity(message);
    this.area.reportValidity();
    setTimeout(() => this.area.setCustomValidity(''), 2500);
  }

  /** Marks problem lines: `[{line, message}]`. */
  mark(problems) {
    this.marks = new Map();
    for (const p of problems) if (p.line) this.marks.set(p.line, [this.marks.get(p.line), p.message].filter(Boolean).join('\n'));
    this.renderGutter();
  }

  renderGutter() {
    const lines = this.area.value.split('\n').length;
    const out = [];
    for (let i = 1; i <= lines; i++) {
      const span = h('span', { textContent: String(i) });
      if (this.marks.has(i)) {
        span.className = 'bad';
        span.title = this.marks.get(i);
      }
      out.push(span, '\n');
    }
    this.gutter.replaceChildren(...out);
  }

  /** Scrolls to and selects a line. */
  reveal(line) {
    const starts = [0];
    const text = this.area.value;
    for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
    const start = starts[line - 1] ?? 0;
    const end = (starts[line] ?? text.length + 1) - 1;
    this.area.focus();
    this.area.setSelectionRange(start, end);
    const lineHeight = parseFloat(getComputedStyle(this.area).lineHeight) || 18;
    this.area.scrollTop = Math.max(0, (line - 4) * lineHeight);
    this.gutter.scrollTop = this.area.scrollTop;
  }
}
