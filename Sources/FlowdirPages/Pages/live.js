/* flowdir serve: live.js. Live updates over server-sent events, and the connection state, always
 * shown in words (docs/serve.md). A page that lost its stream, slept (a phone's screen off)
 * or went offline fetches the current state before it says "Live" again. Uses window.FD (app.js). */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  // What it shows is never older than what it claims.
  let es = null, retryTimer = 0, retryDelay = 1000, wasOpen = false;
  function setLive(state, words) {
    FD.byTestId('live-status').textContent = words;
    document.body.dataset.live = state;
  }
  async function resync() {
    if (!es || es.readyState !== 1) return;
    setLive('syncing', 'Updating…');
    await FD.refresh();
    if (es && es.readyState === 1) setLive('open', 'Live');
  }
  const connect = FD.connect = function () {
    if (!window.EventSource || es) return;
    clearTimeout(retryTimer);
    const source = es = new EventSource('/api/events');
    source.onopen = () => {
      retryDelay = 1000;
      // The first open follows the page's own first load; any later one may have missed changes.
      if (wasOpen) resync(); else setLive('open', 'Live');
      wasOpen = true;
    };
    source.onerror = () => {
      if (es !== source) return;
      setLive('reconnecting', navigator.onLine === false ? 'Offline' : 'Reconnecting…');
      // Closed for good (an error status, not a dropped connection): opened again here, backing off.
      if (source.readyState === 2) {
        source.close();
        es = null;
        retryTimer = setTimeout(connect, retryDelay);
        retryDelay = Math.min(retryDelay * 2, 10000);
      }
    };
    source.addEventListener('changed', (e) => {
      let inst = null;
      try { inst = JSON.parse(e.data).instance; } catch (err) { /* a change of anything */ }
      const S = FD.state;
      if (S.route.page === 'detail' && inst && inst !== S.route.id && (!S.detail || inst !== S.detail.id)) {
        FD.debounce('count', FD.refreshCount, 120);
        return;
      }
      FD.debounce('refresh', FD.refresh, 120);
    });
  };
  // A page left for another (kept in the back/forward cache) gives its stream up: each one kept
  // would hold one of the browser's six connections to the server. Back again, it fetches the
  // current state, then listens.
  window.addEventListener('pagehide', () => { if (es) { es.close(); es = null; } });
  window.addEventListener('pageshow', (e) => { if (e.persisted) { FD.refresh(); connect(); } });
  // Back from sleep or from the background: the stream may be stale or gone.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'visible') return;
    if (es && es.readyState === 1) resync(); else { if (es && es.readyState === 2) es = null; connect(); }
  });
  window.addEventListener('online', () => { if (es && es.readyState === 1) resync(); else { if (es) { es.close(); es = null; } connect(); } });
  window.addEventListener('offline', () => setLive('reconnecting', 'Offline'));

})();
