/* flowdir serve: cardactions.js. What each card offers without opening it (docs/serve.md, "Cards,
 * the Action Center, viewers"): a failed card its error code and hint, with Retry; a blocked one the reason with what
 * would unblock it (Open upstream, Retry upstream); an awaiting one Snooze and Skip; a ready one Run, and one
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
