/* flowdir serve: app.js. Router, the three pages (Workflows, Workflow detail,
 * Action Center) and live updates; settings.js has the Settings page. params.js has the params form; editors.js the dialogs (question
 * editors, viewer, confirm, new from template); mask.js the mask editor.
 * Test hooks (data-testid and body attributes): listed in Pages/README.md.
 */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const main = document.getElementById('main');
  // The token is never kept by the page: the first load (the URL with the token) sets an HttpOnly
  // cookie, which every request of the page carries; the token then leaves the address bar.
  const S = FD.state = {
    route: { page: 'list' }, list: { filter: 'all', sort: 'recent', search: '', archived: false },
    detail: null, expanded: new Set(), drafts: {}, logs: {}, pulse: null, rev: 0, renderSeq: 0,
  };

  // ---- small helpers --------------------------------------------------------------------
  const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  const esc = FD.esc = (v) => (v === null || v === undefined ? '' : String(v)).replace(/[&<>"']/g, (c) => ESC[c]);
  const byTestId = FD.byTestId = (id, root) => (root || document).querySelector('[data-testid="' + CSS.escape(id) + '"]');
  const enc = encodeURIComponent;

  function span(sec) {
    const s = Math.abs(sec), m = Math.round(s / 60), h = Math.round(s / 3600);
    if (s < 45) return null;
    if (m < 60) return m + 'm';
    if (h < 24) return h + 'h';
    return Math.round(s / 86400) + 'd';
  }
  FD.ago = (iso) => {
    if (!iso) return '';
    const t = span((Date.now() - Date.parse(iso)) / 1000);
    return t ? t + ' ago' : 'just now';
  };
  FD.until = (iso) => {
    if (!iso) return '';
    const sec = (Date.parse(iso) - Date.now()) / 1000;
    return sec <= 0 ? 'expired' : 'in ' + (span(sec) || 'under a minute');
  };
  FD.size = (b) => b < 1024 ? b + ' B' : b < 1048576 ? (b / 1024).toFixed(1) + ' KB' : (b / 1048576).toFixed(1) + ' MB';
  const timeTag = (iso, text) => iso ? '<time datetime="' + esc(iso) + '">' + esc(text) + '</time>' : '';

  // ---- messages: errors in role=alert, successes in a polite status region ----------------
  const alertBox = document.getElementById('alert');
  const statusBox = document.getElementById('status');
  let statusTimer = 0;
  FD.showError = (err) => {
    const html = '<strong>' + esc(err.error || 'Something went wrong') + '</strong>' + (err.hint ? '<br>' + esc(err.hint) : '');
    alertBox.innerHTML = html;
    const inDialog = document.querySelector('dialog[open] [data-testid="editor-error"]');
    if (inDialog) inDialog.innerHTML = html;
  };
  FD.clearError = () => { alertBox.innerHTML = ''; };
  FD.announce = (text) => {
    statusBox.textContent = text || '';
    clearTimeout(statusTimer);
    statusTimer = setTimeout(() => { statusBox.textContent = ''; }, 5000);
  };

  // Once a request has gone through on the cookie alone, the token is not needed in the URL:
  // it leaves the address bar (and so the history, bookmarks and screenshots).
  function forgetTokenInURL() {
    const q = new URLSearchParams(location.search);
    if (!q.has('token')) return;
    q.delete('token');
    const rest = q.toString();
    history.replaceState(history.state, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
  }
  // One helper for every request: JSON (the server takes a change only as application/json,
  // from this page's own origin), the cookie, and {error, hint} shown.
  FD.api = async function api(path, opts) {
    const o = opts || {};
    const method = o.method || 'GET';
    const headers = { Accept: o.text ? 'text/plain' : 'application/json' };
    const changes = method !== 'GET' && method !== 'HEAD';
    if (changes) headers['Content-Type'] = 'application/json';
    let res;
    try {
      res = await fetch(path, { method, headers, credentials: 'same-origin',
        body: changes ? JSON.stringify(o.body === undefined ? {} : o.body) : undefined });
    } catch (e) {
      return fail({ error: 'Cannot reach flowdir serve', hint: 'Check that `flowdir serve` is still running, then try again.' }, o);
    }
    if (!res.ok) {
      let j = {};
      try { j = await res.json(); } catch (e) { /* not JSON */ }
      return fail({ error: j.error || ('HTTP ' + res.status + ' ' + res.statusText), hint: j.hint, status: res.status }, o);
    }
    forgetTokenInURL();
    if (o.text) return res.text();
    const j = await res.json();
    if (j && j.message && changes) FD.announce(j.message);
    return j;
  };
  function fail(err, o) {
    if (!o.quiet) FD.showError(err);
    const e = new Error(err.error); Object.assign(e, err, { shown: !o.quiet }); throw e;
  }
  // Runs an action; errors are already shown by api(), so they end here.
  FD.act = async (fn) => { try { return await fn(); } catch (e) { if (!e.shown) FD.showError({ error: e.message }); return null; } };

  // ---- status words and classes ----------------------------------------------------------
  const RUNNING = ['runningLocal', 'queuedRemote', 'runningRemote', 'downloading'];
  FD.stateClass = (state) => state === 'awaitingUser' ? 'awaiting' : RUNNING.includes(state) ? 'running'
    : state === 'succeeded' ? 'done' : (state === 'failed' || state === 'cancelled') ? 'failed'
    : state === 'blocked' ? 'blocked' : 'idle';
  FD.isRunning = (state) => RUNNING.includes(state);
  const ROW_STATUS = { running: ['Running', 'running'], waiting: ['Needs input', 'awaiting'], blocked: ['Blocked', 'blocked'],
    ready: ['Ready', 'idle'], failed: ['Failed', 'failed'], done: ['Done', 'done'], empty: ['Empty', 'idle'], unreadable: ['Unreadable', 'failed'] };
  const statusChip = (status) => {
    const [words, cls] = ROW_STATUS[status] || [status, 'idle'];
    return '<span class="chip st-' + cls + '">' + esc(words) + '</span>';
  };
  const stepsBar = (done, total, label) => '<span>' + esc(done) + ' of ' + esc(total) + ' steps</span>' +
    '<progress max="' + (Number(total) || 1) + '" value="' + (Number(done) || 0) + '" aria-label="' + esc(label) + '">' +
    esc(done) + ' of ' + esc(total) + '</progress>';
  FD.stepsBar = stepsBar; FD.statusChip = statusChip;

  // ---- keyed DOM patching that keeps focus, scroll and untouched nodes ----------------------
  // items: [{key, sig, html}] — an element is replaced only when its sig changed.
  FD.patch = function patch(container, items) {
    const active = document.activeElement;
    const focusId = active && container.contains(active) ? active.getAttribute('data-testid') : null;
    const sel = focusId && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
    const old = new Map();
    for (const el of Array.from(container.children)) old.set(el.dataset.key, el);
    items.forEach((item, i) => {
      let el = old.get(item.key);
      if (el && el._sig !== item.sig) { el.remove(); el = null; }
      if (!el) {
        const t = document.createElement('template'); t.innerHTML = item.html.trim();
        el = t.content.firstElementChild; el.dataset.key = item.key; el._sig = item.sig;
      }
      old.delete(item.key);
      if (container.children[i] !== el) container.insertBefore(el, container.children[i] || null);
    });
    for (const el of old.values()) el.remove();
    if (focusId && !container.contains(document.activeElement)) {
      const again = byTestId(focusId, container);
      if (again) {
        again.focus({ preventScroll: true });
        if (sel) try { again.setSelectionRange(sel[0], sel[1]); } catch (e) { /* not a text field */ }
      }
    }
  };

  function rendered() {
    S.rev += 1;
    document.body.dataset.rev = String(S.rev);
    document.body.dataset.ready = '1';
  }
  FD.rendered = rendered;

  // ---- router ----------------------------------------------------------------------------
  function parseRoute() {
    const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] === 'inbox') return { page: 'inbox' };
    if (parts[0] === 'settings') return { page: 'settings' };
    if (parts[0] === 'w' && parts[1]) return { page: 'detail', id: parts[1], node: parts[2] || null };
    return { page: 'list' };
  }
  function route() {
    const r = parseRoute(), prev = S.route;
    S.route = r;
    if (FD.closeDialogs) FD.closeDialogs();
    FD.clearError();
    document.body.dataset.page = r.page;
    for (const a of document.querySelectorAll('.tab')) {
      const on = a.dataset.tab === (r.page === 'inbox' || r.page === 'settings' ? r.page : 'workflows');
      if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    if (r.page === 'detail' && prev.page === 'detail' && prev.id === r.id) {
      if (r.node) FD.focusNode(r.node);
      return;
    }
    if (r.page !== 'detail' || !prev || prev.id !== r.id) { S.expanded = new Set(); S.drafts = {}; S.logs = {}; S.detail = null; FD.forgetHistory(); }
    main.innerHTML = '<p class="loading">Loading…</p>';
    S.renderSeq += 1;
    if (r.page === 'list') FD.showList();
    else if (r.page === 'inbox') FD.showInbox();
    else if (r.page === 'settings') FD.showSettings();
    else FD.showDetail(r.id, r.node);
  }
  FD.go = (hash) => { if (location.hash === hash) route(); else location.hash = hash; };
  window.addEventListener('hashchange', route);

  // Refresh whatever the page shows (after an action or a `changed` event).
  FD.refresh = function refresh() {
    const r = S.route;
    if (r.page !== 'inbox') refreshCount();
    if (r.page === 'list') return FD.loadList();
    if (r.page === 'inbox') return FD.loadInbox();
    if (r.page === 'detail') return FD.loadDetail();
    if (r.page === 'settings') return FD.refreshSettings();
  };

  // ---- Workflows list ----------------------------------------------------------------------
  const FILTERS = [['all', 'All'], ['active', 'Active'], ['done', 'Done'], ['failed', 'Failed']];
  FD.showList = function () {
    const L = S.list;
    main.innerHTML =
      '<div class="page-head"><h1 tabindex="-1">Workflows</h1>' +
      '<button type="button" class="btn primary" data-action="new" data-testid="new-from-template">+ New from Template</button></div>' +
      '<div class="toolbar" role="search">' +
      '<label class="visually-hidden" for="search">Search workflows</label>' +
      '<input type="search" id="search" data-testid="search" placeholder="Search workflows" value="' + esc(L.search) + '">' +
      '<div class="segmented" role="group" aria-label="Show">' + FILTERS.map(([v, t]) =>
        '<button type="button" class="btn" data-action="filter" data-value="' + v + '" data-testid="filter-' + v + '" aria-pressed="' +
        (L.filter === v) + '">' + t + '</button>').join('') + '</div>' +
      '<label>Sort <select data-testid="sort" id="sort"><option value="recent">Recent</option><option value="name">Name</option></select></label>' +
      '<label class="radio"><input type="checkbox" id="show-archived" data-testid="show-archived"' + (L.archived ? ' checked' : '') + '> Show archived</label>' +
      '</div><ul class="rows" id="rows" aria-label="Workflows"></ul>' +
      '<div id="list-empty" class="empty" data-testid="list-empty" hidden></div>';
    document.getElementById('sort').value = L.sort;
    document.getElementById('search').addEventListener('input', (e) => { L.search = e.target.value; debounce('search', FD.loadList, 200); });
    document.getElementById('sort').addEventListener('change', (e) => { L.sort = e.target.value; FD.loadList(); });
    document.getElementById('show-archived').addEventListener('change', (e) => { L.archived = e.target.checked; FD.loadList(); });
    main.querySelector('h1').focus({ preventScroll: true });
    return FD.loadList();
  };
  FD.loadList = async function () {
    const L = S.list, seq = S.renderSeq;
    const q = '?filter=' + enc(L.filter) + '&sort=' + enc(L.sort) + '&search=' + enc(L.search) + '&archived=' + (L.archived ? 1 : 0);
    const data = await FD.act(() => FD.api('/api/instances' + q));
    if (!data || seq !== S.renderSeq || S.route.page !== 'list') return;
    const rows = data.rows || [];
    document.title = 'Workflows · flowdir';
    FD.patch(document.getElementById('rows'), rows.map((r) => ({ key: r.id || r.path, sig: JSON.stringify(r), html: rowHTML(r) })));
    const empty = document.getElementById('list-empty');
    const filtered = L.search || L.filter !== 'all';
    empty.hidden = rows.length > 0;
    empty.innerHTML = filtered ? 'No workflows match.' :
      '<p>No workflows yet — create one from a template.</p><button type="button" class="btn primary" data-action="new">+ New from Template</button>';
    rendered();
  };
  function rowHTML(r) {
    const id = r.id, title = r.title || r.path;
    const thumb = r.thumb ? '<img class="thumb" loading="lazy" src="' + esc(r.thumb) + '" alt="Latest output of ' + esc(title) + '">'
      : '<span class="thumb none" aria-hidden="true">—</span>';
    // A red dot, in words too, when a question holds the workflow up (an await that is `blocking`, the default).
    const awaits = r.awaits ? '<span class="chip await-badge' + (r.blocking ? ' blocking' : '') + '" data-testid="awaits-' + esc(id) + '" data-blocking="' + esc(r.blocking || 0) + '">' +
      (r.blocking ? '<span class="red-dot" aria-hidden="true"></span>' : '') + esc(r.awaits) + ' waiting for you' + (r.blocking ? '<span class="visually-hidden"> (holding it up)</span>' : '') + '</span>' : '';
    const total = r.total !== undefined ? r.total : (String(r.steps).split(' of ')[1] || 0);
    const done = r.done !== undefined ? r.done : (String(r.steps).split(' of ')[0] || 0);
    return '<li class="row" data-testid="row-' + esc(id) + '" data-status="' + esc(r.status) + '">' + thumb +
      '<div class="row-main"><div class="row-line"><a class="row-title" href="#/w/' + esc(enc(id)) + '" data-testid="open-row-' + esc(id) + '">' +
      esc(title) + '</a>' + statusChip(r.status) + (r.archived ? '<span class="chip">Archived</span>' : '') + awaits + '</div>' +
      '<div class="row-line muted">' + stepsBar(done, total, 'Progress of ' + title) + '</div>' +
      '<div class="row-line muted">' + (r.updatedAt ? 'updated ' + timeTag(r.updatedAt, FD.ago(r.updatedAt)) : '') +
      (r.problem ? ' · <span class="chip st-failed">' + esc(r.problem) + '</span>' : '') + '</div></div>' +
      (id ? '<div class="row-actions">' +
        '<button type="button" class="btn small" data-action="duplicate" data-id="' + esc(id) + '" data-testid="dup-' + esc(id) + '" aria-label="Duplicate ' + esc(title) + '">Duplicate</button>' +
        '<button type="button" class="btn small" data-action="archive" data-id="' + esc(id) + '" data-archived="' + (r.archived ? 0 : 1) + '" data-testid="archive-' + esc(id) +
        '" aria-label="' + (r.archived ? 'Unarchive ' : 'Archive ') + esc(title) + '">' + (r.archived ? 'Unarchive' : 'Archive') + '</button>' +
        '<button type="button" class="btn small danger" data-action="delete" data-id="' + esc(id) + '" data-title="' + esc(title) + '" data-testid="delete-' + esc(id) +
        '" aria-label="Delete ' + esc(title) + '">Delete</button></div>' : '') + '</li>';
  }

  // ---- Action Center -------------------------------------------------------------------------
  FD.showInbox = function () {
    main.innerHTML = '<h1 tabindex="-1">Action Center</h1><div id="inbox"></div>';
    main.querySelector('h1').focus({ preventScroll: true });
    return FD.loadInbox();
  };
  FD.loadInbox = async function () {
    const seq = S.renderSeq;
    const data = await FD.act(() => FD.api('/api/inbox'));
    if (!data || seq !== S.renderSeq || S.route.page !== 'inbox') return;
    const items = data.items || [];
    setCount(items.filter((i) => i.section === 'Pending').length);
    FD.noticeQuestions(items);
    const box = document.getElementById('inbox');
    if (!box.children.length) {
      box.innerHTML = ['Pending', 'Snoozed', 'Done'].map((s) => '<section aria-labelledby="h-' + s + '" data-testid="section-' + s.toLowerCase() + '">' +
        '<h2 id="h-' + s + '"></h2><ul class="section-list" id="list-' + s + '"></ul></section>').join('') +
        '<div class="empty" data-testid="inbox-empty" id="inbox-empty" hidden><p>You\'re all set!</p><p class="muted">Nothing is waiting for you.</p></div>';
    }
    for (const s of ['Pending', 'Snoozed', 'Done']) {
      const list = items.filter((i) => i.section === s);
      document.getElementById('h-' + s).textContent = s + ' (' + list.length + ')';
      document.getElementById('h-' + s).parentElement.hidden = s !== 'Pending' && !list.length;
      // Grouped by workflow, each where its first (most pressing) question comes.
      const groups = new Map();
      for (const i of list) { if (!groups.has(i.instanceId)) groups.set(i.instanceId, []); groups.get(i.instanceId).push(i); }
      // Each group's shell, then its rows one by one: a change redraws its own row only.
      const shells = document.getElementById('list-' + s);
      FD.patch(shells, [...groups.values()].map((g) => ({ key: g[0].instanceId, sig: g[0].title,
        html: '<li class="group" data-testid="group-' + esc(s.toLowerCase()) + '-' + esc(g[0].instanceId) + '"><h3 class="group-title">' + esc(g[0].title) +
          '</h3><ul class="section-list"></ul></li>' })));
      for (const g of groups.values()) {
        const shell = Array.from(shells.children).find((el) => el.dataset.key === g[0].instanceId);
        FD.patch(shell.querySelector('ul'), g.map((i) => ({ key: i.instanceId + '/' + i.node + '/' + i.id, sig: JSON.stringify(i), html: itemHTML(i) })));
      }
    }
    const pending = items.some((i) => i.section === 'Pending');
    document.title = 'Action Center' + (pending ? ' (' + items.filter((i) => i.section === 'Pending').length + ')' : '') + ' · flowdir';
    document.getElementById('inbox-empty').hidden = pending;
    document.querySelector('[data-testid="section-pending"]').hidden = !pending;
    rendered();
  };
  function itemHTML(i) {
    const key = i.instanceId + '-' + i.node, done = i.section === 'Done';
    const when = ['added ' + timeTag(i.createdAt, FD.ago(i.createdAt))];
    if (i.expiresAt && !done) when.push('expires ' + timeTag(i.expiresAt, FD.until(i.expiresAt)));
    if (i.snoozedUntil) when.push('snoozed until ' + timeTag(i.snoozedUntil, new Date(i.snoozedUntil).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })));
    if (i.claimedBy) when.push('claimed by ' + esc(i.claimedBy));
    if (done) when.push(esc(i.outcome || 'done') + (i.doneAt ? ' ' + timeTag(i.doneAt, FD.ago(i.doneAt)) : '') + (i.doneBy ? ' by ' + esc(i.doneBy) : ''));
    const who = esc(i.title) + ' · ' + esc(i.node);
    return '<li class="item' + (i.urgency === 'blocking' ? ' blocking' : '') + '" data-testid="await-' + esc(key) + '" data-section="' + esc(i.section) + '">' +
      (i.preview ? '<img class="item-preview" loading="lazy" src="' + esc(i.preview) + '" alt="" data-testid="preview-' + esc(key) + '">' : '') +
      '<div class="item-main"><div><strong>' + esc(i.node) + '</strong> <span class="muted">· ' + esc(i.type.replace('_', ' ')) + '</span>' +
      (i.urgency === 'blocking' ? ' <span class="chip st-urgent">Blocking</span>' : '') + '</div>' +
      '<div>' + esc(i.question) + '</div><div class="muted mini">' + when.join(' · ') + '</div></div>' +
      '<div class="item-actions">' +
      '<button type="button" class="btn small primary" data-action="open-await" data-id="' + esc(i.instanceId) + '" data-node="' + esc(i.node) +
      '" data-testid="open-' + esc(key) + '" aria-label="Open ' + who + '">Open</button>' +
      (done ? '' : '<button type="button" class="btn small" data-action="node" data-op="snooze" data-id="' + esc(i.instanceId) + '" data-node="' + esc(i.node) +
        '" data-testid="snooze-' + esc(key) + '" aria-label="Snooze ' + who + ' for 1 hour">Snooze 1 h</button>' + FD.snoozeMenu(i, key, who)) +
      (done || i.skippable === false ? '' : '<button type="button" class="btn small" data-action="node" data-op="skip" data-id="' + esc(i.instanceId) + '" data-node="' + esc(i.node) +
        '" data-testid="skip-' + esc(key) + '" aria-label="Skip ' + who + '">Skip</button>') +
      '</div></li>';
  }
  function setCount(n) {
    const b = byTestId('nav-inbox-count');
    b.hidden = !n; b.dataset.count = String(n);
    b.innerHTML = n ? n + '<span class="visually-hidden"> pending</span>' : '';
  }
  async function refreshCount() {
    const data = await FD.act(() => FD.api('/api/inbox', { quiet: true })).catch(() => null);
    if (!data) return;
    setCount((data.items || []).filter((i) => i.section === 'Pending').length);
    FD.noticeQuestions(data.items);
  }

  // ---- actions (one delegated click handler) ---------------------------------------------------
  const nodePath = (id, node) => '/api/instances/' + enc(id) + '/nodes/' + enc(node);
  const ACTIONS = {
    'dismiss-alert': () => FD.clearError(),
    'skip-to-main': () => { const h = main.querySelector('h1') || main; h.focus(); },
    filter: (b) => {
      S.list.filter = b.dataset.value;
      for (const x of main.querySelectorAll('[data-action="filter"]')) x.setAttribute('aria-pressed', String(x === b));
      FD.loadList();
    },
    new: () => FD.newFromTemplate(),
    duplicate: async (b) => {
      const r = await FD.act(() => FD.api('/api/instances/' + enc(b.dataset.id) + '/duplicate', { method: 'POST', body: {} }));
      if (r && r.id && S.route.page === 'detail') FD.go('#/w/' + enc(r.id)); else if (r) FD.refresh();
    },
    archive: async (b) => {
      const r = await FD.act(() => FD.api('/api/instances/' + enc(b.dataset.id) + '/archive', { method: 'POST', body: { archived: b.dataset.archived === '1' } }));
      if (r) FD.refresh();
    },
    delete: async (b) => {
      const ok = await FD.confirm({ testid: 'delete-confirm', text: 'Delete “' + b.dataset.title + '”? Its folder and history are removed.', ok: 'Delete', danger: true });
      if (!ok) return;
      const r = await FD.act(() => FD.api('/api/instances/' + enc(b.dataset.id), { method: 'DELETE' }));
      if (r) { if (S.route.page === 'detail') FD.go('#/'); else FD.refresh(); }
    },
    'open-await': (b) => FD.go('#/w/' + enc(b.dataset.id) + '/' + enc(b.dataset.node)),
    node: async (b) => {
      const op = b.dataset.op, body = op === 'snooze' ? { seconds: Number(b.dataset.seconds) || 3600 } : undefined;
      b.disabled = true;
      const r = await FD.act(() => FD.api(nodePath(b.dataset.id, b.dataset.node) + '/' + op, { method: 'POST', body }));
      b.disabled = false;
      if (r) FD.refresh();
    },
  };
  FD.actions = ACTIONS;
  FD.nodePath = nodePath;
  document.addEventListener('click', (e) => {
    const b = e.target.closest('[data-action]');
    if (!b || b.disabled) return;
    const fn = ACTIONS[b.dataset.action];
    if (fn) { e.preventDefault(); fn(b, e); }
  });

  // ---- Workflow detail: toolbar and tool cards ---------------------------------------------------
  const reducedMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  FD.showDetail = function (id, node) {
    main.innerHTML = '<div id="detail-head"></div><ul class="cards" id="cards" aria-label="Tool cards"></ul>';
    S.pendingFocus = node || null;
    S.firstDetail = true;
    return FD.loadDetail();
  };
  FD.loadDetail = async function () {
    const id = S.route.id, seq = S.renderSeq;
    const d = await FD.act(() => FD.api('/api/instances/' + enc(id)));
    if (seq !== S.renderSeq || S.route.page !== 'detail' || S.route.id !== id) return;
    if (!d) {
      if (!S.detail) main.innerHTML = '<h1 tabindex="-1">Workflow not available</h1><p><a href="#/">Back to Workflows</a></p>';
      return;
    }
    S.detail = d;
    document.title = d.title + ' · flowdir';
    renderHead(d);
    FD.renderCards();
    for (const c of d.nodes || []) if (S.expanded.has(c.id) && (FD.isRunning(c.state) || S.logs[c.id] === undefined)) loadLog(c);
    // Runs come and go with every commit: an open card's history is fetched again.
    for (const c of d.nodes || []) if (S.expanded.has(c.id)) FD.loadHistory(id, c.id);
    rendered();
    if (S.pendingFocus) { const n = S.pendingFocus; S.pendingFocus = null; FD.focusNode(n); }
    else if (S.firstDetail) main.querySelector('h1').focus({ preventScroll: true });
    S.firstDetail = false;
    if (FD.editorSync) FD.editorSync(d);
  };
  function renderHead(d) {
    const paused = d.polling === 'paused';
    const tip = 'Pauses status checks only; remote job continues running.';
    // Only where there is something to poll: a remote step (or polling left paused, to resume it).
    const remote = paused || (d.nodes || []).some((c) => c.resourceClass === 'remote' || c.state === 'queuedRemote' || c.state === 'runningRemote');
    const html = '<div class="detail-head"><p><a href="#/">← Workflows</a></p>' +
      '<div class="page-head"><h1 tabindex="-1" data-testid="detail-title">' + esc(d.title) + '</h1>' + statusChip(d.status) + '</div>' +
      '<div class="row-line muted">' + stepsBar(d.done, d.total, 'Progress of ' + d.title) +
      (d.updatedAt ? ' · updated ' + timeTag(d.updatedAt, FD.ago(d.updatedAt)) : '') + (d.archived ? ' · <span class="chip">Archived</span>' : '') + '</div>' +
      '<div class="toolbar" role="group" aria-label="Workflow actions">' +
      '<button type="button" class="btn primary" data-action="run-all" data-testid="run-all">▶ Run all ready</button>' +
      (remote ? '<button type="button" class="btn" data-action="polling" data-testid="polling-toggle" aria-pressed="' + paused + '" title="' + tip + '" aria-describedby="polling-tip">' +
      (paused ? 'Resume polling' : 'Pause polling') + '</button>' : '') +
      '<button type="button" class="btn" data-action="duplicate" data-id="' + esc(d.id) + '" data-testid="duplicate">Duplicate</button>' +
      (remote ? '<span id="polling-tip" class="muted mini">' + (paused ? 'Polling paused: status checks are off; remote jobs keep running.' : tip) + '</span>' : '') + '</div></div>';
    FD.patch(document.getElementById('detail-head'), [{ key: 'head', sig: html, html }]);
  }
  FD.renderCards = function () {
    const d = S.detail, list = document.getElementById('cards');
    if (!d || !list) return;
    FD.patch(list, (d.nodes || []).map((c) => ({ key: c.id, sig: JSON.stringify(c) + S.expanded.has(c.id), html: cardHTML(c) })));
    // A card drawn again while it pulses goes on from where it was (set here: the pages allow no inline style).
    for (const el of list.querySelectorAll('[data-pulse-delay]')) {
      el.style.animationDelay = '-' + el.dataset.pulseDelay + 's';
      el.removeAttribute('data-pulse-delay');
    }
    for (const pre of list.querySelectorAll('pre[data-log]')) {
      const t = S.logs[pre.dataset.log];
      if (t !== undefined && pre.textContent !== t) { pre.textContent = t; pre.scrollTop = pre.scrollHeight; }
    }
  };
  function chipText(c) {
    let t = c.label || c.state;
    if (c.state === 'failed') { const code = (c.lastRun && c.lastRun.error) || c.reason; if (code) t += ': ' + code; }
    if (c.state === 'blocked' && c.reason && !/^Blocked/.test(t)) t = 'Blocked: ' + c.reason;
    return t.length > 60 ? t.slice(0, 57) + '…' : t;
  }
  function cardHTML(c) {
    const cls = FD.stateClass(c.state), n = esc(c.id), open = S.expanded.has(c.id), awaiting = c.state === 'awaitingUser' && c.await;
    const sub = [];
    if (c.digest) sub.push('<span class="digest">' + esc(c.digest) + '</span>');
    if (FD.isRunning(c.state)) {
      sub.push(typeof c.progress === 'number' ? '<progress max="1" value="' + c.progress + '" aria-label="Progress of ' + n + '"></progress> ' + Math.round(c.progress * 100) + '%'
        : '<progress aria-label="Progress of ' + n + '"></progress>');
    }
    if (c.note) sub.push('<span>' + esc(c.note) + '</span>');
    if (c.reason && c.state !== 'failed' && c.state !== 'blocked') sub.push('<span>' + esc(c.reason) + '</span>');
    if (c.state === 'failed' && c.reason && c.lastRun && c.lastRun.error && c.reason !== c.lastRun.error) sub.push('<span>' + esc(c.reason) + '</span>');
    if (c.paramsEdited && c.lastRun) sub.push('<span>params edited since run ' + esc(c.lastRun.run) + '</span>');
    const made = c.lastRun && c.lastRun.outputs && c.lastRun.outputs[0];
    if (made && c.state === 'succeeded') sub.push('<span class="mini">' + esc(made.port) + ' · ' + esc(made.type) + ' · ' + esc(made.absent || FD.size(made.size)) +
      (c.lastRun.finishedAt ? ' · ' + timeTag(c.lastRun.finishedAt, FD.ago(c.lastRun.finishedAt)) : '') + '</span>');
    if (awaiting) sub.push('<strong>' + esc(c.await.title) + '</strong>' + (c.await.claimedBy ? ' <span>claimed by ' + esc(c.await.claimedBy) + '</span>' : ''));
    const pulse = S.pulse && S.pulse.node === c.id && Date.now() < S.pulse.until;
    const head = '<button type="button" class="card-head" data-action="card" data-node="' + n + '" data-testid="card-head-' + n + '" ' +
      (awaiting ? 'aria-haspopup="dialog"' : 'aria-expanded="' + open + '" aria-controls="card-body-' + n + '"') + '>' +
      '<span class="card-title">' + n + '<span class="kind">' + esc(c.kind) + '</span></span>' +
      '<span class="chip st-' + cls + '" data-testid="chip-' + n + '">' + esc(chipText(c)) + '</span>' +
      '<span class="card-sub">' + sub.join('') + (awaiting ? '<span class="answer-cue">Click to answer</span>' : '') + '</span></button>';
    return '<li class="card state-' + cls + (awaiting && !reducedMotion() ? ' awaiting-motion' : '') + (pulse ? ' pulse' : '') + '" id="card-' + n +
      '" data-testid="card-' + n + '" data-state="' + esc(c.state) + '"' +
      (pulse ? ' data-pulse-delay="' + ((6000 - (S.pulse.until - Date.now())) / 1000).toFixed(2) + '"' : '') + '>' +
      head + FD.cardActions(c, S.detail.id, S.detail.nodes) + (open ? cardBody(c) : '') + '</li>';
  }
  function cardBody(c) {
    const n = esc(c.id), parts = [];
    if (c.params && c.params.length) {
      const drafts = S.drafts[c.id] || {};
      parts.push('<section aria-label="Parameters of ' + n + '"><h3>Parameters</h3><form class="params-form" data-node="' + n + '" novalidate><div class="form-grid">' +
        c.params.map((p) => FD.paramField(p, drafts[p.name], 'p-' + c.id + '-' + p.name, 'param-' + c.id + '-' + p.name)).join('') + '</div>' +
        '<div class="form-actions"><button type="submit" class="btn primary" data-testid="save-params-' + n + '">Save params</button>' +
        '<button type="button" class="btn" data-action="reset-params" data-node="' + n + '" data-testid="reset-params-' + n + '">Reset to defaults</button>' + FD.presetPicker(c) + '</div></form></section>');
    }
    if (c.inputs && c.inputs.length) {
      parts.push('<section aria-label="Inputs of ' + n + '"><h3>Inputs (read-only)</h3><dl class="dl">' +
        c.inputs.map((i) => '<dt>' + esc(i.port) + '</dt><dd>' + esc(i.type) + (i.from ? ' from ' + esc(i.from) : '') + '</dd>').join('') + '</dl></section>');
    }
    const btn = (op, text) => '<button type="button" class="btn small" data-action="node" data-op="' + op + '" data-id="' + esc(S.detail.id) + '" data-node="' + n +
      '" data-testid="' + op + '-' + n + '" aria-label="' + esc(text) + ' ' + n + '">' + esc(text) + '</button>';
    const run = [];
    if (FD.isRunning(c.state)) run.push(btn('cancel', 'Cancel'));
    if (c.state === 'failed' || c.state === 'cancelled') run.push(btn('retry', 'Retry'));
    if (c.state !== 'awaitingUser' && !FD.isRunning(c.state)) run.push(btn('rerun', 'Re-run with latest'));
    const lr = c.lastRun;
    parts.push('<section aria-label="Run and status of ' + n + '"><h3>Run &amp; status</h3><p>' + esc(c.label || c.state) +
      (c.run ? ' · run ' + esc(c.run) : '') + (c.job ? ' · job ' + esc(c.job) : '') +
      (typeof c.progress === 'number' && FD.isRunning(c.state) ? ' · ' + Math.round(c.progress * 100) + '%' : '') + '</p>' +
      (lr && lr.error ? '<p class="chip st-failed">' + esc(lr.error) + '</p>' : '') +
      (lr && lr.exitCode !== null && lr.exitCode !== undefined ? '<p class="muted mini">exit code ' + esc(lr.exitCode) + '</p>' : '') +
      '<div class="form-actions">' + run.join('') + '</div>' +
      (c.run ? '<pre class="log" data-log="' + n + '" data-testid="log-' + n + '" tabindex="0" role="region" aria-label="Log of ' + n + '">' + esc((c.logTail || []).join('\n')) + '</pre>' : '') + '</section>');
    if (c.outputs && c.outputs.length) {
      // Content not on this machine (its file is the pointer): said so, with how to get it; nothing to view.
      parts.push('<section aria-label="Outputs of ' + n + '"><h3>Outputs</h3><div class="tiles">' + c.outputs.map((o) => o.absent
        ? '<div class="tile absent" data-testid="output-' + n + '-' + esc(o.port) + '" data-absent="1"><span><strong>' + esc(o.port) + '</strong> · ' + esc(o.type) +
          '</span><span>' + esc(o.absent) + '</span><span class="mini">Get it with <code>' + esc(o.get || '') + '</code></span></div>'
        : '<button type="button" class="tile" data-action="view" data-url="' + esc(o.url) + '" data-type="' + esc(o.type) + '" data-name="' + esc(o.file) +
        '" data-testid="output-' + n + '-' + esc(o.port) + '" aria-label="View output ' + esc(o.port) + ' (' + esc(o.file) + ')">' +
        (o.thumb ? '<img loading="lazy" src="' + esc(o.thumb) + '" alt="">' : '') +
        '<span><strong>' + esc(o.port) + '</strong> · ' + esc(o.type) + '</span><span>' + esc(FD.size(o.size || 0)) + '</span></button>').join('') + '</div></section>');
    }
    if (FD.historySection) parts.push(FD.historySection(c));
    return '<div class="card-body" id="card-body-' + n + '" data-testid="card-body-' + n + '">' + parts.join('') + '</div>';
  }

  const cardOf = (node) => ((S.detail && S.detail.nodes) || []).find((c) => c.id === node);
  async function loadLog(c) {
    const t = await FD.act(() => FD.api(nodePath(S.detail.id, c.id) + '/log', { text: true, quiet: true })).catch(() => null);
    if (typeof t !== 'string') return;
    S.logs[c.id] = t;
    const pre = byTestId('log-' + c.id);
    if (pre && pre.textContent !== t) {
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
      pre.textContent = t;
      if (atEnd || !pre.dataset.seen) pre.scrollTop = pre.scrollHeight;
      pre.dataset.seen = '1';
    }
  }
  FD.focusNode = function (node) {
    const el = byTestId('card-' + node);
    if (!el) return;
    S.pulse = { node, until: Date.now() + 6000 };
    el.classList.remove('pulse'); void el.offsetWidth; el.classList.add('pulse'); el.style.animationDelay = '0s';
    el.scrollIntoView({ behavior: reducedMotion() ? 'auto' : 'smooth', block: 'center' });
    byTestId('card-head-' + node, el).focus({ preventScroll: true });
    clearTimeout(timers.pulse);
    timers.pulse = setTimeout(() => { S.pulse = null; const e = byTestId('card-' + node); if (e) e.classList.remove('pulse'); }, 6000);
  };
  Object.assign(ACTIONS, {
    card: (b) => {
      const c = cardOf(b.dataset.node);
      if (!c) return;
      if (c.state === 'awaitingUser' && c.await) return FD.claimAndOpen(c);
      if (S.expanded.has(c.id)) S.expanded.delete(c.id); else S.expanded.add(c.id);
      FD.renderCards();
      if (S.expanded.has(c.id)) { loadLog(c); FD.loadHistory(S.detail.id, c.id); }
    },
    'reset-params': (b) => {
      const c = cardOf(b.dataset.node), form = b.closest('form');
      if (c && form) { FD.resetFields(form, c.params); FD.announce('Defaults filled in; Save to keep them.'); }
    },
    'run-all': async () => { await FD.act(() => FD.api('/api/instances/' + enc(S.detail.id) + '/run', { method: 'POST' })); FD.refresh(); },
    polling: async () => {
      const paused = S.detail.polling !== 'paused';
      const r = await FD.act(() => FD.api('/api/instances/' + enc(S.detail.id) + '/polling', { method: 'POST', body: { paused } }));
      if (r) FD.refresh();
    },
    view: (b) => FD.viewer(b.dataset.url, b.dataset.name, b.dataset.type),
  });
  FD.claimAndOpen = async function (c) {
    const r = await FD.act(() => FD.api(nodePath(S.detail.id, c.id) + '/claim', { method: 'POST' }));
    if (r) FD.openEditor(S.detail, c);
  };
  // Unsaved edits survive live re-renders.
  main.addEventListener('input', (e) => {
    const el = e.target, form = el.closest('.params-form');
    if (!form || !el.dataset.param) return;
    const d = S.drafts[form.dataset.node] = S.drafts[form.dataset.node] || {};
    d[el.dataset.param] = el.type === 'checkbox' ? el.checked : el.value;
  });
  main.addEventListener('change', (e) => { if (e.target.type === 'checkbox' || e.target.tagName === 'SELECT') e.target.dispatchEvent(new Event('input', { bubbles: true })); });
  main.addEventListener('submit', async (e) => {
    const form = e.target.closest('.params-form');
    if (!form) return;
    e.preventDefault();
    const c = cardOf(form.dataset.node);
    let params;
    try { params = FD.readParams(form, c.params); } catch (err) { FD.showError(err); if (err.el) err.el.focus(); return; }
    const r = await FD.act(() => FD.api(nodePath(S.detail.id, c.id) + '/params', { method: 'PUT', body: { params } }));
    if (r) { delete S.drafts[c.id]; FD.refresh(); }
  });

  // ---- timers (live updates over server-sent events: live.js) -------------------------------------
  const timers = {};
  const last = {};
  // The first change at once; the rest of a burst (a run commits often) once it has been quiet for `ms`.
  function debounce(name, fn, ms) {
    const now = performance.now();
    if (!timers[name] && !(now - (last[name] || -1e9) < ms)) { last[name] = now; fn(); return; }
    clearTimeout(timers[name]);
    timers[name] = setTimeout(() => { timers[name] = 0; last[name] = performance.now(); fn(); }, ms);
  }
  FD.debounce = debounce;
  FD.refreshCount = refreshCount;
  function start() {
    route();
    if (S.route.page !== 'inbox') refreshCount();
    FD.connect();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();