/* flowdir serve: notify.js. A question that arrives while a page is open (docs/serve.md, "Cards,
 * the Action Center, viewers"): a toast with Open, and a system notification where the browser
 * grants it (localhost or https; asked only when the person clicks "Notify me"). Uses window.FD;
 * app.js calls FD.noticeQuestions with each pending list it fetches. */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const esc = (v) => FD.esc(v);
  let known = null;  // the pending questions seen so far (null until the first list: those are not new)
  const keyOf = (i) => i.instanceId + '/' + i.node + '/' + i.id;
  const cardURL = (i) => '#/w/' + encodeURIComponent(i.instanceId) + '/' + encodeURIComponent(i.node);

  FD.noticeQuestions = function (items) {
    const pending = (items || []).filter((i) => i.section === 'Pending');
    const now = new Set(pending.map(keyOf));
    if (known === null) { known = now; return; }
    const fresh = pending.filter((i) => !known.has(keyOf(i)));
    known = now;
    for (const i of fresh) { toast(i); notify(i); }
  };

  function toast(i) {
    const box = document.querySelector('.toasts');
    if (!box) return;
    const el = document.createElement('div');
    el.className = 'toast toast-question';
    el.setAttribute('role', 'status');
    el.dataset.testid = 'question-toast';
    const canAsk = 'Notification' in window && Notification.permission === 'default' && window.isSecureContext;
    el.innerHTML = '<button type="button" class="close" aria-label="Dismiss">✕</button>' +
      '<strong>New question</strong><br>' + esc(i.question) + ' <span class="muted">· ' + esc(i.title) + '</span>' +
      '<div class="form-actions"><a class="btn small primary" href="' + esc(cardURL(i)) + '" data-testid="question-toast-open">Open</a>' +
      (canAsk ? '<button type="button" class="btn small" data-testid="question-toast-notify">Notify me</button>' : '') + '</div>';
    const close = () => el.remove();
    el.querySelector('.close').addEventListener('click', close);
    el.querySelector('a').addEventListener('click', close);
    const ask = el.querySelector('[data-testid="question-toast-notify"]');
    if (ask) ask.addEventListener('click', () => { Notification.requestPermission().finally(close); });
    box.appendChild(el);
    setTimeout(close, 20000);
  }

  function notify(i) {
    if (!('Notification' in window) || Notification.permission !== 'granted' || document.visibilityState === 'visible') return;
    const n = new Notification('flowdir: ' + i.question, { body: i.title, tag: keyOf(i) });
    n.onclick = () => { window.focus(); location.hash = cardURL(i); n.close(); };
  }
})();
