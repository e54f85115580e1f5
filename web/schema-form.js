// Form fields from a JSON schema: one labelled input per property of an object schema
// (strings, enums, numbers, booleans, arrays of enums); anything else is edited as JSON.
import { h } from './view.js';

let unique = 0;

/**
 * @param {unknown} schema the JSON schema of the value to build
 * @param {string} prefix keeps ids unique when two forms are on the page
 * @returns {{ element: HTMLElement, read: () => unknown }} read() throws an Error with a message for the user
 */
export function schemaForm(schema, prefix) {
  const s = /** @type {any} */ (schema);
  if (s?.type !== 'object' || !s.properties) return jsonField(prefix, 'Value (JSON)', s);
  const required = new Set(s.required ?? []);
  // Required fields first: a JSON schema stored as jsonb comes back with its keys reordered.
  const entries = Object.entries(s.properties).sort(
    ([a], [b]) => Number(required.has(b)) - Number(required.has(a)),
  );
  const fields = entries.map(([name, p]) => field(prefix, name, p, required.has(name)));
  return {
    element: h('div', { class: 'fields' }, ...fields.map((f) => f.element)),
    read() {
      const value = {};
      for (const f of fields) {
        const v = f.read();
        if (v !== undefined) value[f.name] = v;
        else if (required.has(f.name)) throw new Error(`${f.name} is required.`);
      }
      return value;
    },
  };
}

function field(prefix, name, p, required) {
  const id = `${prefix}-${name}-${++unique}`;
  const label = h('label', { for: id, class: required ? 'required' : null }, name);
  const hint = p.description ? h('p', { class: 'muted small' }, p.description) : '';
  const type = Array.isArray(p.type) ? p.type[0] : p.type;
  if (p.enum) {
    const select = h(
      'select',
      { id, name },
      required ? '' : h('option', { value: '' }, '—'),
      ...p.enum.map((v) => h('option', { value: JSON.stringify(v) }, String(v))),
    );
    return {
      name,
      element: h('div', { class: 'field' }, label, select, hint),
      read: () => (select.value === '' ? undefined : JSON.parse(select.value)),
    };
  }
  if (type === 'boolean') {
    const box = h('input', { id, name, type: 'checkbox' });
    if (p.default === true) box.checked = true;
    return {
      name,
      element: h('div', { class: 'field check' }, box, h('label', { for: id }, name), hint),
      read: () => box.checked,
    };
  }
  if (type === 'integer' || type === 'number') {
    const input = h('input', {
      id,
      name,
      type: 'number',
      inputmode: 'numeric',
      step: type === 'integer' ? '1' : 'any',
      min: p.minimum ?? '',
      max: p.maximum ?? '',
      placeholder: p.default !== undefined ? String(p.default) : '',
      required: required ? '' : null,
    });
    return {
      name,
      element: h('div', { class: 'field' }, label, input, hint),
      read() {
        if (input.value === '') return undefined;
        const n = Number(input.value);
        if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n)))
          throw new Error(`${name} must be ${type === 'integer' ? 'a whole number' : 'a number'}.`);
        return n;
      },
    };
  }
  if (type === 'array' && p.items?.enum) {
    const boxes = p.items.enum.map((v) => {
      const boxId = `${id}-${String(v)}`;
      const box = h('input', { id: boxId, type: 'checkbox', value: JSON.stringify(v) });
      return {
        v,
        box,
        element: h('span', { class: 'check' }, box, h('label', { for: boxId }, String(v))),
      };
    });
    return {
      name,
      element: h(
        'fieldset',
        { class: 'field' },
        h('legend', {}, name),
        h('div', { class: 'choices' }, ...boxes.map((b) => b.element)),
        hint,
      ),
      read() {
        const picked = boxes.filter((b) => b.box.checked).map((b) => b.v);
        return picked.length ? picked : undefined;
      },
    };
  }
  if (type === 'string') {
    const long = (p.maxLength ?? Infinity) > 200;
    const input = long
      ? h('textarea', { id, name, rows: '2', required: required ? '' : null })
      : h('input', { id, name, required: required ? '' : null });
    return {
      name,
      element: h('div', { class: 'field' }, label, input, hint),
      read: () => (input.value === '' ? undefined : input.value),
    };
  }
  const json = jsonField(id, name, p);
  return { name, element: json.element, read: json.read };
}

function jsonField(id, name, schema) {
  const fieldId = `${id}-json-${++unique}`;
  const area = h('textarea', {
    id: fieldId,
    rows: '3',
    spellcheck: 'false',
    class: 'mono',
    placeholder: schema ? '' : '{}',
  });
  return {
    name,
    element: h('div', { class: 'field' }, h('label', { for: fieldId }, name), area),
    read() {
      if (area.value.trim() === '') return undefined;
      try {
        return JSON.parse(area.value);
      } catch {
        throw new Error(`${name} is not valid JSON.`);
      }
    },
  };
}
