/* flowdir serve: cardactions.js. What each card offers without opening it (docs/serve.md, "Card
 * actions"): a failed card its error code and hint, with Retry; a blocked one the reason with what
 * would unblock it (Open upstream, Retry upstream); an awaiting one Snooze and Skip. Every button is
 * the command line's action (app.js's `node` action). Uses window.FD. */
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
    }
    return parts.length ? '<div class="card-actions" role="group" aria-label="Actions on ' + esc(n) + '">' + parts.join('') + '</div>' : '';
  };

  FD.actions['open-upstream'] = (b) => FD.focusNode(b.dataset.node);
})();
