/* flowdir serve: settings.js. The Settings page (docs/serve.md, "Settings"): this server's address and
 * token file, each endpoint with whether it answers, storage (usage, Free up space with its preview, pins),
 * paused polling, and what the config says. No token is ever sent to the page: the server leaves them out. */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const esc = (v) => FD.esc(v);
  const enc = encodeURIComponent;
  const size = (n) => FD.size(Number(n) || 0);
  let preview = null;  // the Free up space preview on show, until freed or closed

  const row = (k, v, testid) => '<tr' + (testid ? ' data-testid="' + esc(testid) + '"' : '') + '><th scope="row">' + esc(k) + '</th><td>' + v + '</td></tr>';
  const list = (items) => items && items.length ? items.map((x) => '<code>' + esc(x) + '</code>').join(', ') : '<span class="muted">none</span>';

  FD.showSettings = function () {
    preview = null;
    document.getElementById('main').innerHTML = '<h1 tabindex="-1">Settings</h1>' +
      '<section aria-labelledby="h-server" data-testid="settings-server"><h2 id="h-server">This server</h2><div id="set-server"></div></section>' +
      '<section aria-labelledby="h-endpoints" data-testid="settings-endpoints"><h2 id="h-endpoints">Endpoints</h2><div id="set-endpoints"></div></section>' +
      '<section aria-labelledby="h-storage" data-testid="settings-storage"><h2 id="h-storage">Storage</h2><div id="set-storage"></div><div id="set-free"></div></section>' +
      '<section aria-labelledby="h-polling" data-testid="settings-polling"><h2 id="h-polling">Polling</h2><div id="set-polling"></div></section>' +
      '<section aria-labelledby="h-config" data-testid="settings-config"><h2 id="h-config">Config</h2><div id="set-config"></div></section>';
    document.querySelector('#main h1').focus({ preventScroll: true });
    document.title = 'Settings · flowdir';
    return FD.loadSettings();
  };

  FD.loadSettings = async function () {
    const seq = FD.state.renderSeq;
    const s = await FD.act(() => FD.api('/api/settings'));
    if (!s || seq !== FD.state.renderSeq || FD.state.route.page !== 'settings') return;
    renderServer(s.server);
    renderEndpoints(s.endpoints);
    renderPolling(s);
    renderConfig(s);
    await FD.loadStorage();
    FD.rendered();
    checkEndpoints(seq);
  };

  function renderServer(v) {
    const box = document.getElementById('set-server');
    if (!v) { box.innerHTML = '<p class="muted">Starting…</p>'; return; }
    box.innerHTML = '<table class="kv"><tbody>' +
      row('Address', '<code data-testid="server-url">' + esc(v.url) + '</code> (bound to <code>' + esc(v.host) + '</code>)') +
      row('Token', v.tokenFile ? 'kept in <code data-testid="server-token-file">' + esc(v.tokenFile) + '</code> (mode 600): the address printed at start carries it'
        : '<span data-testid="server-token-file">made up for this start</span>, printed once when the server started; give <code>--token-file</code> to keep one') +
      row('Watcher', v.watching ? 'runs in this server' : 'not here (<code>--no-watch</code>): a <code>flowdir watch</code> elsewhere advances the workflows') +
      '</tbody></table>';
  }

  function renderEndpoints(eps) {
    const box = document.getElementById('set-endpoints');
    if (!eps.length) { box.innerHTML = '<p class="muted" data-testid="endpoints-none">No endpoints in the config: remote steps (<code>run.http</code>) have nowhere to go.</p>'; return; }
    box.innerHTML = '<table class="grid"><thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Token</th><th scope="col">Polls every</th><th scope="col">Reachable</th></tr></thead><tbody>' +
      eps.map((e) => '<tr data-testid="endpoint-' + esc(e.name) + '"><th scope="row">' + esc(e.name) + '</th><td><code>' + esc(e.url) + '</code>' +
        (e.webhook ? '<div class="mini muted">webhook: <code>' + esc(e.webhook) + '</code></div>' : '') + '</td>' +
        '<td>' + (e.token ? 'set' : '<span class="warn">not set</span> <span class="mini muted">(secrets.yaml or <code>' + esc(e.tokenVariable) + '</code>)</span>') + '</td>' +
        '<td>' + esc(e.pollInterval) + ' s</td>' +
        '<td data-testid="endpoint-reach-' + esc(e.name) + '" data-reachable=""><span class="muted">checking…</span></td></tr>').join('') +
      '</tbody></table>';
  }

  async function checkEndpoints(seq) {
    if (!document.querySelector('[data-testid^="endpoint-reach-"]')) return;
    const r = await FD.act(() => FD.api('/api/settings/endpoints', { quiet: true })).catch(() => null);
    if (!r || seq !== FD.state.renderSeq) return;
    for (const c of r.endpoints) {
      const cell = FD.byTestId('endpoint-reach-' + c.name);
      if (!cell) continue;
      cell.dataset.reachable = c.reachable ? 'yes' : 'no';
      // Words and a mark, never colour alone.
      cell.innerHTML = (c.reachable ? '<span class="ok">✓ reachable</span>' : '<span class="bad">✗ not reachable</span>') +
        ' <span class="mini muted">' + esc(c.answer) + ' · ' + esc(c.ms) + ' ms</span>';
    }
  }

  FD.loadStorage = async function () {
    const st = await FD.act(() => FD.api('/api/storage'));
    const box = document.getElementById('set-storage');
    if (!st || !box) return;
    const rows = st.rows || [];
    box.innerHTML = '<p data-testid="storage-total">On this machine: <strong>' + size(st.total) + '</strong> in ' + rows.length + ' workflow' + (rows.length === 1 ? '' : 's') +
      '. Large files are kept beside git; <em>Free up space</em> drops only those the sync remote (<code>' + esc(st.remote) + '</code>) holds, never a node\'s newest run or what is pinned.</p>' +
      (rows.length ? '<table class="grid storage"><thead><tr><th scope="col">Workflow</th><th scope="col">git</th><th scope="col">Large files here</th>' +
        '<th scope="col">Not here</th><th scope="col">Pinned</th><th scope="col">Could free</th><th scope="col">Pin</th></tr></thead><tbody>' +
        rows.map(storageRow).join('') + '</tbody></table>' : '') +
      '<p><button type="button" class="btn" data-action="free-preview" data-testid="free-preview">Free up space…</button></p>';
  };

  function storageRow(r) {
    const whole = (r.pins || []).includes('');
    const nodes = (r.pins || []).filter((p) => p !== '');
    return '<tr data-testid="storage-' + esc(r.id) + '"><th scope="row"><a href="#/w/' + enc(r.id) + '">' + esc(r.title) + '</a>' +
      (r.problem ? '<div class="mini bad">' + esc(r.problem) + '</div>' : '') +
      (nodes.length ? '<div class="mini">pinned steps: ' + nodes.map((n) => esc(n) + ' <button type="button" class="btn small" data-action="pin" data-id="' + esc(r.id) +
        '" data-node="' + esc(n) + '" data-pinned="0" data-testid="unpin-' + esc(r.id) + '-' + esc(n) + '" aria-label="Unpin ' + esc(n) + ' of ' + esc(r.title) + '">Unpin</button>').join(', ') + '</div>' : '') +
      '</th><td data-label="git">' + size(r.gitBytes) + '</td><td data-label="Large files here">' + size(r.contentHere) + '</td><td data-label="Not here">' +
      size(r.contentNotHere) + '</td><td data-label="Pinned">' + size(r.pinned) +
      '</td><td data-label="Could free" data-testid="freeable-' + esc(r.id) + '">' + size(r.freeable) + '</td><td>' +
      '<button type="button" class="btn small" data-action="pin" data-id="' + esc(r.id) + '" data-pinned="' + (whole ? '0' : '1') + '" aria-pressed="' + whole +
      '" data-testid="pin-' + esc(r.id) + '" aria-label="' + (whole ? 'Unpin ' : 'Pin ') + esc(r.title) + '">' + (whole ? '📌 Pinned' : 'Pin') + '</button></td></tr>';
  }

  function renderPreview(p) {
    const box = document.getElementById('set-free');
    if (!p) { box.innerHTML = ''; return; }
    const files = new Set(p.dropped.map((d) => d.oid)).size;
    const kept = Object.entries(p.kept || {}).map(([why, n]) => n + ' kept: ' + why);
    box.innerHTML = '<div class="free-preview" data-testid="free-box" role="region" aria-label="Free up space">' +
      '<p data-testid="free-summary"><strong>' + (p.dryRun ? 'Would free ' : 'Freed ') + size(p.bytesFreed) + '</strong> (' + files + ' file' + (files === 1 ? '' : 's') + ').</p>' +
      (p.dropped.length ? '<ul class="mini" data-testid="free-list">' + p.dropped.slice(0, 200).map((d) => '<li><code>' + esc(d.path) + '</code>' +
        (d.run ? ' run ' + esc(d.run) : '') + ' · ' + size(d.size) + ' <span class="muted">' + esc(d.instance) + '</span></li>').join('') +
        (p.dropped.length > 200 ? '<li class="muted">and ' + (p.dropped.length - 200) + ' more</li>' : '') + '</ul>' : '') +
      (kept.length ? '<p class="mini muted">' + kept.map(esc).join(' · ') + '</p>' : '') +
      (p.problems && p.problems.length ? '<ul class="mini bad">' + p.problems.map((x) => '<li>' + esc(x) + '</li>').join('') + '</ul>' : '') +
      (p.dryRun && p.bytesFreed > 0 ? '<button type="button" class="btn danger" data-action="free-now" data-testid="free-now">Free ' + size(p.bytesFreed) + '</button> ' : '') +
      '<button type="button" class="btn" data-action="free-close" data-testid="free-close">' + (p.dryRun ? 'Cancel' : 'Close') + '</button></div>';
  }

  function renderPolling(s) {
    const paused = s.pollingPaused || [];
    document.getElementById('set-polling').innerHTML =
      '<p class="mini muted">Status checks of remote jobs: each endpoint\'s interval above' +
      (s.backends && s.backends.slurm && s.backends.slurm.pollInterval ? ', Slurm every ' + esc(s.backends.slurm.pollInterval) : '') +
      '. Pausing stops the checks only; remote jobs keep running.</p>' +
      (paused.length ? '<ul class="section-list" data-testid="polling-paused">' + paused.map((p) => '<li>' +
        '<a href="#/w/' + enc(p.id) + '">' + esc(p.title) + '</a> · polling paused <button type="button" class="btn small" data-action="resume-polling" data-id="' + esc(p.id) +
        '" data-testid="resume-polling-' + esc(p.id) + '" aria-label="Resume polling of ' + esc(p.title) + '">Resume</button></li>').join('') + '</ul>'
        : '<p data-testid="polling-none">No workflow has polling paused.</p>');
  }

  function renderConfig(s) {
    const hooks = (s.hooks || []).map((h) => '<div><code>' + esc(h.event) + '</code>: <code>' + esc(h.command.join(' ')) + '</code></div>').join('');
    const backends = Object.entries(s.backends || {}).map(([k, v]) => '<div><code>' + esc(k) + '</code>: ' +
      Object.entries(v).map(([a, b]) => esc(a) + ' ' + esc(b)).join(', ') + '</div>').join('');
    document.getElementById('set-config').innerHTML = '<table class="kv"><tbody>' +
      row('File', '<code>' + esc(s.configFile) + '</code>' + (s.configExists ? '' : ' <span class="muted">(none there: every default)</span>'), 'config-file') +
      row('Secrets', '<code>' + esc(s.secretsFile) + '</code> <span class="muted">(never shown here)</span>') +
      row('Roots', list(s.roots)) +
      row('Tool folders', list(s.toolPaths)) +
      row('Jobs at once', 'local ' + esc(s.concurrency.local) + ', remote ' + esc(s.concurrency.remote)) +
      row('Sync', s.sync.enabled === 'yes' ? 'with <code>' + esc(s.sync.remote) + '</code>, every ' + esc(s.sync.every) + '; lease ' + esc(s.sync.lease)
        : 'off (remote <code>' + esc(s.sync.remote) + '</code> when asked: <code>flowdir sync</code>)') +
      row('Hooks', (hooks || '<span class="muted">none</span>') + '<div class="mini muted">stopped after ' + esc(s.hookTimeout) + ' s; desktop notifications ' + (s.desktopNotifications ? 'on' : 'off') + '</div>') +
      (backends ? row('Backends', backends) : '') +
      row('Large files', 'from ' + size(s.bigFile) + ' kept beside git; thumbnails up to ' + size(s.thumbnails)) +
      row('Largest answer', size(s.answerSizeLimit)) +
      '</tbody></table>';
  }

  Object.assign(FD.actions, {
    'free-preview': async (b) => {
      b.disabled = true;
      preview = await FD.act(() => FD.api('/api/storage/free', { method: 'POST', body: { dryRun: true } }));
      b.disabled = false;
      renderPreview(preview);
      const box = FD.byTestId('free-box');
      if (box) box.querySelector('button').focus();
    },
    'free-now': async (b) => {
      b.disabled = true;
      const done = await FD.act(() => FD.api('/api/storage/free', { method: 'POST', body: { dryRun: false } }));
      b.disabled = false;
      if (!done) return;
      preview = done;
      renderPreview(done);
      FD.announce('Freed ' + size(done.bytesFreed) + '.');
      await FD.loadStorage();
      FD.rendered();
    },
    'free-close': () => { preview = null; renderPreview(null); FD.byTestId('free-preview').focus(); },
    pin: async (b) => {
      const path = '/api/instances/' + enc(b.dataset.id) + (b.dataset.node ? '/nodes/' + enc(b.dataset.node) : '') + '/pin';
      b.disabled = true;
      const r = await FD.act(() => FD.api(path, { method: 'POST', body: { pinned: b.dataset.pinned === '1' } }));
      b.disabled = false;
      if (r) { await FD.loadStorage(); FD.rendered(); }
    },
    'resume-polling': async (b) => {
      const r = await FD.act(() => FD.api('/api/instances/' + enc(b.dataset.id) + '/polling', { method: 'POST', body: { paused: false } }));
      if (r) FD.loadSettings();
    },
  });

  // A change elsewhere: the usage again, unless a preview is on show (it would no longer match what it lists).
  FD.refreshSettings = function () {
    if (preview) return;
    FD.loadStorage().then(() => FD.rendered());
  };
})();
