extension UIAssets {
    /// Test hooks (stable; for Selenium). All are data-testid values unless said otherwise:
    ///   body[data-ready="1"] after the first render; body[data-rev] +1 on every render of page data
    ///     (load, action, or live `changed` event): read it, act, wait until it grows.
    ///   body[data-page] = list | detail | inbox;  body[data-live] = open | reconnecting
    ///   nav-workflows, nav-inbox, nav-inbox-count (hidden when 0; its data-count = pending count),
    ///   live-status, alert (role=alert: the API's {error, hint}), alert-dismiss, status (polite: {message})
    ///   Workflows: search, filter-all|active|done|failed (buttons with aria-pressed), sort (select:
    ///     recent|name), show-archived, new-from-template, list-empty, row-<id> (data-status = the row's
    ///     status), open-row-<id> (the title link), awaits-<id> (pending awaits badge), dup-<id>,
    ///     archive-<id>, delete-<id> (asks first: delete-confirm)
    ///   Detail: detail-title, run-all, polling-toggle (aria-pressed="true" while paused), duplicate,
    ///     card-<node> (data-state = the API's state name; class "pulse" for ~6 s when focused by the URL),
    ///     card-head-<node> (a button: toggles the card, or, when awaiting, claims and opens the editor),
    ///     chip-<node> (the state in words), card-body-<node> (when expanded), param-<node>-<name>,
    ///     save-params-<node>, reset-params-<node>, cancel-<node>, retry-<node>, rerun-<node>,
    ///     log-<node>, output-<node>-<port> (opens viewer; data-absent="1" when its content is not on this machine), history-<node>
    ///   Action Center: section-pending|snoozed|done, inbox-empty, await-<instanceId>-<node>
    ///     (data-section), open-<instanceId>-<node>, snooze-<instanceId>-<node>, skip-<instanceId>-<node>
    ///   Editors: editor (the <dialog>; data-type = the await type, data-node), editor-submit,
    ///     editor-cancel, editor-close, editor-decline (confirm_params), editor-error (role=alert),
    ///     asset-file, asset-preview, choice-<value>, confirm-param-<name>, confirm-reset,
    ///     mask-canvas, mask-viewport, mask-status, mask-tool-brush|eraser|feather|pan (aria-pressed),
    ///     mask-size, mask-softness, mask-undo, mask-redo, mask-reset, mask-zoom-in, mask-zoom-out,
    ///     mask-zoom-fit; .mask-editor[data-ready="1"] once the image is loaded, [data-tool]
    ///   Other dialogs: viewer, viewer-close, viewer-media (a video or audio output), confirm (the <dialog>) holding delete-confirm or
    ///     empty-mask-confirm, with confirm-ok and confirm-cancel; new-dialog, new-template, new-name,
    ///     new-submit
    static let indexHTML = ##"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="color-scheme" content="light dark">
<title>flowdir</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="app.css">
</head>
<body>
<a class="skip-link" href="#main" data-action="skip-to-main">Skip to content</a>
<header class="app-header">
  <a class="brand" href="#/" aria-label="flowdir: Workflows">flowdir</a>
  <nav aria-label="Main">
    <ul class="tabs">
      <li><a href="#/" class="tab" data-tab="workflows" data-testid="nav-workflows">Workflows</a></li>
      <li><a href="#/inbox" class="tab" data-tab="inbox" data-testid="nav-inbox">Action Center <span class="count-badge" data-testid="nav-inbox-count" hidden></span></a></li>
    </ul>
  </nav>
  <span class="live-dot" data-testid="live-status" role="status" aria-live="polite">Connecting…</span>
</header>
<div class="toasts">
  <div class="toast toast-error" id="alert-box"><button type="button" class="close" data-action="dismiss-alert" data-testid="alert-dismiss" aria-label="Dismiss the error">✕</button><div id="alert" role="alert" data-testid="alert"></div></div>
  <div id="status" class="toast toast-ok" role="status" aria-live="polite" data-testid="status"></div>
</div>
<main id="main" tabindex="-1" data-testid="main">
  <p class="loading">Loading…</p>
</main>
<dialog id="editor" class="editor-dialog" data-testid="editor" aria-labelledby="editor-title"></dialog>
<dialog id="viewer" class="viewer-dialog" data-testid="viewer" aria-label="File viewer"></dialog>
<dialog id="new-dialog" class="new-dialog" data-testid="new-dialog" aria-labelledby="new-title"></dialog>
<dialog id="confirm" class="confirm-dialog" data-testid="confirm" aria-labelledby="confirm-text"></dialog>
<script src="mask.js"></script>
<script src="params.js"></script>
<script src="editors.js"></script>
<script src="app.js"></script>
</body>
</html>
"""##
}
