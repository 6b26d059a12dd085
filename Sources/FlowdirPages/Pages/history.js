/* flowdir serve: history.js. A card's run history (docs/serve.md): each run with its trigger,
 * who ran it, when, how long, its result and what changed in its params against the run before;
 * its outputs, opened in the viewer; Retry from it (its frozen inputs and params); Compare two
 * runs' image outputs side by side. Uses the helpers app.js puts on window.FD. */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const esc = (v) => FD.esc(v);
  const runs = {};    // node → its runs as `/history` gives them, newest first
  const picked = {};  // node → the run numbers chosen for Compare (at most two, oldest choice dropped)

  FD.historySig = (node) => JSON.stringify([runs[node], [...(picked[node] || [])]]);
  FD.forgetHistory = () => {
    for (const k of Object.keys(runs)) delete runs[k];
    for (const k of Object.keys(picked)) delete picked[k];
  };
  FD.loadHistory = async function (inst, node) {
    const r = await FD.act(() => FD.api(FD.nodePath(inst, node) + '/history', { quiet: true })).catch(() => null);
    const d = FD.state.detail;
    if (!r || !d || d.id !== inst) return;
    const before = FD.historySig(node);
    runs[node] = r.runs || [];
    if (FD.historySig(node) !== before) redraw(node);
  };
  // Only the history section is drawn again: the rest of the card (a tile being clicked, a field
  // being typed in) stays as it is.
  function redraw(node) {
    const d = FD.state.detail, c = d && (d.nodes || []).find((x) => x.id === node);
    const el = document.querySelector('[data-history-of="' + CSS.escape(node) + '"]');
    if (c && el) el.outerHTML = FD.historySection(c);
  }

  const isImage = (o) => /image|mask/i.test(o.type || '') || /\.(png|jpe?g|gif|webp)$/i.test(o.file || '');
  function duration(s) {
    if (typeof s !== 'number') return 'still running';
    if (s < 10) return s.toFixed(1) + ' s';
    if (s < 60) return Math.round(s) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.round((s % 3600) / 60) + ' min';
  }
  const shown = (v) => v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  // In words and in the chip's class: never colour alone.
  function result(h) {
    if (h.error) return ['failed', 'Failed: ' + h.error];
    if (!h.finishedAt) return ['running', 'Running'];
    if (h.exitCode !== null && h.exitCode !== undefined && h.exitCode !== 0) return ['failed', 'Exit ' + h.exitCode];
    return ['done', 'Done'];
  }

  FD.historySection = function (c) {
    const n = esc(c.id), list = runs[c.id];
    const head = '<section aria-label="Run history of ' + n + '" data-history-of="' + n + '"><h3>Run history</h3>';
    if (!list) return head + '<p class="muted" data-testid="history-' + n + '" data-loading="1">Loading…</p></section>';
    if (!list.length) return head + '<p class="muted" data-testid="history-' + n + '">No runs yet.</p></section>';
    const chosen = picked[c.id] || new Set();
    const busy = FD.isRunning(c.state) || c.state === 'awaitingUser';
    const rows = list.map((h) => {
      const [cls, words] = result(h), r = esc(h.run);
      const images = (h.outputs || []).filter(isImage);
      const outs = (h.outputs || []).map((o) => '<button type="button" class="btn small" data-action="view" data-url="' + esc(o.url) + '" data-type="' + esc(o.type) +
        '" data-name="' + esc(o.file) + '" data-testid="run-output-' + n + '-' + r + '-' + esc(o.port) + '" aria-label="View ' + esc(o.port) + ' of run ' + r + '">' +
        esc(o.port) + ' · ' + esc(FD.size(o.size || 0)) + '</button>').join('');
      const diff = (h.paramsDiff || []).length
        ? '<div class="diff" data-testid="run-diff-' + n + '-' + r + '">' + h.paramsDiff.map((x) => esc(x.key) + ': ' + esc(shown(x.from)) + ' → ' + esc(shown(x.to))).join(' · ') + '</div>'
        : '';
      return '<li data-testid="run-' + n + '-' + r + '" data-run="' + r + '">' +
        '<div class="run-line"><strong>Run ' + r + '</strong>' +
        '<span data-field="trigger">' + esc(h.trigger) + '</span>' +
        '<span data-field="who">' + esc(h.who) + '</span>' +
        '<time datetime="' + esc(h.startedAt) + '">' + esc(FD.ago(h.startedAt)) + '</time>' +
        '<span data-field="duration">' + esc(duration(h.seconds)) + '</span>' +
        '<span class="chip st-' + cls + '" data-field="result">' + esc(words) + '</span></div>' + diff +
        '<div class="form-actions">' + outs +
        (images.length ? '<label class="pick"><input type="checkbox" data-history="pick" data-node="' + n + '" data-run="' + r + '" data-testid="compare-pick-' + n + '-' + r + '"' +
          (chosen.has(h.run) ? ' checked' : '') + '> Compare</label>' : '') +
        (!busy && h.finishedAt ? '<button type="button" class="btn small" data-history="retry" data-node="' + n + '" data-run="' + r +
          '" data-testid="retry-from-' + n + '-' + r + '" aria-label="Retry ' + n + ' from run ' + r + ' (its inputs and params)">Retry from run ' + r + '</button>' : '') +
        '</div></li>';
    }).join('');
    const compare = list.some((h) => (h.outputs || []).some(isImage))
      ? '<div class="form-actions"><button type="button" class="btn" data-history="compare" data-node="' + n + '" data-testid="compare-' + n + '"' +
        (chosen.size === 2 ? '' : ' disabled') + '>Compare the two chosen runs</button><span class="muted mini">' +
        (chosen.size === 2 ? '' : 'Choose two runs to compare.') + '</span></div>'
      : '';
    return head + '<ul class="history" data-testid="history-' + n + '">' + rows + '</ul>' + compare + '</section>';
  };

  // Two runs' image outputs side by side, port by port.
  FD.compareRuns = function (node, a, b) {
    const dlg = document.getElementById('viewer');
    const ports = [...new Set([...(a.outputs || []), ...(b.outputs || [])].filter(isImage).map((o) => o.port))];
    const cell = (h, port) => {
      const o = (h.outputs || []).find((x) => x.port === port);
      return '<figure class="compare-cell" data-testid="compare-' + esc(port) + '-' + esc(h.run) + '">' +
        (o ? '<img src="' + esc(o.url) + '" alt="' + esc(port) + ' of run ' + esc(h.run) + '">' : '<p class="muted">No ' + esc(port) + '</p>') +
        '<figcaption>Run ' + esc(h.run) + ' · ' + esc(h.trigger) + ' · ' + esc(FD.ago(h.startedAt)) + '</figcaption></figure>';
    };
    dlg.innerHTML = '<div class="dialog-head"><h2>' + esc(node) + ': run ' + esc(a.run) + ' and run ' + esc(b.run) + '</h2>' +
      '<button type="button" class="btn small" data-testid="viewer-close" aria-label="Close the comparison">✕</button></div>' +
      '<div class="dialog-body" data-testid="compare-view">' + ports.map((p) => '<h3>' + esc(p) + '</h3><div class="compare">' + cell(a, p) + cell(b, p) + '</div>').join('') + '</div>';
    dlg.querySelector('[data-testid="viewer-close"]').addEventListener('click', () => dlg.close());
    dlg.showModal();
  };

  document.addEventListener('change', (e) => {
    const box = e.target.closest('[data-history="pick"]');
    if (!box) return;
    const node = box.dataset.node, run = Number(box.dataset.run);
    const set = picked[node] = picked[node] || new Set();
    if (box.checked) {
      set.add(run);
      if (set.size > 2) set.delete(set.values().next().value);
    } else set.delete(run);
    redraw(node);
    const again = FD.byTestId('compare-pick-' + node + '-' + run);
    if (again) again.focus();
  });
  document.addEventListener('click', async (e) => {
    const b = e.target.closest('button[data-history]');
    if (!b || b.disabled) return;
    e.preventDefault();
    const node = b.dataset.node, d = FD.state.detail;
    if (!d) return;
    if (b.dataset.history === 'retry') {
      const r = await FD.act(() => FD.api(FD.nodePath(d.id, node) + '/retry', { method: 'POST', body: { run: Number(b.dataset.run) } }));
      if (r) { FD.announce(r.message || 'Retrying.'); FD.refresh(); }
    } else if (b.dataset.history === 'compare') {
      const list = runs[node] || [], nums = [...(picked[node] || [])].sort((x, y) => x - y);
      const [a, c] = nums.map((num) => list.find((h) => h.run === num));
      if (a && c) FD.compareRuns(node, a, c);
    }
  });
})();
