/* flowdir serve: editors.js. The dialogs: the question editors (asset picker,
 * mask editor via mask.js, param confirm, choice), the file viewer, a confirm
 * box, and New from Template. Uses the helpers app.js puts on window.FD.
 * Closing an editor (Escape, Cancel) leaves its question pending. */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const $ = (id) => document.getElementById(id);
  const esc = (v) => FD.esc(v);
  let current = null; // {inst, card, mask, claimTimer}

  function head(title, closeLabel) {
    return '<div class="dialog-head"><h2 id="editor-title">' + esc(title) + '</h2>' +
      '<button type="button" class="btn small" data-close aria-label="' + esc(closeLabel || 'Close') + '" data-testid="editor-close">✕</button></div>';
  }
  const errorBox = '<div class="editor-error" role="alert" data-testid="editor-error"></div>';

  // ---- the question editors ------------------------------------------------------------------
  FD.openEditor = function (inst, card) {
    const a = card.await, dlg = $('editor');
    closeEditor();
    current = { inst, card };
    dlg.className = 'editor-dialog' + (a.type === 'draw_mask' ? ' mask' : '');
    dlg.dataset.type = a.type;
    dlg.dataset.node = card.id;
    const build = { select_asset: assetEditor, draw_mask: maskEditor, confirm_params: confirmEditor, choice: choiceEditor }[a.type];
    if (!build) { FD.showError({ error: 'No editor for “' + a.type + '” questions', hint: 'Answer it with `flowdir answer`.' }); current = null; return; }
    build(dlg, inst, card, a);
    dlg.showModal();
    if (current && current.afterOpen) current.afterOpen();
    // Keep the claim while the person works (a claim lapses after 5 minutes).
    current.claimTimer = setInterval(() => FD.api(FD.nodePath(inst.id, card.id) + '/claim', { method: 'POST', quiet: true }).catch(() => {}), 240000);
  };
  function closeEditor() {
    const dlg = $('editor'), node = current && current.card.id;
    if (current) {
      clearInterval(current.claimTimer);
      if (current.mask) current.mask.destroy();
      // Closed without an answer: the question is free again for anyone (the seed's editors contract).
      if (!current.answered) FD.api(FD.nodePath(current.inst.id, current.card.id) + '/claim', { method: 'DELETE', quiet: true }).catch(() => {});
    }
    current = null;
    if (dlg.open) dlg.close();
    dlg.innerHTML = '';
    // Back to the card (a live update may have replaced the element the dialog came from).
    const a = document.activeElement;
    if (node && (!a || a === document.body || !a.isConnected)) { const h = FD.byTestId('card-head-' + node); if (h) h.focus(); }
  }
  $('editor').addEventListener('close', () => { if (current) closeEditor(); });
  $('editor').addEventListener('click', (e) => { if (e.target.closest('[data-close]')) closeEditor(); });
  FD.closeDialogs = () => { closeEditor(); for (const id of ['viewer', 'new-dialog']) if ($(id).open) $(id).close(); };
  // A live update while the editor is open: say so if the question went away.
  FD.editorSync = (inst) => {
    if (!current || inst.id !== current.inst.id) return;
    const c = (inst.nodes || []).find((n) => n.id === current.card.id);
    const box = document.querySelector('#editor [data-testid="editor-error"]');
    if (box && (!c || !c.await || c.await.id !== current.card.await.id)) {
      box.textContent = 'This question has been answered or withdrawn elsewhere; there is nothing left to submit.';
    }
  };

  function footer(submitLabel, extra) {
    return '<div class="dialog-foot">' + (extra || '') +
      '<button type="button" class="btn" data-close data-testid="editor-cancel">Cancel</button>' +
      '<button type="submit" class="btn primary" data-testid="editor-submit">' + esc(submitLabel) + '</button></div>';
  }
  const intro = (a) => (a.detail ? '<p>' + esc(a.detail) + '</p>' : '') +
    (a.expiresAt ? '<p class="muted mini">Expires ' + esc(FD.until(a.expiresAt)) + '</p>' : '');

  // Posts an answer; closes on success and refreshes the page.
  async function answer(body, button) {
    if (!current) return;
    const { inst, card } = current;
    if (button) button.disabled = true;
    const r = await FD.act(() => FD.api(FD.nodePath(inst.id, card.id) + '/answer', { method: 'POST', body }));
    if (button) button.disabled = false;
    if (r) { if (current) current.answered = true; closeEditor(); FD.refresh(); const h = FD.byTestId('card-head-' + card.id); if (h) h.focus(); }
  }
  function onSubmit(form, fn) {
    form.addEventListener('submit', (e) => { e.preventDefault(); fn(e.submitter || form.querySelector('[type=submit]')); });
  }

  function assetEditor(dlg, inst, card, a) {
    const exp = (a.expects || [])[0] || { port: 'file', type: '' };
    const image = /image/i.test(exp.type || '') || !exp.type;
    dlg.innerHTML = '<form method="dialog" novalidate>' + head(a.title || 'Choose a file') + '<div class="dialog-body">' + intro(a) +
      '<label for="asset-file"><strong>' + (image ? 'Choose an image' : 'Choose a file') + '</strong> for “' + esc(exp.port) + '”</label>' +
      '<input type="file" id="asset-file" data-testid="asset-file"' + (image ? ' accept="image/*"' : '') + ' required>' +
      '<img class="preview" data-testid="asset-preview" alt="Preview of the chosen file" hidden>' + errorBox + '</div>' + footer('Submit') + '</form>';
    const input = dlg.querySelector('#asset-file'), img = dlg.querySelector('.preview');
    input.addEventListener('change', () => {
      const f = input.files[0];
      if (img.src) URL.revokeObjectURL(img.src);
      img.hidden = !(f && /^image\//.test(f.type));
      if (!img.hidden) img.src = URL.createObjectURL(f);
    });
    onSubmit(dlg.querySelector('form'), async (btn) => {
      const f = input.files[0];
      if (!f) { FD.showError({ error: 'No file chosen', hint: 'Choose a file first.' }); input.focus(); return; }
      const base64 = await blobToBase64(f);
      answer({ files: [{ port: exp.port, name: f.name, base64 }] }, btn);
    });
    current.afterOpen = () => input.focus();
  }

  function confirmEditor(dlg, inst, card, a) {
    const values = paramValues(a.params);
    const schema = Object.keys(values).map((k) => Object.assign({ name: k, type: typeOf(values[k]) },
      (card.params || []).find((p) => p.name === k) || {}, { value: values[k] }));
    for (const p of card.params || []) if (!(p.name in values)) schema.push(p);
    dlg.innerHTML = '<form method="dialog" novalidate>' + head(a.title || 'Confirm the params') + '<div class="dialog-body">' + intro(a) +
      '<div class="form-grid">' + schema.map((p) => FD.paramField(p, undefined, 'cp-' + p.name, 'confirm-param-' + p.name)).join('') + '</div>' +
      '<div><button type="button" class="btn small" data-testid="confirm-reset">Reset to defaults</button></div>' + errorBox + '</div>' +
      '<div class="dialog-foot"><button type="button" class="btn" data-close data-testid="editor-cancel">Cancel</button>' +
      '<button type="button" class="btn danger" data-testid="editor-decline">Decline</button>' +
      '<button type="submit" class="btn primary" data-testid="editor-submit">Approve</button></div></form>';
    const form = dlg.querySelector('form');
    dlg.querySelector('[data-testid="confirm-reset"]').addEventListener('click', () => FD.resetFields(form, schema));
    dlg.querySelector('[data-testid="editor-decline"]').addEventListener('click', (e) => answer({ decline: true }, e.currentTarget));
    onSubmit(form, (btn) => {
      let params;
      try { params = FD.readParams(form, schema); } catch (err) { FD.showError(err); if (err.el) err.el.focus(); return; }
      answer({ approve: true, params }, btn);
    });
    current.afterOpen = () => { const f = form.querySelector('[data-param]'); if (f) f.focus(); };
  }
  // await.params: [{key|name, value}] or {k: v}.
  function paramValues(p) {
    if (!p) return {};
    if (!Array.isArray(p)) return Object.assign({}, p);
    const out = {};
    for (const e of p) out[e.key !== undefined ? e.key : e.name] = e.value;
    return out;
  }
  const typeOf = (v) => typeof v === 'boolean' ? 'boolean' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number')
    : typeof v === 'string' ? 'string' : 'any';

  function choiceEditor(dlg, inst, card, a) {
    const choices = a.choices || [];
    const def = a.defaultChoice !== undefined && a.defaultChoice !== null ? String(a.defaultChoice) : null;
    dlg.innerHTML = '<form method="dialog">' + head(a.title || 'Choose') + '<div class="dialog-body">' + intro(a) +
      '<fieldset><legend>' + esc(a.title || 'Choose one') + '</legend>' + choices.map((c, i) =>
        '<label class="radio"><input type="radio" name="choice" value="' + esc(c) + '" data-testid="choice-' + esc(c) + '"' +
        ((def !== null ? String(c) === def : i === 0) ? ' checked' : '') + '> ' + esc(c) + (String(c) === def ? ' <span class="muted">(default)</span>' : '') + '</label>').join('') +
      '</fieldset>' + errorBox + '</div>' + footer('Submit') + '</form>';
    const form = dlg.querySelector('form');
    onSubmit(form, (btn) => {
      const r = form.querySelector('input[name=choice]:checked');
      if (!r) { FD.showError({ error: 'Nothing chosen', hint: 'Pick one of the options.' }); return; }
      answer({ choice: r.value }, btn);
    });
    current.afterOpen = () => { const r = form.querySelector('input[name=choice]:checked') || form.querySelector('input[name=choice]'); if (r) r.focus(); };
  }

  function maskEditor(dlg, inst, card, a) {
    const exp = (a.expects || [])[0] || { port: 'mask' };
    const ctx = (a.context || [])[0];
    dlg.innerHTML = head(a.title || 'Draw a mask', 'Cancel and close') +
      '<div class="mask-host"></div>' +
      errorBox + '<div class="dialog-foot"><span class="muted mini mask-hint">' + esc(a.detail || 'Paint the area to mask.') + '</span>' +
      '<button type="button" class="btn" data-close data-testid="editor-cancel">Cancel</button>' +
      '<button type="button" class="btn primary" data-testid="editor-submit">Submit mask</button></div>';
    if (!ctx || !ctx.url) {
      dlg.querySelector('.mask-host').innerHTML = '<p class="dialog-body">This question names no image to mask.</p>';
      return;
    }
    if (ctx.absent) {
      dlg.querySelector('.mask-host').innerHTML = '<p class="dialog-body" data-testid="context-absent">The image to mask, ' + esc(ctx.name) + ', is ' + esc(ctx.absent) +
        '. Get it with <code>' + esc(ctx.get || '') + '</code>, then open this question again.</p>';
      return;
    }
    current.mask = FD.MaskEditor(dlg.querySelector('.mask-host'), { imageUrl: ctx.url, imageName: ctx.name });
    const submit = dlg.querySelector('[data-testid="editor-submit"]');
    submit.addEventListener('click', async () => {
      const m = current && current.mask;
      if (!m || !m.ready()) { FD.showError({ error: 'The image is still loading', hint: 'Wait a moment and try again.' }); return; }
      submit.disabled = true;
      const out = await m.exportPNG();
      submit.disabled = false;
      if (out.empty && !(await FD.confirm({ testid: 'empty-mask-confirm', text: 'The mask is empty — submit anyway?', ok: 'Submit empty mask', cancel: 'Keep drawing' }))) return;
      answer({ files: [{ port: exp.port, name: 'mask.png', base64: await blobToBase64(out.blob) }] }, submit);
    });
    current.afterOpen = () => { current.mask.fit(); const b = dlg.querySelector('[data-testid="mask-tool-brush"]'); if (b) b.focus(); };
  }

  function blobToBase64(blob) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(blob);
    });
  }
  FD.blobToBase64 = blobToBase64;

  // ---- viewer, confirm, new from template ------------------------------------------------------------
  FD.viewer = function (url, name, type) {
    // Files are served by type: images, media, PDF, JSON and text shown; anything else
    // (SVG, HTML) downloaded, and never run as a page of this origin.
    const dlg = $('viewer'), src = url;
    const isImage = /image|mask/i.test(type || '') || /\.(png|jpe?g|gif|webp)$/i.test(name || '');
    // Played in the page and seekable: the server sends the part a seek asks for (HTTP Range).
    const isVideo = /video/i.test(type || '') || /\.(mp4|m4v|webm|ogv|mov)$/i.test(name || '');
    const isAudio = !isVideo && (/audio/i.test(type || '') || /\.(mp3|m4a|wav|flac|ogg|oga|opus|weba)$/i.test(name || ''));
    const isJSON = /json/i.test(type || '') || /\.json$/i.test(name || '');
    const isText = !isJSON && (/text/i.test(type || '') || /\.(txt|log|ya?ml|md|csv|tsv|toml|ini)$/i.test(name || ''));
    const body = isImage ? '<img src="' + esc(src) + '" alt="' + esc(name) + '">'
      : isVideo ? '<video controls preload="metadata" src="' + esc(src) + '" data-testid="viewer-media" aria-label="' + esc(name) + '"></video>'
      : isAudio ? '<audio controls preload="metadata" src="' + esc(src) + '" data-testid="viewer-media" aria-label="' + esc(name) + '"></audio>'
      : isJSON || isText ? '<pre class="viewer-text" data-testid="viewer-text" tabindex="0" role="region" aria-label="' + esc(name) + '">Loading…</pre>'
      : '<p>' + esc(type) + '</p>';
    dlg.innerHTML = '<div class="dialog-head"><h2>' + esc(name) + '</h2><button type="button" class="btn small" data-testid="viewer-close" aria-label="Close viewer">✕</button></div>' +
      '<div class="dialog-body">' + body + '</div>' +
      '<div class="dialog-foot"><a class="btn" href="' + esc(src) + '" target="_blank" rel="noopener" download>Open / download</a></div>';
    dlg.querySelector('[data-testid="viewer-close"]').addEventListener('click', () => dlg.close());
    dlg.showModal();
    if (isJSON || isText) showText(dlg.querySelector('[data-testid="viewer-text"]'), src, isJSON);
  };
  // The first megabyte (a Range request: a large log is never fetched whole), JSON indented.
  const TEXT_LIMIT = 1 << 20;
  async function showText(pre, src, json) {
    let text;
    try {
      const res = await fetch(src, { credentials: 'same-origin', headers: { Range: 'bytes=0-' + (TEXT_LIMIT - 1) } });
      if (!res.ok) throw new Error('HTTP ' + res.status);
      text = await res.text();
      const total = Number((res.headers.get('Content-Range') || '').split('/')[1]);
      if (json && !(total > TEXT_LIMIT)) { try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* shown as it is */ } }
      if (total > TEXT_LIMIT) text += '\n… (the first ' + FD.size(TEXT_LIMIT) + ' of ' + FD.size(total) + '; download it for the rest)';
    } catch (e) {
      text = 'Could not read it: ' + e.message;
    }
    pre.textContent = text;
    pre.dataset.ready = '1';
  }

  // Resolves true (OK) or false (Cancel, Escape).
  FD.confirm = function (o) {
    const dlg = $('confirm');
    dlg.innerHTML = '<form method="dialog" data-testid="' + esc(o.testid || 'confirm-box') + '"><div class="dialog-body"><p id="confirm-text">' + esc(o.text) + '</p></div>' +
      '<div class="dialog-foot"><button value="cancel" class="btn" data-testid="confirm-cancel">' + esc(o.cancel || 'Cancel') + '</button>' +
      '<button value="ok" class="btn ' + (o.danger ? 'danger' : 'primary') + '" data-testid="confirm-ok">' + esc(o.ok || 'OK') + '</button></div></form>';
    dlg.returnValue = '';
    dlg.showModal();
    dlg.querySelector('[data-testid="confirm-cancel"]').focus();
    return new Promise((resolve) => dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true }));
  };

  FD.newFromTemplate = async function () {
    const dlg = $('new-dialog');
    const data = await FD.act(() => FD.api('/api/templates'));
    if (!data) return;
    const list = data.templates || [];
    dlg.innerHTML = '<form method="dialog">' + '<div class="dialog-head"><h2 id="new-title">New from Template</h2>' +
      '<button type="button" class="btn small" data-close aria-label="Close">✕</button></div><div class="dialog-body">' +
      (list.length ? '<label for="new-template">Template</label><select id="new-template" data-testid="new-template" required>' + list.map((t) =>
        '<option value="' + esc(t.id) + '"' + (t.valid === false ? ' disabled' : '') + '>' + esc(t.name) + (t.valid === false ? ' (invalid)' : '') + '</option>').join('') +
        '</select><label for="new-name">Name (optional)</label><input type="text" id="new-name" data-testid="new-name" autocomplete="off">'
        : '<p>No templates found. Put a template in one of your roots and try again.</p>') + errorBox + '</div>' +
      '<div class="dialog-foot"><button type="button" class="btn" data-close>Cancel</button>' +
      (list.length ? '<button type="submit" class="btn primary" data-testid="new-submit">Create</button>' : '') + '</div></form>';
    dlg.querySelectorAll('[data-close]').forEach((b) => b.addEventListener('click', () => dlg.close()));
    const form = dlg.querySelector('form');
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = { template: dlg.querySelector('#new-template').value };
      const name = dlg.querySelector('#new-name').value.trim();
      if (name) body.name = name;
      const r = await FD.act(() => FD.api('/api/new', { method: 'POST', body }));
      if (r) { dlg.close(); if (r.id) FD.go('#/w/' + encodeURIComponent(r.id)); else FD.refresh(); }
    });
    dlg.showModal();
  };
})();