/* flowdir serve: params.js. The params form of a tool's schema, for a card's
 * Parameters and for a confirm_params question: fields, their typed values,
 * and reset to defaults. Uses FD.esc from app.js (called after it loads). */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const esc = (v) => FD.esc(v);

  // A form field for one param of a tool's schema ({name, type, value, default, options, min, max, description}).
  FD.paramField = function (p, draft, id, testid) {
    const v = draft !== undefined ? draft : p.value !== undefined && p.value !== null ? p.value : p.default;
    const desc = p.description ? ' aria-describedby="' + esc(id) + '-d"' : '';
    const common = ' id="' + esc(id) + '" name="' + esc(p.name) + '" data-param="' + esc(p.name) + '" data-type="' + esc(p.type) + '" data-testid="' + esc(testid) + '"' + desc;
    let input;
    if (p.options && p.options.length) {
      input = '<select' + common + '>' + p.options.map((o) => '<option value="' + esc(o) + '"' + (String(o) === String(v) ? ' selected' : '') + '>' + esc(o) + '</option>').join('') + '</select>';
    } else if (p.type === 'boolean') {
      input = '<input type="checkbox"' + common + (v === true || v === 'true' ? ' checked' : '') + '>';
    } else if (p.type === 'number' || p.type === 'integer') {
      input = '<input type="number" inputmode="decimal" step="' + (p.type === 'integer' ? 1 : 'any') + '"' + (p.min !== null && p.min !== undefined ? ' min="' + esc(p.min) + '"' : '') +
        (p.max !== null && p.max !== undefined ? ' max="' + esc(p.max) + '"' : '') + common + ' value="' + esc(v) + '">';
    } else if (p.type === 'array' || p.type === 'object' || p.type === 'any') {
      input = '<textarea rows="3"' + common + '>' + esc(typeof v === 'string' && draft !== undefined ? v : JSON.stringify(v === undefined ? null : v)) + '</textarea>';
    } else {
      input = '<input type="text"' + common + ' value="' + esc(v) + '">';
    }
    return '<label for="' + esc(id) + '">' + esc(p.name) + '</label>' + input + (p.description ? '<div class="desc" id="' + esc(id) + '-d">' + esc(p.description) + '</div>' : '');
  };
  // The typed values of a form's param fields: {name: value}; throws {error, hint} on a bad one.
  FD.readParams = function (form, schema) {
    const out = {};
    for (const el of form.querySelectorAll('[data-param]')) {
      const p = schema.find((x) => x.name === el.dataset.param) || { name: el.dataset.param, type: el.dataset.type };
      let v;
      if (el.type === 'checkbox') v = el.checked;
      else if (p.options && p.options.length) v = p.options.find((o) => String(o) === el.value);
      else if (p.type === 'number' || p.type === 'integer') {
        if (el.value === '' || !el.checkValidity()) throw { error: p.name + ': ' + (el.validationMessage || 'not a number'), hint: 'Enter a number' + (p.min != null && p.max != null ? ' from ' + p.min + ' to ' + p.max : p.min != null ? ' of at least ' + p.min : p.max != null ? ' of at most ' + p.max : '') + '.', el };
        v = Number(el.value);
      } else if (el.tagName === 'TEXTAREA') {
        try { v = JSON.parse(el.value); } catch (e) { throw { error: p.name + ': not valid JSON', hint: 'Write a JSON value, e.g. [1, 2] or {"a": 1}.', el }; }
      } else v = el.value;
      out[p.name] = v;
    }
    return out;
  };
  // Fills the fields `values` names ({name: value}) as typed, unsaved: the person saves them.
  FD.setFields = function (form, values) {
    for (const el of form.querySelectorAll('[data-param]')) {
      if (!Object.prototype.hasOwnProperty.call(values, el.dataset.param)) continue;
      const d = values[el.dataset.param] === undefined ? null : values[el.dataset.param];
      if (el.type === 'checkbox') el.checked = d === true; else if (el.tagName === 'TEXTAREA') el.value = JSON.stringify(d); else el.value = d === null ? '' : String(d);
      el.dispatchEvent(new Event('input', { bubbles: true }));
    }
  };
  FD.resetFields = (form, schema) => FD.setFields(form, Object.fromEntries(schema.map((p) => [p.name, p.default])));

  // The tool's presets (`presets:` in its file): choosing one fills the params it names; Save keeps them.
  FD.presetPicker = function (c) {
    if (!(c.presets || []).length) return '';
    const id = 'preset-' + c.id;
    return '<label class="visually-hidden" for="' + esc(id) + '">Apply a preset to ' + esc(c.id) + '</label><select id="' + esc(id) + '" data-preset="' + esc(c.id) +
      '" data-testid="preset-' + esc(c.id) + '"><option value="">Presets…</option>' + c.presets.map((p) => '<option value="' + esc(p.name) + '" title="' +
      esc(Object.keys(p.params).map((k) => k + '=' + JSON.stringify(p.params[k])).join(', ')) + '">' + esc(p.name) + '</option>').join('') + '</select>';
  };
  document.addEventListener('change', (e) => {
    const sel = e.target.closest && e.target.closest('select[data-preset]');
    if (!sel || !sel.value) return;
    const c = ((FD.state.detail || {}).nodes || []).find((n) => n.id === sel.dataset.preset), form = sel.closest('form');
    const p = c && (c.presets || []).find((x) => x.name === sel.value);
    if (!p || !form) return;
    FD.setFields(form, p.params);
    FD.announce('Preset ' + p.name + ' filled in (' + Object.keys(p.params).join(', ') + '); Save to keep it.');
    sel.value = '';
  });
})();(function () {
  'use strict';
  // Params typed but not saved: the browser asks before the page is left (a reload, a closed tab).
  window.addEventListener('beforeunload', (e) => {
    const drafts = window.FD && window.FD.state && window.FD.state.drafts;
    if (drafts && Object.keys(drafts).some((node) => Object.keys(drafts[node] || {}).length)) {
      e.preventDefault();
      e.returnValue = '';
    }
  });
})();
