/* flowdir serve: cardactions.js. What each card offers without opening it (docs/serve.md, "Cards,
 * the Action Center, viewers"): a failed card its error code and hint, with Retry; a blocked one the reason with what
 * would unblock it (Open upstream, Retry upstream, Replace input…); an awaiting one Snooze and Skip; a ready one Run, and one
 * whose inputs are not there yet a disabled Run that names them; an Action Center row its snooze choices. Every button is the command line's action (app.js's `node` action). */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const esc = (v) => FD.esc(v);

  function op(inst, node, verb, text, label, testid) {
    return '<button type="button" class="btn small" data-action="node" data-op="' + verb + '" data-id="' + esc(inst) + '" data-node="' + esc(node) +
      '" data-testid="' + esc(testid) + '" aria-label="' + esc(label) + '">' + esc(text) + '</button>';
  }

  FD.cardActions = function (c, inst, cards) {
    const n = c.id, parts = [];
    if (c.state === 'failed' || c.state === 'cancelled') {
      const lr = c.lastRun || {};
      if (lr.errorCode || lr.errorHint) {
        parts.push('<p class="card-error" data-testid="card-error-' + esc(n) + '">' + (lr.errorCode ? '<code>' + esc(lr.errorCode) + '</code> ' : '') +
          (lr.errorHint ? '<span>' + esc(lr.errorHint) + '</span>' : '') + '</p>');
      }
      parts.push(op(inst, n, 'retry', 'Retry', 'Retry ' + n, 'card-retry-' + n));
    } else if (c.state === 'blocked' && c.upstream) {
      const up = (cards || []).find((x) => x.id === c.upstream);
      parts.push('<button type="button" class="btn small" data-action="open-upstream" data-node="' + esc(c.upstream) + '" data-testid="card-open-upstream-' + esc(n) +
        '" aria-label="Open ' + esc(c.upstream) + ', which ' + esc(n) + ' waits on">Open ' + esc(c.upstream) + '</button>');
      if (up && (up.state === 'failed' || up.state === 'cancelled')) {
        parts.push(op(inst, c.upstream, 'retry', 'Retry ' + c.upstream, 'Retry ' + c.upstream + ', which ' + n + ' waits on', 'card-retry-upstream-' + n));
        // Replace input…: a file of the person's in place of what the failed step should have made
        // (the same as `flowdir answer <instance>/<upstream> FILE`).
        (c.inputs || []).filter((i) => !i.ready && (i.from || '').split('.')[0] === c.upstream).forEach((i) => {
          const port = i.from.slice(c.upstream.length + 1), id = 'replace-' + n + '-' + i.port;
          parts.push('<label class="btn small" for="' + esc(id) + '">Replace ' + esc(i.port) + '…</label><input type="file" class="visually-hidden" id="' + esc(id) +
            '" data-replace data-id="' + esc(inst) + '" data-node="' + esc(c.upstream) + '" data-port="' + esc(port) + '" data-testid="card-replace-' + esc(n) + '-' + esc(i.port) +
            '" aria-label="Replace ' + esc(i.port) + ' of ' + esc(n) + ' with a file of yours, in place of ' + esc(c.upstream) + '’s output"' +
            (/image|mask/i.test(i.type || '') ? ' accept="image/*"' : '') + '>');
        });
      }
    } else if (c.state === 'awaitingUser' && c.await) {
      parts.push(op(inst, n, 'snooze', 'Snooze 1 h', 'Snooze ' + n + ' for 1 hour', 'card-snooze-' + n));
      if (c.await.skippable) parts.push(op(inst, n, 'skip', 'Skip', 'Skip ' + n, 'card-skip-' + n));
    } else if (c.state === 'ready' && !c.await) {
      parts.push(op(inst, n, 'run', 'Run', 'Run ' + n, 'card-run-' + n));
    }
    // Not runnable yet: Run, disabled, names the inputs it waits for.
    if ((c.missing || []).length && !['runningLocal', 'queuedRemote', 'runningRemote', 'downloading', 'succeeded'].includes(c.state)) {
      const needs = c.missing.join(', ');
      parts.push('<button type="button" class="btn small" disabled aria-disabled="true" data-testid="card-run-' + esc(n) + '" title="Run once its inputs are there">' +
        'Run — needs ' + esc(needs) + '</button>');
    }
    return parts.length ? '<div class="card-actions" role="group" aria-label="Actions on ' + esc(n) + '">' + parts.join('') + '</div>' : '';
  };

  FD.actions['open-upstream'] = (b) => FD.focusNode(b.dataset.node);

  // A file chosen for Replace input…: sent as the failed step's output; the page refreshes.
  document.addEventListener('change', async (e) => {
    const input = e.target.closest && e.target.closest('input[data-replace]');
    if (!input || !input.files[0]) return;
    const f = input.files[0], d = input.dataset;
    input.disabled = true;
    const base64 = await FD.blobToBase64(f);
    const r = await FD.act(() => FD.api(FD.nodePath(d.id, d.node) + '/answer', { method: 'POST', body: { files: [{ port: d.port, name: f.name, base64 }] } }));
    input.disabled = false;
    if (r) FD.refresh();
  });

  // An Action Center row's other snooze choices, beside its Snooze 1 h: 15 minutes, until tonight
  // (20:00, while it is still ahead), until tomorrow morning (9:00).
  function secondsTo(hour, days) {
    const now = new Date(), at = new Date(now);
    at.setDate(at.getDate() + days);
    at.setHours(hour, 0, 0, 0);
    return Math.round((at - now) / 1000);
  }
  FD.snoozeMenu = function (i, key, who) {
    const choices = [['15m', '15 minutes', 900]];
    if (secondsTo(20, 0) > 900) choices.push(['tonight', 'Until tonight (20:00)', secondsTo(20, 0)]);
    choices.push(['tomorrow', 'Until tomorrow (9:00)', secondsTo(9, 1)]);
    return '<details class="snooze-more"><summary class="btn small" data-testid="snooze-more-' + esc(key) + '" aria-label="More snooze choices for ' + who + '">More…</summary>' +
      '<div class="snooze-choices" role="group" aria-label="Snooze ' + who + '">' + choices.map(([id, words, seconds]) =>
        '<button type="button" class="btn small" data-action="node" data-op="snooze" data-seconds="' + seconds + '" data-id="' + esc(i.instanceId) +
        '" data-node="' + esc(i.node) + '" data-testid="snooze-' + esc(key) + '-' + id + '">' + esc(words) + '</button>').join('') + '</div></details>';
  };
})();
